// CUDA backend pooling: argument checks on the host, then the kernels of pool.cu.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/cuda/pool.cuh"

namespace mixlab::cuda {

void CudaBackend::pool_forward(PoolMode mode, const PoolGeometry& g, const Buffer& x, Buffer& y)
{
    validate::pool(k_name, "pool_forward", g, x, y);
    launch_pool_forward(mode, g, x.data(), x.dtype(), y.data(), stream());
}

void CudaBackend::pool_backward(PoolMode mode, const PoolGeometry& g, const Buffer& x,
                                const Buffer& y, const Buffer& dy, Buffer& dx)
{
    validate::pool_backward(k_name, mode, g, x, y, dy, dx);
    const bool max = mode == PoolMode::Max;
    launch_pool_backward(mode, g, max ? x.data() : nullptr, max ? y.data() : nullptr, dy.data(),
                         dx.dtype(), dx.data(), stream());
}

} // namespace mixlab::cuda
