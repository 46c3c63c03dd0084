// Pooling kernels. Why not cuDNN: its max-pooling gradient does not document which of
// several equal maxima receives the gradient, and after a ReLU whole windows of zeros
// tie; the contract (and the CPU reference) give it to the first in row-major order.
// Forward: one thread per output element. Backward: one thread per input element
// gathering from every window that covers it (no atomics, no zeroing pass, and the
// windows are visited in the reference's order, so the fp32 sums agree bit for bit);
// when the windows tile the input exactly (a 2x2 pool with stride 2 on even sizes, a
// global pool), one thread per window writes all of its inputs instead. Index math is
// 32-bit whenever the tensors allow: 64-bit division costs far more than the loads.
#include "cuda/pool.cuh"

#include "cuda/cuda_check.h"
#include "cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

// Plain ints for the kernels (PoolGeometry has a defaulted operator==, fine on device,
// but a flat copy keeps the parameter block small and explicit).
struct PoolArgs {
    int batch, in_h, in_w, channels, out_h, out_w;
    int window_h, window_w, stride_h, stride_w, pad_h, pad_w;
};

PoolArgs args_of(const PoolGeometry& g)
{
    return PoolArgs{g.batch,    g.in_h,     g.in_w,     g.channels, g.out_h,  g.out_w,
                    g.window_h, g.window_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w};
}

// The part of window (p, q) inside the image: window rows [r_lo, r_hi), columns
// [s_lo, s_hi), the window's (0, 0) at input (h0, w0).
struct Window {
    int h0, w0, r_lo, r_hi, s_lo, s_hi;
    __device__ int count() const { return (r_hi - r_lo) * (s_hi - s_lo); }
};

__device__ __forceinline__ Window window_at(const PoolArgs& g, int p, int q)
{
    Window w;
    w.h0 = p * g.stride_h - g.pad_h;
    w.w0 = q * g.stride_w - g.pad_w;
    w.r_lo = max(0, -w.h0);
    w.r_hi = min(g.window_h, g.in_h - w.h0);
    w.s_lo = max(0, -w.w0);
    w.s_hi = min(g.window_w, g.in_w - w.w0);
    return w;
}

// Equal, or both NaN: a NaN input wins its window and propagates, as in the reference.
__device__ __forceinline__ bool same_value(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}

template <class T, class I>
__global__ void pool_forward_kernel(PoolMode mode, PoolArgs g, const T* x, I n, T* y)
{
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int c = int(i % I(g.channels));
        I t = i / I(g.channels);
        const int q = int(t % I(g.out_w));
        t /= I(g.out_w);
        const int p = int(t % I(g.out_h));
        const I b = t / I(g.out_h);
        const Window w = window_at(g, p, q);
        const T* image = x + b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(c);
        float acc = mode == PoolMode::Max ? -INFINITY : 0.0f;
        for (int r = w.r_lo; r < w.r_hi; ++r)
            for (int s = w.s_lo; s < w.s_hi; ++s) {
                const float v = to_f32(image[(I(w.h0 + r) * I(g.in_w) + I(w.w0 + s)) * I(g.channels)]);
                if (mode == PoolMode::Max) {
                    if (v > acc || isnan(v))
                        acc = v;
                } else {
                    acc += v;
                }
            }
        if (mode == PoolMode::Average)
            acc /= float(w.count());
        y[i] = from_f32<T>(acc);
    }
}

// The first outputs p whose window covers input row ih: p*stride - pad <= ih and
// ih < p*stride - pad + window.
__device__ __forceinline__ void covering(int i, int pad, int window, int stride, int out,
                                         int* lo, int* hi)
{
    const int a = i + pad - window + 1; // p*stride >= a
    *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    const int h = (i + pad) / stride;
    *hi = h < out - 1 ? h : out - 1;
}

template <class T, class I>
__global__ void pool_backward_kernel(PoolMode mode, PoolArgs g, const T* x, const T* y,
                                     const T* dy, I n, T* dx)
{
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int c = int(i % I(g.channels));
        I t = i / I(g.channels);
        const int iw = int(t % I(g.in_w));
        t /= I(g.in_w);
        const int ih = int(t % I(g.in_h));
        const I b = t / I(g.in_h);
        int p_lo, p_hi, q_lo, q_hi;
        covering(ih, g.pad_h, g.window_h, g.stride_h, g.out_h, &p_lo, &p_hi);
        covering(iw, g.pad_w, g.window_w, g.stride_w, g.out_w, &q_lo, &q_hi);
        const I out_base = b * I(g.out_h) * I(g.out_w) * I(g.channels) + I(c);
        const I in_base = b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(c);
        const float mine = mode == PoolMode::Max ? to_f32(x[i]) : 0.0f;
        float acc = 0.0f;
        for (int p = p_lo; p <= p_hi; ++p)
            for (int q = q_lo; q <= q_hi; ++q) {
                const Window w = window_at(g, p, q);
                const I o = out_base + (I(p) * I(g.out_w) + I(q)) * I(g.channels);
                if (mode == PoolMode::Average) {
                    acc += to_f32(dy[o]) / float(w.count());
                    continue;
                }
                const float best = to_f32(y[o]);
                if (!same_value(mine, best))
                    continue;
                // This input wins unless an earlier element of the window (row-major)
                // equals the output too.
                bool first = true;
                const int my_r = ih - w.h0, my_s = iw - w.w0;
                for (int r = w.r_lo; r <= my_r && first; ++r)
                    for (int s = w.s_lo; s < w.s_hi; ++s) {
                        if (r == my_r && s == my_s)
                            break;
                        const float v = to_f32(
                            x[in_base + (I(w.h0 + r) * I(g.in_w) + I(w.w0 + s)) * I(g.channels)]);
                        if (same_value(v, best)) {
                            first = false;
                            break;
                        }
                    }
                if (first)
                    acc += to_f32(dy[o]);
            }
        dx[i] = from_f32<T>(acc);
    }
}

// Windows that tile the input (stride = window, no padding, in = out * window): every
// input belongs to exactly one window, so the window's thread writes all of them: the
// gradient to the first maximum (zeros elsewhere), or dy / count to each.
template <class T, class I>
__global__ void pool_backward_tiled_kernel(PoolMode mode, PoolArgs g, const T* x, const T* y,
                                           const T* dy, I n, T* dx)
{
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int c = int(i % I(g.channels));
        I t = i / I(g.channels);
        const int q = int(t % I(g.out_w));
        t /= I(g.out_w);
        const int p = int(t % I(g.out_h));
        const I b = t / I(g.out_h);
        const I base = b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(c);
        const int h0 = p * g.window_h, w0 = q * g.window_w;
        const float grad = to_f32(dy[i]);
        if (mode == PoolMode::Average) {
            const T v = from_f32<T>(grad / float(g.window_h * g.window_w));
            for (int r = 0; r < g.window_h; ++r)
                for (int s = 0; s < g.window_w; ++s)
                    dx[base + (I(h0 + r) * I(g.in_w) + I(w0 + s)) * I(g.channels)] = v;
            continue;
        }
        const float best = to_f32(y[i]);
        bool found = false;
        for (int r = 0; r < g.window_h; ++r)
            for (int s = 0; s < g.window_w; ++s) {
                const I at = base + (I(h0 + r) * I(g.in_w) + I(w0 + s)) * I(g.channels);
                const bool win = !found && same_value(to_f32(x[at]), best);
                found = found || win;
                dx[at] = from_f32<T>(win ? grad : 0.0f);
            }
    }
}

bool tiles_exactly(const PoolGeometry& g)
{
    return g.stride_h == g.window_h && g.stride_w == g.window_w && g.pad_h == 0 &&
           g.pad_w == 0 && g.in_h == g.out_h * g.window_h && g.in_w == g.out_w * g.window_w;
}

// 32-bit indices when every offset of both tensors fits.
bool small(const PoolGeometry& g)
{
    const std::size_t in = std::size_t(g.batch) * g.in_h * g.in_w * g.channels;
    const std::size_t out = std::size_t(g.batch) * g.out_h * g.out_w * g.channels;
    return in < (std::size_t(1) << 31) && out < (std::size_t(1) << 31);
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_pool_forward(PoolMode mode, const PoolGeometry& g, const void* x, DType t, void* y,
                         cudaStream_t stream)
{
    const std::size_t n = std::size_t(g.batch) * g.out_h * g.out_w * g.channels;
    if (n == 0)
        return;
    const bool narrow = small(g);
    dispatch_floating(t, "pool_forward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        T* py = static_cast<T*>(y);
        const unsigned blocks = grid_for(n, k_threads);
        if (narrow)
            pool_forward_kernel<T, unsigned>
                <<<blocks, k_threads, 0, stream>>>(mode, args_of(g), px, unsigned(n), py);
        else
            pool_forward_kernel<T, std::size_t>
                <<<blocks, k_threads, 0, stream>>>(mode, args_of(g), px, n, py);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("pool_forward_kernel");
}

void launch_pool_backward(PoolMode mode, const PoolGeometry& g, const void* x, const void* y,
                          const void* dy, DType t, void* dx, cudaStream_t stream)
{
    const std::size_t n_in = std::size_t(g.batch) * g.in_h * g.in_w * g.channels;
    const std::size_t n_out = std::size_t(g.batch) * g.out_h * g.out_w * g.channels;
    if (n_in == 0)
        return;
    const bool narrow = small(g), tiled = tiles_exactly(g);
    dispatch_floating(t, "pool_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const T* py = static_cast<const T*>(y);
        const T* pdy = static_cast<const T*>(dy);
        T* pdx = static_cast<T*>(dx);
        const PoolArgs a = args_of(g);
        if (tiled) {
            const unsigned blocks = grid_for(n_out, k_threads);
            if (narrow)
                pool_backward_tiled_kernel<T, unsigned>
                    <<<blocks, k_threads, 0, stream>>>(mode, a, px, py, pdy, unsigned(n_out), pdx);
            else
                pool_backward_tiled_kernel<T, std::size_t>
                    <<<blocks, k_threads, 0, stream>>>(mode, a, px, py, pdy, n_out, pdx);
        } else {
            const unsigned blocks = grid_for(n_in, k_threads);
            if (narrow)
                pool_backward_kernel<T, unsigned>
                    <<<blocks, k_threads, 0, stream>>>(mode, a, px, py, pdy, unsigned(n_in), pdx);
            else
                pool_backward_kernel<T, std::size_t>
                    <<<blocks, k_threads, 0, stream>>>(mode, a, px, py, pdy, n_in, pdx);
        }
    });
    MIXLAB_CUDA_CHECK_LAUNCH(tiled ? "pool_backward_tiled_kernel" : "pool_backward_kernel");
}

} // namespace mixlab::cuda
