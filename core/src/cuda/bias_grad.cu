// Column and row sums in fp32. Column sums: a block owns 32 adjacent columns (coalesced
// reads) and 8 row lanes, then adds its 8 partials in a fixed order: deterministic,
// no atomics, no scratch memory.
#include "cuda/bias_grad.cuh"

#include "cuda/cuda_check.h"
#include "cuda/device_types.cuh"
#include "cuda/reduce.cuh"

namespace mixlab::cuda {

namespace {

constexpr int k_tile_cols = 32, k_row_lanes = 8;

// block (32, 8); grid.x: column tiles
template <class T>
__global__ void column_sums_kernel(const T* x, std::size_t rows, std::size_t cols, AnyMut out)
{
    __shared__ float partial[k_row_lanes][k_tile_cols + 1];
    const std::size_t col = std::size_t(blockIdx.x) * k_tile_cols + threadIdx.x;
    float acc = 0.0f;
    if (col < cols)
        for (std::size_t r = threadIdx.y; r < rows; r += k_row_lanes)
            acc += to_f32(x[r * cols + col]);
    partial[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < cols) {
        float s = partial[0][threadIdx.x];
        for (int l = 1; l < k_row_lanes; ++l)
            s += partial[l][threadIdx.x];
        out.store(col, s);
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
        for (std::size_t j = lane; j < cols; j += 32)
            acc += to_f32(x[r * cols + j]);
        acc = warp_sum(acc);
        if (lane == 0)
            out.store(r, acc);
    }
}

} // namespace

void launch_column_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                        DType tout, cudaStream_t stream)
{
    if (cols == 0)
        return;
    const AnyMut o{out, tout};
    const unsigned tiles = unsigned((cols + k_tile_cols - 1) / k_tile_cols);
    dispatch_floating(tx, "bias_grad", [&](auto tag) {
        using T = typename decltype(tag)::type;
        column_sums_kernel<T><<<tiles, dim3(k_tile_cols, k_row_lanes), 0, stream>>>(
            static_cast<const T*>(x), rows, cols, o);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("column_sums_kernel");
}

void launch_row_sums(const void* x, DType tx, std::size_t rows, std::size_t cols, void* out,
                     DType tout, cudaStream_t stream)
{
    if (rows == 0)
        return;
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
