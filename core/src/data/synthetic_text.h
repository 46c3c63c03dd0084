// The source behind synthetic-text: an order-2 Markov chain over a Zipf-shaped vocabulary
// whose entropy rate is known exactly. Private to the engine; tests read its probabilities.
#pragma once
#include "data/split_mix.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mixlab::data {

// Every word b has k_successors distinct successors: slot 0 is b's next word on one
// random cycle through the whole vocabulary (so every word can occur and the chain is
// irreducible), slots 1..k-1 are drawn from a Zipf law over the ids (so low ids are
// frequent, as in a frequency-ordered vocabulary). The word before b, a, picks which
// slot gets which probability: the successor probabilities p (k values drawn once from
// the seed, sorted) go to slots 1..k-1 rotated by class(a), one of k - 1 word classes,
// while the cycle slot always gets the smallest. So P(c | a, b) depends on both words,
// and a model has to learn b's successors and a's class to reach the floor.
//
// The entropy rate is exact without a stationary distribution: every context (a, b)
// has the same multiset of successor probabilities p over distinct words, so
// H(X_t | X_t-2, X_t-1 = a, b) = H(p) for every context, and the rate, the stationary
// average of that, is H(p) whatever the stationary distribution is.
class SyntheticTextSource {
public:
    static constexpr int k_successors = 8;
    static constexpr double k_zipf_exponent = 1.0; // natural language's, roughly

    SyntheticTextSource(std::int32_t vocab, std::uint64_t seed);

    std::int32_t vocab() const { return m_vocab; }
    // P(c | a, b): the probability that c follows the words a, b.
    double probability(std::int32_t a, std::int32_t b, std::int32_t c) const;
    // Bits per token: -sum p log2 p over the successor probabilities.
    double entropy_bits() const;
    // n tokens continuing the text that ended in a, b (both updated to the last two).
    void generate(std::int32_t& a, std::int32_t& b, std::int32_t* out, std::int64_t n,
                  SplitMix64& rng) const;

    // A pronounceable name per id, short for frequent (low) ids: "ba", "ke", "lomu" ...
    static std::string word(std::int32_t id);

private:
    std::int32_t m_vocab;
    std::vector<std::int32_t> m_successors;   // (vocab, k_successors); slot 0 the cycle's
    std::vector<std::uint8_t> m_class;        // per word, 0 .. k_successors - 2
    std::array<double, k_successors> m_p{};   // descending
    std::array<double, k_successors> m_cdf{}; // running sums of m_p; the last is 1
};

} // namespace mixlab::data
