// Device-side element access for the floating dtypes: fp32 math on float, __half and
// __nv_bfloat16 storage, plus the host dispatch from a DType to a C++ type.
#pragma once
#include "mixlab/dtype.h"
#include "mixlab/error.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mixlab::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(bf16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v)
{
    return v;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float v)
{
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float v)
{
    return __float2bfloat16_rn(v);
}

// A floating pointer whose dtype is known only at run time (biases, inputs an op only
// sometimes reads). The switch is uniform across a warp, so it costs a few instructions.
struct AnyConst {
    const void* p = nullptr;
    DType t = DType::F32;
    __device__ __forceinline__ float load(std::size_t i) const
    {
        switch (t) {
        case DType::F16: return __half2float(static_cast<const __half*>(p)[i]);
        case DType::BF16: return __bfloat162float(static_cast<const bf16*>(p)[i]);
        default: return static_cast<const float*>(p)[i];
        }
    }
};

struct AnyMut {
    void* p = nullptr;
    DType t = DType::F32;
    __device__ __forceinline__ void store(std::size_t i, float v) const
    {
        switch (t) {
        case DType::F16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
        case DType::BF16: static_cast<bf16*>(p)[i] = __float2bfloat16_rn(v); break;
        default: static_cast<float*>(p)[i] = v; break;
        }
    }
};

template <class T>
struct TypeTag {
    using type = T;
};

// Calls f(TypeTag<T>{}) with T the C++ type of a floating dtype.
template <class F>
void dispatch_floating(DType t, const char* op, F&& f)
{
    switch (t) {
    case DType::F32: f(TypeTag<float>{}); return;
    case DType::F16: f(TypeTag<__half>{}); return;
    case DType::BF16: f(TypeTag<bf16>{}); return;
    default: break;
    }
    throw Error(std::string("cuda backend: ") + op + ": expected a floating dtype, got " +
                std::string(dtype_name(t)));
}

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, never more
// than the work needs.
inline unsigned grid_for(std::size_t n, unsigned threads, unsigned max_blocks = 8192)
{
    const std::size_t blocks = (n + threads - 1) / threads;
    return unsigned(blocks < 1 ? 1 : (blocks > max_blocks ? max_blocks : blocks));
}

} // namespace mixlab::cuda
