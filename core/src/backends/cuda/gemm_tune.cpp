// Candidate timing for cuBLASLt GEMM plans: scratch outputs, interleaved warm-up and
// timed launches between CUDA events behind a host-side gate, median per candidate, and
// the keep-#1-unless-clearly-faster rule.
#include "backends/cuda/gemm_tune.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_event.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace mixlab::cuda {

namespace {

constexpr int k_timed_rounds = 3;

std::size_t round_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// Scratch C (and bias gradient) for the timing launches. cudaMalloc returns 256-byte
// aligned memory, at least the alignment the heuristic was asked for, so every
// candidate valid for the real pointers is valid here. Freed after the timing: a run
// keeps no extra memory for it.
class TuneScratch {
public:
    // A full device leaves it empty: the plan then keeps the heuristic's first choice
    // rather than fail a run that would otherwise fit.
    explicit TuneScratch(std::size_t bytes)
    {
        if (cudaMalloc(&m_p, bytes) != cudaSuccess) {
            (void)cudaGetLastError(); // the failed allocation is not sticky; clear it
            m_p = nullptr;
        }
    }
    TuneScratch(const TuneScratch&) = delete;
    TuneScratch& operator=(const TuneScratch&) = delete;
    ~TuneScratch()
    {
        if (m_p) MIXLAB_CUDA_LOG(cudaFree(m_p));
    }
    char* get() const { return static_cast<char*>(m_p); }

private:
    void* m_p = nullptr;
};

// True when the stream is being captured (or its state cannot be asked, which happens
// under another thread's global capture): no syncs or allocations are allowed then.
bool capturing(cudaStream_t stream)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return true;
    }
    return status != cudaStreamCaptureStatusNone;
}

// Holds the stream until every timed launch is enqueued. Small GEMMs run faster than
// the host can submit them: without the gate the GPU idles between launches and the
// events would time the host's submission, not the kernel (ungated, on an H200, every
// candidate of a 37x19x53 GEMM timed 9-16 us). The deadline only guards against a
// submission that blocks; it is not reached in normal use.
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

TuneResult tune_gemm(const TuneProblem& p,
                     const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                     cudaStream_t stream)
{
    TuneResult result;
    const int n = int(candidates.size());
    if (n < 2) {
        result.skipped = n == 1 ? "cuBLASLt offered one algorithm" : "no candidates";
        return result;
    }
    if (capturing(stream)) {
        result.skipped = "stream was being captured into a CUDA graph";
        return result;
    }
    const std::size_t c_bytes = round_up(p.c_bytes);
    TuneScratch scratch(c_bytes + (p.aux_is_output ? round_up(p.aux_bytes) : 0));
    if (!scratch.get()) {
        result.skipped = "no device memory for the timing outputs";
        return result;
    }
    void* c = scratch.get();
    // beta != 0 reads C: give it finite values (timing does not depend on them).
    MIXLAB_CUDA_CHECK(cudaMemsetAsync(c, 0, c_bytes, stream));
    if (p.aux_is_output) {
        const void* aux = scratch.get() + c_bytes;
        MIXLAB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
            p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &aux, sizeof aux));
    }

    std::vector<bool> ok(std::size_t(n), true);
    auto launch = [&](int i) {
        if (!ok[std::size_t(i)]) return;
        const cublasLtMatmulHeuristicResult_t& cand = candidates[std::size_t(i)];
        // A candidate the kernel refuses (an epilogue it does not take after all) is
        // left out; cuBLASLt reports that before launching anything.
        if (cublasLtMatmul(p.handle, p.desc, p.alpha, p.a_ptr, p.a, p.b_ptr, p.b, p.beta, c, p.c, c,
                           p.c, &cand.algo, p.workspace, cand.workspaceSize,
                           stream) != CUBLAS_STATUS_SUCCESS)
            ok[std::size_t(i)] = false;
    };

    // The warm-up round runs ungated: it also loads each candidate's kernels, which
    // must not wait behind the gate.
    for (int i = 0; i < n; ++i) launch(i);
    std::array<std::vector<std::unique_ptr<CudaEvent>>, k_timed_rounds> events;
    for (auto& round : events)
        for (int i = 0; i <= n; ++i) round.push_back(std::make_unique<CudaEvent>(stream));

    // Round-robin rounds rather than one candidate at a time, so clock and temperature
    // drift over the timing falls on every candidate alike. Each launch is bracketed by
    // the events around it: events[r][i] .. events[r][i + 1].
    Gate gate;
    gate.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    {
        GateGuard guard(gate, stream);
        MIXLAB_CUDA_CHECK(cudaLaunchHostFunc(stream, wait_for_gate, &gate));
        for (auto& round : events) {
            round[0]->record();
            for (int i = 0; i < n; ++i) {
                launch(i);
                round[std::size_t(i) + 1]->record();
            }
        }
        guard.open();
        events.back().back()->synchronize();
    }

    if (!ok[0]) {
        // The caller's first real call meets the same refusal and falls back there.
        result.skipped = "cuBLASLt refused its first choice";
        return result;
    }
    std::vector<float> median_us(std::size_t(n), 0.0f);
    for (int i = 0; i < n; ++i) {
        if (!ok[std::size_t(i)]) continue;
        std::array<float, k_timed_rounds> t{};
        for (int r = 0; r < k_timed_rounds; ++r)
            t[std::size_t(r)] =
                1000.0f * events[std::size_t(r)][std::size_t(i) + 1]->elapsed_ms_since(
                              *events[std::size_t(r)][std::size_t(i)]);
        std::sort(t.begin(), t.end());
        median_us[std::size_t(i)] = t[k_timed_rounds / 2];
        ++result.timed;
    }
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (ok[std::size_t(i)] && median_us[std::size_t(i)] < median_us[std::size_t(best)])
            best = i;
    // Which candidate wins can depend on timing noise, and different algorithms round
    // differently, so two processes could train to different bits. Keeping #1 unless
    // another is at least 10% faster makes a noise-driven choice rare: runs of a shape
    // whose candidates are close all keep #1, the heuristic's deterministic pick.
    if (best != 0 && median_us[std::size_t(best)] <= (1.0f - k_tune_min_gain) * median_us[0])
        result.chosen = best;
    result.chosen_us = median_us[std::size_t(result.chosen)];
    result.first_us = median_us[0];
    return result;
}

} // namespace mixlab::cuda
