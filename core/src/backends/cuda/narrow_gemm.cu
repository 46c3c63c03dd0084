// The narrow input gradient (narrow_gemm.cuh): a classifier head's dZ W, k its classes.
// A's rows (k 16-bit values, 20 bytes for k = 10) are not 16-byte aligned, so no
// tensor-core kernel reads A, and the bytes to move are C's (4096 x 1000: 8 MB in 16
// bits, ~2.5 us at an H100's 3.35 TB/s; A and B are 80 and 20 KB). A thread writes 8
// consecutive columns of a row (one 16-byte store of 16-bit values) from B's k x 8
// slice, loaded once into registers, looping over rows whose k values of A the block
// staged in shared memory (each read a broadcast). A block is 256 columns by 64 rows,
// each warp every 8th row; the seed's head at batch 4096 is 64 x 4 blocks. Measured on
// an H100 (bench/NOTES.md 44): 6.6 us for the seed's head, where cuBLASLt took 6.9-7.3.
//
// The head's forward GEMM (n = 10 classes) had a kernel here too, a block of 32 rows
// walking k = 1000 with B in shared memory: 9.9-10.2 us against cuBLASLt's 9.4, slower at
// batches 256 and 1024 as well (NOTES 44), so it was taken out.
#include "backends/cuda/narrow_gemm.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/dependent_launch.cuh"
#include "backends/cuda/device_types.cuh"

#include <cstddef>
#include <string>

namespace mixlab::cuda {

namespace {

constexpr int k_dg_cols = 8; // columns a thread: one 16-byte store of 16-bit C
constexpr int k_dg_warps = 8;
constexpr int k_dg_threads = 32 * k_dg_warps;
constexpr int k_dg_block_cols = 32 * k_dg_cols; // a warp's lanes across the columns
static_assert(k_dg_block_cols == k_narrow_block_cols, "narrow_gemm.cuh's n bound");
constexpr int k_dg_rows = 64; // rows a block; warp w takes w, w + 8, ...

// grid (row blocks, column blocks). KP: k rounded up to 4 (B's slice and A's staged rows
// zero past k). Vec: n a multiple of 8 and B and C 16-byte aligned (16-byte loads of B,
// 16-byte stores of C); else each column alone. B's slice takes KP x 8 registers: KP 16
// leaves one block of 256 threads an SM room for no other.
template <class T, class TC, int KP, bool Vec>
__global__ void __launch_bounds__(k_dg_threads, KP <= 12 ? 2 : 1)
    narrow_dgrad_kernel(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b,
                        float alpha, float beta, TC* __restrict__ c)
{
    wait_for_previous_grid();
    __shared__ __align__(16) float as[k_dg_rows * KP]; // the block's rows of A, fp32
    const int t = int(threadIdx.x);
    const int lane = t % 32, w = t / 32;
    const int row0 = int(blockIdx.x) * k_dg_rows;
    const int j0 = (int(blockIdx.y) * 32 + lane) * k_dg_cols;
    const bool active = j0 < n;

    // B's k x 8 slice first: its loads are in flight while A is staged.
    float bv[KP][k_dg_cols];
#pragma unroll
    for (int kk = 0; kk < KP; ++kk) {
        const T* src = b + std::size_t(kk) * n + j0;
        if constexpr (Vec) {
            if (active && kk < k) {
                load_vec<T, k_dg_cols>(src, bv[kk]);
            } else {
#pragma unroll
                for (int q = 0; q < k_dg_cols; ++q) bv[kk][q] = 0.0f;
            }
        } else {
#pragma unroll
            for (int q = 0; q < k_dg_cols; ++q)
                bv[kk][q] = active && kk < k && j0 + q < n ? to_f32(src[q]) : 0.0f;
        }
    }
    for (int i = t; i < k_dg_rows * KP; i += k_dg_threads) {
        const int r = i / KP, kk = i % KP;
        const int row = row0 + r;
        as[i] = row < m && kk < k ? to_f32(a[std::size_t(row) * k + kk]) : 0.0f;
    }
    __syncthreads();
    if (!active) return;

    for (int r = w; r < k_dg_rows; r += k_dg_warps) {
        const int row = row0 + r;
        if (row >= m) break;
        float acc[k_dg_cols];
#pragma unroll
        for (int q = 0; q < k_dg_cols; ++q) acc[q] = 0.0f;
        const float* ar = as + r * KP;
#pragma unroll
        for (int kk = 0; kk < KP; kk += 4) {
            const float4 x = *reinterpret_cast<const float4*>(ar + kk);
#pragma unroll
            for (int q = 0; q < k_dg_cols; ++q) {
                acc[q] = fmaf(x.x, bv[kk][q], acc[q]);
                acc[q] = fmaf(x.y, bv[kk + 1][q], acc[q]);
                acc[q] = fmaf(x.z, bv[kk + 2][q], acc[q]);
                acc[q] = fmaf(x.w, bv[kk + 3][q], acc[q]);
            }
        }
#pragma unroll
        for (int q = 0; q < k_dg_cols; ++q) acc[q] *= alpha;
        TC* dst = c + std::size_t(row) * n + j0;
        if constexpr (Vec) {
            constexpr int V = int(16 / sizeof(TC)); // 8 (16-bit C) or 4 (fp32 C) a store
#pragma unroll
            for (int s = 0; s < k_dg_cols; s += V) {
                if (beta != 0.0f) {
                    float old[V];
                    load_vec<TC, V>(dst + s, old);
#pragma unroll
                    for (int q = 0; q < V; ++q) acc[s + q] = fmaf(beta, old[q], acc[s + q]);
                }
                store_vec<TC, V>(dst + s, acc + s);
            }
        } else {
#pragma unroll
            for (int q = 0; q < k_dg_cols; ++q) {
                if (j0 + q >= n) break;
                float v = acc[q];
                if (beta != 0.0f) v = fmaf(beta, to_f32(dst[q]), v);
                dst[q] = from_f32<TC>(v);
            }
        }
    }
}

template <class T, class TC>
void launch_dgrad(int m, int n, int k, const T* a, const T* b, float alpha, float beta, TC* c,
                  cudaStream_t stream)
{
    const dim3 grid(unsigned((m + k_dg_rows - 1) / k_dg_rows),
                    unsigned((n + k_dg_block_cols - 1) / k_dg_block_cols));
    const bool vec = n % k_dg_cols == 0 && aligned16(b) && aligned16(c);
    // The ragged path for every k (KP 16): it serves only shapes off the usual layouts.
    if (!vec) {
        launch_dependent("narrow_dgrad_kernel", narrow_dgrad_kernel<T, TC, 16, false>, grid,
                         k_dg_threads, 0, stream, m, n, k, a, b, alpha, beta, c);
        return;
    }
    switch ((k + 3) / 4) {
    case 1:
        launch_dependent("narrow_dgrad_kernel", narrow_dgrad_kernel<T, TC, 4, true>, grid,
                         k_dg_threads, 0, stream, m, n, k, a, b, alpha, beta, c);
        break;
    case 2:
        launch_dependent("narrow_dgrad_kernel", narrow_dgrad_kernel<T, TC, 8, true>, grid,
                         k_dg_threads, 0, stream, m, n, k, a, b, alpha, beta, c);
        break;
    case 3:
        launch_dependent("narrow_dgrad_kernel", narrow_dgrad_kernel<T, TC, 12, true>, grid,
                         k_dg_threads, 0, stream, m, n, k, a, b, alpha, beta, c);
        break;
    default:
        launch_dependent("narrow_dgrad_kernel", narrow_dgrad_kernel<T, TC, 16, true>, grid,
                         k_dg_threads, 0, stream, m, n, k, a, b, alpha, beta, c);
        break;
    }
}

// Calls f(TypeTag<T>{}) for the operands LtGemm's narrow predicate sends here: float16
// or bfloat16 (fp32, TF32 and fp8 stay with cuBLASLt).
template <class F>
void dispatch_16bit(DType t, const char* op, F&& f)
{
    switch (t) {
    case DType::F16: f(TypeTag<__half>{}); return;
    case DType::BF16: f(TypeTag<bf16>{}); return;
    default: break;
    }
    throw Error(std::string("cuda backend: ") + op +
                ": expected float16 or bfloat16 operands, got " + std::string(dtype_name(t)));
}

} // namespace

void launch_narrow_dgrad(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                         float beta, void* c, DType ct, cudaStream_t stream)
{
    if (k < 1 || k > k_narrow_max)
        throw Error("cuda backend: narrow_dgrad: k must be 1 to " + std::to_string(k_narrow_max) +
                    ", got " + std::to_string(k));
    dispatch_16bit(ab, "narrow_dgrad", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pa = static_cast<const T*>(a);
        const T* pb = static_cast<const T*>(b);
        if (ct == DType::F32)
            launch_dgrad<T, float>(m, n, k, pa, pb, alpha, beta, static_cast<float*>(c), stream);
        else if (ct == ab)
            launch_dgrad<T, T>(m, n, k, pa, pb, alpha, beta, static_cast<T*>(c), stream);
        else
            throw Error("cuda backend: narrow_dgrad: c must be float32 or the operands' dtype, "
                        "got " +
                        std::string(dtype_name(ct)));
    });
    MIXLAB_CUDA_CHECK_LAUNCH("narrow_dgrad_kernel");
}

} // namespace mixlab::cuda
