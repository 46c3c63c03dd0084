// The chart legend: short unique run names, a flow layout of entries, the wrapped key.
#include "charts/chartlegend.h"

#include <QFontMetricsF>
#include <QGraphicsSceneHoverEvent>
#include <QPainter>
#include <QRegularExpression>

#include <algorithm>
#include <map>
#include <set>

namespace {

constexpr qreal k_swatch = 16; // the run's line, before its name
constexpr qreal k_swatchGap = 4;
constexpr qreal k_entryGap = 12;
constexpr qreal k_keyGap = 2; // between the entries and the key

} // namespace

std::vector<QString> legendLabels(const std::vector<QString> &runNames)
{
    static const QRegularExpression defaultName(QStringLiteral("^(\\S+) b(\\d+) #(\\d+)$"));
    std::vector<QRegularExpressionMatch> parsed;
    std::set<QString> batches;
    for (const QString &name : runNames) {
        parsed.push_back(defaultName.match(name));
        if (parsed.back().hasMatch()) batches.insert(parsed.back().captured(2));
    }
    const bool showBatch = batches.size() > 1;
    std::vector<QString> labels;
    for (std::size_t i = 0; i < runNames.size(); ++i) {
        const QRegularExpressionMatch &m = parsed[i];
        if (!m.hasMatch())
            labels.push_back(runNames[i]);
        else
            labels.push_back(m.captured(1) +
                             (showBatch ? QStringLiteral(" b") + m.captured(2) : QString()) +
                             QStringLiteral(" #") + m.captured(3));
    }
    auto counts = [&labels] {
        std::map<QString, int> n;
        for (const QString &l : labels) ++n[l];
        return n;
    };
    std::map<QString, int> n = counts();
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (n[labels[i]] > 1) labels[i] = runNames[i];
    n = counts();
    std::map<QString, int> seen;
    for (QString &l : labels)
        if (n[l] > 1) l += QStringLiteral(" (%1)").arg(++seen[l]);
    return labels;
}

std::vector<QRectF> flowLayout(const std::vector<QSizeF> &sizes, qreal width, qreal gap,
                               qreal *height)
{
    std::vector<QRectF> rects(sizes.size());
    qreal y = 0;
    std::size_t rowStart = 0;
    while (rowStart < sizes.size()) {
        // As many boxes as fit in this row, at least one.
        std::size_t end = rowStart;
        qreal rowWidth = 0, rowHeight = 0;
        while (end < sizes.size()) {
            const qreal w = rowWidth + (end > rowStart ? gap : 0) + sizes[end].width();
            if (end > rowStart && w > width) break;
            rowWidth = w;
            rowHeight = std::max(rowHeight, sizes[end].height());
            ++end;
        }
        qreal x = std::max<qreal>(0, (width - rowWidth) / 2);
        for (std::size_t i = rowStart; i < end; ++i) {
            rects[i] = QRectF(QPointF(x, y + (rowHeight - sizes[i].height()) / 2), sizes[i]);
            x += sizes[i].width() + gap;
        }
        y += rowHeight;
        rowStart = end;
    }
    if (height) *height = y;
    return rects;
}

ChartLegend::ChartLegend(QGraphicsItem *parent) : QGraphicsItem(parent)
{
    setAcceptHoverEvents(true);
}

void ChartLegend::setEntries(std::vector<Entry> entries)
{
    m_entries = std::move(entries);
    layOut(m_width);
}

void ChartLegend::setKey(const QString &key)
{
    m_key = key;
    layOut(m_width);
}

void ChartLegend::setFont(const QFont &font)
{
    m_font = font;
    layOut(m_width);
}

QFont ChartLegend::keyFont() const
{
    QFont f = m_font;
    f.setPointSizeF(f.pointSizeF() * 0.92);
    return f;
}

qreal ChartLegend::layOut(qreal width)
{
    prepareGeometryChange();
    m_width = std::max<qreal>(width, 0);
    const QFontMetricsF fm(m_font);
    std::vector<QSizeF> sizes;
    m_shown.clear();
    for (const Entry &e : m_entries) {
        // Elided only when one name is wider than the whole legend; the tooltip has it all.
        const qreal room =
            std::max<qreal>(m_width - k_swatch - k_swatchGap, fm.averageCharWidth() * 4);
        QString text = e.label;
        if (fm.horizontalAdvance(text) > room) text = fm.elidedText(text, Qt::ElideMiddle, room);
        m_shown.push_back(text);
        sizes.push_back(QSizeF(k_swatch + k_swatchGap + fm.horizontalAdvance(text), fm.height()));
    }
    qreal entriesHeight = 0;
    m_rects = flowLayout(sizes, m_width, k_entryGap, &entriesHeight);
    m_keyRect = QRectF();
    if (!m_key.isEmpty()) {
        const QFontMetricsF km(keyFont());
        const QRectF text =
            km.boundingRect(QRectF(0, 0, m_width, 1e6), Qt::AlignHCenter | Qt::TextWordWrap, m_key);
        const qreal top = entriesHeight > 0 ? entriesHeight + k_keyGap : 0;
        m_keyRect = QRectF(0, top, m_width, text.height());
    }
    m_height = m_keyRect.isNull() ? entriesHeight : m_keyRect.bottom();
    update();
    return m_height;
}

QRectF ChartLegend::entryRect(std::size_t i) const
{
    return i < m_rects.size() ? m_rects[i] : QRectF();
}

QString ChartLegend::shownText(std::size_t i) const
{
    return i < m_shown.size() ? m_shown[i] : QString();
}

QRectF ChartLegend::boundingRect() const { return QRectF(0, 0, m_width, m_height); }

void ChartLegend::paint(QPainter *painter, const QStyleOptionGraphicsItem *, QWidget *)
{
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    painter->setFont(m_font);
    for (std::size_t i = 0; i < m_rects.size() && i < m_entries.size(); ++i) {
        const QRectF &r = m_rects[i];
        QPen line(m_entries[i].color, 2.5);
        line.setCapStyle(Qt::FlatCap);
        painter->setPen(line);
        const qreal y = r.center().y();
        painter->drawLine(QPointF(r.left() + 1, y), QPointF(r.left() + k_swatch - 1, y));
        painter->setPen(QColor(0x22, 0x22, 0x22));
        painter->drawText(QRectF(r.left() + k_swatch + k_swatchGap, r.top(),
                                 r.width() - k_swatch - k_swatchGap, r.height()),
                          Qt::AlignLeft | Qt::AlignVCenter, m_shown[i]);
    }
    if (!m_keyRect.isNull()) {
        painter->setFont(keyFont());
        painter->setPen(QColor(0x55, 0x55, 0x55));
        painter->drawText(m_keyRect, Qt::AlignHCenter | Qt::TextWordWrap, m_key);
    }
    painter->restore();
}

void ChartLegend::hoverMoveEvent(QGraphicsSceneHoverEvent *event)
{
    QString tip;
    for (std::size_t i = 0; i < m_rects.size() && i < m_entries.size(); ++i)
        if (m_rects[i].contains(event->pos())) tip = m_entries[i].toolTip;
    setToolTip(tip);
    QGraphicsItem::hoverMoveEvent(event);
}
