// Fill and cast kernels. Floating casts are templated (they sit on hot paths such as
// a layer kept in fp32); casts from or to integers go through one generic kernel.
#include "backends/cuda/cast_fill.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "base/hd_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mixlab::cuda {

namespace {

template <class T>
__global__ void fill_kernel(T* p, std::size_t n, T value)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        p[i] = value;
}

template <class TX, class TY>
__global__ void cast_kernel(const TX* x, TY* y, std::size_t n)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        y[i] = from_f32<TY>(to_f32(x[i]));
}

__device__ float load_generic(const void* p, DType t, std::size_t i)
{
    switch (t) {
    case DType::U8: return float(static_cast<const std::uint8_t*>(p)[i]);
    case DType::I32: return float(static_cast<const std::int32_t*>(p)[i]);
    case DType::I16: return float(static_cast<const std::int16_t*>(p)[i]);
    case DType::F8E4M3: return hd::fp8_to_float(static_cast<const std::uint8_t*>(p)[i], hd::k_e4m3);
    case DType::F8E5M2: return hd::fp8_to_float(static_cast<const std::uint8_t*>(p)[i], hd::k_e5m2);
    default: return AnyConst{p, t}.load(i);
    }
}

__device__ void store_generic(void* p, DType t, std::size_t i, float v)
{
    switch (t) {
    case DType::U8: static_cast<std::uint8_t*>(p)[i] = std::uint8_t(lrintf(v)); break;
    case DType::I32: static_cast<std::int32_t*>(p)[i] = std::int32_t(lrintf(v)); break;
    case DType::I16:
        static_cast<std::int16_t*>(p)[i] =
            std::int16_t(fminf(fmaxf(rintf(v), -32768.0f), 32767.0f));
        break;
    // Unscaled and saturating, as upload_f32 and the CPU's round_to store fp8.
    case DType::F8E4M3: static_cast<std::uint8_t*>(p)[i] = hd::float_to_fp8(v, hd::k_e4m3); break;
    case DType::F8E5M2: static_cast<std::uint8_t*>(p)[i] = hd::float_to_fp8(v, hd::k_e5m2); break;
    default: AnyMut{p, t}.store(i, v); break;
    }
}

__global__ void cast_generic_kernel(const void* x, DType tx, void* y, DType ty, std::size_t n)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        store_generic(y, ty, i, load_generic(x, tx, i));
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_fill(void* p, DType t, std::size_t n, float value, cudaStream_t stream)
{
    if (n == 0) return;
    const unsigned blocks = grid_for(n, k_threads);
    switch (t) {
    case DType::F32:
        fill_kernel<float><<<blocks, k_threads, 0, stream>>>(static_cast<float*>(p), n, value);
        break;
    case DType::F16: {
        // The host rounding matches the device's (round to nearest even).
        const std::uint16_t bits = float_to_half_bits(value);
        __half h;
        std::memcpy(&h, &bits, sizeof h);
        fill_kernel<__half><<<blocks, k_threads, 0, stream>>>(static_cast<__half*>(p), n, h);
        break;
    }
    case DType::BF16: {
        const std::uint16_t bits = float_to_bf16_bits(value);
        bf16 b;
        std::memcpy(&b, &bits, sizeof b);
        fill_kernel<bf16><<<blocks, k_threads, 0, stream>>>(static_cast<bf16*>(p), n, b);
        break;
    }
    case DType::I32:
        fill_kernel<std::int32_t><<<blocks, k_threads, 0, stream>>>(
            static_cast<std::int32_t*>(p), n, std::int32_t(std::lrint(value)));
        break;
    case DType::U8:
        fill_kernel<std::uint8_t><<<blocks, k_threads, 0, stream>>>(
            static_cast<std::uint8_t*>(p), n, std::uint8_t(std::lrint(value)));
        break;
    case DType::I16:
        fill_kernel<std::int16_t><<<blocks, k_threads, 0, stream>>>(
            static_cast<std::int16_t*>(p), n, std::int16_t(round_to(DType::I16, value)));
        break;
    case DType::F8E4M3:
    case DType::F8E5M2: {
        const std::uint8_t byte =
            hd::float_to_fp8(value, t == DType::F8E4M3 ? hd::k_e4m3 : hd::k_e5m2);
        fill_kernel<std::uint8_t>
            <<<blocks, k_threads, 0, stream>>>(static_cast<std::uint8_t*>(p), n, byte);
        break;
    }
    }
    MIXLAB_CUDA_CHECK_LAUNCH("fill_kernel");
}

void launch_cast(const void* x, DType tx, void* y, DType ty, std::size_t n, cudaStream_t stream)
{
    if (n == 0) return;
    const unsigned blocks = grid_for(n, k_threads);
    if (!is_floating(tx) || !is_floating(ty)) {
        cast_generic_kernel<<<blocks, k_threads, 0, stream>>>(x, tx, y, ty, n);
        MIXLAB_CUDA_CHECK_LAUNCH("cast_generic_kernel");
        return;
    }
    dispatch_floating(tx, "cast", [&](auto tag_x) {
        using TX = typename decltype(tag_x)::type;
        dispatch_floating(ty, "cast", [&](auto tag_y) {
            using TY = typename decltype(tag_y)::type;
            cast_kernel<TX, TY><<<blocks, k_threads, 0, stream>>>(static_cast<const TX*>(x),
                                                                  static_cast<TY*>(y), n);
        });
    });
    MIXLAB_CUDA_CHECK_LAUNCH("cast_kernel");
}

} // namespace mixlab::cuda
