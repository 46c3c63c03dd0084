// CPU fp8 ops (mixed_fp8's delayed scaling): quantize a matrix to E4M3/E5M2 with its
// block's scale (and its transpose in the same pass), folding max|x| into the block's
// current amax slot; and the once-a-step scale update from the amax history. An fp8
// buffer on the CPU holds floats equal to the fp8 values it stores: the scaled values,
// not descaled (the GEMM multiplies by scale_inv). Rounding is hd_math.h's, bit for bit
// the CUDA kernels'.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

#include <algorithm>
#include <cmath>

namespace mixlab::cpu {

namespace {

hd::Fp8Format format_of(DType t) { return t == DType::F8E5M2 ? hd::k_e5m2 : hd::k_e4m3; }

} // namespace

void CpuBackend::fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                              int history_len, bool record_amax, Buffer* y, Buffer* y_t)
{
    validate::fp8_quantize(k_name, x, rows, cols, meta, block, history_len, y, y_t);
    float* m = meta.as<float>() + block * fp8_block_floats(history_len);
    const float scale = m[k_fp8_scale];
    const hd::Fp8Format fmt = format_of(y ? y->dtype() : y_t->dtype());
    const float* px = x.as<float>();
    float* py = y ? y->as<float>() : nullptr;
    float* pt = y_t ? y_t->as<float>() : nullptr;
    const std::size_t r_n = std::size_t(rows), c_n = std::size_t(cols);
    // amax of the unscaled values, finite ones only: an inf or NaN says nothing about the
    // range the next steps need (and would pin the scale); the values themselves saturate.
    float amax = 0.0f;
    for (std::size_t r = 0; r < r_n; ++r)
        for (std::size_t c = 0; c < c_n; ++c) {
            const float v = px[r * c_n + c];
            if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
            const float q = hd::fp8_to_float(hd::float_to_fp8(v * scale, fmt), fmt);
            if (py) py[r * c_n + c] = q;
            if (pt) pt[c * r_n + r] = q;
        }
    if (record_amax) m[k_fp8_history] = std::max(m[k_fp8_history], amax);
}

void CpuBackend::fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin)
{
    validate::fp8_update_scales(k_name, meta, tensors, history_len, margin);
    const std::size_t stride = fp8_block_floats(history_len);
    for (int t = 0; t < tensors; ++t) {
        float* m = meta.as<float>() + std::size_t(t) * stride;
        float* h = m + k_fp8_history;
        const float amax = *std::max_element(h, h + history_len);
        // In float, as the kernel computes it: max_finite / amax, then the margin's power
        // of two (an exact ldexp). A zero or non-finite amax (nothing seen yet, or only
        // infs and NaNs) keeps the scale the tensor has.
        if (std::isfinite(amax) && amax > 0.0f) {
            const float scale = std::ldexp(m[k_fp8_max_finite] / amax, -margin);
            m[k_fp8_scale] = scale;
            m[k_fp8_scale_inv] = 1.0f / scale;
        }
        m[k_fp8_last_amax] = amax;
        for (int j = history_len - 1; j > 0; --j) h[j] = h[j - 1];
        h[0] = 0.0f;
    }
}

} // namespace mixlab::cpu
