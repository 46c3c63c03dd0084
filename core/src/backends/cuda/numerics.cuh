// Launchers for the numerics histograms (Backend::value_histogram, update_histogram): the
// slot of each element from base/hd_math.h, counted in shared memory per block and added
// to the uint32 counters in global memory.
#pragma once
#include "mixlab/dtype.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace mixlab::cuda {

// counts[hd::value_slot(x[i])] += 1 for the n elements of x (floating dtype tx).
void launch_value_histogram(const void* x, DType tx, std::size_t n, std::uint32_t* counts,
                            cudaStream_t stream);
// counts[hd::update_slot(before[i], after[i], grad[i])] += 1 over n elements.
void launch_update_histogram(const void* before, DType tb, const void* after, DType ta,
                             const void* grad, DType tg, std::size_t n, std::uint32_t* counts,
                             cudaStream_t stream);

} // namespace mixlab::cuda
