// Heatmap painting and hover (numericsheatmap.h).
#include "numerics/numericsheatmap.h"

#include "numerics/bandoverlay.h"
#include "numerics/colormap.h"
#include "numerics/hovertip.h"

#include <QFontMetricsF>
#include <QHelpEvent>
#include <QImage>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace {

// Wide enough for "2^-149", tall enough for a line of small text.
constexpr double k_leftMargin = 46, k_rightMargin = 6, k_topMargin = 4, k_bottomMargin = 16;

QColor emptyCellColor() { return QColor(0xf2, 0xf2, 0xf2); }

} // namespace

QRectF numericsPlotRect(const QRectF &area, bool xLabels)
{
    return area.adjusted(k_leftMargin, k_topMargin, -k_rightMargin,
                         xLabels ? -k_bottomMargin : -k_topMargin);
}

void paintHeatmap(QPainter *painter, const QRectF &area, const NumericsGrid &grid,
                  std::pair<int, int> rows)
{
    const QRectF plot = numericsPlotRect(area, true);
    const int n = int(grid.columns.size());
    const int nRows = rows.second - rows.first + 1;
    if (n == 0 || nRows <= 0 || plot.width() < 4 || plot.height() < 4) return;

    // One pixel per cell, scaled up without smoothing: cells keep sharp edges.
    QImage image(n, nRows, QImage::Format_RGB32);
    for (int c = 0; c < n; ++c) {
        const NumericsColumn &col = grid.columns[std::size_t(c)];
        for (int r = rows.first; r <= rows.second; ++r) {
            const std::uint64_t count = grid.count(c, r);
            const QColor colour = !col.present ? QColor(0xdd, 0xdd, 0xdd)
                                  : count == 0 ? emptyCellColor()
                                               : shareColor(grid.share(c, r));
            image.setPixel(c, rows.second - r, colour.rgb());
        }
    }
    painter->save();
    painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
    painter->drawImage(plot, image);
    painter->restore();
    paintBandOverlay(painter, plot, grid, rows);

    painter->save();
    QFont font = painter->font();
    font.setPointSizeF(std::max(6.5, font.pointSizeF() * 0.8));
    painter->setFont(font);
    const QFontMetricsF fm(font);
    painter->setPen(QColor(0x44, 0x44, 0x44));
    painter->drawRect(plot);
    // Binade labels, as many as fit a line apart, on multiples of a round step.
    const double rowH = plot.height() / nRows;
    int every = 1;
    for (int step : {1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64})
        if ((every = step) * rowH >= fm.height()) break;
    for (int r = rows.first; r <= rows.second; ++r) {
        if (r % every != 0) continue;
        const double y = plot.top() + (rows.second - r + 0.5) * rowH;
        const QString label = grid.kind == mixlab::TensorKind::Updates
                                  ? QStringLiteral("%1").arg(r)
                                  : QStringLiteral("2^%1").arg(r);
        painter->drawText(QRectF(area.left(), y - fm.height() / 2, k_leftMargin - 4, fm.height()),
                          Qt::AlignRight | Qt::AlignVCenter, label);
    }
    // Steps: the first and last sample, and one between when there is room.
    const double colW = plot.width() / n;
    const auto stepLabel = [&](int c, Qt::AlignmentFlag align) {
        const double x = plot.left() + (c + 0.5) * colW;
        const QString text = QString::number(grid.columns[std::size_t(c)].step);
        const double tw = fm.horizontalAdvance(text);
        double left = align == Qt::AlignLeft    ? plot.left()
                      : align == Qt::AlignRight ? plot.right() - tw
                                                : x - tw / 2;
        painter->drawText(QRectF(left, plot.bottom() + 1, tw + 1, k_bottomMargin - 1),
                          Qt::AlignLeft | Qt::AlignTop, text);
    };
    stepLabel(0, Qt::AlignLeft);
    if (n > 1) stepLabel(n - 1, Qt::AlignRight);
    if (n > 4 && plot.width() > 200) stepLabel(n / 2, Qt::AlignHCenter);
    painter->restore();
}

NumericsHeatmap::NumericsHeatmap(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void NumericsHeatmap::setGrid(const NumericsGrid &grid, std::pair<int, int> rows)
{
    m_grid = grid;
    m_rows = rows;
    update();
}

std::optional<std::pair<int, int>> NumericsHeatmap::cellAt(const QPointF &pos) const
{
    const QRectF plot = numericsPlotRect(QRectF(rect()), true);
    const int n = int(m_grid.columns.size());
    const int nRows = m_rows.second - m_rows.first + 1;
    if (n == 0 || nRows <= 0 || !plot.contains(pos)) return std::nullopt;
    const int c = std::clamp(int((pos.x() - plot.left()) / plot.width() * n), 0, n - 1);
    const int fromTop =
        std::clamp(int((pos.y() - plot.top()) / plot.height() * nRows), 0, nRows - 1);
    return std::pair(c, m_rows.second - fromTop);
}

QString NumericsHeatmap::toolTipAt(const QPointF &pos) const
{
    const auto cell = cellAt(pos);
    return cell ? cellToolTip(m_grid, cell->first, cell->second) : QString();
}

void NumericsHeatmap::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    painter.fillRect(rect(), palette().window());
    paintHeatmap(&painter, QRectF(rect()), m_grid, m_rows);
}

bool NumericsHeatmap::event(QEvent *event)
{
    if (answerHover(this, event, [this](QPoint at) { return toolTipAt(at); })) return true;
    return QWidget::event(event);
}
