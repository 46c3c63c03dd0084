// The report's numerics heatmaps: per run and layer one SVG with a panel per tensor kind
// (x: the sampled steps, y: the binade, colour: the share of the values there) and the fp16
// and bf16 bands drawn over it (a mixed_fp8 run's also fp8's, scaled per tensor). Same look and attributes as report_svg.h's charts.
#pragma once
#include "mixlab/numerics.h"

#include <string>
#include <vector>

namespace mixlab::report {

// At most this many columns: more samples are added together, consecutive ones a column.
inline constexpr int k_heatmap_columns = 24;
// The panels, left to right, each k_heatmap_panel wide: weights, activations, gradients
// (as applied: each sample's counts shifted down by its power-of-two loss scale), updates
// (d = binade(update) - binade(weight)). A kind the layer lacks leaves its panel empty.
inline constexpr int k_heatmap_panel = 180;

// Cells are coloured by level: a share of its column's values at or above
// k_heatmap_levels[i] (and below the next) takes level i, lightest first; an empty cell
// is not drawn. Quantized so that runs of equal cells merge into one rectangle each,
// which keeps a report of many layers small.
inline constexpr double k_heatmap_levels[] = {0.0, 0.001, 0.01, 0.05, 0.2, 0.5};
std::string heatmap_color(double share); // share > 0
// A format's band lines: fp16 solid, bf16 dashed, each in its own colour.
std::string band_color(NumberFormat f);

// One layer (by path) of one run's samples; "" when no sample holds the layer. Value panels
// share one binade axis that always spans fp16's band (and, for gradients, that band moved
// by each column's loss scale); the lines: overflow at the largest finite value, the
// smallest normal, and the flush line (below it values fall under half the smallest
// subnormal). The updates panel's line per format is the largest d its weights lose,
// d <= -(mantissa + 2). Below the plot one row holds the zeros (values) or the updates
// lost already (updates).
// With `fp8_bands` (a mixed_fp8 run) also fp8's band as per-tensor scaling places it: E4M3
// over weights and activations, E5M2 over gradients, each column's top binade at its
// largest value.
std::string numerics_heatmap_svg(const std::vector<NumericsSample>& samples,
                                 const std::string& path, const std::string& title,
                                 bool fp8_bands = false);
// The colour levels and the band lines' key, drawn once above a run's heatmaps; with
// `fp8_bands`, a second row for the fp8 formats.
std::string numerics_legend_svg(bool fp8_bands = false);

} // namespace mixlab::report
