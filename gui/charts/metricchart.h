// MetricChart: one chart of the ChartPanel. Every run gets a few curves in its own
// colour (raw, smoothed, per-epoch...), decimated to the plot's pixel width before they
// reach Qt Charts; axes fit the data (per-step times on their steady state, loss scales
// on powers of two); a legend that wraps instead of eliding; a crosshair that reads
// every run at the cursor's x.
#pragma once
#include "charts/axisrange.h"
#include "charts/plotoverlay.h"

#include <QChartView>
#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <vector>

class ChartLegend;
class QAbstractAxis;
class QChart;
class QXYSeries;

class MetricChart : public QChartView {
    Q_OBJECT
public:
    enum class Style {
        Faint,          // raw per-step values: thin, translucent, behind the rest
        Solid,          // the smoothed curve
        DashedMarkers,  // per-epoch test values
        DottedMarkers,  // per-epoch train values
        DashDotMarkers, // per-epoch validation values (language models)
        Scatter         // isolated events (skipped steps)
    };
    struct Curve {
        QString role; // "smoothed", "test, per epoch"...
        Style style = Style::Solid;
        bool inLegend = false; // the one curve per run that names the run in the legend
        QList<QPointF> points; // full resolution, sorted by x
        // Set for a per-step curve scaled on its steady state (step time, throughput):
        // the y axis spans this range instead of every point; points outside it are
        // clipped at the plot's edge and marked, warm-up points are marked.
        std::optional<mixlab::SteadyRange> steady;
    };
    using Readout = PlotOverlay::Readout;
    // What the crosshair reports at an x of the chart (the panel reads the full data).
    using ReadoutSource = std::function<Readout(double x)>;

    // `key` is a short text under the legend saying which line style means what.
    MetricChart(const QString &name, const QString &title, const QString &yTitle,
                const QString &key, QWidget *parent = nullptr);

    QString name() const { return m_name; }
    QString title() const { return m_title; }
    QString yTitle() const { return m_yTitle; }
    // Retitles the chart (the accuracy chart becomes perplexity for language models).
    void setLabels(const QString &title, const QString &yTitle, const QString &key);
    QString xTitle() const { return m_xTitle; }
    void setXTitle(const QString &title);

    // A logarithmic y axis instead of a linear one: base 10, or for loss scales the
    // exponents of 2 on a linear axis labelled with the powers themselves (the scales
    // the runs sit at among them). Values <= 0 cannot sit on it and are left out.
    void setLogY(bool log, bool powersOfTwo = false);
    bool isLogY() const { return m_logY; }
    bool isPowersOfTwo() const { return m_logY && m_powersOfTwo; }
    // Keep 0 on a linear y axis (amounts such as memory read wrong without it).
    void setIncludeZero(bool on) { m_includeZero = on; }
    // A bound no value can pass (accuracy: 100 %), so padding never shows past it.
    void setYCeiling(double ceiling) { m_yCeiling = ceiling; }

    // Replaces the run's curves (creating its series on first use); they show at the
    // next fitAxes(). `label` names the run in the legend, `toolTip` describes it in
    // full. Points are smoothed already; here they are decimated to at most 2 per
    // horizontal pixel.
    void setRun(int runId, const QString &label, const QString &toolTip, const QColor &color,
                const std::vector<Curve> &curves);
    void removeRun(int runId);
    std::vector<int> runIds() const;
    QList<QXYSeries *> runSeries(int runId) const;

    // Shows the curves given to setRun since the last call and fits both axes to them.
    void fitAxes();
    QAbstractAxis *xAxis() const { return m_xAxis; }
    QAbstractAxis *yAxis() const { return m_yAxis; }
    // The y value a chart point of `value` is drawn at (log2 on a powers-of-two axis).
    double toAxisY(double value) const;

    // Horizontal buckets used for decimation: the plot area's width in pixels.
    int pixelBuckets() const;

    // Draws the chart laid out at target's size, axes and legend fitted to that size
    // as on screen (not a scaled screenshot), for export; the crosshair is left out.
    void renderInto(QPainter *painter, const QRectF &target);

    ChartLegend *legend() const { return m_legend; }
    PlotOverlay *overlay() const { return m_overlay; }
    // The key under the legend: the chart's own text and notes on warm-up and
    // off-scale points.
    QString keyText() const;

    void setReadoutSource(ReadoutSource source) { m_readoutSource = std::move(source); }

signals:
    // The plot got wider or narrower: curves need decimating again.
    void bucketsChanged();

protected:
    void resizeEvent(QResizeEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void leaveEvent(QEvent *event) override;

private:
    struct RunEntry {
        QString label, toolTip;
        QColor color;
        std::vector<Style> styles;
        std::vector<bool> inLegend;
        std::vector<std::optional<mixlab::SteadyRange>> steady;
        QList<QXYSeries *> series;
    };
    // What the key says about a steady-scaled curve: its warm-up and later spikes.
    struct OffScale {
        qsizetype warmup = 0;
        double warmupX = -std::numeric_limits<double>::infinity(); // x of the last warm-up point
        double warmupExtreme = std::numeric_limits<double>::quiet_NaN();
        qsizetype spikes = 0;
        double spikeExtreme = std::numeric_limits<double>::quiet_NaN();
        // The warm-up and spike points themselves, from the full data (decimation could
        // merge the few warm-up steps into one), at most 2 per pixel.
        QList<QPointF> points;
    };

    QXYSeries *makeSeries(const RunEntry &entry, std::size_t curve);
    void styleSeries(QXYSeries *series, Style style, const QColor &color) const;
    void replaceYAxis(QAbstractAxis *axis);
    void updateLegendEntries();
    void layOutLegend(const QSizeF &chartSize);
    void updateMarksAndNote(double ylo, double yhi);
    QList<QPointF> forAxis(const QList<QPointF> &points) const;

    QString m_name, m_title, m_yTitle, m_xTitle, m_key, m_note;
    bool m_logY = false;
    bool m_powersOfTwo = false;
    bool m_includeZero = false;
    double m_yCeiling = std::numeric_limits<double>::infinity();
    QAbstractAxis *m_xAxis = nullptr; // owned by the chart
    QAbstractAxis *m_yAxis = nullptr; // owned by the chart
    std::vector<int> m_yTicks;        // labelled exponents of a powers-of-two axis
    ChartLegend *m_legend = nullptr;  // owned by the chart
    PlotOverlay *m_overlay = nullptr; // owned by the chart
    std::map<int, RunEntry> m_runs;
    std::map<QXYSeries *, QList<QPointF>> m_pending; // decimated, waiting for fitAxes()
    std::map<QXYSeries *, OffScale> m_offScale;      // steady-scaled raw curves
    ReadoutSource m_readoutSource;
    int m_lastBuckets = 0;
};
