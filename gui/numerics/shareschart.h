// One layer's line chart under its heatmap: what the chosen format does to the layer's
// values at each sample, as shares: overflow and flush (underflow to zero), or for
// updates the share the format's weights would lose. Painted on the heatmap's columns
// (numericsPlotRect), so a point sits under its sample; hover says the values.
#pragma once
#include "numerics/numericsgrid.h"

#include <QWidget>

#include <optional>

class QPainter;

void paintSharesChart(QPainter *painter, const QRectF &area, const NumericsGrid &grid);
// The chart's top: the largest share drawn, rounded up to a readable bound (at least
// 0.1%, so a chart of zeros does not show rounding noise as a cliff).
double sharesChartTop(const NumericsGrid &grid);

class SharesChart : public QWidget {
    Q_OBJECT
public:
    explicit SharesChart(QWidget *parent = nullptr);
    void setGrid(const NumericsGrid &grid);

    std::optional<int> columnAt(const QPointF &pos) const;
    QString toolTipAt(const QPointF &pos) const; // "step 40: overflow 0, flush 3.20%"

    QSize sizeHint() const override { return {320, 80}; }
    QSize minimumSizeHint() const override { return {200, 60}; }

protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;

private:
    NumericsGrid m_grid;
};
