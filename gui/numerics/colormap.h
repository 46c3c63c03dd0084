// The heatmap's colours: viridis (perceptually uniform, readable in grey and by the common
// colour-vision deficiencies), over the share on a log scale, since a layer's values
// spread over many binades and a linear scale would leave all but the peak dark.
#pragma once
#include <QColor>

// Shares at or below this take the lowest colour (a non-zero share is never invisible).
inline constexpr double k_shareColorFloor = 1e-5;

QColor viridis(double t); // t in [0, 1], clamped
// The colour of a cell holding `share` of its column's values (0 < share <= 1).
QColor shareColor(double share);
// Where a share sits on the colour scale, 0..1 (log10 from k_shareColorFloor to 1).
double shareScale(double share);
