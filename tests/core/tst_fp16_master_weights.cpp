// Why master weights matter: an SGD update below half an fp16 ulp vanishes when the
// weights themselves are fp16 (the pure `fp16` policy) and accumulates in fp32 masters,
// whose fp16 copy then moves too (the `mixed_fp16` layout).
#include "backends/cpu/cpu_backend.h"

#include "mixlab/backend.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <cmath>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

namespace {

constexpr std::size_t k_n = 16;
constexpr int k_steps = 100;

// Weights at 1.0, gradient ~1e-2, lr 1e-2: every update is ~1e-4, while fp16 values
// just below 1.0 are 2^-11 apart, so a rounded update smaller than 2^-12 (2.4e-4) is lost.
struct Setup {
    std::unique_ptr<Backend> be = cpu::make_cpu_backend();
    OptimizerConfig opt;
    ScalerParams scaling; // no loss scaling: the gradients are already small and finite
    Buffer scaler = be->alloc(k_scaler_fields, DType::F32);
    Buffer record = be->alloc(k_record_fields, DType::F32);
    Vec grad_values;

    Setup()
    {
        opt.type = OptimizerType::SGD;
        opt.lr = 1e-2f;
        opt.momentum = 0.0f; // momentum would grow the update to 1e-3 and hide the effect
        be->fill(scaler, 0.0f);
        grad_values = random_vec(k_n, 7, 0.9e-2f, 1.1e-2f); // all near 1e-2
    }
    void run(ParamTable& table)
    {
        for (int i = 0; i < k_steps; ++i)
            be->optimizer_step(table, opt, scaling, scaler, record, 0);
    }
};

} // namespace

class TestFp16MasterWeights : public QObject {
    Q_OBJECT

private slots:
    void pure_fp16_updates_underflow();
    void fp32_master_weights_accumulate();
};

void TestFp16MasterWeights::pure_fp16_updates_underflow()
{
    Setup s;
    Buffer w = s.be->alloc(k_n, DType::F16);
    Buffer g = s.be->alloc(k_n, DType::F16); // the `fp16` policy's gradients are fp16 too
    s.be->fill(w, 1.0f);
    s.be->upload_f32(g, s.grad_values.data(), k_n);
    auto table = s.be->prepare_params({ParamSlot{&w, &g, nullptr, nullptr, nullptr}});
    s.run(*table);
    const Vec wv = download(*s.be, w);
    for (float v : wv)
        QVERIFY2(v == 1.0f,
                 qPrintable(QString("fp16 weight moved to %1").arg(double(v), 0, 'g', 9)));
    QCOMPARE(int(download(*s.be, s.scaler)[k_optimizer_steps]), k_steps); // the steps did run
}

void TestFp16MasterWeights::fp32_master_weights_accumulate()
{
    Setup s;
    Buffer master = s.be->alloc(k_n, DType::F32);
    Buffer low = s.be->alloc(k_n, DType::F16);
    Buffer g = s.be->alloc(k_n, DType::F32);
    s.be->fill(master, 1.0f);
    s.be->fill(low, 1.0f);
    s.be->upload_f32(g, s.grad_values.data(), k_n);
    auto table = s.be->prepare_params({ParamSlot{&master, &g, &low, nullptr, nullptr}});
    s.run(*table);
    const Vec mv = download(*s.be, master), lv = download(*s.be, low);
    for (std::size_t i = 0; i < k_n; ++i) {
        const double expected = 1.0 - k_steps * 1e-2 * double(s.grad_values[i]); // ~0.99
        // 100 fp32 subtractions near 1.0, each off by at most half an ulp (6e-8): 1e-5.
        QVERIFY2(std::abs(mv[i] - expected) < 1e-5,
                 qPrintable(QString("master %1, expected %2").arg(mv[i]).arg(expected)));
        QVERIFY(std::abs(mv[i] - 1.0f) > 0.008f);
        // The fp16 copy the GEMMs read follows the master (to half an fp16 ulp, 2.4e-4).
        QVERIFY2(lv[i] != 1.0f && std::abs(lv[i] - mv[i]) <= std::ldexp(1.0, -12),
                 qPrintable(QString("fp16 copy %1 for master %2").arg(lv[i]).arg(mv[i])));
        QVERIFY(lv[i] == round_to(DType::F16, mv[i]));
    }
}

QTEST_APPLESS_MAIN(TestFp16MasterWeights)
#include "tst_fp16_master_weights.moc"
