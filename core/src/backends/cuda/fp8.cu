// fp8 kernels: quantize (flat, or through a shared-memory tile when the transposed copy
// is wanted, so that both writes are coalesced) and the delayed-scaling update. Every
// rounding is hd::float_to_fp8, the CPU reference's function, in software: bit-equal to
// the reference by construction (NaN keeps its sign there, which PTX's cvt.satfinite
// does not), on every architecture the build targets, and cheap next to the memory
// traffic of this pass (about 20 integer instructions an element).
#include "backends/cuda/fp8.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/reduce.cuh"
#include "base/hd_math.h"

#include <cfloat>
#include <cstdint>

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;
constexpr int k_tile = 64; // the transposing kernel's tile: 64 x 64 elements, 256 threads

template <bool E5M2>
__device__ __forceinline__ hd::Fp8Format format()
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

template <bool E5M2>
__device__ __forceinline__ std::uint32_t to_fp8(float v, float scale)
{
    return hd::fp8_quantize_value(v, scale, format<E5M2>());
}

// N consecutive elements (N * sizeof(T) a multiple of 8 bytes, p aligned to it) as floats.
template <int N, class T>
__device__ __forceinline__ void load_vec(const T* p, float (&v)[N])
{
    constexpr int bytes = N * int(sizeof(T));
    if constexpr (bytes % 16 == 0) {
        uint4 raw[bytes / 16];
#pragma unroll
        for (int w = 0; w < bytes / 16; ++w) raw[w] = reinterpret_cast<const uint4*>(p)[w];
        const T* e = reinterpret_cast<const T*>(raw);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = to_f32(e[i]);
    } else {
        static_assert(bytes % 8 == 0, "8-byte loads at least");
        uint2 raw[bytes / 8];
#pragma unroll
        for (int w = 0; w < bytes / 8; ++w) raw[w] = reinterpret_cast<const uint2*>(p)[w];
        const T* e = reinterpret_cast<const T*>(raw);
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = to_f32(e[i]);
    }
}

// The block's amax, folded into the slot by one atomic max on the float's bits (the
// slot holds a non-negative float, and those order as unsigned integers).
template <bool Amax>
__device__ __forceinline__ void publish_amax(float amax, float* slot)
{
    if constexpr (Amax) {
        __shared__ float scratch[32];
        amax = block_reduce<true>(amax, scratch);
        if (threadIdx.x == 0 && amax > 0.0f)
            atomicMax(reinterpret_cast<unsigned int*>(slot), __float_as_uint(amax));
    }
}

// y only: 8 elements a thread per iteration (16-byte loads of 16-bit x, two of fp32 x;
// 8-byte stores) over the first vec_groups * 8 elements, one at a time after that.
template <class T, bool E5M2, bool Amax>
__global__ void __launch_bounds__(k_threads)
    fp8_quantize_flat(const T* __restrict__ x, std::size_t n, std::size_t vec_groups,
                      const float* __restrict__ scale_p, float* amax_slot,
                      std::uint8_t* __restrict__ y)
{
    const float scale = *scale_p;
    float amax = 0.0f;
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    const std::size_t tid = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    for (std::size_t g = tid; g < vec_groups; g += stride) {
        float v[8];
        load_vec<8>(x + g * 8, v);
        std::uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (Amax) amax = fold_amax(fold_amax(amax, v[i]), v[i + 4]);
            lo |= to_fp8<E5M2>(v[i], scale) << (8 * i);
            hi |= to_fp8<E5M2>(v[i + 4], scale) << (8 * i);
        }
        reinterpret_cast<uint2*>(y)[g] = make_uint2(lo, hi);
    }
    for (std::size_t i = vec_groups * 8 + tid; i < n; i += stride) {
        const float v = to_f32(x[i]);
        if (Amax) amax = fold_amax(amax, v);
        y[i] = std::uint8_t(to_fp8<E5M2>(v, scale));
    }
    publish_amax<Amax>(amax, amax_slot);
}

// y_t (and y when WriteY): one 64 x 64 tile of x per block. Thread (tx, ty) = (t % 16,
// t / 16) converts 4 consecutive elements of rows ty, ty + 16, ty + 32, ty + 48 (one
// 4-element load, one 4-byte store to y), keeps the bytes in shared memory, then writes
// 4 consecutive bytes of y_t's rows ty, ty + 16, ... (4 bytes of one column of the
// tile). `aligned`: x's rows start on 4-element boundaries and y's and y_t's rows on
// 4-byte ones, so full tiles take the vector loads and stores.
template <class T, bool E5M2, bool Amax, bool WriteY>
__global__ void __launch_bounds__(k_threads)
    fp8_quantize_tiled(const T* __restrict__ x, int rows, int cols,
                       const float* __restrict__ scale_p, float* amax_slot,
                       std::uint8_t* __restrict__ y, std::uint8_t* __restrict__ y_t, bool aligned)
{
    __shared__ __align__(16) std::uint8_t tile[k_tile][k_tile + 4];
    const float scale = *scale_p;
    const int tx = int(threadIdx.x) & 15, ty = int(threadIdx.x) >> 4;
    const int r0 = int(blockIdx.x) * k_tile, c0 = int(blockIdx.y) * k_tile;
    const bool full = aligned && r0 + k_tile <= rows && c0 + k_tile <= cols;
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < k_tile / 16; ++i) {
        const int r = ty + 16 * i, c = 4 * tx;
        const std::size_t at = std::size_t(r0 + r) * std::size_t(cols) + std::size_t(c0 + c);
        std::uint32_t packed = 0;
        if (full) {
            float v[4];
            load_vec<4>(x + at, v);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                if (Amax) amax = fold_amax(amax, v[q]);
                packed |= to_fp8<E5M2>(v[q], scale) << (8 * q);
            }
            if (WriteY) *reinterpret_cast<std::uint32_t*>(y + at) = packed;
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                if (r0 + r >= rows || c0 + c + q >= cols) continue;
                const float v = to_f32(x[at + q]);
                if (Amax) amax = fold_amax(amax, v);
                const std::uint32_t b = to_fp8<E5M2>(v, scale);
                packed |= b << (8 * q);
                if (WriteY) y[at + q] = std::uint8_t(b);
            }
        }
        *reinterpret_cast<std::uint32_t*>(&tile[r][c]) = packed;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < k_tile / 16; ++i) {
        const int j = ty + 16 * i, r = 4 * tx; // y_t's row c0 + j, columns r0 + r ..
        const std::size_t at = std::size_t(c0 + j) * std::size_t(rows) + std::size_t(r0 + r);
        if (full) {
            const std::uint32_t packed =
                std::uint32_t(tile[r][j]) | std::uint32_t(tile[r + 1][j]) << 8 |
                std::uint32_t(tile[r + 2][j]) << 16 | std::uint32_t(tile[r + 3][j]) << 24;
            *reinterpret_cast<std::uint32_t*>(y_t + at) = packed;
        } else if (c0 + j < cols) {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                if (r0 + r + q < rows) y_t[at + q] = tile[r + q][j];
        }
    }
    publish_amax<Amax>(amax, amax_slot);
}

__global__ void fp8_update_kernel(float* meta, int tensors, int history_len,
                                  std::size_t block_floats, int margin)
{
    const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (t < tensors)
        hd::fp8_update_block(meta + std::size_t(t) * block_floats, history_len, margin);
}

bool aligned_to(const void* p, std::size_t bytes)
{
    return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

template <class T, bool E5M2, bool Amax>
void quantize(const T* x, int rows, int cols, const float* scale, float* amax_slot, std::uint8_t* y,
              std::uint8_t* y_t, cudaStream_t stream)
{
    const std::size_t n = std::size_t(rows) * std::size_t(cols);
    if (!y_t) {
        const bool vec =
            aligned_to(x, 8 * sizeof(T) >= 16 ? 16 : 8 * sizeof(T)) && aligned_to(y, 8);
        const std::size_t groups = vec ? n / 8 : 0;
        const unsigned blocks = grid_for(groups ? groups : n, k_threads);
        fp8_quantize_flat<T, E5M2, Amax>
            <<<blocks, k_threads, 0, stream>>>(x, n, groups, scale, amax_slot, y);
        MIXLAB_CUDA_CHECK_LAUNCH("fp8_quantize_flat");
        return;
    }
    const bool aligned = cols % 4 == 0 && rows % 4 == 0 && aligned_to(x, 4 * sizeof(T)) &&
                         (!y || aligned_to(y, 4)) && aligned_to(y_t, 4);
    const dim3 grid(unsigned((rows + k_tile - 1) / k_tile), unsigned((cols + k_tile - 1) / k_tile));
    if (y)
        fp8_quantize_tiled<T, E5M2, Amax, true>
            <<<grid, k_threads, 0, stream>>>(x, rows, cols, scale, amax_slot, y, y_t, aligned);
    else
        fp8_quantize_tiled<T, E5M2, Amax, false>
            <<<grid, k_threads, 0, stream>>>(x, rows, cols, scale, amax_slot, y, y_t, aligned);
    MIXLAB_CUDA_CHECK_LAUNCH("fp8_quantize_tiled");
}

} // namespace

void launch_fp8_quantize(const void* x, DType tx, int rows, int cols, const float* scale,
                         float* amax_slot, void* y, void* y_t, DType ty, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return;
    auto* out = static_cast<std::uint8_t*>(y);
    auto* out_t = static_cast<std::uint8_t*>(y_t);
    dispatch_floating(tx, "fp8_quantize", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* in = static_cast<const T*>(x);
        const bool e5m2 = ty == DType::F8E5M2;
        if (e5m2 && amax_slot)
            quantize<T, true, true>(in, rows, cols, scale, amax_slot, out, out_t, stream);
        else if (e5m2)
            quantize<T, true, false>(in, rows, cols, scale, nullptr, out, out_t, stream);
        else if (amax_slot)
            quantize<T, false, true>(in, rows, cols, scale, amax_slot, out, out_t, stream);
        else
            quantize<T, false, false>(in, rows, cols, scale, nullptr, out, out_t, stream);
    });
}

void launch_fp8_update_scales(float* meta, int tensors, int history_len, std::size_t block_floats,
                              int margin, cudaStream_t stream)
{
    if (tensors <= 0) return;
    const unsigned threads = 128;
    const unsigned blocks = unsigned((tensors + int(threads) - 1) / int(threads));
    fp8_update_kernel<<<blocks, threads, 0, stream>>>(meta, tensors, history_len, block_floats,
                                                      margin);
    MIXLAB_CUDA_CHECK_LAUNCH("fp8_update_kernel");
}

} // namespace mixlab::cuda
