// Warp and block reductions shared by the row-wise kernels (softmax, loss, sums).
#pragma once
#include <cuda_runtime.h>

namespace mixlab::cuda {

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Every thread of the block gets the result. `scratch` holds 32 floats of shared
// memory; the trailing barrier lets the caller reuse it at once. The order of the
// additions is fixed by the block shape, so results are reproducible run to run.
template <bool IsMax>
__device__ __forceinline__ float block_reduce(float v, float* scratch)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = IsMax ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < warps ? scratch[lane] : (IsMax ? -INFINITY : 0.0f);
    r = IsMax ? warp_max(r) : warp_sum(r);
    __syncthreads();
    return r;
}

} // namespace mixlab::cuda
