// ChartPanel: the live charts of every visible run (loss, accuracy, step time,
// throughput, loss scale, device memory) in a grid under a small toolbar (x axis,
// smoothing, log scale), redrawn from the RunStore at most every ~40 ms (one chart per
// event-loop turn while runs stream in); export.
#pragma once
#include "charts/metricchart.h"

#include <QElapsedTimer>
#include <QSize>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <set>
#include <vector>

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QSlider;
class RunStore;
struct RunRecord;

class ChartPanel : public QWidget {
    Q_OBJECT
public:
    enum class XAxis { Step, Epoch, WallTime };

    explicit ChartPanel(RunStore *store, QWidget *parent = nullptr);

    void setXAxis(XAxis axis);
    XAxis xAxis() const { return m_xAxis; }
    void setSmoothing(double alpha); // EMA weight of the past, 0 (raw) .. 0.99
    double smoothing() const { return m_smoothing; }
    void setLogScale(bool on); // y axis of the loss and step-time charts
    bool logScale() const { return m_logScale; }
    // The designer's model's kind: with no run shown, the charts are that kind's (a
    // language model's preset shows perplexity and tokens/s before its first run).
    void setDesignedLanguageModel(bool languageModel);

    // "loss", "accuracy", "step_time", "throughput", "loss_scale", "memory". While every
    // visible run is a language model, "accuracy" shows perplexity (log scale) and
    // throughput counts tokens.
    bool perplexityMode() const { return m_perplexityMode; }
    QStringList chartNames() const;
    MetricChart *chart(const QString &name) const;

    // Writes one chart, or "all" in a grid, as PNG, SVG or PDF (by the path's suffix),
    // laid out at `pngSize` pixels (the page size in pixels at 96 dpi for SVG and PDF).
    // On failure returns false and says why in *error.
    bool exportChart(const QString &chartName, const QString &path, const QSize &pngSize,
                     QString *error) const;

    // What the crosshair of chart `chartName` reads at x (in the current x mode): per
    // visible run the stored step nearest to x, from the full data (not the decimated
    // drawing), its smoothed and raw values as the curves draw them, a warm-up or
    // skipped step said so, and for loss and accuracy the last evaluation before x.
    MetricChart::Readout readout(const QString &chartName, double x) const;

    // The narrowest width that keeps the charts two abreast: the main window leaves the
    // centre this much when the Why? dock opens beside it.
    int twoColumnWidth() const;

    // Applies pending store changes now instead of at the next coalesced redraw.
    void redrawNow();
    int redrawCount() const { return m_redraws; }

signals:
    // From the toolbar or the setters, so menus elsewhere can follow.
    void xAxisChanged(ChartPanel::XAxis axis);
    void smoothingChanged(double alpha);
    void logScaleChanged(bool on);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    // Follows the visible runs' kind (perplexityMode); true when the mode changed, and then
    // every run's curves must be rebuilt.
    bool updateModes();
    void markDirty(int runId);
    void markAllDirty();
    void updateRun(int runId, MetricChart *only = nullptr);
    QString legendLabel(int runId) const;
    QString runToolTip(const RunRecord &run) const;
    void startLiveRedraw();
    void liveStep();
    void layoutCharts(int columns);
    void renderGrid(QPainter *painter, const QList<MetricChart *> &charts, const QSize &size) const;

    RunStore *m_store;
    XAxis m_xAxis = XAxis::Step;
    double m_smoothing = 0.6;
    bool m_logScale = false;
    bool m_perplexityMode = false;
    bool m_tokensMode = false; // throughput in tokens/s
    bool m_fp8Mode = false;    // a mixed_fp8 run is shown: the scale chart also draws fp8 scales
    bool m_designedLanguageModel = false;

    QComboBox *m_xCombo = nullptr;
    QSlider *m_smoothSlider = nullptr;
    QLabel *m_smoothLabel = nullptr;
    QCheckBox *m_logCheck = nullptr;
    QGridLayout *m_grid = nullptr;
    QList<MetricChart *> m_charts;
    int m_columns = 0;

    QTimer m_redrawTimer;    // single shot: bursts of appends become one redraw
    std::set<int> m_dirty;   // runs whose curves must be rebuilt
    bool m_allDirty = false; // axis mode, smoothing, log scale or width changed
    int m_redraws = 0;
    // The live redraw in progress: the runs it updates and the next chart (-1: none).
    QTimer m_liveStepTimer;
    std::set<int> m_liveIds;
    qsizetype m_liveNext = -1;
    QElapsedTimer m_liveClock;
};
