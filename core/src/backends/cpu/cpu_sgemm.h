// The float32 matrix product behind the CPU convolutions: a cache-blocked GEMM
// with an AVX2/FMA micro-kernel picked at run time (the default build targets plain
// x86-64, where Eigen only gets SSE2), and Eigen where the CPU lacks AVX2/FMA.
#pragma once
#include <cstddef>
#include <vector>

namespace mixlab::cpu {

// A read-only matrix given by element strides: M(i, j) = data[i * row_stride + j * col_stride],
// so transposed operands need no copy. sgemm's A must be row-major or transposed (one
// of the strides 1); B may have any strides.
struct MatrixView {
    const float* data = nullptr;
    std::ptrdiff_t row_stride = 0, col_stride = 1;
};

// B's packing buffer, kept by the backend so that steady-state products do not allocate.
struct SgemmScratch {
    std::vector<float> packed_b;
};

// C (m x n, row-major, leading dimension ldc) = A (m x k) . B (k x n), or C += A . B when
// accumulate is set. fp32 accumulation; the summation order depends on the kernel but
// not on m. Runs on the calling thread (the convolutions spread batch chunks instead),
// except that the Eigen path threads itself when called outside a parallel region.
void sgemm(int m, int n, int k, MatrixView a, MatrixView b, float* c, std::ptrdiff_t ldc,
           bool accumulate, SgemmScratch& scratch);

// Grows the scratch for products up to these sizes (done at plan time).
void sgemm_reserve(int m, int n, int k, SgemmScratch& scratch);

// "AVX2/FMA packed GEMM" or "Eigen GEMM": what sgemm runs on this CPU.
const char* sgemm_kernel_name();

// Tests only: run the portable (Eigen) path even where AVX2/FMA is present, so that both
// paths are checked on one machine. Process-wide; not for use while products run.
void sgemm_force_portable(bool on);

} // namespace mixlab::cpu
