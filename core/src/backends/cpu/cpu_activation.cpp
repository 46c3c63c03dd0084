// CPU bias + activation forward, activation backward and the bias gradient; all math
// in fp32, one rounding to the output's dtype. Outputs may alias inputs (in place).
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

#include <algorithm>
#include <cmath>

namespace mixlab::cpu {

void CpuBackend::bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                                 Buffer& y)
{
    const std::size_t rows = validate::bias_activation(k_name, x, bias, cols, y);
    const std::size_t nc = std::size_t(cols);
    const float* px = x.as<float>();
    const float* pb = bias ? bias->as<float>() : nullptr;
    float* py = y.as<float>();
    auto in = [&](std::size_t i, std::size_t j) {
        return pb ? px[i * nc + j] + pb[j] : px[i * nc + j];
    };

    for (std::size_t i = 0; i < rows; ++i) {
        float* out = py + i * nc;
        switch (act) {
        case Activation::None:
            for (std::size_t j = 0; j < nc; ++j) out[j] = in(i, j);
            break;
        case Activation::Relu:
            for (std::size_t j = 0; j < nc; ++j) out[j] = std::max(in(i, j), 0.0f);
            break;
        case Activation::Sigmoid:
            for (std::size_t j = 0; j < nc; ++j) out[j] = hd::sigmoid(in(i, j));
            break;
        case Activation::Tanh:
            for (std::size_t j = 0; j < nc; ++j) out[j] = std::tanh(in(i, j));
            break;
        case Activation::Gelu:
            for (std::size_t j = 0; j < nc; ++j) out[j] = hd::gelu(in(i, j));
            break;
        case Activation::Softmax: {
            // Max-subtracted so exp never overflows; each output depends on its own
            // input and two row scalars, which keeps the in-place case correct.
            float mx = -INFINITY;
            for (std::size_t j = 0; j < nc; ++j) mx = std::max(mx, in(i, j));
            float sum = 0.0f;
            for (std::size_t j = 0; j < nc; ++j) sum += std::exp(in(i, j) - mx);
            const float inv = 1.0f / sum;
            for (std::size_t j = 0; j < nc; ++j) out[j] = std::exp(in(i, j) - mx) * inv;
            break;
        }
        }
        round_span(y.dtype(), out, nc);
    }
}

void CpuBackend::activation_backward(Activation act, const Buffer& x, const Buffer& y,
                                     const Buffer& dy, int cols, Buffer& dx)
{
    const std::size_t rows = validate::activation_backward(k_name, act, x, y, dy, cols, dx);
    const std::size_t nc = std::size_t(cols);
    const float* pdy = dy.as<float>();
    float* pdx = dx.as<float>();
    const float* px = validate::activation_backward_reads_x(act) ? x.as<float>() : nullptr;
    const float* py = validate::activation_backward_reads_y(act) ? y.as<float>() : nullptr;

    for (std::size_t i = 0; i < rows; ++i) {
        const std::size_t o = i * nc;
        switch (act) {
        case Activation::None:
            for (std::size_t j = 0; j < nc; ++j) pdx[o + j] = pdy[o + j];
            break;
        case Activation::Relu:
            for (std::size_t j = 0; j < nc; ++j) pdx[o + j] = py[o + j] > 0.0f ? pdy[o + j] : 0.0f;
            break;
        case Activation::Sigmoid:
            for (std::size_t j = 0; j < nc; ++j)
                pdx[o + j] = pdy[o + j] * py[o + j] * (1.0f - py[o + j]);
            break;
        case Activation::Tanh:
            for (std::size_t j = 0; j < nc; ++j)
                pdx[o + j] = pdy[o + j] * (1.0f - py[o + j] * py[o + j]);
            break;
        case Activation::Gelu:
            for (std::size_t j = 0; j < nc; ++j) pdx[o + j] = pdy[o + j] * hd::gelu_grad(px[o + j]);
            break;
        case Activation::Softmax: {
            float dot = 0.0f;
            for (std::size_t j = 0; j < nc; ++j) dot += pdy[o + j] * py[o + j];
            for (std::size_t j = 0; j < nc; ++j) pdx[o + j] = py[o + j] * (pdy[o + j] - dot);
            break;
        }
        }
        round_span(dx.dtype(), pdx + o, nc);
    }
}

void CpuBackend::bias_grad(const Buffer& dy, int rows, int cols, Buffer& out)
{
    validate::bias_grad(k_name, dy, rows, cols, out);
    const std::size_t nr = std::size_t(rows), nc = std::size_t(cols);
    const float* p = dy.as<float>();
    float* o = out.as<float>();
    // Accumulate whole rows into the output: a unit-stride loop the compiler vectorises.
    std::fill(o, o + nc, 0.0f);
    for (std::size_t i = 0; i < nr; ++i) {
        const float* row = p + i * nc;
        for (std::size_t j = 0; j < nc; ++j) o[j] += row[j];
    }
    round_span(out.dtype(), o, nc);
}

} // namespace mixlab::cpu
