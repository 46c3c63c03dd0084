// Batched 2-D transposes that move tensors between the engine's layouts and the ones a
// library routine is fastest in: NHWC <-> NCHW activations, KRSC <-> KCRS filters.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// dst[b][c][r] = src[b][r][c] for b < batch, r < rows, c < cols: each of `batch`
// rows x cols matrices transposed. A pure permutation of 2- or 4-byte words: exact in
// every dtype. NHWC -> NCHW is (batch N, rows H*W, cols C); NCHW -> NHWC is (N, C, H*W);
// KRSC -> KCRS is (K, R*S, C); KCRS -> KRSC is (K, C, R*S).
void launch_transpose_batched(const void* src, void* dst, std::size_t batch, int rows, int cols,
                              DType t, cudaStream_t stream);

} // namespace mixlab::cuda
