// Row-major GEMMs with one side of at most 16 that is not a multiple of 8, which
// cuBLASLt runs several times slower than their bytes allow: a classifier head's forward
// GEMM (n = its 10 classes) and its input gradient (k = its 10 classes). The seed MLP's
// head at batch 4096 took 9.2-9.4 and 6.9-7.3 us in cuBLASLt (bench/NOTES.md 34), where
// reading A (forward) or writing C (input gradient), 8 MB each, needs 2 to 3.
// Both kernels are deterministic: fixed summation orders, no atomics, grids set by the
// shape alone.
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

inline constexpr int k_narrow_max = 16; // the narrow side: n (forward) or k (input gradient)
// Below these the kernels' blocks have too little to do (see LtGemm's predicates).
inline constexpr int k_narrow_min_m = 64;
inline constexpr int k_narrow_min_k = 256; // forward: the length of A's rows
inline constexpr int k_narrow_min_n = 256; // input gradient: the width of C

// C (m x n) = alpha * A B^T + beta * C (+ bias), A stored (m x k), B (n x k), n <= 16.
// a, b: ab dtype (float16 or bfloat16); c: float32 or ab; bias (n elements, bias_t) may
// be null, added after beta's term and before C's rounding (cuBLASLt's BIAS epilogue).
void launch_narrow_forward(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                           float beta, void* c, DType ct, const void* bias, DType bias_t,
                           cudaStream_t stream);

// C (m x n) = alpha * A B + beta * C, A stored (m x k), B (k x n), k <= 16. a, b: ab
// dtype (float16 or bfloat16); c: float32 or ab.
void launch_narrow_dgrad(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                         float beta, void* c, DType ct, cudaStream_t stream);

} // namespace mixlab::cuda
