// Grid sizes for grid-stride kernels: as many blocks as the device keeps resident at
// once (multiprocessors times the kernel's occupancy), so one wave covers every
// multiprocessor and no partly filled last wave idles most of them.
#pragma once
#include "backends/cuda/cuda_check.h"

#include <cuda_runtime.h>

#include <cstddef>

namespace mixlab::cuda {

// Blocks of `threads` that Kernel keeps resident on the current device. Asked once per
// kernel (a process drives GPUs of one kind; a different kind only changes the grid of
// element-wise passes, never a result).
template <auto Kernel>
unsigned resident_blocks(unsigned threads)
{
    static const unsigned blocks = [threads] {
        int device = 0, sms = 0, per_sm = 0;
        MIXLAB_CUDA_CHECK(cudaGetDevice(&device));
        MIXLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        MIXLAB_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, int(threads), 0));
        const int b = sms * (per_sm > 0 ? per_sm : 1);
        return unsigned(b > 0 ? b : 1);
    }();
    return blocks;
}

// Blocks for `items` work items of `per_block` each, at most one resident wave of Kernel.
template <auto Kernel>
unsigned wave_blocks(std::size_t items, std::size_t per_block, unsigned threads)
{
    const std::size_t need = (items + per_block - 1) / per_block;
    const std::size_t wave = resident_blocks<Kernel>(threads);
    const std::size_t b = need < wave ? need : wave;
    return unsigned(b < 1 ? 1 : b);
}

} // namespace mixlab::cuda
