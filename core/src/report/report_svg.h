// The explain report's charts as standalone SVG text (one function per chart) and the
// text helpers the report's HTML shares with them.
#pragma once
#include "mixlab/explain.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixlab::report {

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
