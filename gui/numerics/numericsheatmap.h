// One layer's heatmap: x the samples (their steps), y the binades, colour the share of the
// layer's values in each (colormap.h), the format's band over it (bandoverlay.h), and the
// cell under the mouse in a tooltip. Painted from a QImage of one pixel per cell; the
// paint function also renders the dock's export.
#pragma once
#include "numerics/numericsgrid.h"

#include <QWidget>

#include <optional>
#include <utility>

class QPainter;

// Where the cells go inside a heatmap's (or the shares chart's) rectangle: room on the
// left for the binade labels, below for the steps; the two plots share it, so a sample's
// column sits above its point in the chart.
QRectF numericsPlotRect(const QRectF &area, bool xLabels);

void paintHeatmap(QPainter *painter, const QRectF &area, const NumericsGrid &grid,
                  std::pair<int, int> rows);

class NumericsHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit NumericsHeatmap(QWidget *parent = nullptr);

    // rows: the binades shown, bottom to top (displayRows over the runs read side by side).
    void setGrid(const NumericsGrid &grid, std::pair<int, int> rows);
    const NumericsGrid &grid() const { return m_grid; }
    std::pair<int, int> rows() const { return m_rows; }

    // The (column, row) under a point of the widget; none outside the cells.
    std::optional<std::pair<int, int>> cellAt(const QPointF &pos) const;
    QString toolTipAt(const QPointF &pos) const; // empty outside the cells

    QSize sizeHint() const override { return {320, 180}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;

private:
    NumericsGrid m_grid;
    std::pair<int, int> m_rows{0, 0};
};
