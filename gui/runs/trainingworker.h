// TrainingWorker: training on the app's worker thread (RunController's, shared with
// MaxBatchWorker). One job = one model and one run config under one or several policies (a
// compare group, trained in lockstep by the engine's mixlab::RunGroup, which the worker
// owns for the job); the GUI sees values.
#pragma once
#include "runs/jobstop.h"
#include "runs/workermessages.h"

#include <QObject>
#include <QString>

#include <cstdint>
#include <functional>

class TrainingWorker : public QObject {
    Q_OBJECT
public:
    explicit TrainingWorker(QObject *parent = nullptr);
    // What a job is doing; phaseStarted announces each (a status line can show it).
    enum class Phase { OpeningDevice, LoadingData, BuildingGraph, Planning, Training, Profiling };
    Q_ENUM(Phase)
    // Thread-safe: asks the running job to stop after the step in flight.
    void requestStop();
    // Arms a fresh stop for the next job, so that an old request cannot stop it. Call
    // before queueing a job (the controller does); thread-safe like requestStop().
    void resetStop();
    static constexpr int k_maxEmitHz = 20;
    // Steps of the profiling pass that follows a job's timed steps (as `mixlab-cli
    // explain` runs it): this many marked, then as many unmarked for the wall time.
    static constexpr int k_profileSteps = 10;
    // Fewer for slow steps, so that a run's pass takes about this long (a 300 ms CPU step
    // would otherwise keep the user waiting 10 s per run after every job).
    static constexpr double k_profileSeconds = 2.0;

    // Test hook, called on the worker thread for everything the trainer reports (what:
    // "step", "epoch" or "event"; step: the step's number, or the event's) before it is
    // batched, so a test can press Stop at an exact point of a run. Set it between jobs.
    using SinkHook = std::function<void(int runIndex, const char *what, std::int64_t step)>;
    void setSinkHookForTesting(SinkHook hook) { m_sinkHook = std::move(hook); }

public slots:
    void runJob(const TrainingJob &job); // blocks the worker thread until the job ends

signals:
    // Emitted on the worker thread as the job enters each phase (the group's GroupPhase);
    // runIndex is the run being planned or profiled (Planning, Profiling), -1 otherwise.
    void phaseStarted(TrainingWorker::Phase phase, int runIndex);
    // Device opened and data loaded (before runStarted): shape, classes, machine.
    void runPrepared(int runId, const RunContext &context);
    void runStarted(int runId, qint64 totalSteps, double deviceMemoryMB);
    void metrics(const MetricsBatch &batch);
    void runFinished(int runId, const mixlab::RunSummary &summary, bool stopped);
    // After every run of the job finished unstopped: the run's profiling pass (its steps
    // are not in the run's metrics). Emitted between the runFinished and jobFinished.
    void runProfiled(int runId, const mixlab::StepProfile &profile);
    void runFailed(int runId, const QString &message);
    // TrainingJob::weightsFolder: the run's weights written to `path` (failure empty), or
    // why not.
    // Emitted after the run's runFinished, before jobFinished (the group writes the
    // weights after every run's end, before the profiling pass).
    void runWeightsSaved(int runId, const QString &path, const QString &failure);
    // TrainingJob::checkpointFolders: a checkpoint of the run could not be written (the
    // run went on; the run's log has a warning at the step). After the run's runFinished.
    void runCheckpointFailed(int runId, const QString &message);
    void jobFinished();

private:
    JobStop m_stop;
    SinkHook m_sinkHook;
};
