// RunController: owns the worker thread and wires the worker's signals into the
// RunStore. Start/stop come from the GUI; closing joins the thread.
#pragma once
#include "runs/trainingworker.h"

#include <QObject>
#include <QPointer>
#include <QThread>

#include <vector>

class RunStore;

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(RunStore *store, QObject *parent = nullptr);
    ~RunController() override; // stops and joins

    bool isRunning() const { return m_running; }
    // Adds one run per config to the store (one compare group) and starts them.
    // Returns the group id, or 0 when a job is already running.
    int start(const mixlab::ModelSpec &model, const std::vector<mixlab::RunConfig> &runs);
    void stop();          // immediate: the worker stops after the step in flight
    void stopAndWait();   // for closing the window

signals:
    void runningChanged(bool running);
    void jobStarted(int group);
    void jobFinished(int group);

private:
    void onRunPrepared(int runId, const RunContext &context);
    void onRunStarted(int runId, qint64 totalSteps, double deviceMemoryMB);
    void onMetrics(const MetricsBatch &batch);
    void onRunFinished(int runId, const mixlab::RunSummary &summary, bool stopped);
    void onRunFailed(int runId, const QString &message);
    void onRunProfiled(int runId, const mixlab::StepProfile &profile);
    void onJobFinished();

    QPointer<RunStore> m_store; // may go first when both are children of one window
    QThread m_thread;
    TrainingWorker *m_worker = nullptr; // lives in m_thread
    bool m_running = false;
    int m_group = 0;
    std::vector<int> m_jobRuns; // the running job's run ids
};
