// GEMM operands whose rows do not start on 16-byte boundaries, copied through scratch
// whose rows do ("staging"). cuBLASLt's fast tensor-core kernels need every row of an
// operand aligned: the logits of a 33,278-word vocabulary (66,556 bytes a 16-bit row) are
// not, and all three GEMMs that touch them fall back to slower kernels (bench/NOTES.md,
// section 12: 1.4 ms of W3's fp16 step and 4.3 ms of its bf16 step). A strided copy in
// (or out, for the result) costs one pass over the matrix; the planner (gemm_lt.cpp) takes
// it per GEMM shape only where its timing, copies included, wins. MIXLAB_GEMM_STAGE=0
// turns it off (A/B runs), =1 forces it wherever a row is unaligned (checks).
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

// One operand as stored (rows x cols, row-major, cols apart) and, when staged, as the
// GEMM reads it: the same rows ld elements apart, ld rounded up to 16 bytes.
struct StagedMatrix {
    bool on = false;
    std::int64_t rows = 0, cols = 0, ld = 0;
    std::size_t elem = 0;
    std::size_t bytes() const { return std::size_t(rows) * std::size_t(ld) * elem; }
};

// Our A, B and C of one call (gemm_lt.h's row-major terms).
struct GemmStaging {
    StagedMatrix a, b, c;
    bool any() const { return a.on || b.on || c.on; }
};

enum class StageMode { Auto, Off, Force };
// MIXLAB_GEMM_STAGE, read at each call's plan lookup (so that `mixlab-cli check` can run
// its cases both ways in one process).
StageMode stage_requested();

// Operands smaller than this are not worth a copy (and a plan timing) at all.
inline constexpr std::int64_t k_min_staged_elements = std::int64_t(1) << 20;

// The staging a call's shape would use: every operand whose rows are not a multiple of
// 16 bytes (and, unless forced, that holds at least k_min_staged_elements values).
GemmStaging staging_for(const GemmCall& g, StageMode mode);

// Copies a rows x cols matrix between row strides (in elements), on `stream`.
void copy_rows(void* dst, std::int64_t dst_ld, const void* src, std::int64_t src_ld,
               std::int64_t rows, std::int64_t cols, std::size_t elem, cudaStream_t stream);

} // namespace mixlab::cuda
