// Min/max-per-bucket decimation and EMA smoothing of chart curves.
#include "charts/seriesdecimator.h"

#include <algorithm>
#include <cmath>

namespace mixlab {

namespace {

bool isFinitePoint(const QPointF &p) { return std::isfinite(p.x()) && std::isfinite(p.y()); }

// Lowest and highest point of one bucket, by their index in the input.
struct Bucket {
    qsizetype minIndex = -1, maxIndex = -1;

    void add(const QList<QPointF> &pts, qsizetype i)
    {
        if (minIndex < 0) {
            minIndex = maxIndex = i;
            return;
        }
        if (pts[i].y() < pts[minIndex].y()) minIndex = i;
        if (pts[i].y() > pts[maxIndex].y()) maxIndex = i;
    }

    void flush(const QList<QPointF> &pts, QList<QPointF> &out)
    {
        if (minIndex < 0) return;
        const qsizetype a = std::min(minIndex, maxIndex), b = std::max(minIndex, maxIndex);
        out.append(pts[a]);
        if (b != a) out.append(pts[b]);
        minIndex = maxIndex = -1;
    }
};

} // namespace

QList<QPointF> decimateMinMax(const QList<QPointF> &points, int buckets)
{
    buckets = std::max(buckets, 1);
    qsizetype first = -1, last = -1, finite = 0;
    bool sorted = true;
    for (qsizetype i = 0; i < points.size(); ++i) {
        if (!isFinitePoint(points[i])) continue;
        if (last >= 0 && points[i].x() < points[last].x()) sorted = false;
        if (first < 0) first = i;
        last = i;
        ++finite;
    }

    QList<QPointF> out;
    if (finite <= 2 * qsizetype(buckets)) {
        out.reserve(finite);
        for (const QPointF &p : points)
            if (isFinitePoint(p)) out.append(p);
        return out;
    }

    // The first and last points take one bucket's worth of the budget, the interior
    // points share the other buckets-1: at most 2 + 2*(buckets-1) points in all.
    out.reserve(2 * qsizetype(buckets));
    out.append(points[first]);
    const int inner = buckets - 1;
    if (inner > 0) {
        const double x0 = points[first].x();
        const double width = (points[last].x() - x0) / inner;
        const bool byX = sorted && width > 0;
        const qsizetype interior = finite - 2;
        Bucket bucket;
        int current = -1;
        qsizetype ordinal = 0; // index among the interior finite points
        for (qsizetype i = first + 1; i < last; ++i) {
            if (!isFinitePoint(points[i])) continue;
            int b = byX ? int((points[i].x() - x0) / width)
                        : int((ordinal * qsizetype(inner)) / interior);
            b = std::clamp(b, 0, inner - 1);
            ++ordinal;
            if (b != current) {
                bucket.flush(points, out);
                current = b;
            }
            bucket.add(points, i);
        }
        bucket.flush(points, out);
    }
    out.append(points[last]);
    return out;
}

namespace {

double clampAlpha(double alpha)
{
    return std::isfinite(alpha) ? std::clamp(alpha, 0.0, 0.999) : 0.0;
}

} // namespace

QList<QPointF> smoothEma(const QList<QPointF> &points, double alpha)
{
    alpha = clampAlpha(alpha);
    QList<QPointF> out;
    out.reserve(points.size());
    double s = 0;
    for (const QPointF &p : points) {
        if (!isFinitePoint(p)) continue;
        s = out.isEmpty() ? p.y() : alpha * s + (1.0 - alpha) * p.y();
        out.append(QPointF(p.x(), s));
    }
    return out;
}

CurveReading readCurveAt(const QList<QPointF> &points, double x, double alpha, qsizetype from)
{
    CurveReading r;
    auto it = std::lower_bound(points.begin(), points.end(), x,
                               [](const QPointF &p, double v) { return p.x() < v; });
    // The nearest finite point on either side of x.
    qsizetype right = it - points.begin(), left = right - 1;
    while (right < points.size() && !isFinitePoint(points[right])) ++right;
    while (left >= 0 && !isFinitePoint(points[left])) --left;
    if (left < 0 && right >= points.size()) return r;
    if (left < 0)
        r.index = right;
    else if (right >= points.size())
        r.index = left;
    else
        r.index = x - points[left].x() <= points[right].x() - x ? left : right;
    r.point = points[r.index];
    if (r.index < from) return r;
    alpha = clampAlpha(alpha);
    bool started = false;
    double s = 0;
    for (qsizetype i = std::max<qsizetype>(from, 0); i <= r.index; ++i) {
        if (!isFinitePoint(points[i])) continue;
        s = started ? alpha * s + (1.0 - alpha) * points[i].y() : points[i].y();
        started = true;
    }
    r.smoothed = s;
    return r;
}

} // namespace mixlab
