// Float32 scratch for the column reductions that split rows across blocks (bias
// gradients, batch-norm statistics): partial sums land here and a second launch adds
// them in a fixed order. Sized at construction for every realistic shape, so steps do
// not allocate; a larger request grows it once (with a stream sync).
#pragma once
#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

class ReduceScratch {
public:
    explicit ReduceScratch(cudaStream_t stream);
    // At least `floats` floats, valid until the next call with a larger request.
    float* get(std::size_t floats);

private:
    cudaStream_t m_stream;
    DeviceMemory m_mem;
};

} // namespace mixlab::cuda
