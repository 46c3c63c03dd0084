// RunController: starts jobs on the worker thread, turns the worker's queued signals
// into RunStore updates, and stops and joins the thread when asked or destroyed.
#include "runs/runcontroller.h"

#include "runs/runstore.h"

#include "mixlab/model_spec.h"

#include <QCoreApplication>
#include <QEvent>
#include <QMetaObject>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace {

// Training saturates the CPU (the CPU backend, its OpenMP threads, or the host side of
// a fast GPU run) while the window must answer within 100 ms: the training thread, and
// the OpenMP threads it starts, run 4 nice levels below the GUI thread, so the kernel
// gives the GUI thread ~3x the weight when both want a core. Linux keeps nice per thread.
// Once per thread; a failure (a sandbox that forbids it) changes nothing else.
void lowerTrainingThreadPriority()
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

RunController::RunController(RunStore *store, QObject *parent)
    : QObject(parent), m_store(store)
{
    qRegisterMetaType<TrainingJob>();
    qRegisterMetaType<MetricsBatch>();
    qRegisterMetaType<mixlab::RunSummary>();
    qRegisterMetaType<RunContext>();
    qRegisterMetaType<mixlab::StepProfile>();

    // The worker has no parent because an object with one cannot change thread; it is
    // deleted in the destructor, after its thread has ended.
    m_worker = new TrainingWorker;
    m_worker->moveToThread(&m_thread);
    connect(m_worker, &TrainingWorker::runPrepared, this, &RunController::onRunPrepared);
    connect(m_worker, &TrainingWorker::runStarted, this, &RunController::onRunStarted);
    connect(m_worker, &TrainingWorker::metrics, this, &RunController::onMetrics);
    connect(m_worker, &TrainingWorker::runFinished, this, &RunController::onRunFinished);
    connect(m_worker, &TrainingWorker::runFailed, this, &RunController::onRunFailed);
    connect(m_worker, &TrainingWorker::runProfiled, this, &RunController::onRunProfiled);
    connect(m_worker, &TrainingWorker::jobFinished, this, &RunController::onJobFinished);
    m_thread.setObjectName(QStringLiteral("mixlab-training"));
    m_thread.start();
}

RunController::~RunController()
{
    stopAndWait();
    delete m_worker;
}

int RunController::start(const mixlab::ModelSpec &model, const std::vector<mixlab::RunConfig> &runs)
{
    if (m_running || runs.empty() || !m_store) return 0;
    if (!m_thread.isRunning()) m_thread.start(); // after stopAndWait()

    const QString modelJson = QString::fromStdString(mixlab::model_spec_to_json(model));
    m_group = m_store->newGroup();
    TrainingJob job;
    job.model = model;
    job.runs = runs;
    for (const mixlab::RunConfig &c : runs) job.runIds.push_back(m_store->addRun(c, modelJson, m_group));
    m_jobRuns = job.runIds;

    // No job is in flight, so the worker is not reading its stop source now; the
    // queued call below is ordered after this reset.
    m_worker->resetStop();
    m_running = true;
    TrainingWorker *worker = m_worker;
    QMetaObject::invokeMethod(m_worker,
                              [worker, job] {
                                  lowerTrainingThreadPriority();
                                  worker->runJob(job);
                              },
                              Qt::QueuedConnection);
    emit jobStarted(m_group);
    emit runningChanged(true);
    return m_group;
}

void RunController::stop()
{
    if (m_running) m_worker->requestStop();
}

void RunController::stopAndWait()
{
    if (m_running) m_worker->requestStop();
    if (m_thread.isRunning()) {
        // Quit from inside the worker's queue, so a job queued but not begun still
        // runs (and, being stopped already, ends at once with its runs marked stopped).
        QThread *thread = &m_thread;
        QMetaObject::invokeMethod(m_worker, [thread] { thread->quit(); }, Qt::QueuedConnection);
        m_thread.wait();
    }
    // Everything the worker emitted is queued for this object: deliver it now, so the
    // store holds the final statuses and summaries before the window goes.
    QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
    if (m_running) {
        // Only when the job never ran (its event was dropped): nothing will finish it.
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

void RunController::onJobFinished()
{
    if (!m_running) return;
    m_running = false;
    m_jobRuns.clear();
    emit jobFinished(m_group);
    emit runningChanged(false);
}
