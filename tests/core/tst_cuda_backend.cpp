// The CUDA backend against the CPU reference, op by op: one test row per check of
// run_backend_checks (skipped where no CUDA device is present), the convolution plans
// cuDNN chose, and an LSTM step recorded as a CUDA graph.
#include "mixlab/backend_check.h"

#include "mixlab/backend.h"
#ifdef MIXLAB_WITH_CUDA
#include "backends/cuda/conv_report.h"
#endif

#include <QtTest>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace mixlab;

class TestCudaBackend : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void check_data();
    void check();
    void unknownFilterRunsNothing();
    void convPlansMatchTheMath();
    void lstmGraphReplayMatchesEager_data();
    void lstmGraphReplayMatchesEager();

private:
    std::unique_ptr<Backend> m_cpu, m_cuda;
    std::vector<CheckResult> m_results;
};

void TestCudaBackend::initTestCase()
{
    if (!cuda_backend_available()) QSKIP("no CUDA device: the CUDA backend cannot be checked here");
    m_cpu = make_backend(DeviceChoice::CPU);
    m_cuda = make_backend(DeviceChoice::CUDA);
    // A fixed seed so a failure reproduces with `mixlab-cli check --seed 7 --filter NAME`.
    m_results = run_backend_checks(*m_cpu, *m_cuda, 7);
    QVERIFY2(m_results.size() > 500, "the checker ran far fewer checks than it defines");
}

void TestCudaBackend::check_data()
{
    QTest::addColumn<int>("index");
    for (std::size_t i = 0; i < m_results.size(); ++i)
        QTest::newRow(m_results[i].name.c_str()) << int(i);
}

void TestCudaBackend::check()
{
    QFETCH(int, index);
    const CheckResult& r = m_results[std::size_t(index)];
    QVERIFY2(r.passed, r.detail.c_str());
}

void TestCudaBackend::unknownFilterRunsNothing()
{
    QVERIFY(run_backend_checks(*m_cpu, *m_cuda, 7, "no-such-check").empty());
}

// Every convolution the checks planned, printed; exact fp32 never on tensor cores, and
// 16-bit forward convolutions on them wherever the device has them.
void TestCudaBackend::convPlansMatchTheMath()
{
#ifdef MIXLAB_WITH_CUDA
    const std::vector<cuda::ConvPlanRecord> plans = cuda::conv_plans(*m_cuda);
    QVERIFY2(plans.size() >= 8 * 4, "the checks should have planned every case in every mode");
    const bool has_tc = m_cuda->info().tensor_cores;
    for (const cuda::ConvPlanRecord& p : plans) {
        qInfo("%s", cuda::describe(p).c_str());
        QVERIFY(!p.info.forward_algo.empty() && !p.info.backward_data_algo.empty() &&
                !p.info.backward_filter_algo.empty());
        const std::string all =
            p.info.forward_algo + p.info.backward_data_algo + p.info.backward_filter_algo;
        if (p.dtype == DType::F32 && p.math == MathMode::Pedantic)
            QVERIFY2(all.find("tensor cores") == std::string::npos && !p.info.tensor_cores,
                     cuda::describe(p).c_str());
        const bool resnet = p.geometry.batch == 128 && p.geometry.in_c == 64;
        if (resnet && p.dtype != DType::F32 && has_tc)
            QVERIFY2(p.info.forward_algo.find("tensor cores") != std::string::npos,
                     cuda::describe(p).c_str());
    }
#else
    QSKIP("built without CUDA");
#endif
}

void TestCudaBackend::lstmGraphReplayMatchesEager_data()
{
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("math");
    QTest::newRow("f32") << int(DType::F32) << int(MathMode::Pedantic);
    QTest::newRow("tf32") << int(DType::F32) << int(MathMode::TF32);
    QTest::newRow("f16") << int(DType::F16) << int(MathMode::Reduced);
}

// One LSTM training step (forward, backward data with truncated BPTT's null final-state
// gradients, weight gradient into a zeroed dw) run eagerly, then recorded and replayed:
// finite outputs, and the replay writes the same bits as the eager run (no host sync or
// allocation inside the ops, and the plan's reserve space carried from forward to
// backward inside the graph).
void TestCudaBackend::lstmGraphReplayMatchesEager()
{
    QFETCH(int, dtype);
    QFETCH(int, math);
    const DType t = DType(dtype);
    Backend& b = *m_cuda;
    const LstmShape s{35, 20, 200, 200}; // the word language model's small configuration
    std::unique_ptr<LstmPlan> plan = b.lstm_prepare(s, t, MathMode(math));
    QVERIFY(plan->shape() == s);
    QVERIFY(plan->device_bytes() > 0);

    std::mt19937 gen(15);
    const auto input = [&](std::size_t n, float range) {
        std::uniform_real_distribution<float> u(-range, range);
        std::vector<float> v(n);
        for (float& e : v) e = u(gen);
        Buffer buf = b.alloc(n, t);
        b.upload_f32(buf, v.data(), n);
        return buf;
    };
    const float k = 1.0f / std::sqrt(float(s.hidden));
    Buffer x = input(s.x_count(), 1.0f), w = input(s.weight_count(), k);
    Buffer h0 = input(s.state_count(), 0.5f), c0 = input(s.state_count(), 0.5f);
    Buffer dy = input(s.y_count(), 1.0f);
    Buffer y = b.alloc(s.y_count(), t), hT = b.alloc(s.state_count(), t),
           cT = b.alloc(s.state_count(), t), dx = b.alloc(s.x_count(), t),
           dh0 = b.alloc(s.state_count(), t), dc0 = b.alloc(s.state_count(), t),
           dw = b.alloc(s.weight_count(), t);
    const std::vector<Buffer*> outputs = {&y, &hT, &cT, &dx, &dh0, &dc0, &dw};

    const auto step = [&] {
        b.fill(dw, 0.0f);
        b.lstm_forward(*plan, x, h0, c0, w, true, y, hT, cT);
        b.lstm_backward_data(*plan, y, dy, nullptr, nullptr, w, h0, c0, dx, &dh0, &dc0);
        b.lstm_backward_weights(*plan, x, h0, y, dw);
    };
    const auto download = [&] {
        std::vector<std::vector<float>> all;
        for (Buffer* o : outputs) {
            all.emplace_back(o->count());
            b.download_f32(*o, all.back().data(), o->count());
        }
        return all;
    };

    step();
    const std::vector<std::vector<float>> eager = download();
    for (std::size_t i = 0; i < eager.size(); ++i)
        for (float e : eager[i])
            QVERIFY2(std::isfinite(e), ("output " + std::to_string(i) + " not finite").c_str());

    for (Buffer* o : outputs) b.fill(*o, std::nanf(""));
    QVERIFY(b.begin_capture());
    step();
    std::string why;
    std::unique_ptr<StepGraph> graph = b.end_capture(&why);
    QVERIFY2(graph, why.c_str());
    QVERIFY(graph->replay());
    const std::vector<std::vector<float>> replayed = download();
    for (std::size_t i = 0; i < eager.size(); ++i)
        QVERIFY2(
            std::memcmp(eager[i].data(), replayed[i].data(), eager[i].size() * sizeof(float)) == 0,
            ("output " + std::to_string(i) + " differs between eager and replay").c_str());
}

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "tst_cuda_backend.moc"
