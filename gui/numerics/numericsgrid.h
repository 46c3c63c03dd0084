// What the Numerics dock draws for one layer of one run, computed from the run's samples
// and kept free of painting so the tests can read it: one column per sample (x: its step),
// one row per binade (updates: per d, the binades the update sits below its weight), the
// share and count in each cell, the chosen format's band per column, and the format's
// overflow and flush shares (updates: the share it would lose) per column.
//
// Gradients are shown as applied: a sample's counts are stored scaled by its loss scale,
// so they are moved down by log2(scale) binades, and the band with them: the values the
// format held were the scaled ones, so in the unscaled picture its range sits log2(scale)
// binades lower at that step. An fp8 format's band is placed as a per-tensor scale puts
// it: its top binade at the column's largest value (NumericsColumn::tensorShift).
#pragma once
#include "mixlab/numerics.h"
#include "mixlab/policy.h"

#include <QString>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

// A format's limits as rows of the heatmap (binades, after a column's shift): values above
// overflowAbove become inf; normalFrom..overflowAbove are normal; subnormalFrom is the
// smallest subnormal's binade; rows at or below flushAtOrBelow become zero. Between the
// flush and the normal rows lies the subnormal region (format_shares' split: the binade
// just below the smallest subnormal rounds up to it, so the flush line sits below that).
struct FormatBand {
    int overflowAbove = 0;
    int normalFrom = 0;
    int subnormalFrom = 0;
    int flushAtOrBelow = 0;
};
// The band of format f for values scaled by 2^-shift (shift: the binades the column was
// moved down by; 0 for anything but a scaled gradient).
FormatBand formatBand(mixlab::NumberFormat f, int shift = 0);
// fp8 E4M3 / E5M2: formats used with a scale per tensor.
bool isFp8(mixlab::NumberFormat f);
// The format a policy gives this kind, the dock's choice until the user picks one:
// mixed_fp8's recipe gives weights and activations E4M3 and gradients E5M2 (fp8_format;
// its updates go into fp32 masters whose bf16 value it reads); bf16 policies bf16;
// the rest fp16 (for fp32 and tf32: the question of whether fp16 would hold the values).
mixlab::NumberFormat policyFormat(mixlab::Policy p, mixlab::TensorKind kind);
// Updates: rows d at or below this are lost by weights stored in f (half an ulp:
// d <= -(mantissa + 2), lost_update_share's rule).
int lostUpdateTop(mixlab::NumberFormat f);

// Display names: "weights", "fp8 E4M3".
QString tensorKindText(mixlab::TensorKind k);
QString numberFormatText(mixlab::NumberFormat f);

struct NumericsColumn {
    std::int64_t step = 0;
    float lossScale = 1;
    bool present = false;   // the layer has this kind at this sample (updates: not skipped)
    int shift = 0;          // rows = binade - shift (gradients: log2 of the loss scale)
    bool exactShift = true; // false: the scale was no power of two, shift is its nearest
    // fp8 formats: log2 of the per-tensor scale that puts the column's largest value in
    // the format's top binade (as amax scaling does); the band and the shares are the
    // scaled values'. None for 16-bit formats and for a column without finite values.
    std::optional<int> tensorShift;
    std::map<int, std::uint64_t> counts; // row -> values
    std::uint64_t total = 0;             // what shares are of (see NumericsGrid::share)
    std::uint64_t zero = 0, nonFinite = 0;
    std::optional<FormatBand> band; // none for updates
    // The format's shares of this column: overflow and flush (format_shares, of the values
    // as stored), or for updates the lost share (lost_update_share) in `lost`.
    double overflow = 0, flush = 0;
    std::optional<double> lost;
};

struct NumericsGrid {
    QString path, type; // "layer 1", "dense"
    mixlab::TensorKind kind = mixlab::TensorKind::Weights;
    mixlab::NumberFormat format = mixlab::NumberFormat::FP16;
    std::vector<NumericsColumn> columns;
    // Rows holding any count over the columns; none when every column is empty.
    std::optional<std::pair<int, int>> valueRows;

    // The share of a column's values in a row: count / total, where total is every value
    // of the tensor (zeros, inf and NaN included, as format_shares counts) or, for updates,
    // every update that ran (idle and non-finite weights left out, as lost_update_share).
    double share(int column, int row) const;
    std::uint64_t count(int column, int row) const;
    bool hasValues() const { return valueRows.has_value(); }
};

// One grid per layer that has `kind` in any sample, in the order the layers first appear.
std::vector<NumericsGrid> buildNumericsGrids(const std::vector<mixlab::NumericsSample> &samples,
                                             mixlab::TensorKind kind, mixlab::NumberFormat f);

// The rows a heatmap shows for grids read side by side (one layer of several runs): the
// values' rows with a margin, widened to the format's lines (overflow, normal, flush; the
// lost-update line for updates) when that keeps the picture to `maxRows`. None without
// values.
std::optional<std::pair<int, int>> displayRows(const std::vector<const NumericsGrid *> &grids,
                                               int maxRows = 72);

// The hover text of a cell: layer, step, binade range, share and count.
QString cellToolTip(const NumericsGrid &grid, int column, int row);
