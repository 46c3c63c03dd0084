// One max-batch trial for real: a short training run at the batch, timed on the device,
// with running out of memory turned into "does not fit" rather than an error.
#include "mixlab/max_batch.h"

#include "mixlab/error.h"

#include <chrono>
#include <numeric>
#include <string>
#include <vector>

namespace mixlab {

namespace {

// Keeps the device time of each reported step; the trial needs nothing else.
class StepTimes : public MetricsSink {
public:
    std::vector<float> ms;
    void on_step(int, const StepMetrics& m) override { ms.push_back(m.step_ms); }
    void on_epoch(int, const EpochMetrics&) override {}
    void on_event(int, const RunEvent&) override {}
};

} // namespace

BatchTrial run_batch_trial(const Graph& graph, const RunConfig& config, DeviceDataset& data,
                           Backend& backend, int batch, const MaxBatchOptions& options)
{
    validate_max_batch_options(options);
    const auto started = std::chrono::steady_clock::now();
    BatchTrial t;
    t.batch = batch;
    if (batch > data.host.train.n) {
        // Not a memory limit: the search must stop here all the same.
        t.why_not = "only " + std::to_string(data.host.train.n) + " training samples";
        return t;
    }

    RunConfig c = config;
    c.batch_size = batch;
    c.steps = options.warmup_steps + options.timed_steps;
    StepTimes sink;
    bool beyond_limit = false;
    try {
        // The run (network, activations, gradients, optimizer state) lives in this scope
        // only: leaving it, normally or by the exception, frees all of it.
        TrainingRun run(graph, c, data, backend);
        t.device_bytes = run.device_bytes();
        while (!run.finished()) run.step(sink);
        // "Stopped": the trial wants the steps' times, not an evaluation of the test split.
        run.finish(sink, true);
    } catch (const OutOfMemoryError& e) {
        t.why_not = e.what();
        t.out_of_memory = true;
    } catch (const LimitError& e) { // e.g. a tensor too large for cuDNN: as good as full
        t.why_not = e.what();
        beyond_limit = true;
    }
    // The next trial starts on an idle device: none of this trial's work (an evaluation
    // pass, a free) may land in its timings.
    backend.synchronize();

    if (!t.out_of_memory && !beyond_limit) {
        t.fits = true;
        const std::size_t skip = sink.ms.size() > std::size_t(options.warmup_steps)
                                     ? std::size_t(options.warmup_steps)
                                     : 0;
        const std::size_t n = sink.ms.size() - skip;
        if (n > 0) {
            t.step_ms =
                std::accumulate(sink.ms.begin() + std::ptrdiff_t(skip), sink.ms.end(), 0.0) /
                double(n);
            t.samples_per_s = t.step_ms > 0 ? batch * 1000.0 / t.step_ms : 0.0;
        }
    }
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return t;
}

} // namespace mixlab
