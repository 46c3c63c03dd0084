// The skinny weight-gradient GEMM (skinny_gemm.cuh): pass 1 gives each block a tile of
// columns and a slice of k and writes per-slice partial sums; pass 2 adds the slices in
// slice order and applies alpha, beta and the output dtype.
//
// The kernel should be bound by reading B (W1's head: 4096 x 1000 values, 8 MB; 10
// multiply-adds a value), so what decides its time is how many of B's bytes are in
// flight and how long each block's chain of steps is. Measured so far (bench/NOTES.md
// 34): one 2-byte load a thread at a time, 24.4 + 4.8 us (partials + finish, H200); 8-byte
// loads, 8 rows in flight, 256-column tiles of 64-row slices (4 x 64 small blocks) and
// four threads an output in the finish, 11.7 + 5.1 us, 8 MB in 16.8 us (0.5 TB/s). Read
// from that code, not profiled: each thread had 64 bytes of B in flight, A's slice came
// one 2-byte load a round trip (three) before any load of B, and the finish's 64 slices
// took each thread two round trips.
//
// Now: a block is 8 warps, each warp one row group of 32 column
// threads, so the 8 groups share a slice of 8 x R rows (R = 16 for W1's head: 32 slices
// of 128 rows, 4 x 32 = 128 blocks, one wave on an H100 or H200). Each thread issues the
// 16-byte loads (8 columns) of 16 rows before anything else, 64 KB a block, then stages
// A's slice and multiplies. Its accumulators are MaxM x 8 floats, MaxM being m rounded up
// to even, a compile-time bound. The groups' sums meet in shared memory in group order;
// the finish gives each output one thread with all its slices' loads in flight at once.
// Every sum has a fixed order that depends on the shape alone (not on the GPU, nor on
// which load width B's alignment allows), so results are bit-identical everywhere.
// Measured on an H100 (bench/NOTES.md 44): 8.1-8.2 + 4.2 us for W1's head, where the
// version above took 12.0 + 4-5 in the same week's profiles.
#include "backends/cuda/skinny_gemm.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

namespace mixlab::cuda {

namespace {

constexpr int k_col_threads = 32; // a warp across the columns: one row group
constexpr int k_groups = 8;       // row groups (warps) of a block
constexpr int k_threads = k_col_threads * k_groups;
constexpr int k_chunk = 16; // rows whose loads a thread issues before it multiplies
constexpr int k_min_group_rows = 8;
constexpr int k_max_group_rows = 32;
constexpr int k_max_slice = k_groups * k_max_group_rows;
// Blocks the slice count aims at: one wave of the 16-byte kernel on an H100 or H200 (132
// SMs, one 256-thread block of ~170 registers a thread on each). A constant, not the
// device's SM count: the slices decide the order of the sums.
constexpr int k_wave_blocks = 128;
constexpr int k_plan_tile = k_col_threads * 8; // the 16-byte kernel's columns a block
constexpr int k_smem_floats = 8192;            // A's slice, then the groups' sums (32 KB)
constexpr int k_finish_threads = 128;
constexpr int k_finish_batch = 32; // slices whose loads a finishing thread has in flight

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// A slice is k_groups x group_rows rows of k. Chosen from n and k only, so the slices
// (and with them every sum's order) are the same on every GPU and every load width: about
// one wave of blocks, each group at least 8 rows (partial sums stay under a third of B's
// bytes for m <= 10: 2m / (8 * 8) of them) and at most 32 (A's slice fits shared memory).
struct SlicePlan {
    int group_rows;
    int slices;
};

SlicePlan slice_plan(int n, int k)
{
    const int tiles = ceil_div(n, k_plan_tile);
    const int target = std::max(1, k_wave_blocks / tiles);
    int r = ceil_div(ceil_div(k, k_groups * target), k_min_group_rows) * k_min_group_rows;
    r = std::min(std::max(r, k_min_group_rows), k_max_group_rows);
    return {r, ceil_div(k, k_groups * r)};
}

// Row stride of A's slice in shared memory: rows start 16-byte aligned for float4 reads.
constexpr int a_stride(int max_m) { return (max_m + 3) / 4 * 4; }

// Accumulator rows whose group sums one round of the reduction holds in shared memory.
constexpr int red_rows(int max_m, int v)
{
    const int fit = k_smem_floats / (k_groups * k_col_threads * v);
    return fit < max_m ? fit : max_m;
}

// One row's V columns of B as raw 32-bit words (two 16-bit values a word), so that a
// thread's loads of a chunk can all be in flight before the first is unpacked.
template <int V>
struct RowBits {
    std::uint32_t w[(V + 1) / 2];
};

template <class T, int V>
__device__ __forceinline__ RowBits<V> load_row(const T* p)
{
    RowBits<V> r;
    if constexpr (V == 8) {
        const uint4 q = *reinterpret_cast<const uint4*>(p);
        r.w[0] = q.x, r.w[1] = q.y, r.w[2] = q.z, r.w[3] = q.w;
    } else if constexpr (V == 4) {
        const uint2 q = *reinterpret_cast<const uint2*>(p);
        r.w[0] = q.x, r.w[1] = q.y;
    } else {
        r.w[0] = *reinterpret_cast<const unsigned short*>(p);
    }
    return r;
}

template <class T>
__device__ __forceinline__ float low_f32(std::uint32_t w)
{
    if constexpr (std::is_same_v<T, bf16>)
        return __uint_as_float(w << 16);
    else
        return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
}

template <class T>
__device__ __forceinline__ float high_f32(std::uint32_t w)
{
    if constexpr (std::is_same_v<T, bf16>)
        return __uint_as_float(w & 0xffff0000u);
    else
        return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

template <class T, int V>
__device__ __forceinline__ void unpack(const RowBits<V>& r, float (&v)[V])
{
#pragma unroll
    for (int q = 0; q < V; ++q)
        v[q] = q % 2 == 0 ? low_f32<T>(r.w[q / 2]) : high_f32<T>(r.w[q / 2]);
}

// grid (column tiles of k_col_threads * V columns, slices), block k_threads: warp g sums
// rows [g R, (g + 1) R) of the slice for its V columns a thread. partial[s][i][j];
// bias_partial[s][i] from column tile 0. V == 8 (4) needs n a multiple of 8 (4) and B
// 16- (8-) byte aligned (launch_skinny_gemm checks); m <= MaxM.
template <class T, int V, int MaxM>
__global__ void __launch_bounds__(k_threads, 1)
    skinny_partials(int m, int n, int k, int group_rows, const T* __restrict__ a,
                    const T* __restrict__ b, float* __restrict__ partial,
                    float* __restrict__ bias_partial)
{
    wait_for_previous_grid();
    constexpr int stride = a_stride(MaxM);
    constexpr int cols = k_col_threads * V; // a block's columns
    constexpr int rr = red_rows(MaxM, V);
    static_assert(k_max_slice * stride <= k_smem_floats && k_groups * rr * cols <= k_smem_floats);
    // A's slice (as[r * stride + i], zero past the slice's last row and past m), then,
    // once no warp reads it, the groups' sums (red[(g * rr + i) * cols + column]).
    __shared__ __align__(16) float smem[k_smem_floats];
    __shared__ float bias_red[k_groups][k_skinny_max_m];
    float* const as = smem;
    float* const red = smem;

    const int s = int(blockIdx.y);
    const int slice = k_groups * group_rows;
    const int k0 = s * slice;
    const int rows = min(slice, k - k0);
    const int t = int(threadIdx.x);
    const int tx = t % k_col_threads, g = t / k_col_threads;
    const int j0 = int(blockIdx.x) * cols;
    const int j = j0 + tx * V;
    const bool active = j < n;
    const int r_begin = g * group_rows;
    const int r_end = min(rows, r_begin + group_rows);

    // B's first chunk before A's slice: the long pole's loads go out first.
    const std::size_t ld = std::size_t(n);
    const T* col = b + std::size_t(k0) * ld + j;
    RowBits<V> raw[k_chunk];
    auto load_chunk = [&](int r) {
#pragma unroll
        for (int u = 0; u < k_chunk; ++u) {
            if (active && r + u < r_end) {
                raw[u] = load_row<T, V>(col + std::size_t(r + u) * ld);
            } else {
#pragma unroll
                for (int w = 0; w < (V + 1) / 2; ++w) raw[u].w[w] = 0u;
            }
        }
    };
    load_chunk(r_begin);

    // A's slice: every element's load issued before the first store.
    constexpr int a_per_thread = (k_max_slice * stride + k_threads - 1) / k_threads;
    const int a_elems = slice * stride;
    float av[a_per_thread];
#pragma unroll
    for (int c = 0; c < a_per_thread; ++c) {
        const int e = t + c * k_threads;
        const int r = e / stride, i = e - r * stride;
        av[c] = e < a_elems && r < rows && i < m ? to_f32(a[std::size_t(k0 + r) * m + i]) : 0.0f;
    }
#pragma unroll
    for (int c = 0; c < a_per_thread; ++c) {
        const int e = t + c * k_threads;
        if (e < a_elems) as[e] = av[c];
    }
    __syncthreads();

    float acc[MaxM][V];
#pragma unroll
    for (int i = 0; i < MaxM; ++i)
#pragma unroll
        for (int q = 0; q < V; ++q) acc[i][q] = 0.0f;
    for (int r = r_begin; r < r_end;) {
        const int count = min(k_chunk, r_end - r); // the same for the whole warp
#pragma unroll
        for (int u = 0; u < k_chunk; ++u) {
            if (u >= count) break;
            float v[V];
            unpack<T, V>(raw[u], v);
            float ai[stride];
#pragma unroll
            for (int i = 0; i < stride; i += 4) {
                const float4 q = *reinterpret_cast<const float4*>(as + (r + u) * stride + i);
                ai[i] = q.x, ai[i + 1] = q.y, ai[i + 2] = q.z, ai[i + 3] = q.w;
            }
#pragma unroll
            for (int i = 0; i < MaxM; ++i)
#pragma unroll
                for (int q = 0; q < V; ++q) acc[i][q] = fmaf(ai[i], v[q], acc[i][q]);
        }
        r += k_chunk;
        if (r < r_end) load_chunk(r);
    }

    // The bias gradient's share of the slice, per group over its rows in order.
    const bool bias = bias_partial && blockIdx.x == 0;
    if (bias && tx < m) {
        float sum = 0.0f;
        for (int r = r_begin; r < r_end; ++r) sum += as[r * stride + tx];
        bias_red[g][tx] = sum;
    }
    __syncthreads(); // A's slice read by every warp: red may overwrite it
    if (bias && t < m) {
        float sum = bias_red[0][t];
#pragma unroll
        for (int o = 1; o < k_groups; ++o) sum += bias_red[o][t];
        bias_partial[std::size_t(s) * m + t] = sum;
    }

    // The groups' sums added in group order, rr accumulator rows a round.
    float* out = partial + std::size_t(s) * m * n;
    constexpr int per_thread = (rr * cols + k_threads - 1) / k_threads;
#pragma unroll
    for (int i0 = 0; i0 < MaxM; i0 += rr) {
        if (i0 >= m) break;
        if (i0 > 0) __syncthreads(); // the last round's sums read
#pragma unroll
        for (int ii = 0; ii < rr; ++ii) {
            if (i0 + ii >= MaxM) break;
            float* p = red + (g * rr + ii) * cols + tx * V;
            if constexpr (V % 4 == 0) {
#pragma unroll
                for (int q = 0; q < V; q += 4)
                    *reinterpret_cast<float4*>(p + q) =
                        make_float4(acc[i0 + ii][q], acc[i0 + ii][q + 1], acc[i0 + ii][q + 2],
                                    acc[i0 + ii][q + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < V; ++q) p[q] = acc[i0 + ii][q];
            }
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < per_thread; ++c) {
            const int o = t + c * k_threads;
            const int ii = o / cols, jj = o % cols;
            const int i = i0 + ii;
            if (o < rr * cols && i < m && j0 + jj < n) {
                float v = red[ii * cols + jj];
#pragma unroll
                for (int w = 1; w < k_groups; ++w) v += red[(w * rr + ii) * cols + jj];
                out[std::size_t(i) * n + j0 + jj] = v;
            }
        }
    }
}

// p[0], p[stride], ... p[(slices - 1) stride] added in slice order, k_finish_batch loads
// in flight at a time (one batch for W1's head's 32 slices).
__device__ __forceinline__ float sum_slices(const float* p, std::size_t stride, int slices)
{
    float sum = 0.0f;
    for (int s0 = 0; s0 < slices; s0 += k_finish_batch) {
        float v[k_finish_batch];
#pragma unroll
        for (int q = 0; q < k_finish_batch; ++q)
            v[q] = s0 + q < slices ? p[std::size_t(s0 + q) * stride] : 0.0f;
#pragma unroll
        for (int q = 0; q < k_finish_batch; ++q)
            if (s0 + q < slices) sum += v[q];
    }
    return sum;
}

// One thread an output element; the m threads after the last add the bias gradient's
// slices. A short chain: C's old value and every slice's load go out together.
template <class TC>
__global__ void __launch_bounds__(k_finish_threads)
    skinny_finish(int m, int n, int slices, const float* partial, float alpha, float beta, TC* c,
                  const float* bias_partial, AnyMut bias_grad)
{
    wait_for_previous_grid();
    const std::size_t total = std::size_t(m) * n;
    const std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (t < total) {
        const float old = beta != 0.0f ? to_f32(c[t]) : 0.0f;
        float sum = sum_slices(partial + t, total, slices);
        sum *= alpha;
        if (beta != 0.0f) sum = fmaf(beta, old, sum);
        c[t] = from_f32<TC>(sum);
    } else if (bias_partial && t < total + std::size_t(m)) {
        const int i = int(t - total);
        bias_grad.store(std::size_t(i), sum_slices(bias_partial + i, std::size_t(m), slices));
    }
}

template <class T, int V, int MaxM>
void launch_partials(int m, int n, int k, const SlicePlan& plan, const T* a, const T* b,
                     float* partial, float* bias_partial, cudaStream_t stream)
{
    const int cols = k_col_threads * V;
    const dim3 grid(unsigned(ceil_div(n, cols)), unsigned(plan.slices));
    launch_dependent("skinny_partials", skinny_partials<T, V, MaxM>, grid, k_threads, 0, stream, m,
                     n, k, plan.group_rows, a, b, partial, bias_partial);
}

// Calls f(std::integral_constant<int, MaxM>{}) with m rounded up to even. Even rather than
// multiples of 4: W1's head (m = 10) would multiply 12 rows, 20% more of the multiply-adds
// that share the 16-byte kernel's time with B's loads (its 41 M take ~1.4 us of issue on
// an H100, computed); the price is 48 kernels to build instead of 24 (17 s for sm_90).
template <class F>
void dispatch_max_m(int m, F&& f)
{
    switch ((m + 1) / 2) {
    case 1: f(std::integral_constant<int, 2>{}); return;
    case 2: f(std::integral_constant<int, 4>{}); return;
    case 3: f(std::integral_constant<int, 6>{}); return;
    case 4: f(std::integral_constant<int, 8>{}); return;
    case 5: f(std::integral_constant<int, 10>{}); return;
    case 6: f(std::integral_constant<int, 12>{}); return;
    case 7: f(std::integral_constant<int, 14>{}); return;
    case 8: f(std::integral_constant<int, 16>{}); return;
    default: break;
    }
    throw Error("cuda backend: skinny_gemm: m must be 1 to " + std::to_string(k_skinny_max_m) +
                ", got " + std::to_string(m));
}

// Calls f(TypeTag<T>{}) for the operands LtGemm::skinny_applies sends here: float16 or
// bfloat16 (fp32 and TF32 stay with cuBLASLt), so no fp32 pass 1 is built. C may still be
// fp32: the finish takes every floating dtype.
template <class F>
void dispatch_16bit_operands(DType t, F&& f)
{
    switch (t) {
    case DType::F16: f(TypeTag<__half>{}); return;
    case DType::BF16: f(TypeTag<bf16>{}); return;
    default: break;
    }
    throw Error("cuda backend: skinny_gemm: expected float16 or bfloat16 operands, got " +
                std::string(dtype_name(t)));
}

} // namespace

std::size_t skinny_gemm_scratch_floats(int m, int n, int k)
{
    const std::size_t s = std::size_t(slice_plan(n, k).slices);
    return s * std::size_t(m) * std::size_t(n) + s * std::size_t(m);
}

void launch_skinny_gemm(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                        float beta, void* c, DType ct, void* bias_grad, DType bias_t,
                        float* scratch, cudaStream_t stream)
{
    const SlicePlan plan = slice_plan(n, k);
    float* partial = scratch;
    float* bias_partial = bias_grad ? scratch + std::size_t(plan.slices) * m * n : nullptr;
    dispatch_16bit_operands(ab, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pa = static_cast<const T*>(a);
        const T* pb = static_cast<const T*>(b);
        const auto at = reinterpret_cast<std::uintptr_t>(b);
        dispatch_max_m(m, [&](auto max_m) {
            constexpr int M = decltype(max_m)::value;
            // The widest load every row of B starts aligned for: 8 columns, 4, or 1.
            if (n % 8 == 0 && at % (8 * sizeof(T)) == 0)
                launch_partials<T, 8, M>(m, n, k, plan, pa, pb, partial, bias_partial, stream);
            else if (n % 4 == 0 && at % (4 * sizeof(T)) == 0)
                launch_partials<T, 4, M>(m, n, k, plan, pa, pb, partial, bias_partial, stream);
            else
                launch_partials<T, 1, M>(m, n, k, plan, pa, pb, partial, bias_partial, stream);
        });
    });
    MIXLAB_CUDA_CHECK_LAUNCH("skinny_partials");
    const AnyMut bias{bias_grad, bias_t};
    const std::size_t threads = std::size_t(m) * n + (bias_grad ? std::size_t(m) : 0);
    const unsigned blocks = unsigned((threads + k_finish_threads - 1) / k_finish_threads);
    dispatch_floating(ct, "skinny_gemm", [&](auto tag) {
        using TC = typename decltype(tag)::type;
        launch_dependent("skinny_finish", skinny_finish<TC>, blocks, k_finish_threads, 0, stream, m,
                         n, plan.slices, partial, alpha, beta, static_cast<TC*>(c), bias_partial,
                         bias);
    });
}

} // namespace mixlab::cuda
