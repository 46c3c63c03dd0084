// Numerics from histograms: the device's counter slots into histograms, the formats'
// limits, and what each format would do to a histogram's values (numerics.h).
#include "mixlab/numerics.h"

#include "base/hd_math.h"

#include <cmath>
#include <utility>
#include <vector>

namespace mixlab {

static_assert(k_numerics_binade_min == hd::k_binade_min &&
                  k_numerics_binade_max == hd::k_binade_max,
              "the public histogram's binades are the device's slots");
static_assert(k_numerics_d_min == hd::k_update_d_min && k_numerics_d_max == hd::k_update_d_max,
              "the public update histogram's ratios are the device's slots");

std::uint64_t ValueHistogram::finite_nonzero() const
{
    std::uint64_t n = 0;
    for (std::uint64_t c : binades) n += c;
    return n;
}

std::uint64_t ValueHistogram::total() const
{
    return finite_nonzero() + zero + pos_inf + neg_inf + nan;
}

void ValueHistogram::add_slots(const std::uint32_t* slots)
{
    for (int i = 0; i < k_numerics_binades; ++i) binades[std::size_t(i)] += slots[i];
    zero += slots[hd::k_value_zero];
    pos_inf += slots[hd::k_value_pos_inf];
    neg_inf += slots[hd::k_value_neg_inf];
    nan += slots[hd::k_value_nan];
}

std::uint64_t UpdateHistogram::total() const
{
    std::uint64_t n = below + above + lost + idle + from_zero + non_finite;
    for (std::uint64_t c : ratios) n += c;
    return n;
}

void UpdateHistogram::add_slots(const std::uint32_t* slots)
{
    for (int i = 0; i < k_numerics_ds; ++i) ratios[std::size_t(i)] += slots[i];
    below += slots[hd::k_update_below];
    above += slots[hd::k_update_above];
    lost += slots[hd::k_update_lost];
    idle += slots[hd::k_update_idle];
    from_zero += slots[hd::k_update_from_zero];
    non_finite += slots[hd::k_update_non_finite];
}

std::string_view tensor_kind_name(TensorKind k)
{
    switch (k) {
    case TensorKind::Weights: return "weights";
    case TensorKind::Activations: return "activations";
    case TensorKind::Gradients: return "gradients";
    case TensorKind::Updates: return "updates";
    }
    return "?";
}

const FormatLimits& format_limits(NumberFormat f)
{
    // IEEE binary16; bfloat16 (fp32's exponent, 7 fraction bits); the OCP 8-bit formats:
    // E4M3 (bias 7, no infinities, S.1111.111 is NaN, so its largest is 1.75 x 2^8 = 448)
    // and E5M2 (bias 15, IEEE-like, largest 1.75 x 2^15 = 57344).
    static const FormatLimits fp16{"fp16", 10, -14, 15, 65504.0};
    static const FormatLimits bf16{"bf16", 7, -126, 127, 3.3895313892515355e38};
    static const FormatLimits e4m3{"fp8_e4m3", 3, -6, 8, 448.0};
    static const FormatLimits e5m2{"fp8_e5m2", 2, -14, 15, 57344.0};
    switch (f) {
    case NumberFormat::FP16: return fp16;
    case NumberFormat::BF16: return bf16;
    case NumberFormat::FP8E4M3: return e4m3;
    case NumberFormat::FP8E5M2: return e5m2;
    }
    return fp16;
}

void BinadeCounts::add(const ValueHistogram& h, int shift)
{
    for (int e = k_numerics_binade_min; e <= k_numerics_binade_max; ++e)
        if (const std::uint64_t c = h.at(e)) binades[e + shift] += c;
    zero += h.zero;
    non_finite += h.pos_inf + h.neg_inf + h.nan;
}

std::uint64_t BinadeCounts::finite_nonzero() const
{
    std::uint64_t n = 0;
    for (const auto& [e, c] : binades) n += c;
    return n;
}

FormatShares format_shares(const BinadeCounts& c, NumberFormat f)
{
    FormatShares s;
    const double total = double(c.total());
    if (total == 0) return s;
    const FormatLimits& lim = format_limits(f);
    const int flush_top = lim.min_subnormal_binade() - 2;
    std::uint64_t overflow = 0, subnormal = 0, flush = 0;
    for (const auto& [e, n] : c.binades) {
        if (e > lim.max_binade)
            overflow += n;
        else if (e <= flush_top)
            flush += n;
        else if (e < lim.min_normal_binade)
            subnormal += n;
    }
    s.overflow = double(overflow) / total;
    s.subnormal = double(subnormal) / total;
    s.flush = double(flush) / total;
    s.zero = double(c.zero) / total;
    s.non_finite = double(c.non_finite) / total;
    return s;
}

NumberFormat fp8_format(TensorKind k)
{
    return k == TensorKind::Gradients ? NumberFormat::FP8E5M2 : NumberFormat::FP8E4M3;
}

FormatShares format_shares(const ValueHistogram& h, NumberFormat f, int shift)
{
    BinadeCounts c;
    c.add(h, shift);
    return format_shares(c, f);
}

std::optional<int> power_of_two_exponent(float scale)
{
    if (!(scale > 0) || !std::isfinite(scale)) return std::nullopt;
    int e = 0;
    const float m = std::frexp(scale, &e); // scale = m * 2^e, m in [0.5, 1)
    if (m != 0.5f) return std::nullopt;
    return e - 1;
}

std::optional<BinadeRange> central_range(const BinadeCounts& c, double share)
{
    const std::uint64_t n = c.finite_nonzero();
    if (n == 0) return std::nullopt;
    // Leave out at most (1 - share) / 2 of the values at each end.
    const double tail = double(n) * (1.0 - share) / 2.0;
    BinadeRange r{c.binades.begin()->first, c.binades.rbegin()->first};
    double below = 0;
    for (auto it = c.binades.begin(); it != c.binades.end(); ++it) {
        below += double(it->second);
        if (below > tail) {
            r.lo = it->first;
            break;
        }
    }
    double above = 0;
    for (auto it = c.binades.rbegin(); it != c.binades.rend(); ++it) {
        above += double(it->second);
        if (above > tail) {
            r.hi = it->first;
            break;
        }
    }
    return r;
}

std::optional<BinadeRange> central_range(const ValueHistogram& h, double share)
{
    BinadeCounts c;
    c.add(h);
    return central_range(c, share);
}

std::optional<ShiftFit> best_shift(const BinadeCounts& c, NumberFormat f)
{
    if (c.finite_nonzero() == 0) return std::nullopt;
    const FormatLimits& lim = format_limits(f);
    const int lo = lim.min_subnormal_binade() - 1;
    ShiftFit best;
    best.binades = lim.kept_binades();
    // Every shift that puts some value at the window's bottom or top: the best window
    // starts or ends at a value's binade. Kept counts by sliding over the sorted binades.
    std::uint64_t most = 0;
    bool found = false;
    std::vector<std::pair<int, std::uint64_t>> bins(c.binades.begin(), c.binades.end());
    auto kept_from = [&](std::size_t first) { // window [bins[first], + binades)
        std::uint64_t n = 0;
        for (std::size_t i = first;
             i < bins.size() && bins[i].first < bins[first].first + best.binades; ++i)
            n += bins[i].second;
        return n;
    };
    for (std::size_t i = 0; i < bins.size(); ++i) {
        const std::uint64_t kept = kept_from(i);
        if (!found || kept > most) {
            most = kept;
            best.shift = lo - bins[i].first;
            found = true;
        }
    }
    const double total = double(c.total());
    std::uint64_t flush = 0, saturate = 0;
    for (const auto& [e, n] : bins) {
        if (e + best.shift < lo) flush += n;
        if (e + best.shift > lim.max_binade) saturate += n;
    }
    best.flush = double(flush) / total;
    best.saturate = double(saturate) / total;
    return best;
}

std::optional<double> lost_update_share(const UpdateHistogram& u, NumberFormat f)
{
    const std::uint64_t updates = u.total() - u.idle - u.non_finite;
    if (updates == 0) return std::nullopt;
    // Lost when |u| < 2^(binade(w) - p - 1), i.e. binade(u) <= binade(w) - p - 2.
    const int lost_top = -(format_limits(f).mantissa_bits + 2);
    std::uint64_t lost = u.lost + u.below;
    for (int d = k_numerics_d_min; d <= lost_top && d <= k_numerics_d_max; ++d)
        lost += u.ratios[std::size_t(d - k_numerics_d_min)];
    return double(lost) / double(updates);
}

} // namespace mixlab
