// The CUDA backend against the CPU reference, op by op: one test row per check of
// run_backend_checks (skipped where no CUDA device is present), and the convolution
// plans cuDNN chose.
#include "mixlab/backend_check.h"

#include "mixlab/backend.h"
#ifdef MIXLAB_WITH_CUDA
#include "backends/cuda/conv_report.h"
#endif

#include <QtTest>

#include <memory>
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

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "tst_cuda_backend.moc"
