// Launcher for inverted dropout with the counter-based mask of hd_math.h.
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

// y[i] = keep(seed, step, i) ? x[i] / (1 - rate) : 0. Forward and backward are the same
// launch (backward passes dy and dx): the mask is recomputed, never stored.
// step_counter: when set, the step is read from it on the device (replacing step).
void launch_dropout(const void* x, DType tx, float rate, std::uint64_t seed, std::uint64_t step,
                    const std::uint64_t* step_counter, std::size_t n, void* y, DType ty,
                    cudaStream_t stream);

// (*counter) += 1 on the device.
void launch_advance_step(std::uint64_t* counter, cudaStream_t stream);

} // namespace mixlab::cuda
