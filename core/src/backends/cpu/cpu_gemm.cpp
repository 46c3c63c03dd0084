// CPU GEMM through Eigen with the dense layer's epilogues (bias, relu/gelu, bias grad)
// applied in fp32 before C is rounded to its dtype; TF32 math rounds the operands first.
// fp8 operands (mixed_fp8) hold their scaled values as floats: the product of the stored
// values in fp32 (exact per term: 4 and 3 significant bits), times the two tensors'
// scale_inv read from fp8_meta, then the epilogue and the rounding, as cuBLASLt orders it;
// an fp8 output is that fp32 result quantized with its own scale (and its amax taken).
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>

namespace mixlab::cpu {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat>;
using Map = Eigen::Map<RowMat>;

// Copies n operand values rounded to TF32 into scratch (the tensor cores' input format).
const float* tf32_copy(const float* src, std::size_t n, std::vector<float>& scratch)
{
    if (scratch.size() < n) scratch.resize(n);
    for (std::size_t i = 0; i < n; ++i) scratch[i] = round_to_tf32(src[i]);
    return scratch.data();
}

// C = beta * C + alpha * opA . opB, with beta == 0 ignoring whatever C held (even NaN).
template <class OpA, class OpB>
void product(const OpA& a, const OpB& b, Map& c, float alpha, float beta)
{
    if (beta == 0.0f) {
        c.noalias() = (alpha * a) * b;
    } else {
        if (beta != 1.0f) c *= beta;
        c.noalias() += (alpha * a) * b;
    }
}

// An fp8 GEMM's fp32 result (m x n) into c: times the scale, rounded as
// fp8_quantize rounds; the largest finite |value| into the amax slot when asked.
void quantize_output(const GemmCall& g, const float* result)
{
    float* meta = g.fp8_meta->as<float>();
    const float scale = meta[g.c_scale];
    const hd::Fp8Format fmt = g.c->dtype() == DType::F8E5M2 ? hd::k_e5m2 : hd::k_e4m3;
    const std::size_t m = std::size_t(g.m), n = std::size_t(g.n);
    const std::size_t ld = n; // a multiple of 16 (validate::fp8_gemm)
    float* c = g.c->as<float>();
    float amax = 0.0f;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            const float v = result[i * n + j];
            if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
            c[i * ld + j] = hd::fp8_to_float(hd::fp8_quantize_value(v, scale, fmt), fmt);
        }
    if (g.c_amax_on) meta[g.c_amax] = amax;
}

} // namespace

// Eigen cuts a product's depth into panels sized from the L1 cache it reads off the CPU,
// and each panel's sum is added to C apart: the same product gave other bits on a
// machine with 32 KiB of L1 than on one with 48 KiB (tst_network_trace's pinned traces).
// So every CPU backend tells Eigen the same cache sizes (48 KiB, as on the machine the
// traces were pinned on; the L2 and L3 sizes only shape blocks of C and change no bit),
// and the CPU backend trains to the same bits on any x86-64. Eigen's threads split C, not
// the depth, so the thread count changes no bit either.
CpuBackend::CpuBackend()
{
    Eigen::setCpuCacheSizes(std::ptrdiff_t(48) << 10, std::ptrdiff_t(1280) << 10,
                            std::ptrdiff_t(32) << 20);
}

void CpuBackend::gemm(const GemmCall& g)
{
    validate::gemm(k_name, g);
    const std::size_t m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
    const float* a = g.a->as<float>();
    const float* b = g.b->as<float>();
    // An fp8 c is computed in fp32 apart, then quantized into c's padded rows.
    const bool fp8_out = is_fp8(g.c->dtype());
    if (fp8_out && m_fp8_c.size() < m * n) m_fp8_c.resize(m * n);
    float* c = fp8_out ? m_fp8_c.data() : g.c->as<float>();
    const bool needs_bias = validate::epilogue_adds_bias(g.epilogue);
    const float* bias = needs_bias ? g.bias->as<float>() : nullptr;

    // The bias gradient is the exact fp32 row sum of op(A), read before any TF32 rounding
    // (it is an epilogue on the stored operand, not part of the tensor-core product).
    if (g.epilogue == Epilogue::BiasGradA) {
        float* bg = g.bias_grad->as<float>();
        if (g.trans_a) { // A stored (k x m): sum its rows
            std::fill(bg, bg + m, 0.0f);
            for (std::size_t r = 0; r < k; ++r) {
                const float* row = a + r * m;
                for (std::size_t i = 0; i < m; ++i) bg[i] += row[i];
            }
        } else { // A stored (m x k): each row's sum
            for (std::size_t i = 0; i < m; ++i)
                bg[i] = ConstMap(a + i * k, 1, Eigen::Index(k)).sum();
        }
        round_span(g.bias_grad->dtype(), bg, m);
    }

    // fp8: the descale multiplies the accumulated sum, not each operand, as the GPU's
    // scaleA * scaleB does; so the product runs unscaled and C is scaled after it.
    const bool fp8 = is_fp8(g.a->dtype());
    float alpha = g.alpha, beta = g.beta;
    float descale = 1.0f;
    std::vector<float> old_c;
    if (fp8) {
        const float* meta = g.fp8_meta->as<float>();
        descale = g.alpha * (meta[g.a_scale_inv] * meta[g.b_scale_inv]);
        if (beta != 0.0f) old_c.assign(c, c + m * n); // beta * C joins after the descale
        alpha = 1.0f;
        beta = 0.0f;
    }
    if (g.math == MathMode::TF32 && !fp8) {
        a = tf32_copy(a, m * k, m_tf32_a);
        b = tf32_copy(b, k * n, m_tf32_b);
    }
    const Eigen::Index em = g.m, en = g.n, ek = g.k;
    ConstMap ma(a, g.trans_a ? ek : em, g.trans_a ? em : ek);
    ConstMap mb(b, g.trans_b ? en : ek, g.trans_b ? ek : en);
    Map mc(c, em, en);
    if (g.trans_a && g.trans_b)
        product(ma.transpose(), mb.transpose(), mc, alpha, beta);
    else if (g.trans_a)
        product(ma.transpose(), mb, mc, alpha, beta);
    else if (g.trans_b)
        product(ma, mb.transpose(), mc, alpha, beta);
    else
        product(ma, mb, mc, alpha, beta);
    if (fp8) {
        mc *= descale;
        if (!old_c.empty()) mc += g.beta * ConstMap(old_c.data(), em, en);
    }

    // Epilogue in fp32, then one rounding to C's dtype (what the fused epilogue does).
    const DType ct = g.c->dtype();
    // (An fp8 c is rounded by quantize_output, with its scale.)
    const auto round_c = [&](float* p, std::size_t count) {
        if (!fp8_out) round_span(ct, p, count);
    };
    if (!needs_bias) {
        round_c(c, m * n);
        if (fp8_out) quantize_output(g, c);
        return;
    }
    for (std::size_t i = 0; i < m; ++i) {
        float* row = c + i * n;
        switch (g.epilogue) {
        case Epilogue::BiasRelu:
            for (std::size_t j = 0; j < n; ++j) row[j] = std::max(row[j] + bias[j], 0.0f);
            break;
        case Epilogue::BiasGelu:
            for (std::size_t j = 0; j < n; ++j) row[j] = hd::gelu(row[j] + bias[j]);
            break;
        default:
            for (std::size_t j = 0; j < n; ++j) row[j] += bias[j];
            break;
        }
        round_c(row, n);
    }
    if (fp8_out) quantize_output(g, c);
}

} // namespace mixlab::cpu
