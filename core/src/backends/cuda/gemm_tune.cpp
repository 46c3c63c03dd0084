// Candidate timing for cuBLASLt GEMM plans: scratch outputs, the candidates timed by
// gated_timing.h (a median per candidate), and the keep-#1-unless-clearly-faster rule.
#include "backends/cuda/gemm_tune.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/gated_timing.h"

namespace mixlab::cuda {

namespace {

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

    // A candidate the kernel refuses (an epilogue it does not take after all) is left
    // out; cuBLASLt reports that before launching anything.
    const GatedTimes times = time_gated(stream, n, GatedRuns{1, 3}, [&](int i) {
        const cublasLtMatmulHeuristicResult_t& cand = candidates[std::size_t(i)];
        return cublasLtMatmul(p.handle, p.desc, p.alpha, p.a_ptr, p.a, p.b_ptr, p.b, p.beta,
                              p.c_null ? nullptr : c, p.c, c, p.d ? p.d : p.c, &cand.algo,
                              p.workspace, cand.workspaceSize, stream) == CUBLAS_STATUS_SUCCESS;
    });
    if (!times.timed) {
        result.skipped = times.why_not;
        return result;
    }
    if (!times.median_ms[0]) {
        // The caller's first real call meets the same refusal and falls back there.
        result.skipped = "cuBLASLt refused its first choice";
        return result;
    }
    std::vector<float> median_us(std::size_t(n), 0.0f);
    for (int i = 0; i < n; ++i) {
        const std::optional<float>& ms = times.median_ms[std::size_t(i)];
        if (!ms) continue;
        median_us[std::size_t(i)] = 1000.0f * *ms;
        ++result.timed;
    }
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (times.median_ms[std::size_t(i)] &&
            median_us[std::size_t(i)] < median_us[std::size_t(best)])
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
