// Word-level corpus folders (train.txt, valid.txt, test.txt): the vocabulary from the
// training split, ids for all three, and the checks a corpus passes before training.
#include "mixlab/text_corpus.h"

#include "base/grouped_text.h"
#include "data/dataset_files.h"
#include "data/text_words.h"
#include "mixlab/error.h"

#include <cmath>
#include <limits>

namespace mixlab {

namespace {

using data::fs::path;

constexpr const char* k_split_files[] = {"train.txt", "valid.txt", "test.txt"};
constexpr const char* k_expected = "train.txt, valid.txt and test.txt (a word-level corpus such "
                                   "as WikiText-2 or Penn Treebank)";

const char* split_file(TextSplit s) { return k_split_files[int(s)]; }

std::vector<std::uint8_t> read_split(const path& file)
{
    if (!data::exists_quietly(file))
        throw DataError(file.string() + " is missing; a corpus folder holds " + k_expected);
    std::vector<std::uint8_t> bytes = data::read_plain_file(file);
    if (bytes.empty()) throw DataError(file.string() + " is empty; it must hold the split's text");
    return bytes;
}

// Reads one split into ids. `add` is true for train, whose words make the vocabulary;
// the other splits map words not in it to <unk>, counted in `oov`.
std::vector<std::int32_t> read_ids(TextCorpus& corpus, const path& file, bool add,
                                   std::int64_t& oov)
{
    const std::vector<std::uint8_t> bytes = read_split(file);
    std::vector<std::int32_t> ids;
    ids.reserve(bytes.size() / 6); // English prose: about 5 bytes a word with its space
    auto id_of_new = [&corpus, &file](std::string_view word) {
        if (corpus.vocab_size() >= k_max_text_vocabulary)
            throw DataError(file.string() + " has more than " +
                            grouped_text(k_max_text_vocabulary) +
                            " distinct words, the limit of a vocabulary; is it a word-level "
                            "corpus, with words separated by spaces?");
        const std::int32_t id = corpus.vocab_size();
        corpus.words.emplace_back(word);
        corpus.index.emplace(std::string(word), id);
        corpus.train_counts.push_back(0);
        return id;
    };
    auto id_of = [&](std::string_view word) {
        if (const auto it = corpus.index.find(word); it != corpus.index.end()) return it->second;
        if (add) return id_of_new(word);
        ++oov;
        if (const auto it = corpus.index.find(std::string_view(k_unk_word));
            it != corpus.index.end())
            return it->second;
        return id_of_new(k_unk_word);
    };

    data::TextWordReader reader(bytes, file.string(), k_max_text_line_bytes);
    std::int64_t words = 0;
    std::string_view word;
    for (auto item = reader.next(word); item != data::TextWordReader::Item::End;
         item = reader.next(word)) {
        const bool is_word = item == data::TextWordReader::Item::Word;
        words += is_word;
        const std::int32_t id = id_of(is_word ? word : std::string_view(k_eos_word));
        if (add) ++corpus.train_counts[std::size_t(id)];
        ids.push_back(id);
    }
    if (words == 0)
        throw DataError(file.string() + " holds no words, only " +
                        grouped_text(std::int64_t(ids.size())) +
                        " blank lines; it must hold the split's text");
    return ids;
}

} // namespace

const char* text_split_name(TextSplit split)
{
    switch (split) {
    case TextSplit::Train: return "train";
    case TextSplit::Valid: return "valid";
    case TextSplit::Test: return "test";
    }
    return "?";
}

const std::vector<std::int32_t>& TextCorpus::split(TextSplit s) const
{
    return s == TextSplit::Train ? train : s == TextSplit::Valid ? valid : test;
}

std::string TextCorpus::split_label(TextSplit s) const
{
    if (source == "built-in") return name + "'s " + text_split_name(s) + " split";
    return (path(source) / split_file(s)).string();
}

bool is_text_corpus_folder(const std::string& folder)
{
    if (!data::is_folder_quietly(path(folder))) return false;
    for (const char* file : k_split_files)
        if (data::exists_quietly(path(folder) / file)) return true;
    return false;
}

TextCorpus load_text_corpus_folder(const std::string& folder)
{
    const path dir(folder);
    data::require_folder(dir, k_expected);
    TextCorpus corpus;
    corpus.source = data::absolute_folder(dir);
    corpus.name = path(corpus.source).filename().string();
    std::int64_t no_oov = 0;
    corpus.train = read_ids(corpus, dir / split_file(TextSplit::Train), true, no_oov);
    corpus.valid = read_ids(corpus, dir / split_file(TextSplit::Valid), false, corpus.valid_oov);
    corpus.test = read_ids(corpus, dir / split_file(TextSplit::Test), false, corpus.test_oov);
    return corpus;
}

double unigram_perplexity(const TextCorpus& corpus, const std::vector<std::int32_t>& ids)
{
    if (ids.empty()) return std::numeric_limits<double>::quiet_NaN();
    const double total = double(corpus.train.size()) + double(corpus.vocab_size());
    double log_sum = 0.0;
    for (const std::int32_t id : ids)
        log_sum += std::log((double(corpus.train_counts[std::size_t(id)]) + 1.0) / total);
    return std::exp(-log_sum / double(ids.size()));
}

void check_corpus_fits(const TextCorpus& corpus, int batch, int bptt)
{
    if (batch < 1 || bptt < 1)
        throw InputError("batch and bptt must be at least 1, got batch " + std::to_string(batch) +
                         " and bptt " + std::to_string(bptt));
    const std::int64_t need = std::int64_t(batch) * (std::int64_t(bptt) + 1);
    for (const TextSplit s : {TextSplit::Train, TextSplit::Valid, TextSplit::Test}) {
        const std::int64_t have = std::int64_t(corpus.split(s).size());
        if (have < need)
            throw DataError(corpus.split_label(s) + " holds " + grouped_text(have) +
                            " tokens, fewer than one batch needs: " + std::to_string(batch) +
                            " columns of " + std::to_string(bptt + 1) + " tokens (bptt " +
                            std::to_string(bptt) + " + 1) = " + grouped_text(need) +
                            "; use a longer corpus, a smaller batch or a smaller bptt");
    }
}

} // namespace mixlab
