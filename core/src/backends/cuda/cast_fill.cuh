// Launchers for fill and dtype casts (any of float32 / float16 / bfloat16 / int32 / uint8 /
// int16 / fp8, fp8 unscaled and saturating).
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// p[0..n) = value stored as t (rounded to nearest; integers by lrint).
void launch_fill(void* p, DType t, std::size_t n, float value, cudaStream_t stream);
// y[i] = x[i] converted from tx to ty.
void launch_cast(const void* x, DType tx, void* y, DType ty, std::size_t n, cudaStream_t stream);

} // namespace mixlab::cuda
