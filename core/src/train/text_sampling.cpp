// Text from a trained language model, as the word-language-model example's generate.py
// writes it: a network of one column and one time step that shares the run's weights
// (copied once), fed its own draws one word at a time with the state carried along.
#include "base/hd_math.h"
#include "mixlab/error.h"
#include "mixlab/text_corpus.h"
#include "model/network.h"
#include "train/trainer_impl.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace mixlab {

namespace {

// One draw from softmax(logits / temperature), by inverse CDF over the vocabulary in
// double precision (a vocabulary of 33,278 words sums fine), from a uniform in [0, 1).
std::int32_t draw_word(const std::vector<float>& logits, double temperature, double u)
{
    const float top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> weight(logits.size());
    double total = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        weight[i] = std::exp((double(logits[i]) - top) / temperature);
        total += weight[i];
    }
    double target = u * total;
    for (std::size_t i = 0; i < weight.size(); ++i) {
        target -= weight[i];
        if (target < 0) return std::int32_t(i);
    }
    return std::int32_t(weight.size() - 1);
}

} // namespace

std::string TrainingRun::sample_text(int words, float temperature, std::uint64_t seed)
{
    Impl& s = *m_impl;
    if (!s.lm)
        throw InputError("text can be sampled from a language model only; " +
                         (m_graph.name.empty() ? std::string("this model") : m_graph.name) +
                         " is a classifier");
    if (!(temperature > 0) || !std::isfinite(temperature))
        throw InputError("the sampling temperature must be a positive number (the example "
                         "uses 1.0; lower is more conservative), got " +
                         std::to_string(temperature));
    if (words < 1) throw InputError("the number of words to sample must be at least 1");
    const TextCorpus& corpus = *s.data.host.text;
    const int vocab = corpus.vocab_size();

    s.backend.synchronize();
    Network one(m_graph, m_config.policy, m_config.optimizer, s.backend, 1, 1, m_config.seed);
    one.write_parameters(s.net->read_parameters());
    one.reset_state();

    // The example starts from a uniformly random word.
    std::int32_t word = std::int32_t(hd::mix64(seed ^ 0x5A3D1E00ull) % std::uint64_t(vocab));
    std::vector<float> logits(std::size_t(vocab), 0.0f);
    std::string text;
    for (int i = 0; i < words; ++i) {
        s.backend.upload_raw(one.input(), &word, sizeof word);
        one.forward(1, false, 0);
        s.backend.download_f32(one.logits(), logits.data(), logits.size());
        word = draw_word(logits, temperature, hd::uniform01(seed, std::uint64_t(i), 0x7E47));
        const std::string& w = corpus.words[std::size_t(word)];
        if (w == k_eos_word) {
            text += '\n';
        } else {
            if (!text.empty() && text.back() != '\n') text += ' ';
            text += w;
        }
    }
    return text;
}

} // namespace mixlab
