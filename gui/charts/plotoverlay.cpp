// Marks and crosshair over a chart's plot, painted in value coordinates.
#include "charts/plotoverlay.h"

#include <QChart>
#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

namespace {

constexpr qreal k_mark = 5; // half the size of a mark
constexpr qreal k_boxPadding = 5;
constexpr qreal k_boxSwatch = 12;

} // namespace

PlotOverlay::PlotOverlay(QChart *chart) : QGraphicsItem(chart), m_chart(chart)
{
    setZValue(100); // above the series
    setAcceptedMouseButtons(Qt::NoButton);
}

void PlotOverlay::setMarks(std::vector<Mark> marks)
{
    m_marks = std::move(marks);
    update();
}

void PlotOverlay::setCrosshair(double x, Readout readout)
{
    m_crosshairX = x;
    m_readout = std::move(readout);
    update();
}

void PlotOverlay::clearCrosshair()
{
    if (!m_crosshairX) return;
    m_crosshairX.reset();
    m_readout = {};
    update();
}

void PlotOverlay::chartResized() { prepareGeometryChange(); }

QRectF PlotOverlay::boundingRect() const { return QRectF(QPointF(0, 0), m_chart->size()); }

QPointF PlotOverlay::toPosition(const QPointF &value) const
{
    const auto all = m_chart->series();
    return all.isEmpty() ? QPointF() : m_chart->mapToPosition(value, all.front());
}

void PlotOverlay::paint(QPainter *painter, const QStyleOptionGraphicsItem *, QWidget *)
{
    if (m_chart->series().isEmpty()) return;
    const QRectF plot = m_chart->plotArea();
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    paintMarks(painter, plot);
    if (m_crosshairX) paintCrosshair(painter, plot);
    painter->restore();
}

// Off the axis: a triangle pointing the way out, at the edge it crossed. Inside: a ring.
void PlotOverlay::paintMarks(QPainter *painter, const QRectF &plot) const
{
    for (const Mark &m : m_marks) {
        QPointF p = toPosition(m.value);
        if (!std::isfinite(p.x()) || p.x() < plot.left() - 0.5 || p.x() > plot.right() + 0.5)
            continue;
        p.setX(std::clamp(p.x(), plot.left() + k_mark, plot.right() - k_mark));
        const bool above = !(p.y() >= plot.top()), below = p.y() > plot.bottom();
        painter->setPen(QPen(Qt::white, 1));
        painter->setBrush(m.color);
        if (above || below) {
            const qreal tip = above ? plot.top() + 1 : plot.bottom() - 1;
            const qreal base = above ? tip + 2 * k_mark : tip - 2 * k_mark;
            QPainterPath triangle;
            triangle.moveTo(p.x(), tip);
            triangle.lineTo(p.x() - k_mark, base);
            triangle.lineTo(p.x() + k_mark, base);
            triangle.closeSubpath();
            painter->drawPath(triangle);
        } else {
            painter->setPen(QPen(m.color, 1.5));
            painter->setBrush(Qt::NoBrush);
            painter->drawEllipse(p, k_mark - 1, k_mark - 1);
        }
    }
}

void PlotOverlay::paintCrosshair(QPainter *painter, const QRectF &plot) const
{
    const qreal x = toPosition(QPointF(*m_crosshairX, 0)).x();
    if (!std::isfinite(x) || x < plot.left() - 0.5 || x > plot.right() + 0.5) return;
    QPen line(QColor(0x60, 0x60, 0x60), 1, Qt::DashLine);
    line.setCosmetic(true);
    painter->setPen(line);
    painter->drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));

    QFont font = painter->font();
    QFont bold = font;
    bold.setBold(true);
    const QFontMetricsF fm(font), bm(bold);
    const qreal rowHeight = std::max(fm.height(), bm.height());
    qreal labelWidth = 0, valueWidth = 0;
    for (const ReadoutRow &r : m_readout.rows) {
        labelWidth = std::max(labelWidth, fm.horizontalAdvance(r.label));
        valueWidth = std::max(valueWidth, fm.horizontalAdvance(r.value));
    }
    const qreal rowsWidth = k_boxSwatch + 4 + labelWidth + 8 + valueWidth;
    const qreal width = std::max(bm.horizontalAdvance(m_readout.x), rowsWidth) + 2 * k_boxPadding;
    const qreal height = rowHeight * qreal(1 + m_readout.rows.size()) + 2 * k_boxPadding;
    // Beside the line, on the side with room; inside the chart.
    qreal left = x + 10;
    if (left + width > m_chart->size().width() - 2) left = x - 10 - width;
    left = std::max<qreal>(left, 2);
    const QRectF box(left, plot.top() + 4, width, height);
    painter->setPen(QColor(0xb0, 0xb0, 0xb0));
    painter->setBrush(QColor(255, 255, 255, 235));
    painter->drawRect(box);

    qreal y = box.top() + k_boxPadding;
    painter->setFont(bold);
    painter->setPen(QColor(0x22, 0x22, 0x22));
    painter->drawText(QRectF(box.left() + k_boxPadding, y, width, rowHeight), Qt::AlignVCenter,
                      m_readout.x);
    painter->setFont(font);
    for (const ReadoutRow &r : m_readout.rows) {
        y += rowHeight;
        const qreal left0 = box.left() + k_boxPadding;
        painter->setPen(QPen(r.color, 2.5));
        painter->drawLine(QPointF(left0, y + rowHeight / 2),
                          QPointF(left0 + k_boxSwatch, y + rowHeight / 2));
        painter->setPen(QColor(0x22, 0x22, 0x22));
        painter->drawText(QRectF(left0 + k_boxSwatch + 4, y, labelWidth, rowHeight),
                          Qt::AlignVCenter, r.label);
        painter->drawText(
            QRectF(left0 + k_boxSwatch + 4 + labelWidth + 8, y, valueWidth, rowHeight),
            Qt::AlignVCenter | Qt::AlignRight, r.value);
    }
}
