// The column-reduction kernel of the bias gradient (see column_split.h for how the work
// is cut), and the 16-byte vector loads and stores that batch norm and pooling share.
#pragma once
#include "backends/cuda/column_split.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"

#include <cstdint>

namespace mixlab::cuda {

// V consecutive elements; 16 bytes when V * sizeof(T) == 16, so one load instruction.
template <class T, int V>
struct alignas(V * sizeof(T)) VecT {
    T v[V];
};

template <class T, int V>
__device__ __forceinline__ void load_vec(const T* p, float out[V])
{
    const VecT<T, V> r = *reinterpret_cast<const VecT<T, V>*>(p);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = to_f32(r.v[j]);
}

template <class T, int V>
__device__ __forceinline__ void store_vec(T* p, const float in[V])
{
    VecT<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = from_f32<T>(in[j]);
    *reinterpret_cast<VecT<T, V>*>(p) = r;
}

// Columns per 16-byte load for T.
template <class T>
constexpr int vec16()
{
    return int(16 / sizeof(T));
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// block: k_reduce_threads; grid (tiles, splits). Sums x per column: into p1 (splits, ld)
// partials, or with p1 null (one slice only) the block stores its finished sums into out.
// Batch norm's two-sum statistics live in batchnorm.cu (double partials).
template <class T, int V>
__global__ void __launch_bounds__(k_reduce_threads)
    column_partials_kernel(const T* x, std::size_t rows, int cols, int tile_vcols, int lanes,
                           std::size_t rows_per_split, std::size_t ld, float* p1, AnyMut out)
{
    wait_for_previous_grid();
    __shared__ float s1[k_reduce_threads * V];
    const int t = int(threadIdx.x);
    const int vc = t % tile_vcols, lane = t / tile_vcols;
    const int gvc = int(blockIdx.x) * tile_vcols + vc;
    const bool in_block = lane < lanes;
    const bool active = in_block && gvc * V < cols;
    float a1[V];
#pragma unroll
    for (int j = 0; j < V; ++j) a1[j] = 0.0f;
    if (active) {
        const int c0 = gvc * V;
        const std::size_t begin = std::size_t(blockIdx.y) * rows_per_split;
        const std::size_t end = begin + rows_per_split < rows ? begin + rows_per_split : rows;
#pragma unroll 4
        for (std::size_t r = begin + std::size_t(lane); r < end; r += std::size_t(lanes)) {
            float v[V];
            load_vec<T, V>(x + r * std::size_t(cols) + c0, v);
#pragma unroll
            for (int j = 0; j < V; ++j) a1[j] += v[j];
        }
    }
    // The lanes' sums per column, added in lane order (deterministic).
    const int tile_cols = tile_vcols * V;
    if (in_block) {
#pragma unroll
        for (int j = 0; j < V; ++j) s1[lane * tile_cols + vc * V + j] = a1[j];
    }
    __syncthreads();
    for (int col = t; col < tile_cols; col += int(blockDim.x)) {
        float r1 = 0.0f;
        for (int l = 0; l < lanes; ++l) r1 += s1[l * tile_cols + col];
        const std::size_t gcol = std::size_t(blockIdx.x) * tile_cols + col;
        if (p1)
            p1[std::size_t(blockIdx.y) * ld + gcol] = r1;
        else if (gcol < std::size_t(cols))
            out.store(gcol, r1);
    }
}

// Launches the partials kernel with 16-byte loads when the row length and pointers
// allow, else one column per thread.
template <class T>
void launch_column_partials(const T* x, std::size_t rows, int cols, float* p1, AnyMut out,
                            const ColumnSplit& s, cudaStream_t stream)
{
    const dim3 grid(s.tiles, s.splits);
    if (s.v == vec16<T>())
        launch_dependent("column_partials_kernel", column_partials_kernel<T, vec16<T>()>, grid,
                         k_reduce_threads, 0, stream, x, rows, cols, s.tile_vcols, s.lanes,
                         s.rows_per_split, s.ld, p1, out);
    else
        launch_dependent("column_partials_kernel", column_partials_kernel<T, 1>, grid,
                         k_reduce_threads, 0, stream, x, rows, cols, s.tile_vcols, s.lanes,
                         s.rows_per_split, s.ld, p1, out);
}

// The split for a reduction over x (and dy), vectorised where possible.
template <class T>
ColumnSplit column_split_for(const T* x, const T* dy, std::size_t rows, std::size_t cols)
{
    const int v = vec16<T>();
    const bool vec = cols % std::size_t(v) == 0 && aligned16(x) && (dy == nullptr || aligned16(dy));
    return plan_column_split(rows, cols, vec ? v : 1);
}

} // namespace mixlab::cuda
