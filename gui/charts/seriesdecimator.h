// Pure helpers that turn a run's full metric arrays into what a chart can draw fast:
// min/max-per-pixel decimation and exponential-moving-average smoothing; and reading a
// full curve at the cursor's x.
#pragma once
#include <QList>
#include <QPointF>

#include <limits>

namespace mixlab {

// Reduces a curve to at most 2*buckets points while keeping its visible shape: the
// first and last points, and in every horizontal bucket the lowest and highest point
// in their original order, so spikes (an overflow, a diverging step) never vanish.
// Points with a NaN or infinite coordinate are dropped. When no more than 2*buckets
// finite points remain they are all returned. Buckets split the x range evenly when
// x never decreases (the pixel columns of a chart); otherwise they split by index.
QList<QPointF> decimateMinMax(const QList<QPointF> &points, int buckets);

// s[0] = y[0], s[i] = alpha*s[i-1] + (1-alpha)*y[i] (alpha 0 = no smoothing; clamped
// to 0..0.999). Points with a NaN or infinite coordinate are dropped first so one bad
// step cannot poison the rest of the curve.
QList<QPointF> smoothEma(const QList<QPointF> &points, double alpha);

// A curve read at x, as a crosshair reads it: the stored point nearest to x (points
// sorted by x; non-finite ones skipped) and the value smoothEma(points.mid(from), alpha)
// has there (NaN for a point before `from`: the smoothed curve starts there). index is
// -1 when the curve has no finite point.
struct CurveReading {
    qsizetype index = -1;
    QPointF point;
    double smoothed = std::numeric_limits<double>::quiet_NaN();
};
CurveReading readCurveAt(const QList<QPointF> &points, double x, double alpha, qsizetype from = 0);

} // namespace mixlab
