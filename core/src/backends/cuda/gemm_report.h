// What the CUDA backend's GEMMs really ran, for the run log and `mixlab-cli check`:
// one entry per distinct call shape. Plain C++ (no CUDA headers).
#pragma once
#include "mixlab/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixlab::cuda {

struct GemmPlanInfo {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    DType ab = DType::F32, c = DType::F32;
    DType aux = DType::F32; // the bias or bias-gradient dtype (F32 when neither)
    DType b = DType::F32;   // B's dtype: ab's, except in an fp8 GEMM (E4M3 . E5M2)
    Epilogue epilogue = Epilogue::None;
    MathMode math = MathMode::Pedantic;
    bool fast_accum = false;         // fp8: Hopper's fast accumulation (GemmCall's)
    bool fused = false;              // the epilogue ran inside the cuBLASLt kernel
    bool tensor_cores = false;       // operand types, math mode and device allow tensor cores
    bool tensor_core_shapes = false; // m, n, k multiples of 8 (16-bit) or 4 (TF32)
    std::int64_t calls = 0;
    std::string note; // how the epilogue ran when it was not fused
    // Candidate timing when the plan was built (gemm_tune.h).
    int tune_timed = 0;          // candidates timed; 0 when none were (see tune_note)
    int tune_choice = 1;         // heuristic rank of the algorithm kept (1: cuBLASLt's first)
    float tune_chosen_us = 0.0f; // median time of the kept algorithm
    float tune_first_us = 0.0f;  // median time of the heuristic's first choice
    std::string tune_note;       // why nothing was timed, when nothing was
    // Operands copied to 16-byte aligned rows around the call (gemm_staging.h): which, and
    // the timing that chose it; empty when none were.
    std::string staging;
};

// Empty for a backend that is not the CUDA one.
std::vector<GemmPlanInfo> gemm_plans(const Backend& backend);
// "gemm 256x3000x3072 NT f16->f16 bias_relu reduced: fused, tensor cores, 3 calls,
// tuned 6 candidates: #3 41.2 us vs #1 55.0 us" (one line).
std::string describe(const GemmPlanInfo& p);

} // namespace mixlab::cuda
