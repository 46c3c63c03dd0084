// The narrow GEMMs (narrow_gemm.cuh): a classifier head's forward GEMM and its input
// gradient. Neither has work for a tensor core; each is bound by one big operand's bytes.
//
// Forward, C (m x n) = A B^T with n <= 16: cuBLASLt sees C^T = B A^T, its m our n = 10,
// where its tensor-core tiles are built for tens to hundreds of rows, so most of a
// tile's work would multiply padding (the kernel it picks was not profiled). The bytes
// to move are A's (4096 x 1000 16-bit values, 8 MB: ~2.5 us at an H100's 3.35 TB/s);
// the math is m*NP*k fmas (n padded to NP, a multiple of 4: 49 M for the head, ~2 us of
// an H100's fp32 pipes with the shared loads beside them), so loads must be in flight
// while the math runs. A block takes 32 rows of A; its 8 warps split k, each walking
// its part in 16-value (32-byte) chunks. Lanes 2i and 2i+1 share rows i and i+16: lane
// 2i+h reads the h-th 16 bytes of each chunk of both rows, so one load instruction takes
// 16 whole 32-byte sectors, and each of B's values read from shared memory feeds two
// rows (half the shared loads of a lane that owns one row). A warp issues 4 chunks'
// loads a round (4 KB), the next round's before this round's math: up to 8 KB a warp,
// 64 KB a block, in flight. B sits in shared memory as fp32, interleaved so that at
// every step the even lanes read one address and the odd lanes another, NP floats
// apart: two broadcasts in different banks. 48 KB of it (static: no opt-in, so every
// architecture takes it) holds 768 to 3072 values of k (12288 / NP); the seed's
// 1000 x 10 (NP 12) is one tile, and each later tile costs one wait for its copy. The
// warps' sums for each output are added in warp order in shared memory, then alpha,
// beta and the bias, and one rounding. NP 12 and 16 take ~150 registers (sm_90): one
// block an SM, the head's 128 blocks one wave. Not yet measured on a GPU.
//
// Input gradient, C (m x n) = A B with k <= 16: A's rows (k 16-bit values, 20 bytes for
// k = 10) are not 16-byte aligned, so no tensor-core kernel reads A (bench/NOTES.md 34:
// 6.9-7.3 us for the head's). The bytes to move are C's (4096 x 1000: 8 MB in 16 bits,
// ~2.5 us; A and B are 80 and 20 KB). A thread writes 8 consecutive columns of a row (one
// 16-byte store of 16-bit values) from B's k x 8 slice, loaded once into registers,
// looping over rows whose k values of A the block staged in shared memory (each read a
// broadcast). A block is 256 columns by 64 rows, each warp every 8th row; the head is
// 64 x 4 blocks. m*n*KP fmas (49 M for KP 12) run beside the stores. Not yet measured
// on a GPU.
#include "backends/cuda/narrow_gemm.cuh"

#include "backends/cuda/column_reduce.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_types.cuh"

#include <algorithm>
#include <cstddef>
#include <string>

namespace mixlab::cuda {

namespace {

// ---- forward ----------------------------------------------------------------------------

constexpr int k_fwd_warps = 8;
constexpr int k_fwd_threads = 32 * k_fwd_warps;
constexpr int k_fwd_rows = 32; // rows of A a block: two a lane pair
constexpr int k_chunk = 16;    // values of k a lane pair reads of a row at once
constexpr int k_half = k_chunk / 2;
constexpr int k_fwd_unroll = 4;   // chunks whose loads a warp issues a round
constexpr int k_fwd_smem = 12288; // floats of B a tile (48 KB), reused for the warps' sums
static_assert(k_fwd_warps * k_fwd_rows * k_narrow_max <= k_fwd_smem, "the sums fit B's tile");

// Values of k a tile for B's rows padded to NP floats: a whole number of chunks.
constexpr int fwd_tile(int np) { return k_fwd_smem / np / k_chunk * k_chunk; }

// One lane's half chunk of its two rows: 8 values each, kept packed two a word until
// the math (bfloat16 values unpacked one a register would double the loads' registers).
struct HalfChunks {
    uint4 r[2];
};

// The two 16-bit values of a packed word (the lower address in the low half) as floats.
template <class T>
__device__ __forceinline__ float2 unpack2(unsigned w);
template <>
__device__ __forceinline__ float2 unpack2<bf16>(unsigned w)
{
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(unsigned w)
{
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
}

// grid: one block per 32 rows of A. NP: n rounded up to 4 (B's rows in shared memory,
// zero past n). Vec: k a multiple of 8 and A and B 16-byte aligned, so every half chunk
// is one 16-byte load; else each value is loaded alone (k ragged or A misaligned).
template <class T, int NP, bool Vec>
__global__ void __launch_bounds__(k_fwd_threads, NP <= 8 ? 2 : 1)
    narrow_forward_kernel(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b,
                          float alpha, float beta, AnyConst c_in, AnyMut c, AnyConst bias)
{
    constexpr int tile = fwd_tile(NP);
    // B's tile: value kk = 16 c + 8 h + e of row j at float (16 c + 2 e + h) NP + j, so the
    // lanes of half h read row 2e + h of chunk c's 16 rows of NP floats.
    __shared__ __align__(16) float smem[k_fwd_smem];
    const int t = int(threadIdx.x);
    const int lane = t % 32, w = t / 32, h = lane % 2;
    const int row0 = int(blockIdx.x) * k_fwd_rows;
    const int ra = row0 + lane / 2, rb = ra + k_fwd_rows / 2;
    const bool ok_a = ra < m, ok_b = rb < m;
    const T* pa = a + std::size_t(ok_a ? ra : 0) * k;
    const T* pb = a + std::size_t(ok_b ? rb : 0) * k;

    float acc[2][NP];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < NP; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += tile) {
        const int len = min(tile, k - k0);
        const int chunks = (len + k_chunk - 1) / k_chunk;
        // The warps take consecutive runs of chunks; the last runs may be short or empty.
        const int per_warp = (chunks + k_fwd_warps - 1) / k_fwd_warps;
        const int c_begin = w * per_warp, c_end = min(chunks, c_begin + per_warp);
        const int rounds =
            c_end > c_begin ? (c_end - c_begin + k_fwd_unroll - 1) / k_fwd_unroll : 0;

        const auto load_half = [&](uint4& v, const T* row, bool ok, int kk) {
            if constexpr (Vec) {
                v = ok && kk < len ? *reinterpret_cast<const uint4*>(row + k0 + kk)
                                   : make_uint4(0, 0, 0, 0);
            } else {
                // The values' bits, zero past k (both 16-bit zeros are all-zero bits).
                const auto* bits = reinterpret_cast<const unsigned short*>(row + k0 + kk);
                unsigned word[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const unsigned lo = ok && kk + 2 * e < len ? bits[2 * e] : 0u;
                    const unsigned hi = ok && kk + 2 * e + 1 < len ? bits[2 * e + 1] : 0u;
                    word[e] = lo | hi << 16;
                }
                v = make_uint4(word[0], word[1], word[2], word[3]);
            }
        };
        const auto load_round = [&](HalfChunks(&p)[k_fwd_unroll], int r) {
#pragma unroll
            for (int u = 0; u < k_fwd_unroll; ++u) {
                const int ch = c_begin + r * k_fwd_unroll + u;
                const int kk = ch < c_end ? ch * k_chunk + h * k_half : len; // len: zeros
                load_half(p[u].r[0], pa, ok_a, kk);
                load_half(p[u].r[1], pb, ok_b, kk);
            }
        };
        const auto math_round = [&](const HalfChunks(&p)[k_fwd_unroll], int r) {
#pragma unroll
            for (int u = 0; u < k_fwd_unroll; ++u) {
                const int ch = c_begin + r * k_fwd_unroll + u;
                // Past the run B's tile holds stale values (a NaN times zero is NaN).
                if (ch >= c_end) break;
                const float* bp = smem + (ch * k_chunk + h) * NP;
                const unsigned w0[4] = {p[u].r[0].x, p[u].r[0].y, p[u].r[0].z, p[u].r[0].w};
                const unsigned w1[4] = {p[u].r[1].x, p[u].r[1].y, p[u].r[1].z, p[u].r[1].w};
#pragma unroll
                for (int e = 0; e < k_half; ++e) {
                    const float2 v0 = unpack2<T>(w0[e / 2]), v1 = unpack2<T>(w1[e / 2]);
                    const float x0 = e % 2 ? v0.y : v0.x, x1 = e % 2 ? v1.y : v1.x;
#pragma unroll
                    for (int q = 0; q < NP; q += 4) {
                        const float4 bq = *reinterpret_cast<const float4*>(bp + 2 * e * NP + q);
                        acc[0][q] = fmaf(x0, bq.x, acc[0][q]);
                        acc[0][q + 1] = fmaf(x0, bq.y, acc[0][q + 1]);
                        acc[0][q + 2] = fmaf(x0, bq.z, acc[0][q + 2]);
                        acc[0][q + 3] = fmaf(x0, bq.w, acc[0][q + 3]);
                        acc[1][q] = fmaf(x1, bq.x, acc[1][q]);
                        acc[1][q + 1] = fmaf(x1, bq.y, acc[1][q + 1]);
                        acc[1][q + 2] = fmaf(x1, bq.z, acc[1][q + 2]);
                        acc[1][q + 3] = fmaf(x1, bq.w, acc[1][q + 3]);
                    }
                }
            }
        };

        // A's first two rounds' loads go out before B's copy (registers only), so the two
        // overlap: for the seed's head (k = 1000: two rounds a warp) every load of A. With
        // only the first round ahead of the copy the kernel took 10.2 us on an H100
        // against cuBLASLt's 9.4 (bench/NOTES.md 44).
        HalfChunks buf0[k_fwd_unroll], buf1[k_fwd_unroll];
        load_round(buf0, 0);
        if (rounds > 1) load_round(buf1, 1);
        if (k0 > 0) __syncthreads(); // every warp is done with the last tile of B
        for (int i = t; i < NP * 2 * chunks; i += k_fwd_threads) {
            const int j = i % NP, g = i / NP; // g: a half chunk, 8 values of k
            const int kk = g * k_half;
            float v[k_half];
            if (j < n && kk < len) {
                const T* src = b + std::size_t(j) * k + k0 + kk;
                if constexpr (Vec) {
                    load_vec<T, k_half>(src, v);
                } else {
#pragma unroll
                    for (int e = 0; e < k_half; ++e) v[e] = kk + e < len ? to_f32(src[e]) : 0.0f;
                }
            } else {
#pragma unroll
                for (int e = 0; e < k_half; ++e) v[e] = 0.0f;
            }
            float* dst = smem + ((g / 2) * k_chunk + g % 2) * NP + j;
#pragma unroll
            for (int e = 0; e < k_half; ++e) dst[2 * e * NP] = v[e];
        }
        __syncthreads();
        // Two buffers: the next round's loads go out before this round's math (round 1's
        // went out above).
        for (int r = 0; r < rounds; r += 2) {
            if (r > 0 && r + 1 < rounds) load_round(buf1, r + 1);
            math_round(buf0, r);
            if (r + 1 >= rounds) break;
            if (r + 2 < rounds) load_round(buf0, r + 2);
            math_round(buf1, r + 1);
        }
    }

    // The lane pair's halves: row ra's sum on the even lane, rb's on the odd one (each row's
    // sum made by one lane, so always in one order). Then the warps' sums in warp order.
    __syncthreads();    // B's last tile read: its space takes the sums
    float* sums = smem; // [warp][row][NP]
    const int own_row = h == 0 ? lane / 2 : lane / 2 + k_fwd_rows / 2;
#pragma unroll
    for (int j = 0; j < NP; ++j) {
        const float give = h == 0 ? acc[1][j] : acc[0][j];
        const float got = __shfl_xor_sync(0xffffffffu, give, 1);
        const float mine = h == 0 ? acc[0][j] : acc[1][j];
        sums[(w * k_fwd_rows + own_row) * NP + j] = mine + got;
    }
    __syncthreads();
    for (int o = t; o < k_fwd_rows * n; o += k_fwd_threads) {
        const int r = o / n, j = o % n;
        const int row = row0 + r;
        if (row >= m) break;
        float s = sums[r * NP + j];
#pragma unroll
        for (int v = 1; v < k_fwd_warps; ++v) s += sums[(v * k_fwd_rows + r) * NP + j];
        s *= alpha;
        const std::size_t at = std::size_t(row) * n + j;
        if (beta != 0.0f) s = fmaf(beta, c_in.load(at), s);
        if (bias.p) s += bias.load(j);
        c.store(at, s);
    }
}

template <class T, int NP, bool Vec>
void launch_forward(int m, int n, int k, const T* a, const T* b, float alpha, float beta, void* c,
                    DType ct, const void* bias, DType bias_t, cudaStream_t stream)
{
    const unsigned blocks = unsigned((m + k_fwd_rows - 1) / k_fwd_rows);
    narrow_forward_kernel<T, NP, Vec><<<blocks, k_fwd_threads, 0, stream>>>(
        m, n, k, a, b, alpha, beta, AnyConst{c, ct}, AnyMut{c, ct}, AnyConst{bias, bias_t});
}

// ---- input gradient ---------------------------------------------------------------------

constexpr int k_dg_cols = 8; // columns a thread: one 16-byte store of 16-bit C
constexpr int k_dg_warps = 8;
constexpr int k_dg_threads = 32 * k_dg_warps;
constexpr int k_dg_block_cols = 32 * k_dg_cols; // a warp's lanes across the columns
constexpr int k_dg_rows = 64;                   // rows a block; warp w takes w, w + 8, ...

// grid (row blocks, column blocks). KP: k rounded up to 4 (B's slice and A's staged rows
// zero past k). Vec: n a multiple of 8 and B and C 16-byte aligned (16-byte loads of B,
// 16-byte stores of C); else each column alone. B's slice takes KP x 8 registers: KP 16
// leaves one block of 256 threads an SM room for no other.
template <class T, class TC, int KP, bool Vec>
__global__ void __launch_bounds__(k_dg_threads, KP <= 12 ? 2 : 1)
    narrow_dgrad_kernel(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b,
                        float alpha, float beta, TC* __restrict__ c)
{
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
        narrow_dgrad_kernel<T, TC, 16, false>
            <<<grid, k_dg_threads, 0, stream>>>(m, n, k, a, b, alpha, beta, c);
        return;
    }
    switch ((k + 3) / 4) {
    case 1:
        narrow_dgrad_kernel<T, TC, 4, true>
            <<<grid, k_dg_threads, 0, stream>>>(m, n, k, a, b, alpha, beta, c);
        break;
    case 2:
        narrow_dgrad_kernel<T, TC, 8, true>
            <<<grid, k_dg_threads, 0, stream>>>(m, n, k, a, b, alpha, beta, c);
        break;
    case 3:
        narrow_dgrad_kernel<T, TC, 12, true>
            <<<grid, k_dg_threads, 0, stream>>>(m, n, k, a, b, alpha, beta, c);
        break;
    default:
        narrow_dgrad_kernel<T, TC, 16, true>
            <<<grid, k_dg_threads, 0, stream>>>(m, n, k, a, b, alpha, beta, c);
        break;
    }
}

// Calls f(TypeTag<T>{}) for the operands LtGemm's narrow predicates send here: float16
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

void launch_narrow_forward(int m, int n, int k, const void* a, const void* b, DType ab, float alpha,
                           float beta, void* c, DType ct, const void* bias, DType bias_t,
                           cudaStream_t stream)
{
    if (n < 1 || n > k_narrow_max)
        throw Error("cuda backend: narrow_forward: n must be 1 to " + std::to_string(k_narrow_max) +
                    ", got " + std::to_string(n));
    const bool vec = k % k_half == 0 && aligned16(a) && aligned16(b);
    dispatch_16bit(ab, "narrow_forward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pa = static_cast<const T*>(a);
        const T* pb = static_cast<const T*>(b);
        // The one-value path for every n (NP 16): it serves only shapes off the usual
        // layouts.
        if (!vec) {
            launch_forward<T, 16, false>(m, n, k, pa, pb, alpha, beta, c, ct, bias, bias_t, stream);
            return;
        }
        switch ((n + 3) / 4) {
        case 1:
            launch_forward<T, 4, true>(m, n, k, pa, pb, alpha, beta, c, ct, bias, bias_t, stream);
            break;
        case 2:
            launch_forward<T, 8, true>(m, n, k, pa, pb, alpha, beta, c, ct, bias, bias_t, stream);
            break;
        case 3:
            launch_forward<T, 12, true>(m, n, k, pa, pb, alpha, beta, c, ct, bias, bias_t, stream);
            break;
        default:
            launch_forward<T, 16, true>(m, n, k, pa, pb, alpha, beta, c, ct, bias, bias_t, stream);
            break;
        }
    });
    MIXLAB_CUDA_CHECK_LAUNCH("narrow_forward_kernel");
}

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
