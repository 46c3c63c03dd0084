// Steady-state ranges by percentile fences; power-of-two tick choice.
#include "charts/axisrange.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace mixlab {
namespace {

constexpr qsizetype k_minPoints = 8;
constexpr qsizetype k_referenceStart = 10; // the engine's k_warmup_steps
constexpr double k_fenceSpreads = 3.0;

// The q-quantile (nearest rank) of values; reorders them.
double quantile(std::vector<double> &values, double q)
{
    const auto at = std::size_t(std::llround(q * double(values.size() - 1)));
    std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(at), values.end());
    return values[at];
}

} // namespace

SteadyRange steadyRange(const QList<QPointF> &points)
{
    std::vector<qsizetype> index; // of each finite point in `points`
    std::vector<double> ys;
    for (qsizetype i = 0; i < points.size(); ++i) {
        const QPointF &p = points[i];
        if (std::isfinite(p.x()) && std::isfinite(p.y())) {
            index.push_back(i);
            ys.push_back(p.y());
        }
    }
    SteadyRange r;
    const auto n = qsizetype(ys.size());
    if (n < k_minPoints) {
        for (double y : ys) {
            r.lo = std::min(r.lo, y);
            r.hi = std::max(r.hi, y);
        }
        return r;
    }
    const qsizetype start = std::min(k_referenceStart, n / 4);
    std::vector<double> reference(ys.begin() + start, ys.end());
    const double low = quantile(reference, 0.01), high = quantile(reference, 0.99);
    const double median = quantile(reference, 0.5);
    const double spread = std::max(high - low, 0.05 * std::abs(median));
    const double fenceLo = low - k_fenceSpreads * spread, fenceHi = high + k_fenceSpreads * spread;
    auto steady = [&](double y) { return y >= fenceLo && y <= fenceHi; };

    const qsizetype head = std::min(n / 2, std::max(2 * k_referenceStart, n / 50));
    qsizetype warm = 0; // in finite points
    for (qsizetype i = 0; i < head; ++i)
        if (!steady(ys[std::size_t(i)])) warm = i + 1;
    r.warmup = warm > 0 ? index[std::size_t(warm - 1)] + 1 : 0;
    for (qsizetype i = warm; i < n; ++i) {
        const double y = ys[std::size_t(i)];
        if (steady(y)) {
            r.lo = std::min(r.lo, y);
            r.hi = std::max(r.hi, y);
        }
    }
    return r;
}

std::vector<int> powerOfTwoTicks(int lo, int hi, int maxLabels, std::vector<int> wanted)
{
    if (hi < lo) std::swap(lo, hi);
    maxLabels = std::max(maxLabels, 2);
    std::vector<int> ticks;
    if (hi - lo + 1 <= maxLabels) {
        for (int e = lo; e <= hi; ++e) ticks.push_back(e);
        return ticks;
    }
    int stride = 1;
    while ((hi - lo) / stride + 1 > maxLabels) ++stride;
    auto fits = [&](int e) {
        return std::all_of(ticks.begin(), ticks.end(),
                           [&](int t) { return std::abs(t - e) >= stride; });
    };
    for (int e : wanted)
        if (e >= lo && e <= hi && fits(e)) ticks.push_back(e);
    // Multiples of the stride: round exponents, evenly spaced.
    const int first = int(std::ceil(double(lo) / stride)) * stride;
    for (int e = first; e <= hi; e += stride)
        if (fits(e)) ticks.push_back(e);
    std::sort(ticks.begin(), ticks.end());
    return ticks;
}

} // namespace mixlab
