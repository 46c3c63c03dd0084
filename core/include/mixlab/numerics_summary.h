// A run's numerics samples (mixlab/numerics.h) summed per layer and tensor kind: the
// binades holding 99% of the values, the zero share, what each format would do to them,
// and the updates 16-bit weights would lose. What `mixlab-cli numerics` prints and the
// explain rules read.
#pragma once
#include "mixlab/numerics.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

// One tensor kind of one layer over every sample.
struct KindSummary {
    std::uint64_t values = 0; // summed over the samples
    std::optional<BinadeRange> range99;
    double zero = 0, non_finite = 0;
    std::array<FormatShares, std::size(k_number_formats)> formats; // k_number_formats' order
};

struct LayerNumericsSummary {
    std::string path, type;
    std::optional<KindSummary> weights, activations;
    // Gradients as applied (each sample's counts shifted by -log2 of its loss scale: exact
    // for the power-of-two scales the scaler uses; none when a scale was not one) and as
    // computed (scaled), the latter only when some scale differed from 1.
    std::optional<KindSummary> gradients, gradients_scaled;
    // Updates lost to half-ulp rounding by weights stored in each format (k_number_formats'
    // order), over the samples whose update ran; none without updates. And per such sample
    // (step, fp16 share).
    std::array<std::optional<double>, std::size(k_number_formats)> lost;
    std::vector<std::pair<std::int64_t, double>> lost_fp16_by_step;
    std::optional<double> lost_in(NumberFormat f) const;
};

struct NumericsSummary {
    int samples = 0;
    std::int64_t first_step = 0, last_step = 0;
    float min_scale = 1, max_scale = 1;
    bool power_of_two_scales = true;
    std::vector<LayerNumericsSummary> layers;
    // Every layer's gradients together, as applied and as computed (as in a layer).
    std::optional<KindSummary> gradients, gradients_scaled;
};

// k_number_formats' index of f: KindSummary::formats and LayerNumericsSummary::lost.
std::size_t format_index(NumberFormat f);

// Layers are matched by path; a sample of another model (other paths) adds its layers.
NumericsSummary summarize_numerics(const std::vector<NumericsSample>& samples);
// The table `mixlab-cli numerics` prints for one run; `title` heads it ("run 0: fp16").
std::string numerics_summary_text(const NumericsSummary& s, const std::string& title);
// The summary as JSON (`mixlab-cli numerics --json`; docs/FORMATS.md's mixlab-numerics/1):
// per layer and kind the range, zero share and per-format shares, and the lost updates.
nlohmann::ordered_json numerics_summary_to_json(const NumericsSummary& s);
// "12.35%", "<0.01%" for a share that is not zero but rounds to it, "0" for none.
std::string share_text(double share);

} // namespace mixlab
