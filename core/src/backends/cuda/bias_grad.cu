// Column and row sums in fp32. Column sums go through the shared column-reduction
// kernel (column_reduce.cuh): 16-byte loads, row slices across blocks, partials added
// in slice order by a second launch. Deterministic: no atomics, a fixed order.
#include "backends/cuda/bias_grad.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/reduce.cuh"

namespace mixlab::cuda {

namespace {

// The slices' partials of 32 columns a block, k_finish_warps warps a column: warp w adds
// its run of `chunk` consecutive slices in slice order, then warp 0 adds the runs in warp
// order. The order follows the slice count alone, so the sums' bits are the same on every
// GPU. One thread a column adding every slice one load after another waited on memory
// for nearly all of its ~4 us at W1's 64 slices of 1000 columns (bench/NOTES.md 45's
// profile: dZ2's finish 4.3 us, dZ1's 3.8).
constexpr unsigned k_finish_warps = 8;
__global__ void __launch_bounds__(32 * k_finish_warps)
    column_finish_kernel(const float* partial, unsigned splits, std::size_t ld, std::size_t cols,
                         AnyMut out)
{
    wait_for_previous_grid();
    __shared__ float runs[k_finish_warps][32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const std::size_t c = std::size_t(blockIdx.x) * 32u + lane;
    const unsigned chunk = (splits + k_finish_warps - 1) / k_finish_warps;
    // A warp past the last run keeps 0, which the sum below adds exactly (every run starts
    // from +0, so no run is -0).
    float s = 0.0f;
    if (c < cols) {
        const unsigned k1 = min(splits, (warp + 1) * chunk);
#pragma unroll 4
        for (unsigned k = warp * chunk; k < k1; ++k) s += partial[std::size_t(k) * ld + c];
    }
    runs[warp][lane] = s;
    __syncthreads();
    if (warp == 0 && c < cols) {
        for (unsigned w = 1; w < k_finish_warps; ++w) s += runs[w][lane];
        out.store(c, s);
    }
}

// One warp per row.
template <class T>
__global__ void row_sums_kernel(const T* x, std::size_t rows, std::size_t cols, AnyMut out)
{
    const std::size_t warps = (std::size_t(gridDim.x) * blockDim.x) >> 5;
    const int lane = threadIdx.x & 31;
    for (std::size_t r = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) >> 5; r < rows;
         r += warps) {
        float acc = 0.0f;
        for (std::size_t j = lane; j < cols; j += 32) acc += to_f32(x[r * cols + j]);
        acc = warp_sum(acc);
        if (lane == 0) out.store(r, acc);
    }
}

} // namespace

void launch_column_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                        DType tout, ReduceScratch& scratch, cudaStream_t stream)
{
    if (cols == 0) return;
    const AnyMut o{out, tout};
    dispatch_floating(tx, "bias_grad", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const ColumnSplit s = column_split_for<T>(px, nullptr, rows, cols);
        // One slice: the blocks store the finished sums themselves.
        float* partial = s.splits > 1 ? scratch.get(s.partials()) : nullptr;
        launch_column_partials<T>(px, rows, int(cols), partial, o, s, stream);
        MIXLAB_CUDA_CHECK_LAUNCH("column_partials_kernel");
        if (partial) launch_column_finish(partial, s.splits, s.ld, cols, out, tout, stream);
    });
}

void launch_column_finish(const float* partial, unsigned splits, std::size_t ld, std::size_t cols,
                          void* out, DType tout, cudaStream_t stream)
{
    if (cols == 0) return;
    launch_dependent("column_finish_kernel", column_finish_kernel, unsigned((cols + 31) / 32),
                     32 * k_finish_warps, 0, stream, partial, splits, ld, cols, AnyMut{out, tout});
}

void launch_row_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                     DType tout, cudaStream_t stream)
{
    if (rows == 0) return;
    const AnyMut o{out, tout};
    constexpr unsigned threads = 256;
    dispatch_floating(tx, "bias_grad", [&](auto tag) {
        using T = typename decltype(tag)::type;
        row_sums_kernel<T><<<grid_for(rows * 32, threads), threads, 0, stream>>>(
            static_cast<const T*>(x), rows, cols, o);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("row_sums_kernel");
}

} // namespace mixlab::cuda
