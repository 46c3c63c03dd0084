// The CPU reference max and average pooling over NHWC windows: forward against a direct
// loop, backward against central differences, the padding rules (never wins a max, not
// counted in an average), the first-maximum tie rule, NaN propagation, 16-bit storage,
// global average pooling and the argument checks.
#include "backends/cpu/cpu_backend.h"

#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::PoolGeometry)
Q_DECLARE_METATYPE(mixlab::PoolMode)
Q_DECLARE_METATYPE(mixlab::DType)

namespace {

// Pooling by definition in double; also returns, per output, the input index that
// receives a max's gradient (the first maximum in row-major window order).
DVec direct_pool(PoolMode mode, const PoolGeometry& g, const Vec& x,
                 std::vector<std::size_t>* winners = nullptr)
{
    DVec y(g.y_count());
    if (winners) winners->assign(y.size(), 0);
    for (int n = 0; n < g.batch; ++n)
        for (int p = 0; p < g.out_h; ++p)
            for (int q = 0; q < g.out_w; ++q)
                for (int c = 0; c < g.channels; ++c) {
                    double best = -INFINITY, sum = 0;
                    std::size_t arg = 0;
                    int count = 0;
                    for (int r = 0; r < g.window_h; ++r)
                        for (int s = 0; s < g.window_w; ++s) {
                            const int h = p * g.stride_h - g.pad_h + r;
                            const int w = q * g.stride_w - g.pad_w + s;
                            if (h < 0 || h >= g.in_h || w < 0 || w >= g.in_w)
                                continue; // padding: skipped by both modes
                            const std::size_t i =
                                ((std::size_t(n) * g.in_h + h) * g.in_w + w) * g.channels + c;
                            if (count == 0 || x[i] > best) {
                                best = x[i];
                                arg = i;
                            }
                            sum += x[i];
                            ++count;
                        }
                    const std::size_t o =
                        ((std::size_t(n) * g.out_h + p) * g.out_w + q) * g.channels + c;
                    y[o] = mode == PoolMode::Max ? best : sum / count;
                    if (winners) (*winners)[o] = arg;
                }
    return y;
}

// Distinct values 0.05 apart in random order: no ties, and a step below 0.025 never
// changes which element wins a max.
Vec distinct_values(std::size_t n, unsigned seed)
{
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    Vec x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.05f * float(order[i] - int(n / 2));
    return x;
}

void add_cases()
{
    QTest::addColumn<PoolMode>("mode");
    QTest::addColumn<PoolGeometry>("g");
    const struct {
        const char* name;
        PoolGeometry g;
    } geometries[] = {
        {"2x2_stride2_7x5_floor", pool_geometry_of(2, 7, 5, 3, 2, 2, 2, 2, 0, 0)},
        {"3x3_stride2_pad1_7x5", pool_geometry_of(2, 7, 5, 5, 3, 3, 2, 2, 1, 1)},
        {"3x3_stride1_pad1_overlapping", pool_geometry_of(2, 5, 6, 3, 3, 3, 1, 1, 1, 1)},
        {"2x3_stride1x2_pad1x1", pool_geometry_of(1, 6, 7, 4, 2, 3, 1, 2, 1, 1)},
        {"2x2_stride2_70ch", pool_geometry_of(1, 4, 5, 70, 2, 2, 2, 2, 0, 0)},
        {"global_7x5", pool_geometry_of(3, 7, 5, 6, 7, 5, 1, 1, 0, 0)},
    };
    for (const auto& c : geometries) {
        QTest::addRow("max_%s", c.name) << PoolMode::Max << c.g;
        QTest::addRow("avg_%s", c.name) << PoolMode::Average << c.g;
    }
}

} // namespace

class TestCpuPool : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<Backend> m_be = cpu::make_cpu_backend();

    Vec forward(PoolMode mode, const PoolGeometry& g, const Vec& x, DType t = DType::F32)
    {
        Buffer bx = upload(*m_be, x, t), by = poisoned(*m_be, g.y_count(), t);
        m_be->pool_forward(mode, g, bx, by);
        return download(*m_be, by);
    }

    Vec backward(PoolMode mode, const PoolGeometry& g, const Vec& x, const Vec& dy)
    {
        Buffer bx = upload(*m_be, x), by = poisoned(*m_be, g.y_count());
        m_be->pool_forward(mode, g, bx, by);
        Buffer bdy = upload(*m_be, dy), bdx = poisoned(*m_be, x.size());
        m_be->pool_backward(mode, g, bx, by, bdy, bdx);
        return download(*m_be, bdx);
    }

private slots:
    void forward_matches_direct_data() { add_cases(); }
    void forward_matches_direct();
    void backward_matches_finite_differences_data() { add_cases(); }
    void backward_matches_finite_differences();
    void padding_never_wins_and_is_not_averaged();
    void first_maximum_gets_the_gradient();
    void nan_propagates_through_max();
    void sixteen_bit_storage();
    void rejects_bad_arguments();
};

void TestCpuPool::forward_matches_direct()
{
    QFETCH(PoolMode, mode);
    QFETCH(PoolGeometry, g);
    const Vec x = random_vec(g.x_count(), 1, -2.0f, 2.0f);
    // A max is exact; an average is an fp32 sum of <= 35 values of |x| <= 2 and one
    // division: 1e-6 absolute.
    expect_close(forward(mode, g, x), direct_pool(mode, g, x), 1e-6, 1e-6, "y");
}

void TestCpuPool::backward_matches_finite_differences()
{
    QFETCH(PoolMode, mode);
    QFETCH(PoolGeometry, g);
    const Vec x = distinct_values(g.x_count(), 11);
    const Vec r = random_vec(g.y_count(), 12);
    const Vec dx = backward(mode, g, x, r);

    // L = sum(y * r) is piecewise linear in x (linear for an average): a step of 1e-2,
    // below half the 0.05 gap between any two inputs, changes no max's winner, so the
    // central difference is exact but for fp32 rounding. A max copies its winner (exact);
    // an average re-rounds a few outputs of size <= |x| ~ 70 (ulp 8e-6), over a step of
    // 2e-2: atol 2e-3 for average, far below the 1/count or r-sized errors of a wrong rule.
    const double atol = mode == PoolMode::Max ? 1e-5 : 2e-3;
    DVec num(x.size());
    Vec xp = x;
    auto loss = [&] {
        const Vec y = forward(mode, g, xp);
        double s = 0;
        for (std::size_t i = 0; i < y.size(); ++i) s += double(y[i]) * double(r[i]);
        return s;
    };
    for (std::size_t i = 0; i < x.size(); ++i) {
        xp[i] = x[i] + 1e-2f;
        const double up = loss(), hi = xp[i];
        xp[i] = x[i] - 1e-2f;
        const double down = loss(), lo = xp[i];
        xp[i] = x[i];
        num[i] = (up - down) / (hi - lo);
    }
    expect_close(dx, num, atol, 1e-4, "dx");

    // And against the definition: each output's gradient to its winner, or spread evenly
    // over the window's real pixels.
    std::vector<std::size_t> winners;
    direct_pool(mode, g, x, &winners);
    if (mode == PoolMode::Max) {
        DVec ref(x.size(), 0.0);
        for (std::size_t o = 0; o < winners.size(); ++o) ref[winners[o]] += r[o];
        expect_close(dx, ref, 1e-6, 1e-6, "dx (winners)");
    }
}

void TestCpuPool::padding_never_wins_and_is_not_averaged()
{
    // All inputs negative with 1 pixel of padding: a zero pad must not win the corner
    // windows; an all-ones image must average to exactly 1 everywhere.
    const PoolGeometry g = pool_geometry_of(1, 4, 3, 2, 3, 3, 2, 2, 1, 1);
    const Vec neg = random_vec(g.x_count(), 21, -3.0f, -1.0f);
    const Vec y = forward(PoolMode::Max, g, neg);
    for (float v : y) QVERIFY2(v < 0.0f, "padding won a max");
    expect_close(y, direct_pool(PoolMode::Max, g, neg), 0.0, 0.0, "max y");
    for (float v : forward(PoolMode::Average, g, Vec(g.x_count(), 1.0f))) EXPECT_EXACT(v, 1.0f);
    // The corner window sees 2x2 real pixels of its 3x3: the average divides by 4.
    Vec ramp(g.x_count());
    for (std::size_t i = 0; i < ramp.size(); ++i) ramp[i] = float(i);
    const Vec avg = forward(PoolMode::Average, g, ramp);
    // Channel 0 of pixels (0,0), (0,1), (1,0), (1,1): elements 0, 2, 6, 8.
    EXPECT_EXACT(avg[0], (0.0f + 2.0f + 6.0f + 8.0f) / 4.0f);
}

void TestCpuPool::first_maximum_gets_the_gradient()
{
    // One channel, 2x4 input, 2x2 windows stride 2: window 0 is all 5s, window 1 has its
    // maximum 7 twice (positions (0,3) and (1,2) of the image; (0,1) and (1,0) of the window).
    const PoolGeometry g = pool_geometry_of(1, 2, 4, 1, 2, 2, 2, 2, 0, 0);
    const Vec x = {5, 5, 1, 7, 5, 5, 7, 2};
    const Vec dx = backward(PoolMode::Max, g, x, {10.0f, 20.0f});
    QCOMPARE(dx, (Vec{10, 0, 0, 20, 0, 0, 0, 0}));
    // Overlapping windows (stride 1): one pixel that wins two windows gets both gradients.
    const PoolGeometry o = pool_geometry_of(1, 1, 3, 1, 1, 2, 1, 1, 0, 0);
    QCOMPARE(backward(PoolMode::Max, o, {1, 9, 3}, {2.0f, 3.0f}), (Vec{0, 5, 0}));
}

void TestCpuPool::nan_propagates_through_max()
{
    // A NaN activation must reach the loss (where the loss scaler sees the overflow),
    // not be dropped by a comparison that is always false.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const PoolGeometry g = pool_geometry_of(1, 2, 4, 1, 2, 2, 2, 2, 0, 0);
    const Vec x = {1, nan, 3, 4, 2, 8, 0, 1};
    const Vec y = forward(PoolMode::Max, g, x);
    QVERIFY(std::isnan(y[0]));
    EXPECT_EXACT(y[1], 4.0f);
    const Vec dx = backward(PoolMode::Max, g, x, {1.0f, 1.0f});
    QCOMPARE(dx, (Vec{0, 1, 0, 1, 0, 0, 0, 0}));
}

void TestCpuPool::sixteen_bit_storage()
{
    const PoolGeometry g = pool_geometry_of(2, 5, 5, 3, 3, 3, 2, 2, 1, 1);
    for (DType t : {DType::F16, DType::BF16}) {
        Vec x = random_vec(g.x_count(), 31);
        for (float& v : x) v = round_to(t, v);
        const Vec avg = forward(PoolMode::Average, g, x, t);
        const Vec mx = forward(PoolMode::Max, g, x, t);
        const DVec ref = direct_pool(PoolMode::Average, g, x);
        const double half_ulp = t == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
        for (float v : avg) EXPECT_EXACT(round_to(t, v), v);
        // fp32 average of 16-bit values, one rounding: half an ulp plus fp32's 1e-6.
        expect_close(avg, ref, 1e-6, half_ulp, "avg y");
        expect_close(mx, direct_pool(PoolMode::Max, g, x), 0.0, 0.0, "max y");
    }
}

void TestCpuPool::rejects_bad_arguments()
{
    Backend& be = *m_be;
    const PoolGeometry g = pool_geometry_of(1, 4, 4, 2, 2, 2, 2, 2, 0, 0);
    Buffer x = upload(be, random_vec(g.x_count(), 41)), y = poisoned(be, g.y_count());
    // A window that is all padding would have no max and divide an average by zero.
    const PoolGeometry all_pad = pool_geometry_of(1, 4, 4, 2, 2, 2, 2, 2, 2, 2);
    expect_cpu_error([&] { be.pool_forward(PoolMode::Max, all_pad, x, y); }, "pool_forward",
                     "padding must be in [0, window)");
    PoolGeometry wrong_out = g;
    wrong_out.out_w = 3;
    expect_cpu_error([&] { be.pool_forward(PoolMode::Average, wrong_out, x, y); }, "pool_forward",
                     "(in + 2*pad - window)/stride + 1");
    Buffer y16 = poisoned(be, g.y_count(), DType::F16);
    expect_cpu_error([&] { be.pool_forward(PoolMode::Max, g, x, y16); }, "pool_forward",
                     "share a dtype");
    Buffer dx = poisoned(be, g.x_count() - 1);
    expect_cpu_error([&] { be.pool_backward(PoolMode::Average, g, x, y, y, dx); }, "pool_backward",
                     "x-sized buffer holds");
    // Max pooling's gradient reads x beside dx (the CUDA kernel in dx's dtype): one dtype.
    Buffer x16 = upload(be, random_vec(g.x_count(), 42), DType::F16),
           dx32 = poisoned(be, g.x_count());
    expect_cpu_error([&] { be.pool_backward(PoolMode::Max, g, x16, y16, y, dx32); },
                     "pool_backward", "x and dx must share a dtype, got float16 and float32");
}

QTEST_APPLESS_MAIN(TestCpuPool)
#include "tst_cpu_pool.moc"
