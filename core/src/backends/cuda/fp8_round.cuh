// fp8 rounding as every kernel that writes fp8 does it (fp8.cu's quantize passes and the
// optimizer's rewrite of mixed_fp8's weights, optimizer.cu): four values scaled, rounded
// and packed in one 32-bit word, the running amax of finite values, the block's amax
// folded into the meta buffer, and the 4 x 4 byte transpose of the transposing passes.
// The bytes are hd_math.h's fp8_quantize_value's, the CPU reference's, for every input.
#pragma once
#include "backends/cuda/reduce.cuh"
#include "base/hd_math.h"

#include <cuda_fp8.h>

#include <cfloat>
#include <cstdint>

namespace mixlab::cuda {

template <bool E5M2>
__device__ __forceinline__ hd::Fp8Format fp8_format()
{
    constexpr hd::Fp8Format f = E5M2 ? hd::k_e5m2 : hd::k_e4m3;
    return f;
}

// The largest finite |v| seen so far (NaN and infinities fail the comparison).
__device__ __forceinline__ float fold_amax(float amax, float v)
{
    const float a = fabsf(v);
    return a <= FLT_MAX ? fmaxf(amax, a) : amax;
}

// Four values times the scale, rounded, packed little-endian (v[0] in the low byte).
// On sm_89 and newer PTX's cvt.rn.satfinite, two values an instruction: round to nearest
// even, saturating (infinities too), every NaN to 0x7F, which is hd::fp8_quantize_value's
// byte for every input (mixlab-cli check compares each fp8 case with the CPU's bytes).
// Older GPUs have no fp8 GEMMs; they round in software with the CPU's function.
template <bool E5M2>
__device__ __forceinline__ std::uint32_t quantize4(const float (&v)[4], float scale)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    constexpr __nv_fp8_interpretation_t kind = E5M2 ? __NV_E5M2 : __NV_E4M3;
    const std::uint32_t lo =
        __nv_cvt_float2_to_fp8x2(make_float2(v[0] * scale, v[1] * scale), __NV_SATFINITE, kind);
    const std::uint32_t hi =
        __nv_cvt_float2_to_fp8x2(make_float2(v[2] * scale, v[3] * scale), __NV_SATFINITE, kind);
    return lo | hi << 16;
#else
    std::uint32_t packed = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q)
        packed |= std::uint32_t(hd::fp8_quantize_value(v[q], scale, fp8_format<E5M2>())) << (8 * q);
    return packed;
#endif
}

// The block's amax (every thread calls it), folded into *slot by one atomic max on the
// float's bits (the slot holds a non-negative float, and those order as unsigned
// integers). `scratch`: 32 floats of shared memory.
__device__ __forceinline__ void fold_block_amax(float amax, float* slot, float* scratch)
{
    amax = block_reduce<true>(amax, scratch);
    if (threadIdx.x == 0 && amax > 0.0f)
        atomicMax(reinterpret_cast<unsigned int*>(slot), __float_as_uint(amax));
}

// Four 4-byte words (rows of a 4 x 4 byte block) into its columns: col[q] holds byte q
// of w[0], w[1], w[2], w[3], in that order. Byte permutes in registers (reading a byte at
// a time from shared memory had the warps waiting on it).
__device__ __forceinline__ void transpose4x4(const std::uint32_t (&w)[4], std::uint32_t (&col)[4])
{
    const std::uint32_t lo01 = __byte_perm(w[0], w[1], 0x5140); // w0.b0 w1.b0 w0.b1 w1.b1
    const std::uint32_t hi01 = __byte_perm(w[0], w[1], 0x7362); // w0.b2 w1.b2 w0.b3 w1.b3
    const std::uint32_t lo23 = __byte_perm(w[2], w[3], 0x5140);
    const std::uint32_t hi23 = __byte_perm(w[2], w[3], 0x7362);
    col[0] = __byte_perm(lo01, lo23, 0x5410); // the bytes 0
    col[1] = __byte_perm(lo01, lo23, 0x7632); // the bytes 1
    col[2] = __byte_perm(hi01, hi23, 0x5410);
    col[3] = __byte_perm(hi01, hi23, 0x7632);
}

} // namespace mixlab::cuda
