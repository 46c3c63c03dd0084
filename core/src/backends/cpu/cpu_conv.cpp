// CPU 2-D convolution over NHWC activations and KRSC weights. Worker threads take chunks
// of the batch (one OpenMP region per call): im2col, one GEMM (cpu_sgemm.h), and col2im
// for backward data. fp32 accumulation, one rounding to the buffer's dtype at the end;
// TF32 math rounds both operands first, as cuDNN's tensor-core kernels read them.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/cpu_sgemm.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace mixlab::cpu {

namespace {

// One output pixel's receptive field, (kernel_h, kernel_w, in_c): a row of the im2col
// matrix and a row of the (out_c x patch) weight matrix.
std::size_t patch_size(const ConvGeometry& g)
{
    return std::size_t(g.kernel_h) * g.kernel_w * g.in_c;
}
std::size_t in_pixels(const ConvGeometry& g) { return std::size_t(g.in_h) * g.in_w; }
std::size_t out_pixels(const ConvGeometry& g) { return std::size_t(g.out_h) * g.out_w; }

// A 1x1, stride-1, unpadded convolution reads x itself as its im2col matrix.
bool is_pointwise(const ConvGeometry& g)
{
    return g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
           g.pad_h == 0 && g.pad_w == 0;
}

// im2col moves short runs (kernel_w * in_c floats: 3 for a first layer), and GCC turns
// any copy or zeroing loop into a memmove/memset call that costs more than the run:
// whole 8-float blocks, then an unrolled tail, stay inline.
void copy_short(const float* src, std::size_t n, float* dst)
{
    for (; n >= 8; n -= 8, src += 8, dst += 8) {
        float block[8];
        std::memcpy(block, src, sizeof block);
        std::memcpy(dst, block, sizeof block);
    }
    switch (n) {
    case 7: dst[6] = src[6]; [[fallthrough]];
    case 6: dst[5] = src[5]; [[fallthrough]];
    case 5: dst[4] = src[4]; [[fallthrough]];
    case 4: dst[3] = src[3]; [[fallthrough]];
    case 3: dst[2] = src[2]; [[fallthrough]];
    case 2: dst[1] = src[1]; [[fallthrough]];
    case 1: dst[0] = src[0]; [[fallthrough]];
    default: break;
    }
}

void zero_short(float* dst, std::size_t n)
{
    static constexpr float k_zeros[8] = {};
    for (; n >= 8; n -= 8, dst += 8) std::memcpy(dst, k_zeros, sizeof k_zeros);
    switch (n) {
    case 7: dst[6] = 0.0f; [[fallthrough]];
    case 6: dst[5] = 0.0f; [[fallthrough]];
    case 5: dst[4] = 0.0f; [[fallthrough]];
    case 4: dst[3] = 0.0f; [[fallthrough]];
    case 3: dst[2] = 0.0f; [[fallthrough]];
    case 2: dst[1] = 0.0f; [[fallthrough]];
    case 1: dst[0] = 0.0f; [[fallthrough]];
    default: break;
    }
}

// Copies n values, rounded to TF32 when asked (the tensor cores' operand format).
void copy_values(const float* src, std::size_t n, bool tf32, float* dst)
{
    if (!tf32) {
        copy_short(src, n, dst);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) dst[i] = round_to_tf32(src[i]);
}

const float* tf32_operand(const float* src, std::size_t n, std::vector<float>& scratch)
{
    if (scratch.size() < n) scratch.resize(n);
    copy_values(src, n, true, scratch.data());
    return scratch.data();
}

// The kernel offsets [lo, hi) whose input index start + offset lies inside [0, size).
void valid_span(int start, int kernel, int size, int* lo, int* hi)
{
    *lo = std::max(0, -start);
    *hi = std::min(kernel, size - start);
}

// col (count * out_h * out_w, patch) for images [n0, n0 + count) of x; padding reads 0.
void im2col(const ConvGeometry& g, const float* x, int n0, int count, bool tf32, float* col)
{
    const std::size_t patch = patch_size(g);
    const std::size_t row_len = std::size_t(g.kernel_w) * g.in_c; // one kernel row
    const int per_image = g.out_h * g.out_w;
    const int rows = count * per_image;
    for (int row = 0; row < rows; ++row) {
        const int n = n0 + row / per_image, pq = row % per_image;
        const int h0 = (pq / g.out_w) * g.stride_h - g.pad_h;
        const int w0 = (pq % g.out_w) * g.stride_w - g.pad_w;
        int s_lo = 0, s_hi = 0;
        valid_span(w0, g.kernel_w, g.in_w, &s_lo, &s_hi);
        float* dst = col + std::size_t(row) * patch;
        for (int r = 0; r < g.kernel_h; ++r, dst += row_len) {
            const int h = h0 + r;
            if (h < 0 || h >= g.in_h || s_hi <= s_lo) {
                zero_short(dst, row_len);
                continue;
            }
            // The window's valid pixels are contiguous in NHWC: one copy per kernel row.
            const float* src = x + ((std::size_t(n) * g.in_h + h) * g.in_w + (w0 + s_lo)) * g.in_c;
            zero_short(dst, std::size_t(s_lo) * g.in_c);
            copy_values(src, std::size_t(s_hi - s_lo) * g.in_c, tf32,
                        dst + std::size_t(s_lo) * g.in_c);
            zero_short(dst + std::size_t(s_hi) * g.in_c, row_len - std::size_t(s_hi) * g.in_c);
        }
    }
}

// dx[images n0 .. n0 + count) += col2im(dcol): every patch element adds back into the
// input pixel it was read from.
void col2im_add(const ConvGeometry& g, const float* dcol, int n0, int count, float* dx)
{
    const std::size_t patch = patch_size(g);
    const std::size_t c = std::size_t(g.in_c);
    for (int i = 0; i < count; ++i) {
        float* image = dx + std::size_t(n0 + i) * in_pixels(g) * c;
        const float* rows = dcol + std::size_t(i) * out_pixels(g) * patch;
        for (int p = 0; p < g.out_h; ++p)
            for (int q = 0; q < g.out_w; ++q) {
                const float* src = rows + (std::size_t(p) * g.out_w + q) * patch;
                const int h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
                int s_lo = 0, s_hi = 0;
                valid_span(w0, g.kernel_w, g.in_w, &s_lo, &s_hi);
                for (int r = 0; r < g.kernel_h; ++r) {
                    const int h = h0 + r;
                    if (h < 0 || h >= g.in_h || s_hi <= s_lo) continue;
                    const float* from = src + (std::size_t(r) * g.kernel_w + s_lo) * c;
                    float* to = image + (std::size_t(h) * g.in_w + (w0 + s_lo)) * c;
                    const std::size_t n = std::size_t(s_hi - s_lo) * c;
                    for (std::size_t e = 0; e < n; ++e) to[e] += from[e];
                }
            }
    }
}

std::string forward_algo(const ConvGeometry& g)
{
    return is_pointwise(g) ? std::string("1x1: ") + sgemm_kernel_name()
                           : std::string("im2col + ") + sgemm_kernel_name();
}

// Row-major (rows x cols) matrix, and its transpose, as GEMM operands.
MatrixView rows_of(const float* p, std::size_t cols) { return {p, std::ptrdiff_t(cols), 1}; }
MatrixView transposed(const float* p, std::size_t cols) { return {p, 1, std::ptrdiff_t(cols)}; }

// Multiply-adds of one pass: what decides whether threads are worth waking.
std::size_t conv_macs(const ConvGeometry& g)
{
    return std::size_t(g.batch) * out_pixels(g) * patch_size(g) * std::size_t(g.out_c);
}

int chunk_count(const ConvGeometry& g, int chunk) { return (g.batch + chunk - 1) / chunk; }

} // namespace

int CpuBackend::conv_chunk_images(const ConvGeometry& g) const
{
    // Per image, the scratch holds its im2col rows, or its TF32-rounded dy.
    const std::size_t per_image = out_pixels(g) * std::max(patch_size(g), std::size_t(g.out_c));
    const std::size_t fit = m_conv_chunk_floats / std::max<std::size_t>(per_image, 1);
    // About four chunks per thread, so that a thread slowed by other work leaves its
    // chunks to the others, while each GEMM keeps hundreds of rows.
    const std::size_t share = (std::size_t(g.batch) + 4 * std::size_t(worker_threads()) - 1) /
                              (4 * std::size_t(worker_threads()));
    return int(std::clamp<std::size_t>(std::min(fit, share), 1, std::size_t(g.batch)));
}

int CpuBackend::conv_filter_chunk_images(const ConvGeometry& g) const
{
    const std::size_t per_image = out_pixels(g) * std::max(patch_size(g), std::size_t(g.out_c));
    const std::size_t fit = m_conv_chunk_floats / std::max<std::size_t>(per_image, 1);
    const std::size_t share =
        (std::size_t(g.batch) + 2 * k_filter_lanes - 1) / (2 * std::size_t(k_filter_lanes));
    return int(std::clamp<std::size_t>(std::min(fit, share), 1, std::size_t(g.batch)));
}

void CpuBackend::reserve_conv(const ConvGeometry& g, MathMode math)
{
    const bool tf32 = math == MathMode::TF32;
    const std::size_t scratches = std::max<std::size_t>(worker_threads(), k_filter_lanes);
    if (m_conv.size() < scratches) m_conv.resize(scratches);
    const int rows =
        std::max(conv_chunk_images(g), conv_filter_chunk_images(g)) * int(out_pixels(g));
    const int patch = int(patch_size(g)), k = g.out_c;
    const std::size_t col = is_pointwise(g) && !tf32 ? 0 : std::size_t(rows) * patch;
    const std::size_t dy = tf32 ? std::size_t(rows) * k : 0;
    const std::size_t dw = std::size_t(k) * patch;
    for (ConvScratch& s : m_conv) {
        if (s.col.size() < col) s.col.resize(col);
        if (s.dy.size() < dy) s.dy.resize(dy);
        if (s.dw.size() < dw) s.dw.resize(dw);
        sgemm_reserve(rows, k, patch, s.gemm); // forward
        sgemm_reserve(rows, patch, k, s.gemm); // backward data
        sgemm_reserve(k, patch, rows, s.gemm); // backward filter
    }
    if (tf32 && m_tf32_w.size() < dw) m_tf32_w.resize(dw);
}

ConvPlanInfo CpuBackend::conv2d_prepare(const ConvGeometry& g, DType dtype, MathMode math)
{
    validate::conv2d_prepare(k_name, g, dtype);
    reserve_conv(g, math);
    const std::size_t rows =
        std::size_t(std::max(conv_chunk_images(g), conv_filter_chunk_images(g))) * out_pixels(g);
    const std::size_t per_thread =
        (is_pointwise(g) && math != MathMode::TF32 ? 0 : rows * patch_size(g)) +
        (math == MathMode::TF32 ? rows * std::size_t(g.out_c) : 0);

    ConvPlanInfo info;
    info.forward_algo = forward_algo(g);
    info.backward_data_algo = is_pointwise(g) ? std::string("1x1: ") + sgemm_kernel_name()
                                              : sgemm_kernel_name() + std::string(" + col2im");
    info.backward_filter_algo = forward_algo(g);
    info.tensor_cores = false;
    info.workspace_bytes = std::int64_t(per_thread * m_conv.size() * sizeof(float));
    return info;
}

void CpuBackend::conv2d_forward(const ConvGeometry& g, const Buffer& x, const Buffer& w,
                                MathMode math, Buffer& y)
{
    validate::conv2d(k_name, "conv2d_forward", g, x, w, y);
    reserve_conv(g, math);
    const bool tf32 = math == MathMode::TF32;
    const std::size_t patch = patch_size(g), k = std::size_t(g.out_c);
    const float* pw = tf32 ? tf32_operand(w.as<float>(), k * patch, m_tf32_w) : w.as<float>();
    const bool direct = is_pointwise(g) && !tf32;
    const int chunk = conv_chunk_images(g), chunks = chunk_count(g, chunk);
    const float* px = x.as<float>();
    float* py = y.as<float>();
    const DType out_t = y.dtype();

    MIXLAB_OMP_FOR_DYNAMIC_IF(conv_macs(g))
    for (int ci = 0; ci < chunks; ++ci) {
        ConvScratch& s = m_conv[std::size_t(worker_index())];
        const int n0 = ci * chunk, count = std::min(chunk, g.batch - n0);
        const std::size_t rows = std::size_t(count) * out_pixels(g);
        const float* a = px + std::size_t(n0) * in_pixels(g) * g.in_c;
        if (!direct) {
            im2col(g, px, n0, count, tf32, s.col.data());
            a = s.col.data();
        }
        float* out = py + std::size_t(n0) * out_pixels(g) * k;
        // y (rows x out_c) = col (rows x patch) . W^T (patch x out_c)
        sgemm(int(rows), int(k), int(patch), rows_of(a, patch), transposed(pw, patch), out,
              std::ptrdiff_t(k), false, s.gemm);
        round_span(out_t, out, rows * k);
    }
}

void CpuBackend::conv2d_backward_data(const ConvGeometry& g, const Buffer& dy, const Buffer& w,
                                      MathMode math, Buffer& dx)
{
    validate::conv2d(k_name, "conv2d_backward_data", g, dx, w, dy);
    reserve_conv(g, math);
    const bool tf32 = math == MathMode::TF32;
    const std::size_t patch = patch_size(g), k = std::size_t(g.out_c);
    const float* pw = tf32 ? tf32_operand(w.as<float>(), k * patch, m_tf32_w) : w.as<float>();
    const bool direct = is_pointwise(g);
    const std::size_t x_image = in_pixels(g) * g.in_c;
    const int chunk = conv_chunk_images(g), chunks = chunk_count(g, chunk);
    const float* pdy = dy.as<float>();
    float* pdx = dx.as<float>();
    const DType out_t = dx.dtype();

    MIXLAB_OMP_FOR_DYNAMIC_IF(conv_macs(g))
    for (int ci = 0; ci < chunks; ++ci) {
        ConvScratch& s = m_conv[std::size_t(worker_index())];
        const int n0 = ci * chunk, count = std::min(chunk, g.batch - n0);
        const std::size_t rows = std::size_t(count) * out_pixels(g);
        const float* d = pdy + std::size_t(n0) * out_pixels(g) * k;
        if (tf32) {
            copy_values(d, rows * k, true, s.dy.data());
            d = s.dy.data();
        }
        float* out = pdx + std::size_t(n0) * x_image;
        // dcol (rows x patch) = dy (rows x out_c) . W (out_c x patch), then scattered back;
        // a 1x1 convolution's dcol is dx itself.
        sgemm(int(rows), int(patch), int(k), rows_of(d, k), rows_of(pw, patch),
              direct ? out : s.col.data(), std::ptrdiff_t(patch), false, s.gemm);
        if (!direct) {
            // Overlapping windows add into the same input pixel: col2im accumulates.
            std::fill(out, out + std::size_t(count) * x_image, 0.0f);
            col2im_add(g, s.col.data(), n0, count, pdx);
        }
        round_span(out_t, out, std::size_t(count) * x_image);
    }
}

void CpuBackend::conv2d_backward_filter(const ConvGeometry& g, const Buffer& x, const Buffer& dy,
                                        MathMode math, Buffer& dw)
{
    validate::conv2d(k_name, "conv2d_backward_filter", g, x, dw, dy);
    reserve_conv(g, math);
    const bool tf32 = math == MathMode::TF32;
    const std::size_t patch = patch_size(g), k = std::size_t(g.out_c);
    const bool direct = is_pointwise(g) && !tf32;
    const int chunk = conv_filter_chunk_images(g), chunks = chunk_count(g, chunk);
    const float* px = x.as<float>();
    const float* pdy = dy.as<float>();
    // Lane l sums chunks [l * chunks / lanes, (l + 1) * chunks / lanes) in order, dy^T
    // (out_c x rows) . col (rows x patch), into its own partial; the partials are then
    // added in lane order (k_filter_lanes says why not by thread).
    const int lanes = std::min(k_filter_lanes, chunks);
    const std::size_t size = k * patch;
    MIXLAB_OMP_FOR_IF(conv_macs(g))
    for (int lane = 0; lane < lanes; ++lane) {
        ConvScratch& s = m_conv[std::size_t(lane)];
        std::fill(s.dw.begin(), s.dw.begin() + std::ptrdiff_t(size), 0.0f);
        const int first = lane * chunks / lanes, last = (lane + 1) * chunks / lanes;
        for (int ci = first; ci < last; ++ci) {
            const int n0 = ci * chunk, count = std::min(chunk, g.batch - n0);
            const std::size_t rows = std::size_t(count) * out_pixels(g);
            const float* a = px + std::size_t(n0) * in_pixels(g) * g.in_c;
            if (!direct) {
                im2col(g, px, n0, count, tf32, s.col.data());
                a = s.col.data();
            }
            const float* d = pdy + std::size_t(n0) * out_pixels(g) * k;
            if (tf32) {
                copy_values(d, rows * k, true, s.dy.data());
                d = s.dy.data();
            }
            sgemm(int(k), int(patch), int(rows), transposed(d, k), rows_of(a, patch), s.dw.data(),
                  std::ptrdiff_t(patch), true, s.gemm);
        }
    }

    float* out = dw.as<float>();
    MIXLAB_OMP_FOR_IF(size * std::size_t(lanes))
    for (std::size_t i = 0; i < size; ++i) {
        float sum = m_conv[0].dw[i];
        for (int lane = 1; lane < lanes; ++lane) sum += m_conv[std::size_t(lane)].dw[i];
        out[i] = sum;
    }
    round_span(dw.dtype(), out, size);
}

} // namespace mixlab::cpu
