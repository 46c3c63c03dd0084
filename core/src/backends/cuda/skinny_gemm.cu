// The skinny weight-gradient GEMM (skinny_gemm.cuh): pass 1 gives each block a tile of
// columns and a slice of k and writes per-slice partial sums; pass 2 adds the slices in
// slice order and applies alpha, beta and the output dtype.
//
// The kernel should be bound by reading B (W1's head: 4096 x 1000 values, 8 MB; 10
// multiply-adds a value), so what decides its time is how many of B's bytes are in
// flight. One 2-byte load a thread at a time, one row after the other, read those 8 MB
// at 0.34 TB/s (24.4 us on the H200; 32-row slices with four times the blocks did not
// help, bench/NOTES.md 23: each thread still waited on every load). Now each thread reads
// four columns at once (8 bytes) for eight rows before it multiplies, and two row groups
// share a block's 64 rows, adding their sums in a fixed order: 18.9 us, and the finish
// 7.7 us over 64 slices where it took 4.8 over 32 (bench/NOTES.md 34). Still far from
// the ~3 us the bytes need: one wave of 64 blocks whose loads, reduction and stores run
// one after the other.
#include "backends/cuda/skinny_gemm.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

constexpr int k_col_threads = 256; // threads across the columns of a block
constexpr int k_groups = 2;        // row groups of a block, each a half of its slice
constexpr int k_slice = 64;        // rows of k per block
constexpr int k_group_rows = k_slice / k_groups;
constexpr int k_unroll = 8; // rows whose loads a thread issues before it multiplies

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
    __shared__ float second[k_col_threads][V]; // the second row group's sums for one i
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
    // First group + second group, row by row of the output (a fixed order).
    float* out = partial + std::size_t(s) * m * n;
#pragma unroll
    for (int i = 0; i < k_skinny_max_m; ++i) {
        if (i >= m) break;
        if (g == 1) {
#pragma unroll
            for (int q = 0; q < V; ++q) second[tx][q] = acc[i][q];
        }
        __syncthreads();
        if (g == 0) {
#pragma unroll
            for (int q = 0; q < V; ++q)
                if (j + q < n) out[std::size_t(i) * n + j + q] = acc[i][q] + second[tx][q];
        }
        __syncthreads();
    }
    if (bias_partial && blockIdx.x == 0 && t < m) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r) sum += as[r][t];
        bias_partial[s * m + t] = sum;
    }
}

// One thread an output element: the slices in slice order, 16 loads in flight.
template <class TC>
__global__ void skinny_finish(int m, int n, int slices, const float* partial, float alpha,
                              float beta, TC* c, const float* bias_partial, AnyMut bias_grad)
{
    constexpr int k_in_flight = 16;
    const std::size_t total = std::size_t(m) * n;
    for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < total;
         t += std::size_t(gridDim.x) * blockDim.x) {
        float v = 0.0f;
        int s = 0;
        for (; s + k_in_flight <= slices; s += k_in_flight) {
            float p[k_in_flight];
#pragma unroll
            for (int q = 0; q < k_in_flight; ++q) p[q] = partial[std::size_t(s + q) * total + t];
#pragma unroll
            for (int q = 0; q < k_in_flight; ++q) v += p[q];
        }
        for (; s < slices; ++s) v += partial[std::size_t(s) * total + t];
        v *= alpha;
        if (beta != 0.0f) v = fmaf(beta, to_f32(c[t]), v);
        c[t] = from_f32<TC>(v);
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
    dispatch_floating(ab, "skinny_gemm", [&](auto tag) {
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
    const unsigned blocks = grid_for(std::size_t(m) * n, 256, 1024);
    dispatch_floating(ct, "skinny_gemm", [&](auto tag) {
        using TC = typename decltype(tag)::type;
        skinny_finish<TC><<<blocks, 256, 0, stream>>>(m, n, slices, partial, alpha, beta,
                                                      static_cast<TC*>(c), bias_partial, bias);
    });
    MIXLAB_CUDA_CHECK_LAUNCH("skinny_finish");
}

} // namespace mixlab::cuda
