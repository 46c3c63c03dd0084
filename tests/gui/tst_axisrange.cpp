// The charts' range rules: a per-step series scaled on its steady state (warm-up of a GPU
// run, CPU noise, spikes, slowdowns, bad values) and power-of-two ticks for loss scales.
#include "charts/axisrange.h"
#include "gpu_shaped_steps.h"

#include <QRandomGenerator>
#include <QTest>

#include <cmath>
#include <limits>

using mixlab::powerOfTwoTicks;
using mixlab::steadyRange;
using mixlab::SteadyRange;

namespace {

QList<QPointF> stepTimes(const std::vector<mixlab::StepMetrics> &steps)
{
    QList<QPointF> out;
    for (const mixlab::StepMetrics &m : steps) out.append(QPointF(double(m.step), m.step_ms));
    return out;
}

QList<QPointF> throughputs(const std::vector<mixlab::StepMetrics> &steps)
{
    QList<QPointF> out;
    for (const mixlab::StepMetrics &m : steps) out.append(QPointF(double(m.step), m.samples_per_s));
    return out;
}

// Noisy around `level` (uniform, +-spread), x = 1..n.
QList<QPointF> noisy(int n, double level, double spread, quint32 seed)
{
    QRandomGenerator rng(seed);
    QList<QPointF> out;
    for (int i = 0; i < n; ++i)
        out.append(QPointF(i + 1, level + spread * (2 * rng.generateDouble() - 1)));
    return out;
}

} // namespace

class TestAxisRange : public QObject {
    Q_OBJECT
private slots:
    void gpuWarmupLeftOut_data();
    void gpuWarmupLeftOut();
    void gpuThroughputWarmupLeftOut();
    void cpuNoiseKeepsEverything();
    void flatSeries();
    void laterSpikeIsOffScaleNotWarmup();
    void sustainedSlowdownStaysInRange();
    void shortSeriesWholeSpan();
    void nonFiniteIgnored();
    void empty();
    void ticksAllWhenTheyFit();
    void ticksKeepWantedAndSpacing_data();
    void ticksKeepWantedAndSpacing();
};

void TestAxisRange::gpuWarmupLeftOut_data()
{
    QTest::addColumn<double>("steadyMs");
    QTest::addColumn<bool>("mixed");
    QTest::newRow("fp32 0.51 ms") << 0.51 << false;
    QTest::newRow("mixed_fp16 0.21 ms") << 0.21 << true;
}

void TestAxisRange::gpuWarmupLeftOut()
{
    QFETCH(double, steadyMs);
    QFETCH(bool, mixed);
    const QList<QPointF> pts = stepTimes(gpuShapedSteps(steadyMs, mixed, 3000, 7));
    const SteadyRange r = steadyRange(pts);
    // The three plan-timing steps, and nothing after them.
    QCOMPARE(r.warmup, qsizetype(3));
    // The range is the steady state: within the jitter and the rare 15% slower step.
    QVERIFY2(r.lo > 0.9 * steadyMs && r.lo < steadyMs, qPrintable(QString::number(r.lo)));
    QVERIFY2(r.hi > steadyMs && r.hi < 1.25 * steadyMs, qPrintable(QString::number(r.hi)));
    // Every point after warm-up is in it: nothing steady is cut.
    for (qsizetype i = r.warmup; i < pts.size(); ++i) QVERIFY(r.contains(pts[i].y()));
}

void TestAxisRange::gpuThroughputWarmupLeftOut()
{
    // Throughput's warm-up lies below: 673 samples/s against ~1.2 million.
    const QList<QPointF> pts = throughputs(gpuShapedSteps(0.21, true, 3000, 8));
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(3));
    QVERIFY(r.lo > 1.0e6 && r.hi < 1.4e6);
}

void TestAxisRange::cpuNoiseKeepsEverything()
{
    // The CPU backend: 300 ms +-33% steps, a first step twice as long. None of it is
    // warm-up to hide: the range spans every point.
    QList<QPointF> pts = noisy(150, 300, 100, 9);
    pts[0].setY(600);
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(0));
    QCOMPARE(r.hi, 600.0);
    double lo = 1e9;
    for (const QPointF &p : pts) lo = std::min(lo, p.y());
    QCOMPARE(r.lo, lo);
}

void TestAxisRange::flatSeries()
{
    QList<QPointF> pts;
    for (int i = 1; i <= 50; ++i) pts.append(QPointF(i, 812.5));
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(0));
    QCOMPARE(r.lo, 812.5);
    QCOMPARE(r.hi, 812.5);
}

void TestAxisRange::laterSpikeIsOffScaleNotWarmup()
{
    QList<QPointF> pts = noisy(3000, 0.5, 0.01, 10);
    pts[1500].setY(40.0); // a re-plan in the middle of the run
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(0));
    QVERIFY(!r.contains(40.0));
    QVERIFY(r.hi < 0.52);
}

void TestAxisRange::sustainedSlowdownStaysInRange()
{
    // 150 of 3000 steps (5%) twice as slow: a real slowdown, shown, not clipped.
    QList<QPointF> pts = noisy(3000, 0.5, 0.01, 11);
    for (int i = 2000; i < 2150; ++i) pts[i].setY(1.0 + 0.01 * (i % 3));
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(0));
    QVERIFY(r.contains(1.02));
    QVERIFY(r.lo < 0.5);
}

void TestAxisRange::shortSeriesWholeSpan()
{
    const QList<QPointF> pts{{1, 380.0}, {2, 0.5}, {3, 0.52}, {4, 0.49}};
    const SteadyRange r = steadyRange(pts);
    QCOMPARE(r.warmup, qsizetype(0));
    QCOMPARE(r.lo, 0.49);
    QCOMPARE(r.hi, 380.0);
}

void TestAxisRange::nonFiniteIgnored()
{
    QList<QPointF> pts = stepTimes(gpuShapedSteps(0.51, false, 500, 12));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    pts.insert(1, QPointF(1.5, nan)); // inside the warm-up
    pts.insert(100, QPointF(99.5, std::numeric_limits<double>::infinity()));
    const SteadyRange r = steadyRange(pts);
    // Warm-up counts points of the series as given: the NaN one among them.
    QCOMPARE(r.warmup, qsizetype(4));
    QVERIFY(std::isfinite(r.lo) && std::isfinite(r.hi) && r.hi < 0.7);
}

void TestAxisRange::empty()
{
    QVERIFY(steadyRange({}).empty());
    const double nan = std::numeric_limits<double>::quiet_NaN();
    QVERIFY(steadyRange({{1, nan}, {2, nan}}).empty());
    QVERIFY(!steadyRange({{1, 3.0}}).empty());
}

void TestAxisRange::ticksAllWhenTheyFit()
{
    QCOMPARE(powerOfTwoTicks(14, 17, 6, {16}), std::vector<int>({14, 15, 16, 17}));
    QCOMPARE(powerOfTwoTicks(17, 14, 6, {}), std::vector<int>({14, 15, 16, 17}));
}

void TestAxisRange::ticksKeepWantedAndSpacing_data()
{
    QTest::addColumn<int>("lo");
    QTest::addColumn<int>("hi");
    QTest::addColumn<int>("maxLabels");
    QTest::addColumn<QList<int>>("wanted");
    // fp32 at 1 and mixed at 32768 in a short chart: 2^15 must be readable.
    QTest::newRow("fp32 + mixed, 5 labels") << 0 << 16 << 5 << QList<int>{15, 0, 16};
    QTest::newRow("fp32 + mixed, 3 labels") << 0 << 16 << 3 << QList<int>{15, 0, 16};
    QTest::newRow("two runs at 2^15 and 2^13") << -1 << 17 << 4 << QList<int>{15, 13, 17, -1};
    QTest::newRow("a scale fallen to 2^-6") << -6 << 16 << 6 << QList<int>{-6, 16};
}

void TestAxisRange::ticksKeepWantedAndSpacing()
{
    QFETCH(int, lo);
    QFETCH(int, hi);
    QFETCH(int, maxLabels);
    QFETCH(QList<int>, wanted);
    const std::vector<int> ticks =
        powerOfTwoTicks(lo, hi, maxLabels, {wanted.begin(), wanted.end()});
    QVERIFY(int(ticks.size()) <= maxLabels);
    QVERIFY(ticks.size() >= 2);
    QVERIFY(std::is_sorted(ticks.begin(), ticks.end()));
    // The first wanted value (a run's final scale) is always labelled.
    QVERIFY(std::find(ticks.begin(), ticks.end(), wanted.front()) != ticks.end());
    int stride = 1;
    while ((hi - lo) / stride + 1 > maxLabels) ++stride;
    for (std::size_t i = 1; i < ticks.size(); ++i)
        QVERIFY2(ticks[i] - ticks[i - 1] >= stride,
                 qPrintable(QString("%1 %2").arg(ticks[i - 1]).arg(ticks[i])));
    for (int t : ticks) QVERIFY(t >= lo && t <= hi);
}

QTEST_APPLESS_MAIN(TestAxisRange)
#include "tst_axisrange.moc"
