// Launchers for the bias gradient: fp32 column sums (and row sums, for a GEMM whose
// bias-grad epilogue could not be fused) rounded once to the output's dtype.
#pragma once
#include "backends/cuda/reduce_scratch.h"
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// out[j] = sum_i x[i, j] over a row-major (rows, cols) matrix. Tall matrices are cut
// into row slices whose partial sums go through `scratch` (two launches).
void launch_column_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                        DType tout, ReduceScratch& scratch, cudaStream_t stream);
// out[c] = sum over k < splits of partial[k * ld + c], in k order, for c < cols: the
// second launch of a column sum whose first wrote per-slice partials (also fp8_quantize's).
void launch_column_finish(const float* partial, unsigned splits, std::size_t ld, std::size_t cols,
                          void* out, DType tout, cudaStream_t stream);
// out[i] = sum_j x[i, j].
void launch_row_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                     DType tout, cudaStream_t stream);

} // namespace mixlab::cuda
