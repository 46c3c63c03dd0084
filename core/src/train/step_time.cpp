// The headline step time (median device time after the warm-up) and the speedup between
// two runs of a group.
#include "mixlab/step_time.h"

#include <algorithm>

namespace mixlab {

double headline_step_ms(std::span<const float> device_ms)
{
    if (device_ms.empty()) return 0;
    const std::size_t skip = device_ms.size() > std::size_t(k_warmup_steps) ? k_warmup_steps : 0;
    std::vector<float> timed(device_ms.begin() + std::ptrdiff_t(skip), device_ms.end());
    const auto middle = timed.begin() + std::ptrdiff_t(timed.size() / 2);
    std::nth_element(timed.begin(), middle, timed.end());
    return *middle;
}

double headline_step_ms(const std::vector<StepMetrics>& steps)
{
    std::vector<float> ms;
    ms.reserve(steps.size());
    for (const StepMetrics& m : steps) ms.push_back(m.step_ms);
    return headline_step_ms(ms);
}

double speedup(double baseline_ms, double run_ms)
{
    return baseline_ms > 0 && run_ms > 0 ? baseline_ms / run_ms : 0.0;
}

std::string step_time_definition()
{
    return "median device time per step, the first " + std::to_string(k_warmup_steps) +
           " steps left out as warm-up";
}

std::string speedup_definition()
{
    return "the baseline's step time over the run's (above 1: faster); the baseline is the "
           "group's first run";
}

} // namespace mixlab
