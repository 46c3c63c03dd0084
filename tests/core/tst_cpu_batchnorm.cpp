// The CPU reference batch normalisation over NHWC rows: training forward against a
// double-precision reference (batch mean, biased variance, saved statistics, running
// statistics with the unbiased variance), evaluation against the running statistics,
// the backward pass against central differences, 16-bit activations, argument checks;
// the fused relu: forward bit for bit a BN then a relu, backward bit for bit a relu's
// backward then the BN's, and central differences through relu(BN(x)).
#include "backends/cpu/cpu_backend.h"

#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::DType)

namespace {

// x (rows x channels) with a different mean and spread per channel, so that a wrong
// axis or a skipped centring shows.
Vec channel_data(int rows, int channels, unsigned seed)
{
    Vec x = random_vec(std::size_t(rows) * channels, seed);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) {
            float& v = x[std::size_t(r) * channels + c];
            v = v * (0.5f + 0.25f * c) + (float(c) - 1.5f);
        }
    return x;
}

struct Stats {
    DVec mean, biased_var, unbiased_var;
};

Stats batch_stats(const Vec& x, int rows, int channels)
{
    Stats s{DVec(channels, 0.0), DVec(channels, 0.0), DVec(channels, 0.0)};
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) s.mean[c] += x[std::size_t(r) * channels + c];
    for (int c = 0; c < channels; ++c) s.mean[c] /= rows;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) {
            const double d = x[std::size_t(r) * channels + c] - s.mean[c];
            s.biased_var[c] += d * d;
        }
    for (int c = 0; c < channels; ++c) {
        s.unbiased_var[c] = s.biased_var[c] / (rows - 1);
        s.biased_var[c] /= rows;
    }
    return s;
}

// y = (x - mean) / sqrt(var + eps) * scale + shift per channel.
DVec normalised(const Vec& x, int rows, int channels, const DVec& mean, const DVec& var, double eps,
                const Vec& scale, const Vec& shift)
{
    DVec y(x.size());
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) {
            const std::size_t i = std::size_t(r) * channels + c;
            y[i] = (x[i] - mean[c]) / std::sqrt(var[c] + eps) * scale[c] + shift[c];
        }
    return y;
}

DVec to_double(const Vec& v) { return DVec(v.begin(), v.end()); }

} // namespace

class TestCpuBatchNorm : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<Backend> m_be = cpu::make_cpu_backend();

    // sum(y * r) in double for the backend's training forward (fp32); `positive` gets
    // which y are > 0 (where a fused relu passes the gradient).
    double loss(const Vec& x, int rows, int channels, const Vec& scale, const Vec& shift,
                const Vec& r, Activation act = Activation::None,
                std::vector<bool>* positive = nullptr)
    {
        Backend& be = *m_be;
        Buffer bx = upload(be, x), bs = upload(be, scale), bb = upload(be, shift);
        Buffer rm = upload(be, Vec(channels, 0.0f)), rv = upload(be, Vec(channels, 1.0f));
        Buffer sm = poisoned(be, channels), si = poisoned(be, channels), y = poisoned(be, x.size());
        be.batchnorm_forward_train(act, bx, rows, channels, bs, bb, 0.1f, 1e-5f, rm, rv, sm, si, y);
        const Vec yv = download(be, y);
        double s = 0;
        for (std::size_t i = 0; i < yv.size(); ++i) s += double(yv[i]) * double(r[i]);
        if (positive) {
            positive->resize(yv.size());
            for (std::size_t i = 0; i < yv.size(); ++i) (*positive)[i] = yv[i] > 0.0f;
        }
        return s;
    }

private slots:
    void forward_train_matches_reference_data();
    void forward_train_matches_reference();
    void running_variance_is_unbiased();
    void forward_eval_uses_running_statistics();
    void backward_matches_finite_differences_data();
    void backward_matches_finite_differences();
    void sixteen_bit_activations_data();
    void sixteen_bit_activations();
    void fused_relu_equals_separate_passes_data();
    void fused_relu_equals_separate_passes();
    void fused_relu_backward_matches_finite_differences_data();
    void fused_relu_backward_matches_finite_differences();
    void rejects_bad_arguments();
};

void TestCpuBatchNorm::forward_train_matches_reference_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("channels");
    QTest::addColumn<float>("momentum");
    QTest::newRow("2x7x5_rows_3ch") << 70 << 3 << 0.1f;
    QTest::newRow("2_rows_5ch") << 2 << 5 << 0.1f;
    QTest::newRow("300_rows_13ch_momentum_0.5") << 300 << 13 << 0.5f;
    QTest::newRow("4096_rows_32ch_momentum_1") << 4096 << 32 << 1.0f;
}

void TestCpuBatchNorm::forward_train_matches_reference()
{
    QFETCH(int, rows);
    QFETCH(int, channels);
    QFETCH(float, momentum);
    Backend& be = *m_be;
    const float eps = 1e-3f;
    const Vec x = channel_data(rows, channels, 1);
    const Vec scale = random_vec(channels, 2, 0.5f, 1.5f), shift = random_vec(channels, 3);
    const Vec run_mean0 = random_vec(channels, 4), run_var0 = random_vec(channels, 5, 0.5f, 2.0f);
    Buffer bx = upload(be, x), bs = upload(be, scale), bb = upload(be, shift);
    Buffer rm = upload(be, run_mean0), rv = upload(be, run_var0);
    Buffer sm = poisoned(be, channels), si = poisoned(be, channels), y = poisoned(be, x.size());
    be.batchnorm_forward_train(Activation::None, bx, rows, channels, bs, bb, momentum, eps, rm, rv,
                               sm, si, y);

    const Stats st = batch_stats(x, rows, channels);
    DVec inv_std(channels), run_mean(channels), run_var(channels);
    for (int c = 0; c < channels; ++c) {
        inv_std[c] = 1.0 / std::sqrt(st.biased_var[c] + eps);
        run_mean[c] = (1.0 - momentum) * run_mean0[c] + momentum * st.mean[c];
        run_var[c] = (1.0 - momentum) * run_var0[c] + momentum * st.unbiased_var[c];
    }
    // Statistics accumulate in double and are stored as float: one fp32 rounding.
    expect_close(download(be, sm), st.mean, 1e-7, 1e-6, "saved_mean");
    expect_close(download(be, si), inv_std, 1e-7, 1e-6, "saved_inv_std");
    expect_close(download(be, rm), run_mean, 1e-7, 1e-6, "running_mean");
    expect_close(download(be, rv), run_var, 1e-7, 1e-6, "running_var");
    // y in fp32 from the rounded statistics: a few ulp of values up to ~|x - mean|*inv_std
    // *scale + |shift| < 6.
    expect_close(download(be, y),
                 normalised(x, rows, channels, st.mean, st.biased_var, eps, scale, shift), 5e-6,
                 1e-6, "y");
}

void TestCpuBatchNorm::running_variance_is_unbiased()
{
    // One channel, x = {1, 3}: mean 2, biased variance 1 (normalises), unbiased 2 (runs).
    Backend& be = *m_be;
    Buffer x = upload(be, {1.0f, 3.0f}), s = upload(be, {1.0f}), b = upload(be, {0.0f});
    Buffer rm = upload(be, {0.0f}), rv = upload(be, {1.0f});
    Buffer sm = poisoned(be, 1), si = poisoned(be, 1), y = poisoned(be, 2);
    be.batchnorm_forward_train(Activation::None, x, 2, 1, s, b, 0.1f, 0.0f, rm, rv, sm, si, y);
    EXPECT_EXACT(download(be, sm)[0], 2.0f);
    EXPECT_EXACT(download(be, si)[0], 1.0f);
    QCOMPARE(download(be, y), (Vec{-1.0f, 1.0f}));
    EXPECT_EXACT(download(be, rm)[0], 0.2f); // 0.9 * 0 + 0.1 * 2
    EXPECT_EXACT(download(be, rv)[0], 1.1f); // 0.9 * 1 + 0.1 * 2 (not 0.1 * 1)
}

void TestCpuBatchNorm::forward_eval_uses_running_statistics()
{
    Backend& be = *m_be;
    const int rows = 35, channels = 6;
    const float eps = 1e-5f;
    const Vec x = channel_data(rows, channels, 11);
    const Vec scale = random_vec(channels, 12, 0.5f, 1.5f), shift = random_vec(channels, 13);
    const Vec rmean = random_vec(channels, 14), rvar = random_vec(channels, 15, 0.2f, 3.0f);
    Buffer bx = upload(be, x), bs = upload(be, scale), bb = upload(be, shift);
    Buffer rm = upload(be, rmean), rv = upload(be, rvar), y = poisoned(be, x.size());
    be.batchnorm_forward_eval(Activation::None, bx, rows, channels, bs, bb, rm, rv, eps, y);
    // fp32 of values below ~10: 1e-5 absolute. The batch's own statistics would be off by
    // O(1), since the running ones are random.
    expect_close(
        download(be, y),
        normalised(x, rows, channels, to_double(rmean), to_double(rvar), eps, scale, shift), 1e-5,
        1e-6, "y");
    QCOMPARE(download(be, rm), rmean); // evaluation leaves the running statistics alone
    QCOMPARE(download(be, rv), rvar);
}

void TestCpuBatchNorm::backward_matches_finite_differences_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("channels");
    QTest::newRow("2x3x5_rows_3ch") << 30 << 3;
    QTest::newRow("3_rows_7ch") << 3 << 7;
    QTest::newRow("64_rows_9ch") << 64 << 9;
}

void TestCpuBatchNorm::backward_matches_finite_differences()
{
    QFETCH(int, rows);
    QFETCH(int, channels);
    Backend& be = *m_be;
    const Vec x = channel_data(rows, channels, 21);
    const Vec scale = random_vec(channels, 22, 0.5f, 1.5f), shift = random_vec(channels, 23);
    const Vec r = random_vec(x.size(), 24);
    Buffer bx = upload(be, x), bs = upload(be, scale), bb = upload(be, shift), br = upload(be, r);
    Buffer rm = upload(be, Vec(channels, 0.0f)), rv = upload(be, Vec(channels, 1.0f));
    Buffer sm = poisoned(be, channels), si = poisoned(be, channels), y = poisoned(be, x.size());
    be.batchnorm_forward_train(Activation::None, bx, rows, channels, bs, bb, 0.1f, 1e-5f, rm, rv,
                               sm, si, y);
    // Poisoned: dscale and dshift must be overwritten, not accumulated.
    Buffer dx = poisoned(be, x.size()), dscale = poisoned(be, channels),
           dshift = poisoned(be, channels);
    be.batchnorm_backward(Activation::None, bx, y, br, rows, channels, bs, sm, si, dx, dscale,
                          dshift);

    // Central differences of L = sum(y * r) through the backend's own fp32 forward, with
    // eps 1e-2 on inputs of spread ~1: the truncation error eps^2/6 * L''' is ~1e-5 (the
    // statistics' curvature is O(1/rows)); a step moves every y of its channel, each
    // re-rounded by ~1e-7, so rounding adds sqrt(rows) * 1e-7 / 2e-2 ~ 5e-5. L is linear
    // in scale and shift, where only the rounding remains. atol 1e-3 + rtol 1e-3, while a
    // dropped statistics term moves dx by O(0.1).
    const float eps = 1e-2f;
    auto central = [&](Vec& v, std::size_t i, const std::function<double()>& f) {
        const float saved = v[i];
        v[i] = saved + eps;
        const double up = f(), hi = v[i];
        v[i] = saved - eps;
        const double down = f(), lo = v[i];
        v[i] = saved;
        return (up - down) / (hi - lo);
    };
    Vec xp = x, sp = scale, bp = shift;
    auto f = [&] { return loss(xp, rows, channels, sp, bp, r); };
    DVec num_dx(x.size()), num_ds(channels), num_db(channels);
    for (std::size_t i = 0; i < x.size(); ++i) num_dx[i] = central(xp, i, f);
    for (int c = 0; c < channels; ++c) {
        num_ds[c] = central(sp, c, f);
        num_db[c] = central(bp, c, f);
    }
    expect_close(download(be, dx), num_dx, 1e-3, 1e-3, "dx");
    expect_close(download(be, dscale), num_ds, 1e-3, 1e-3, "dscale");
    expect_close(download(be, dshift), num_db, 1e-3, 1e-3, "dshift");
}

void TestCpuBatchNorm::sixteen_bit_activations_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::newRow("float16") << DType::F16;
    QTest::newRow("bfloat16") << DType::BF16;
}

void TestCpuBatchNorm::sixteen_bit_activations()
{
    // 16-bit x, y, dy, dx with float32 parameters and statistics (the mixed policies).
    QFETCH(DType, dtype);
    Backend& be = *m_be;
    const int rows = 40, channels = 5;
    Vec x = channel_data(rows, channels, 31);
    for (float& v : x) v = round_to(dtype, v);
    Vec dy = random_vec(x.size(), 32);
    for (float& v : dy) v = round_to(dtype, v);
    const Vec scale = random_vec(channels, 33, 0.5f, 1.5f), shift = random_vec(channels, 34);
    Buffer bx = upload(be, x, dtype), bdy = upload(be, dy, dtype);
    Buffer bs = upload(be, scale), bb = upload(be, shift);
    Buffer rm = upload(be, Vec(channels, 0.0f)), rv = upload(be, Vec(channels, 1.0f));
    Buffer sm = poisoned(be, channels), si = poisoned(be, channels);
    Buffer y = poisoned(be, x.size(), dtype), dx = poisoned(be, x.size(), dtype);
    Buffer dscale = poisoned(be, channels), dshift = poisoned(be, channels);
    be.batchnorm_forward_train(Activation::None, bx, rows, channels, bs, bb, 0.1f, 1e-5f, rm, rv,
                               sm, si, y);
    be.batchnorm_backward(Activation::None, bx, y, bdy, rows, channels, bs, sm, si, dx, dscale,
                          dshift);

    const Stats st = batch_stats(x, rows, channels);
    const Vec yv = download(be, y), dxv = download(be, dx);
    for (std::size_t i = 0; i < yv.size(); ++i) {
        EXPECT_EXACT(round_to(dtype, yv[i]), yv[i]);
        EXPECT_EXACT(round_to(dtype, dxv[i]), dxv[i]);
    }
    // One rounding to the storage type: half an ulp (2^-11 or 2^-8 relative) over fp32.
    const double half_ulp = dtype == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    expect_close(yv, normalised(x, rows, channels, st.mean, st.biased_var, 1e-5, scale, shift),
                 1e-5, half_ulp, "y");
    // Parameter gradients stay fp32: sum(dy) exactly as a double sum of the 16-bit dy.
    DVec sum_dy(channels, 0.0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < channels; ++c) sum_dy[c] += dy[std::size_t(r) * channels + c];
    expect_close(download(be, dshift), sum_dy, 1e-6, 1e-6, "dshift");
    QVERIFY(std::isfinite(download(be, dscale)[0]));
}

void TestCpuBatchNorm::rejects_bad_arguments()
{
    Backend& be = *m_be;
    const int channels = 3;
    Buffer x = upload(be, channel_data(4, channels, 41)), y = poisoned(be, 12);
    Buffer s = upload(be, Vec(channels, 1.0f)), b = upload(be, Vec(channels, 0.0f));
    Buffer rm = upload(be, Vec(channels, 0.0f)), rv = upload(be, Vec(channels, 1.0f));
    Buffer sm = poisoned(be, channels), si = poisoned(be, channels);
    // One row per channel has no unbiased variance (PyTorch refuses it too).
    const Activation none = Activation::None;
    expect_cpu_error(
        [&] { be.batchnorm_forward_train(none, x, 1, 12, s, b, 0.1f, 1e-5f, rm, rv, sm, si, y); },
        "batchnorm_forward_train", "more than one value");
    Buffer s16 = upload(be, Vec(channels, 1.0f), DType::F16);
    expect_cpu_error(
        [&] { be.batchnorm_forward_eval(none, x, 4, channels, s16, b, rm, rv, 1e-5f, y); },
        "batchnorm_forward_eval", "float32");
    Buffer y16 = poisoned(be, 12, DType::F16);
    expect_cpu_error(
        [&] { be.batchnorm_forward_eval(none, x, 4, channels, s, b, rm, rv, 1e-5f, y16); },
        "batchnorm_forward_eval", "share a dtype");
    Buffer short_x = upload(be, Vec(11, 0.5f));
    Buffer ds = poisoned(be, channels), db = poisoned(be, channels);
    expect_cpu_error(
        [&] { be.batchnorm_backward(none, short_x, y, y, 4, channels, s, sm, si, y, ds, db); },
        "batchnorm_backward", "x holds 11");
    // Only a relu can be fused; the forward output y must have x's shape.
    expect_cpu_error(
        [&] {
            be.batchnorm_forward_train(Activation::Sigmoid, x, 4, channels, s, b, 0.1f, 1e-5f, rm,
                                       rv, sm, si, y);
        },
        "batchnorm_forward_train", "linear or relu, got sigmoid");
    expect_cpu_error(
        [&] {
            be.batchnorm_forward_eval(Activation::Gelu, x, 4, channels, s, b, rm, rv, 1e-5f, y);
        },
        "batchnorm_forward_eval", "linear or relu, got gelu");
    Buffer dx = poisoned(be, 12);
    expect_cpu_error(
        [&] {
            be.batchnorm_backward(Activation::Tanh, x, y, y, 4, channels, s, sm, si, dx, ds, db);
        },
        "batchnorm_backward", "linear or relu, got tanh");
    Buffer short_y = poisoned(be, 11);
    expect_cpu_error(
        [&] {
            be.batchnorm_backward(Activation::Relu, x, short_y, y, 4, channels, s, sm, si, dx, ds,
                                  db);
        },
        "batchnorm_backward", "output holds 11");
}

void TestCpuBatchNorm::fused_relu_equals_separate_passes_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("channels");
    QTest::newRow("float32_70x3") << DType::F32 << 70 << 3;
    QTest::newRow("float16_40x5") << DType::F16 << 40 << 5;
    QTest::newRow("bfloat16_64x8") << DType::BF16 << 64 << 8;
}

void TestCpuBatchNorm::fused_relu_equals_separate_passes()
{
    // The network swaps BN + relu for the fused op: its results must be the very same
    // bits (a value rounded to -0 included), forward in both modes and backward.
    QFETCH(DType, dtype);
    QFETCH(int, rows);
    QFETCH(int, channels);
    Backend& be = *m_be;
    const std::size_t n = std::size_t(rows) * channels;
    Vec x = channel_data(rows, channels, 51);
    Vec dy = random_vec(n, 52);
    for (float& v : x) v = round_to(dtype, v);
    for (float& v : dy) v = round_to(dtype, v);
    const Vec scale = random_vec(channels, 53, 0.5f, 1.5f), shift = random_vec(channels, 54);
    Buffer bx = upload(be, x, dtype), bdy = upload(be, dy, dtype);
    Buffer bs = upload(be, scale), bb = upload(be, shift);
    auto bits_equal = [](const Vec& a, const Vec& b, const char* what) {
        QCOMPARE(a.size(), b.size());
        QVERIFY2(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0, what);
    };
    struct Outputs {
        Vec y, y_eval, dx, dscale, dshift;
    };
    auto run = [&](bool fused) {
        Buffer rm = upload(be, Vec(channels, 0.1f)), rv = upload(be, Vec(channels, 1.5f));
        Buffer sm = poisoned(be, channels), si = poisoned(be, channels);
        Buffer bn = poisoned(be, n, dtype), y = poisoned(be, n, dtype);
        Buffer dbn = poisoned(be, n, dtype), dx = poisoned(be, n, dtype);
        Buffer ds = poisoned(be, channels), db = poisoned(be, channels);
        Outputs o;
        const Activation act = fused ? Activation::Relu : Activation::None;
        Buffer& bn_out = fused ? y : bn;
        be.batchnorm_forward_train(act, bx, rows, channels, bs, bb, 0.1f, 1e-5f, rm, rv, sm, si,
                                   bn_out);
        if (!fused) be.bias_activation(Activation::Relu, bn, nullptr, channels, y);
        o.y = download(be, y);
        if (fused) {
            be.batchnorm_backward(Activation::Relu, bx, y, bdy, rows, channels, bs, sm, si, dx, ds,
                                  db);
        } else {
            be.activation_backward(Activation::Relu, bn, y, bdy, channels, dbn);
            be.batchnorm_backward(Activation::None, bx, bn, dbn, rows, channels, bs, sm, si, dx, ds,
                                  db);
        }
        o.dx = download(be, dx);
        o.dscale = download(be, ds);
        o.dshift = download(be, db);
        Buffer ye = poisoned(be, n, dtype);
        be.batchnorm_forward_eval(act, bx, rows, channels, bs, bb, rm, rv, 1e-5f, fused ? ye : bn);
        if (!fused) be.bias_activation(Activation::Relu, bn, nullptr, channels, ye);
        o.y_eval = download(be, ye);
        return o;
    };
    const Outputs fused = run(true), separate = run(false);
    int zeros = 0, positive = 0;
    for (float v : fused.y) {
        if (v > 0.0f)
            ++positive;
        else
            ++zeros;
    }
    QVERIFY2(zeros > int(n) / 5 && positive > int(n) / 5, "the data should straddle zero");
    bits_equal(fused.y, separate.y, "y (train)");
    bits_equal(fused.y_eval, separate.y_eval, "y (eval)");
    bits_equal(fused.dx, separate.dx, "dx");
    bits_equal(fused.dscale, separate.dscale, "dscale");
    bits_equal(fused.dshift, separate.dshift, "dshift");
}

void TestCpuBatchNorm::fused_relu_backward_matches_finite_differences_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("channels");
    QTest::newRow("2x3x5_rows_3ch") << 30 << 3;
    QTest::newRow("64_rows_9ch") << 64 << 9;
}

void TestCpuBatchNorm::fused_relu_backward_matches_finite_differences()
{
    // L = sum(relu(BN(x)) * r) through the fused op, against its fused backward with
    // dy = r. L has kinks where a BN output crosses 0: a central difference across one
    // means nothing, so coordinates whose steps change the relu mask are skipped (a few
    // per cent), and the rest must agree. Step 3e-3 on inputs of spread ~1: truncation
    // ~1e-6; L's fp32 rounding (~1e-7 per output, ~1e-6 over the sum) over 6e-3 adds
    // ~2e-4. atol 1e-3 + rtol 1e-3, while a missing mask moves dx and dshift by O(0.1).
    QFETCH(int, rows);
    QFETCH(int, channels);
    Backend& be = *m_be;
    const Vec x = channel_data(rows, channels, 61);
    const Vec scale = random_vec(channels, 62, 0.5f, 1.5f), shift = random_vec(channels, 63);
    const Vec r = random_vec(x.size(), 64);
    Buffer bx = upload(be, x), bs = upload(be, scale), bb = upload(be, shift), br = upload(be, r);
    Buffer rm = upload(be, Vec(channels, 0.0f)), rv = upload(be, Vec(channels, 1.0f));
    Buffer sm = poisoned(be, channels), si = poisoned(be, channels), y = poisoned(be, x.size());
    be.batchnorm_forward_train(Activation::Relu, bx, rows, channels, bs, bb, 0.1f, 1e-5f, rm, rv,
                               sm, si, y);
    Buffer dx = poisoned(be, x.size()), dscale = poisoned(be, channels),
           dshift = poisoned(be, channels);
    be.batchnorm_backward(Activation::Relu, bx, y, br, rows, channels, bs, sm, si, dx, dscale,
                          dshift);
    const Vec got_dx = download(be, dx), got_ds = download(be, dscale),
              got_db = download(be, dshift);

    const float eps = 3e-3f;
    std::vector<bool> base_mask, mask;
    Vec xp = x, sp = scale, bp = shift;
    loss(xp, rows, channels, sp, bp, r, Activation::Relu, &base_mask);
    // The central difference in v[i], or nothing when a step moves an output across 0.
    auto central = [&](Vec& v, std::size_t i, double* out) {
        const float saved = v[i];
        v[i] = saved + eps;
        const double hi = v[i], up = loss(xp, rows, channels, sp, bp, r, Activation::Relu, &mask);
        const bool same_up = mask == base_mask;
        v[i] = saved - eps;
        const double lo = v[i], down = loss(xp, rows, channels, sp, bp, r, Activation::Relu, &mask);
        const bool same_down = mask == base_mask;
        v[i] = saved;
        *out = (up - down) / (hi - lo);
        return same_up && same_down;
    };
    int checked = 0, skipped = 0;
    auto check = [&](Vec& v, std::size_t i, float analytic, const char* what) {
        double numeric = 0;
        if (!central(v, i, &numeric)) {
            ++skipped;
            return;
        }
        ++checked;
        const double tol = 1e-3 + 1e-3 * std::abs(numeric);
        QVERIFY2(std::abs(double(analytic) - numeric) <= tol,
                 qPrintable(QString("%1[%2]: backward %3, finite difference %4")
                                .arg(what)
                                .arg(i)
                                .arg(analytic, 0, 'g', 7)
                                .arg(numeric, 0, 'g', 7)));
    };
    for (std::size_t i = 0; i < x.size(); ++i) {
        check(xp, i, got_dx[i], "dx");
        if (QTest::currentTestFailed()) return;
    }
    for (int c = 0; c < channels; ++c) {
        check(sp, std::size_t(c), got_ds[std::size_t(c)], "dscale");
        if (QTest::currentTestFailed()) return;
        check(bp, std::size_t(c), got_db[std::size_t(c)], "dshift");
        if (QTest::currentTestFailed()) return;
    }
    qInfo("%d coordinates checked, %d skipped at a relu kink", checked, skipped);
    QVERIFY(skipped * 10 < checked);
    // The relu must matter: some outputs are clamped, so dshift differs from sum(r).
    int clamped = 0;
    for (bool p : base_mask) clamped += !p;
    QVERIFY(clamped > int(x.size()) / 5);
}

QTEST_APPLESS_MAIN(TestCpuBatchNorm)
#include "tst_cpu_batchnorm.moc"
