// SplitMix64: the seeded generator of the built-in data sets (dataset_synthetic.cpp,
// synthetic_text.cpp), the same sequence on every compiler, library and CPU.
#pragma once
#include "base/hd_math.h"

#include <cstdint>

namespace mixlab::data {

// splitmix64: hd::mix64 adds the golden-ratio increment before finalising, so feeding
// it a counter stepping by that increment reproduces the reference generator.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next()
    {
        const std::uint64_t r = hd::mix64(m_state);
        m_state += 0x9E3779B97F4A7C15ull;
        return r;
    }
    // Uniform in [lo, hi] by multiply-shift on the top 32 bits: biased by at most
    // (hi - lo + 1) / 2^32, immaterial here, and unlike std::uniform_int_distribution
    // the same on every standard library.
    std::int64_t between(std::int64_t lo, std::int64_t hi)
    {
        return lo + std::int64_t(((next() >> 32) * std::uint64_t(hi - lo + 1)) >> 32);
    }
    // Uniform in [0, 1) with 53 random bits: every double it returns is exact.
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t m_state;
};

} // namespace mixlab::data
