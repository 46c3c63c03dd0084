// Inverted dropout: the mask is hd::dropout_keep(seed, step, index), the very function
// the CPU reference calls, so both backends drop the same elements bit for bit.
#include "backends/cuda/dropout.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"
#include "base/hd_math.h"

namespace mixlab::cuda {

namespace {

template <class TX, class TY>
__global__ void dropout_kernel(const TX* x, float rate, std::uint64_t seed, std::uint64_t step,
                               const std::uint64_t* step_counter, std::size_t n, TY* y)
{
    if (step_counter) step = *step_counter;
    const float keep_scale = 1.0f - rate; // divided, not multiplied by its inverse: as the CPU
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        y[i] =
            from_f32<TY>(hd::dropout_keep(seed, step, i, rate) ? to_f32(x[i]) / keep_scale : 0.0f);
}

constexpr unsigned k_threads = 256;

// The step counter lives beside dropout because dropout is its main reader.
__global__ void advance_step_kernel(std::uint64_t* counter)
{
    wait_for_previous_grid();
    *counter += 1;
}

} // namespace

void launch_advance_step(std::uint64_t* counter, cudaStream_t stream)
{
    launch_dependent("advance_step_kernel", advance_step_kernel, 1, 1, 0, stream, counter);
}

void launch_dropout(const void* x, DType tx, float rate, std::uint64_t seed, std::uint64_t step,
                    const std::uint64_t* step_counter, std::size_t n, void* y, DType ty,
                    cudaStream_t stream)
{
    if (n == 0) return;
    dispatch_floating(tx, "dropout", [&](auto tag_x) {
        using TX = typename decltype(tag_x)::type;
        dispatch_floating(ty, "dropout", [&](auto tag_y) {
            using TY = typename decltype(tag_y)::type;
            dropout_kernel<TX, TY><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
                static_cast<const TX*>(x), rate, seed, step, step_counter, n, static_cast<TY*>(y));
        });
    });
    MIXLAB_CUDA_CHECK_LAUNCH("dropout_kernel");
}

} // namespace mixlab::cuda
