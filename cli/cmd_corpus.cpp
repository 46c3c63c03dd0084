// `mixlab-cli corpus`: what a word-level corpus holds (a folder of train.txt, valid.txt,
// test.txt, or the built-in synthetic-text): vocabulary, tokens per split, words unseen in
// training, the unigram perplexity a language model must beat and, for synthetic-text,
// the source's entropy rate and perplexity floor.
#include "commands.h"

#include "args.h"

#include "mixlab/error.h"
#include "mixlab/text_corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace mixlab::cli {
namespace {

constexpr const char* k_synthetic = "synthetic-text";
// The options that take a value: the corpus is the one argument that is neither an
// option nor such a value.
const std::vector<std::string> k_value_options = {
    "--seed", "--synthetic-tokens", "--vocab", "--batch", "--bptt", "--write"};

// Splits off the corpus argument (FOLDER or synthetic-text) wherever it stands.
std::optional<std::string> take_corpus(std::vector<std::string>& args)
{
    std::optional<std::string> corpus;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.rfind("-", 0) == 0) {
            const bool takes_value = a.find('=') == std::string::npos &&
                                     std::find(k_value_options.begin(), k_value_options.end(), a) !=
                                         k_value_options.end();
            if (takes_value) ++i;
            continue;
        }
        if (corpus) throw InputError("give one corpus, got '" + *corpus + "' and '" + a + "'");
        corpus = a;
        args.erase(args.begin() + std::ptrdiff_t(i));
        --i;
    }
    return corpus;
}

// Words shown as a taste of the text: enough to see whether it reads as words.
constexpr std::size_t k_sample_words = 16;

struct CorpusFacts {
    double train_unigram = 0, test_unigram = 0;
    std::optional<double> test_trigram; // none past k_max_trigram_train_tokens
    std::string sample;                 // the first words of the test split
};

std::string sample_text(const TextCorpus& c)
{
    std::string text;
    for (std::size_t i = 0; i < std::min(k_sample_words, c.test.size()); ++i)
        text += (i ? " " : "") + c.words[std::size_t(c.test[i])];
    return text;
}

void print_table(const TextCorpus& c, const CorpusFacts& f, std::optional<std::uint64_t> seed)
{
    std::printf("corpus              %s (%s%s)\n", c.name.c_str(), c.source.c_str(),
                seed ? (", seed " + std::to_string(*seed)).c_str() : "");
    std::printf("vocabulary          %d words\n", c.vocab_size());
    std::printf("tokens              train %zu, valid %zu, test %zu\n", c.train.size(),
                c.valid.size(), c.test.size());
    std::printf("out of vocabulary   valid %lld, test %lld (words not in train, read as %s)\n",
                static_cast<long long>(c.valid_oov), static_cast<long long>(c.test_oov),
                k_unk_word);
    std::printf("unigram perplexity  test %.1f, train %.1f (train's word frequencies, add-one "
                "smoothed; a model must beat it)\n",
                f.test_unigram, f.train_unigram);
    if (f.test_trigram)
        std::printf("trigram perplexity  test %.3f (counts of train, interpolated absolute "
                    "discounting: what the data shows without learning)\n",
                    *f.test_trigram);
    std::printf("test begins         %s ...\n", f.sample.c_str());
    if (c.entropy_bits)
        std::printf("entropy rate        %.4f bits/token; perplexity floor %.3f (no model can "
                    "do better on average)\n",
                    *c.entropy_bits, std::exp2(*c.entropy_bits));
}

void print_json(const TextCorpus& c, const CorpusFacts& f, std::optional<std::uint64_t> seed)
{
    nlohmann::ordered_json j;
    j["name"] = c.name;
    j["source"] = c.source;
    j["seed"] = seed ? nlohmann::ordered_json(*seed) : nlohmann::ordered_json(nullptr);
    j["vocab_size"] = c.vocab_size();
    j["tokens"] = {{"train", c.train.size()}, {"valid", c.valid.size()}, {"test", c.test.size()}};
    j["oov"] = {{"valid", c.valid_oov}, {"test", c.test_oov}};
    j["unigram_perplexity"] = {{"train", f.train_unigram}, {"test", f.test_unigram}};
    j["trigram_perplexity"] = f.test_trigram ? nlohmann::ordered_json({{"test", *f.test_trigram}})
                                             : nlohmann::ordered_json(nullptr);
    j["sample"] = f.sample;
    j["entropy_bits"] = c.entropy_bits ? nlohmann::ordered_json(*c.entropy_bits) : nullptr;
    j["perplexity_floor"] =
        c.entropy_bits ? nlohmann::ordered_json(std::exp2(*c.entropy_bits)) : nullptr;
    std::printf("%s\n", j.dump(2).c_str());
}

// Words per line in a written corpus. A WikiText reader (data.py, or MixLab reading the
// folder back) appends <eos> at every line end: one per thousand words barely changes the
// text, and lines stay far under k_max_text_line_bytes. Readers that want the exact
// stream split the files at whitespace only (bench/lm_reference.py does).
constexpr std::size_t k_written_words_per_line = 1000;

// The corpus as a folder of train.txt, valid.txt and test.txt, so the same text can be
// trained elsewhere (PyTorch's word_language_model example) or inspected. Never
// overwrites: a folder already holding any of the three files is refused.
void write_corpus(const TextCorpus& c, const std::string& folder)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) throw InputError("--write: cannot create '" + folder + "': " + ec.message());
    for (const char* name : {"train.txt", "valid.txt", "test.txt"})
        if (fs::exists(fs::path(folder) / name, ec))
            throw InputError("--write: '" + (fs::path(folder) / name).string() +
                             "' exists; give a new folder (corpus files are never overwritten)");
    for (const TextSplit split : {TextSplit::Train, TextSplit::Valid, TextSplit::Test}) {
        const fs::path path = fs::path(folder) / (std::string(text_split_name(split)) + ".txt");
        std::FILE* f = std::fopen(path.string().c_str(), "wb");
        if (!f) throw InputError("--write: cannot open '" + path.string() + "' for writing");
        const std::vector<std::int32_t>& ids = c.split(split);
        bool ok = true;
        for (std::size_t i = 0; i < ids.size() && ok; ++i) {
            const bool line_end = (i + 1) % k_written_words_per_line == 0 || i + 1 == ids.size();
            ok = std::fputs(c.words[std::size_t(ids[i])].c_str(), f) >= 0 &&
                 std::fputc(line_end ? '\n' : ' ', f) != EOF;
        }
        if (std::fclose(f) != 0 || !ok)
            throw InputError("--write: writing '" + path.string() + "' failed (disk full?)");
    }
}

} // namespace

int cmd_corpus(int argc, char** argv)
{
    ArgParser parser("mixlab-cli corpus FOLDER|synthetic-text [--seed N] [--synthetic-tokens N] "
                     "[--vocab N] [--batch N [--bptt N]] [--json] [--write FOLDER]",
                     "What a word-level language-model corpus holds: a folder of train.txt, "
                     "valid.txt and test.txt\n(WikiText-2, Penn Treebank), or the built-in "
                     "synthetic-text. Prints the vocabulary, tokens\nper split, words of valid "
                     "and test unseen in train (read as <unk>), the unigram perplexity\n"
                     "a model must beat, and for synthetic-text the source's entropy rate "
                     "and perplexity floor.\nWith --batch, exits 2 when a split is shorter than "
                     "one batch.\nWith --write, also writes the corpus as FOLDER/train.txt, "
                     "valid.txt and test.txt\n(1,000 words per line), to train the same text "
                     "elsewhere.");
    parser.add_option("--seed", "N",
                      "(synthetic-text) seed of the source and its text (default 42)");
    parser.add_option("--synthetic-tokens", "N",
                      "(synthetic-text) training tokens; valid and test get a tenth each "
                      "(default 1000000)");
    parser.add_option("--vocab", "N", "(synthetic-text) vocabulary size (default 10000)");
    parser.add_option("--batch", "N", "check that every split holds one batch of N columns ...");
    parser.add_option("--bptt", "N", "... of N + 1 tokens each (default 35 when --batch is given)");
    parser.add_flag("--json", "print JSON instead of a table");
    parser.add_option("--write", "FOLDER",
                      "write the corpus there as train.txt, valid.txt, test.txt (a new "
                      "folder; existing corpus files are refused)");
    std::vector<std::string> args(argv + 1, argv + argc);
    const std::optional<std::string> corpus_arg = take_corpus(args);
    parser.parse(args);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }
    if (!corpus_arg)
        throw InputError("give the corpus: a folder holding train.txt, valid.txt and test.txt, "
                         "or synthetic-text");

    TextCorpus corpus;
    std::optional<std::uint64_t> seed;
    if (*corpus_arg == k_synthetic) {
        SyntheticTextOptions options;
        if (auto v = parser.unsigned_integer("--seed")) options.seed = *v;
        if (auto v = parser.integer("--synthetic-tokens", k_min_synthetic_tokens,
                                    k_max_synthetic_tokens))
            options.train_tokens = *v;
        if (auto v = parser.integer("--vocab", k_min_synthetic_vocab, k_max_text_vocabulary))
            options.vocab = std::int32_t(*v);
        corpus = make_synthetic_text(options);
        seed = options.seed;
    } else {
        for (const char* option : {"--seed", "--synthetic-tokens", "--vocab"})
            if (parser.has(option))
                throw InputError(std::string(option) + " applies to synthetic-text only; " +
                                 *corpus_arg + " is read as a corpus folder");
        // A folder goes to the loader even when it holds none of the three files, so
        // that the message names the first one missing.
        std::error_code ec;
        if (!std::filesystem::is_directory(*corpus_arg, ec))
            throw DataError("'" + *corpus_arg + "' is neither synthetic-text nor a folder; " +
                            "give a folder holding train.txt, valid.txt and test.txt");
        corpus = load_text_corpus_folder(*corpus_arg);
    }

    if (parser.has("--batch") || parser.has("--bptt")) {
        const auto batch = parser.integer("--batch", 1, 1 << 20);
        if (!batch)
            throw InputError("--bptt needs --batch: the check is for batch x (bptt + 1) tokens");
        check_corpus_fits(corpus, int(*batch),
                          int(parser.integer("--bptt", 1, 1 << 20).value_or(35)));
    }

    if (const auto folder = parser.value("--write")) write_corpus(corpus, *folder);

    const CorpusFacts facts{unigram_perplexity(corpus, corpus.train),
                            unigram_perplexity(corpus, corpus.test),
                            trigram_perplexity(corpus, corpus.test), sample_text(corpus)};
    if (parser.flag("--json"))
        print_json(corpus, facts, seed);
    else
        print_table(corpus, facts, seed);
    return 0;
}

} // namespace mixlab::cli
