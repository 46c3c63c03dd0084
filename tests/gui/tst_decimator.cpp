// Tests of the chart helpers: min/max-per-bucket decimation, EMA smoothing, and reading a
// curve at the crosshair's x.
#include "charts/seriesdecimator.h"

#include <QRandomGenerator>
#include <QTest>

#include <cmath>
#include <limits>

using mixlab::decimateMinMax;
using mixlab::readCurveAt;
using mixlab::smoothEma;

namespace {

// A noisy, drifting curve with distinct values (never all zeros), x = 0..n-1.
QList<QPointF> noisyCurve(int n, quint32 seed)
{
    QRandomGenerator rng(seed);
    QList<QPointF> pts;
    double y = 2.5;
    for (int i = 0; i < n; ++i) {
        y += rng.generateDouble() - 0.5;
        pts.append(QPointF(i, y));
    }
    return pts;
}

} // namespace

class TestDecimator : public QObject {
    Q_OBJECT
private slots:
    void keepsEverythingWhenSmall();
    void capsCountAndKeepsEnds_data();
    void capsCountAndKeepsEnds();
    void keepsMinMaxPerBucket();
    void keepsSpikes();
    void dropsNonFinite();
    void emptyAndTiny();
    void unsortedStillCapped();
    void emaMatchesHandComputation();
    void emaAlphaZeroIsIdentity();
    void emaSkipsNonFinite();
    void readingIsTheNearestPoint();
    void readingMatchesSmoothedCurve_data();
    void readingMatchesSmoothedCurve();
    void readingBeforeSmoothingStarts();
    void readingSkipsNonFinite();
};

void TestDecimator::keepsEverythingWhenSmall()
{
    const QList<QPointF> pts = noisyCurve(200, 1);
    QCOMPARE(decimateMinMax(pts, 100), pts);
    QCOMPARE(decimateMinMax(pts, 500), pts);
}

void TestDecimator::capsCountAndKeepsEnds_data()
{
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("buckets");
    QTest::newRow("100k into 800") << 100000 << 800;
    QTest::newRow("just over the cap") << 201 << 100;
    QTest::newRow("one bucket") << 1000 << 1;
    QTest::newRow("two buckets") << 1000 << 2;
    QTest::newRow("odd sizes") << 12345 << 97;
}

void TestDecimator::capsCountAndKeepsEnds()
{
    QFETCH(int, n);
    QFETCH(int, buckets);
    const QList<QPointF> pts = noisyCurve(n, quint32(n + buckets));
    const QList<QPointF> out = decimateMinMax(pts, buckets);
    QVERIFY2(out.size() <= 2 * buckets, qPrintable(QString::number(out.size())));
    QVERIFY(out.size() >= std::min(2, n));
    QCOMPARE(out.first(), pts.first());
    QCOMPARE(out.last(), pts.last());
    // Every kept point is an input point, in input order.
    qsizetype j = 0;
    for (const QPointF &p : out) {
        while (j < pts.size() && pts[j] != p) ++j;
        QVERIFY2(j < pts.size(), "decimation invented or reordered a point");
        ++j;
    }
}

void TestDecimator::keepsMinMaxPerBucket()
{
    // 10 buckets: first/last take one, the 998 interior points spread over 9 buckets by x.
    const int n = 1000, buckets = 10;
    const QList<QPointF> pts = noisyCurve(n, 7);
    const QList<QPointF> out = decimateMinMax(pts, buckets);
    const double x0 = pts.first().x(), width = (pts.last().x() - x0) / (buckets - 1);
    for (int b = 0; b < buckets - 1; ++b) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (int i = 1; i < n - 1; ++i) {
            const int bi = std::min(int((pts[i].x() - x0) / width), buckets - 2);
            if (bi == b) {
                lo = std::min(lo, pts[i].y());
                hi = std::max(hi, pts[i].y());
            }
        }
        bool haveLo = false, haveHi = false;
        for (const QPointF &p : out) {
            const int bi = std::min(int((p.x() - x0) / width), buckets - 2);
            if (bi != b) continue;
            haveLo |= p.y() == lo;
            haveHi |= p.y() == hi;
        }
        QVERIFY2(haveLo && haveHi, qPrintable(QStringLiteral("bucket %1").arg(b)));
    }
}

void TestDecimator::keepsSpikes()
{
    QList<QPointF> pts = noisyCurve(50000, 3);
    pts[31337].setY(1e6);
    pts[777].setY(-1e6);
    const QList<QPointF> out = decimateMinMax(pts, 300);
    QVERIFY(out.contains(pts[31337]));
    QVERIFY(out.contains(pts[777]));
}

void TestDecimator::dropsNonFinite()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    QList<QPointF> pts = noisyCurve(5000, 11);
    pts[0].setY(nan);    // the first finite point becomes the second
    pts[4999].setX(inf); // and the last the one before it
    pts[100].setY(inf);
    pts[2000].setY(-inf);
    pts[3000].setX(nan);
    for (int buckets : {50, 5000}) {
        const QList<QPointF> out = decimateMinMax(pts, buckets);
        QVERIFY(out.size() <= 2 * buckets);
        for (const QPointF &p : out) QVERIFY(std::isfinite(p.x()) && std::isfinite(p.y()));
        QCOMPARE(out.first(), pts[1]);
        QCOMPARE(out.last(), pts[4998]);
    }
    QCOMPARE(decimateMinMax(pts, 5000).size(), 5000 - 5);
    QVERIFY(decimateMinMax({QPointF(nan, 1), QPointF(1, inf)}, 10).isEmpty());
}

void TestDecimator::emptyAndTiny()
{
    QVERIFY(decimateMinMax({}, 100).isEmpty());
    QVERIFY(decimateMinMax({}, 0).isEmpty());
    const QList<QPointF> one{QPointF(3, 4)};
    QCOMPARE(decimateMinMax(one, 1), one);
    QCOMPARE(decimateMinMax(one, 0), one); // a bucket count below 1 counts as 1
    const QList<QPointF> many = noisyCurve(100, 5);
    const QList<QPointF> two = decimateMinMax(many, 0);
    QCOMPARE(two.size(), 2);
    QCOMPARE(two.first(), many.first());
    QCOMPARE(two.last(), many.last());
    QVERIFY(smoothEma({}, 0.5).isEmpty());
}

void TestDecimator::unsortedStillCapped()
{
    QList<QPointF> pts = noisyCurve(10000, 9);
    QRandomGenerator rng(9);
    for (QPointF &p : pts) p.setX(rng.generateDouble() * 100);
    const QList<QPointF> out = decimateMinMax(pts, 64);
    QVERIFY(out.size() <= 128);
    QCOMPARE(out.first(), pts.first());
    QCOMPARE(out.last(), pts.last());
}

void TestDecimator::emaMatchesHandComputation()
{
    const QList<QPointF> pts{{1, 4.0}, {2, 2.0}, {3, 8.0}, {4, -1.0}};
    const double a = 0.75;
    // By hand: s0 = 4; s1 = .75*4 + .25*2 = 3.5; s2 = .75*3.5 + .25*8 = 4.625;
    // s3 = .75*4.625 + .25*(-1) = 3.21875 (all exact in binary).
    const QList<QPointF> s = smoothEma(pts, a);
    QCOMPARE(s.size(), 4);
    const double expect[] = {4.0, 3.5, 4.625, 3.21875};
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(s[i].x(), pts[i].x());
        QCOMPARE(s[i].y(), expect[i]);
    }

    // Against a straightforward loop on random data; rtol 1e-12 covers summation order
    // only (both sides run in double).
    const QList<QPointF> noisy = noisyCurve(1000, 21);
    const QList<QPointF> fast = smoothEma(noisy, 0.9);
    double ref = noisy[0].y();
    for (int i = 0; i < noisy.size(); ++i) {
        if (i > 0) ref = 0.9 * ref + 0.1 * noisy[i].y();
        QVERIFY(std::abs(fast[i].y() - ref) <= 1e-12 + 1e-12 * std::abs(ref));
    }
}

void TestDecimator::emaAlphaZeroIsIdentity()
{
    const QList<QPointF> pts = noisyCurve(300, 13);
    QCOMPARE(smoothEma(pts, 0.0), pts);
    QCOMPARE(smoothEma(pts, -3.0), pts); // clamped to 0
    // Clamped to 0.999 at the top: still follows the data a little.
    const QList<QPointF> heavy = smoothEma(pts, 5.0);
    QVERIFY(heavy.last().y() != pts.first().y());
}

void TestDecimator::emaSkipsNonFinite()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const QList<QPointF> pts{
        {0, 1.0}, {1, nan}, {2, 3.0}, {3, std::numeric_limits<double>::infinity()}, {4, 5.0}};
    const QList<QPointF> s = smoothEma(pts, 0.5);
    QCOMPARE(s.size(), 3);
    QCOMPARE(s[1], QPointF(2, 2.0)); // 0.5*1 + 0.5*3
    QCOMPARE(s[2], QPointF(4, 3.5)); // 0.5*2 + 0.5*5
}

void TestDecimator::readingIsTheNearestPoint()
{
    const QList<QPointF> pts{{1, 5.0}, {2, 7.0}, {4, 3.0}, {8, 9.0}};
    QCOMPARE(readCurveAt(pts, 2.9, 0.0).index, qsizetype(1));
    QCOMPARE(readCurveAt(pts, 3.1, 0.0).point, QPointF(4, 3.0));
    QCOMPARE(readCurveAt(pts, 3.0, 0.0).index, qsizetype(1)); // a tie goes left
    QCOMPARE(readCurveAt(pts, -10, 0.0).index, qsizetype(0));
    QCOMPARE(readCurveAt(pts, 1e6, 0.0).index, qsizetype(3));
    QCOMPARE(readCurveAt(pts, 8, 0.0).smoothed, 9.0); // alpha 0: the raw value
    QCOMPARE(readCurveAt({}, 1.0, 0.5).index, qsizetype(-1));
}

void TestDecimator::readingMatchesSmoothedCurve_data()
{
    QTest::addColumn<double>("alpha");
    QTest::addColumn<int>("from");
    QTest::newRow("raw") << 0.0 << 0;
    QTest::newRow("0.6") << 0.6 << 0;
    QTest::newRow("0.95 after a 3-point warm-up") << 0.95 << 3;
}

void TestDecimator::readingMatchesSmoothedCurve()
{
    // What the crosshair reports is exactly what the smoothed curve draws at that step.
    QFETCH(double, alpha);
    QFETCH(int, from);
    const QList<QPointF> pts = noisyCurve(5000, 21);
    const QList<QPointF> smooth = smoothEma(pts.mid(from), alpha);
    QRandomGenerator rng(22);
    for (int k = 0; k < 50; ++k) {
        const double x = from + rng.generateDouble() * (pts.size() - 1 - from);
        const mixlab::CurveReading r = readCurveAt(pts, x, alpha, from);
        QCOMPARE(r.index, qsizetype(std::lround(x)));
        QCOMPARE(r.point, pts[r.index]);
        QVERIFY(std::abs(r.smoothed - smooth[r.index - from].y()) <=
                1e-12 * std::abs(smooth[r.index - from].y()));
    }
}

void TestDecimator::readingBeforeSmoothingStarts()
{
    const QList<QPointF> pts{{1, 380.0}, {2, 24.0}, {3, 0.5}, {4, 0.52}};
    const mixlab::CurveReading warm = readCurveAt(pts, 1.2, 0.6, 2);
    QCOMPARE(warm.point.y(), 380.0); // the raw warm-up value is still read
    QVERIFY(std::isnan(warm.smoothed));
    QCOMPARE(readCurveAt(pts, 3, 0.6, 2).smoothed, 0.5); // the smoothed curve starts here
}

void TestDecimator::readingSkipsNonFinite()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const QList<QPointF> pts{{1, 1.0}, {2, nan}, {3, 3.0}, {4, 5.0}};
    const mixlab::CurveReading r = readCurveAt(pts, 2.1, 0.5);
    QCOMPARE(r.index, qsizetype(2));
    QCOMPARE(r.smoothed, 0.5 * 1.0 + 0.5 * 3.0); // as smoothEma, which drops the NaN
    QCOMPARE(readCurveAt({{1, nan}}, 1.0, 0.5).index, qsizetype(-1));
}

QTEST_APPLESS_MAIN(TestDecimator)
#include "tst_decimator.moc"
