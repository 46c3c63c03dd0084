// MetricChart: one chart of the ChartPanel. Every run gets a few curves in its own
// colour (raw, smoothed, per-epoch...), decimated to the plot's pixel width before they
// reach Qt Charts; axes fit the data; hovering a curve shows run, x and y.
#pragma once
#include <limits>
#include <QChartView>
#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>

#include <map>
#include <vector>

class QAbstractAxis;
class QChart;
class QXYSeries;

class MetricChart : public QChartView {
    Q_OBJECT
public:
    enum class Style {
        Faint,         // raw per-step values: thin, translucent, behind the rest
        Solid,         // the smoothed curve
        DashedMarkers, // per-epoch test values
        DottedMarkers, // per-epoch train values
        Scatter        // isolated events (skipped steps)
    };
    struct Curve {
        QString role;           // tooltip text: "smoothed", "test, per epoch"...
        Style style = Style::Solid;
        bool inLegend = false;  // the one curve per run that names the run in the legend
        QList<QPointF> points;  // full resolution, sorted by x
    };

    // `key` is a short line under the title saying which line style means what.
    MetricChart(const QString &name, const QString &title, const QString &yTitle,
                const QString &key, QWidget *parent = nullptr);

    QString name() const { return m_name; }
    QString yTitle() const { return m_yTitle; }
    QString xTitle() const { return m_xTitle; }
    void setXTitle(const QString &title);

    // A logarithmic y axis (base 10, or powers of 2 for loss scales) instead of a linear
    // one. Values <= 0 cannot sit on it and are left out while it is on.
    void setLogY(bool log, bool powersOfTwo = false);
    bool isLogY() const { return m_logY; }
    // Keep 0 on a linear y axis (amounts such as memory read wrong without it).
    void setIncludeZero(bool on) { m_includeZero = on; }
    // A bound no value can pass (accuracy: 100 %), so padding never shows past it.
    void setYCeiling(double ceiling) { m_yCeiling = ceiling; }

    // Replaces the run's curves (creating its series on first use); they show at the
    // next fitAxes(). Points are smoothed already; here they are decimated to at most
    // 2 per horizontal pixel.
    void setRun(int runId, const QString &runName, const QColor &color,
                const std::vector<Curve> &curves);
    void removeRun(int runId);
    std::vector<int> runIds() const;
    QList<QXYSeries *> runSeries(int runId) const;

    // Shows the curves given to setRun since the last call and fits both axes to them.
    void fitAxes();
    QAbstractAxis *xAxis() const { return m_xAxis; }
    QAbstractAxis *yAxis() const { return m_yAxis; }

    // Horizontal buckets used for decimation: the plot area's width in pixels.
    int pixelBuckets() const;

    // Draws the chart laid out at target's size (not a scaled screenshot), for export.
    void renderInto(QPainter *painter, const QRectF &target) const;

    // What the tooltip says for a hover near `at` on `series`: run, curve, x and y of
    // the nearest drawn point.
    QString hoverText(const QXYSeries *series, const QPointF &at) const;

signals:
    // The plot got wider or narrower: curves need decimating again.
    void bucketsChanged();

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    struct RunEntry {
        QString name;
        QColor color;
        std::vector<Style> styles;
        std::vector<QString> roles;
        std::vector<bool> inLegend;
        QList<QXYSeries *> series;
    };

    QXYSeries *makeSeries(const RunEntry &entry, std::size_t curve);
    void styleSeries(QXYSeries *series, Style style, const QColor &color, bool inLegend) const;
    void replaceYAxis(QAbstractAxis *axis);
    const RunEntry *entryOf(const QXYSeries *series) const;

    QString m_name, m_yTitle, m_xTitle;
    bool m_logY = false;
    bool m_powersOfTwo = false;
    bool m_includeZero = false;
    double m_yCeiling = std::numeric_limits<double>::infinity();
    QAbstractAxis *m_xAxis = nullptr; // owned by the chart
    QAbstractAxis *m_yAxis = nullptr; // owned by the chart
    std::map<int, RunEntry> m_runs;
    std::map<QXYSeries *, QList<QPointF>> m_pending; // decimated, waiting for fitAxes()
    int m_lastBuckets = 0;
};
