// The headline step time and speedup: one definition that the runs table, Why?, the
// report and the CLI all show, so that no front end puts its own number under the name.
// Other times (a mean, the profiling pass's sum of phases) are shown under their own names.
#pragma once
#include "mixlab/trainer.h"

#include <span>
#include <string>
#include <vector>

namespace mixlab {

// The headline: the median device time per step, the first k_warmup_steps left out (plan
// timing, graph recording and cold caches are not the run's speed); with no more steps
// than that, the median of all. A median rather than a mean: one slow step (an
// evaluation's cold cache, another process taking a core from the CPU backend) moves a
// short run's mean further than precision does. The upper median for an even count, as
// the engine has always reported it. 0 when there are no steps.
double headline_step_ms(std::span<const float> device_ms);
double headline_step_ms(const std::vector<StepMetrics>& steps);

// The baseline's headline over the run's (above 1: the run is faster); 0 when either time
// is missing. The baseline is the group's first run (the first policy asked for), in the
// app as in the CLI.
double speedup(double baseline_ms, double run_ms);

// The definitions in words, for table notes, tooltips and the CLI's footers.
std::string step_time_definition(); // "median device time per step, the first 10 ..."
std::string speedup_definition();

} // namespace mixlab
