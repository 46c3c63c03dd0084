// The loss-scaler state machine as optimizer_step runs it on the CPU backend: skip and
// back off on inf/NaN, grow after growth_interval clean steps, static and no scaling,
// and the scale/overflow/next-scale fields of the metrics record.
#include "backends/cpu/cpu_backend.h"

#include "mixlab/backend.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::LossScaleMode)

namespace {

constexpr std::size_t k_n = 10;

// One parameter tensor under SGD with momentum, a scaler and a two-step record ring.
struct Rig {
    std::unique_ptr<Backend> be = cpu::make_cpu_backend();
    Buffer master = be->alloc(k_n, DType::F32);
    Buffer grad = be->alloc(k_n, DType::F32);
    Buffer momentum = be->alloc(k_n, DType::F32);
    Buffer scaler = be->alloc(k_scaler_fields, DType::F32);
    Buffer record = be->alloc(2 * k_record_fields, DType::F32);
    std::unique_ptr<ParamTable> table;
    OptimizerConfig opt;
    ScalerParams scaling;
    unsigned seed = 1;

    Rig(LossScaleMode mode, float init_scale)
    {
        const Vec w = random_vec(k_n, 100);
        be->upload_f32(master, w.data(), k_n);
        be->fill(momentum, 0.0f);
        const Vec s = {init_scale, 0.0f, 0.0f, 0.0f};
        be->upload_f32(scaler, s.data(), s.size());
        be->fill(record, k_nan); // poison
        table = be->prepare_params({ParamSlot{&master, &grad, nullptr, &momentum, nullptr}});
        opt.type = OptimizerType::SGD;
        opt.lr = 0.1f;
        opt.momentum = 0.9f;
        scaling.mode = mode;
        scaling.growth_interval = 3;
    }
    Vec get(const Buffer& b) const { return download(*be, b); }
    // A step on a fresh gradient (already multiplied by the current scale), with one
    // element replaced by `bad` when it is not finite. Record slot `slot`.
    void step(float bad = 0.0f, int slot = 0)
    {
        Vec g = random_vec(k_n, ++seed);
        const float scale = get(scaler)[k_scale];
        for (float& v : g) v *= scale;
        if (!std::isfinite(bad)) g[3] = bad;
        be->upload_f32(grad, g.data(), k_n);
        be->optimizer_step(*table, opt, scaling, scaler, record,
                           std::size_t(slot) * k_record_fields);
    }
    Vec rec(int slot = 0) const
    {
        const Vec r = get(record);
        return Vec(r.begin() + slot * k_record_fields, r.begin() + (slot + 1) * k_record_fields);
    }
};

} // namespace

class TestLossScaler : public QObject {
    Q_OBJECT

private slots:
    void overflow_skips_and_backs_off_data();
    void overflow_skips_and_backs_off();
    void growth_after_interval_clean_steps();
    void static_scale_never_changes_but_skips();
    void no_scaling_neither_skips_nor_changes();
    void unscaling_gives_the_unscaled_update();
};

void TestLossScaler::overflow_skips_and_backs_off_data()
{
    QTest::addColumn<float>("bad");
    QTest::newRow("inf") << k_inf;
    QTest::newRow("-inf") << -k_inf;
    QTest::newRow("nan") << k_nan;
}

void TestLossScaler::overflow_skips_and_backs_off()
{
    QFETCH(float, bad);
    Rig r(LossScaleMode::Dynamic, 1024.0f);
    r.step(); // a clean step first: momentum non-zero, growth count 1, one optimizer step
    const Vec s1 = r.get(r.scaler);
    EXPECT_EXACT(s1[k_growth_count], 1.0f);
    EXPECT_EXACT(s1[k_optimizer_steps], 1.0f);
    EXPECT_EXACT(s1[k_found_inf], 0.0f);
    const Vec w = r.get(r.master), m = r.get(r.momentum);

    r.step(bad, 1);
    // Nothing the optimizer owns moved: bit-identical weights and momentum.
    QVERIFY(r.get(r.master) == w);
    QVERIFY(r.get(r.momentum) == m);
    const Vec s2 = r.get(r.scaler);
    EXPECT_EXACT(s2[k_scale], 512.0f);
    EXPECT_EXACT(s2[k_growth_count], 0.0f);
    EXPECT_EXACT(s2[k_found_inf], 1.0f);
    EXPECT_EXACT(s2[k_optimizer_steps], 1.0f);
    const Vec rec0 = r.rec(0), rec1 = r.rec(1);
    EXPECT_EXACT(rec0[k_rec_scale], 1024.0f);
    EXPECT_EXACT(rec0[k_rec_overflow], 0.0f);
    EXPECT_EXACT(rec0[k_rec_next_scale], 1024.0f);
    EXPECT_EXACT(rec1[k_rec_scale], 1024.0f);
    EXPECT_EXACT(rec1[k_rec_overflow], 1.0f);
    EXPECT_EXACT(rec1[k_rec_next_scale], 512.0f);

    // Two overflows in a row keep halving; the next clean step updates again.
    r.step(bad);
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 256.0f);
    r.step();
    QVERIFY(r.get(r.master) != w);
    const Vec s3 = r.get(r.scaler);
    EXPECT_EXACT(s3[k_scale], 256.0f);
    EXPECT_EXACT(s3[k_found_inf], 0.0f);
    EXPECT_EXACT(s3[k_optimizer_steps], 2.0f);
    EXPECT_EXACT(s3[k_growth_count], 1.0f);
}

void TestLossScaler::growth_after_interval_clean_steps()
{
    Rig r(LossScaleMode::Dynamic, 1024.0f); // growth_interval 3
    r.step();
    r.step();
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 1024.0f);
    EXPECT_EXACT(r.get(r.scaler)[k_growth_count], 2.0f);
    r.step(0.0f, 1);
    Vec s = r.get(r.scaler);
    EXPECT_EXACT(s[k_scale], 2048.0f);
    EXPECT_EXACT(s[k_growth_count], 0.0f); // the counter restarts after growing
    EXPECT_EXACT(r.rec(1)[k_rec_scale], 1024.0f);
    EXPECT_EXACT(r.rec(1)[k_rec_next_scale], 2048.0f);
    // An overflow in the middle of the next interval resets the count.
    r.step();
    r.step(k_inf);
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 1024.0f);
    r.step();
    r.step();
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 1024.0f);
    r.step();
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 2048.0f);
    EXPECT_EXACT(r.get(r.scaler)[k_optimizer_steps], 7.0f); // 8 steps, one skipped
}

void TestLossScaler::static_scale_never_changes_but_skips()
{
    Rig r(LossScaleMode::Static, 128.0f);
    for (int i = 0; i < 4; ++i) r.step();
    EXPECT_EXACT(r.get(r.scaler)[k_scale], 128.0f);
    const Vec w = r.get(r.master);
    r.step(k_inf, 1);
    QVERIFY(r.get(r.master) == w);
    const Vec s = r.get(r.scaler);
    EXPECT_EXACT(s[k_scale], 128.0f);
    EXPECT_EXACT(s[k_found_inf], 1.0f);
    EXPECT_EXACT(s[k_optimizer_steps], 4.0f);
    EXPECT_EXACT(r.rec(1)[k_rec_overflow], 1.0f);
    EXPECT_EXACT(r.rec(1)[k_rec_scale], 128.0f);
    EXPECT_EXACT(r.rec(1)[k_rec_next_scale], 128.0f);
}

void TestLossScaler::no_scaling_neither_skips_nor_changes()
{
    // The scaler buffer holds 4096 but without scaling the step must use 1.
    Rig r(LossScaleMode::None, 4096.0f);
    const Vec w0 = r.get(r.master);
    r.step(); // step() multiplies the gradient by scaler[k_scale]: 4096x larger
    const Vec w1 = r.get(r.master);
    // The first SGD step is w -= lr * g (momentum buffer starts as g): the unscaled
    // 4096x gradient, not divided by 4096.
    const Vec g = random_vec(k_n, 2);
    for (std::size_t i = 0; i < k_n; ++i)
        QVERIFY(std::abs(w1[i] - (w0[i] - 0.1f * 4096.0f * g[i])) <=
                1e-3f + 1e-6f * std::abs(w1[i]));
    EXPECT_EXACT(r.rec(0)[k_rec_scale], 1.0f);
    EXPECT_EXACT(r.rec(0)[k_rec_next_scale], 1.0f);

    r.step(k_inf, 1); // not skipped: the weight that saw inf is no longer finite
    const Vec w2 = r.get(r.master);
    QVERIFY(!std::isfinite(w2[3]));
    const Vec s = r.get(r.scaler);
    EXPECT_EXACT(s[k_scale], 4096.0f);
    EXPECT_EXACT(s[k_optimizer_steps], 2.0f);
    EXPECT_EXACT(s[k_found_inf], 1.0f); // overflow still reported
    EXPECT_EXACT(r.rec(1)[k_rec_overflow], 1.0f);
}

void TestLossScaler::unscaling_gives_the_unscaled_update()
{
    // Same gradients, once scaled by 2^14 under dynamic scaling and once unscaled: a
    // power-of-two scale is exact, so the weights agree bit for bit.
    Rig scaled(LossScaleMode::Dynamic, 16384.0f), plain(LossScaleMode::None, 1.0f);
    for (int i = 0; i < 3; ++i) {
        scaled.step();
        plain.step();
    }
    QVERIFY(scaled.get(scaled.master) == plain.get(plain.master));
    QVERIFY(scaled.get(scaled.momentum) == plain.get(plain.momentum));
    QVERIFY(scaled.get(scaled.master) != random_vec(k_n, 100));
}

QTEST_APPLESS_MAIN(TestLossScaler)
#include "tst_loss_scaler.moc"
