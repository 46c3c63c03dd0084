// A row-major input gradient C = A B with k at most 16 and not a multiple of 8 (a
// classifier head's dZ W, k its classes): A's rows are not 16-byte aligned, so no
// tensor-core kernel reads A, and cuBLASLt took 6.9-7.3 us for the seed MLP's head at
// batch 4096 (bench/NOTES.md 34) where writing C's 8 MB needs 2 to 3. Deterministic:
// fixed summation order, no atomics, the grid set by the shape alone.
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

inline constexpr int k_narrow_max = 16; // the largest k
// Below these the route is not known to pay: W1's step at batch 256 was no faster with it
// on an H100 (bench/NOTES.md 44). At 1024 and 4096 the step was faster with it and the
// split-k rewrite together; the kernel alone was profiled only at 4096 (6.6 us).
inline constexpr int k_narrow_min_m = 1024;
inline constexpr int k_narrow_min_n = 256;
// gridDim.y (at most 65535) walks n in blocks of 256 columns: wider C stays with cuBLASLt.
inline constexpr int k_narrow_block_cols = 256;
inline constexpr long long k_narrow_max_n = 65535LL * k_narrow_block_cols;

// C (m x n) = alpha * A B + beta * C, A stored (m x k), B (k x n), k <= 16. a, b: ab
// dtype (float16 or bfloat16); c: float32 or ab.
void launch_narrow_dgrad(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                         float beta, void* c, DType ct, cudaStream_t stream);

} // namespace mixlab::cuda
