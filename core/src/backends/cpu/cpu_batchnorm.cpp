// CPU batch normalisation over NHWC rows of `channels`: batch statistics in double, summed
// in row order on one thread (the same bits every run), y and dx in fp32 rounded once to
// their dtype; parameters, running and saved statistics and their gradients are fp32.
// An optional ReLU is fused: applied to y after its rounding, and masking dy in backward.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "backends/cpu/cpu_parallel.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mixlab::cpu {

namespace {

void check_activation(const char* op, Activation act)
{
    validate::require(act == Activation::None || act == Activation::Relu, k_name, op,
                      "the activation fused into a batch norm must be linear or relu, got ",
                      activation_name(act));
}

// sum[c] = sum over rows of x[r, c], in double. Rows are walked in order so the inner
// loop runs over contiguous channels.
void channel_sums(const float* x, std::size_t rows, std::size_t channels, double* sum)
{
    for (std::size_t c = 0; c < channels; ++c) sum[c] = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* row = x + r * channels;
        for (std::size_t c = 0; c < channels; ++c) sum[c] += double(row[c]);
    }
}

// y = (x - mean) * inv_std * scale + shift per channel, in fp32 as the header states;
// relu after the rounding, as bias_activation applied to the stored output would.
void normalise(const float* x, std::size_t rows, std::size_t channels, const float* mean,
               const float* inv_std, const float* scale, const float* shift, DType out_t, bool relu,
               float* y)
{
    MIXLAB_OMP_FOR_IF(rows * channels)
    for (std::ptrdiff_t r = 0; r < std::ptrdiff_t(rows); ++r) {
        const float* in = x + std::size_t(r) * channels;
        float* out = y + std::size_t(r) * channels;
        for (std::size_t c = 0; c < channels; ++c)
            out[c] = (in[c] - mean[c]) * inv_std[c] * scale[c] + shift[c];
        round_span(out_t, out, channels);
        if (relu)
            for (std::size_t c = 0; c < channels; ++c) out[c] = std::max(out[c], 0.0f);
    }
}

} // namespace

void CpuBackend::batchnorm_forward_train(Activation act, const Buffer& x, int rows, int channels,
                                         const Buffer& scale, const Buffer& shift, float momentum,
                                         float epsilon, Buffer& running_mean, Buffer& running_var,
                                         Buffer& saved_mean, Buffer& saved_inv_std, Buffer& y)
{
    check_activation("batchnorm_forward_train", act);
    validate::batchnorm(k_name, "batchnorm_forward_train", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var, &saved_mean, &saved_inv_std},
                        y);
    const std::size_t nr = std::size_t(rows), nc = std::size_t(channels);
    const float* px = x.as<float>();
    m_bn_sum.resize(nc);
    m_bn_sq.resize(nc);
    channel_sums(px, nr, nc, m_bn_sum.data());
    float* mean = saved_mean.as<float>();
    for (std::size_t c = 0; c < nc; ++c) m_bn_sum[c] /= double(nr);
    // Two passes: the variance about the mean, free of the cancellation of E[x^2] - mean^2.
    for (std::size_t c = 0; c < nc; ++c) m_bn_sq[c] = 0.0;
    for (std::size_t r = 0; r < nr; ++r) {
        const float* row = px + r * nc;
        for (std::size_t c = 0; c < nc; ++c) {
            const double d = double(row[c]) - m_bn_sum[c];
            m_bn_sq[c] += d * d;
        }
    }
    float* inv_std = saved_inv_std.as<float>();
    float* run_mean = running_mean.as<float>();
    float* run_var = running_var.as<float>();
    const double m = double(momentum);
    for (std::size_t c = 0; c < nc; ++c) {
        const double var = m_bn_sq[c] / double(nr); // biased: what normalises this batch
        mean[c] = float(m_bn_sum[c]);
        inv_std[c] = float(1.0 / std::sqrt(var + double(epsilon)));
        // PyTorch's convention: running = (1 - momentum) * running + momentum * batch,
        // with the unbiased variance.
        const double unbiased = m_bn_sq[c] / double(nr - 1);
        run_mean[c] = float((1.0 - m) * double(run_mean[c]) + m * m_bn_sum[c]);
        run_var[c] = float((1.0 - m) * double(run_var[c]) + m * unbiased);
    }
    normalise(px, nr, nc, mean, inv_std, scale.as<float>(), shift.as<float>(), y.dtype(),
              act == Activation::Relu, y.as<float>());
}

void CpuBackend::batchnorm_forward_eval(Activation act, const Buffer& x, int rows, int channels,
                                        const Buffer& scale, const Buffer& shift,
                                        const Buffer& running_mean, const Buffer& running_var,
                                        float epsilon, Buffer& y)
{
    check_activation("batchnorm_forward_eval", act);
    validate::batchnorm(k_name, "batchnorm_forward_eval", x, rows, channels,
                        {&scale, &shift, &running_mean, &running_var}, y);
    const std::size_t nc = std::size_t(channels);
    m_bn_coef.resize(nc);
    float* inv = m_bn_coef.data();
    const float* rv = running_var.as<float>();
    for (std::size_t c = 0; c < nc; ++c) inv[c] = 1.0f / std::sqrt(rv[c] + epsilon);
    normalise(x.as<float>(), std::size_t(rows), nc, running_mean.as<float>(), inv,
              scale.as<float>(), shift.as<float>(), y.dtype(), act == Activation::Relu,
              y.as<float>());
}

void CpuBackend::batchnorm_backward(Activation act, const Buffer& x, const Buffer& y,
                                    const Buffer& dy, int rows, int channels, const Buffer& scale,
                                    const Buffer& saved_mean, const Buffer& saved_inv_std,
                                    Buffer& dx, Buffer& dscale, Buffer& dshift)
{
    const char* op = "batchnorm_backward";
    check_activation(op, act);
    validate::batchnorm(k_name, op, x, rows, channels,
                        {&scale, &saved_mean, &saved_inv_std, &dscale, &dshift}, dx);
    validate::batchnorm(k_name, op, x, rows, channels, {}, dy);
    validate::batchnorm(k_name, op, x, rows, channels, {}, y);
    const std::size_t nr = std::size_t(rows), nc = std::size_t(channels);
    const float* px = x.as<float>();
    const float* pdy = dy.as<float>();
    // The fused relu's backward: the gradient reaching the batch norm is dy where its
    // output was positive (activation_backward's rule), read on the fly.
    const float* py = act == Activation::Relu ? y.as<float>() : nullptr;
    auto grad = [&](std::size_t i) { return !py || py[i] > 0.0f ? pdy[i] : 0.0f; };
    const float* mean = saved_mean.as<float>();
    const float* inv_std = saved_inv_std.as<float>();
    const float* gamma = scale.as<float>();
    m_bn_sum.resize(nc);
    m_bn_sq.resize(nc);
    // dshift = sum(dy), dscale = sum(dy * xhat) with xhat = (x - mean) * inv_std, both
    // in row order (the same order as channel_sums).
    for (std::size_t c = 0; c < nc; ++c) m_bn_sum[c] = m_bn_sq[c] = 0.0;
    for (std::size_t r = 0; r < nr; ++r) {
        const float* xr = px + r * nc;
        for (std::size_t c = 0; c < nc; ++c) {
            const double g = double(grad(r * nc + c));
            m_bn_sum[c] += g;
            m_bn_sq[c] += g * (double(xr[c]) - double(mean[c])) * double(inv_std[c]);
        }
    }
    float* dg = dscale.as<float>();
    float* db = dshift.as<float>();
    for (std::size_t c = 0; c < nc; ++c) {
        dg[c] = float(m_bn_sq[c]);
        db[c] = float(m_bn_sum[c]);
    }
    // dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)): the batch
    // statistics' own dependence on x is what the two means subtract.
    m_bn_coef.resize(3 * nc);
    float* mean_dy = m_bn_coef.data();
    float* mean_dy_xhat = mean_dy + nc;
    float* gain = mean_dy_xhat + nc;
    for (std::size_t c = 0; c < nc; ++c) {
        mean_dy[c] = float(m_bn_sum[c] / double(nr));
        mean_dy_xhat[c] = float(m_bn_sq[c] / double(nr));
        gain[c] = gamma[c] * inv_std[c];
    }
    float* pdx = dx.as<float>();
    MIXLAB_OMP_FOR_IF(nr * nc)
    for (std::ptrdiff_t r = 0; r < std::ptrdiff_t(nr); ++r) {
        const std::size_t row = std::size_t(r) * nc;
        const float* xr = px + row;
        float* out = pdx + row;
        for (std::size_t c = 0; c < nc; ++c) {
            const float xhat = (xr[c] - mean[c]) * inv_std[c];
            out[c] = gain[c] * (grad(row + c) - mean_dy[c] - xhat * mean_dy_xhat[c]);
        }
        round_span(dx.dtype(), out, nc);
    }
}

} // namespace mixlab::cpu
