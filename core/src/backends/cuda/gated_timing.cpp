// Gated candidate timing: ungated warm-up runs, then round-robin timed runs between CUDA
// events, all held behind a host function until they are enqueued; a median per candidate.
#include "backends/cuda/gated_timing.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_event.h"
#include "mixlab/error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>

namespace mixlab::cuda {

namespace {

// Holds the stream until every timed run is enqueued. Small GEMMs and convolutions run
// faster than the host can submit them (cuDNN's legacy calls cost far more host time than
// their kernels at small sizes): without the gate the GPU idles between runs and the
// events time the host's submission, not the kernel (ungated, on an H200, every candidate
// of a 37x19x53 GEMM timed 9-16 us), while the step, replayed as a CUDA graph, pays only
// the kernels (bench/NOTES.md section 18). The deadline only guards against a run that
// blocks the host; it is not reached in normal use.
struct Gate {
    std::atomic<bool> open{false};
    std::chrono::steady_clock::time_point deadline;
};

void CUDART_CB wait_for_gate(void* data)
{
    auto* gate = static_cast<Gate*>(data);
    while (!gate->open.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < gate->deadline)
        std::this_thread::yield();
}

// Opens the gate on every way out and waits for the stream, so the host function
// never reads a Gate that is gone.
class GateGuard {
public:
    GateGuard(Gate& gate, cudaStream_t stream) : m_gate(gate), m_stream(stream) {}
    GateGuard(const GateGuard&) = delete;
    GateGuard& operator=(const GateGuard&) = delete;
    ~GateGuard()
    {
        m_gate.open.store(true, std::memory_order_release);
        MIXLAB_CUDA_LOG(cudaStreamSynchronize(m_stream));
    }
    void open() { m_gate.open.store(true, std::memory_order_release); }

private:
    Gate& m_gate;
    cudaStream_t m_stream;
};

} // namespace

bool capturing(cudaStream_t stream)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return true;
    }
    return status != cudaStreamCaptureStatusNone;
}

GatedTimes time_gated(cudaStream_t stream, int n, GatedRuns runs,
                      const std::function<bool(int)>& run)
{
    if (n < 0 || runs.warmup < 0 || runs.timed < 1)
        throw Error("cuda backend: time_gated: needs n >= 0, warmup >= 0 and timed >= 1");
    GatedTimes out;
    if (capturing(stream)) {
        out.why_not = "stream was being captured into a CUDA graph";
        return out;
    }
    const std::size_t count = std::size_t(n);
    std::vector<bool> ok(count, true);
    const auto once = [&](int i) {
        if (ok[std::size_t(i)] && !run(i)) ok[std::size_t(i)] = false;
    };

    // The warm-up runs go ungated: they may load kernels, which must not wait behind
    // the gate.
    for (int w = 0; w < runs.warmup; ++w)
        for (int i = 0; i < n; ++i) once(i);

    // events[r][i] .. events[r][i + 1] bracket candidate i's run in round r. Created
    // before the guard, so they outlive its wait for the stream.
    std::vector<std::vector<std::unique_ptr<CudaEvent>>> events(std::size_t(runs.timed));
    for (auto& round : events)
        for (std::size_t i = 0; i <= count; ++i)
            round.push_back(std::make_unique<CudaEvent>(stream));
    {
        Gate gate;
        gate.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        GateGuard guard(gate, stream);
        MIXLAB_CUDA_CHECK(cudaLaunchHostFunc(stream, wait_for_gate, &gate));
        for (auto& round : events) {
            round[0]->record();
            for (int i = 0; i < n; ++i) {
                once(i);
                round[std::size_t(i) + 1]->record();
            }
        }
        guard.open();
        events.back().back()->synchronize();
    }

    out.timed = true;
    out.median_ms.resize(count);
    std::vector<float> t(std::size_t(runs.timed));
    for (std::size_t i = 0; i < count; ++i) {
        if (!ok[i]) continue;
        for (std::size_t r = 0; r < t.size(); ++r)
            t[r] = events[r][i + 1]->elapsed_ms_since(*events[r][i]);
        std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
        out.median_ms[i] = t[t.size() / 2];
    }
    return out;
}

std::optional<float> time_gated_ms(cudaStream_t stream, GatedRuns runs,
                                   const std::function<bool()>& run)
{
    const GatedTimes t = time_gated(stream, 1, runs, [&](int) { return run(); });
    if (!t.timed) return std::nullopt;
    return t.median_ms[0];
}

} // namespace mixlab::cuda
