// SGD (momentum, nesterov, weight decay), Adam and AdamW on the CPU backend against
// hand-written double-precision references of PyTorch's update rules over several
// steps, with the low-precision weight copy written in the same pass.
#include "backends/cpu/cpu_backend.h"

#include "mixlab/backend.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

Q_DECLARE_METATYPE(mixlab::OptimizerType)
Q_DECLARE_METATYPE(mixlab::DType)

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

} // namespace

class TestOptimizers : public QObject {
    Q_OBJECT

private slots:
    void matches_pytorch_reference_data();
    void matches_pytorch_reference();
};

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

QTEST_APPLESS_MAIN(TestOptimizers)
#include "tst_optimizers.moc"
