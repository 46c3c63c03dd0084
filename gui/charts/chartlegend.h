// ChartLegend: a MetricChart's legend, drawn in the chart under its axes (so exports
// carry it): one entry per run, a line in the run's colour and a short name, flowing into
// as many rows as the width needs instead of eliding, then the chart's key (which line
// style means what, warm-up notes) wrapped in grey. Hovering an entry shows the run's
// full description.
#pragma once
#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <vector>

// Legend names that tell runs apart and stay short: a run still under its default name
// ("<policy> b<batch> #<n>") shows as "<policy> #<n>", with " b<batch>" when the runs
// shown differ in batch; a name the user gave stays as it is. Names that would still
// coincide get their full names back, then " (<k>)" in order.
std::vector<QString> legendLabels(const std::vector<QString> &runNames);

// Lays boxes of `sizes` out left to right in rows at most `width` wide (a box wider than
// that gets a row of its own), `gap` apart, each row centred. Returns each box's rect;
// *height is the total height.
std::vector<QRectF> flowLayout(const std::vector<QSizeF> &sizes, qreal width, qreal gap,
                               qreal *height);

class ChartLegend : public QGraphicsItem {
public:
    struct Entry {
        QString label;   // drawn
        QString toolTip; // on hover: the run's full name and what it ran
        QColor color;
    };

    explicit ChartLegend(QGraphicsItem *parent = nullptr);

    void setEntries(std::vector<Entry> entries);
    const std::vector<Entry> &entries() const { return m_entries; }
    void setKey(const QString &key);
    QString key() const { return m_key; }
    void setFont(const QFont &font);

    // Lays the legend out `width` wide and returns its height.
    qreal layOut(qreal width);
    // Where entry i is drawn, in item coordinates (after layOut), and the text it shows
    // (its label, elided only when wider than the whole legend).
    QRectF entryRect(std::size_t i) const;
    QString shownText(std::size_t i) const;
    QRectF keyRect() const { return m_keyRect; }

    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

protected:
    void hoverMoveEvent(QGraphicsSceneHoverEvent *event) override;

private:
    QFont keyFont() const;

    std::vector<Entry> m_entries;
    std::vector<QRectF> m_rects;
    std::vector<QString> m_shown;
    QString m_key;
    QFont m_font;
    QRectF m_keyRect;
    qreal m_width = 0, m_height = 0;
};
