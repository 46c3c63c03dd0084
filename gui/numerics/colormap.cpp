// Viridis by linear steps between nine of its published colours (matplotlib's table at
// 0, 1/8, ..., 1): close enough to the full table for a legend-read heatmap.
#include "numerics/colormap.h"

#include <algorithm>
#include <array>
#include <cmath>

QColor viridis(double t)
{
    static constexpr std::array<unsigned, 9> k_stops = {
        0x440154, 0x482878, 0x3e4989, 0x31688e, 0x26828e, 0x1f9e89, 0x35b779, 0x6ece58, 0xfde725};
    t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
    const double x = t * double(k_stops.size() - 1);
    const std::size_t i = std::min(std::size_t(x), k_stops.size() - 2);
    const double f = x - double(i);
    const auto channel = [&](int shift) {
        const double a = double((k_stops[i] >> shift) & 0xff);
        const double b = double((k_stops[i + 1] >> shift) & 0xff);
        return int(std::lround(a + (b - a) * f));
    };
    return QColor(channel(16), channel(8), channel(0));
}

double shareScale(double share)
{
    if (!(share > 0)) return 0;
    const double lo = std::log10(k_shareColorFloor);
    return std::clamp((std::log10(share) - lo) / -lo, 0.0, 1.0);
}

QColor shareColor(double share) { return viridis(shareScale(share)); }
