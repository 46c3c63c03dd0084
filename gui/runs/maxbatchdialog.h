// MaxBatchDialog: "Find largest batch". Per policy, the largest batch the designer's model
// trains at (the search runs on the app's worker thread, through RunController) and the
// throughput-versus-batch curves, drawn trial by trial, with a table and a summary.
#pragma once
#include "runs/workermessages.h"

#include "mixlab/device.h"
#include "mixlab/max_batch.h"
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"

#include <QDialog>
#include <QElapsedTimer>
#include <QPointer>
#include <QString>

#include <functional>
#include <vector>

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QPushButton;
class QScatterSeries;
class QSpinBox;
class QTableWidget;
class QValueAxis;
class RunController;

// What the dialog is asked to search: the model and run settings (dataset, device, seed,
// optimizer...; batch and steps are the search's) under each policy in turn, with what the
// dialog needs besides (the probed device for the default limit, why it may not start).
struct MaxBatchJob {
    mixlab::ModelSpec model;
    mixlab::RunConfig config;
    std::vector<mixlab::Policy> policies; // the first one is the base of the ratios
    mixlab::DeviceInfo device;            // the probed device; backend "" while unknown
    QString blocked;                      // why the search may not start; empty: it may
};

class MaxBatchDialog : public QDialog {
    Q_OBJECT
public:
    // The search runs on the controller's worker thread, one job at a time: while a
    // training job runs there, Start waits (disabled, and start() refuses with the reason).
    explicit MaxBatchDialog(RunController *controller, QWidget *parent = nullptr);
    ~MaxBatchDialog() override; // stops the search (the controller ends it on its thread)

    // Asked for the job when the dialog is shown and when Start is pressed, so the search
    // takes the designer's and run panel's settings as they are then.
    void setJobSource(std::function<MaxBatchJob()> source);
    void setJob(const MaxBatchJob &job); // a fixed job (tests, scripts)

    // The Start/Limit spin boxes (the limit then stays as set, whatever the device).
    void setSearchRange(int start, int limit);
    int searchStart() const;
    int searchLimit() const;
    // Steps per trial (defaults: mixlab::MaxBatchOptions's); tests make trials short.
    void setTrialSteps(int warmup, int timed);

    void start();
    void stop(); // the trial in flight finishes; the search ends after it
    bool isRunning() const { return m_running; }
    void reject() override; // Escape: stops the search too

    // What is shown, for tests and scripts.
    QChart *chart() const { return m_chart; }
    QTableWidget *table() const { return m_table; }
    QString summaryText() const;
    QString errorText() const;
    // Per policy of the last search, in order: its trials sorted by batch and, once its
    // search ended, the result (largest_fit 0 and no trials when it did not run).
    struct PolicyState {
        mixlab::Policy policy = mixlab::Policy::FP32;
        std::vector<mixlab::BatchTrial> trials;
        mixlab::MaxBatchResult result;
        bool done = false;
        QString error; // why this policy's search did not run or ended early
    };
    const std::vector<PolicyState> &policyStates() const { return m_states; }

signals:
    void runningChanged(bool running);
    void trialAdded(int policyIndex, int batch);
    // The search ended: all policies done, stopped, or failed (errorText() says why).
    void searchFinished(bool stopped);

protected:
    void closeEvent(QCloseEvent *event) override;
    void showEvent(QShowEvent *event) override;

private:
    void refreshJob();
    void applyDefaultLimit();
    void onStartStop();
    void refuse(const QString &message); // Start refused: says why, ends "the search"

    // The controller's search signals; each does nothing unless this dialog's search runs.
    void onPrepared(const MaxBatchContext &context);
    void onPolicyStarted(int index);
    void onTrialStarted(int index, int batch);
    void onTrial(int index, const mixlab::BatchTrial &trial);
    void onPolicyDone(int index, const mixlab::MaxBatchResult &result);
    void onPolicyError(int index, const QString &message);
    void onSearchError(const QString &message);
    void onSearchFinished(bool stopped);

    void resetView();
    void updateChart(); // axes and every series from m_states
    void rebuildTable();
    void updateSummary();
    void updateControls();

    QPointer<RunController> m_controller; // may go first when both are a window's children
    std::function<MaxBatchJob()> m_source;
    MaxBatchJob m_job;
    int m_warmup;
    int m_timed;
    bool m_limitTouched = false;

    bool m_running = false;       // this dialog's search is on the worker
    bool m_stopRequested = false; // Stop pressed for it
    bool m_stopped = false;       // the last search was cut short by Stop
    std::vector<PolicyState> m_states;
    QString m_error;
    QString m_progress;    // what the worker is doing now
    QElapsedTimer m_clock; // since Start

    QSpinBox *m_start = nullptr;
    QSpinBox *m_limit = nullptr;
    QPushButton *m_startStop = nullptr;
    QLabel *m_jobLabel = nullptr;
    QLabel *m_status = nullptr;
    QLabel *m_errorLabel = nullptr;
    QChart *m_chart = nullptr;
    QChartView *m_chartView = nullptr;
    QLogValueAxis *m_xAxis = nullptr;
    QValueAxis *m_yAxis = nullptr;
    std::vector<QLineSeries *> m_fitSeries;     // per policy: the curve
    std::vector<QScatterSeries *> m_failSeries; // per policy: batches that did not fit
    QLabel *m_markerNote = nullptr;
    QTableWidget *m_table = nullptr;
    QLabel *m_summary = nullptr;
};
