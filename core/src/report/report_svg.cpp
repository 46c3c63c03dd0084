// The explain report's charts, drawn as plain SVG 1.1 with presentation attributes only
// (no CSS, no scripts): browsers show them inline and Qt's SVG Tiny renderer paints the
// same text onto PDF pages.
#include "report/report_svg.h"

#include "mixlab/step_time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mixlab::report {
namespace {

constexpr int k_loss_points = 500;

struct Range {
    double lo = 0, hi = 1;
    double span() const { return hi - lo; }
};

// Tick positions at 1, 2 or 5 times a power of ten, about `want` of them over r, and
// the range widened to whole ticks so lines never leave the plot.
std::vector<double> nice_ticks(Range& r, int want)
{
    if (!(r.span() > 0)) {
        const double pad = r.lo == 0 ? 1.0 : std::abs(r.lo) * 0.1;
        r.lo -= pad;
        r.hi += pad;
    }
    const double raw = r.span() / std::max(1, want);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
        step = m * mag;
        if (step >= raw) break;
    }
    r.lo = std::floor(r.lo / step) * step;
    r.hi = std::ceil(r.hi / step) * step;
    std::vector<double> ticks;
    for (double t = r.lo; t <= r.hi + step * 1e-6; t += step)
        ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    return ticks;
}

// Enough decimals to tell neighbouring ticks apart, none more.
std::string tick_label(double v, double step)
{
    int decimals = 0;
    if (step > 0 && step < 1) decimals = std::min(6, int(std::ceil(-std::log10(step) - 1e-9)));
    return fixed(v, decimals);
}

// A time axis along the bottom of a bar chart: grid lines, ticks and "ms" labels.
std::string time_axis(Range r, double x0, double x1, double top, double bottom,
                      const std::string& unit_label)
{
    std::string s;
    std::vector<double> ticks = nice_ticks(r, 6);
    const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
    for (double t : ticks) {
        const double x = x0 + (t - r.lo) / r.span() * (x1 - x0);
        s += line(x, top, x, bottom, k_grid_color);
        s += text(x, bottom + 14, tick_label(t, step), "middle", 10, k_axis_color);
    }
    s += line(x0, bottom, x1, bottom, k_axis_color);
    s += text((x0 + x1) / 2, bottom + 30, unit_label, "middle", 11, k_axis_color);
    return s;
}

// The largest tick of the axis time_axis draws for [0, v]: bars scale against it.
double axis_max(double v)
{
    Range r{0, v > 0 ? v : 1};
    nice_ticks(r, 6);
    return r.hi;
}

const char* k_phase_colors[] = {"#8c9fca", "#1f77b4", "#9467bd", "#d62728",
                                "#ff9f1c", "#2ca02c", "#bbbbbb"};

} // namespace

std::string svg_open(int height, const std::string& title)
{
    std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
                    std::to_string(k_width) + "\" height=\"" + std::to_string(height) +
                    "\" viewBox=\"0 0 " + std::to_string(k_width) + " " + std::to_string(height) +
                    "\">\n";
    s += "<rect x=\"0\" y=\"0\" width=\"" + std::to_string(k_width) + "\" height=\"" +
         std::to_string(height) + "\" fill=\"#ffffff\"/>\n";
    s += "<text x=\"8\" y=\"18\" " + std::string(k_font) +
         " font-size=\"14\" font-weight=\"bold\" fill=\"#222222\">" + escape_html(title) +
         "</text>\n";
    return s;
}

std::string text(double x, double y, const std::string& content, const char* anchor, int size,
                 const char* color)
{
    return "<text x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" " + k_font + " font-size=\"" +
           std::to_string(size) + "\" text-anchor=\"" + anchor + "\" fill=\"" + color + "\">" +
           escape_html(content) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* color, double width)
{
    return "<line x1=\"" + fixed(x1, 1) + "\" y1=\"" + fixed(y1, 1) + "\" x2=\"" + fixed(x2, 1) +
           "\" y2=\"" + fixed(y2, 1) + "\" stroke=\"" + color + "\" stroke-width=\"" +
           fixed(width, 1) + "\"/>\n";
}

std::string rect(double x, double y, double w, double h, const std::string& fill)
{
    return "<rect x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" width=\"" +
           fixed(std::max(0.0, w), 1) + "\" height=\"" + fixed(h, 1) + "\" fill=\"" + fill +
           "\"/>\n";
}

std::string escape_html(std::string_view in)
{
    std::string out;
    out.reserve(in.size());
    for (char c : in) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string run_color(int index)
{
    static const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    constexpr int n = int(sizeof palette / sizeof palette[0]);
    return palette[((index % n) + n) % n];
}

std::string fixed(double value, int decimals)
{
    if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    return buf;
}

std::vector<std::pair<double, double>> decimate_min_max(const std::vector<float>& values,
                                                        int max_points)
{
    std::vector<std::pair<double, double>> out;
    const std::size_t n = values.size();
    if (max_points < 2 || n <= std::size_t(max_points)) {
        for (std::size_t i = 0; i < n; ++i)
            if (std::isfinite(values[i])) out.emplace_back(double(i + 1), double(values[i]));
        return out;
    }
    const std::size_t buckets = std::size_t(max_points / 2);
    for (std::size_t b = 0; b < buckets; ++b) {
        const std::size_t begin = b * n / buckets, end = (b + 1) * n / buckets;
        std::size_t lo = n, hi = n;
        for (std::size_t i = begin; i < end; ++i) {
            if (!std::isfinite(values[i])) continue;
            if (lo == n || values[i] < values[lo]) lo = i;
            if (hi == n || values[i] > values[hi]) hi = i;
        }
        if (lo == n) continue;
        const std::size_t first = std::min(lo, hi), second = std::max(lo, hi);
        out.emplace_back(double(first + 1), double(values[first]));
        if (second != first) out.emplace_back(double(second + 1), double(values[second]));
    }
    return out;
}

std::string loss_curves_svg(const std::vector<RunFacts>& runs,
                            const std::vector<std::string>& labels)
{
    constexpr int height = 320;
    constexpr double left = 60, right = k_width - 170, top = 48, bottom = height - 46;
    std::vector<std::vector<std::pair<double, double>>> series;
    Range xr{1, 1},
        yr{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    for (const RunFacts& f : runs) {
        series.push_back(decimate_min_max(f.train_loss, k_loss_points));
        xr.hi = std::max(xr.hi, double(f.train_loss.size()));
        for (const auto& [x, y] : series.back()) {
            yr.lo = std::min(yr.lo, y);
            yr.hi = std::max(yr.hi, y);
        }
    }
    std::string s = svg_open(height, "Training loss per step");
    if (!std::isfinite(yr.lo)) {
        s += text(k_width / 2.0, height / 2.0, "no finite loss was recorded", "middle", 12);
        return s + "</svg>\n";
    }
    if (yr.lo > 0 && yr.lo < 0.25 * yr.hi) yr.lo = 0; // losses read best from zero
    const std::vector<double> yt = nice_ticks(yr, 5);
    const std::vector<double> xt = nice_ticks(xr, 8);
    auto px = [&](double x) { return left + (x - xr.lo) / xr.span() * (right - left); };
    auto py = [&](double y) { return bottom - (y - yr.lo) / yr.span() * (bottom - top); };
    const double ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
    for (double t : yt) {
        s += line(left, py(t), right, py(t), k_grid_color);
        s += text(left - 6, py(t) + 4, tick_label(t, ystep), "end", 10, k_axis_color);
    }
    const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1;
    for (double t : xt) {
        s += line(px(t), bottom, px(t), bottom + 4, k_axis_color);
        s += text(px(t), bottom + 16, tick_label(t, xstep), "middle", 10, k_axis_color);
    }
    s += line(left, top, left, bottom, k_axis_color);
    s += line(left, bottom, right, bottom, k_axis_color);
    s += text((left + right) / 2, height - 10, "step", "middle", 11, k_axis_color);
    s += text(left - 6, top - 14, "loss", "end", 11, k_axis_color);
    for (std::size_t r = 0; r < series.size(); ++r) {
        const std::string color = run_color(int(r));
        if (!series[r].empty()) {
            s += "<polyline fill=\"none\" stroke=\"" + color +
                 "\" stroke-width=\"1.4\" stroke-linejoin=\"round\" points=\"";
            for (const auto& [x, y] : series[r]) s += fixed(px(x), 1) + "," + fixed(py(y), 1) + " ";
            s += "\"/>\n";
        }
        const double ly = top + 8 + 20.0 * double(r);
        s += line(right + 14, ly - 4, right + 34, ly - 4, color.c_str(), 3);
        s += text(right + 40, ly, r < labels.size() ? labels[r] : "run " + std::to_string(r + 1));
    }
    return s + "</svg>\n";
}

std::string step_time_svg(const std::vector<RunFacts>& runs, const std::vector<std::string>& labels,
                          int baseline)
{
    constexpr double left = 150, right = k_width - 170, top = 34, bar = 20, gap = 10;
    const double bottom = top + double(runs.size()) * (bar + gap);
    const int height = int(bottom) + 44;
    std::string s = svg_open(height, "Step time (median device time per step after warm-up)");
    double most = 0;
    for (const RunFacts& f : runs) most = std::max(most, f.summary.median_step_ms);
    const double full = axis_max(most);
    s += time_axis(Range{0, most > 0 ? most : 1}, left, right, top - 4, bottom, "ms per step");
    const double base = baseline >= 0 && std::size_t(baseline) < runs.size()
                            ? runs[std::size_t(baseline)].summary.median_step_ms
                            : 0;
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const double ms = runs[r].summary.median_step_ms;
        const double y = top + double(r) * (bar + gap);
        s += text(left - 8, y + bar / 2 + 4, r < labels.size() ? labels[r] : "run", "end");
        s += rect(left, y, ms > 0 ? ms / full * (right - left) : 0, bar, run_color(int(r)));
        std::string value = ms > 0 ? fixed(ms, 3) + " ms" : "n/a";
        if (speedup(base, ms) > 0 && int(r) != baseline)
            value += "  (" + fixed(speedup(base, ms), 2) + "x)";
        if (int(r) == baseline) value += "  (baseline)";
        const double end = left + (ms > 0 ? ms / full * (right - left) : 0);
        s += text(end + 6, y + bar / 2 + 4, value);
    }
    return s + "</svg>\n";
}

std::string phase_breakdown_svg(const std::vector<RunFacts>& runs,
                                const std::vector<std::string>& labels)
{
    if (runs.empty()) return "";
    for (const RunFacts& f : runs)
        if (!f.profile) return "";
    constexpr double left = 150, right = k_width - 30, top = 34, bar = 22, gap = 12;
    constexpr int n_segments = k_step_phases + 1; // the phases, then host/launch overhead
    const double bottom = top + double(runs.size()) * (bar + gap);
    const int legend_rows = (n_segments + 3) / 4;
    const int height = int(bottom) + 48 + 18 * legend_rows;
    std::string s =
        svg_open(height, "Device time per phase and host overhead (profiling pass mean)");
    auto segment_ms = [](const StepProfile& p, int i) {
        return i < k_step_phases ? std::max(0.0, p.phase_ms[std::size_t(i)])
                                 : std::max(0.0, p.overhead_ms);
    };
    double most = 0;
    for (const RunFacts& f : runs) {
        double total = 0;
        for (int i = 0; i < n_segments; ++i) total += segment_ms(*f.profile, i);
        most = std::max(most, total);
    }
    const double full = axis_max(most);
    s += time_axis(Range{0, most > 0 ? most : 1}, left, right, top - 4, bottom, "ms per step");
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const StepProfile& p = *runs[r].profile;
        const double y = top + double(r) * (bar + gap);
        s += text(left - 8, y + bar / 2 + 4, r < labels.size() ? labels[r] : "run", "end");
        double x = left;
        for (int i = 0; i < n_segments; ++i) {
            const double w = segment_ms(p, i) / full * (right - left);
            if (w <= 0) continue;
            s += rect(x, y, w, bar, k_phase_colors[i]);
            // The value inside its segment when it fits there.
            const std::string v = fixed(segment_ms(p, i), segment_ms(p, i) < 10 ? 2 : 1);
            if (w > 7.0 * double(v.size()) + 6)
                s += text(x + w / 2, y + bar / 2 + 4, v, "middle", 10, "#ffffff");
            x += w;
        }
    }
    const double legend_top = bottom + 44;
    for (int i = 0; i < n_segments; ++i) {
        const double lx = left + double(i % 4) * 140, ly = legend_top + 18.0 * double(i / 4);
        s += rect(lx, ly - 9, 12, 12, k_phase_colors[i]);
        s += text(lx + 17, ly + 1,
                  i < k_step_phases ? std::string(step_phase_name(StepPhase(i)))
                                    : std::string("host/launch overhead"));
    }
    return s + "</svg>\n";
}

} // namespace mixlab::report
