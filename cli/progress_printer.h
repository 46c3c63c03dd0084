// ProgressPrinter: a MetricsSink that prints training progress for a person watching a
// terminal: a step line now and then, every epoch, and events as they happen.
#pragma once
#include "mixlab/trainer.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace mixlab::cli {

class ProgressPrinter : public MetricsSink {
public:
    struct RunInfo {
        std::string label; // "[label] " prefixes its lines; empty: no prefix
        std::int64_t total_steps = 0;
        std::int64_t steps_per_epoch = 0;
        int epochs = 0;
        bool tokens = false; // a language model: the step's rows are tokens, not samples
    };

    // A step line every `every_n_steps` steps (0: about 20 lines over the run), but no
    // more often than `min_interval_s` per run, except the last step, which always
    // prints. Epoch lines and events always print, at once.
    ProgressPrinter(std::FILE* out, std::vector<RunInfo> runs, std::int64_t every_n_steps = 0,
                    double min_interval_s = 0.25);

    void on_step(int run, const StepMetrics& m) override;
    void on_epoch(int run, const EpochMetrics& m) override;
    void on_event(int run, const RunEvent& e) override;

    // Skipped-step events print one by one up to this many per run; then one note says
    // the rest are counted in the summary (a run stuck in overflow would flood the screen).
    static constexpr int k_max_skip_lines = 10;

private:
    struct State {
        RunInfo info;
        std::int64_t every = 1;
        std::chrono::steady_clock::time_point last_print{};
        bool printed = false;
        int skip_lines = 0;
    };
    State& state(int run);
    std::string prefix(const State& s) const;

    std::FILE* m_out;
    std::vector<State> m_runs;
    std::int64_t m_every_n;
    std::chrono::duration<double> m_min_interval;
};

} // namespace mixlab::cli
