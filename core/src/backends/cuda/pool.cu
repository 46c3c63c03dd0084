// Pooling kernels. Why not cuDNN: its max-pooling gradient does not document which of
// several equal maxima receives the gradient, and after a ReLU whole windows of zeros
// tie; the contract (and the CPU reference) give it to the first in row-major order.
// Every thread handles V adjacent channels of one pixel (16-byte loads and stores where
// the channel count and pointers allow, else V = 1). Forward: one thread per output
// pixel. Backward: one thread per input pixel gathering from every window that covers
// it (no atomics, no zeroing pass, and the windows are visited in the reference's order,
// so the fp32 sums agree bit for bit); when the windows tile the input exactly (a 2x2
// pool with stride 2 on even sizes, a global pool), one thread per window writes all of
// its inputs instead. Index math is 32-bit whenever the tensors allow: 64-bit division
// costs far more than the loads.
#include "backends/cuda/pool.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/resident_grid.cuh"

#include <initializer_list>

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
    return PoolArgs{g.batch,    g.in_h,     g.in_w,     g.channels, g.out_h, g.out_w,
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

// A pixel index (batch, row, column) from a flat index over pixels of (h, w).
template <class I>
struct Pixel {
    I b;
    int h, w;
};

template <class I>
__device__ __forceinline__ Pixel<I> pixel_of(I pix, int h, int w)
{
    Pixel<I> p;
    p.w = int(pix % I(w));
    const I t = pix / I(w);
    p.h = int(t % I(h));
    p.b = t / I(h);
    return p;
}

// n: output pixels times channel groups; item i covers channels [(i % groups) * V, +V)
// of output pixel i / groups, i.e. elements [i * V, i * V + V) of y.
template <class T, int V, class I>
__global__ void __launch_bounds__(256)
    pool_forward_kernel(PoolMode mode, PoolArgs g, const T* x, I n, T* y)
{
    const int groups = g.channels / V;
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int cg = int(i % I(groups));
        const Pixel<I> o = pixel_of<I>(i / I(groups), g.out_h, g.out_w);
        const Window w = window_at(g, o.h, o.w);
        const T* image = x + o.b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(cg * V);
        float acc[V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = mode == PoolMode::Max ? -INFINITY : 0.0f;
        for (int r = w.r_lo; r < w.r_hi; ++r)
            for (int s = w.s_lo; s < w.s_hi; ++s) {
                float v[V];
                load_vec<T, V>(image + (I(w.h0 + r) * I(g.in_w) + I(w.w0 + s)) * I(g.channels), v);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    if (mode == PoolMode::Max) {
                        if (v[j] > acc[j] || isnan(v[j])) acc[j] = v[j];
                    } else {
                        acc[j] += v[j];
                    }
                }
            }
        if (mode == PoolMode::Average) {
            const float count = float(w.count());
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] /= count;
        }
        store_vec<T, V>(y + i * I(V), acc);
    }
}

// The first outputs p whose window covers input row ih: p*stride - pad <= ih and
// ih < p*stride - pad + window.
__device__ __forceinline__ void covering(int i, int pad, int window, int stride, int out, int* lo,
                                         int* hi)
{
    const int a = i + pad - window + 1; // p*stride >= a
    *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    const int h = (i + pad) / stride;
    *hi = h < out - 1 ? h : out - 1;
}

// n: input pixels times channel groups; item i covers elements [i * V, i * V + V) of x
// and dx. The windows covering the pixel are visited in (p, q) order, as the reference
// adds them. For max pooling a channel takes a window's gradient when its x equals the
// window's y and no earlier element of the window (row-major) does.
template <class T, int V, class I>
__global__ void __launch_bounds__(256)
    pool_backward_kernel(PoolMode mode, PoolArgs g, const T* x, const T* y, const T* dy, I n, T* dx)
{
    const int groups = g.channels / V;
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int cg = int(i % I(groups));
        const Pixel<I> in = pixel_of<I>(i / I(groups), g.in_h, g.in_w);
        int p_lo, p_hi, q_lo, q_hi;
        covering(in.h, g.pad_h, g.window_h, g.stride_h, g.out_h, &p_lo, &p_hi);
        covering(in.w, g.pad_w, g.window_w, g.stride_w, g.out_w, &q_lo, &q_hi);
        const I out_base = in.b * I(g.out_h) * I(g.out_w) * I(g.channels) + I(cg * V);
        const I in_base = in.b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(cg * V);
        float mine[V], acc[V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = 0.0f;
        if (mode == PoolMode::Max) load_vec<T, V>(x + i * I(V), mine);
        for (int p = p_lo; p <= p_hi; ++p)
            for (int q = q_lo; q <= q_hi; ++q) {
                const Window w = window_at(g, p, q);
                const I o = out_base + (I(p) * I(g.out_w) + I(q)) * I(g.channels);
                float grad[V];
                if (mode == PoolMode::Average) {
                    load_vec<T, V>(dy + o, grad);
                    const float count = float(w.count());
#pragma unroll
                    for (int j = 0; j < V; ++j) acc[j] += grad[j] / count;
                    continue;
                }
                float best[V];
                load_vec<T, V>(y + o, best);
                bool win[V];
                bool any = false;
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    win[j] = same_value(mine[j], best[j]);
                    any = any || win[j];
                }
                // Earlier elements of the window equal to y take the gradient instead.
                const int my_r = in.h - w.h0, my_s = in.w - w.w0;
                for (int r = w.r_lo; r <= my_r && any; ++r) {
                    const int s_end = r == my_r ? my_s : w.s_hi;
                    for (int s = w.s_lo; s < s_end && any; ++s) {
                        float v[V];
                        load_vec<T, V>(x + in_base +
                                           (I(w.h0 + r) * I(g.in_w) + I(w.w0 + s)) * I(g.channels),
                                       v);
                        any = false;
#pragma unroll
                        for (int j = 0; j < V; ++j) {
                            win[j] = win[j] && !same_value(v[j], best[j]);
                            any = any || win[j];
                        }
                    }
                }
                if (!any) continue;
                load_vec<T, V>(dy + o, grad);
#pragma unroll
                for (int j = 0; j < V; ++j)
                    if (win[j]) acc[j] += grad[j];
            }
        store_vec<T, V>(dx + i * I(V), acc);
    }
}

// Windows that tile the input (stride = window, no padding, in = out * window): every
// input belongs to exactly one window, so the window's thread writes all of them: the
// gradient to the first maximum (zeros elsewhere), or dy / count to each. Each value is
// 0 + the gradient, as the reference's sum from zero gives (-0 becomes +0).
template <class T, int V, class I>
__global__ void __launch_bounds__(256)
    pool_backward_tiled_kernel(PoolMode mode, PoolArgs g, const T* x, const T* y, const T* dy, I n,
                               T* dx)
{
    const int groups = g.channels / V;
    for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n;
         i += I(gridDim.x) * I(blockDim.x)) {
        const int cg = int(i % I(groups));
        const Pixel<I> o = pixel_of<I>(i / I(groups), g.out_h, g.out_w);
        const I base = o.b * I(g.in_h) * I(g.in_w) * I(g.channels) + I(cg * V);
        const int h0 = o.h * g.window_h, w0 = o.w * g.window_w;
        float grad[V];
        load_vec<T, V>(dy + i * I(V), grad);
        if (mode == PoolMode::Average) {
            const float count = float(g.window_h * g.window_w);
            float v[V];
#pragma unroll
            for (int j = 0; j < V; ++j) v[j] = 0.0f + grad[j] / count;
            for (int r = 0; r < g.window_h; ++r)
                for (int s = 0; s < g.window_w; ++s)
                    store_vec<T, V>(dx + base + (I(h0 + r) * I(g.in_w) + I(w0 + s)) * I(g.channels),
                                    v);
            continue;
        }
        float best[V];
        load_vec<T, V>(y + i * I(V), best);
        bool found[V];
#pragma unroll
        for (int j = 0; j < V; ++j) found[j] = false;
        for (int r = 0; r < g.window_h; ++r)
            for (int s = 0; s < g.window_w; ++s) {
                const I at = base + (I(h0 + r) * I(g.in_w) + I(w0 + s)) * I(g.channels);
                float v[V];
                load_vec<T, V>(x + at, v);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    const bool win = !found[j] && same_value(v[j], best[j]);
                    found[j] = found[j] || win;
                    v[j] = win ? 0.0f + grad[j] : 0.0f;
                }
                store_vec<T, V>(dx + at, v);
            }
    }
}

bool tiles_exactly(const PoolGeometry& g)
{
    return g.stride_h == g.window_h && g.stride_w == g.window_w && g.pad_h == 0 && g.pad_w == 0 &&
           g.in_h == g.out_h * g.window_h && g.in_w == g.out_w * g.window_w;
}

// 32-bit indices when every offset of both tensors fits.
bool small(const PoolGeometry& g)
{
    const std::size_t in = std::size_t(g.batch) * g.in_h * g.in_w * g.channels;
    const std::size_t out = std::size_t(g.batch) * g.out_h * g.out_w * g.channels;
    return in < (std::size_t(1) << 31) && out < (std::size_t(1) << 31);
}

// 16-byte channel groups when the channel count and every pointer given allow.
template <class T>
bool vectorise(const PoolGeometry& g, std::initializer_list<const void*> ptrs)
{
    if (g.channels % vec16<T>() != 0) return false;
    for (const void* p : ptrs)
        if (p && !aligned16(p)) return false;
    return true;
}

constexpr unsigned k_threads = 256;
// Items per thread a launch aims for before it is capped at one resident wave.
constexpr std::size_t k_items_per_thread = 2;

template <auto Kernel>
unsigned pool_blocks(std::size_t items)
{
    return wave_blocks<Kernel>(items, k_threads * k_items_per_thread, k_threads);
}

template <class T, int V, class I>
void forward_v(PoolMode mode, const PoolGeometry& g, const T* x, T* y, cudaStream_t stream)
{
    const std::size_t n = std::size_t(g.batch) * g.out_h * g.out_w * (g.channels / V);
    pool_forward_kernel<T, V, I>
        <<<pool_blocks<pool_forward_kernel<T, V, I>>(n), k_threads, 0, stream>>>(mode, args_of(g),
                                                                                 x, I(n), y);
    MIXLAB_CUDA_CHECK_LAUNCH("pool_forward_kernel");
}

template <class T, int V, class I>
void backward_v(PoolMode mode, const PoolGeometry& g, const T* x, const T* y, const T* dy, T* dx,
                cudaStream_t stream)
{
    const PoolArgs a = args_of(g);
    if (tiles_exactly(g)) {
        const std::size_t n = std::size_t(g.batch) * g.out_h * g.out_w * (g.channels / V);
        pool_backward_tiled_kernel<T, V, I>
            <<<pool_blocks<pool_backward_tiled_kernel<T, V, I>>(n), k_threads, 0, stream>>>(
                mode, a, x, y, dy, I(n), dx);
        MIXLAB_CUDA_CHECK_LAUNCH("pool_backward_tiled_kernel");
    } else {
        const std::size_t n = std::size_t(g.batch) * g.in_h * g.in_w * (g.channels / V);
        pool_backward_kernel<T, V, I>
            <<<pool_blocks<pool_backward_kernel<T, V, I>>(n), k_threads, 0, stream>>>(mode, a, x, y,
                                                                                      dy, I(n), dx);
        MIXLAB_CUDA_CHECK_LAUNCH("pool_backward_kernel");
    }
}

} // namespace

void launch_pool_forward(PoolMode mode, const PoolGeometry& g, const void* x, DType t, void* y,
                         cudaStream_t stream)
{
    const std::size_t n = std::size_t(g.batch) * g.out_h * g.out_w * g.channels;
    if (n == 0) return;
    const bool narrow = small(g);
    dispatch_floating(t, "pool_forward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        T* py = static_cast<T*>(y);
        constexpr int V = vec16<T>();
        const bool vec = vectorise<T>(g, {px, py});
        if (vec && narrow)
            forward_v<T, V, unsigned>(mode, g, px, py, stream);
        else if (vec)
            forward_v<T, V, std::size_t>(mode, g, px, py, stream);
        else if (narrow)
            forward_v<T, 1, unsigned>(mode, g, px, py, stream);
        else
            forward_v<T, 1, std::size_t>(mode, g, px, py, stream);
    });
}

void launch_pool_backward(PoolMode mode, const PoolGeometry& g, const void* x, const void* y,
                          const void* dy, DType t, void* dx, cudaStream_t stream)
{
    const std::size_t n_in = std::size_t(g.batch) * g.in_h * g.in_w * g.channels;
    if (n_in == 0) return;
    const bool narrow = small(g);
    dispatch_floating(t, "pool_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const T* py = static_cast<const T*>(y);
        const T* pdy = static_cast<const T*>(dy);
        T* pdx = static_cast<T*>(dx);
        constexpr int V = vec16<T>();
        const bool vec = vectorise<T>(g, {px, py, pdy, pdx});
        if (vec && narrow)
            backward_v<T, V, unsigned>(mode, g, px, py, pdy, pdx, stream);
        else if (vec)
            backward_v<T, V, std::size_t>(mode, g, px, py, pdy, pdx, stream);
        else if (narrow)
            backward_v<T, 1, unsigned>(mode, g, px, py, pdy, pdx, stream);
        else
            backward_v<T, 1, std::size_t>(mode, g, px, py, pdy, pdx, stream);
    });
}

} // namespace mixlab::cuda
