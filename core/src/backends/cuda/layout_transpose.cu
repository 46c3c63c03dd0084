// The batched transpose: a 32 x 32 shared-memory tile per block, so that both the reads
// (along src's rows) and the writes (along dst's rows) are coalesced.
#include "backends/cuda/layout_transpose.cuh"

#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace mixlab::cuda {

namespace {

constexpr int k_tile = 32, k_rows = 8;
constexpr unsigned k_max_grid_z = 65535; // CUDA's limit; more matrices loop in the kernel

// Block (k_tile, k_rows); grid (ceil(cols / k_tile), ceil(rows / k_tile), <= batch).
template <class T>
__global__ void transpose_batched_kernel(const T* src, T* dst, std::size_t batch, int rows,
                                         int cols)
{
    __shared__ T tile[k_tile][k_tile + 1]; // +1: no bank conflicts on the transposed read
    const int c0 = blockIdx.x * k_tile, r0 = blockIdx.y * k_tile;
    const std::size_t plane = std::size_t(rows) * cols;
    for (std::size_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const T* s = src + b * plane;
        T* d = dst + b * plane;
        // Read s[r0 + y][c0 + x]: c fastest, coalesced.
        for (int y = threadIdx.y; y < k_tile; y += k_rows) {
            const int r = r0 + y, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[y][threadIdx.x] = s[std::size_t(r) * cols + c];
        }
        __syncthreads();
        // Write d[c0 + y][r0 + x]: r fastest, coalesced.
        for (int y = threadIdx.y; y < k_tile; y += k_rows) {
            const int c = c0 + y, r = r0 + threadIdx.x;
            if (r < rows && c < cols) d[std::size_t(c) * rows + r] = tile[threadIdx.x][y];
        }
        __syncthreads(); // the tile is refilled for the next matrix
    }
}

template <class T>
void launch(const void* src, void* dst, std::size_t batch, int rows, int cols, cudaStream_t stream)
{
    const dim3 block(k_tile, k_rows);
    const dim3 grid(unsigned((cols + k_tile - 1) / k_tile), unsigned((rows + k_tile - 1) / k_tile),
                    unsigned(std::min<std::size_t>(batch, k_max_grid_z)));
    transpose_batched_kernel<T><<<grid, block, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), batch, rows, cols);
}

} // namespace

void launch_transpose_batched(const void* src, void* dst, std::size_t batch, int rows, int cols,
                              DType t, cudaStream_t stream)
{
    if (batch == 0 || rows <= 0 || cols <= 0) return;
    switch (dtype_size(t)) {
    case 4: launch<std::uint32_t>(src, dst, batch, rows, cols, stream); break;
    case 2: launch<std::uint16_t>(src, dst, batch, rows, cols, stream); break;
    default:
        throw Error("cuda backend: transposing a tensor of dtype " + std::string(dtype_name(t)) +
                    " is not supported");
    }
    MIXLAB_CUDA_CHECK_LAUNCH("transpose_batched_kernel");
}

} // namespace mixlab::cuda
