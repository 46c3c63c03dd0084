// TrainingWorker: runs the engine on its own QThread. One job = one model and one run
// config under one or several policies (a compare group, trained in lockstep). The
// worker owns every engine object; the GUI only sees the batches it emits.
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/trainer.h"

#include <QDateTime>
#include <QMetaType>
#include <QObject>
#include <QString>

#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <vector>

#include "runs/runstore.h"

struct TrainingJob {
    mixlab::ModelSpec model;
    std::vector<mixlab::RunConfig> runs; // one per policy, all else equal
    std::vector<int> runIds;             // RunStore ids, same order
};

// Metrics gathered in the worker between two emissions (at most 20 a second).
struct MetricsBatch {
    struct PerRun {
        int runId = 0;
        std::vector<mixlab::StepMetrics> steps;
        std::vector<mixlab::EpochMetrics> epochs;
        std::vector<TimedEvent> events;
    };
    std::vector<PerRun> runs;
};

Q_DECLARE_METATYPE(TrainingJob)
Q_DECLARE_METATYPE(MetricsBatch)
Q_DECLARE_METATYPE(mixlab::RunSummary)
Q_DECLARE_METATYPE(RunContext)
Q_DECLARE_METATYPE(mixlab::StepProfile)

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

    // Test hook, called on the worker thread for everything the trainer reports (what:
    // "step", "epoch" or "event"; step: the step's number, or the event's) before it is
    // batched, so a test can press Stop at an exact point of a run. Set it between jobs.
    using SinkHook = std::function<void(int runIndex, const char *what, std::int64_t step)>;
    void setSinkHookForTesting(SinkHook hook) { m_sinkHook = std::move(hook); }

public slots:
    void runJob(const TrainingJob &job); // blocks the worker thread until the job ends

signals:
    // Emitted on the worker thread as the job enters each phase; runIndex is the run being
    // planned (Planning, Profiling) or -1 for the whole job.
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
    void jobFinished();

private:
    // The job's token is copied out under the lock when the job starts; request_stop()
    // itself is thread-safe, the lock only guards the swap in resetStop().
    std::mutex m_stopMutex;
    std::stop_source m_stop;
    SinkHook m_sinkHook;
};
