// Timing candidates on a stream as the GPU runs them, not as fast as the host can submit
// them: every timed run is queued behind a host-side gate and runs between two CUDA
// events. The one timing mechanism of the planners (GEMM algorithms and staging,
// convolution candidates, routes' copies); each keeps its own rules for what wins.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mixlab::cuda {

// True when the stream is being captured (or its state cannot be asked, which happens
// under another thread's global capture): no syncs or allocations are allowed then.
bool capturing(cudaStream_t stream);

struct GatedRuns {
    int warmup = 1; // ungated runs of each candidate first (the first may load its module)
    int timed = 3;  // timed runs of each candidate; the median is kept
};

struct GatedTimes {
    // Nothing ran: the stream was being captured (why_not says so).
    bool timed = false;
    std::string why_not;
    // Per candidate: the median of its timed runs in ms, empty where a run failed.
    std::vector<std::optional<float>> median_ms;
};

// Times candidates 0..n-1: `run(i)` enqueues one run of candidate i on `stream` and says
// whether it was accepted (false: the candidate is dropped and not run again). All
// warm-up runs first, then round-robin rounds of one timed run per candidate, so that
// clock and temperature drift over the timing falls on every candidate alike. Waits for
// the stream, so only where a sync is allowed (plan building). An exception from `run`
// goes on after the gate is opened and the stream drained.
GatedTimes time_gated(cudaStream_t stream, int n, GatedRuns runs,
                      const std::function<bool(int)>& run);

// One candidate: its median in ms; empty where it was not timed or a run failed.
std::optional<float> time_gated_ms(cudaStream_t stream, GatedRuns runs,
                                   const std::function<bool()>& run);

} // namespace mixlab::cuda
