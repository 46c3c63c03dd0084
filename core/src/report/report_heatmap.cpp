// Numerics heatmaps (report_heatmap.h): samples added into columns, each column's shares
// quantized to colour levels, equal neighbouring cells merged into one rectangle, and the
// formats' band lines over them.
#include "report/report_heatmap.h"

#include "report/report_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

namespace mixlab::report {
namespace {

constexpr NumberFormat k_band_formats[] = {NumberFormat::FP16, NumberFormat::BF16};
constexpr double k_plot_top = 48, k_plot_height = 120;
constexpr double k_label_width = 44;                  // the binade labels left of each plot
constexpr double k_extra_gap = 3, k_extra_height = 6; // the zeros' (lost updates') row
constexpr int k_levels = int(std::size(k_heatmap_levels));

// One column: the counts of its samples added.
struct Column {
    std::int64_t first_step = 0;
    std::map<int, std::uint64_t> bins; // binade (d for updates) -> count
    std::uint64_t extra = 0;           // zeros (values), lost already (updates)
    std::uint64_t total = 0;           // the shares' denominator
    int band_shift = 0;                // gradients: log2 of the column's first loss scale
};

struct Panel {
    TensorKind kind;
    std::vector<Column> columns;
    bool any = false;
};

int level_of(double share)
{
    int level = 0;
    for (int i = 0; i < k_levels; ++i)
        if (share >= k_heatmap_levels[i]) level = i;
    return level;
}

const LayerNumerics* find_layer(const NumericsSample& s, const std::string& path)
{
    for (const LayerNumerics& l : s.layers)
        if (l.path == path) return &l;
    return nullptr;
}

// Samples [first, last) into column c of `kind`. Gradients are unscaled (shift -log2 of the
// sample's scale) when `unscale`.
void fill(Column& c, Panel& p, const std::vector<NumericsSample>& samples, std::size_t first,
          std::size_t last, const std::string& path, bool unscale)
{
    c.first_step = samples[first].step;
    const std::optional<int> first_shift = power_of_two_exponent(samples[first].loss_scale);
    c.band_shift = p.kind == TensorKind::Gradients && unscale && first_shift ? *first_shift : 0;
    for (std::size_t i = first; i < last; ++i) {
        const LayerNumerics* l = find_layer(samples[i], path);
        if (!l) continue;
        if (p.kind == TensorKind::Updates) {
            if (!l->updates) continue;
            const UpdateHistogram& u = *l->updates;
            for (int d = k_numerics_d_min; d <= k_numerics_d_max; ++d)
                if (const std::uint64_t n = u.ratios[std::size_t(d - k_numerics_d_min)])
                    c.bins[d] += n;
            c.extra += u.lost + u.below;
            c.total += u.total() - u.idle - u.non_finite;
            p.any = true;
            continue;
        }
        const std::optional<ValueHistogram>& h = p.kind == TensorKind::Weights ? l->weights
                                                 : p.kind == TensorKind::Activations
                                                     ? l->activations
                                                     : l->gradients;
        if (!h) continue;
        int shift = 0;
        if (p.kind == TensorKind::Gradients && unscale)
            shift = -*power_of_two_exponent(samples[i].loss_scale);
        for (int e = k_numerics_binade_min; e <= k_numerics_binade_max; ++e)
            if (const std::uint64_t n = h->at(e)) c.bins[e + shift] += n;
        c.extra += h->zero;
        c.total += h->total();
        p.any = true;
    }
}

// A format's band boundaries on the value axis (binade units: binade e spans [e, e + 1)):
// the largest finite value, the smallest normal, half the smallest subnormal's binade top.
std::array<double, 3> value_lines(NumberFormat f)
{
    const FormatLimits& lim = format_limits(f);
    return {std::log2(lim.max_finite), double(lim.min_normal_binade),
            double(lim.min_subnormal_binade() - 1)};
}

// The update axis' line: updates with d <= -(mantissa + 2) are lost, so the line is that
// row's top.
double update_line(NumberFormat f) { return -double(format_limits(f).mantissa_bits + 1); }

struct Axis {
    int lo = 0, hi = 0; // rows lo..hi
    double bottom = k_plot_top + k_plot_height;
    double row() const { return k_plot_height / double(hi - lo + 1); }
    double y(double v) const { return bottom - (v - double(lo)) * row(); }
    bool holds(double v) const { return v >= double(lo) && v <= double(hi + 1); }
};

std::string band_line(double x1, double x2, double y, NumberFormat f)
{
    std::string s = "<line x1=\"" + fixed(x1, 1) + "\" y1=\"" + fixed(y, 1) + "\" x2=\"" +
                    fixed(x2, 1) + "\" y2=\"" + fixed(y, 1) + "\" stroke=\"" + band_color(f) +
                    "\" stroke-width=\"1.2\"";
    if (f != NumberFormat::FP16) s += " stroke-dasharray=\"4,2\"";
    return s + "/>\n";
}

std::string panel_title(TensorKind k, bool unscaled)
{
    switch (k) {
    case TensorKind::Weights: return "weights";
    case TensorKind::Activations: return "activations";
    case TensorKind::Gradients: return unscaled ? "gradients (unscaled)" : "gradients (scaled)";
    case TensorKind::Updates: return "update / weight";
    }
    return "";
}

// fp8's band, drawn for a mixed_fp8 run: E4M3 over weights and activations, E5M2 over
// gradients (the hybrid recipe's formats: fp8_format), none over updates. fp8 is only used with a
// scale per tensor, so the band is placed as scaling by the tensor's amax places it: its
// top binade at the column's largest value, one segment per run of columns whose largest
// value shares a binade.
std::string fp8_band(const Panel& p, const Axis& axis, double x0, double cw)
{
    if (p.kind == TensorKind::Updates) return "";
    const NumberFormat f = fp8_format(p.kind);
    const int max_binade = format_limits(f).max_binade;
    std::string s;
    std::size_t c = 0;
    while (c < p.columns.size()) {
        if (p.columns[c].bins.empty()) {
            ++c;
            continue;
        }
        const int top = p.columns[c].bins.rbegin()->first;
        std::size_t e = c + 1;
        while (e < p.columns.size() && !p.columns[e].bins.empty() &&
               p.columns[e].bins.rbegin()->first == top)
            ++e;
        for (double v : value_lines(f)) {
            const double at = v + double(top - max_binade);
            if (axis.holds(at))
                s += band_line(x0 + cw * double(c), x0 + cw * double(e), axis.y(at), f);
        }
        c = e;
    }
    return s;
}

std::string draw_panel(const Panel& p, const Axis& axis, double x0, double cw, bool unscaled,
                       bool fp8)
{
    std::string s = text(x0, k_plot_top - 6, panel_title(p.kind, unscaled), "start", 10);
    const double width = cw * double(p.columns.size());
    const double extra_y = axis.bottom + k_extra_gap;
    // Cells: per column, runs of rows of one level; a run the column before had too (same
    // rows, same level, adjacent) grows to the right instead of starting a rectangle.
    using Key = std::tuple<double, double, int>; // y, height, level
    struct Open {
        double x, w;
    };
    std::map<Key, Open> open;
    std::array<std::string, std::size(k_heatmap_levels)> cells;
    auto close = [&](const Key& k, const Open& o) {
        cells[std::size_t(std::get<2>(k))] +=
            "<rect x=\"" + fixed(o.x, 1) + "\" y=\"" + fixed(std::get<0>(k), 1) + "\" width=\"" +
            fixed(o.w, 1) + "\" height=\"" + fixed(std::get<1>(k), 1) + "\"/>\n";
    };
    for (std::size_t c = 0; c < p.columns.size(); ++c) {
        const Column& col = p.columns[c];
        const double x = x0 + cw * double(c);
        std::map<Key, Open> next;
        auto add = [&](double y, double h, int level) {
            const Key k{y, h, level};
            auto it = open.find(k);
            if (it != open.end()) {
                next[k] = Open{it->second.x, it->second.w + cw};
                open.erase(it);
            } else {
                next[k] = Open{x, cw};
            }
        };
        if (col.total > 0) {
            const double total = double(col.total);
            int run_lo = 0, run_level = -1;
            auto end_run = [&](int below) { // rows run_lo..below
                if (run_level >= 0)
                    add(axis.y(below + 1), axis.y(run_lo) - axis.y(below + 1), run_level);
            };
            for (int b = axis.lo; b <= axis.hi; ++b) {
                const auto it = col.bins.find(b);
                const int level = it == col.bins.end() ? -1 : level_of(double(it->second) / total);
                if (level != run_level) {
                    end_run(b - 1);
                    run_lo = b;
                    run_level = level;
                }
            }
            end_run(axis.hi);
            if (col.extra) add(extra_y, k_extra_height, level_of(double(col.extra) / total));
        }
        for (const auto& [k, o] : open) close(k, o);
        open = std::move(next);
    }
    for (const auto& [k, o] : open) close(k, o);
    for (int l = 0; l < k_levels; ++l)
        if (!cells[std::size_t(l)].empty())
            s += "<g fill=\"" + heatmap_color(k_heatmap_levels[l]) + "\">\n" +
                 cells[std::size_t(l)] + "</g>\n";
    // Frame, then the bands over the cells.
    s += "<rect x=\"" + fixed(x0, 1) + "\" y=\"" + fixed(k_plot_top, 1) + "\" width=\"" +
         fixed(width, 1) + "\" height=\"" + fixed(k_plot_height, 1) + "\" fill=\"none\" stroke=\"" +
         k_axis_color + "\" stroke-width=\"0.5\"/>\n";
    for (NumberFormat f : k_band_formats) {
        if (p.kind == TensorKind::Updates) {
            if (axis.holds(update_line(f)))
                s += band_line(x0, x0 + width, axis.y(update_line(f)), f);
            continue;
        }
        for (double v : value_lines(f)) {
            // Gradients: the band of the scaled values, one segment per run of equal shifts.
            std::size_t c = 0;
            while (c < p.columns.size()) {
                std::size_t e = c + 1;
                while (e < p.columns.size() && p.columns[e].band_shift == p.columns[c].band_shift)
                    ++e;
                const double at = v - double(p.columns[c].band_shift);
                if (axis.holds(at))
                    s += band_line(x0 + cw * double(c), x0 + cw * double(e), axis.y(at), f);
                c = e;
            }
        }
    }
    if (fp8) s += fp8_band(p, axis, x0, cw);
    // Binade labels: a power of two apart, at most 6.
    int step = 1;
    while ((axis.hi - axis.lo + 1) / step > 6) step *= 2;
    for (int b = axis.lo; b <= axis.hi; ++b)
        if (b % step == 0)
            s +=
                text(x0 - 3, axis.y(b + 0.5) + 3, "2^" + std::to_string(b), "end", 9, k_axis_color);
    s += text(x0 - 3, extra_y + k_extra_height, p.kind == TensorKind::Updates ? "lost" : "0", "end",
              9, k_axis_color);
    if (!p.columns.empty()) {
        const double label_y = extra_y + k_extra_height + 12;
        s += text(x0, label_y, "step " + std::to_string(p.columns.front().first_step), "start", 9,
                  k_axis_color);
        if (p.columns.size() > 1)
            s += text(x0 + width, label_y, std::to_string(p.columns.back().first_step), "end", 9,
                      k_axis_color);
    }
    return s;
}

// The rows every panel of `kind`s covers: its data and the lines that must show.
Axis axis_for(const std::vector<const Panel*>& panels, double must_lo, double must_hi)
{
    Axis a;
    a.lo = int(std::floor(must_lo));
    a.hi = int(std::ceil(must_hi)) - 1;
    for (const Panel* p : panels)
        for (const Column& c : p->columns)
            if (!c.bins.empty()) {
                a.lo = std::min(a.lo, c.bins.begin()->first);
                a.hi = std::max(a.hi, c.bins.rbegin()->first);
            }
    return a;
}

} // namespace

std::string heatmap_color(double share)
{
    // Light to dark blue (ColorBrewer's sequential Blues).
    static const char* const palette[] = {"#c6dbef", "#9ecae1", "#6baed6",
                                          "#4292c6", "#2171b5", "#08306b"};
    static_assert(std::size(palette) == std::size(k_heatmap_levels));
    return palette[level_of(share)];
}

std::string band_color(NumberFormat f)
{
    switch (f) {
    case NumberFormat::FP16: return "#e6550d";
    case NumberFormat::BF16: return "#31a354";
    case NumberFormat::FP8E4M3: return "#756bb1";
    case NumberFormat::FP8E5M2: return "#636363";
    }
    return "#000000";
}

std::string numerics_heatmap_svg(const std::vector<NumericsSample>& samples,
                                 const std::string& path, const std::string& title, bool fp8_bands)
{
    bool present = false;
    bool unscale = true; // shifting binades is exact only for power-of-two scales
    for (const NumericsSample& s : samples) {
        present = present || find_layer(s, path);
        unscale = unscale && power_of_two_exponent(s.loss_scale).has_value();
    }
    if (!present) return "";
    const std::size_t n = samples.size();
    const std::size_t n_columns = std::min<std::size_t>(n, k_heatmap_columns);
    const TensorKind kinds[] = {TensorKind::Weights, TensorKind::Activations, TensorKind::Gradients,
                                TensorKind::Updates};
    std::vector<Panel> panels;
    for (TensorKind k : kinds) {
        Panel p{k, std::vector<Column>(n_columns), false};
        for (std::size_t c = 0; c < n_columns; ++c)
            fill(p.columns[c], p, samples, c * n / n_columns, (c + 1) * n / n_columns, path,
                 unscale);
        panels.push_back(std::move(p));
    }
    // Value panels share an axis that holds fp16's whole band, moved for the gradients by
    // every column's shift; the updates' axis holds both formats' lines.
    const std::array<double, 3> fp16 = value_lines(NumberFormat::FP16);
    int shift_lo = 0, shift_hi = 0;
    for (const Column& c : panels[2].columns) {
        shift_lo = std::min(shift_lo, c.band_shift);
        shift_hi = std::max(shift_hi, c.band_shift);
    }
    const Axis values =
        axis_for({&panels[0], &panels[1], &panels[2]}, fp16[2] - 1 - shift_hi, fp16[0] - shift_lo);
    const Axis updates = axis_for({&panels[3]}, update_line(NumberFormat::FP16) - 2,
                                  update_line(NumberFormat::BF16) + 1);
    const double extra_bottom = k_plot_top + k_plot_height + k_extra_gap + k_extra_height;
    const int height = int(extra_bottom) + 24;
    std::string s = svg_open(height, title);
    const double plot_width = k_heatmap_panel - k_label_width - 8;
    const double cw = std::floor(plot_width / double(n_columns));
    for (std::size_t i = 0; i < panels.size(); ++i) {
        const double x0 = double(i) * k_heatmap_panel + k_label_width;
        if (!panels[i].any) {
            s += text(x0, k_plot_top - 6, panel_title(panels[i].kind, unscale), "start", 10,
                      k_axis_color);
            s += text(x0 + plot_width / 2, k_plot_top + k_plot_height / 2, "none", "middle", 10,
                      k_axis_color);
            continue;
        }
        s += draw_panel(panels[i], i == 3 ? updates : values, x0, cw, unscale, fp8_bands);
    }
    return s + "</svg>\n";
}

std::string numerics_legend_svg(bool fp8_bands)
{
    const int height = fp8_bands ? 74 : 56;
    std::string s = svg_open(height, "Numerics heatmaps: key");
    static const char* const labels[] = {"<0.1%", "0.1-1%", "1-5%", "5-20%", "20-50%", ">=50%"};
    static_assert(std::size(labels) == std::size(k_heatmap_levels));
    double x = 8;
    s += text(x, 42, "share of a column:", "start", 10);
    x += 104;
    for (int l = 0; l < k_levels; ++l) {
        s += rect(x, 32, 12, 12, heatmap_color(k_heatmap_levels[l]));
        s += text(x + 16, 42, labels[l], "start", 10);
        x += 62;
    }
    x += 8;
    for (NumberFormat f : k_band_formats) {
        s += band_line(x, x + 22, 38, f);
        s += text(x + 26, 42, std::string(format_limits(f).name), "start", 10);
        x += 58;
    }
    if (fp8_bands) {
        // A second row: the fp8 formats' names are longer, and they are scaled.
        s += text(8, 62, "mixed_fp8 runs, scaled per tensor:", "start", 10);
        x = 196;
        for (NumberFormat f : {NumberFormat::FP8E4M3, NumberFormat::FP8E5M2}) {
            s += band_line(x, x + 22, 58, f);
            s += text(x + 26, 62, std::string(format_limits(f).name), "start", 10);
            x += 96;
        }
    }
    return s + "</svg>\n";
}

} // namespace mixlab::report
