// The explain report's charts as standalone SVG text (one function per chart) and the
// text helpers the report's HTML shares with them.
#pragma once
#include "mixlab/explain.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixlab::report {

// The charts' shared look: every chart is k_width wide, in one font, axes and grid lines in
// these greys.
inline constexpr int k_width = 720;
inline constexpr const char* k_font = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
inline constexpr const char* k_axis_color = "#555555";
inline constexpr const char* k_grid_color = "#e3e3e3";

// SVG pieces with presentation attributes only (what Qt's SVG Tiny renderer paints):
// the opening <svg> of a chart `height` tall with its white ground and bold title, a text,
// a line and a filled rectangle. Coordinates are written with one decimal.
std::string svg_open(int height, const std::string& title);
std::string text(double x, double y, const std::string& content, const char* anchor = "start",
                 int size = 11, const char* color = "#222222");
std::string line(double x1, double y1, double x2, double y2, const char* color, double width = 1);
std::string rect(double x, double y, double w, double h, const std::string& fill);

// & < > " ' as entities: safe in element text and in quoted attributes.
std::string escape_html(std::string_view text);
// "#1f77b4", ...: a stable colour per run index, the same in every chart of a report.
std::string run_color(int index);
// "%.*f" without the locale's say.
std::string fixed(double value, int decimals);

// At most max_points (step, value) points of a per-step series (step = index + 1): the
// series itself when short enough, else the smallest and largest value of each of
// max_points / 2 equal buckets, in step order, so spikes survive. Non-finite values are
// left out.
std::vector<std::pair<double, double>> decimate_min_max(const std::vector<float>& values,
                                                        int max_points);

// Training loss per step, one line per run, ~500 points each. labels: one per run.
std::string loss_curves_svg(const std::vector<RunFacts>& runs,
                            const std::vector<std::string>& labels);
// Median device step time per run as horizontal bars, with the speedup against baseline.
std::string step_time_svg(const std::vector<RunFacts>& runs, const std::vector<std::string>& labels,
                          int baseline);
// Per run, a horizontal bar stacked from the profiled phases plus the host/launch
// overhead; "" when a run has no profile.
std::string phase_breakdown_svg(const std::vector<RunFacts>& runs,
                                const std::vector<std::string>& labels);

} // namespace mixlab::report
