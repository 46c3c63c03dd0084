// The reduction scratch: allocated once, grown only for an unusually wide reduction.
#include "backends/cuda/reduce_scratch.h"

#include "backends/cuda/column_split.h"
#include "backends/cuda/cuda_check.h"

namespace mixlab::cuda {

ReduceScratch::ReduceScratch(cudaStream_t stream)
    : m_stream(stream),
      m_mem((k_partial_arrays * k_max_partials_per_array + k_scratch_extra_floats) * sizeof(float),
            "the reduction scratch")
{}

float* ReduceScratch::get(std::size_t floats)
{
    if (floats * sizeof(float) > m_mem.bytes()) {
        // Kernels already enqueued may still use the old scratch.
        MIXLAB_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        m_mem = DeviceMemory();
        m_mem = DeviceMemory(floats * sizeof(float), "the reduction scratch");
    }
    return m_mem.as<float>();
}

} // namespace mixlab::cuda
