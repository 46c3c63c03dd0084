// Batch-norm kernels. Why our own and not cuDNN's legacy batch norm: cuDNN rejects an
// epsilon below CUDNN_BN_MIN_EPSILON (1e-5) while a model spec may ask for any positive
// one, its bf16 support in the legacy API varies by version, and its reductions are not
// promised to be deterministic. These follow the reference's formulas. Statistics take
// two launches: a partials kernel over row slices (grid of about k_bn_blocks blocks, a
// few waves on any current GPU; each thread sums a short run of rows in fp32, the block
// adds its lanes in double), then a finishing kernel spread over channel groups whose
// blocks add the slices' partials in a fixed tree. The split depends on the shape alone,
// so the sums are the same bits on every run and every GPU. The element-wise passes give
// every thread several 16-byte groups of one channel group: the per-channel factors sit
// in registers and the group loads are issued together. A fused ReLU costs no pass of
// its own: forward it clamps y before the store; backward both passes that read dy also
// read y and zero dy where y <= 0 (one more 16-byte load per group, no extra write).
#include "backends/cuda/batchnorm.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"
#include "backends/cuda/resident_grid.cuh"

#include <initializer_list>

namespace mixlab::cuda {

namespace {

constexpr unsigned k_threads = 256;
// Partials-kernel blocks to aim for: about four per multiprocessor on a 132-SM H200,
// enough loads in flight to keep HBM busy; more would only lengthen the finishing sums.
constexpr std::size_t k_bn_blocks = 256;
// Row groups each thread of a partials or element-wise kernel loads before using them.
constexpr int k_batch = 4;
// The finishing kernels: channels per block (eight doubles: two 32-byte sectors per
// partial row) and the threads that share one channel's partials.
constexpr int k_finish_channels = 8;
constexpr int k_finish_parts = int(k_threads) / k_finish_channels;

template <class T, int V>
__device__ __forceinline__ VecT<T, V> load_raw(const T* p)
{
    return *reinterpret_cast<const VecT<T, V>*>(p);
}

// Statistics (Grad false): x - K and (x - K)^2, K = x[row 0] (a shift that keeps
// E[x^2] - mean^2 free of cancellation). Gradients: dy and dy * xhat, xhat = (x - mean) *
// inv_std, with dy masked to y > 0 under Relu (y read only then). Block:
// k_reduce_threads threads as tile_vcols vector columns times `lanes` rows; grid (tiles,
// splits). p1/p2: (splits, ld) partials in double.
template <class T, int V, bool Grad, bool Relu>
__global__ void __launch_bounds__(k_reduce_threads)
    bn_partials_kernel(const T* x, const T* y, const T* dy, std::size_t rows, int cols,
                       int tile_vcols, int lanes, std::size_t rows_per_split, std::size_t ld,
                       const float* mean, const float* inv_std, double* p1, double* p2)
{
    __shared__ double s1[k_reduce_threads * V];
    __shared__ double s2[k_reduce_threads * V];
    const int t = int(threadIdx.x);
    const int vc = t % tile_vcols, lane = t / tile_vcols;
    const int gvc = int(blockIdx.x) * tile_vcols + vc;
    const bool in_block = lane < lanes;
    const bool active = in_block && gvc * V < cols;
    float a1[V], a2[V];
#pragma unroll
    for (int j = 0; j < V; ++j) a1[j] = a2[j] = 0.0f;
    if (active) {
        const int c0 = gvc * V;
        float k[V], m[V], s[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
            k[j] = Grad ? 0.0f : to_f32(x[c0 + j]);
            m[j] = Grad ? mean[c0 + j] : 0.0f;
            s[j] = Grad ? inv_std[c0 + j] : 0.0f;
        }
        const std::size_t begin = std::size_t(blockIdx.y) * rows_per_split;
        const std::size_t end = begin + rows_per_split < rows ? begin + rows_per_split : rows;
        const std::size_t step = std::size_t(lanes);
        for (std::size_t r0 = begin + std::size_t(lane); r0 < end; r0 += k_batch * step) {
            VecT<T, V> xv[k_batch], gv[k_batch], yv[k_batch];
#pragma unroll
            for (int u = 0; u < k_batch; ++u) {
                const std::size_t r = r0 + std::size_t(u) * step;
                if (r < end) {
                    xv[u] = load_raw<T, V>(x + r * std::size_t(cols) + c0);
                    if constexpr (Grad) gv[u] = load_raw<T, V>(dy + r * std::size_t(cols) + c0);
                    if constexpr (Relu) yv[u] = load_raw<T, V>(y + r * std::size_t(cols) + c0);
                }
            }
#pragma unroll
            for (int u = 0; u < k_batch; ++u) {
                if (r0 + std::size_t(u) * step >= end) break;
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    const float v = to_f32(xv[u].v[j]);
                    if constexpr (Grad) {
                        float g = to_f32(gv[u].v[j]);
                        if constexpr (Relu) // activation_backward's rule: dy where y > 0
                            g = to_f32(yv[u].v[j]) > 0.0f ? g : 0.0f;
                        const float xhat = (v - m[j]) * s[j];
                        a1[j] += g;
                        a2[j] += g * xhat;
                    } else {
                        const float d = v - k[j];
                        a1[j] += d;
                        a2[j] += d * d;
                    }
                }
            }
        }
    }
    // The lanes' sums per column, added in lane order in double (deterministic).
    const int tile_cols = tile_vcols * V;
    if (in_block) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
            s1[lane * tile_cols + vc * V + j] = double(a1[j]);
            s2[lane * tile_cols + vc * V + j] = double(a2[j]);
        }
    }
    __syncthreads();
    for (int col = t; col < tile_cols; col += int(blockDim.x)) {
        double r1 = 0.0, r2 = 0.0;
        for (int l = 0; l < lanes; ++l) {
            r1 += s1[l * tile_cols + col];
            r2 += s2[l * tile_cols + col];
        }
        const std::size_t at =
            std::size_t(blockIdx.y) * ld + std::size_t(blockIdx.x) * tile_cols + col;
        p1[at] = r1;
        p2[at] = r2;
    }
}

// The slices' partials of channel c = blockIdx.x * k_finish_channels + threadIdx.x %
// k_finish_channels: thread part p adds slices p, p + k_finish_parts, ... in order, then
// the part sums are added in part order. True (with the totals) for the one thread per
// channel that finishes it.
__device__ __forceinline__ bool combine_partials(const double* p1, const double* p2,
                                                 unsigned splits, std::size_t ld, int channels,
                                                 int* channel, double* sum1, double* sum2)
{
    __shared__ double sh1[k_threads], sh2[k_threads];
    const int j = int(threadIdx.x) % k_finish_channels, part = int(threadIdx.x) / k_finish_channels;
    const int c = int(blockIdx.x) * k_finish_channels + j;
    double a1 = 0.0, a2 = 0.0;
    if (c < channels) {
#pragma unroll 8
        for (unsigned k = unsigned(part); k < splits; k += unsigned(k_finish_parts)) {
            a1 += p1[k * ld + std::size_t(c)];
            a2 += p2[k * ld + std::size_t(c)];
        }
    }
    sh1[threadIdx.x] = a1;
    sh2[threadIdx.x] = a2;
    __syncthreads();
    if (part != 0 || c >= channels) return false;
    double s1 = 0.0, s2 = 0.0;
#pragma unroll 8
    for (int q = 0; q < k_finish_parts; ++q) {
        s1 += sh1[q * k_finish_channels + j];
        s2 += sh2[q * k_finish_channels + j];
    }
    *channel = c;
    *sum1 = s1;
    *sum2 = s2;
    return true;
}

// Statistics and running averages, in double as the reference.
template <class T>
__global__ void __launch_bounds__(k_threads)
    bn_train_finish_kernel(const double* p1, const double* p2, unsigned splits, std::size_t ld,
                           const T* x, std::size_t rows, int channels, float momentum,
                           float epsilon, float* running_mean, float* running_var,
                           float* saved_mean, float* saved_inv_std)
{
    int c = 0;
    double s1 = 0.0, s2 = 0.0;
    if (!combine_partials(p1, p2, splits, ld, channels, &c, &s1, &s2)) return;
    const double n = double(rows);
    const double d = s1 / n; // mean - K, K = x[row 0] (the reduction's shift)
    const double mean = double(to_f32(x[c])) + d;
    double var = s2 / n - d * d; // biased: what normalises this batch
    if (var < 0.0) var = 0.0;
    saved_mean[c] = float(mean);
    saved_inv_std[c] = float(1.0 / sqrt(var + double(epsilon)));
    // PyTorch's convention: running = (1 - momentum) * running + momentum * batch, with the
    // unbiased variance (rows > 1 is checked on the host).
    const double m = double(momentum);
    running_mean[c] = float((1.0 - m) * double(running_mean[c]) + m * mean);
    running_var[c] = float((1.0 - m) * double(running_var[c]) + m * (var * n / (n - 1.0)));
}

// Gradients: dscale, dshift, and the two means dx needs (coef[c], coef[channels + c]).
__global__ void __launch_bounds__(k_threads)
    bn_backward_finish_kernel(const double* p1, const double* p2, unsigned splits, std::size_t ld,
                              std::size_t rows, int channels, float* dscale, float* dshift,
                              float* coef)
{
    int c = 0;
    double s1 = 0.0, s2 = 0.0;
    if (!combine_partials(p1, p2, splits, ld, channels, &c, &s1, &s2)) return;
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
// reference rounds it in fp32). Each round loads k_batch groups, then normalises them.
// Relu clamps the value rounded to T, as a separate pass over the stored y would (so a
// value that rounds to -0 stays -0, bit for bit the unfused result).
template <class T, int V, bool Eval, bool Relu>
__global__ void __launch_bounds__(k_threads)
    bn_normalise_kernel(const T* x, std::size_t groups, int channels, const float* mean,
                        const float* inv_std_or_var, float epsilon, const float* scale,
                        const float* shift, T* y)
{
    const GroupWalk w = group_walk<V>(channels);
    if (!w.active()) return;
    float m[V], s[V], g[V], b[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const int c = w.c0 + j;
        m[j] = mean[c];
        s[j] = Eval ? 1.0f / sqrtf(inv_std_or_var[c] + epsilon) : inv_std_or_var[c];
        g[j] = scale[c];
        b[j] = shift[c];
    }
    for (std::size_t k0 = w.start; k0 < groups; k0 += k_batch * w.stride) {
        VecT<T, V> in[k_batch];
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::size_t k = k0 + std::size_t(u) * w.stride;
            if (k < groups) in[u] = load_raw<T, V>(x + k * V);
        }
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::size_t k = k0 + std::size_t(u) * w.stride;
            if (k >= groups) break;
            float v[V];
#pragma unroll
            for (int j = 0; j < V; ++j) {
                v[j] = normalise(to_f32(in[u].v[j]), m[j], s[j], g[j], b[j]);
                if constexpr (Relu) {
                    const float r = to_f32(from_f32<T>(v[j]));
                    v[j] = r < 0.0f ? 0.0f : r;
                }
            }
            store_vec<T, V>(y + k * V, v);
        }
    }
}

// dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)), each step rounded;
// dy masked to y > 0 under Relu.
template <class T, int V, bool Relu>
__global__ void __launch_bounds__(k_threads)
    bn_backward_dx_kernel(const T* x, const T* y, const T* dy, std::size_t groups, int channels,
                          const float* mean, const float* inv_std, const float* scale,
                          const float* coef, T* dx)
{
    const GroupWalk w = group_walk<V>(channels);
    if (!w.active()) return;
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
    for (std::size_t k0 = w.start; k0 < groups; k0 += k_batch * w.stride) {
        VecT<T, V> xin[k_batch], gin[k_batch], yin[k_batch];
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::size_t k = k0 + std::size_t(u) * w.stride;
            if (k < groups) {
                xin[u] = load_raw<T, V>(x + k * V);
                gin[u] = load_raw<T, V>(dy + k * V);
                if constexpr (Relu) yin[u] = load_raw<T, V>(y + k * V);
            }
        }
#pragma unroll
        for (int u = 0; u < k_batch; ++u) {
            const std::size_t k = k0 + std::size_t(u) * w.stride;
            if (k >= groups) break;
            float out[V];
#pragma unroll
            for (int j = 0; j < V; ++j) {
                const float xhat = __fmul_rn(__fsub_rn(to_f32(xin[u].v[j]), m[j]), s[j]);
                float g = to_f32(gin[u].v[j]);
                if constexpr (Relu) g = to_f32(yin[u].v[j]) > 0.0f ? g : 0.0f;
                const float centred = __fsub_rn(__fsub_rn(g, mdy[j]), __fmul_rn(xhat, mdyx[j]));
                out[j] = __fmul_rn(gain[j], centred);
            }
            store_vec<T, V>(dx + k * V, out);
        }
    }
}

// One resident wave of Kernel (fewer blocks when the groups need fewer), and never
// fewer threads than one per group of a row.
template <auto Kernel>
unsigned walk_blocks(std::size_t groups, std::size_t groups_per_row)
{
    const unsigned by_n = wave_blocks<Kernel>(groups, std::size_t(k_threads) * k_batch, k_threads);
    const unsigned by_c = unsigned((groups_per_row + k_threads - 1) / k_threads);
    return by_n > by_c ? by_n : by_c;
}

unsigned finish_blocks(int channels)
{
    return unsigned((channels + k_finish_channels - 1) / k_finish_channels);
}

// 16-byte groups when the channel count and every pointer allow, else single elements.
template <class T>
int element_group(int channels, std::initializer_list<const void*> ptrs)
{
    if (channels % vec16<T>() != 0) return 1;
    for (const void* p : ptrs)
        if (!aligned16(p)) return 1;
    return vec16<T>();
}

// The slices for the statistics of (rows, channels): partials in double, so a scratch
// array of floats holds half as many.
template <class T>
ColumnSplit statistics_split(const T* x, const T* dy, const T* y, std::size_t rows, int channels)
{
    const int v = element_group<T>(channels, {x, dy ? dy : x, y ? y : x});
    return plan_column_split(rows, std::size_t(channels), v, k_bn_blocks,
                             k_max_partials_per_array / 2);
}

template <class T, bool Grad, bool Relu>
void launch_partials(const T* x, const T* y, const T* dy, std::size_t rows, int channels,
                     const float* mean, const float* inv_std, double* p1, double* p2,
                     const ColumnSplit& s, cudaStream_t stream)
{
    const dim3 grid(s.tiles, s.splits);
    if (s.v == vec16<T>())
        bn_partials_kernel<T, vec16<T>(), Grad, Relu>
            <<<grid, k_reduce_threads, 0, stream>>>(x, y, dy, rows, channels, s.tile_vcols, s.lanes,
                                                    s.rows_per_split, s.ld, mean, inv_std, p1, p2);
    else
        bn_partials_kernel<T, 1, Grad, Relu>
            <<<grid, k_reduce_threads, 0, stream>>>(x, y, dy, rows, channels, s.tile_vcols, s.lanes,
                                                    s.rows_per_split, s.ld, mean, inv_std, p1, p2);
    MIXLAB_CUDA_CHECK_LAUNCH("bn_partials_kernel");
}

template <class T, int V, bool Eval, bool Relu>
void normalise_pass_v(const BatchNormParams& p, const T* x, const float* mean,
                      const float* inv_std_or_var, float epsilon, T* y, cudaStream_t stream)
{
    const std::size_t groups = p.rows * std::size_t(p.channels) / V;
    const unsigned blocks =
        walk_blocks<bn_normalise_kernel<T, V, Eval, Relu>>(groups, std::size_t(p.channels / V));
    bn_normalise_kernel<T, V, Eval, Relu><<<blocks, k_threads, 0, stream>>>(
        x, groups, p.channels, mean, inv_std_or_var, epsilon, p.scale, p.shift, y);
    MIXLAB_CUDA_CHECK_LAUNCH("bn_normalise_kernel");
}

template <class T, bool Eval, bool Relu>
void normalise_pass_r(const BatchNormParams& p, const T* x, const float* mean,
                      const float* inv_std_or_var, float epsilon, T* y, cudaStream_t stream)
{
    if (element_group<T>(p.channels, {x, y}) == vec16<T>())
        normalise_pass_v<T, vec16<T>(), Eval, Relu>(p, x, mean, inv_std_or_var, epsilon, y, stream);
    else
        normalise_pass_v<T, 1, Eval, Relu>(p, x, mean, inv_std_or_var, epsilon, y, stream);
}

template <class T, bool Eval>
void normalise_pass(const BatchNormParams& p, const T* x, const float* mean,
                    const float* inv_std_or_var, float epsilon, T* y, cudaStream_t stream)
{
    if (p.relu)
        normalise_pass_r<T, Eval, true>(p, x, mean, inv_std_or_var, epsilon, y, stream);
    else
        normalise_pass_r<T, Eval, false>(p, x, mean, inv_std_or_var, epsilon, y, stream);
}

template <class T, int V, bool Relu>
void dx_pass_v(const BatchNormParams& p, const T* x, const T* y, const T* dy, const float* mean,
               const float* inv_std, const float* coef, T* dx, cudaStream_t stream)
{
    const std::size_t groups = p.rows * std::size_t(p.channels) / V;
    const unsigned blocks =
        walk_blocks<bn_backward_dx_kernel<T, V, Relu>>(groups, std::size_t(p.channels / V));
    bn_backward_dx_kernel<T, V, Relu><<<blocks, k_threads, 0, stream>>>(
        x, y, dy, groups, p.channels, mean, inv_std, p.scale, coef, dx);
    MIXLAB_CUDA_CHECK_LAUNCH("bn_backward_dx_kernel");
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
        const ColumnSplit s = statistics_split<T>(px, nullptr, nullptr, p.rows, p.channels);
        double* p1 = reinterpret_cast<double*>(scratch.get(4 * s.partials()));
        double* p2 = p1 + s.partials();
        launch_partials<T, false, false>(px, nullptr, nullptr, p.rows, p.channels, nullptr, nullptr,
                                         p1, p2, s, stream);
        bn_train_finish_kernel<T><<<finish_blocks(p.channels), k_threads, 0, stream>>>(
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

void launch_batchnorm_backward(const BatchNormParams& p, const void* x, const void* y,
                               const void* dy, DType t, const float* saved_mean,
                               const float* saved_inv_std, void* dx, float* dscale, float* dshift,
                               ReduceScratch& scratch, cudaStream_t stream)
{
    dispatch_floating(t, "batchnorm_backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* px = static_cast<const T*>(x);
        const T* py = p.relu ? static_cast<const T*>(y) : nullptr;
        const T* pdy = static_cast<const T*>(dy);
        T* pdx = static_cast<T*>(dx);
        const ColumnSplit s = statistics_split<T>(px, pdy, py, p.rows, p.channels);
        // Two arrays of double partials (four floats per partial), then the two means.
        float* base = scratch.get(4 * s.partials() + 2 * std::size_t(p.channels));
        double* p1 = reinterpret_cast<double*>(base);
        double* p2 = p1 + s.partials();
        float* coef = base + 4 * s.partials();
        if (p.relu)
            launch_partials<T, true, true>(px, py, pdy, p.rows, p.channels, saved_mean,
                                           saved_inv_std, p1, p2, s, stream);
        else
            launch_partials<T, true, false>(px, nullptr, pdy, p.rows, p.channels, saved_mean,
                                            saved_inv_std, p1, p2, s, stream);
        bn_backward_finish_kernel<<<finish_blocks(p.channels), k_threads, 0, stream>>>(
            p1, p2, s.splits, s.ld, p.rows, p.channels, dscale, dshift, coef);
        MIXLAB_CUDA_CHECK_LAUNCH("bn_backward_finish_kernel");
        const bool vec = element_group<T>(p.channels, {px, pdy, pdx, py ? py : px}) == vec16<T>();
        if (vec && p.relu)
            dx_pass_v<T, vec16<T>(), true>(p, px, py, pdy, saved_mean, saved_inv_std, coef, pdx,
                                           stream);
        else if (vec)
            dx_pass_v<T, vec16<T>(), false>(p, px, nullptr, pdy, saved_mean, saved_inv_std, coef,
                                            pdx, stream);
        else if (p.relu)
            dx_pass_v<T, 1, true>(p, px, py, pdy, saved_mean, saved_inv_std, coef, pdx, stream);
        else
            dx_pass_v<T, 1, false>(p, px, nullptr, pdy, saved_mean, saved_inv_std, coef, pdx,
                                   stream);
    });
}

} // namespace mixlab::cuda
