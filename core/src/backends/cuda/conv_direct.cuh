// Direct convolution kernels (NHWC x, KRSC w, NHWC y; fp32 accumulation): the fallback
// for a direction cuDNN has no algorithm for, and what MIXLAB_CONV_DIRECT=1 forces so
// the fallback can be checked on a GPU where cuDNN covers everything. Slow but plain.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

void launch_conv_direct_forward(const ConvGeometry& g, DType t, const void* x, const void* w,
                                void* y, cudaStream_t stream);
void launch_conv_direct_backward_data(const ConvGeometry& g, DType t, const void* dy, const void* w,
                                      void* dx, cudaStream_t stream);
void launch_conv_direct_backward_filter(const ConvGeometry& g, DType t, const void* x,
                                        const void* dy, void* dw, cudaStream_t stream);

} // namespace mixlab::cuda
