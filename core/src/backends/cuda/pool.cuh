// Launchers for max and average pooling over NHWC windows with symmetric padding, with
// the reference's semantics: padded positions never win a max and are not counted in an
// average; the max gradient goes to the first window element (row-major) equal to y.
#pragma once
#include "mixlab/backend.h"

#include <cuda_runtime.h>

namespace mixlab::cuda {

void launch_pool_forward(PoolMode mode, const PoolGeometry& g, const void* x, DType t, void* y,
                         cudaStream_t stream);
// dx overwritten; x and y are read only for max pooling.
void launch_pool_backward(PoolMode mode, const PoolGeometry& g, const void* x, const void* y,
                          const void* dy, DType t, void* dx, cudaStream_t stream);

} // namespace mixlab::cuda
