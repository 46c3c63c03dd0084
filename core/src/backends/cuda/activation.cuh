// Launchers for bias + activation (forward) and the activation's backward pass.
#pragma once
#include "mixlab/dtype.h"
#include "mixlab/model_spec.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// y (rows, cols) = act(x + bias[col]); bias may be null; y may alias x. Softmax is
// row-wise over cols, max-subtracted, in fp32.
void launch_bias_activation(Activation act, const void* x, DType tx, const void* bias, DType tb,
                            std::size_t rows, int cols, void* y, DType ty, cudaStream_t stream);

// dx = dy * act'(.): relu from y > 0, sigmoid/tanh from y, gelu from x, softmax
// y * (dy - sum_row(dy * y)), None a copy. x is read only for gelu, y never for gelu/None.
void launch_activation_backward(Activation act, const void* x, DType tx, const void* y, DType ty,
                                const void* dy, DType tdy, std::size_t rows, int cols, void* dx,
                                DType tdx, cudaStream_t stream);

} // namespace mixlab::cuda
