// Band lines as step paths over the columns: one level per column, joined where the
// level changes (the loss scale moved the band between two samples).
#include "numerics/bandoverlay.h"

#include "numerics/numericsgrid.h"

#include <QPainter>
#include <QPainterPath>

#include <functional>
#include <optional>

namespace {

// y of the edge between row r and row r+1 (r's top).
double rowTop(const QRectF &plot, std::pair<int, int> rows, int r)
{
    const double h = plot.height() / double(rows.second - rows.first + 1);
    return plot.top() + double(rows.second - r) * h;
}

// A path through each column's level (nullopt: no line in that column).
QPainterPath stepPath(const QRectF &plot, int columns,
                      const std::function<std::optional<double>(int)> &levelOf)
{
    QPainterPath path;
    const double w = plot.width() / double(columns);
    bool open = false;
    for (int i = 0; i < columns; ++i) {
        const std::optional<double> y = levelOf(i);
        if (!y) {
            open = false;
            continue;
        }
        const double x0 = plot.left() + w * i, x1 = x0 + w;
        if (open)
            path.lineTo(x0, *y);
        else
            path.moveTo(x0, *y);
        path.lineTo(x1, *y);
        open = true;
    }
    return path;
}

// A line drawn over a light halo, so it reads on the dark and on the bright cells alike.
void drawLine(QPainter *painter, const QPainterPath &path, const QPen &pen)
{
    painter->setPen(QPen(QColor(255, 255, 255, 150), pen.widthF() + 2.5));
    painter->drawPath(path);
    painter->setPen(pen);
    painter->drawPath(path);
}

} // namespace

void paintBandOverlay(QPainter *painter, const QRectF &plot, const NumericsGrid &grid,
                      std::pair<int, int> rows)
{
    const int n = int(grid.columns.size());
    if (n == 0 || rows.second < rows.first) return;
    painter->save();
    painter->setClipRect(plot);
    const double w = plot.width() / double(n);
    const auto top = [&](int r) { return rowTop(plot, rows, r); };

    if (grid.kind == mixlab::TensorKind::Updates) {
        const int lost = lostUpdateTop(grid.format);
        const double y = top(lost);
        QColor shade = k_lostColor;
        shade.setAlpha(40);
        painter->fillRect(QRectF(plot.left(), y, plot.width(), plot.bottom() - y), shade);
        QPainterPath line;
        line.moveTo(plot.left(), y);
        line.lineTo(plot.right(), y);
        drawLine(painter, line, QPen(k_lostColor, 2));
        painter->restore();
        return;
    }

    // The subnormal region, from the flush line up to the smallest normal.
    QColor shade(255, 255, 255, 60);
    for (int i = 0; i < n; ++i) {
        const std::optional<FormatBand> &b = grid.columns[std::size_t(i)].band;
        if (!b) continue;
        const double y0 = top(b->normalFrom - 1), y1 = top(b->flushAtOrBelow);
        painter->fillRect(QRectF(plot.left() + w * i, y0, w, y1 - y0), shade);
        painter->fillRect(QRectF(plot.left() + w * i, y0, w, y1 - y0),
                          QBrush(QColor(255, 255, 255, 90), Qt::BDiagPattern));
    }
    painter->setBrush(Qt::NoBrush);
    const auto level = [&](int FormatBand::*field, int offset) {
        return [&, field, offset](int i) -> std::optional<double> {
            const std::optional<FormatBand> &b = grid.columns[std::size_t(i)].band;
            if (!b) return std::nullopt;
            return top((*b).*field + offset);
        };
    };
    // Overflow: above the top binade. Normal: below the smallest normal's binade. Flush:
    // at and below flushAtOrBelow.
    painter->setPen(QPen(k_normalColor, 1.5, Qt::DashLine));
    painter->drawPath(stepPath(plot, n, level(&FormatBand::normalFrom, -1)));
    drawLine(painter, stepPath(plot, n, level(&FormatBand::overflowAbove, 0)),
             QPen(k_overflowColor, 2));
    drawLine(painter, stepPath(plot, n, level(&FormatBand::flushAtOrBelow, 0)),
             QPen(k_flushColor, 2));
    painter->restore();
}
