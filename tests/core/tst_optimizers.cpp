// SGD (momentum, nesterov, weight decay), Adam and AdamW on the CPU backend against
// hand-written double-precision references of PyTorch's update rules over several
// steps, with the low-precision weight copy written in the same pass; gradient clipping
// by global norm (clip_grad_norm_ after GradScaler.unscale_) with and without loss scaling;
// split bf16 masters stepping to exactly the fp32 masters' values.
#include "backends/cpu/cpu_backend.h"

#include "base/hd_math.h"
#include "mixlab/backend.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::OptimizerType)
Q_DECLARE_METATYPE(mixlab::DType)
Q_DECLARE_METATYPE(mixlab::LossScaleMode)

namespace {

// PyTorch's torch.optim.SGD / Adam / AdamW for one tensor, in double.
struct Reference {
    DVec w, s1, s2;
    int steps = 0;

    void step(const OptimizerConfig& o, const Vec& grad)
    {
        const double lr = o.lr, wd = o.weight_decay, mom = o.momentum;
        const int t = steps + 1;
        for (std::size_t i = 0; i < w.size(); ++i) {
            double g = grad[i];
            if (o.type == OptimizerType::SGD) {
                if (wd != 0) g += wd * w[i];
                if (mom != 0) {
                    s1[i] = steps == 0 ? g : mom * s1[i] + g;
                    g = o.nesterov ? g + mom * s1[i] : s1[i];
                }
                w[i] -= lr * g;
                continue;
            }
            if (o.type == OptimizerType::AdamW)
                w[i] *= 1.0 - lr * wd; // decoupled decay
            else if (wd != 0)
                g += wd * w[i];
            const double b1 = o.beta1, b2 = o.beta2;
            s1[i] = b1 * s1[i] + (1 - b1) * g;
            s2[i] = b2 * s2[i] + (1 - b2) * g * g;
            const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
            const double denom = std::sqrt(s2[i]) / std::sqrt(bc2) + o.eps;
            w[i] -= lr / bc1 * s1[i] / denom;
        }
        ++steps;
    }
};

// torch.nn.utils.clip_grad_norm_'s factor for gradients whose global norm is `norm`.
double clip_factor(double clip_norm, double norm)
{
    return std::min(1.0, clip_norm / (norm + 1e-6));
}

// Two fp32 parameter tensors on the CPU backend, one optimizer step at a time, for the
// clipping tests.
struct ClipRig {
    std::unique_ptr<Backend> be = cpu::make_cpu_backend();
    Buffer w[2], g[2], s1[2], s2[2];
    std::unique_ptr<ParamTable> table;
    Buffer scaler = be->alloc(k_scaler_fields, DType::F32);
    Buffer record = be->alloc(k_record_fields, DType::F32);
    ScalerParams scaling;

    ClipRig(const Vec& w0, const Vec& w1, LossScaleMode mode, float scale)
    {
        const Vec* init[2] = {&w0, &w1};
        std::vector<ParamSlot> param_slots;
        for (int p = 0; p < 2; ++p) {
            w[p] = upload(*be, *init[p]);
            g[p] = be->alloc(init[p]->size(), DType::F32);
            s1[p] = be->alloc(init[p]->size(), DType::F32);
            s2[p] = be->alloc(init[p]->size(), DType::F32);
            be->fill(s1[p], 0.0f);
            be->fill(s2[p], 0.0f);
            param_slots.push_back({&w[p], &g[p], nullptr, &s1[p], &s2[p]});
        }
        table = be->prepare_params(param_slots);
        be->upload_f32(scaler, std::vector<float>{scale, 0.0f, 0.0f, 0.0f}.data(), k_scaler_fields);
        be->fill(record, k_nan);
        scaling.mode = mode;
    }
    // Gradients as given (already multiplied by the loss scale where there is one).
    void step(const OptimizerConfig& opt, const Vec& g0, const Vec& g1)
    {
        be->upload_f32(g[0], g0.data(), g0.size());
        be->upload_f32(g[1], g1.data(), g1.size());
        be->optimizer_step(*table, opt, scaling, scaler, record, 0);
    }
    Vec weights(int p) { return download(*be, w[p]); }
    float rec(int field) { return download(*be, record)[std::size_t(field)]; }
};

bool same_bits(const Vec& a, const Vec& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Vec times(const Vec& v, float k)
{
    Vec out(v);
    for (float& x : out) x *= k;
    return out;
}

} // namespace

class TestOptimizers : public QObject {
    Q_OBJECT

private slots:
    void matches_pytorch_reference_data();
    void matches_pytorch_reference();
    void clip_by_hand();
    void clip_under_loss_scale_data();
    void clip_under_loss_scale();
    void clip_overflow_skips_step();
    void clip_matches_pytorch_reference_data();
    void clip_matches_pytorch_reference();
    void split_master_equals_fp32_master_data();
    void split_master_equals_fp32_master();
};

void TestOptimizers::split_master_equals_fp32_master_data()
{
    QTest::addColumn<OptimizerType>("type");
    QTest::addColumn<float>("momentum");
    QTest::addColumn<bool>("nesterov");
    QTest::addColumn<float>("weight_decay");
    QTest::addColumn<float>("clip");
    QTest::addColumn<LossScaleMode>("mode");
    const auto sgd = OptimizerType::SGD;
    const auto none = LossScaleMode::None;
    QTest::newRow("sgd_plain") << sgd << 0.0f << false << 0.0f << 0.0f << none;
    QTest::newRow("sgd_momentum") << sgd << 0.9f << false << 0.0f << 0.0f << none;
    QTest::newRow("sgd_nesterov_wd") << sgd << 0.9f << true << 0.01f << 0.0f << none;
    QTest::newRow("sgd_momentum_dynamic_clip")
        << sgd << 0.9f << false << 0.01f << 1.0f << LossScaleMode::Dynamic;
    QTest::newRow("adam_wd") << OptimizerType::Adam << 0.0f << false << 0.01f << 0.0f << none;
    QTest::newRow("adamw_dynamic")
        << OptimizerType::AdamW << 0.0f << false << 0.01f << 0.0f << LossScaleMode::Dynamic;
}

// The claim of "bf16_split": given the same gradients, the joined split master after each
// step is the fp32 master after that step, bit for bit, and its high half is the bf16
// copy the fp32-master layout writes except at exact ties (one ulp further from zero
// there, hd_math.h). Step 3 overflows: skipped under loss scaling, NaN/inf otherwise.
void TestOptimizers::split_master_equals_fp32_master()
{
    QFETCH(OptimizerType, type);
    QFETCH(float, momentum);
    QFETCH(bool, nesterov);
    QFETCH(float, weight_decay);
    QFETCH(float, clip);
    QFETCH(LossScaleMode, mode);
    OptimizerConfig opt;
    opt.type = type;
    opt.lr = type == OptimizerType::SGD ? 0.05f : 0.01f;
    opt.momentum = momentum;
    opt.nesterov = nesterov;
    opt.weight_decay = weight_decay;
    opt.clip_norm = clip;
    const bool adam = type != OptimizerType::SGD;
    const bool state1 = adam || momentum != 0.0f;
    const std::size_t n = 4099;
    auto be = cpu::make_cpu_backend();

    Vec w0 = random_vec(n, 21, -2.0f, 2.0f);
    // Exact ties, both kinds, and values whose high half rounds across a binade.
    w0[0] = std::bit_cast<float>(0x3F808000u);
    w0[1] = std::bit_cast<float>(0xBF818000u);
    w0[2] = std::bit_cast<float>(0x3F7FFFFFu);
    w0[3] = 0.0f;
    // The fp32-master layout: fp32 master, bf16 copy.
    Buffer master = upload(*be, w0), low = be->alloc(n, DType::BF16);
    be->cast(master, low);
    // The split: int16 low halves, bf16 high halves.
    Vec hi0(n), lo0(n);
    for (std::size_t i = 0; i < n; ++i) {
        const hd::SplitMaster h = hd::split_master(w0[i]);
        hi0[i] = hd::bits_float(std::uint32_t(h.hi) << 16);
        lo0[i] = float(h.lo);
    }
    Buffer lo = be->alloc(n, DType::I16), hi = be->alloc(n, DType::BF16);
    be->upload_f32(lo, lo0.data(), n);
    be->upload_f32(hi, hi0.data(), n);
    Buffer grads[2], s1[2], s2[2], scalers[2], records[2];
    std::unique_ptr<ParamTable> tables[2];
    for (int k = 0; k < 2; ++k) {
        grads[k] = be->alloc(n, DType::F32);
        s1[k] = be->alloc(n, DType::F32);
        s2[k] = be->alloc(n, DType::F32);
        be->fill(s1[k], 0.0f);
        be->fill(s2[k], 0.0f);
        ParamSlot slot{k == 0 ? &master : &lo, &grads[k], k == 0 ? &low : &hi,
                       state1 ? &s1[k] : nullptr, adam ? &s2[k] : nullptr};
        QCOMPARE(is_split_master(slot), k == 1);
        tables[k] = be->prepare_params({slot});
        scalers[k] = be->alloc(k_scaler_fields, DType::F32);
        const float scale = mode == LossScaleMode::None ? 1.0f : 1024.0f;
        be->upload_f32(scalers[k], Vec{scale, 0.0f, 0.0f, 0.0f}.data(), k_scaler_fields);
        records[k] = be->alloc(k_record_fields, DType::F32);
    }
    ScalerParams scaling;
    scaling.mode = mode;
    scaling.growth_interval = 2;
    for (int step = 1; step <= 5; ++step) {
        Vec g = random_vec(n, 100 + unsigned(step), -1.0f, 1.0f);
        if (mode != LossScaleMode::None) g = times(g, 1024.0f);
        if (step == 3) {
            g[17] = std::numeric_limits<float>::infinity();
            g[18] = std::numeric_limits<float>::quiet_NaN();
        }
        for (int k = 0; k < 2; ++k) {
            be->upload_f32(grads[k], g.data(), n);
            be->optimizer_step(*tables[k], opt, scaling, scalers[k], records[k], 0);
        }
        const Vec m = download(*be, master), c = download(*be, low);
        const Vec l = download(*be, lo), h = download(*be, hi);
        QVERIFY(download(*be, scalers[0]) == download(*be, scalers[1]));
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint16_t hb = std::uint16_t(std::bit_cast<std::uint32_t>(h[i]) >> 16);
            const float joined = hd::join_master(hb, std::int16_t(l[i]));
            const std::uint32_t mb = std::bit_cast<std::uint32_t>(m[i]);
            const QString where = QString("step %1 element %2").arg(step).arg(i);
            if (std::isnan(m[i])) { // only without loss scaling, from step 3's NaN on
                QVERIFY2(std::isnan(joined) && std::isnan(h[i]), qPrintable(where));
                continue;
            }
            QVERIFY2(std::bit_cast<std::uint32_t>(joined) == mb,
                     qPrintable(where + QString(": %1 vs %2").arg(joined).arg(m[i])));
            const std::uint16_t cb = std::uint16_t(std::bit_cast<std::uint32_t>(c[i]) >> 16);
            const bool even_tie = (mb & 0x1FFFFu) == 0x8000u;
            QVERIFY2(hb == (even_tie ? cb + 1 : cb), qPrintable(where));
        }
        if (state1) QVERIFY(same_bits(download(*be, s1[0]), download(*be, s1[1])));
        if (adam) QVERIFY(same_bits(download(*be, s2[0]), download(*be, s2[1])));
    }
}

void TestOptimizers::matches_pytorch_reference_data()
{
    QTest::addColumn<OptimizerType>("type");
    QTest::addColumn<float>("lr");
    QTest::addColumn<float>("momentum");
    QTest::addColumn<bool>("nesterov");
    QTest::addColumn<float>("weight_decay");
    QTest::addColumn<DType>("low"); // F32 here means no low copy
    const auto sgd = OptimizerType::SGD;
    QTest::newRow("sgd_plain") << sgd << 0.05f << 0.0f << false << 0.0f << DType::F32;
    QTest::newRow("sgd_momentum") << sgd << 0.05f << 0.9f << false << 0.0f << DType::F32;
    QTest::newRow("sgd_nesterov") << sgd << 0.05f << 0.9f << true << 0.0f << DType::F32;
    QTest::newRow("sgd_momentum_wd") << sgd << 0.05f << 0.9f << false << 0.01f << DType::F32;
    QTest::newRow("sgd_nesterov_wd_f16_low") << sgd << 0.05f << 0.8f << true << 0.05f << DType::F16;
    QTest::newRow("sgd_momentum_bf16_low") << sgd << 0.05f << 0.9f << false << 0.0f << DType::BF16;
    QTest::newRow("adam") << OptimizerType::Adam << 0.01f << 0.0f << false << 0.0f << DType::F32;
    QTest::newRow("adam_l2") << OptimizerType::Adam << 0.01f << 0.0f << false << 0.1f << DType::F32;
    QTest::newRow("adamw") << OptimizerType::AdamW << 0.01f << 0.0f << false << 0.1f << DType::F32;
    QTest::newRow("adamw_f16_low")
        << OptimizerType::AdamW << 0.01f << 0.0f << false << 0.1f << DType::F16;
    QTest::newRow("adam_bf16_low")
        << OptimizerType::Adam << 0.01f << 0.0f << false << 0.0f << DType::BF16;
}

void TestOptimizers::matches_pytorch_reference()
{
    QFETCH(OptimizerType, type);
    QFETCH(float, lr);
    QFETCH(float, momentum);
    QFETCH(bool, nesterov);
    QFETCH(float, weight_decay);
    QFETCH(DType, low);
    const bool has_low = low != DType::F32;
    auto be = cpu::make_cpu_backend();
    OptimizerConfig opt;
    opt.type = type;
    opt.lr = lr;
    opt.momentum = momentum;
    opt.nesterov = nesterov;
    opt.weight_decay = weight_decay;

    // Two tensors of different sizes: the step must walk every slot.
    const std::size_t sizes[2] = {37, 5};
    struct Tensor {
        Buffer master, grad, low, s1, s2;
        Reference ref;
    };
    std::vector<Tensor> ts(2);
    std::vector<ParamSlot> param_slots;
    for (int p = 0; p < 2; ++p) {
        Tensor& t = ts[p];
        const std::size_t n = sizes[p];
        const Vec w = random_vec(n, 10 + p);
        t.master = upload(*be, w);
        t.grad = be->alloc(n, DType::F32);
        t.s1 = be->alloc(n, DType::F32);
        t.s2 = be->alloc(n, DType::F32);
        // PyTorch starts Adam's m and v at zero; SGD's momentum buffer is not read on
        // the first step (it becomes g), so NaN there must not leak into the weights.
        be->fill(t.s1, type == OptimizerType::SGD ? k_nan : 0.0f);
        be->fill(t.s2, 0.0f);
        if (has_low) t.low = poisoned(*be, n, low);
        t.ref.w = DVec(w.begin(), w.end());
        t.ref.s1 = t.ref.s2 = DVec(n, 0.0);
        param_slots.push_back({&t.master, &t.grad, has_low ? &t.low : nullptr, &t.s1,
                               type == OptimizerType::SGD ? nullptr : &t.s2});
    }
    auto table = be->prepare_params(param_slots);
    Buffer scaler = be->alloc(k_scaler_fields, DType::F32);
    be->fill(scaler, 0.0f);
    Buffer record = be->alloc(k_record_fields, DType::F32);
    ScalerParams none; // LossScaleMode::None: gradients used as they are

    auto get = [&](const Buffer& b) { return download(*be, b); };
    for (int step = 0; step < 6; ++step) {
        for (int p = 0; p < 2; ++p) {
            const Vec g = random_vec(sizes[p], 100 * step + p, -2.0f, 2.0f);
            be->upload_f32(ts[p].grad, g.data(), g.size());
            ts[p].ref.step(opt, g);
        }
        be->optimizer_step(*table, opt, none, scaler, record, 0);
        for (int p = 0; p < 2; ++p) {
            const Vec w = get(ts[p].master);
            // fp32 arithmetic over 6 steps of updates of order lr on weights of order 1:
            // a few ulp (6e-8) per step, plus Adam's divide/sqrt: 2e-6 absolute.
            expect_close(w, ts[p].ref.w, 2e-6, 1e-5, "master");
            if (momentum != 0.0f || type != OptimizerType::SGD)
                expect_close(get(ts[p].s1), ts[p].ref.s1, 2e-6, 1e-5, "state1");
            if (type != OptimizerType::SGD)
                expect_close(get(ts[p].s2), ts[p].ref.s2, 2e-6, 1e-5, "state2");
            if (has_low) {
                // Written in the same pass: exactly the master rounded to the low dtype.
                const Vec l = get(ts[p].low);
                for (std::size_t i = 0; i < l.size(); ++i) EXPECT_EXACT(l[i], round_to(low, w[i]));
            }
        }
        EXPECT_EXACT(get(scaler)[k_optimizer_steps], float(step + 1));
    }
}

// Gradients {3, 0} and {4}: global norm 5 over both tensors (neither tensor's own norm).
// clip_norm 1 multiplies both by 1 / (5 + 1e-6); 10 leaves them alone, bit for bit.
void TestOptimizers::clip_by_hand()
{
    OptimizerConfig opt;
    opt.lr = 0.5f;
    opt.momentum = 0.0f;
    const Vec w0 = {1.0f, -2.0f}, w1 = {0.25f};
    const Vec g0 = {3.0f, 0.0f}, g1 = {4.0f};

    opt.clip_norm = 1.0f;
    ClipRig clipped(w0, w1, LossScaleMode::None, 1.0f);
    clipped.step(opt, g0, g1);
    const double f = 1.0 / (5.0 + 1e-6);
    // One fp32 rounding of the factor and of each product: a few ulps of the weights.
    expect_close(clipped.weights(0), {1.0 - 0.5 * 3.0 * f, -2.0}, 1e-7, 1e-6, "w0 clipped");
    expect_close(clipped.weights(1), {0.25 - 0.5 * 4.0 * f}, 1e-7, 1e-6, "w1 clipped");
    EXPECT_EXACT(clipped.rec(k_rec_grad_norm), 5.0f);
    EXPECT_EXACT(clipped.rec(k_rec_overflow), 0.0f);

    opt.clip_norm = 10.0f; // above the norm: nothing changes
    ClipRig loose(w0, w1, LossScaleMode::None, 1.0f);
    loose.step(opt, g0, g1);
    EXPECT_EXACT(loose.weights(0)[0], 1.0f - 0.5f * 3.0f);
    EXPECT_EXACT(loose.weights(0)[1], -2.0f);
    EXPECT_EXACT(loose.weights(1)[0], 0.25f - 0.5f * 4.0f);
    EXPECT_EXACT(loose.rec(k_rec_grad_norm), 5.0f);

    opt.clip_norm = 0.0f; // off: the norm is not computed, the record says 0
    ClipRig off(w0, w1, LossScaleMode::None, 1.0f);
    off.step(opt, g0, g1);
    EXPECT_EXACT(off.weights(1)[0], 0.25f - 0.5f * 4.0f);
    EXPECT_EXACT(off.rec(k_rec_grad_norm), 0.0f);
}

// Gradients scaled by 1024 (a power of two: unscaling is exact) and clipped give the
// very weights and norm of the unscaled run, step after step.
void TestOptimizers::clip_under_loss_scale_data()
{
    QTest::addColumn<OptimizerType>("type");
    QTest::addColumn<LossScaleMode>("mode");
    QTest::newRow("sgd_dynamic") << OptimizerType::SGD << LossScaleMode::Dynamic;
    QTest::newRow("sgd_static") << OptimizerType::SGD << LossScaleMode::Static;
    QTest::newRow("adam_dynamic") << OptimizerType::Adam << LossScaleMode::Dynamic;
    QTest::newRow("adamw_static") << OptimizerType::AdamW << LossScaleMode::Static;
}

void TestOptimizers::clip_under_loss_scale()
{
    QFETCH(OptimizerType, type);
    QFETCH(LossScaleMode, mode);
    OptimizerConfig opt;
    opt.type = type;
    opt.lr = 0.01f;
    opt.weight_decay = 0.01f;
    opt.clip_norm = 0.25f; // the LSTM language model's
    const Vec w0 = random_vec(300, 1), w1 = random_vec(7, 2);
    ClipRig plain(w0, w1, LossScaleMode::None, 1.0f);
    ClipRig scaled(w0, w1, mode, 1024.0f);
    scaled.scaling.growth_interval = 1000;
    for (int step = 0; step < 4; ++step) {
        const Vec g0 = random_vec(300, 10 + step, -1.0f, 1.0f), g1 = random_vec(7, 20 + step);
        plain.step(opt, g0, g1);
        scaled.step(opt, times(g0, 1024.0f), times(g1, 1024.0f));
        QVERIFY(plain.rec(k_rec_grad_norm) > 1.0f); // clipping is active
        EXPECT_EXACT(scaled.rec(k_rec_grad_norm), plain.rec(k_rec_grad_norm));
        EXPECT_EXACT(scaled.rec(k_rec_scale), 1024.0f);
        for (int p = 0; p < 2; ++p) {
            const Vec a = plain.weights(p), b = scaled.weights(p);
            for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EXACT(b[i], a[i]);
        }
    }
}

// An inf (or NaN) gradient under loss scaling: no weight or state moves, the scale
// halves, the record says overflow with an infinite norm; the next clean step clips again.
void TestOptimizers::clip_overflow_skips_step()
{
    for (OptimizerType type : {OptimizerType::SGD, OptimizerType::Adam}) {
        OptimizerConfig opt;
        opt.type = type;
        opt.lr = 0.1f;
        opt.clip_norm = 0.25f;
        const Vec w0 = random_vec(50, 3), w1 = random_vec(3, 4);
        ClipRig rig(w0, w1, LossScaleMode::Dynamic, 1024.0f);
        for (float bad : {k_inf, k_nan}) {
            const Vec before0 = rig.weights(0), before1 = rig.weights(1);
            const Vec m_before = download(*rig.be, rig.s1[0]);
            Vec g0 = random_vec(50, 5, -512.0f, 512.0f);
            g0[17] = bad;
            rig.step(opt, g0, random_vec(3, 6, -512.0f, 512.0f));
            EXPECT_EXACT(rig.rec(k_rec_overflow), 1.0f);
            EXPECT_EXACT(rig.rec(k_rec_grad_norm), k_inf);
            QVERIFY(rig.weights(0) == before0);
            QVERIFY(rig.weights(1) == before1);
            QVERIFY(download(*rig.be, rig.s1[0]) == m_before);
            EXPECT_EXACT(download(*rig.be, rig.scaler)[k_optimizer_steps], 0.0f);
        }
        EXPECT_EXACT(download(*rig.be, rig.scaler)[k_scale], 256.0f); // halved twice

        const Vec g0 = random_vec(50, 7, -64.0f, 64.0f), g1 = random_vec(3, 8, -64.0f, 64.0f);
        rig.step(opt, g0, g1);
        EXPECT_EXACT(rig.rec(k_rec_overflow), 0.0f);
        double sq = 0;
        for (float x : g0) sq += double(x / 256.0f) * double(x / 256.0f);
        for (float x : g1) sq += double(x / 256.0f) * double(x / 256.0f);
        QVERIFY(std::abs(rig.rec(k_rec_grad_norm) - std::sqrt(sq)) <= 1e-6 * std::sqrt(sq));
        QVERIFY(rig.weights(0) != w0);
    }
}

// Every optimizer with clipping against the double reference fed PyTorch's clipped
// gradients: the norm over both tensors, then weight decay added to the clipped gradient
// (L2 for SGD/Adam, decoupled for AdamW), as clip_grad_norm_ before optimizer.step().
void TestOptimizers::clip_matches_pytorch_reference_data()
{
    QTest::addColumn<OptimizerType>("type");
    QTest::addColumn<float>("momentum");
    QTest::addColumn<bool>("nesterov");
    QTest::addColumn<float>("weight_decay");
    QTest::addColumn<float>("clip_norm");
    const auto sgd = OptimizerType::SGD;
    QTest::newRow("sgd_plain") << sgd << 0.0f << false << 0.0f << 0.25f;
    QTest::newRow("sgd_momentum_wd") << sgd << 0.9f << false << 0.1f << 0.25f;
    QTest::newRow("sgd_nesterov_wd") << sgd << 0.9f << true << 0.1f << 0.25f;
    QTest::newRow("sgd_near_threshold") << sgd << 0.9f << false << 0.0f << 3.0f;
    QTest::newRow("adam") << OptimizerType::Adam << 0.0f << false << 0.0f << 0.25f;
    QTest::newRow("adam_l2") << OptimizerType::Adam << 0.0f << false << 0.1f << 0.25f;
    QTest::newRow("adamw") << OptimizerType::AdamW << 0.0f << false << 0.1f << 0.25f;
}

void TestOptimizers::clip_matches_pytorch_reference()
{
    QFETCH(OptimizerType, type);
    QFETCH(float, momentum);
    QFETCH(bool, nesterov);
    QFETCH(float, weight_decay);
    QFETCH(float, clip_norm);
    OptimizerConfig opt;
    opt.type = type;
    opt.lr = 0.05f;
    opt.momentum = momentum;
    opt.nesterov = nesterov;
    opt.weight_decay = weight_decay;
    opt.clip_norm = clip_norm;
    const Vec w0 = random_vec(37, 10), w1 = random_vec(5, 11);
    ClipRig rig(w0, w1, LossScaleMode::None, 1.0f);
    Reference ref[2];
    const Vec* init[2] = {&w0, &w1};
    for (int p = 0; p < 2; ++p) {
        ref[p].w = DVec(init[p]->begin(), init[p]->end());
        ref[p].s1 = ref[p].s2 = DVec(init[p]->size(), 0.0);
    }
    int clipped_steps = 0;
    for (int step = 0; step < 6; ++step) {
        // Gradient sizes vary by step: with clip_norm 3 some steps clip and some do not.
        const float spread = 0.2f + 0.3f * float(step);
        const Vec g[2] = {random_vec(37, 100 * step, -spread, spread),
                          random_vec(5, 100 * step + 1, -spread, spread)};
        double sq = 0;
        for (const Vec& v : g)
            for (float x : v) sq += double(x) * double(x);
        const double norm = std::sqrt(sq), f = clip_factor(clip_norm, norm);
        clipped_steps += f < 1.0;
        for (int p = 0; p < 2; ++p) {
            Vec clipped(g[p]);
            for (float& x : clipped) x = float(double(x) * f);
            ref[p].step(opt, clipped);
        }
        rig.step(opt, g[0], g[1]);
        QVERIFY(std::abs(rig.rec(k_rec_grad_norm) - norm) <= 1e-6 * norm);
        for (int p = 0; p < 2; ++p)
            // As in matches_pytorch_reference, plus the factor's few fp32 roundings.
            expect_close(rig.weights(p), ref[p].w, 2e-6, 1e-5, "master");
    }
    QVERIFY(clipped_steps > 0);
    if (clip_norm > 1.0f) QVERIFY(clipped_steps < 6);
}

QTEST_APPLESS_MAIN(TestOptimizers)
#include "tst_optimizers.moc"
