// Axis ranges that stay readable: a per-step series scaled on its steady state (warm-up
// steps and rare spikes left off the scale), and the power-of-two ticks of a loss-scale
// axis. Pure functions, so the rules are tested without a chart.
#pragma once
#include <QList>
#include <QPointF>

#include <limits>
#include <vector>

namespace mixlab {

struct SteadyRange {
    // The span the axis must show: every steady point. lo > hi when there is no point.
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    // Leading points (indices into the series) that are warm-up: graph recording and
    // GEMM/convolution plan timing make the first steps of a GPU run 1000x slower.
    qsizetype warmup = 0;
    bool empty() const { return !(lo <= hi); }
    bool contains(double y) const { return y >= lo && y <= hi; }
};

// The steady state of a per-step series in step order (step time, throughput). The
// reference is the series after its first ten points (the engine's warm-up, left out of
// its mean step times too); its 1st to 99th percentile, widened by three times that
// spread (at least 5% of the median), fences what is steady. Warm-up: the leading
// points up to the last one outside the fences among the first max(20, n/50). The range
// spans the points after warm-up inside the fences; isolated later spikes outside them
// are off scale as well. Series of fewer than 8 finite points: their whole span, no
// warm-up. Points with a NaN or infinite coordinate are ignored.
SteadyRange steadyRange(const QList<QPointF> &points);

// The exponents to label on a loss-scale axis from 2^lo to 2^hi with room for at most
// maxLabels labels: every exponent when they fit; else the `wanted` ones first (the
// scales runs ended at: the values a reader looks for), then multiples of the smallest
// stride that fits, never two labels closer than that stride. Sorted, unique.
std::vector<int> powerOfTwoTicks(int lo, int hi, int maxLabels, std::vector<int> wanted);

} // namespace mixlab
