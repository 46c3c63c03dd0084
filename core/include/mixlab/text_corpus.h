// Word-level language-model corpora held in host memory as int32 token ids: a folder of
// train.txt / valid.txt / test.txt (WikiText-2, Penn Treebank), or the built-in
// synthetic-text source; and the column layout and bptt windows training reads them in.
#pragma once
#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mixlab {

class JsonReader;

// The limits a corpus folder is held to; past them a file is refused with a DataError
// naming it (a line this long is a binary or a file with no line breaks, not prose).
inline constexpr std::int64_t k_max_text_line_bytes = 1 << 20; // 1 MiB
inline constexpr std::int64_t k_max_text_vocabulary = 1'000'000;

inline constexpr const char* k_eos_word = "<eos>";
inline constexpr const char* k_unk_word = "<unk>";

// word -> id, looked up by string_view without making a string per token.
struct TextWordHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view word) const
    {
        return std::hash<std::string_view>{}(word);
    }
};
using TextWordIndex = std::unordered_map<std::string, std::int32_t, TextWordHash, std::equal_to<>>;

enum class TextSplit { Train, Valid, Test };
const char* text_split_name(TextSplit split); // "train", "valid", "test"

struct TextCorpus {
    std::string name;               // "wikitext-2" (the folder's name) or "synthetic-text"
    std::string source;             // the folder, absolute, or "built-in"
    std::vector<std::string> words; // id -> word
    TextWordIndex index;            // word -> id
    std::vector<std::int32_t> train, valid, test; // token ids, <eos> at line ends
    std::vector<std::int64_t> train_counts;   // per id: occurrences in train (0 for an added <unk>)
    std::int64_t valid_oov = 0, test_oov = 0; // tokens mapped to <unk>: their word is not in train
    // The source's true entropy rate in bits per token, when it is known (synthetic-text).
    std::optional<double> entropy_bits;

    std::int32_t vocab_size() const { return std::int32_t(words.size()); }
    const std::vector<std::int32_t>& split(TextSplit s) const;
    // Where a split came from, for messages: "FOLDER/valid.txt", "synthetic-text's valid split".
    std::string split_label(TextSplit s) const;
};

// True when the folder holds any of train.txt, valid.txt, test.txt: the loader then
// names whichever of the three is missing or wrong.
bool is_text_corpus_folder(const std::string& folder);

// PyTorch's word_language_model data.py reading: each line split at whitespace (Python's
// str.split()), "<eos>" appended at every line end (\n, \r\n or \r), ids in order of first
// appearance in train.txt. Unlike data.py, valid and test do not add words: one unseen in
// train is <unk>, appended to the vocabulary when train lacks it. Throws DataError naming
// the file: missing, empty, binary (NUL bytes, invalid UTF-8), a line past
// k_max_text_line_bytes, a vocabulary past k_max_text_vocabulary.
TextCorpus load_text_corpus_folder(const std::string& folder);

// The perplexity of `ids` under train's unigram frequencies with add-one smoothing, so a
// word seen in valid or test but never in train (an added <unk>) costs a finite amount:
// exp(-mean log p(w)), p(w) = (train_counts[w] + 1) / (train tokens + vocabulary size).
double unigram_perplexity(const TextCorpus& corpus, const std::vector<std::int32_t>& ids);

// The perplexity of `ids` under a trigram count model of train (interpolated absolute
// discounting, D = 0.75, down to the add-one unigram above): what the training text
// supports without any learning beyond counting. A network well above it has not yet
// learned what its data shows; one near the source's floor has. Empty when `ids` is, or
// when train holds more than k_max_trigram_train_tokens (the counts would take gigabytes).
inline constexpr std::int64_t k_max_trigram_train_tokens = 20'000'000;
std::optional<double> trigram_perplexity(const TextCorpus& corpus,
                                         const std::vector<std::int32_t>& ids);

// What a language model's test perplexity reads against: the unigram (a model must beat
// it), the trigram count model (what counting train alone reaches) and, for
// synthetic-text, the source's floor (what no model beats on average).
struct PerplexityReferences {
    double unigram = 0;
    std::optional<double> trigram, floor;
};
PerplexityReferences test_perplexity_references(const TextCorpus& corpus);
// {"unigram": N, "trigram": N or null, "floor": N or null}, in logs and experiment files.
nlohmann::ordered_json perplexity_references_to_json(const PerplexityReferences& references);
PerplexityReferences perplexity_references_from_json(const JsonReader& json);
// One line for logs and tooltips: "test perplexity 5.380 is 14.4% above the source's floor
// (4.703), 12.1% above a trigram count model of train (4.801), 96.0% below the unigram
// (135.5)"; without `achieved`, the references alone.
std::string perplexity_references_text(const PerplexityReferences& references,
                                       std::optional<double> achieved);

// Throws DataError naming the first split (train, valid, test) shorter than one batch:
// batch columns of bptt + 1 tokens each (bptt inputs and the targets one token on).
void check_corpus_fits(const TextCorpus& corpus, int batch, int bptt);

// ---- synthetic-text --------------------------------------------------------------------

struct SyntheticTextOptions {
    std::int32_t vocab = 10'000;
    std::int64_t train_tokens = 1'000'000; // valid and test hold a tenth of it each
    std::uint64_t seed = 42;
};
inline constexpr std::int32_t k_min_synthetic_vocab = 16;
inline constexpr std::int64_t k_min_synthetic_tokens = 100;
inline constexpr std::int64_t k_max_synthetic_tokens = 1'000'000'000; // 4.8 GB of ids

// The built-in corpus (synthetic_text.cpp): an order-2 Markov source over a Zipf-shaped
// vocabulary whose entropy rate is known exactly (entropy_bits). Its vocabulary is the
// source's `vocab` words in id order, low ids the frequent ones (the tail of a large
// vocabulary may not occur in a short text); no <eos>, no <unk>, nothing out of vocabulary.
// Deterministic by seed. Throws InputError for options out of range.
TextCorpus make_synthetic_text(const SyntheticTextOptions& options);

// ---- batching, as the example's batchify() and get_batch() ------------------------------

// The token stream laid out in `batch` columns, time-major (steps, batch): column j holds
// the stream's tokens [j * steps, (j + 1) * steps); the remainder past batch * steps is
// dropped. ids[t * batch + j] is column j's token at time t.
struct TokenColumns {
    std::vector<std::int32_t> ids; // (steps, batch)
    std::int64_t steps = 0;
    int batch = 0;
};
TokenColumns batchify(const std::vector<std::int32_t>& stream, int batch);

// One truncated-BPTT window: inputs are rows [position, position + steps) of the columns,
// targets the rows one later; steps = min(bptt, columns.steps - 1 - position), as the
// example's get_batch. Both (steps, batch) int32, time-major like LstmShape's x.
struct TokenWindow {
    std::vector<std::int32_t> input, target; // (steps, batch)
    int steps = 0, batch = 0;
};
// Windows start at 0, bptt, 2 bptt ... while position < columns.steps - 1.
std::int64_t token_window_count(const TokenColumns& columns, int bptt);
// Fills `out`, reusing its storage, so that a training loop does not allocate per step.
void token_window(const TokenColumns& columns, std::int64_t position, int bptt, TokenWindow& out);
TokenWindow token_window(const TokenColumns& columns, std::int64_t position, int bptt);

} // namespace mixlab
