// TrainingRun::profile: where a step's time goes, phase by phase and layer by layer,
// and how much of the wall time per step the device was busy.
#include "train/trainer_impl.h"

#include "analysis/layer_costs.h"
#include "mixlab/error.h"

#include <algorithm>
#include <chrono>

namespace mixlab {

namespace {

constexpr int k_wall_warmup = 3;

double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    return v[v.size() / 2];
}

std::vector<std::unique_ptr<Event>> events(Backend& backend, std::size_t n)
{
    std::vector<std::unique_ptr<Event>> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(backend.create_event());
    return out;
}

} // namespace

StepProfile TrainingRun::profile(MetricsSink& sink, int steps)
{
    Impl& s = *m_impl;
    if (!s.halted.empty()) throw Error("cannot profile a run that stopped itself: " + s.halted);
    steps = std::clamp(steps, 1, 1000);
    StepProfile p;
    p.steps = steps;
    p.replayed = s.graph != nullptr;

    PhaseMarks marks;
    auto phase_events = events(s.backend, k_step_phases + 1);
    for (int i = 0; i <= k_step_phases; ++i)
        marks.at[std::size_t(i)] = std::move(phase_events[std::size_t(i)]);
    const std::size_t nodes = s.net->top_level_count();
    marks.layers.forward = events(s.backend, nodes + 1);
    marks.layers.backward = events(s.backend, nodes + 1);
    // Per-sample counts times the rows a step runs: batch x bptt tokens for a language model.
    p.layers =
        layer_costs(s.net->top_level_nodes(), s.net->kernels(), s.backend.info(), s.rows_per_step);

    // Each event recorded inside a replayed graph costs the device ~2 us, which at a
    // 0.15 ms step would add 20% if phases and layers were marked in the same steps. So
    // the phases (7 events) and the layers (2n + 2) are measured in separate passes.
    s.total_steps += 3 * std::int64_t(steps); // all three passes are extra steps of the run
    s.marks = &marks;
    marks.layers_on = false;
    for (int k = 0; k < steps; ++k) { // 1a. phases
        step(sink);
        marks.at[k_step_phases]->synchronize();
        for (int ph = 0; ph < k_step_phases; ++ph)
            p.phase_ms[std::size_t(ph)] +=
                marks.at[std::size_t(ph) + 1]->elapsed_ms_since(*marks.at[std::size_t(ph)]);
        p.device_ms += marks.at[k_step_phases]->elapsed_ms_since(*marks.at[0]);
    }
    s.profile_graph.reset(); // recorded with the phase events only
    marks.layers_on = true;
    marks.phases_on = false;
    for (int k = 0; k < steps; ++k) { // 1b. top-level layers
        step(sink);
        marks.layers.backward[nodes]->synchronize();
        for (std::size_t i = 0; i < nodes; ++i) {
            p.layers[i].forward_ms +=
                marks.layers.forward[i + 1]->elapsed_ms_since(*marks.layers.forward[i]);
            // backward[j] precedes node n-1-j in backward order
            const std::size_t j = nodes - 1 - i;
            p.layers[i].backward_ms +=
                marks.layers.backward[j + 1]->elapsed_ms_since(*marks.layers.backward[j]);
        }
    }
    s.marks = nullptr;
    s.profile_graph.reset(); // it records these events: gone before they are
    for (double& v : p.phase_ms) v /= steps;
    p.device_ms /= steps;
    for (LayerTime& l : p.layers) {
        l.forward_ms /= steps;
        l.backward_ms /= steps;
    }

    // 2. Unmarked steps back to back: host wall time against device time per step. In a
    // compare group this run runs alone here, so the wall time is its own.
    // A few unmeasured steps first: the step may have to be recorded again (an
    // evaluation in the passes above planned new shapes and freed scratch), and that
    // one-off host work is not a step's cost.
    s.total_steps += k_wall_warmup;
    for (int k = 0; k < k_wall_warmup; ++k) step(sink);
    s.drain(sink, s.launched);
    const std::size_t first = s.step_ms.size();
    const double eval_before = s.eval_wall_ms;
    const auto t0 = Clock::now();
    for (int k = 0; k < steps; ++k) step(sink);
    s.backend.synchronize();
    // An epoch end inside the window evaluates the test split: not step time.
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() -
                        (s.eval_wall_ms - eval_before);
    s.drain(sink, s.launched);
    std::vector<double> device(s.step_ms.begin() + std::ptrdiff_t(first), s.step_ms.end());
    double device_sum = 0;
    for (double d : device) device_sum += d;
    p.step_ms = median(device);
    p.wall_ms = wall / steps;
    p.overhead_ms = std::max(0.0, p.wall_ms - device_sum / steps);
    p.gpu_busy_fraction = p.wall_ms > 0 ? std::min(1.0, device_sum / steps / p.wall_ms) : 0.0;
    return p;
}

} // namespace mixlab
