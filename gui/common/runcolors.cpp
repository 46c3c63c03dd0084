// Run colours: the palette, its per-run and per-policy choice, and the contrast check
// that keeps new entries honest.
#include "common/runcolors.h"

#include <algorithm>
#include <cmath>

const std::vector<QColor> &runPalette()
{
    // Chosen for white backgrounds: each dark enough for a 1.5 px line (contrast >= 3),
    // with hues far enough apart that the first few runs of a compare never look alike.
    static const std::vector<QColor> palette = {
        QColor(0x1c, 0x5d, 0xb8), // blue
        QColor(0xcc, 0x4a, 0x00), // burnt orange
        QColor(0x23, 0x84, 0x3b), // green
        QColor(0x8e, 0x2f, 0xa8), // purple
        QColor(0xb8, 0x1d, 0x4a), // crimson
        QColor(0x0a, 0x6f, 0x7a), // teal
        QColor(0x86, 0x5a, 0x05), // ochre
        QColor(0x4c, 0x55, 0x60), // slate
        QColor(0x54, 0x3a, 0xc0), // indigo
        QColor(0x6b, 0x7a, 0x00), // olive
    };
    return palette;
}

QColor runColor(int runId)
{
    const auto &p = runPalette();
    const int n = int(p.size());
    const int i = ((runId - 1) % n + n) % n;
    return p[std::size_t(i)];
}

QColor policyColor(mixlab::Policy policy)
{
    const auto &p = runPalette();
    switch (policy) {
    case mixlab::Policy::FP32: return p[0];
    case mixlab::Policy::MixedFP16: return p[1];
    case mixlab::Policy::MixedBF16: return p[2];
    case mixlab::Policy::TF32: return p[3];
    case mixlab::Policy::FP16: return p[4];
    case mixlab::Policy::MixedFP8: return p[5];
    }
    return p[7];
}

namespace {

// sRGB channel to linear light (WCAG 2 definition).
double linearChannel(double c)
{
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

double relativeLuminance(const QColor &c)
{
    return 0.2126 * linearChannel(c.redF()) + 0.7152 * linearChannel(c.greenF()) +
           0.0722 * linearChannel(c.blueF());
}

} // namespace

double contrastRatio(const QColor &a, const QColor &b)
{
    const double la = relativeLuminance(a), lb = relativeLuminance(b);
    const double hi = std::max(la, lb), lo = std::min(la, lb);
    return (hi + 0.05) / (lo + 0.05);
}
