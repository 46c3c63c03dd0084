// Timing cuBLASLt's candidate algorithms for one GEMM plan when it is built: every
// candidate runs into scratch outputs (the caller's C and bias gradient stay untouched)
// and a faster one replaces the heuristic's first choice only when it clearly wins.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

namespace mixlab::cuda {

// One cublasLtMatmul of the plan, less its algorithm and outputs (cuBLASLt's terms:
// D = alpha op(A) op(B) + beta C with C = D).
struct TuneProblem {
    cublasLtHandle_t handle = nullptr;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatrixLayout_t d = nullptr; // D's layout when it is not C's (an fp8 output), or null
    bool c_null = false;                // no C passed (an fp8 output: beta 0, C never read)
    const void* a_ptr = nullptr;        // read-only, so the real operands are used
    const void* b_ptr = nullptr;
    const float* alpha = nullptr;
    const float* beta = nullptr; // the real beta: beta != 0 reads C, which changes the kernel
    std::size_t c_bytes = 0;
    // A bias-gradient epilogue writes through the descriptor's bias pointer: timing
    // points it at scratch of aux_bytes (the caller sets the real pointer on every call).
    bool aux_is_output = false;
    std::size_t aux_bytes = 0;
    void* workspace = nullptr; // each candidate's workspaceSize fits (checked by the caller)
};

struct TuneResult {
    int chosen = 0;         // index into the candidates; 0 is the heuristic's first choice
    int timed = 0;          // candidates timed (0: none, see skipped)
    float chosen_us = 0.0f; // median of the timed launches
    float first_us = 0.0f;
    std::string skipped; // why nothing was timed
};

// Only a candidate this much faster than the heuristic's first choice replaces it.
inline constexpr float k_tune_min_gain = 0.10f;

// Runs 1 warm-up and 3 timed launches of every candidate on `stream` and waits for
// them (plan building happens in the warm-up step, where a sync is allowed). Does not
// time, and keeps candidate 0, while the stream is being captured into a CUDA graph.
TuneResult tune_gemm(const TuneProblem& problem,
                     const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                     cudaStream_t stream);

} // namespace mixlab::cuda
