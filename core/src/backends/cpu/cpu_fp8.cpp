// CPU fp8 ops (mixed_fp8's delayed scaling): quantize a matrix to E4M3/E5M2 with its
// block's scale (and its transpose, and its column sums, and relu's backward gate, in the
// same pass), folding max|x| into the block's current amax slot; transpose a quantized
// matrix; and the once-a-step scale update from the amax history. An fp8
// buffer on the CPU holds floats equal to the fp8 values it stores: the scaled values,
// not descaled (the GEMM multiplies by scale_inv). Rounding is hd_math.h's, bit for bit
// the CUDA kernels'.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate_fp8.h"
#include "base/hd_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mixlab::cpu {

namespace {

hd::Fp8Format format_of(DType t) { return t == DType::F8E5M2 ? hd::k_e5m2 : hd::k_e4m3; }

} // namespace

void CpuBackend::fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                              int history_len, bool record_amax, Buffer* y, Buffer* y_t,
                              Buffer* col_sums, const Buffer* relu_gate, const Buffer* relu_mask,
                              Buffer* relu_mask_out)
{
    validate::fp8_quantize(k_name, x, rows, cols, meta, block, history_len, y, y_t, col_sums,
                           relu_gate, relu_mask, relu_mask_out);
    float* m = meta.as<float>() + block * fp8_block_floats(history_len);
    const float scale = m[k_fp8_scale];
    const hd::Fp8Format fmt = format_of(y ? y->dtype() : y_t->dtype());
    const float* px = x.as<float>();
    const float* gate = relu_gate ? relu_gate->as<float>() : nullptr;
    float* py = y ? y->as<float>() : nullptr;
    float* pt = y_t ? y_t->as<float>() : nullptr;
    float* sums = col_sums ? col_sums->as<float>() : nullptr;
    const auto* mask = relu_mask ? relu_mask->as<std::uint32_t>() : nullptr;
    auto* mask_out = relu_mask_out ? relu_mask_out->as<std::uint32_t>() : nullptr;
    const std::size_t r_n = std::size_t(rows), c_n = std::size_t(cols);
    const std::size_t words = std::size_t(relu_mask_words(cols));
    if (mask_out) std::fill(mask_out, mask_out + r_n * words, 0u);
    // k padded with zeros (mixlab/backend.h's fp8_padded): y's rows, y_t's columns.
    const std::size_t y_ld = std::size_t(fp8_padded(cols)), t_ld = std::size_t(fp8_padded(rows));
    if (py) std::fill(py, py + r_n * y_ld, 0.0f);
    if (pt) std::fill(pt, pt + c_n * t_ld, 0.0f);
    if (sums) std::fill(sums, sums + c_n, 0.0f);
    // amax of the unscaled values, finite ones only: an inf or NaN says nothing about the
    // range the next steps need (and would pin the scale); the values themselves saturate.
    float amax = 0.0f;
    for (std::size_t r = 0; r < r_n; ++r)
        for (std::size_t c = 0; c < c_n; ++c) {
            const std::uint32_t bit = 1u << (c % 32);
            const bool open = gate   ? gate[r * c_n + c] > 0.0f
                              : mask ? (mask[r * words + c / 32] & bit) != 0
                                     : true;
            const float v = open ? px[r * c_n + c] : 0.0f;
            if (mask_out && v > 0.0f) mask_out[r * words + c / 32] |= bit;
            if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
            const float q = hd::fp8_to_float(hd::fp8_quantize_value(v, scale, fmt), fmt);
            if (py) py[r * y_ld + c] = q;
            if (pt) pt[c * t_ld + r] = q;
            if (sums) sums[c] += v; // row order, as bias_grad adds
        }
    if (sums) round_span(col_sums->dtype(), sums, c_n);
    if (record_amax) m[k_fp8_history] = std::max(m[k_fp8_history], amax);
}

void CpuBackend::fp8_transposes(std::span<const Fp8Transpose> jobs)
{
    validate::fp8_transposes(k_name, jobs);
    for (const Fp8Transpose& job : jobs) {
        const std::size_t r_n = std::size_t(job.rows), c_n = std::size_t(job.cols);
        const std::size_t y_ld = std::size_t(fp8_padded(job.cols));
        const std::size_t t_ld = std::size_t(fp8_padded(job.rows));
        const std::size_t words = std::size_t(relu_mask_words(job.cols));
        const float* py = job.y->as<float>();
        float* pt = job.y_t->as<float>();
        auto* mask_out = job.relu_mask_out ? job.relu_mask_out->as<std::uint32_t>() : nullptr;
        std::fill(pt, pt + c_n * t_ld, 0.0f);
        if (mask_out) std::fill(mask_out, mask_out + r_n * words, 0u);
        for (std::size_t r = 0; r < r_n; ++r)
            for (std::size_t c = 0; c < c_n; ++c) {
                const float v = py[r * y_ld + c];
                pt[c * t_ld + r] = v;
                if (mask_out && v > 0.0f) mask_out[r * words + c / 32] |= 1u << (c % 32);
            }
    }
}

void CpuBackend::fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin)
{
    validate::fp8_update_scales(k_name, meta, tensors, history_len, margin);
    // hd_math.h's update, the one the CUDA kernel runs: the scale from the history's amax
    // (kept when that is zero or not finite), the history rolled.
    const std::size_t stride = fp8_block_floats(history_len);
    for (int t = 0; t < tensors; ++t)
        hd::fp8_update_block(meta.as<float>() + std::size_t(t) * stride, history_len, margin);
}

} // namespace mixlab::cpu
