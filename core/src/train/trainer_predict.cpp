// TrainingRun::save_predictions: the test split as the run's evaluation sees it, with the
// logits the trained model gives each image, so that another framework holding the same
// weights (tools/load_weights_torch.py) can be checked against MixLab logit by logit.
#include "train/trainer_impl.h"

#include "mixlab/atomic_file.h"
#include "mixlab/error.h"
#include "model/safetensors.h"

#include <cstring>
#include <map>
#include <sstream>

namespace mixlab {

namespace {

template <typename T>
std::string raw_bytes(const std::vector<T>& v)
{
    std::string out(v.size() * sizeof(T), '\0');
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
    return out; // little-endian hosts only, as the weights writer (safetensors.cpp)
}

std::string floats_text(const float* v, int n)
{
    std::ostringstream s;
    s.precision(9);
    s << '[';
    for (int i = 0; i < n; ++i) s << (i ? ", " : "") << v[i];
    s << ']';
    return s.str();
}

} // namespace

void TrainingRun::save_predictions(const std::string& path, const ModelSpec& spec)
{
    Impl& s = *m_impl;
    const Dataset& host = s.data.host;
    if (s.lm)
        throw InputError("predictions: written for image classifiers; a language model's "
                         "test split is a token stream (its perplexity is in the log)");
    if (host.test.n == 0) throw InputError("predictions: the dataset has no test split");

    // The evaluation pass of Impl::evaluate, with the logits of each batch brought back.
    // It runs to the end even after a stop: a stopped run's model is still one to check.
    const int classes = s.classes;
    std::vector<float> logits(std::size_t(host.test.n) * std::size_t(classes));
    s.forward_test_split(std::stop_token{}, [&](std::int64_t at, int b) {
        s.backend.download_f32(s.net->logits(), logits.data() + at * classes,
                               std::size_t(b) * std::size_t(classes));
    });

    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < host.test.n; ++i) {
        const float* row = logits.data() + i * classes;
        int best = 0;
        for (int c = 1; c < classes; ++c)
            if (row[c] > row[best]) best = c;
        correct += best == host.test.labels[std::size_t(i)];
    }

    std::vector<std::int64_t> labels(host.test.labels.begin(), host.test.labels.end());
    const std::int64_t n = host.test.n;
    std::vector<SafeTensor> tensors = {
        {"images", "U8", {n, host.height, host.width, host.channels}, raw_bytes(host.test.images)},
        {"labels", "I64", {n}, raw_bytes(labels)},
        {"logits", "F32", {n, classes}, raw_bytes(logits)},
    };
    // The network's input is (image / 255 - mean) * inv_std per channel, NHWC.
    const std::map<std::string, std::string> metadata = {
        {"format", "mixlab-predictions/1"},
        {"model", model_spec_to_json(spec)},
        {"policy", std::string(policy_name(m_config.policy))},
        {"step", std::to_string(steps_done())},
        {"dataset", host.name},
        {"normalization_mean", floats_text(s.data.norm.mean, s.data.norm.channels)},
        {"normalization_inv_std", floats_text(s.data.norm.inv_std, s.data.norm.channels)},
        {"accuracy", std::to_string(double(correct) / double(n))},
    };
    write_file_atomically(path, encode_safetensors(tensors, metadata));
}

} // namespace mixlab
