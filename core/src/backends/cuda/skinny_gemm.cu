// The skinny weight-gradient GEMM (skinny_gemm.cuh): pass 1 gives each block a tile of
// columns and a slice of k and writes per-slice partial sums; pass 2 adds the slices in
// slice order and applies alpha, beta and the output dtype.
//
// The kernel should be bound by reading B (W1's head: 4096 x 1000 values, 8 MB; 10
// multiply-adds a value), so what decides its time is how many of B's bytes are in
// flight and how long each block's chain of steps is. One 2-byte load a thread at a
// time, one row after the other, read those 8 MB at 0.34 TB/s (24.4 us on the H200 and
// 4.8 for the finish; 32-row slices with four times the blocks did not help, bench/
// NOTES.md 23: each thread still waited on every load). Now each thread reads four
// columns at once (8 bytes) for eight rows before it multiplies; a block is 256 columns
// by 64 rows, four row groups of 16 rows adding their sums in a fixed order, so W1's
// head is 4 x 64 blocks in one wave; the finish gives each output four threads. 11.7 +
// 5.1 us (bench/NOTES.md 34). A first version with one column tile of 1024 columns and
// two row groups (64 blocks, 32 rows a thread) took 18.9 + 7.7.
#include "backends/cuda/skinny_gemm.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

constexpr int k_col_threads = 64; // threads across the columns of a block
constexpr int k_groups = 4;       // row groups of a block, each a quarter of its slice
constexpr int k_slice = 64;       // rows of k per block
constexpr int k_group_rows = k_slice / k_groups;
constexpr int k_unroll = 8;       // rows whose loads a thread issues before it multiplies
constexpr int k_finish_lanes = 4; // threads that share one output's slices in the finish

int slices_for(int k) { return (k + k_slice - 1) / k_slice; }

// V consecutive columns of row-major B from p: one 8-byte load when V is 4.
template <class T, int V>
__device__ __forceinline__ void load_cols(const T* p, float (&v)[V])
{
    if constexpr (V == 1)
        v[0] = to_f32(*p);
    else
        load_vec<T, V>(p, v);
}

// grid (column tiles, k slices), block k_col_threads x k_groups. Each thread owns V
// columns; partial[s][i][j]; bias_partial[s][i] from column tile 0. V == 4 needs n a
// multiple of 4 and B 8-byte aligned (launch_skinny_gemm checks).
template <class T, int V>
__global__ void __launch_bounds__(k_col_threads* k_groups)
    skinny_partials(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b,
                    float* __restrict__ partial, float* __restrict__ bias_partial)
{
    // A's slice, zero past its last row: a ragged last slice multiplies zeros.
    __shared__ float as[k_slice][k_skinny_max_m];
    __shared__ float others[k_groups - 1][k_col_threads][V]; // groups 1.. for one i
    const int s = blockIdx.y;
    const int k0 = s * k_slice;
    const int rows = min(k_slice, k - k0);
    const int t = int(threadIdx.x);
    for (int e = t; e < k_slice * m; e += int(blockDim.x)) {
        const int r = e / m, i = e - r * m;
        as[r][i] = r < rows ? to_f32(a[std::size_t(k0 + r) * m + i]) : 0.0f;
    }
    __syncthreads();
    const int tx = t % k_col_threads, g = t / k_col_threads;
    const int j = (int(blockIdx.x) * k_col_threads + tx) * V;
    float acc[k_skinny_max_m][V];
#pragma unroll
    for (int i = 0; i < k_skinny_max_m; ++i)
#pragma unroll
        for (int q = 0; q < V; ++q) acc[i][q] = 0.0f;
    if (j < n) {
        const int r_begin = g * k_group_rows;
        const int r_end = min(rows, r_begin + k_group_rows);
        const T* col = b + std::size_t(k0) * n + j;
        for (int r = r_begin; r < r_end; r += k_unroll) {
            float v[k_unroll][V];
#pragma unroll
            for (int u = 0; u < k_unroll; ++u) {
                if (r + u < r_end) {
                    load_cols<T, V>(col + std::size_t(r + u) * n, v[u]);
                } else {
#pragma unroll
                    for (int q = 0; q < V; ++q) v[u][q] = 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < k_unroll; ++u)
#pragma unroll
                for (int i = 0; i < k_skinny_max_m; ++i)
                    if (i < m) {
                        const float ai = as[r + u][i];
#pragma unroll
                        for (int q = 0; q < V; ++q) acc[i][q] = fmaf(ai, v[u][q], acc[i][q]);
                    }
        }
    }
    // The groups' sums added in group order, row by row of the output (a fixed order).
    float* out = partial + std::size_t(s) * m * n;
#pragma unroll
    for (int i = 0; i < k_skinny_max_m; ++i) {
        if (i >= m) break;
        if (g > 0) {
#pragma unroll
            for (int q = 0; q < V; ++q) others[g - 1][tx][q] = acc[i][q];
        }
        __syncthreads();
        if (g == 0) {
#pragma unroll
            for (int q = 0; q < V; ++q) {
                float v = acc[i][q];
#pragma unroll
                for (int o = 0; o < k_groups - 1; ++o) v += others[o][tx][q];
                if (j + q < n) out[std::size_t(i) * n + j + q] = v;
            }
        }
        __syncthreads();
    }
    if (bias_partial && blockIdx.x == 0 && t < m) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r) sum += as[r][t];
        bias_partial[s * m + t] = sum;
    }
}

// k_finish_lanes threads an output element, each adding a quarter of the slices in slice
// order, the quarters then added in lane order (a fixed tree: deterministic).
template <class TC>
__global__ void skinny_finish(int m, int n, int slices, const float* partial, float alpha,
                              float beta, TC* c, const float* bias_partial, AnyMut bias_grad)
{
    const std::size_t total = std::size_t(m) * n;
    const int lane = int(threadIdx.x) % k_finish_lanes;
    const int per_lane = (slices + k_finish_lanes - 1) / k_finish_lanes;
    const int s0 = lane * per_lane, s1 = min(slices, s0 + per_lane);
    const std::size_t outputs_per_grid = std::size_t(gridDim.x) * blockDim.x / k_finish_lanes;
    // Every thread runs the same number of iterations: the shuffles need the whole warp.
    for (std::size_t base = 0; base < total; base += outputs_per_grid) {
        const std::size_t t =
            base + (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) / k_finish_lanes;
        float v = 0.0f;
        if (t < total) {
            int s = s0;
            for (; s + 8 <= s1; s += 8) {
                float p[8];
#pragma unroll
                for (int q = 0; q < 8; ++q) p[q] = partial[std::size_t(s + q) * total + t];
#pragma unroll
                for (int q = 0; q < 8; ++q) v += p[q];
            }
            for (; s < s1; ++s) v += partial[std::size_t(s) * total + t];
        }
        // Lane 0 gathers lanes 1, 2, 3 in order.
        float sum = v;
#pragma unroll
        for (int o = 1; o < k_finish_lanes; ++o) {
            const float w = __shfl_down_sync(0xffffffffu, v, o, k_finish_lanes);
            if (lane == 0) sum += w;
        }
        if (lane == 0 && t < total) {
            sum *= alpha;
            if (beta != 0.0f) sum = fmaf(beta, to_f32(c[t]), sum);
            c[t] = from_f32<TC>(sum);
        }
    }
    if (bias_partial && blockIdx.x == 0 && threadIdx.x < m) {
        float sum = 0.0f;
        for (int s = 0; s < slices; ++s) sum += bias_partial[s * m + threadIdx.x];
        bias_grad.store(threadIdx.x, sum);
    }
}

template <class T, int V>
void launch_partials(int m, int n, int k, const T* a, const T* b, float* partial,
                     float* bias_partial, cudaStream_t stream)
{
    const int cols_per_block = k_col_threads * V;
    const dim3 grid(unsigned((n + cols_per_block - 1) / cols_per_block), unsigned(slices_for(k)));
    skinny_partials<T, V>
        <<<grid, k_col_threads * k_groups, 0, stream>>>(m, n, k, a, b, partial, bias_partial);
}

// Calls f(TypeTag<T>{}) for the operands LtGemm::skinny_applies sends here: float16 or
// bfloat16 (fp32 and TF32 stay with cuBLASLt), so no fp32 pass 1 is built (its one-column
// variant spilled 8 bytes on sm_90). C may still be fp32: the finish takes every floating
// dtype.
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
    const std::size_t s = std::size_t(slices_for(k));
    return s * std::size_t(m) * std::size_t(n) + s * std::size_t(m);
}

void launch_skinny_gemm(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                        float beta, void* c, DType ct, void* bias_grad, DType bias_t,
                        float* scratch, cudaStream_t stream)
{
    const int slices = slices_for(k);
    float* partial = scratch;
    float* bias_partial = bias_grad ? scratch + std::size_t(slices) * m * n : nullptr;
    dispatch_16bit_operands(ab, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pa = static_cast<const T*>(a);
        const T* pb = static_cast<const T*>(b);
        // Four columns a load when every row of B starts on 4 elements.
        if (n % 4 == 0 && reinterpret_cast<std::uintptr_t>(b) % (4 * sizeof(T)) == 0)
            launch_partials<T, 4>(m, n, k, pa, pb, partial, bias_partial, stream);
        else
            launch_partials<T, 1>(m, n, k, pa, pb, partial, bias_partial, stream);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("skinny_partials");
    const AnyMut bias{bias_grad, bias_t};
    const unsigned blocks = grid_for(std::size_t(m) * n * k_finish_lanes, 256, 1024);
    dispatch_floating(ct, "skinny_gemm", [&](auto tag) {
        using TC = typename decltype(tag)::type;
        skinny_finish<TC><<<blocks, 256, 0, stream>>>(m, n, slices, partial, alpha, beta,
                                                      static_cast<TC*>(c), bias_partial, bias);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("skinny_finish");
}

} // namespace mixlab::cuda
