// The batch gathers' normalisation table (gather.cu's 16-bit and fp32 gather, fp8.cu's
// gather into E4M3): every (channel, byte) of a uint8 dataset once per block, by the
// expression the CPU uses. The per-element division and the indexing of the parameters
// by channel had run the MLP's 4096-sample batch at a fifth of the copy bandwidth
// (bench/NOTES.md 21).
#pragma once
#include "backends/cuda/device_types.cuh"

namespace mixlab::cuda {

// table[c][byte] = (byte / 255 - mean[c]) * inv_std[c], rounded to T (float: as computed;
// the fp8 gather rounds to the batch's dtype first, as the batch it stands in for holds
// it). The channel loop unrolled: a parameter array indexed at run time is copied to
// local memory first. Every thread of the block calls it (it ends on a barrier).
template <class T>
__device__ __forceinline__ void fill_norm_table(float (&table)[4][256], int channels,
                                                const float (&mean)[4], const float (&inv_std)[4])
{
    for (int byte = int(threadIdx.x); byte < 256; byte += int(blockDim.x)) {
#pragma unroll
        for (int c = 0; c < 4; ++c)
            if (c < channels)
                table[c][byte] = to_f32(from_f32<T>((float(byte) / 255.0f - mean[c]) * inv_std[c]));
    }
    __syncthreads();
}

} // namespace mixlab::cuda
