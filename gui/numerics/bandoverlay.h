// The format's representable band drawn over a heatmap, column by column (a gradient's
// band moves with the loss scale): the overflow line, the top of the subnormals (the
// smallest normal), the flush line, the subnormal region shaded; for updates the line
// below which the format's weights lose the update, with that region shaded.
#pragma once
#include <QColor>
#include <QRectF>

#include <utility>

class QPainter;
struct NumericsGrid;

// The colours, shared with the shares chart's lines and the dock's legend.
inline const QColor k_overflowColor{0xd3, 0x2f, 0x2f};
inline const QColor k_flushColor{0xff, 0x8f, 0x00};
inline const QColor k_normalColor{0xff, 0xff, 0xff};
inline const QColor k_lostColor{0xe0, 0x40, 0xfb};

// `plot` is the heatmap's cell area, showing rows [rows.first, rows.second] bottom to top
// and the grid's columns left to right.
void paintBandOverlay(QPainter *painter, const QRectF &plot, const NumericsGrid &grid,
                      std::pair<int, int> rows);
