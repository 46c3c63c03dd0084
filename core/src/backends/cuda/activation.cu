// Bias + activation forward and activation backward kernels. Math in fp32 with the
// functions of hd_math.h (the CPU reference calls the same ones), one rounding at the
// store. Outputs may alias inputs: every element is read before it is written by the
// same thread, and softmax reads a row completely before it writes it.
#include "backends/cuda/activation.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/reduce.cuh"
#include "base/hd_math.h"

#include <cstdint>

namespace mixlab::cuda {

namespace {

__device__ __forceinline__ float activate(Activation act, float v)
{
    switch (act) {
    case Activation::Relu: return v < 0.0f ? 0.0f : v; // NaN passes, as in the reference
    case Activation::Sigmoid: return hd::sigmoid(v);
    case Activation::Tanh: return tanhf(v);
    case Activation::Gelu: return hd::gelu(v);
    default: return v;
    }
}

// (rows, cols), elementwise; bias per column.
template <class TX, class TY>
__global__ void bias_activation_kernel(Activation act, const TX* x, AnyConst bias, std::size_t n,
                                       unsigned cols, TY* y)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        float v = to_f32(x[i]);
        if (bias.p) v += bias.load(i % cols);
        y[i] = from_f32<TY>(activate(act, v));
    }
}

// One block per row: max, sum of exponentials, then the normalised outputs.
template <class TX, class TY>
__global__ void softmax_kernel(const TX* x, AnyConst bias, std::size_t rows, int cols, TY* y)
{
    __shared__ float scratch[32];
    for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const TX* in = x + r * cols;
        TY* out = y + r * cols;
        auto value = [&](int j) { return bias.p ? to_f32(in[j]) + bias.load(j) : to_f32(in[j]); };
        float mx = -INFINITY;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, value(j));
        mx = block_reduce<true>(mx, scratch);
        float sum = 0.0f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(value(j) - mx);
        sum = block_reduce<false>(sum, scratch);
        const float inv = 1.0f / sum;
        for (int j = threadIdx.x; j < cols; j += blockDim.x)
            out[j] = from_f32<TY>(expf(value(j) - mx) * inv);
    }
}

// The gradient through an elementwise activation: `in` is y for ReLU, sigmoid and tanh
// and x for GELU (operand_of says which), g the incoming gradient.
__device__ __forceinline__ float activation_grad(Activation act, float g, float in)
{
    switch (act) {
    case Activation::Relu: return in > 0.0f ? g : 0.0f;
    case Activation::Sigmoid: return g * in * (1.0f - in);
    case Activation::Tanh: return g * (1.0f - in * in);
    case Activation::Gelu: return g * hd::gelu_grad(in);
    default: return g;
    }
}

// `in.p` is null where the activation reads no operand (`none`): nothing is loaded then.
template <class TDY, class TDX>
__global__ void activation_backward_kernel(Activation act, AnyConst in, const TDY* dy,
                                           std::size_t n, TDX* dx)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        dx[i] = from_f32<TDX>(activation_grad(act, to_f32(dy[i]), in.p ? in.load(i) : 0.0f));
}

// Eight elements a thread in 16-byte accesses, where dy, the operand read and dx share one
// dtype and every pointer is 16-byte aligned (the elements past the last whole eight go
// to the scalar kernel). The scalar kernel's 2-byte accesses and per-element dtype switch
// ran ResNet-18's and the MLP's ReLU backward at about half the copy bandwidth
// (bench/NOTES.md 21).
template <class T>
struct alignas(16) Eight {
    T v[8];
};

template <class T>
__global__ void activation_backward_vec_kernel(Activation act, const T* in, const T* dy,
                                               std::size_t eights, T* dx)
{
    for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < eights;
         k += std::size_t(gridDim.x) * blockDim.x) {
        const Eight<T> a = reinterpret_cast<const Eight<T>*>(in)[k];
        const Eight<T> g = reinterpret_cast<const Eight<T>*>(dy)[k];
        Eight<T> out;
#pragma unroll
        for (int j = 0; j < 8; ++j)
            out.v[j] = from_f32<T>(activation_grad(act, to_f32(g.v[j]), to_f32(a.v[j])));
        reinterpret_cast<Eight<T>*>(dx)[k] = out;
    }
}

// One block per row: dot = sum(dy * y), then dx = y * (dy - dot).
template <class TDY, class TDX>
__global__ void softmax_backward_kernel(AnyConst y, const TDY* dy, std::size_t rows, int cols,
                                        TDX* dx)
{
    __shared__ float scratch[32];
    for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const std::size_t o = r * cols;
        float dot = 0.0f;
        for (int j = threadIdx.x; j < cols; j += blockDim.x)
            dot += to_f32(dy[o + j]) * y.load(o + j);
        dot = block_reduce<false>(dot, scratch);
        for (int j = threadIdx.x; j < cols; j += blockDim.x)
            dx[o + j] = from_f32<TDX>(y.load(o + j) * (to_f32(dy[o + j]) - dot));
    }
}

constexpr unsigned k_threads = 256;

// A row block no wider than the row needs (a 10-class softmax uses one warp).
unsigned row_threads(int cols)
{
    const unsigned warps = unsigned((cols + 31) / 32);
    return warps >= 8 ? 256u : (warps < 1 ? 32u : warps * 32u);
}

unsigned row_blocks(std::size_t rows)
{
    return unsigned(rows > 65535 * 16 ? 65535 * 16 : (rows < 1 ? 1 : rows));
}

} // namespace

void launch_bias_activation(Activation act, const void* x, DType tx, const void* bias, DType tb,
                            std::size_t rows, int cols, void* y, DType ty, cudaStream_t stream)
{
    const std::size_t n = rows * std::size_t(cols);
    if (n == 0) return;
    const AnyConst b{bias, tb};
    dispatch_floating(tx, "bias_activation", [&](auto tag_x) {
        using TX = typename decltype(tag_x)::type;
        dispatch_floating(ty, "bias_activation", [&](auto tag_y) {
            using TY = typename decltype(tag_y)::type;
            const TX* px = static_cast<const TX*>(x);
            TY* py = static_cast<TY*>(y);
            if (act == Activation::Softmax)
                softmax_kernel<TX, TY>
                    <<<row_blocks(rows), row_threads(cols), 0, stream>>>(px, b, rows, cols, py);
            else
                bias_activation_kernel<TX, TY><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
                    act, px, b, n, unsigned(cols), py);
        });
    });
    MIXLAB_CUDA_CHECK_LAUNCH(act == Activation::Softmax ? "softmax_kernel"
                                                        : "bias_activation_kernel");
}

void launch_activation_backward(Activation act, const void* x, DType tx, const void* y, DType ty,
                                const void* dy, DType tdy, std::size_t rows, int cols, void* dx,
                                DType tdx, cudaStream_t stream)
{
    const std::size_t n = rows * std::size_t(cols);
    if (n == 0) return;
    const AnyConst ax{x, tx}, ay{y, ty};
    const AnyConst in = act == Activation::Gelu ? ax : ay;
    const auto aligned16 = [](const void* p) {
        return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    };
    // Only the activations that read an operand: under `none` y is not passed (null).
    const bool reads_operand = act == Activation::Relu || act == Activation::Sigmoid ||
                               act == Activation::Tanh || act == Activation::Gelu;
    const bool vector = reads_operand && in.p && in.t == tdy && tdy == tdx && aligned16(in.p) &&
                        aligned16(dy) && aligned16(dx);
    // Eights handled by the vector kernel; the scalar one takes the rest from `done` on.
    const std::size_t eights = vector ? n / 8 : 0, done = eights * 8;
    if (eights > 0) {
        dispatch_floating(tdy, "activation_backward", [&](auto tag) {
            using T = typename decltype(tag)::type;
            activation_backward_vec_kernel<T>
                <<<grid_for(eights, k_threads), k_threads, 0, stream>>>(
                    act, static_cast<const T*>(in.p), static_cast<const T*>(dy), eights,
                    static_cast<T*>(dx));
        });
        MIXLAB_CUDA_CHECK_LAUNCH("activation_backward_vec_kernel");
        if (done == n) return;
    }
    dispatch_floating(tdy, "activation_backward", [&](auto tag_dy) {
        using TDY = typename decltype(tag_dy)::type;
        dispatch_floating(tdx, "activation_backward", [&](auto tag_dx) {
            using TDX = typename decltype(tag_dx)::type;
            const TDY* pdy = static_cast<const TDY*>(dy);
            TDX* pdx = static_cast<TDX*>(dx);
            if (act == Activation::Softmax) {
                softmax_backward_kernel<TDY, TDX>
                    <<<row_blocks(rows), row_threads(cols), 0, stream>>>(ay, pdy, rows, cols, pdx);
            } else {
                const std::size_t elem = dtype_size(in.t);
                const AnyConst rest{in.p ? static_cast<const char*>(in.p) + done * elem : nullptr,
                                    in.t};
                activation_backward_kernel<TDY, TDX>
                    <<<grid_for(n - done, k_threads), k_threads, 0, stream>>>(act, rest, pdy + done,
                                                                              n - done, pdx + done);
            }
        });
    });
    MIXLAB_CUDA_CHECK_LAUNCH(act == Activation::Softmax ? "softmax_backward_kernel"
                                                        : "activation_backward_kernel");
}

} // namespace mixlab::cuda
