// Numerics histograms. Kept plain on purpose (they run only on sampled steps): a
// grid-stride loop reads each element through AnyConst (widened exactly to float), finds
// its slot with the same hd_math.h function the CPU reference calls, and counts it in the
// block's shared counters; the block then adds its non-zero counters to global memory.
// Counting is integer addition, so the result does not depend on the order: the same
// counts as the CPU, bit for bit.
#include "backends/cuda/numerics.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "base/hd_math.h"

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;
// Few blocks: each adds its ~300 shared counters to the same global ones at the end, so
// more blocks than the GPU runs at once would only add atomics.
constexpr unsigned k_max_blocks = 1024;

template <int Slots>
__device__ void flush_counts(const std::uint32_t* local, std::uint32_t* counts)
{
    __syncthreads();
    for (int s = threadIdx.x; s < Slots; s += blockDim.x)
        if (local[s]) atomicAdd(&counts[s], local[s]);
}

__global__ void value_histogram_kernel(AnyConst x, std::size_t n, std::uint32_t* counts)
{
    __shared__ std::uint32_t local[hd::k_value_slots];
    for (int s = threadIdx.x; s < hd::k_value_slots; s += blockDim.x) local[s] = 0;
    __syncthreads();
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[hd::value_slot(x.load(i))], 1u);
    flush_counts<hd::k_value_slots>(local, counts);
}

__global__ void update_histogram_kernel(AnyConst before, AnyConst after, AnyConst grad,
                                        std::size_t n, std::uint32_t* counts)
{
    __shared__ std::uint32_t local[hd::k_update_slots];
    for (int s = threadIdx.x; s < hd::k_update_slots; s += blockDim.x) local[s] = 0;
    __syncthreads();
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[hd::update_slot(before.load(i), after.load(i), grad.load(i))], 1u);
    flush_counts<hd::k_update_slots>(local, counts);
}

} // namespace

void launch_value_histogram(const void* x, DType tx, std::size_t n, std::uint32_t* counts,
                            cudaStream_t stream)
{
    if (n == 0) return;
    value_histogram_kernel<<<grid_for(n, k_threads, k_max_blocks), k_threads, 0, stream>>>(
        AnyConst{x, tx}, n, counts);
    MIXLAB_CUDA_CHECK_LAUNCH("value_histogram_kernel");
}

void launch_update_histogram(const void* before, DType tb, const void* after, DType ta,
                             const void* grad, DType tg, std::size_t n, std::uint32_t* counts,
                             cudaStream_t stream)
{
    if (n == 0) return;
    update_histogram_kernel<<<grid_for(n, k_threads, k_max_blocks), k_threads, 0, stream>>>(
        AnyConst{before, tb}, AnyConst{after, ta}, AnyConst{grad, tg}, n, counts);
    MIXLAB_CUDA_CHECK_LAUNCH("update_histogram_kernel");
}

} // namespace mixlab::cuda
