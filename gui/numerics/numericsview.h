// NumericsView: the Numerics dock's contents. For the chosen run, and every run of its
// compare group side by side (fp32 next to mixed), one row per layer: the heatmap of where
// the layer's values sit by binade with the chosen format's band over it, and under it
// the format's overflow and flush shares (updates: the share it would lose) over the
// samples. Switches between weights / activations / gradients / updates and between
// fp16 / bf16 / fp8 E4M3 / fp8 E5M2; exports PNG / SVG / PDF through the charts' writer;
// says why a run has no numerics and how to turn them on.
#pragma once
#include "numerics/numericsgrid.h"

#include <QWidget>

#include <vector>

class QComboBox;
class QLabel;
class QPainter;
class QPushButton;
class QScrollArea;
class QStackedWidget;
class QTimer;
class RunStore;
struct RunRecord;

class NumericsView : public QWidget {
    Q_OBJECT
public:
    explicit NumericsView(RunStore *store, QWidget *parent = nullptr);

    // The run to show (0: none); the other runs of its compare group are shown beside it.
    void setRun(int id);
    int currentRun() const { return m_run; }
    std::vector<int> shownRuns() const { return m_shown; }

    void setKind(mixlab::TensorKind kind);
    // A format set here or picked in the combo box stays; until then the format follows
    // the kind and the narrowest policy among the shown runs (policyFormat: E4M3 / E5M2
    // when one is mixed_fp8, else fp16 where one is fp16, else bf16, else fp16).
    void setFormat(mixlab::NumberFormat format);
    mixlab::TensorKind kind() const { return m_kind; }
    mixlab::NumberFormat format() const { return m_format; }

    // The empty state's text (empty while heatmaps are shown).
    QString emptyText() const;
    // What the grids are built from now; rebuilt at once instead of at the next coalesced
    // refresh (tests, export).
    void refreshNow();

    // The picture the dock shows, for export: every shown run's heatmaps and charts.
    QSize exportSize() const;
    void render(QPainter *painter, const QSize &size) const;
    bool exportTo(const QString &path, QString *error) const;

    // Why a run has no numerics to show, and how to get them; empty when it has some.
    static QString missingReason(const RunRecord &run);

signals:
    void message(const QString &text); // an export's result, for the log

protected:
    void showEvent(QShowEvent *event) override;

private:
    struct Column {
        int runId = 0;
        QString name;
        QColor color;
        QString missing;                 // why there is nothing to show, or empty
        std::vector<NumericsGrid> grids; // one per layer
    };
    void scheduleRefresh();
    void showFormat(mixlab::NumberFormat format);
    void followPolicy();
    void rebuild();
    void exportDialog();
    void updateLegend();
    std::vector<QString> layerOrder() const;
    QString legendPlainText() const;
    double headerHeight(double width) const;
    const NumericsGrid *gridOf(const Column &c, const QString &path) const;

    RunStore *m_store;
    QComboBox *m_kindCombo = nullptr;
    QComboBox *m_formatCombo = nullptr;
    QPushButton *m_export = nullptr;
    QLabel *m_legend = nullptr;
    QStackedWidget *m_stack = nullptr;
    QLabel *m_empty = nullptr;
    QScrollArea *m_scroll = nullptr;
    QTimer *m_refresh = nullptr;

    int m_run = 0;
    std::vector<int> m_shown;
    mixlab::TensorKind m_kind = mixlab::TensorKind::Gradients;
    mixlab::NumberFormat m_format = mixlab::NumberFormat::FP16;
    bool m_formatPicked = false; // by the user or setFormat: the policy no longer decides
    std::vector<Column> m_columns;
    // New samples came while the dock was hidden: rebuilt when it shows, not at every
    // sample of a run nobody is looking at.
    bool m_stale = false;
};
