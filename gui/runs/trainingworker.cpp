// TrainingWorker: one job on the worker thread, run by the engine's mixlab::RunGroup (the
// device, data, graph and one run per policy, trained in lockstep, then each run's
// profiling pass), with what the group reports turned into the worker's signals and its
// metrics batched into at most k_maxEmitHz queued emissions a second.
#include "runs/trainingworker.h"

#include "common/enginetext.h"

#include "mixlab/policy.h"
#include "mixlab/run_group.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QStringList>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

namespace {

// Collects what the trainer reports, per run of the job, and hands it to the GUI in
// batches: one queued signal per flush instead of one per step keeps the GUI thread's
// event queue short however fast the steps are.
class BatchingSink : public mixlab::MetricsSink {
public:
    BatchingSink(TrainingWorker &worker, const std::vector<int> &runIds,
                 const TrainingWorker::SinkHook &hook)
        : m_worker(worker), m_hook(hook), m_lastEmit(Clock::now())
    {
        m_pending.runs.resize(runIds.size());
        for (std::size_t i = 0; i < runIds.size(); ++i) m_pending.runs[i].runId = runIds[i];
    }

    void on_step(int run, const mixlab::StepMetrics &m) override
    {
        if (m_hook) m_hook(run, "step", m.step);
        if (MetricsBatch::PerRun *r = at(run)) r->steps.push_back(m);
        flushIfDue();
    }
    void on_epoch(int run, const mixlab::EpochMetrics &m) override
    {
        if (m_hook) m_hook(run, "epoch", m.epoch);
        if (MetricsBatch::PerRun *r = at(run)) r->epochs.push_back(m);
        flushIfDue();
    }
    void on_event(int run, const mixlab::RunEvent &e) override
    {
        if (m_hook) m_hook(run, "event", e.step);
        if (MetricsBatch::PerRun *r = at(run))
            r->events.push_back(TimedEvent{QDateTime::currentDateTime(), e});
        flushIfDue();
    }
    // A sample is a few kilobytes a layer and comes every numerics_every steps: it rides
    // with the next batch like the steps do.
    void on_numerics(int run, const mixlab::NumericsSample &sample) override
    {
        if (m_hook) m_hook(run, "numerics", sample.step);
        if (MetricsBatch::PerRun *r = at(run)) r->numerics.push_back(sample);
        flushIfDue();
    }
    // A run's sample travels with its metrics; it comes once, after training, so it goes
    // out at once.
    void sample(int run, RunSample sample)
    {
        if (MetricsBatch::PerRun *r = at(run)) r->sample = std::move(sample);
        flush();
    }

    // Emits what is pending, if anything; called at the end whatever the timing.
    void flush()
    {
        m_lastEmit = Clock::now();
        MetricsBatch out;
        for (MetricsBatch::PerRun &r : m_pending.runs) {
            if (r.steps.empty() && r.epochs.empty() && r.events.empty() && r.numerics.empty() &&
                !r.sample)
                continue;
            MetricsBatch::PerRun moved;
            moved.runId = r.runId;
            moved.steps.swap(r.steps);
            moved.epochs.swap(r.epochs);
            moved.events.swap(r.events);
            moved.numerics.swap(r.numerics);
            moved.sample.swap(r.sample);
            out.runs.push_back(std::move(moved));
        }
        if (!out.runs.empty()) emit m_worker.metrics(out);
    }

private:
    using Clock = std::chrono::steady_clock;
    static constexpr auto k_interval =
        std::chrono::milliseconds(1000 / TrainingWorker::k_maxEmitHz);

    MetricsBatch::PerRun *at(int run)
    {
        if (run < 0 || run >= int(m_pending.runs.size())) return nullptr;
        return &m_pending.runs[std::size_t(run)];
    }
    void flushIfDue()
    {
        if (Clock::now() - m_lastEmit >= k_interval) flush();
    }

    TrainingWorker &m_worker;
    const TrainingWorker::SinkHook &m_hook;
    MetricsBatch m_pending;
    Clock::time_point m_lastEmit;
};

std::optional<TrainingWorker::Phase> workerPhase(mixlab::GroupPhase phase)
{
    using P = TrainingWorker::Phase;
    switch (phase) {
    case mixlab::GroupPhase::OpeningDevice: return P::OpeningDevice;
    case mixlab::GroupPhase::LoadingData: return P::LoadingData;
    case mixlab::GroupPhase::BuildingGraph: return P::BuildingGraph;
    case mixlab::GroupPhase::Planning: return P::Planning;
    case mixlab::GroupPhase::Training: return P::Training;
    case mixlab::GroupPhase::Profiling: return P::Profiling;
    case mixlab::GroupPhase::Searching: break; // a max-batch search's, never a job's
    }
    return std::nullopt;
}

// Turns what the group reports (run indices, engine values) into the worker's signals
// (store ids). A run's end is signalled after its metrics are flushed, so that the steps
// before a failure reach the store before its status.
class JobObserver : public mixlab::RunGroupObserver {
public:
    JobObserver(TrainingWorker &worker, const std::vector<int> &runIds, BatchingSink &sink,
                const TextSampling &sampling)
        : m_worker(worker), m_runIds(runIds), m_sink(sink), m_sampling(sampling),
          m_ended(runIds.size(), false)
    {}

    void on_phase(mixlab::GroupPhase phase, int run) override
    {
        if (const auto p = workerPhase(phase)) emit m_worker.phaseStarted(*p, run);
    }
    void on_prepared(const mixlab::GroupFacts &facts) override
    {
        RunContext context;
        context.input = facts.graph.input;
        context.classes = facts.graph.classes;
        context.datasetName = QString::fromStdString(facts.dataset_name);
        context.datasetSource = QString::fromStdString(facts.dataset_source);
        context.environment = facts.environment;
        context.perplexityReferences = facts.perplexity_references;
        for (int id : m_runIds) emit m_worker.runPrepared(id, context);
    }
    void on_run_started(int run, const mixlab::RunStart &start) override
    {
        emit m_worker.runStarted(idOf(run), start.total_steps, double(start.device_bytes) / 1e6);
    }
    void on_run_finished(int run, const mixlab::RunSummary &summary) override
    {
        m_sink.flush();
        m_ended[std::size_t(run)] = true;
        emit m_worker.runFinished(idOf(run), summary, summary.stopped);
    }
    void on_run_failed(int run, const std::string &message) override
    {
        failed(run, QString::fromStdString(message));
    }
    void on_run_profiled(int run, const mixlab::StepProfile &profile) override
    {
        emit m_worker.runProfiled(idOf(run), profile);
    }
    void on_run_sampled(int run, const std::string &text) override
    {
        if (run < 0 || run >= int(m_runIds.size())) return;
        RunSample s;
        s.text = QString::fromStdString(text);
        s.words = m_sampling.words;
        s.temperature = m_sampling.temperature;
        m_sink.sample(run, std::move(s));
    }
    // The group reports a failed sample only in its outcome.
    void sampleFailed(int run, const std::string &why)
    {
        RunSample s;
        s.failure = QString::fromStdString(why);
        s.words = m_sampling.words;
        s.temperature = m_sampling.temperature;
        m_sink.sample(run, std::move(s));
    }

    // Ends every run the group did not end (it threw: nothing should, but a slot must not
    // let an exception out, and a run left open would stay "running" in the window).
    void failRest(const QString &message)
    {
        for (std::size_t i = 0; i < m_ended.size(); ++i)
            if (!m_ended[i]) failed(int(i), message);
    }

private:
    int idOf(int run) const { return m_runIds[std::size_t(run)]; }
    void failed(int run, const QString &message)
    {
        m_sink.flush();
        m_ended[std::size_t(run)] = true;
        emit m_worker.runFailed(idOf(run), message);
    }

    TrainingWorker &m_worker;
    const std::vector<int> &m_runIds;
    BatchingSink &m_sink;
    const TextSampling &m_sampling;
    std::vector<bool> m_ended;
};

// Each run's own files (RunGroupOptions::run_outputs): its weights in the job's weights
// folder, kept for File > Save weights, and its checkpoints in its checkpoint folder.
//
// Why a weights file at the run's end and not the network kept for File > Save weights: a
// TrainingRun holds its parameters, gradients, optimizer state and activations on the
// device; keeping every ended run's alive until the user perhaps saves would hold that
// memory (a ResNet's gigabytes) from the runs that follow, for the whole session. One
// device-to-host copy of the fp32 masters at the end costs milliseconds to seconds and
// the file its size on disk (the seed MLP: 21 MB on Fashion-MNIST, 49 on CIFAR-10); the
// menu then copies the file. The group writes it after the run's last step and before the
// profiling pass, whose extra steps would train on: the file holds the model the metrics
// describe.
std::vector<mixlab::RunGroupOptions::RunOutputs> runOutputs(const TrainingJob &job)
{
    std::vector<mixlab::RunGroupOptions::RunOutputs> out;
    if (job.weightsFolder.isEmpty() && job.checkpointFolders.empty()) return out;
    out.resize(job.runIds.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!job.weightsFolder.isEmpty())
            out[i].weights =
                QFile::encodeName(runWeightsPath(job.weightsFolder, job.runIds[i])).toStdString();
        if (i < job.checkpointFolders.size())
            out[i].checkpoint_folder = QFile::encodeName(job.checkpointFolders[i]).toStdString();
        out[i].keep_checkpoints = std::max(job.keepCheckpoints, 1);
    }
    return out;
}

// What the group says of each run's files once it is done: the weights kept (or why not,
// also in the run's log: the menu's tooltip is not where a user looks first) and a
// checkpoint that failed (its warning is in the log already).
void reportRunOutputs(TrainingWorker &worker, const TrainingJob &job,
                      const mixlab::GroupOutcome &outcome, BatchingSink &sink)
{
    for (std::size_t i = 0; i < outcome.runs.size(); ++i) {
        const mixlab::RunOutcome &r = outcome.runs[i];
        const int id = job.runIds[i];
        if (!r.checkpoint_failure.empty())
            emit worker.runCheckpointFailed(id, QString::fromStdString(r.checkpoint_failure));
        if (job.weightsFolder.isEmpty() || r.status == mixlab::RunOutcome::Status::Failed ||
            r.summary.steps <= 0)
            continue;
        if (!r.weights_failure.empty())
            sink.on_event(int(i), mixlab::RunEvent{mixlab::RunEvent::Kind::Warning, r.summary.steps,
                                                   "the weights could not be kept for File > "
                                                   "Save weights: " +
                                                       r.weights_failure});
        emit worker.runWeightsSaved(
            id, r.weights_failure.empty() ? runWeightsPath(job.weightsFolder, id) : QString(),
            QString::fromStdString(r.weights_failure));
    }
    sink.flush();
}

// The line that puts the start weights in each run's log before anything else: the file,
// its size and SHA-256, so the log says exactly which bytes the run started from (a file
// of the same name may be overwritten later). The core then reads and checks the file.
void logStartWeights(const TrainingJob &job, BatchingSink &sink)
{
    if (job.startWeights.isEmpty()) return;
    QString text = QStringLiteral("starting from the weights in %1").arg(job.startWeights);
    QFile file(job.startWeights);
    if (file.open(QIODevice::ReadOnly)) {
        QCryptographicHash hash(QCryptographicHash::Sha256);
        if (hash.addData(&file))
            text += QStringLiteral(" (%1 bytes, SHA-256 %2)")
                        .arg(QFileInfo(job.startWeights).size())
                        .arg(QString::fromLatin1(hash.result().toHex()));
    }
    for (std::size_t i = 0; i < job.runIds.size(); ++i)
        sink.on_event(int(i),
                      mixlab::RunEvent{mixlab::RunEvent::Kind::Info, 0, text.toStdString()});
    sink.flush();
}

// One line for the group's profiling pass, on its first run (the pass is the group's, not
// a run's): each run's profile or why it has none, and whether a stop cut the pass short.
// Nothing when there was no pass (a run stopped, or the job failed before training).
void logProfilingPass(const TrainingJob &job, const mixlab::GroupOutcome &outcome,
                      BatchingSink &sink)
{
    QStringList parts;
    std::int64_t step = 0;
    for (std::size_t i = 0; i < outcome.runs.size(); ++i) {
        const mixlab::RunOutcome &r = outcome.runs[i];
        const QString policy = policyText(job.runs[i].policy);
        if (r.status != mixlab::RunOutcome::Status::Failed) step = std::max(step, r.summary.steps);
        if (r.profile)
            parts << QStringLiteral("%1 %2 ms device, %3 ms wall a step")
                         .arg(policy, msText(r.profile->step_ms), msText(r.profile->wall_ms));
        else if (!r.profile_failure.empty())
            parts << QStringLiteral("%1 failed: %2")
                         .arg(policy, QString::fromStdString(r.profile_failure));
    }
    if (parts.isEmpty() && !outcome.profiling_cut) return;
    QString text =
        QStringLiteral("profiling pass (up to %1 marked + %1 timed steps per run after "
                       "the timed ones, not logged): %2")
            .arg(TrainingWorker::k_profileSteps)
            .arg(parts.isEmpty() ? QStringLiteral("none") : parts.join(QStringLiteral("; ")));
    if (outcome.profiling_cut) text += QStringLiteral("; stopped before the rest");
    sink.on_event(0, mixlab::RunEvent{mixlab::RunEvent::Kind::Info, step, text.toStdString()});
    sink.flush();
}

} // namespace

TrainingWorker::TrainingWorker(QObject *parent) : QObject(parent) {}

void TrainingWorker::requestStop() { m_stop.request(); }

void TrainingWorker::resetStop() { m_stop.reset(); }

void TrainingWorker::runJob(const TrainingJob &job)
{
    const std::size_t n = job.runIds.size();
    if (job.runs.size() != n || n == 0) {
        for (std::size_t i = 0; i < n; ++i)
            emit runFailed(job.runIds[i], QStringLiteral("internal error: the job has %1 run "
                                                         "configs for %2 runs")
                                              .arg(job.runs.size())
                                              .arg(n));
        emit jobFinished();
        return;
    }

    BatchingSink sink(*this, job.runIds, m_sinkHook);
    JobObserver observer(*this, job.runIds, sink, job.sampling);
    try {
        mixlab::RunGroupOptions options;
        options.profile_steps = k_profileSteps;
        options.profile_seconds = k_profileSeconds;
        // The group samples language models only; a classifier's job ignores these.
        options.sample_words = std::max(job.sampling.words, 0);
        options.sample_temperature = job.sampling.temperature;
        options.load_weights = QFile::encodeName(job.startWeights).toStdString();
        options.resume = QFile::encodeName(job.resumeFrom).toStdString();
        options.run_outputs = runOutputs(job);
        logStartWeights(job, sink);
        mixlab::RunGroup group(job.model, job.runs, options);
        const mixlab::GroupOutcome outcome = group.run(sink, observer, m_stop.token());
        reportRunOutputs(*this, job, outcome, sink);
        for (std::size_t i = 0; i < outcome.runs.size(); ++i)
            if (!outcome.runs[i].sample_failure.empty())
                observer.sampleFailed(int(i), outcome.runs[i].sample_failure);
        logProfilingPass(job, outcome, sink);
    } catch (const std::exception &e) {
        observer.failRest(QString::fromUtf8(e.what()));
    } catch (...) {
        observer.failRest(QStringLiteral("unknown error in the training thread"));
    }
    emit jobFinished();
}
