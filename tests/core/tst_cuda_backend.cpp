// The CUDA backend against the CPU reference, op by op: one test row per check of
// run_backend_checks (skipped where no CUDA device is present).
#include "backend_check.h"

#include "mixlab/backend.h"

#include <QtTest>

#include <memory>
#include <vector>

using namespace mixlab;

class TestCudaBackend : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void check_data();
    void check();
    void unknownFilterRunsNothing();

private:
    std::unique_ptr<Backend> m_cpu, m_cuda;
    std::vector<CheckResult> m_results;
};

void TestCudaBackend::initTestCase()
{
    if (!cuda_backend_available())
        QSKIP("no CUDA device: the CUDA backend cannot be checked here");
    m_cpu = make_backend(DeviceChoice::CPU);
    m_cuda = make_backend(DeviceChoice::CUDA);
    // A fixed seed so a failure reproduces with `mixlab-cli check --seed 7 --filter NAME`.
    m_results = run_backend_checks(*m_cpu, *m_cuda, 7);
    QVERIFY2(m_results.size() > 300, "the checker ran far fewer checks than it defines");
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

QTEST_APPLESS_MAIN(TestCudaBackend)
#include "tst_cuda_backend.moc"
