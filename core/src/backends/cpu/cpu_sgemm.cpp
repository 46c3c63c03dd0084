// Blocked GEMM for the CPU convolutions: B packed into 16-column slivers, A read in place,
// a 6x16 AVX2/FMA micro-kernel compiled as a function target and picked at run time (the
// library still runs on any x86-64), blocks of 96 rows x 256 deep; else Eigen.
#include "backends/cpu/cpu_sgemm.h"

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MIXLAB_SGEMM_AVX2 1
#endif

namespace mixlab::cpu {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<const RowMat, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
using OutMap = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

void eigen_sgemm(int m, int n, int k, MatrixView a, MatrixView b, float* c, std::ptrdiff_t ldc,
                 bool accumulate)
{
    using Stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    const StridedMap ma(a.data, m, k, Stride(a.row_stride, a.col_stride));
    const StridedMap mb(b.data, k, n, Stride(b.row_stride, b.col_stride));
    OutMap mc(c, m, n, Eigen::OuterStride<>(ldc));
    if (accumulate)
        mc.noalias() += ma * mb;
    else
        mc.noalias() = ma * mb;
}

#if defined(MIXLAB_SGEMM_AVX2)

constexpr int k_mr = 6;   // micro-tile rows: 6 x 2 accumulators + 2 B vectors + 1 A broadcast
constexpr int k_nr = 16;  // micro-tile columns: two 8-float AVX vectors
constexpr int k_mc = 96;  // A rows per block (a multiple of k_mr): 96 x 256 floats, in L2
constexpr int k_kc = 256; // depth block

int round_up(int v, int to) { return (v + to - 1) / to * to; }

std::atomic<bool> g_force_portable{false};

bool cpu_has_avx2_fma()
{
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has && !g_force_portable.load(std::memory_order_relaxed);
}

// B rows [pc, pc + kc) as slivers of k_nr columns: sliver s holds (p, jj) at
// (s * kc + p) * k_nr + jj, zero-padded past column n.
void pack_b(MatrixView b, int pc, int kc, int n, float* out)
{
    const int slivers = (n + k_nr - 1) / k_nr;
    for (int s = 0; s < slivers; ++s) {
        float* dst = out + std::size_t(s) * kc * k_nr;
        const int j0 = s * k_nr, nr = std::min(k_nr, n - j0);
        for (int p = 0; p < kc; ++p, dst += k_nr) {
            const float* row = b.data + (pc + p) * b.row_stride + j0 * b.col_stride;
            int jj = 0;
            for (; jj < nr; ++jj) dst[jj] = row[jj * b.col_stride];
            for (; jj < k_nr; ++jj) dst[jj] = 0.0f;
        }
    }
}

// tile (k_mr x k_nr, row-major) = A rows [0, mr) . packed B sliver, over kc. A is read
// in place through its strides: row-major A streams each row, a transposed one reads 6
// adjacent floats per step, so packing it would only add a copy. Rows past mr repeat
// row 0 (in bounds); their results are never stored.
__attribute__((target("avx2,fma"))) void kernel_6x16(int kc, const float* a, std::ptrdiff_t rs,
                                                     std::ptrdiff_t cs, int mr, const float* b,
                                                     float* tile)
{
    const float* a0 = a;
    const float* a1 = mr > 1 ? a + rs : a;
    const float* a2 = mr > 2 ? a + 2 * rs : a;
    const float* a3 = mr > 3 ? a + 3 * rs : a;
    const float* a4 = mr > 4 ? a + 4 * rs : a;
    const float* a5 = mr > 5 ? a + 5 * rs : a;
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    for (int p = 0; p < kc; ++p, b += k_nr) {
        const std::ptrdiff_t at = p * cs;
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        __m256 ai = _mm256_broadcast_ss(a0 + at);
        c00 = _mm256_fmadd_ps(ai, b0, c00);
        c01 = _mm256_fmadd_ps(ai, b1, c01);
        ai = _mm256_broadcast_ss(a1 + at);
        c10 = _mm256_fmadd_ps(ai, b0, c10);
        c11 = _mm256_fmadd_ps(ai, b1, c11);
        ai = _mm256_broadcast_ss(a2 + at);
        c20 = _mm256_fmadd_ps(ai, b0, c20);
        c21 = _mm256_fmadd_ps(ai, b1, c21);
        ai = _mm256_broadcast_ss(a3 + at);
        c30 = _mm256_fmadd_ps(ai, b0, c30);
        c31 = _mm256_fmadd_ps(ai, b1, c31);
        ai = _mm256_broadcast_ss(a4 + at);
        c40 = _mm256_fmadd_ps(ai, b0, c40);
        c41 = _mm256_fmadd_ps(ai, b1, c41);
        ai = _mm256_broadcast_ss(a5 + at);
        c50 = _mm256_fmadd_ps(ai, b0, c50);
        c51 = _mm256_fmadd_ps(ai, b1, c51);
    }
    _mm256_storeu_ps(tile + 0, c00);
    _mm256_storeu_ps(tile + 8, c01);
    _mm256_storeu_ps(tile + 16, c10);
    _mm256_storeu_ps(tile + 24, c11);
    _mm256_storeu_ps(tile + 32, c20);
    _mm256_storeu_ps(tile + 40, c21);
    _mm256_storeu_ps(tile + 48, c30);
    _mm256_storeu_ps(tile + 56, c31);
    _mm256_storeu_ps(tile + 64, c40);
    _mm256_storeu_ps(tile + 72, c41);
    _mm256_storeu_ps(tile + 80, c50);
    _mm256_storeu_ps(tile + 88, c51);
}

// The valid (mr x nr) corner of a tile into C: stored, or added to what C holds. Full
// rows use fixed-size copies: a variable-length copy loop becomes a memcpy call, which
// costs more than a short depth block's whole product.
void store_tile(const float* tile, int mr, int nr, float* c, std::ptrdiff_t ldc, bool add)
{
    for (int i = 0; i < mr; ++i) {
        float* row = c + i * ldc;
        const float* t = tile + i * k_nr;
        if (nr == k_nr) {
            if (add)
                for (int j = 0; j < k_nr; ++j) row[j] += t[j];
            else
                std::memcpy(row, t, k_nr * sizeof(float));
        } else if (add) {
            for (int j = 0; j < nr; ++j) row[j] += t[j];
        } else {
            for (int j = 0; j < nr; ++j) row[j] = t[j];
        }
    }
}

void packed_sgemm(int m, int n, int k, MatrixView a, MatrixView b, float* c, std::ptrdiff_t ldc,
                  bool accumulate, SgemmScratch& scratch)
{
    sgemm_reserve(m, n, k, scratch);
    // Depth blocks of equal size (a multiple of 8), so no block is a thin remainder.
    const int k_blocks = (k + k_kc - 1) / k_kc;
    const int kc_max = round_up((k + k_blocks - 1) / k_blocks, 8);
    float* packed_b = scratch.packed_b.data();
    alignas(32) float tile[k_mr * k_nr];

    for (int pc = 0; pc < k; pc += kc_max) {
        const int kc = std::min(kc_max, k - pc);
        const bool add = accumulate || pc > 0;
        pack_b(b, pc, kc, n, packed_b);
        const float* a_block = a.data + pc * a.col_stride;
        // A block of k_mc rows stays in L2 while every B sliver streams past it.
        for (int ic = 0; ic < m; ic += k_mc) {
            const int mc = std::min(k_mc, m - ic);
            for (int jr = 0; jr < n; jr += k_nr) {
                const float* bp = packed_b + std::size_t(jr / k_nr) * kc * k_nr;
                for (int ir = 0; ir < mc; ir += k_mr) {
                    const int mr = std::min(k_mr, mc - ir);
                    kernel_6x16(kc, a_block + (ic + ir) * a.row_stride, a.row_stride, a.col_stride,
                                mr, bp, tile);
                    store_tile(tile, mr, std::min(k_nr, n - jr), c + (ic + ir) * ldc + jr, ldc,
                               add);
                }
            }
        }
    }
}

#endif // MIXLAB_SGEMM_AVX2

} // namespace

void sgemm_reserve(int m, int n, int k, SgemmScratch& scratch)
{
#if defined(MIXLAB_SGEMM_AVX2)
    if (!cpu_has_avx2_fma()) return;
    const std::size_t b = std::size_t(std::min(k, k_kc) + 8) * round_up(std::max(n, 1), k_nr);
    if (scratch.packed_b.size() < b) scratch.packed_b.resize(b);
#else
    (void)n, (void)k, (void)scratch;
#endif
    (void)m; // B's packing alone needs room; A is read in place
}

void sgemm(int m, int n, int k, MatrixView a, MatrixView b, float* c, std::ptrdiff_t ldc,
           bool accumulate, SgemmScratch& scratch)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        if (!accumulate)
            for (int i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
        return;
    }
#if defined(MIXLAB_SGEMM_AVX2)
    if (cpu_has_avx2_fma()) {
        packed_sgemm(m, n, k, a, b, c, ldc, accumulate, scratch);
        return;
    }
#endif
    (void)scratch;
    eigen_sgemm(m, n, k, a, b, c, ldc, accumulate);
}

const char* sgemm_kernel_name()
{
#if defined(MIXLAB_SGEMM_AVX2)
    if (cpu_has_avx2_fma()) return "AVX2/FMA packed GEMM";
#endif
    return "Eigen GEMM";
}

void sgemm_force_portable(bool on)
{
#if defined(MIXLAB_SGEMM_AVX2)
    g_force_portable.store(on, std::memory_order_relaxed);
#else
    (void)on;
#endif
}

} // namespace mixlab::cpu
