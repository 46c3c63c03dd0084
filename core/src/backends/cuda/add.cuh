// Launcher for the residual sum y = act(a + b) (act None or Relu).
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// a, b, y share dtype t and n elements; y may alias a or b.
void launch_add_activation(Activation act, const void* a, const void* b, DType t, std::size_t n,
                           void* y, cudaStream_t stream);

} // namespace mixlab::cuda
