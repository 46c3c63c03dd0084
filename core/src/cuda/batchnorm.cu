// Batch-norm kernels. Why our own and not cuDNN's legacy batch norm: cuDNN rejects an
// epsilon below CUDNN_BN_MIN_EPSILON (1e-5) while a model spec may ask for any positive
// one, its bf16 support in the legacy API varies by version, and its reductions are not
// promised to be deterministic. These follow the reference's formulas: per-channel
// statistics through the shared column reduction (column_reduce.cuh: 16-byte loads, row
// slices across blocks, partials added in slice order in double), and element-wise
// passes in which every thread keeps one group of adjacent channels, so the
// per-channel factors sit in registers and loads and stores are 16 bytes wide.
#include "cuda/batchnorm.cuh"

#include "cuda/column_reduce.cuh"
#include "cuda/cuda_check.h"
#include "cuda/device_types.cuh"

#include <initializer_list>

namespace mixlab::cuda {

namespace {

// One thread per channel, in double as the reference: statistics, running averages.
template <class T>
__global__ void bn_train_finish_kernel(const float* p1, const float* p2, unsigned splits,
                                       std::size_t ld, const T* x, std::size_t rows,
                                       int channels, float momentum, float epsilon,
                                       float* running_mean, float* running_var,
                                       float* saved_mean, float* saved_inv_std)
{
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= channels)
        return;
    double s1 = 0.0, s2 = 0.0;
    for (unsigned k = 0; k < splits; ++k) {
        s1 += double(p1[k * ld + c]);
        s2 += double(p2[k * ld + c]);
    }
    const double n = double(rows);
    const double d = s1 / n; // mean - K, K = x[row 0] (the reduction's shift)
    const double mean = double(to_f32(x[c])) + d;
    double var = s2 / n - d * d; // biased: what normalises this batch
    if (var < 0.0)
        var = 0.0;
    saved_mean[c] = float(mean);
    saved_inv_std[c] = float(1.0 / sqrt(var + double(epsilon)));
    // PyTorch's convention: running = (1 - momentum) * running + momentum * batch, with the
    // unbiased variance (rows > 1 is checked on the host).
    const double m = double(momentum);
    running_mean[c] = float((1.0 - m) * double(running_mean[c]) + m * mean);
    running_var[c] = float((1.0 - m) * double(running_var[c]) + m * (var * n / (n - 1.0)));
}

// Gradients: dscale, dshift, and the two means dx needs (coef[c], coef[channels + c]).
__global__ void bn_backward_finish_kernel(const float* p1, const float* p2, unsigned splits,
                                          std::size_t ld, std::size_t rows, int channels,
                                          float* dscale, float* dshift, float* coef)
{
    const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (c >= channels)
        return;
    double s1 = 0.0, s2 = 0.0;
    for (unsigned k = 0; k < splits; ++k) {
        s1 += double(p1[k * ld + c]);
        s2 += double(p2[k * ld + c]);
    }
    dshift[c] = float(s1);
    dscale[c] = float(s2);
    coef[c] = float(s1 / double(rows));
    coef[channels + c] = float(s2 / double(rows));
}

// The element-wise passes walk groups of V adjacent elements: thread t owns channel
// group t % groups_per_row and strides by a multiple of groups_per_row (the launch has
// at least that many threads), so its channels never change.
struct GroupWalk {
    std::size_t start, stride;
    int c0; // first channel of the group
    __device__ bool active() const { return start < stride; }
};

template <int V>
__device__ __forceinline__ GroupWalk group_walk(int channels)
{
    const std::size_t groups_per_row = std::size_t(channels / V);
    const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
    GroupWalk w;
    w.start = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    w.stride = threads / groups_per_row * groups_per_row;
    w.c0 = int(w.start % groups_per_row) * V;
    return w;
}

// y = (x - mean) * inv_std * scale + shift in this order, each step rounded (the _rn
// intrinsics forbid fusing into FMAs): the reference's fp32 arithmetic exactly.
__device__ __forceinline__ float normalise(float x, float mean, float inv_std, float scale,
                                          float shift)
{
    return __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, mean), inv_std), scale), shift);
}

// Training (inv_std given) or evaluation (var given: inv_std = 1 / sqrt(var + eps), as the
// reference rounds it in fp32).
template <class T, int V, bool Eval>
__global__ void bn_normalise_kernel(const T* x, std::size_t groups, int channels,
                                    const float* mean, const float* inv_std_or_var,
                                    float epsilon, const float* scale, const float* shift, T* y)
{
    const GroupWalk w = group_walk<V>(channels);
    if (!w.active())
        return;
    float m[V], s[V], g[V], b[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int c = w.c0 + j;
        m[j] = mean[c];
        s[j] = Eval ? 1.0f / sqrtf(inv_std_or_var[c] + epsilon) : inv_std_or_var[c];
        g[j] = scale[c];
        b[j] = shift[c];
    }
#pragma unroll 4
    for (std::size_t k = w.start; k < groups; k += w.stride) {
        float v[V];
        load_vec<T, V>(x + k * V, v);
#pragma unroll
        for (int j = 0; j < V; ++j)
            v[j] = normalise(v[j], m[j], s[j], g[j], b[j]);
        store_vec<T, V>(y + k * V, v);
    }
}

// dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)), each step rounded.
template <class T, int V>
__global__ void bn_backward_dx_kernel(const T* x, const T* dy, std::size_t groups, int channels,
                                      const float* mean, const float* inv_std, const float* scale,
                                      const float* coef, T* dx)
{
    const GroupWalk w = group_walk<V>(channels);
    if (!w.active())
        return;
    float m[V], s[V], gain[V], mdy[V], mdyx[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int c = w.c0 + j;
        m[j] = mean[c];
        s[j] = inv_std[c];
        gain[j] = __fmul_rn(scale[c], s[j]);
        mdy[j] = coef[c];
        mdyx[j] = coef[channels + c];
    }
#pragma unroll 4
    for (std::size_t k = w.start; k < groups; k += w.stride) {
        float xv[V], g[V];
        load_vec<T, V>(x + k * V, xv);
        load_vec<T, V>(dy + k * V, g);
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float xhat = __fmul_rn(__fsub_rn(xv[j], m[j]), s[j]);
            const float centred = __fsub_rn(__fsub_rn(g[j], mdy[j]), __fmul_rn(xhat, mdyx[j]));
            g[j] = __fmul_rn(gain[j], centred);
        }
        store_vec<T, V>(dx + k * V, g);
    }
}

constexpr unsigned k_threads = 256;

// Enough threads for the element groups, never fewer than one per group of a row.
unsigned walk_blocks(std::size_t groups, std::size_t groups_per_row)
{
    const unsigned by_n = grid_for(groups, k_threads, 4096);
    const unsigned by_c = unsigned((groups_per_row + k_threads - 1) / k_threads);
    return by_n > by_c ? by_n : by_c;
}

unsigned channel_blocks(int channels)
{
    return unsigned((channels + int(k_threads) - 1) / int(k_threads));
}

// 16-byte groups when the channel count and every pointer allow, else single elements.
template <class T>
int element_group(int channels, std::initializer_list<const void*> ptrs)
{
    if (channels % vec16<T>() != 0)
        return 1;
    for (const void* p : ptrs)
        if (!aligned16(p))
            return 1;
    return vec16<T>();
}

template <class T, bool Eval>
void normalise_pass(const BatchNormParams& p, const T* x, const float* mean,
                    const float* inv_std_or_var, float epsilon, T* y, cudaStream_t stream)
{
    const std::size_t n = p.rows * std::size_t(p.channels);
    if (element_group<T>(p.channels, {x, y}) == vec16<T>()) {
        constexpr int V = vec16<T>();
        bn_normalise_kernel<T, V, Eval>
            <<<walk_blocks(n / V, std::size_t(p.channels / V)), k_threads, 0, stream>>>(
                x, n / V, p.channels, mean, inv_std_or_var, epsilon, p.scale, p.shift, y);
    } else {
        bn_normalise_kernel<T, 1, Eval>
            <<<walk_blocks(n, std::size_t(p.channels)), k_threads, 0, stream>>>(
                x, n, p.channels, mean, inv_std_or_var, epsilon, p.scale, p.shift, y);
    }
    MIXLAB_CUDA_CHECK_LAUNCH("bn_normalise_kernel");
}

} // namespace

void launch_batchnorm_train(const BatchNormParams& p, const void* x, DType t, float momentum,
                            float epsilon, float* running_mean, float* running_var,
                            float* saved_mean, float* saved_inv_std, void* y,
                            ReduceScratch& scratch, cudaStream_t stream)
{
    dispatch_floating(t, "batchnorm_forward_train", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const ColumnSplit s = column_split_for<T>(px, nullptr, p.rows, std::size_t(p.channels));
        float* p1 = scratch.get(2 * s.partials());
        float* p2 = p1 + s.partials();
        launch_column_partials<Sums::Statistics, T>(px, nullptr, p.rows, p.channels, nullptr,
                                                    nullptr, p1, p2, AnyMut{}, s, stream);
        MIXLAB_CUDA_CHECK_LAUNCH("column_partials_kernel");
        bn_train_finish_kernel<T><<<channel_blocks(p.channels), k_threads, 0, stream>>>(
            p1, p2, s.splits, s.ld, px, p.rows, p.channels, momentum, epsilon, running_mean,
            running_var, saved_mean, saved_inv_std);
        MIXLAB_CUDA_CHECK_LAUNCH("bn_train_finish_kernel");
        normalise_pass<T, false>(p, px, saved_mean, saved_inv_std, 0.0f, static_cast<T*>(y),
                                 stream);
    });
}

void launch_batchnorm_eval(const BatchNormParams& p, const void* x, DType t,
                           const float* running_mean, const float* running_var, float epsilon,
                           void* y, cudaStream_t stream)
{
    dispatch_floating(t, "batchnorm_forward_eval", [&](auto tag) {
        using T = typename decltype(tag)::type;
        normalise_pass<T, true>(p, static_cast<const T*>(x), running_mean, running_var, epsilon,
                                static_cast<T*>(y), stream);
    });
}

void launch_batchnorm_backward(const BatchNormParams& p, const void* x, const void* dy, DType t,
                               const float* saved_mean, const float* saved_inv_std, void* dx,
                               float* dscale, float* dshift, ReduceScratch& scratch,
                               cudaStream_t stream)
{
    dispatch_floating(t, "batchnorm_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const T* pdy = static_cast<const T*>(dy);
        T* pdx = static_cast<T*>(dx);
        const ColumnSplit s = column_split_for<T>(px, pdy, p.rows, std::size_t(p.channels));
        float* p1 = scratch.get(2 * s.partials() + 2 * std::size_t(p.channels));
        float* p2 = p1 + s.partials();
        float* coef = p2 + s.partials();
        launch_column_partials<Sums::Gradients, T>(px, pdy, p.rows, p.channels, saved_mean,
                                                   saved_inv_std, p1, p2, AnyMut{}, s, stream);
        MIXLAB_CUDA_CHECK_LAUNCH("column_partials_kernel");
        bn_backward_finish_kernel<<<channel_blocks(p.channels), k_threads, 0, stream>>>(
            p1, p2, s.splits, s.ld, p.rows, p.channels, dscale, dshift, coef);
        MIXLAB_CUDA_CHECK_LAUNCH("bn_backward_finish_kernel");
        const std::size_t n = p.rows * std::size_t(p.channels);
        if (element_group<T>(p.channels, {px, pdy, pdx}) == vec16<T>()) {
            constexpr int V = vec16<T>();
            bn_backward_dx_kernel<T, V>
                <<<walk_blocks(n / V, std::size_t(p.channels / V)), k_threads, 0, stream>>>(
                    px, pdy, n / V, p.channels, saved_mean, saved_inv_std, p.scale, coef, pdx);
        } else {
            bn_backward_dx_kernel<T, 1>
                <<<walk_blocks(n, std::size_t(p.channels)), k_threads, 0, stream>>>(
                    px, pdy, n, p.channels, saved_mean, saved_inv_std, p.scale, coef, pdx);
        }
        MIXLAB_CUDA_CHECK_LAUNCH("bn_backward_dx_kernel");
    });
}

} // namespace mixlab::cuda
