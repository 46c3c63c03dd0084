// Numerics: where a run's values sit on the number line, per layer and per tensor kind,
// sampled every N steps (RunConfig::numerics_every) from histograms the device counts
// (Backend::value_histogram, update_histogram), and what each storage format would do to
// them: overflow, land in subnormals, flush to zero, lose an update to rounding.
//
// A ValueHistogram counts elements by binade, floor(log2|x|) read exactly from the bits,
// over every finite non-zero float32 binade [-149, 127] (fp32 subnormals included, so no
// value falls outside), with zeros, +inf, -inf and NaN apart. An UpdateHistogram counts
// weight elements by d = binade(w_after - w_before) - binade(w_before): how many binades
// the applied update sits below (d < 0) or above the weight it went into.
//
// JSON form (numerics_sample_to_json; the "numerics" array of a run in a mixlab-log/1):
//   {"step": 40, "loss_scale": 65536, "skipped": false,
//    "layers": [{"path": "layer 1", "type": "dense",
//                "weights":     {"binade_min": -20, "counts": [...], "zero": 0,
//                                "pos_inf": 0, "neg_inf": 0, "nan": 0},
//                "activations": {...same...},
//                "gradients":   {...same, as computed: scaled by loss_scale...},
//                "updates":     {"d_min": -30, "counts": [...], "below": 0, "above": 0,
//                                "lost": 0, "idle": 0, "from_zero": 0, "non_finite": 0}}]}
// "counts"[i] is the number of values of binade binade_min + i (of d = d_min + i), trimmed to
// the first and last non-zero bin (an empty "counts" has binade_min 0). A kind a layer does
// not have (no parameters: no weights, gradients, updates) is absent.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

// The binades a ValueHistogram holds: every finite non-zero float32 (hd_math.h's
// k_binade_min/max; static_asserts in numerics.cpp keep the two equal).
inline constexpr int k_numerics_binade_min = -149;
inline constexpr int k_numerics_binade_max = 127;
inline constexpr int k_numerics_binades = k_numerics_binade_max - k_numerics_binade_min + 1;
// The update ratios d an UpdateHistogram holds in bins; the rest are `below`/`above`.
inline constexpr int k_numerics_d_min = -64;
inline constexpr int k_numerics_d_max = 63;
inline constexpr int k_numerics_ds = k_numerics_d_max - k_numerics_d_min + 1;

struct ValueHistogram {
    std::array<std::uint64_t, k_numerics_binades> binades{}; // [e - k_numerics_binade_min]
    std::uint64_t zero = 0, pos_inf = 0, neg_inf = 0, nan = 0;

    std::uint64_t at(int binade) const
    {
        return binades[std::size_t(binade - k_numerics_binade_min)];
    }
    std::uint64_t finite_nonzero() const;
    std::uint64_t total() const;
    // Counts from device slots (hd_math.h's ValueSlot order), added.
    void add_slots(const std::uint32_t* slots);
    bool operator==(const ValueHistogram&) const = default;
};

struct UpdateHistogram {
    std::array<std::uint64_t, k_numerics_ds> ratios{}; // [d - k_numerics_d_min]
    std::uint64_t below = 0, above = 0;                // d below/above the bins
    std::uint64_t lost = 0;       // weight unchanged although its gradient was not zero
    std::uint64_t idle = 0;       // weight unchanged, gradient zero
    std::uint64_t from_zero = 0;  // the weight was zero before (changed)
    std::uint64_t non_finite = 0; // weight or gradient inf/NaN
    std::uint64_t total() const;
    void add_slots(const std::uint32_t* slots); // hd_math.h's UpdateSlot order
    bool operator==(const UpdateHistogram&) const = default;
};

enum class TensorKind { Weights, Activations, Gradients, Updates };
std::string_view tensor_kind_name(TensorKind k); // "weights", "activations", ...

// One layer (a top-level layer of the model; a residual block as a whole) at one sample.
// Weights, gradients and updates sum every parameter tensor of the layer (a dense layer's
// kernel and bias). Activations are the layer's output as stored (its dtype).
struct LayerNumerics {
    std::string path; // "layer 1", as the model's layers are named everywhere
    std::string type; // "dense"
    std::optional<ValueHistogram> weights, activations, gradients;
    std::optional<UpdateHistogram> updates;
    bool operator==(const LayerNumerics&) const = default;
};

// Weights are the values the step's forward pass read (the fp32 masters where the policy
// keeps them; a split master's bf16 half); gradients as backward wrote them, multiplied
// by loss_scale; updates what the optimizer did to the masters.
struct NumericsSample {
    std::int64_t step = 0; // 1-based step these values belong to
    float loss_scale = 1;  // the scale the step's gradients carry
    bool skipped = false;  // the optimizer skipped the update (overflow): no updates
    std::vector<LayerNumerics> layers;
    bool operator==(const NumericsSample&) const = default;
};

// ---- formats -------------------------------------------------------------------------------
enum class NumberFormat { FP16, BF16, FP8E4M3, FP8E5M2 };
inline constexpr NumberFormat k_number_formats[] = {NumberFormat::FP16, NumberFormat::BF16,
                                                    NumberFormat::FP8E4M3, NumberFormat::FP8E5M2};

// A binary floating format's limits as binades: normals span [min_normal, max] binades,
// subnormals [min_subnormal, min_normal - 1] with min_subnormal = min_normal - mantissa.
struct FormatLimits {
    std::string_view name; // "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"
    int mantissa_bits;     // explicit fraction bits
    int min_normal_binade; // binade of the smallest normal
    int max_binade;        // binade of the largest finite value
    double max_finite;     // 65504, 3.39e38, 448 (E4M3 has no inf), 57344
    int min_subnormal_binade() const { return min_normal_binade - mantissa_bits; }
    // The binades that neither flush nor overflow, [min_subnormal - 1, max] (format_shares).
    int kept_binades() const { return max_binade - min_subnormal_binade() + 2; }
};
const FormatLimits& format_limits(NumberFormat f);
// The fp8 format the hybrid recipe (mixed_fp8's) gives a kind: E5M2 to gradients, E4M3
// to the rest. Its GEMMs read weights, inputs and output gradients so; the weight
// gradients the numerics sample are not quantized, so theirs is the question of whether
// E5M2 would hold them.
NumberFormat fp8_format(TensorKind k);

// What storing the values of h (scaled by 2^shift: a power-of-two loss scale, or its
// inverse to unscale) in format f would do, as shares of h.total(); by binade, so exact
// except where noted:
//   overflow   binade above max_binade: becomes inf (NaN or saturation in E4M3). Values in
//              the top binade above max_finite + half an ulp overflow too and are not
//              counted (a binade does not tell them apart).
//   subnormal  binades [min_subnormal - 1, min_normal - 1]: stored as a subnormal, with
//              fewer significant bits. The lowest of these binades starts at half the
//              smallest subnormal, which itself rounds to zero (ties to even) and is
//              counted here.
//   flush      non-zero and binade <= min_subnormal - 2: below half the smallest
//              subnormal, becomes zero.
//   zero, non_finite (inf and NaN already): as they are.
struct FormatShares {
    double overflow = 0, subnormal = 0, flush = 0, zero = 0, non_finite = 0;
};
FormatShares format_shares(const ValueHistogram& h, NumberFormat f, int shift = 0);

// Counts by binade without a range: histograms of several samples added, each shifted by
// its own power of two (gradients unscaled by the scale each step used). A value shifted
// below fp32's range keeps its binade here (what fp32 itself would do to it is not asked).
struct BinadeCounts {
    std::map<int, std::uint64_t> binades; // finite non-zero values by binade
    std::uint64_t zero = 0, non_finite = 0;
    void add(const ValueHistogram& h, int shift = 0);
    std::uint64_t finite_nonzero() const;
    std::uint64_t total() const { return finite_nonzero() + zero + non_finite; }
};
FormatShares format_shares(const BinadeCounts& c, NumberFormat f);

// log2(scale) when scale is a power of two (the loss scaler's scales are: init 2^16,
// growth x2, backoff x0.5), none otherwise: shifting binades is exact only then.
std::optional<int> power_of_two_exponent(float scale);

// The binades holding `share` of the finite non-zero values, cut evenly from both tails
// (0.99: the lowest and highest 0.5% left out); none without such values.
struct BinadeRange {
    int lo = 0, hi = 0;
};
std::optional<BinadeRange> central_range(const ValueHistogram& h, double share = 0.99);
std::optional<BinadeRange> central_range(const BinadeCounts& c, double share = 0.99);

// Per-tensor scaling (fp8's recipe) can shift a tensor by any power of two: the shift that
// keeps the most of c's finite non-zero values inside f's binades that neither flush nor
// overflow ([min_subnormal - 1, max_binade], as format_shares counts), and the share of
// c.total() that still flushes or saturates there. `binades` is that window's width. Of
// equal shifts, the one that puts the lowest kept binade at the window's bottom. None
// without finite non-zero values.
struct ShiftFit {
    int shift = 0;
    int binades = 0;
    double flush = 0, saturate = 0;
};
std::optional<ShiftFit> best_shift(const BinadeCounts& c, NumberFormat f);

// The share of the updates that weights stored in f would lose: the update is below half
// an ulp of its weight, d <= -(mantissa + 2), or it was lost already (unchanged weight,
// non-zero gradient); out of the updates there were (total minus idle and non-finite).
// None without updates. Approximations, each rare: a weight in f's subnormal range has a
// larger ulp than its binade says; at a power-of-two weight an update toward zero sees the
// ulp below, half as large; the tie at exactly half an ulp is counted as kept.
std::optional<double> lost_update_share(const UpdateHistogram& u, NumberFormat f);

// JSON forms (the layout above); readers throw InputError naming the field.
nlohmann::ordered_json numerics_sample_to_json(const NumericsSample& s);
class JsonReader;
NumericsSample numerics_sample_from_json(const JsonReader& j);

} // namespace mixlab
