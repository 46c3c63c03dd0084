// The flipped-weight transform: per kernel tap (r, s), a K x C -> C x K transpose
// through a shared-memory tile, so both the reads and the writes are coalesced.
#include "backends/cuda/conv_flip.cuh"

#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"

#include <cstdint>
#include <string>

namespace mixlab::cuda {

namespace {

constexpr int k_tile = 32, k_rows = 8;

// Block (k_tile, k_rows); grid (ceil(C / k_tile), ceil(K / k_tile), R * S). T only moves
// bits: a 2- or 4-byte word.
template <class T>
__global__ void flip_weights_kernel(const T* w, T* out, int K, int R, int S, int C)
{
    __shared__ T tile[k_tile][k_tile + 1]; // +1: no bank conflicts on the transposed read
    const int rs = blockIdx.z, r = rs / S, s = rs % S;
    const int c0 = blockIdx.x * k_tile, k0 = blockIdx.y * k_tile;
    const std::size_t in_tap = std::size_t(r * S + s) * C;                      // w[.][r][s][0]
    const std::size_t out_tap = std::size_t((R - 1 - r) * S + (S - 1 - s)) * K; // out[.][r'][s'][0]
    // Read w[k][r][s][c0 + x] for k = k0 + y: c fastest, coalesced.
    for (int y = threadIdx.y; y < k_tile; y += k_rows) {
        const int k = k0 + y, c = c0 + threadIdx.x;
        if (k < K && c < C) tile[y][threadIdx.x] = w[std::size_t(k) * R * S * C + in_tap + c];
    }
    __syncthreads();
    // Write out[c][r'][s'][k0 + x] for c = c0 + y: k fastest, coalesced.
    for (int y = threadIdx.y; y < k_tile; y += k_rows) {
        const int c = c0 + y, k = k0 + threadIdx.x;
        if (k < K && c < C) out[std::size_t(c) * R * S * K + out_tap + k] = tile[threadIdx.x][y];
    }
}

} // namespace

void launch_conv_flip_weights(const ConvGeometry& g, DType t, const void* w, void* flipped,
                              cudaStream_t stream)
{
    const int K = g.out_c, R = g.kernel_h, S = g.kernel_w, C = g.in_c;
    if (K <= 0 || R <= 0 || S <= 0 || C <= 0) return;
    const dim3 block(k_tile, k_rows);
    const dim3 grid((C + k_tile - 1) / k_tile, (K + k_tile - 1) / k_tile, R * S);
    switch (dtype_size(t)) {
    case 4:
        flip_weights_kernel<std::uint32_t><<<grid, block, 0, stream>>>(
            static_cast<const std::uint32_t*>(w), static_cast<std::uint32_t*>(flipped), K, R, S, C);
        break;
    case 2:
        flip_weights_kernel<std::uint16_t><<<grid, block, 0, stream>>>(
            static_cast<const std::uint16_t*>(w), static_cast<std::uint16_t*>(flipped), K, R, S, C);
        break;
    default:
        throw Error("cuda backend: conv2d: flipping weights of dtype " +
                    std::string(dtype_name(t)) + " is not supported");
    }
    MIXLAB_CUDA_CHECK_LAUNCH("flip_weights_kernel");
}

} // namespace mixlab::cuda
