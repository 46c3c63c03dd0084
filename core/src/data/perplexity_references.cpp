// What a language model's perplexity reads against (text_corpus.h): the unigram, the
// trigram count model of train (what counting alone learns from the data) and the
// source's floor, and the sentence that puts a trained model among them.
#include "mixlab/text_corpus.h"

#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

namespace mixlab {

namespace {

// Absolute discount at both orders: Ney, Essen and Kneser's D = n1 / (n1 + 2 n2) lies
// near 0.75 for word corpora; a fixed value keeps the number reproducible and simple.
constexpr double k_discount = 0.75;

// Ids are below k_max_text_vocabulary < 2^20, so a context or an n-gram packs into 64 bits.
constexpr int k_id_bits = 20;
static_assert(k_max_text_vocabulary < (std::int64_t(1) << k_id_bits));

std::uint64_t pack(std::uint64_t a, std::uint64_t b) { return (a << k_id_bits) | b; }

// Occurrences of a context and how many distinct words followed it: the count of the
// mass the discount frees, which the lower order then shares out.
struct Context {
    std::int64_t count = 0;
    std::int64_t followers = 0;
};

struct Counts {
    std::unordered_map<std::uint64_t, std::int64_t> bigrams, trigrams; // n(b, c), n(a, b, c)
    std::unordered_map<std::uint64_t, Context> unigram_contexts, bigram_contexts;
};

Counts count(const std::vector<std::int32_t>& train)
{
    Counts n;
    for (std::size_t t = 1; t < train.size(); ++t) {
        const std::uint64_t b = std::uint64_t(train[t - 1]), c = std::uint64_t(train[t]);
        if (++n.bigrams[pack(b, c)] == 1) ++n.unigram_contexts[b].followers;
        ++n.unigram_contexts[b].count;
        if (t < 2) continue;
        const std::uint64_t ab = pack(std::uint64_t(train[t - 2]), b);
        if (++n.trigrams[pack(ab, c)] == 1) ++n.bigram_contexts[ab].followers;
        ++n.bigram_contexts[ab].count;
    }
    return n;
}

template <class Map>
std::int64_t lookup(const Map& map, std::uint64_t key)
{
    const auto it = map.find(key);
    return it == map.end() ? 0 : it->second;
}

// p(c | context) = max(n(context, c) - D, 0) / n(context)
//                + D * followers(context) / n(context) * lower(c): the discounted mass
// goes to the lower order, so the sum over c stays one. An unseen context is the lower order.
double interpolate(const std::unordered_map<std::uint64_t, Context>& contexts,
                   const std::unordered_map<std::uint64_t, std::int64_t>& ngrams,
                   std::uint64_t context, std::uint64_t word, double lower)
{
    const auto it = contexts.find(context);
    if (it == contexts.end()) return lower;
    const double n = double(it->second.count);
    const double seen = std::max(double(lookup(ngrams, pack(context, word))) - k_discount, 0.0);
    return seen / n + k_discount * double(it->second.followers) / n * lower;
}

} // namespace

std::optional<double> trigram_perplexity(const TextCorpus& corpus,
                                         const std::vector<std::int32_t>& ids)
{
    if (ids.empty() || std::int64_t(corpus.train.size()) > k_max_trigram_train_tokens)
        return std::nullopt;
    const Counts n = count(corpus.train);
    const double total = double(corpus.train.size()) + double(corpus.vocab_size());
    double log_sum = 0.0;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const std::uint64_t c = std::uint64_t(ids[t]);
        // The unigram of unigram_perplexity, add-one smoothed, so no word costs infinity.
        double p = (double(corpus.train_counts[c]) + 1.0) / total;
        if (t >= 1) {
            const std::uint64_t b = std::uint64_t(ids[t - 1]);
            p = interpolate(n.unigram_contexts, n.bigrams, b, c, p);
            if (t >= 2)
                p = interpolate(n.bigram_contexts, n.trigrams, pack(std::uint64_t(ids[t - 2]), b),
                                c, p);
        }
        log_sum += std::log(p);
    }
    return std::exp(-log_sum / double(ids.size()));
}

PerplexityReferences test_perplexity_references(const TextCorpus& corpus)
{
    PerplexityReferences r;
    r.unigram = unigram_perplexity(corpus, corpus.test);
    r.trigram = trigram_perplexity(corpus, corpus.test);
    if (corpus.entropy_bits) r.floor = std::exp2(*corpus.entropy_bits);
    return r;
}

nlohmann::ordered_json perplexity_references_to_json(const PerplexityReferences& r)
{
    using Json = nlohmann::ordered_json;
    return Json{{"unigram", r.unigram},
                {"trigram", r.trigram ? Json(*r.trigram) : Json(nullptr)},
                {"floor", r.floor ? Json(*r.floor) : Json(nullptr)}};
}

PerplexityReferences perplexity_references_from_json(const JsonReader& json)
{
    const JsonReader j = json.as_object();
    PerplexityReferences r;
    r.unigram = j.at("unigram").number();
    if (!j.at("trigram").is_null()) r.trigram = j.at("trigram").number();
    if (!j.at("floor").is_null()) r.floor = j.at("floor").number();
    return r;
}

namespace {

// "14.4% above the source's floor (4.703)", or "14.7x the source's floor (4.703)"
std::string relative(double achieved, double reference, const char* what)
{
    char text[160];
    const double ratio = achieved / reference;
    const int digits = reference < 100 ? 3 : 1;
    // Far from a reference, a multiple reads better than "1366% above".
    if (ratio >= 2.0)
        std::snprintf(text, sizeof text, "%.1fx %s (%.*f)", ratio, what, digits, reference);
    else
        std::snprintf(text, sizeof text, "%.1f%% %s %s (%.*f)", 100.0 * std::abs(ratio - 1.0),
                      ratio >= 1.0 ? "above" : "below", what, digits, reference);
    return text;
}

} // namespace

std::string perplexity_references_text(const PerplexityReferences& r,
                                       std::optional<double> achieved)
{
    constexpr const char* k_floor = "the source's floor";
    constexpr const char* k_trigram = "a trigram count model of train";
    constexpr const char* k_unigram = "the unigram";
    if (achieved) {
        char text[64];
        std::snprintf(text, sizeof text, "test perplexity %.3f is ", *achieved);
        std::string out = text;
        if (r.floor) out += relative(*achieved, *r.floor, k_floor) + ", ";
        if (r.trigram) out += relative(*achieved, *r.trigram, k_trigram) + ", ";
        return out + relative(*achieved, r.unigram, k_unigram);
    }
    std::string out = "test perplexity to read against:";
    const auto add = [&](const char* what, double value, const char* separator) {
        char text[96];
        std::snprintf(text, sizeof text, " %s %.*f%s", what, value < 100 ? 3 : 1, value, separator);
        out += text;
    };
    if (r.floor) add(k_floor, *r.floor, ",");
    if (r.trigram) add(k_trigram, *r.trigram, ",");
    add(k_unigram, r.unigram, "");
    return out;
}

} // namespace mixlab
