// The Numerics dock's data: a run's samples turned into per-layer grids (numericsgrid.h).
#include "numerics/numericsgrid.h"

#include "mixlab/numerics_summary.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace {

QString tr(const char *text) { return QCoreApplication::translate("NumericsGrid", text); }

const std::optional<mixlab::ValueHistogram> *valuesOf(const mixlab::LayerNumerics &layer,
                                                      mixlab::TensorKind kind)
{
    switch (kind) {
    case mixlab::TensorKind::Weights: return &layer.weights;
    case mixlab::TensorKind::Activations: return &layer.activations;
    case mixlab::TensorKind::Gradients: return &layer.gradients;
    case mixlab::TensorKind::Updates: break;
    }
    return nullptr;
}

bool hasKind(const mixlab::LayerNumerics &layer, mixlab::TensorKind kind)
{
    if (kind == mixlab::TensorKind::Updates) return layer.updates.has_value();
    return valuesOf(layer, kind)->has_value();
}

NumericsColumn valueColumn(const mixlab::NumericsSample &sample, const mixlab::ValueHistogram &h,
                           mixlab::TensorKind kind, mixlab::NumberFormat f)
{
    NumericsColumn c;
    c.step = sample.step;
    c.lossScale = sample.loss_scale;
    c.present = true;
    if (kind == mixlab::TensorKind::Gradients) {
        // The scaler's scales are powers of two; another (a static scale set by hand) is
        // shown at its nearest binade and the tooltip says so.
        if (const std::optional<int> e = mixlab::power_of_two_exponent(sample.loss_scale)) {
            c.shift = *e;
        } else if (sample.loss_scale > 0 && std::isfinite(sample.loss_scale)) {
            c.shift = int(std::lround(std::log2(double(sample.loss_scale))));
            c.exactShift = false;
        }
    }
    std::optional<int> top; // the largest value's binade, as stored
    for (int b = mixlab::k_numerics_binade_min; b <= mixlab::k_numerics_binade_max; ++b)
        if (const std::uint64_t n = h.at(b)) {
            c.counts[b - c.shift] = n;
            top = b;
        }
    c.total = h.total();
    c.zero = h.zero;
    c.nonFinite = h.pos_inf + h.neg_inf + h.nan;
    // fp8 is never used unscaled: a scale per tensor (mixed_fp8's amax / fp8 max) maps
    // the largest value to the format's top binade, so that is where the band goes. Drawn
    // where the raw values sit, E5M2 showed most of a run's gradients flushed: a loss no
    // per-tensor scaled fp8 would have.
    if (isFp8(f) && top) c.tensorShift = mixlab::format_limits(f).max_binade - *top;
    c.band = formatBand(f, c.shift + c.tensorShift.value_or(0));
    // What the format does to the values as they were stored (scaled, for gradients):
    // the band moved with the scale, so this is what the picture shows against it.
    const mixlab::FormatShares s = mixlab::format_shares(h, f, c.tensorShift.value_or(0));
    c.overflow = s.overflow;
    c.flush = s.flush;
    return c;
}

NumericsColumn updateColumn(const mixlab::NumericsSample &sample, const mixlab::UpdateHistogram &u,
                            mixlab::NumberFormat f)
{
    NumericsColumn c;
    c.step = sample.step;
    c.lossScale = sample.loss_scale;
    c.present = true;
    for (int d = mixlab::k_numerics_d_min; d <= mixlab::k_numerics_d_max; ++d)
        if (const std::uint64_t n = u.ratios[std::size_t(d - mixlab::k_numerics_d_min)])
            c.counts[d] = n;
    c.total = u.total() - u.idle - u.non_finite;
    c.nonFinite = u.non_finite;
    c.lost = mixlab::lost_update_share(u, f);
    return c;
}

} // namespace

FormatBand formatBand(mixlab::NumberFormat f, int shift)
{
    const mixlab::FormatLimits &l = mixlab::format_limits(f);
    FormatBand b;
    b.overflowAbove = l.max_binade - shift;
    b.normalFrom = l.min_normal_binade - shift;
    b.subnormalFrom = l.min_subnormal_binade() - shift;
    b.flushAtOrBelow = l.min_subnormal_binade() - 2 - shift;
    return b;
}

bool isFp8(mixlab::NumberFormat f)
{
    return f == mixlab::NumberFormat::FP8E4M3 || f == mixlab::NumberFormat::FP8E5M2;
}

mixlab::NumberFormat policyFormat(mixlab::Policy p, mixlab::TensorKind kind)
{
    using mixlab::NumberFormat;
    switch (p) {
    case mixlab::Policy::MixedFP8:
        return kind == mixlab::TensorKind::Updates ? NumberFormat::BF16 : mixlab::fp8_format(kind);
    case mixlab::Policy::MixedBF16: return NumberFormat::BF16;
    case mixlab::Policy::FP32:
    case mixlab::Policy::TF32:
    case mixlab::Policy::MixedFP16:
    case mixlab::Policy::FP16: break;
    }
    return NumberFormat::FP16;
}

int lostUpdateTop(mixlab::NumberFormat f) { return -(mixlab::format_limits(f).mantissa_bits + 2); }

QString tensorKindText(mixlab::TensorKind k)
{
    const std::string_view name = mixlab::tensor_kind_name(k);
    return QString::fromLatin1(name.data(), qsizetype(name.size()));
}

QString numberFormatText(mixlab::NumberFormat f)
{
    switch (f) {
    case mixlab::NumberFormat::FP16: return QStringLiteral("fp16");
    case mixlab::NumberFormat::BF16: return QStringLiteral("bf16");
    case mixlab::NumberFormat::FP8E4M3: return QStringLiteral("fp8 E4M3");
    case mixlab::NumberFormat::FP8E5M2: return QStringLiteral("fp8 E5M2");
    }
    return QString();
}

double NumericsGrid::share(int column, int row) const
{
    if (column < 0 || column >= int(columns.size())) return 0;
    const NumericsColumn &c = columns[std::size_t(column)];
    return c.total == 0 ? 0 : double(count(column, row)) / double(c.total);
}

std::uint64_t NumericsGrid::count(int column, int row) const
{
    if (column < 0 || column >= int(columns.size())) return 0;
    const auto &counts = columns[std::size_t(column)].counts;
    const auto it = counts.find(row);
    return it == counts.end() ? 0 : it->second;
}

std::vector<NumericsGrid> buildNumericsGrids(const std::vector<mixlab::NumericsSample> &samples,
                                             mixlab::TensorKind kind, mixlab::NumberFormat f)
{
    // Layers by path, in the order they first appear; a sample without the layer (or the
    // kind: a skipped step's updates) leaves an empty column, so columns line up by step.
    std::vector<NumericsGrid> grids;
    std::map<std::string, std::size_t> index;
    for (const mixlab::NumericsSample &s : samples)
        for (const mixlab::LayerNumerics &layer : s.layers)
            if (hasKind(layer, kind) && !index.count(layer.path)) {
                index[layer.path] = grids.size();
                NumericsGrid g;
                g.path = QString::fromStdString(layer.path);
                g.type = QString::fromStdString(layer.type);
                g.kind = kind;
                g.format = f;
                grids.push_back(std::move(g));
            }
    for (const mixlab::NumericsSample &s : samples) {
        for (NumericsGrid &g : grids) {
            NumericsColumn c;
            c.step = s.step;
            c.lossScale = s.loss_scale;
            for (const mixlab::LayerNumerics &layer : s.layers) {
                if (QString::fromStdString(layer.path) != g.path || !hasKind(layer, kind)) continue;
                c = kind == mixlab::TensorKind::Updates
                        ? updateColumn(s, *layer.updates, f)
                        : valueColumn(s, **valuesOf(layer, kind), kind, f);
                break;
            }
            if (!c.counts.empty()) {
                const int lo = c.counts.begin()->first, hi = c.counts.rbegin()->first;
                g.valueRows = g.valueRows ? std::pair(std::min(g.valueRows->first, lo),
                                                      std::max(g.valueRows->second, hi))
                                          : std::pair(lo, hi);
            }
            g.columns.push_back(std::move(c));
        }
    }
    return grids;
}

std::optional<std::pair<int, int>> displayRows(const std::vector<const NumericsGrid *> &grids,
                                               int maxRows)
{
    // A margin of two rows shows where the values end.
    constexpr int k_margin = 2;
    std::optional<std::pair<int, int>> rows;
    std::vector<int> lines; // the format's lines, as row edges that must be in view
    for (const NumericsGrid *g : grids) {
        if (!g || !g->valueRows) continue;
        const int lo = g->valueRows->first - k_margin, hi = g->valueRows->second + k_margin;
        rows = rows ? std::pair(std::min(rows->first, lo), std::max(rows->second, hi))
                    : std::pair(lo, hi);
        if (g->kind == mixlab::TensorKind::Updates) {
            lines.push_back(lostUpdateTop(g->format));
            lines.push_back(lostUpdateTop(g->format) + 1);
        }
        for (const NumericsColumn &c : g->columns)
            if (c.band) {
                lines.push_back(c.band->overflowAbove + 1);
                lines.push_back(c.band->flushAtOrBelow);
            }
    }
    if (!rows) return rows;
    // Each line that fits is brought into view, nearest first: a far line (bf16's overflow
    // at 2^127 over weights near 2^-5) would leave the values a few pixels tall.
    std::sort(lines.begin(), lines.end(), [&](int a, int b) {
        const auto dist = [&](int r) {
            return r < rows->first ? rows->first - r : r > rows->second ? r - rows->second : 0;
        };
        return dist(a) < dist(b);
    });
    for (int line : lines) {
        const std::pair<int, int> wider(std::min(rows->first, line), std::max(rows->second, line));
        if (wider.second - wider.first + 1 <= maxRows) rows = wider;
    }
    return rows;
}

QString cellToolTip(const NumericsGrid &grid, int column, int row)
{
    if (column < 0 || column >= int(grid.columns.size())) return QString();
    const NumericsColumn &c = grid.columns[std::size_t(column)];
    const QString head = tr("%1 (%2), step %3").arg(grid.path, grid.type).arg(c.step);
    if (!c.present)
        return head + QLatin1Char('\n') +
               (grid.kind == mixlab::TensorKind::Updates
                    ? tr("no update at this sample (the step was skipped)")
                    : tr("no %1 at this sample").arg(tensorKindText(grid.kind)));
    const std::uint64_t n = grid.count(column, row);
    const QString share = QString::fromStdString(mixlab::share_text(grid.share(column, row)));
    QString where;
    if (grid.kind == mixlab::TensorKind::Updates)
        where = tr("update %1 binades below its weight (|update| / |weight| in 2^%2 .. 2^%3)")
                    .arg(-row)
                    .arg(row)
                    .arg(row + 1);
    else
        where = tr("binade 2^%1 .. 2^%2").arg(row).arg(row + 1);
    QString text =
        head + QLatin1Char('\n') + where + QLatin1Char('\n') +
        tr("share %1 (%2 of %3 %4)")
            .arg(share)
            .arg(n)
            .arg(c.total)
            .arg(grid.kind == mixlab::TensorKind::Updates ? tr("updates") : tr("values"));
    if (grid.kind == mixlab::TensorKind::Gradients && c.lossScale != 1)
        text += QLatin1Char('\n') + (c.exactShift ? tr("unscaled: stored x %1 (2^%2)")
                                                  : tr("unscaled: stored x %1 (about 2^%2)"))
                                        .arg(double(c.lossScale))
                                        .arg(c.shift);
    if (c.tensorShift)
        text += QLatin1Char('\n') + tr("%1 band: this tensor scaled by 2^%2 (its largest value "
                                       "to %1's top binade)")
                                        .arg(numberFormatText(grid.format))
                                        .arg(*c.tensorShift);
    return text;
}
