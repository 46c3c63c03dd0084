// The residual sum: 16-byte loads and stores (4 floats or 8 16-bit values per access)
// when every pointer is aligned, a scalar tail otherwise. Each element is read before
// the same thread writes it, so y may alias a or b.
#include "backends/cuda/add.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

#include <cstdint>

namespace mixlab::cuda {

namespace {

template <class T>
struct alignas(16) Pack {
    static constexpr int k_n = 16 / int(sizeof(T));
    T v[k_n];
};

// The reference's max(a + b, 0): NaN passes (a NaN sum is not below zero).
__device__ __forceinline__ float add_act(bool relu, float a, float b)
{
    const float s = a + b;
    return relu && s < 0.0f ? 0.0f : s;
}

template <class T>
__global__ void add_activation_kernel(bool relu, const T* a, const T* b, std::size_t n,
                                      std::size_t packs, T* y)
{
    using P = Pack<T>;
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    const std::size_t tid = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    for (std::size_t k = tid; k < packs; k += stride) {
        const P pa = reinterpret_cast<const P*>(a)[k];
        const P pb = reinterpret_cast<const P*>(b)[k];
        P out;
#pragma unroll
        for (int j = 0; j < P::k_n; ++j)
            out.v[j] = from_f32<T>(add_act(relu, to_f32(pa.v[j]), to_f32(pb.v[j])));
        reinterpret_cast<P*>(y)[k] = out;
    }
    for (std::size_t i = packs * P::k_n + tid; i < n; i += stride)
        y[i] = from_f32<T>(add_act(relu, to_f32(a[i]), to_f32(b[i])));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

constexpr unsigned k_threads = 256;

} // namespace

void launch_add_activation(Activation act, const void* a, const void* b, DType t, std::size_t n,
                           void* y, cudaStream_t stream)
{
    if (n == 0) return;
    const bool vector = aligned16(a) && aligned16(b) && aligned16(y);
    dispatch_floating(t, "add_activation", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const std::size_t packs = vector ? n / Pack<T>::k_n : 0;
        const std::size_t work = vector ? packs + 1 : n;
        add_activation_kernel<T><<<grid_for(work, k_threads), k_threads, 0, stream>>>(
            act == Activation::Relu, static_cast<const T*>(a), static_cast<const T*>(b), n, packs,
            static_cast<T*>(y));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("add_activation_kernel");
}

} // namespace mixlab::cuda
