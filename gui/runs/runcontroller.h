// RunController: owns the app's worker thread and its two workers (TrainingWorker,
// MaxBatchWorker), runs one job at a time on it (a training job or a largest-batch search),
// turns training's signals into RunStore updates and passes the search's on. Start and
// stop come from the GUI; closing joins the thread.
#pragma once
#include "runs/maxbatchworker.h"
#include "runs/trainingworker.h"
#include "runs/workermessages.h"

#include <QObject>
#include <QPointer>
#include <QStringList>
#include <QThread>

#include <vector>

class RunStore;

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(RunStore *store, QObject *parent = nullptr);
    ~RunController() override; // stops and joins

    // One job at a time on the one worker thread: a training job and a search never overlap,
    // and a start while either runs is refused.
    bool isRunning() const { return m_job == Job::Training; } // a training job
    bool isSearching() const { return m_job == Job::Search; } // a largest-batch search
    bool isBusy() const { return m_job != Job::None; }
    // Adds one run per config to the store (one compare group) and starts them; a
    // language model's runs write `sampling.words` words each when they end. Returns the
    // group id, or 0 when the worker is busy.
    // `startWeights`: a safetensors file every run of the job starts from (empty: none).
    int start(const mixlab::ModelSpec &model, const std::vector<mixlab::RunConfig> &runs,
              const TextSampling &sampling = {}, const QString &startWeights = {});
    // One run continuing `checkpoint` (RunGroupOptions::resume): `model` and `config` are
    // the checkpoint's (read_checkpoint_header), with a later end; the run is added under
    // `name`. Returns the group id, or 0 when the worker is busy.
    int continueFrom(const QString &checkpoint, const mixlab::ModelSpec &model,
                     const mixlab::RunConfig &config, const QString &name);
    // Where the runs of later jobs write their trained weights (RunRecord::weightsPath);
    // empty (the default): nowhere.
    void setWeightsFolder(const QString &folder) { m_weightsFolder = folder; }
    QString weightsFolder() const { return m_weightsFolder; }
    // Checkpoints at each epoch end for the runs of later jobs: each run gets a folder of
    // its own in `experimentFolder`, made as the job starts (checkpointfolders::runFolder;
    // RunRecord::checkpointFolder) and removed at the job's end when the run wrote nothing
    // into it, keeping the newest `keep`. An empty folder or keep 0: none.
    void setCheckpoints(const QString &experimentFolder, int keep);
    // Starts a largest-batch search; false (nothing started) when the worker is busy.
    bool startSearch(const SearchJob &search);
    // Immediate: the running job, training or search, stops after the step or trial in
    // flight (the job's std::stop_token, not a queued call).
    void stop();
    void stopAndWait(); // for closing the window

    // Test hook: the search's trials come from this function (MaxBatchWorker's hook).
    // Takes effect from the next search; ignored while one runs.
    void setSearchTrialForTesting(MaxBatchWorker::TrialFunction trial);

signals:
    void runningChanged(bool running);
    void jobStarted(int group);
    void jobFinished(int group);

    // The search: MaxBatchWorker's signals, passed on (policyIndex: the policy's place in
    // SearchJob::policies). searchFinished is the search's last signal; the controller
    // is idle again when it comes.
    void searchingChanged(bool searching);
    void searchPrepared(const MaxBatchContext &context);
    void searchPolicyStarted(int policyIndex);
    void searchTrialStarted(int policyIndex, int batch);
    void searchTrialDone(int policyIndex, const mixlab::BatchTrial &trial);
    void searchPolicyDone(int policyIndex, const mixlab::MaxBatchResult &result);
    void searchPolicyFailed(int policyIndex, const QString &message);
    void searchFailed(const QString &message);
    void searchFinished(bool stopped);

private:
    enum class Job { None, Training, Search };

    void onRunPrepared(int runId, const RunContext &context);
    void onRunStarted(int runId, qint64 totalSteps, double deviceMemoryMB);
    void onMetrics(const MetricsBatch &batch);
    void onRunFinished(int runId, const mixlab::RunSummary &summary, bool stopped);
    void onRunFailed(int runId, const QString &message);
    void onRunProfiled(int runId, const mixlab::StepProfile &profile);
    void onRunWeightsSaved(int runId, const QString &path, const QString &failure);
    void onRunCheckpointFailed(int runId, const QString &message);
    // Adds the job's runs to the store (`names`: their names, empty to keep the default)
    // and queues it; the group id.
    int startJob(TrainingJob job, const QStringList &names);
    void noCheckpointFolder(int runId, const QString &why);
    void onJobFinished();
    void onSearchFinished(bool stopped);

    QPointer<RunStore> m_store; // may go first when both are children of one window
    QThread m_thread;
    // Both live in m_thread; at most one of them has a job at a time (m_job).
    TrainingWorker *m_worker = nullptr;
    MaxBatchWorker *m_searchWorker = nullptr;
    Job m_job = Job::None;
    int m_group = 0;
    std::vector<int> m_jobRuns; // the running job's run ids
    // The folders claimed for the running job's runs (TrainingJob::checkpointFolders),
    // released at its end when left empty.
    std::vector<QString> m_jobFolders;
    QString m_weightsFolder;
    QString m_checkpointFolder;
    int m_keepCheckpoints = 0;
};
