// TrainingWorker: one job on the worker thread (backend, data, graph, one TrainingRun
// per policy, trained in lockstep, then each run's profiling pass), with metrics batched
// into at most k_maxEmitHz queued emissions a second, a failure mid-run ending only its own
// run, and Stop honoured between every setup phase.
#include "runs/trainingworker.h"

#include "common/enginetext.h"

#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/policy.h"

#include <QStringList>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>

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

    // Emits what is pending, if anything; called at the end whatever the timing.
    void flush()
    {
        m_lastEmit = Clock::now();
        MetricsBatch out;
        for (MetricsBatch::PerRun &r : m_pending.runs) {
            if (r.steps.empty() && r.epochs.empty() && r.events.empty()) continue;
            MetricsBatch::PerRun moved;
            moved.runId = r.runId;
            moved.steps.swap(r.steps);
            moved.epochs.swap(r.epochs);
            moved.events.swap(r.events);
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

QString messageOf(const std::exception &e) { return QString::fromUtf8(e.what()); }

// The profiling pass's extra steps train the model further but are not the run's timed
// steps: the run's logged steps and summary stay those of the training.
class DiscardSink : public mixlab::MetricsSink {
public:
    void on_step(int, const mixlab::StepMetrics &) override {}
    void on_epoch(int, const mixlab::EpochMetrics &) override {}
    void on_event(int, const mixlab::RunEvent &) override {}
};

// Each run alone, one after the other (not in lockstep), so its wall time per step is its
// own. A stop ends the pass between runs (a run's pass is 2 x k_profileSteps steps, too
// short to cut); the profiles already taken are kept. A pass that fails costs the run its
// profile, not its finished status.
// Profiled steps per run: k_profileSteps, fewer for slow steps so that a run's pass (about
// 3 x steps + 3 steps) stays near a couple of seconds: a 300 ms CPU step would otherwise
// keep the user waiting 10 s per run after every job.
int profileStepsFor(const mixlab::RunSummary &s)
{
    const double ms = s.median_step_ms > 0 ? s.median_step_ms : s.mean_step_ms;
    if (!(ms > 0)) return TrainingWorker::k_profileSteps;
    const int fit = int(2000.0 / (3.0 * ms));
    return std::clamp(fit, 2, TrainingWorker::k_profileSteps);
}

void profileRuns(TrainingWorker &worker, const std::vector<std::unique_ptr<mixlab::TrainingRun>> &runs,
                 const std::vector<mixlab::RunSummary> &summaries, const std::vector<int> &runIds,
                 const std::stop_token &stop, BatchingSink &log)
{
    DiscardSink discard;
    QStringList parts;
    std::int64_t step = 0;
    bool cut = false;
    for (std::size_t i = 0; i < runs.size() && i < runIds.size(); ++i) {
        if (!runs[i]) continue; // failed during training: nothing left to profile
        mixlab::TrainingRun &run = *runs[i];
        const QString policy = QString::fromUtf8(mixlab::policy_name(run.config().policy));
        step = std::max<std::int64_t>(step, run.steps_done());
        if (stop.stop_requested()) {
            cut = true;
            break;
        }
        emit worker.phaseStarted(TrainingWorker::Phase::Profiling, int(i));
        try {
            const mixlab::StepProfile p =
                run.profile(discard, i < summaries.size() ? profileStepsFor(summaries[i])
                                                          : TrainingWorker::k_profileSteps);
            parts << QStringLiteral("%1 %2 ms device, %3 ms wall a step")
                         .arg(policy, msText(p.step_ms), msText(p.wall_ms));
            emit worker.runProfiled(runIds[i], p);
        } catch (const std::exception &e) {
            parts << QStringLiteral("%1 failed: %2").arg(policy, messageOf(e));
        }
    }
    if (parts.isEmpty() && !cut) return;
    // One line for the group, on its first run: the pass is the group's, not a run's.
    QString text = QStringLiteral("profiling pass (up to %1 marked + %1 timed steps per run after "
                                  "the timed ones, not logged): %2")
                       .arg(TrainingWorker::k_profileSteps)
                       .arg(parts.isEmpty() ? QStringLiteral("none") : parts.join(QStringLiteral("; ")));
    if (cut) text += QStringLiteral("; stopped before the rest");
    log.on_event(0, mixlab::RunEvent{mixlab::RunEvent::Kind::Info, step, text.toStdString()});
    log.flush();
}

} // namespace

TrainingWorker::TrainingWorker(QObject *parent) : QObject(parent) {}

void TrainingWorker::requestStop() { m_stop.request(); }

void TrainingWorker::resetStop() { m_stop.reset(); }

void TrainingWorker::runJob(const TrainingJob &job)
{
    const std::stop_token stop = m_stop.token();
    const std::size_t n = job.runIds.size();
    BatchingSink sink(*this, job.runIds, m_sinkHook);
    std::vector<bool> ended(n, false);

    if (job.runs.size() != n || n == 0) {
        for (std::size_t i = 0; i < n; ++i)
            emit runFailed(job.runIds[i], QStringLiteral("internal error: the job has %1 run "
                                                         "configs for %2 runs")
                                              .arg(job.runs.size())
                                              .arg(n));
        emit jobFinished();
        return;
    }

    // Stopped before training began (stop pressed at once, during the data loading or
    // planning, or the window closing): every run not yet ended is marked stopped with
    // nothing done. Checked between the setup phases, each of which may take seconds
    // (a large dataset, a large model's parameters).
    auto endStoppedSetup = [&] {
        sink.flush();
        mixlab::RunSummary none;
        none.stopped = true;
        for (std::size_t i = 0; i < n; ++i)
            if (!ended[i]) {
                ended[i] = true;
                emit runFinished(job.runIds[i], none, true);
            }
    };
    if (stop.stop_requested()) {
        endStoppedSetup();
        emit jobFinished();
        return;
    }

    // Which run was being set up when an exception left, so the message says whose
    // fault it was; -1 once training is under way (each run then fails on its own).
    int settingUp = -1;
    auto failAll = [&](const QString &message) {
        std::vector<QString> texts(n, message);
        if (settingUp >= 0) {
            const QString culprit = QString::fromUtf8(
                mixlab::policy_name(job.runs[std::size_t(settingUp)].policy));
            for (std::size_t i = 0; i < n; ++i)
                if (std::size_t(settingUp) != i)
                    texts[i] = QStringLiteral("not run: the %1 run of this group could not "
                                              "start: %2").arg(culprit, message);
        }
        // Recorded like the CLI records it, so an exported log carries the reason too.
        for (std::size_t i = 0; i < n; ++i)
            if (!ended[i])
                sink.on_event(int(i), mixlab::RunEvent{mixlab::RunEvent::Kind::Error,
                                                       0, texts[i].toStdString()});
        sink.flush();
        for (std::size_t i = 0; i < n; ++i) {
            if (ended[i]) continue;
            ended[i] = true;
            emit runFailed(job.runIds[i], texts[i]);
        }
    };

    struct StoppedInSetup {};
    auto checkStop = [&stop] {
        if (stop.stop_requested()) throw StoppedInSetup{};
    };
    try {
        const mixlab::RunConfig &first = job.runs.front();
        emit phaseStarted(Phase::OpeningDevice, -1);
        // Declared in this order so they are destroyed runs first, backend last.
        std::unique_ptr<mixlab::Backend> backend = mixlab::make_backend(first.device);
        checkStop();
        emit phaseStarted(Phase::LoadingData, -1);
        const mixlab::Dataset data = mixlab::load_dataset(first.dataset, first.seed);
        checkStop();
        emit phaseStarted(Phase::BuildingGraph, -1);
        const mixlab::Shape input{{data.height, data.width, data.channels}};
        const mixlab::Graph graph = mixlab::build_graph(job.model, input, data.classes);

        RunContext context;
        context.input = input;
        context.classes = data.classes;
        context.datasetName = QString::fromStdString(data.name);
        context.datasetSource = QString::fromStdString(data.source);
        context.environment = mixlab::describe_environment(backend->info());
        for (int id : job.runIds) emit runPrepared(id, context);
        checkStop();

        mixlab::DeviceDataset deviceData(data, *backend);
        std::vector<std::unique_ptr<mixlab::TrainingRun>> runs;
        for (std::size_t i = 0; i < n; ++i) {
            // Between two runs' setups too: each allocates and plans its whole network.
            checkStop();
            settingUp = int(i);
            emit phaseStarted(Phase::Planning, int(i));
            runs.push_back(std::make_unique<mixlab::TrainingRun>(graph, job.runs[i], deviceData,
                                                                 *backend, int(i)));
            runs.back()->set_stop_token(stop);
        }
        settingUp = -1;
        for (std::size_t i = 0; i < n; ++i)
            emit runStarted(job.runIds[i], runs[i]->total_steps(),
                            double(runs[i]->device_bytes()) / 1e6);
        emit phaseStarted(Phase::Training, -1);

        // One step of each run in turn (mixlab::train_lockstep's order, and train()'s for
        // a single run), but a run that throws ends alone: an out-of-memory error in one
        // policy's step must not take the other runs of the compare with it. Its run is
        // destroyed at once, giving its memory back to the runs that go on.
        auto failRun = [&](std::size_t i, const QString &message) {
            const std::int64_t step = runs[i] ? runs[i]->steps_done() + 1 : 0;
            // The steps before the fault did train: report those still in flight so the
            // curve reaches the fault. What failed may be the run's own state, so a second
            // error here is dropped; the first one is the one the user needs.
            try {
                if (runs[i]) runs[i]->finish(sink, true);
            } catch (...) {
            }
            runs[i].reset();
            sink.on_event(int(i), mixlab::RunEvent{mixlab::RunEvent::Kind::Error, step,
                                                   message.toStdString()});
            sink.flush(); // the steps before the failure reach the store before its status
            ended[i] = true;
            emit runFailed(job.runIds[i], message);
        };
        bool stopped = false;
        for (;;) {
            bool any = false;
            for (std::size_t i = 0; i < n; ++i) {
                if (ended[i] || runs[i]->finished()) continue;
                if (stop.stop_requested()) {
                    stopped = true;
                    break;
                }
                try {
                    runs[i]->step(sink);
                } catch (const std::exception &e) {
                    failRun(i, messageOf(e));
                }
                any = true;
            }
            if (stopped || !any) break;
        }
        std::vector<mixlab::RunSummary> summaries(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (ended[i]) continue;
            try {
                summaries[i] = runs[i]->finish(sink, stopped);
            } catch (const std::exception &e) {
                failRun(i, messageOf(e));
            }
        }
        sink.flush();
        bool anyStopped = false;
        for (std::size_t i = 0; i < n; ++i) {
            if (ended[i]) continue;
            ended[i] = true;
            anyStopped = anyStopped || summaries[i].stopped;
            emit runFinished(job.runIds[i], summaries[i], summaries[i].stopped);
        }
        // A failed run leaves the others a group still worth profiling; a stop does not.
        if (!anyStopped) profileRuns(*this, runs, summaries, job.runIds, stop, sink);
    } catch (const StoppedInSetup &) {
        endStoppedSetup(); // the runs set up so far are freed by now
    } catch (const std::exception &e) {
        failAll(messageOf(e));
    } catch (...) {
        failAll(QStringLiteral("unknown error in the training thread"));
    }
    emit jobFinished();
}
