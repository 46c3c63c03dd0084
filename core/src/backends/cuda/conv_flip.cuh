// Weight transform for running a stride-1 convolution's backward data as a forward
// convolution: w'[c][R-1-r][S-1-s][k] = w[k][r][s][c] (KRSC in, CRSK-as-KRSC out).
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

// flipped (in_c, kernel_h, kernel_w, out_c) = w (out_c, kernel_h, kernel_w, in_c) with
// both kernel axes reversed. A pure permutation: exact in every dtype.
void launch_conv_flip_weights(const ConvGeometry& g, DType t, const void* w, void* flipped,
                              cudaStream_t stream);

} // namespace mixlab::cuda
