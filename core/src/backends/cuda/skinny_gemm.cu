// The skinny weight-gradient GEMM (skinny_gemm.cuh): pass 1 gives each block a tile of
// columns and a slice of k and writes per-slice partial sums; pass 2 adds the slices in
// slice order and applies alpha, beta and the output dtype.
#include "backends/cuda/skinny_gemm.cuh"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

namespace mixlab::cuda {

namespace {

constexpr int k_cols = 256; // columns per block (one per thread)
// Rows of k per block. 32-row slices (4x the blocks, all resident) were tried for W1's
// head gradient at batch 4096 and did not move the step: mixed_bf16 0.539 ms on the H200
// (0.536 with 128 rows in an earlier call, 0.682 with cuBLASLt in the same one;
// bench/NOTES.md 23).
constexpr int k_slice = 128;

int slices_for(int k) { return (k + k_slice - 1) / k_slice; }

// grid (column tiles, k slices). partial[s][i][j]; bias_partial[s][i] from tile 0.
template <class T>
__global__ void skinny_partials(int m, int n, int k, const T* a, const T* b, float* partial,
                                float* bias_partial)
{
    __shared__ float as[k_slice][k_skinny_max_m];
    const int s = blockIdx.y;
    const int k0 = s * k_slice;
    const int rows = min(k_slice, k - k0);
    for (int t = threadIdx.x; t < rows * m; t += blockDim.x) {
        const int r = t / m, i = t - r * m;
        as[r][i] = to_f32(a[std::size_t(k0 + r) * m + i]);
    }
    __syncthreads();
    const int j = blockIdx.x * k_cols + threadIdx.x;
    float acc[k_skinny_max_m];
#pragma unroll
    for (int i = 0; i < k_skinny_max_m; ++i) acc[i] = 0.0f;
    if (j < n) {
        const T* col = b + std::size_t(k0) * n + j;
        for (int r = 0; r < rows; ++r) {
            const float v = to_f32(col[std::size_t(r) * n]);
#pragma unroll
            for (int i = 0; i < k_skinny_max_m; ++i)
                if (i < m) acc[i] = fmaf(as[r][i], v, acc[i]);
        }
        float* out = partial + std::size_t(s) * m * n + j;
#pragma unroll
        for (int i = 0; i < k_skinny_max_m; ++i)
            if (i < m) out[std::size_t(i) * n] = acc[i];
    }
    if (bias_partial && blockIdx.x == 0 && threadIdx.x < m) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r) sum += as[r][threadIdx.x];
        bias_partial[s * m + threadIdx.x] = sum;
    }
}

template <class TC>
__global__ void skinny_finish(int m, int n, int slices, const float* partial, float alpha,
                              float beta, TC* c, const float* bias_partial, AnyMut bias_grad)
{
    const std::size_t total = std::size_t(m) * n;
    for (std::size_t t = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; t < total;
         t += std::size_t(gridDim.x) * blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < slices; ++s) v += partial[std::size_t(s) * total + t];
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
    const dim3 grid(unsigned((n + k_cols - 1) / k_cols), unsigned(slices));
    dispatch_floating(ab, "skinny_gemm", [&](auto tag) {
        using T = typename decltype(tag)::type;
        skinny_partials<T><<<grid, k_cols, 0, stream>>>(
            m, n, k, static_cast<const T*>(a), static_cast<const T*>(b), partial, bias_partial);
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
