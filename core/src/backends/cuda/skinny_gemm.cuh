// C (m x n) = alpha * A^T B + beta * C for a "skinny" m (a layer with a handful of
// units, e.g. 10 classes): A stored (k x m), B (k x n), row-major. cuBLASLt has no
// tensor-core kernel when m is not a multiple of 8 (A's rows are misaligned) and picks
// a kernel that walks k with 16 blocks: 0.2 ms for the seed MLP's 10 x 1000 x 4096
// weight gradient, a third of its mixed-precision step. This splits k across blocks,
// then adds the splits in a fixed order (deterministic), optionally with
// bias_grad[i] = sum_k A[k, i] (the dense layer's bias gradient).
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

inline constexpr int k_skinny_max_m = 16;
inline constexpr int k_skinny_min_k = 1024;

// Floats of scratch launch_skinny_gemm needs.
std::size_t skinny_gemm_scratch_floats(int m, int n, int k);

// a, b: ab dtype (float16 or bfloat16); c: c dtype (floating); bias_grad (m elements)
// may be null.
void launch_skinny_gemm(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                        float beta, void* c, DType ct, void* bias_grad, DType bias_t,
                        float* scratch, cudaStream_t stream);

} // namespace mixlab::cuda
