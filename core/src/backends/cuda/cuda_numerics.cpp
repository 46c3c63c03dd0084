// CUDA numerics ops: the shared argument checks, then one launch on the stream; the
// counts come back with copy_raw_to_host_async, never by a wait here.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/numerics.cuh"

namespace mixlab::cuda {

namespace {

std::uint32_t* counters_at(Buffer& counts, std::size_t offset)
{
    return reinterpret_cast<std::uint32_t*>(counts.as<std::int32_t>() + offset);
}

} // namespace

void CudaBackend::value_histogram(const Buffer& x, Buffer& counts, std::size_t offset)
{
    validate::value_histogram(k_name, x, counts, offset);
    launch_value_histogram(x.data(), x.dtype(), x.count(), counters_at(counts, offset), stream());
}

void CudaBackend::update_histogram(const Buffer& before, const Buffer& after, const Buffer& grad,
                                   Buffer& counts, std::size_t offset)
{
    validate::update_histogram(k_name, before, after, grad, counts, offset);
    launch_update_histogram(before.data(), before.dtype(), after.data(), after.dtype(), grad.data(),
                            grad.dtype(), after.count(), counters_at(counts, offset), stream());
}

void CudaBackend::copy_raw_to_host_async(const Buffer& src, std::size_t bytes, void* dst)
{
    validate::copy_raw_to_host(k_name, src, bytes);
    if (bytes == 0) return;
    MIXLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), bytes, cudaMemcpyDeviceToHost, stream()));
}

} // namespace mixlab::cuda
