// Crafted numerics for the suites that read them (explain's rules, the report's heatmaps):
// histograms holding given counts at given binades, written out rather than computed by
// the code under test.
#pragma once
#include "mixlab/numerics.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace mixlab::test {

using Counts = std::initializer_list<std::pair<int, std::uint64_t>>; // {binade or d, count}

template <std::size_t N>
void add_counts(std::array<std::uint64_t, N>& bins, int lo, Counts at)
{
    for (const auto& [e, n] : at) bins[std::size_t(e - lo)] += n;
}

// Values at each binade, and `zero` zeros.
inline ValueHistogram values_at(Counts bins, std::uint64_t zero = 0)
{
    ValueHistogram h;
    add_counts(h.binades, k_numerics_binade_min, bins);
    h.zero = zero;
    return h;
}

// Updates at each d = binade(update) - binade(weight), and `lost` lost already.
inline UpdateHistogram updates_at(Counts ds, std::uint64_t lost = 0)
{
    UpdateHistogram u;
    add_counts(u.ratios, k_numerics_d_min, ds);
    u.lost = lost;
    return u;
}

} // namespace mixlab::test
