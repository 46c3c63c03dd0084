// PlotOverlay: what a MetricChart draws over its plot in value coordinates, mapped at
// paint time so it follows every layout (the window, an export size): marks on points
// the axis leaves out (a triangle at the plot's edge) or that are warm-up (a ring), and
// the crosshair at the cursor with the readout of every run at that x.
#pragma once
#include <QColor>
#include <QGraphicsItem>
#include <QPointF>
#include <QString>

#include <optional>
#include <vector>

class QChart;

class PlotOverlay : public QGraphicsItem {
public:
    struct Mark {
        QPointF value; // where the point is, in the chart's x and y units
        QColor color;
    };
    struct ReadoutRow {
        QString label; // the run's legend name
        QColor color;
        QString value; // "0.412 (raw 0.398)"
    };
    struct Readout {
        QString x; // "step 1500", "epoch 1.50", "12.3 s"
        std::vector<ReadoutRow> rows;
    };

    explicit PlotOverlay(QChart *chart);

    void setMarks(std::vector<Mark> marks);
    const std::vector<Mark> &marks() const { return m_marks; }

    void setCrosshair(double x, Readout readout);
    void clearCrosshair();
    std::optional<double> crosshairX() const { return m_crosshairX; }
    const Readout &readout() const { return m_readout; }

    // The chart's size changed: the overlay covers all of it.
    void chartResized();

    QRectF boundingRect() const override;
    void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *widget) override;

private:
    QPointF toPosition(const QPointF &value) const;
    void paintMarks(QPainter *painter, const QRectF &plot) const;
    void paintCrosshair(QPainter *painter, const QRectF &plot) const;

    QChart *m_chart;
    std::vector<Mark> m_marks;
    std::optional<double> m_crosshairX;
    Readout m_readout;
};
