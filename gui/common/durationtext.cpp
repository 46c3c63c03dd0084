// Durations rounded to the second, in the two largest units.
#include "common/durationtext.h"

#include <algorithm>
#include <cmath>

QString durationText(double seconds)
{
    const qint64 s = qint64(std::llround(std::max(0.0, seconds)));
    if (s < 60) return QStringLiteral("%1s").arg(s);
    if (s < 3600) return QStringLiteral("%1m %2s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1h %2m").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}
