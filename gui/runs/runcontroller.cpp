// RunController: starts jobs on the worker thread, one at a time, turns the training
// worker's queued signals into RunStore updates, passes the search worker's on, and stops
// and joins the thread when asked or destroyed.
#include "runs/runcontroller.h"

#include "runs/checkpointfolders.h"
#include "runs/runstore.h"

#include "mixlab/model_spec.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QEvent>
#include <QMetaObject>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace {

// Training and a search's trials saturate the CPU (the CPU backend, its OpenMP threads,
// or the host side of a fast GPU run) while the window must answer within 100 ms: the
// worker thread, and the OpenMP threads it starts, run 4 nice levels below the GUI thread,
// so the kernel gives the GUI thread ~3x the weight when both want a core. Linux keeps
// nice per thread.
// Once per thread; a failure (a sandbox that forbids it) changes nothing else.
void lowerWorkerThreadPriority()
{
#ifdef __linux__
    thread_local bool lowered = false;
    if (lowered) return;
    lowered = true;
    const pid_t tid = pid_t(syscall(SYS_gettid));
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, id_t(tid));
    if (errno == 0) setpriority(PRIO_PROCESS, id_t(tid), std::min(nice + 4, 19));
#endif
}

} // namespace

RunController::RunController(RunStore *store, QObject *parent) : QObject(parent), m_store(store)
{
    registerWorkerMessages();

    // The workers have no parent because an object with one cannot change thread; they
    // are deleted in the destructor, after their thread has ended.
    m_worker = new TrainingWorker;
    m_worker->moveToThread(&m_thread);
    m_searchWorker = new MaxBatchWorker;
    m_searchWorker->moveToThread(&m_thread);
    connect(m_worker, &TrainingWorker::runPrepared, this, &RunController::onRunPrepared);
    connect(m_worker, &TrainingWorker::runStarted, this, &RunController::onRunStarted);
    connect(m_worker, &TrainingWorker::metrics, this, &RunController::onMetrics);
    connect(m_worker, &TrainingWorker::runFinished, this, &RunController::onRunFinished);
    connect(m_worker, &TrainingWorker::runFailed, this, &RunController::onRunFailed);
    connect(m_worker, &TrainingWorker::runProfiled, this, &RunController::onRunProfiled);
    connect(m_worker, &TrainingWorker::runWeightsSaved, this, &RunController::onRunWeightsSaved);
    connect(m_worker, &TrainingWorker::runCheckpointFailed, this,
            &RunController::onRunCheckpointFailed);
    connect(m_worker, &TrainingWorker::jobFinished, this, &RunController::onJobFinished);
    // Queued (the worker emits on its thread), then passed on from this thread.
    connect(m_searchWorker, &MaxBatchWorker::searchPrepared, this, &RunController::searchPrepared);
    connect(m_searchWorker, &MaxBatchWorker::policyStarted, this,
            &RunController::searchPolicyStarted);
    connect(m_searchWorker, &MaxBatchWorker::trialStarted, this,
            &RunController::searchTrialStarted);
    connect(m_searchWorker, &MaxBatchWorker::trialDone, this, &RunController::searchTrialDone);
    connect(m_searchWorker, &MaxBatchWorker::policyDone, this, &RunController::searchPolicyDone);
    connect(m_searchWorker, &MaxBatchWorker::policyFailed, this,
            &RunController::searchPolicyFailed);
    connect(m_searchWorker, &MaxBatchWorker::searchFailed, this, &RunController::searchFailed);
    connect(m_searchWorker, &MaxBatchWorker::searchFinished, this,
            &RunController::onSearchFinished);
    m_thread.setObjectName(QStringLiteral("mixlab-training"));
    m_thread.start();
}

RunController::~RunController()
{
    stopAndWait();
    delete m_worker;
    delete m_searchWorker;
}

int RunController::start(const mixlab::ModelSpec &model, const std::vector<mixlab::RunConfig> &runs,
                         const TextSampling &sampling, const QString &startWeights)
{
    if (isBusy() || runs.empty() || !m_store) return 0;
    TrainingJob job;
    job.model = model;
    job.runs = runs;
    job.sampling = sampling;
    job.startWeights = startWeights;
    return startJob(std::move(job), {});
}

int RunController::continueFrom(const QString &checkpoint, const mixlab::ModelSpec &model,
                                const mixlab::RunConfig &config, const QString &name)
{
    if (isBusy() || !m_store) return 0;
    TrainingJob job;
    job.model = model;
    job.runs = {config};
    job.resumeFrom = checkpoint;
    return startJob(std::move(job), {name});
}

void RunController::setCheckpoints(const QString &experimentFolder, int keep)
{
    m_checkpointFolder = experimentFolder;
    m_keepCheckpoints = keep;
}

int RunController::startJob(TrainingJob job, const QStringList &names)
{
    if (!m_thread.isRunning()) m_thread.start(); // after stopAndWait()

    const QString modelJson = QString::fromStdString(mixlab::model_spec_to_json(job.model));
    m_group = m_store->newGroup();
    job.weightsFolder = m_weightsFolder;
    const bool checkpoints = !m_checkpointFolder.isEmpty() && m_keepCheckpoints > 0;
    job.keepCheckpoints = std::max(m_keepCheckpoints, 1);
    for (std::size_t i = 0; i < job.runs.size(); ++i) {
        const mixlab::RunConfig &c = job.runs[i];
        const int id = m_store->addRun(c, modelJson, m_group);
        job.runIds.push_back(id);
        if (RunRecord *r = m_store->mutableRun(id)) r->startWeights = job.startWeights;
        if (int(i) < names.size() && !names[int(i)].isEmpty()) m_store->rename(id, names[int(i)]);
        if (checkpoints) {
            QString failure;
            job.checkpointFolders.push_back(
                checkpointfolders::runFolder(m_checkpointFolder, id, c.policy, &failure));
            m_store->setCheckpointFolder(id, job.checkpointFolders.back());
            if (!failure.isEmpty()) noCheckpointFolder(id, failure);
        }
    }
    m_jobRuns = job.runIds;
    m_jobFolders = job.checkpointFolders;

    // No job is in flight, so the worker is not reading its stop source now; the
    // queued call below is ordered after this reset.
    m_worker->resetStop();
    m_job = Job::Training;
    TrainingWorker *worker = m_worker;
    QMetaObject::invokeMethod(
        m_worker,
        [worker, job = std::move(job)] {
            lowerWorkerThreadPriority();
            worker->runJob(job);
        },
        Qt::QueuedConnection);
    emit jobStarted(m_group);
    emit runningChanged(true);
    return m_group;
}

bool RunController::startSearch(const SearchJob &search)
{
    if (isBusy()) return false;
    if (!m_thread.isRunning()) m_thread.start(); // after stopAndWait()
    // As for training: the reset is ordered before the queued search reads its token.
    m_searchWorker->resetStop();
    m_job = Job::Search;
    MaxBatchWorker *worker = m_searchWorker;
    QMetaObject::invokeMethod(
        m_searchWorker,
        [worker, search] {
            lowerWorkerThreadPriority();
            worker->runSearch(search);
        },
        Qt::QueuedConnection);
    emit searchingChanged(true);
    return true;
}

void RunController::setSearchTrialForTesting(MaxBatchWorker::TrialFunction trial)
{
    // The worker reads it when a search begins: set only while none is queued or running.
    if (!isSearching()) m_searchWorker->setTrialForTesting(std::move(trial));
}

void RunController::stop()
{
    if (m_job == Job::Training) m_worker->requestStop();
    if (m_job == Job::Search) m_searchWorker->requestStop();
}

void RunController::stopAndWait()
{
    stop();
    if (m_thread.isRunning()) {
        // Quit from inside the worker's queue, so a job queued but not begun still
        // runs (and, being stopped already, ends at once with its runs marked stopped).
        QThread *thread = &m_thread;
        QMetaObject::invokeMethod(
            m_worker, [thread] { thread->quit(); }, Qt::QueuedConnection);
        m_thread.wait();
    }
    // Everything the workers emitted is queued for this object: deliver it now, so the
    // store holds the final statuses and summaries, and the search's views its last
    // trials, before the window goes.
    QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
    // A job whose queued call never ran (its event was dropped): nothing else will end it.
    if (m_job == Job::Search) onSearchFinished(true);
    if (m_job == Job::Training) {
        if (m_store)
            for (int id : m_jobRuns) {
                const RunRecord *r = m_store->run(id);
                if (r && (r->status == RunRecord::Status::Queued ||
                          r->status == RunRecord::Status::Running))
                    m_store->setStatus(id, RunRecord::Status::Stopped);
            }
        onJobFinished();
    }
}

void RunController::onRunPrepared(int runId, const RunContext &context)
{
    if (m_store) m_store->setContext(runId, context);
}

void RunController::onRunStarted(int runId, qint64 totalSteps, double deviceMemoryMB)
{
    if (!m_store) return;
    m_store->setStarted(runId, totalSteps, deviceMemoryMB);
    m_store->setStatus(runId, RunRecord::Status::Running);
}

void RunController::onMetrics(const MetricsBatch &batch)
{
    if (!m_store) return;
    for (const MetricsBatch::PerRun &r : batch.runs) {
        m_store->appendSteps(r.runId, r.steps);
        m_store->appendEpochs(r.runId, r.epochs);
        m_store->appendEvents(r.runId, r.events);
        m_store->appendNumerics(r.runId, r.numerics);
        if (r.sample) m_store->setSample(r.runId, *r.sample);
    }
}

void RunController::onRunFinished(int runId, const mixlab::RunSummary &summary, bool stopped)
{
    if (!m_store) return;
    m_store->setSummary(runId, summary);
    m_store->setStatus(runId, stopped ? RunRecord::Status::Stopped : RunRecord::Status::Finished);
}

void RunController::onRunFailed(int runId, const QString &message)
{
    if (m_store) m_store->setStatus(runId, RunRecord::Status::Failed, message);
}

void RunController::onRunProfiled(int runId, const mixlab::StepProfile &profile)
{
    if (m_store) m_store->setProfile(runId, profile);
}

void RunController::onRunWeightsSaved(int runId, const QString &path, const QString &failure)
{
    if (m_store) m_store->setWeights(runId, path, failure);
}

void RunController::onRunCheckpointFailed(int runId, const QString &message)
{
    if (m_store) m_store->setCheckpointFailure(runId, message);
}

// The run trains without checkpoints, and says so at once: in its log, and (as a
// checkpoint that failed) in its tooltip and the job's end report.
void RunController::noCheckpointFolder(int runId, const QString &why)
{
    const QString text = tr("no checkpoint folder could be made, so this run writes no "
                            "checkpoints: %1")
                             .arg(why);
    m_store->setCheckpointFailure(runId, text);
    m_store->appendEvents(runId, {TimedEvent{QDateTime::currentDateTime(),
                                             mixlab::RunEvent{mixlab::RunEvent::Kind::Warning, 0,
                                                              text.toStdString()}}});
}

void RunController::onJobFinished()
{
    if (m_job != Job::Training) return;
    m_job = Job::None;
    // The folder claimed for a run that wrote no checkpoint (stopped before its first
    // step, failed in setup, every write failed) goes, and the run no longer names it:
    // a later run may claim that name, and this run's Delete or Continue must not reach
    // that run's checkpoints.
    for (std::size_t i = 0; i < m_jobFolders.size() && i < m_jobRuns.size(); ++i)
        if (checkpointfolders::release(m_jobFolders[i]) && m_store)
            m_store->setCheckpointFolder(m_jobRuns[i], {});
    m_jobRuns.clear();
    m_jobFolders.clear();
    emit jobFinished(m_group);
    emit runningChanged(false);
}

void RunController::onSearchFinished(bool stopped)
{
    if (m_job != Job::Search) return;
    m_job = Job::None;
    emit searchFinished(stopped);
    emit searchingChanged(false);
}
