// Channel padding and unpadding: one thread per output element, so the writes are
// coalesced; the reads are too, up to the row breaks.
#include "backends/cuda/channel_pad.cuh"

#include "backends/cuda/cuda_check.h"
#include "mixlab/error.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;

template <class T>
__global__ void pad_channels_kernel(const T* src, T* dst, std::size_t total, int c, int padded)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const std::size_t r = i / unsigned(padded);
        const int j = int(i - r * unsigned(padded));
        dst[i] = j < c ? src[r * unsigned(c) + unsigned(j)] : T(0);
    }
}

template <class T>
__global__ void unpad_channels_kernel(const T* src, T* dst, std::size_t total, int padded, int c)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const std::size_t r = i / unsigned(c);
        const int j = int(i - r * unsigned(c));
        dst[i] = src[r * unsigned(padded) + unsigned(j)];
    }
}

unsigned blocks_for(std::size_t total)
{
    return unsigned(std::min<std::size_t>((total + k_threads - 1) / k_threads, 65535u * 8u));
}

template <class Launch>
void by_width(DType t, const char* what, Launch launch)
{
    switch (dtype_size(t)) {
    case 4: launch(std::uint32_t{}); break;
    case 2: launch(std::uint16_t{}); break;
    default:
        throw Error("cuda backend: conv2d: " + std::string(what) + " of dtype " +
                    std::string(dtype_name(t)) + " is not supported");
    }
}

} // namespace

void launch_pad_channels(const void* src, void* dst, std::size_t rows, int c, int padded, DType t,
                         cudaStream_t stream)
{
    const std::size_t total = rows * std::size_t(padded);
    if (total == 0) return;
    by_width(t, "padding channels", [&](auto word) {
        using W = decltype(word);
        pad_channels_kernel<W><<<blocks_for(total), k_threads, 0, stream>>>(
            static_cast<const W*>(src), static_cast<W*>(dst), total, c, padded);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("pad_channels_kernel");
}

void launch_unpad_channels(const void* src, void* dst, std::size_t rows, int padded, int c, DType t,
                           cudaStream_t stream)
{
    const std::size_t total = rows * std::size_t(c);
    if (total == 0) return;
    by_width(t, "unpadding channels", [&](auto word) {
        using W = decltype(word);
        unpad_channels_kernel<W><<<blocks_for(total), k_threads, 0, stream>>>(
            static_cast<const W*>(src), static_cast<W*>(dst), total, padded, c);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("unpad_channels_kernel");
}

} // namespace mixlab::cuda
