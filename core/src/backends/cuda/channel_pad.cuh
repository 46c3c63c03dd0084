// Copies between a tensor's channels and the same tensor with its channels zero-padded:
// what the channel-padded convolution route (conv_channel_pad.h) runs around cuDNN.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// dst[r][j] = j < c ? src[r][j] : 0 for r < rows, j < padded (rows of c values in, of
// `padded` out). A pure copy: exact in every dtype.
void launch_pad_channels(const void* src, void* dst, std::size_t rows, int c, int padded, DType t,
                         cudaStream_t stream);
// dst[r][j] = src[r][j] for j < c: the first c of each row of `padded` values.
void launch_unpad_channels(const void* src, void* dst, std::size_t rows, int padded, int c, DType t,
                           cudaStream_t stream);

} // namespace mixlab::cuda
