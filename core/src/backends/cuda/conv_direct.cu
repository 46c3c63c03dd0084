// Direct convolutions: one thread per output element of each direction, summing its
// terms in fp32 (no atomics, deterministic). Used only where cuDNN offers nothing.
#include "backends/cuda/conv_direct.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

struct ConvArgs {
    int batch, in_h, in_w, in_c, out_h, out_w, out_c;
    int kh, kw, sh, sw, ph, pw;
};

ConvArgs args_of(const ConvGeometry& g)
{
    return ConvArgs{g.batch,    g.in_h,     g.in_w,     g.in_c,     g.out_h, g.out_w, g.out_c,
                    g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w};
}

// y[n, p, q, k] = sum over r, s, c of x[n, p*sh - ph + r, q*sw - pw + s, c] w[k, r, s, c]
template <class T>
__global__ void conv_forward_kernel(ConvArgs g, const T* x, const T* w, std::size_t n, T* y)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const int k = int(i % unsigned(g.out_c));
        std::size_t t = i / unsigned(g.out_c);
        const int q = int(t % unsigned(g.out_w));
        t /= unsigned(g.out_w);
        const int p = int(t % unsigned(g.out_h));
        const std::size_t b = t / unsigned(g.out_h);
        float acc = 0.0f;
        for (int r = 0; r < g.kh; ++r) {
            const int ih = p * g.sh - g.ph + r;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int s = 0; s < g.kw; ++s) {
                const int iw = q * g.sw - g.pw + s;
                if (iw < 0 || iw >= g.in_w) continue;
                const T* xp = x + ((b * g.in_h + ih) * g.in_w + iw) * g.in_c;
                const T* wp = w + ((std::size_t(k) * g.kh + r) * g.kw + s) * g.in_c;
                for (int c = 0; c < g.in_c; ++c) acc += to_f32(xp[c]) * to_f32(wp[c]);
            }
        }
        y[i] = from_f32<T>(acc);
    }
}

// dx[n, h, v, c] = sum over the (p, q, k, r, s) with p*sh - ph + r = h, q*sw - pw + s = v
// of dy[n, p, q, k] w[k, r, s, c]
template <class T>
__global__ void conv_backward_data_kernel(ConvArgs g, const T* dy, const T* w, std::size_t n, T* dx)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const int c = int(i % unsigned(g.in_c));
        std::size_t t = i / unsigned(g.in_c);
        const int v = int(t % unsigned(g.in_w));
        t /= unsigned(g.in_w);
        const int h = int(t % unsigned(g.in_h));
        const std::size_t b = t / unsigned(g.in_h);
        float acc = 0.0f;
        for (int r = 0; r < g.kh; ++r) {
            const int ph = h + g.ph - r;
            if (ph < 0 || ph % g.sh != 0 || ph / g.sh >= g.out_h) continue;
            const int p = ph / g.sh;
            for (int s = 0; s < g.kw; ++s) {
                const int qw = v + g.pw - s;
                if (qw < 0 || qw % g.sw != 0 || qw / g.sw >= g.out_w) continue;
                const int q = qw / g.sw;
                const T* dyp = dy + ((b * g.out_h + p) * g.out_w + q) * g.out_c;
                for (int k = 0; k < g.out_c; ++k)
                    acc += to_f32(dyp[k]) *
                           to_f32(w[((std::size_t(k) * g.kh + r) * g.kw + s) * g.in_c + c]);
            }
        }
        dx[i] = from_f32<T>(acc);
    }
}

// dw[k, r, s, c] = sum over n, p, q of dy[n, p, q, k] x[n, p*sh - ph + r, q*sw - pw + s, c]
template <class T>
__global__ void conv_backward_filter_kernel(ConvArgs g, const T* x, const T* dy, std::size_t n,
                                            T* dw)
{
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x) {
        const int c = int(i % unsigned(g.in_c));
        std::size_t t = i / unsigned(g.in_c);
        const int s = int(t % unsigned(g.kw));
        t /= unsigned(g.kw);
        const int r = int(t % unsigned(g.kh));
        const int k = int(t / unsigned(g.kh));
        float acc = 0.0f;
        for (int b = 0; b < g.batch; ++b)
            for (int p = 0; p < g.out_h; ++p) {
                const int ih = p * g.sh - g.ph + r;
                if (ih < 0 || ih >= g.in_h) continue;
                for (int q = 0; q < g.out_w; ++q) {
                    const int iw = q * g.sw - g.pw + s;
                    if (iw < 0 || iw >= g.in_w) continue;
                    acc +=
                        to_f32(dy[((std::size_t(b) * g.out_h + p) * g.out_w + q) * g.out_c + k]) *
                        to_f32(x[((std::size_t(b) * g.in_h + ih) * g.in_w + iw) * g.in_c + c]);
                }
            }
        dw[i] = from_f32<T>(acc);
    }
}

constexpr unsigned k_threads = 256;

} // namespace

void launch_conv_direct_forward(const ConvGeometry& g, DType t, const void* x, const void* w,
                                void* y, cudaStream_t stream)
{
    const std::size_t n = std::size_t(g.batch) * g.out_h * g.out_w * g.out_c;
    dispatch_floating(t, "conv2d_forward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv_forward_kernel<T><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
            args_of(g), static_cast<const T*>(x), static_cast<const T*>(w), n, static_cast<T*>(y));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("conv_forward_kernel");
}

void launch_conv_direct_backward_data(const ConvGeometry& g, DType t, const void* dy, const void* w,
                                      void* dx, cudaStream_t stream)
{
    const std::size_t n = std::size_t(g.batch) * g.in_h * g.in_w * g.in_c;
    dispatch_floating(t, "conv2d_backward_data", [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv_backward_data_kernel<T><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
            args_of(g), static_cast<const T*>(dy), static_cast<const T*>(w), n,
            static_cast<T*>(dx));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("conv_backward_data_kernel");
}

void launch_conv_direct_backward_filter(const ConvGeometry& g, DType t, const void* x,
                                        const void* dy, void* dw, cudaStream_t stream)
{
    const std::size_t n = g.w_count();
    dispatch_floating(t, "conv2d_backward_filter", [&](auto tag) {
        using T = typename decltype(tag)::type;
        conv_backward_filter_kernel<T><<<grid_for(n, k_threads), k_threads, 0, stream>>>(
            args_of(g), static_cast<const T*>(x), static_cast<const T*>(dy), n,
            static_cast<T*>(dw));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("conv_backward_filter_kernel");
}

} // namespace mixlab::cuda
