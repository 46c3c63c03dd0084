// The worker thread through RunController: CPU runs on synthetic data reach the store,
// metrics arrive in batches, compare runs in lockstep and are profiled after, stop and
// failures end jobs cleanly and the next job still runs, destruction mid-run joins the thread.
// The largest-batch search runs on the same thread (never on the GUI's), one job at a time
// with training, and stops between trials, at once or with the window.
#include "runs/maxbatchworker.h"
#include "runs/runcontroller.h"
#include "runs/runstore.h"
#include "runs/trainingworker.h"
#include "mixlab/run_group.h"

#include "mixlab/backend.h"

#include <QThread>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <set>

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

#include "test_models.h"

using namespace mixlab;

Q_DECLARE_METATYPE(mixlab::RunConfig)

namespace {

// Generous: a loaded 2-core CI machine; the runs themselves take well under a second.
constexpr int k_timeoutMs = 60000;

ModelSpec tinyMlp() { return test::tiny_mlp({.hidden = 32}); }

RunConfig cpuConfig(Policy policy, std::int64_t steps)
{
    RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 512;
    c.dataset.synthetic_test = 128;
    c.policy = policy;
    c.batch_size = 32;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.seed = 7;
    return c;
}

// A stand-in trial: every batch fits, in `ms` milliseconds.
BatchTrial fittingTrial(int batch, int ms = 0)
{
    if (ms > 0) QThread::msleep(ms);
    BatchTrial t;
    t.batch = batch;
    t.fits = true;
    t.step_ms = 1.0;
    t.samples_per_s = batch * 1000.0;
    return t;
}

SearchJob fakeSearch(std::vector<Policy> policies, int start, int limit)
{
    SearchJob s;
    s.model = tinyMlp();
    s.config = cpuConfig(Policy::FP32, 0);
    s.policies = std::move(policies);
    s.options.start = start;
    s.options.limit = limit;
    return s;
}

bool isOver(const RunRecord *r)
{
    return r && (r->status == RunRecord::Status::Finished ||
                 r->status == RunRecord::Status::Stopped || r->status == RunRecord::Status::Failed);
}

} // namespace

class TestWorker : public QObject {
    Q_OBJECT
private slots:
    void singleRunReachesStore();
    void metricsAreBatched();
    void compareRunsInLockstep();
    void compareIsProfiled();
    void stopDuringProfiling();
    void stopMidRun();
    void stopBeforeJobBegins();
    void failingJobs_data();
    void failingJobs();
    void stopAndWaitThenStartAgain();
    void destroyMidRunJoins();
    void storeGoneBeforeController();
    void searchRunsOnTheWorkerThread();
    void searchStopsBetweenTrials();
    void searchStoppedBeforeItBegins();
    void trainingAndSearchTakeTurns();
    void stopAndWaitMidSearch();
};

void TestWorker::singleRunReachesStore()
{
    RunStore store;
    RunController controller(&store);
    QSignalSpy running(&controller, &RunController::runningChanged);
    QSignalSpy finished(&controller, &RunController::jobFinished);
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 40)});
    QVERIFY(group > 0);
    QVERIFY(controller.isRunning());
    QCOMPARE(controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 40)}), 0); // one at a time
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toInt(), group);
    QCOMPARE(running.count(), 2);

    const std::vector<int> ids = store.groupRuns(group);
    QCOMPARE(ids.size(), std::size_t(1));
    const RunRecord *r = store.run(ids[0]);
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->totalSteps, qint64(40));
    QVERIFY(r->deviceMemoryMB > 0);
    QCOMPARE(r->steps.size(), std::size_t(40));
    for (std::size_t i = 0; i < r->steps.size(); ++i)
        QCOMPARE(r->steps[i].step, std::int64_t(i + 1));
    // 512 samples / batch 32 = 16 steps an epoch: two whole epochs, then the tail's.
    QVERIFY(r->epochs.size() >= 2);
    QVERIFY(r->epochs[0].test_accuracy >= 0 && r->epochs[0].test_accuracy <= 1);
    QVERIFY(!r->events.empty());
    QVERIFY(r->events.front().time.isValid());
    QVERIFY(r->summary.has_value());
    QCOMPARE(r->summary->steps, std::int64_t(40));
    QVERIFY(!r->summary->stopped);
    QVERIFY(r->context.has_value());
    QCOMPARE(r->context->input, (Shape{{32, 32, 3}}));
    QCOMPARE(r->context->classes, 10);
    QCOMPARE(r->context->environment.backend, mixlab::BackendKind::Cpu);
    QVERIFY(r->started.isValid() && r->ended.isValid() && r->ended >= r->started);
    QVERIFY(std::isfinite(r->steps.back().loss));
}

void TestWorker::metricsAreBatched()
{
    RunStore store;
    RunController controller(&store);
    QSignalSpy appended(&store, &RunStore::stepsAppended);
    QElapsedTimer clock;
    clock.start();
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 300)});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const double seconds = double(clock.elapsed()) / 1000.0;
    const RunRecord *r = store.run(store.groupRuns(group).at(0));
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(300));
    // Each appended batch is one queued emission: at most 20 a second plus the final
    // flush (and one for rounding at the interval's edge).
    const int batches = int(appended.count());
    QVERIFY2(batches >= 1, "no metrics arrived");
    QVERIFY2(batches <= int(seconds * TrainingWorker::k_maxEmitHz) + 2,
             qPrintable(QStringLiteral("%1 batches in %2 s").arg(batches).arg(seconds)));
    // Steps faster than the interval share batches: where at least four fit in one on
    // average (about a second for the 300 on an idle machine, two under AddressSanitizer),
    // a batch holds two steps or more on average; one batch a step is no batching at all.
    // (When the CPU is starved each step can take longer than the 50 ms interval, and then
    // one batch a step is right; the rate bound above still holds.)
    const double interval = 1.0 / TrainingWorker::k_maxEmitHz;
    if (seconds / 300 < interval / 4)
        QVERIFY2(batches * 2 <= 300,
                 qPrintable(
                     QStringLiteral("%1 batches for 300 steps in %2 s").arg(batches).arg(seconds)));
}

void TestWorker::compareRunsInLockstep()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(
        tinyMlp(), {cpuConfig(Policy::FP32, 60), cpuConfig(Policy::MixedFP16, 60)});
    const std::vector<int> ids = store.groupRuns(group);
    QCOMPARE(ids.size(), std::size_t(2));
    // Whenever the second run's steps arrive, the first run's part of the batch has just
    // been applied too. In lockstep they stay within the trainer's reporting lag (4
    // steps) plus one; one run after the other would leave them 60 apart.
    int maxGap = 0;
    connect(&store, &RunStore::stepsAppended, this, [&](int id, int) {
        if (id != ids[1]) return;
        const int gap = int(store.run(ids[0])->steps.size()) - int(store.run(ids[1])->steps.size());
        maxGap = std::max(maxGap, std::abs(gap));
    });
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    for (int id : ids) {
        const RunRecord *r = store.run(id);
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QCOMPARE(r->steps.size(), std::size_t(60));
        QCOMPARE(r->group, group);
        QCOMPARE(r->summary->steps, std::int64_t(60));
    }
    QCOMPARE(store.run(ids[0])->config.policy, Policy::FP32);
    QCOMPARE(store.run(ids[1])->config.policy, Policy::MixedFP16);
    QVERIFY2(maxGap <= 6, qPrintable(QStringLiteral("runs drifted %1 steps apart").arg(maxGap)));
    // Same data order and initial weights: the first steps' losses agree to fp16's
    // resolution (activations rounded to 11 significant bits: a few 1e-3 relative).
    const float a = store.run(ids[0])->steps[0].loss, b = store.run(ids[1])->steps[0].loss;
    QVERIFY2(std::abs(a - b) <= 1e-2f + 1e-2f * std::abs(a),
             qPrintable(QStringLiteral("%1 vs %2").arg(a).arg(b)));
}

void TestWorker::compareIsProfiled()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(
        tinyMlp(), {cpuConfig(Policy::FP32, 12), cpuConfig(Policy::MixedFP16, 12)});
    const std::vector<int> ids = store.groupRuns(group);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    int profilingLines = 0;
    for (int id : ids) {
        const RunRecord *r = store.run(id);
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QVERIFY2(r->profile.has_value(), qPrintable(r->name));
        const mixlab::StepProfile &p = *r->profile;
        // k_profileSteps, fewer when the run's steps are so slow (a loaded machine) that
        // they would not fit the pass's time budget: the engine's rule, from the summary.
        mixlab::RunGroupOptions budget;
        budget.profile_steps = TrainingWorker::k_profileSteps;
        budget.profile_seconds = TrainingWorker::k_profileSeconds;
        QVERIFY(r->summary.has_value());
        QCOMPARE(p.steps, mixlab::profile_steps_for(*r->summary, budget));
        // The span is the first to the last phase event; the phases are the consecutive
        // gaps between them, so they add up to it but for rounding of the per-step means.
        double sum = 0;
        for (double v : p.phase_ms) {
            QVERIFY(v >= 0);
            sum += v;
        }
        QVERIFY(p.device_ms > 0);
        QVERIFY2(std::abs(sum - p.device_ms) <= 1e-6 + 1e-6 * p.device_ms,
                 qPrintable(QStringLiteral("phases %1 vs span %2").arg(sum).arg(p.device_ms)));
        QVERIFY(p.step_ms > 0 && p.wall_ms > 0);
        QVERIFY(p.gpu_busy_fraction > 0 && p.gpu_busy_fraction <= 1);
        QVERIFY(!p.layers.empty());
        QVERIFY(std::any_of(p.layers.begin(), p.layers.end(),
                            [](const mixlab::LayerTime &l) { return l.is_gemm && l.flops > 0; }));
        // The profiling pass's 2 x 10 extra steps stay out of the run's metrics and summary.
        QCOMPARE(r->steps.size(), std::size_t(12));
        QCOMPARE(r->steps.back().step, std::int64_t(12));
        QCOMPARE(r->summary->steps, std::int64_t(12));
        for (const TimedEvent &e : r->events)
            if (QString::fromStdString(e.event.message)
                    .startsWith(QStringLiteral("profiling pass"))) {
                ++profilingLines;
                QVERIFY(
                    QString::fromStdString(e.event.message).contains(QStringLiteral("mixed_fp16")));
            }
    }
    QCOMPARE(profilingLines, 1); // one line for the group
}

void TestWorker::stopDuringProfiling()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(
        // fp32 thrice: the CPU backend's emulated fp16 rounding would only make it slower.
        tinyMlp(),
        {cpuConfig(Policy::FP32, 6), cpuConfig(Policy::FP32, 6), cpuConfig(Policy::FP32, 6)});
    const std::vector<int> ids = store.groupRuns(group);
    // Stop as soon as the first profile lands: the worker is profiling the next run.
    connect(&store, &RunStore::runChanged, this, [&](int id) {
        if (id == ids[0] && store.run(id)->profile) controller.stop();
    });
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    QVERIFY(store.run(ids[0])->profile.has_value());
    for (int id : ids) {
        const RunRecord *r = store.run(id);
        // Training had finished: a stop during the profiling pass does not undo that.
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QCOMPARE(r->steps.size(), std::size_t(6));
    }
    // The next job still runs to its end.
    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 6)});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(next).at(0));
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QVERIFY(r->profile.has_value());
}

void TestWorker::stopMidRun()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(
        tinyMlp(), {cpuConfig(Policy::FP32, 100000), cpuConfig(Policy::MixedFP16, 100000)});
    const std::vector<int> ids = store.groupRuns(group);
    QTRY_VERIFY_WITH_TIMEOUT(store.run(ids[1])->steps.size() >= 10, k_timeoutMs);
    controller.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    for (int id : ids) {
        const RunRecord *r = store.run(id);
        QCOMPARE(r->status, RunRecord::Status::Stopped);
        QVERIFY(r->summary && r->summary->stopped);
        QVERIFY(r->steps.size() >= 10 && r->steps.size() < 100000);
        QCOMPARE(std::int64_t(r->steps.size()), r->summary->steps);
        QVERIFY(!r->profile.has_value()); // no profiling pass after a stop
    }
    // The stop belonged to that job: the next one runs to its end.
    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 30)});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(next).at(0));
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(30));
}

void TestWorker::stopBeforeJobBegins()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 100000)});
    controller.stop(); // most likely before the worker has picked the job up
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(group).at(0));
    QCOMPARE(r->status, RunRecord::Status::Stopped);
    QVERIFY(r->steps.size() < 100000);
}

void TestWorker::failingJobs_data()
{
    QTest::addColumn<RunConfig>("config");
    QTest::addColumn<QString>("expected"); // part of the message

    RunConfig missing = cpuConfig(Policy::FP32, 10);
    missing.dataset.name = "/nonexistent/mixlab-data-folder";
    QTest::newRow("dataset folder missing")
        << missing << QStringLiteral("/nonexistent/mixlab-data-folder");

    RunConfig device = cpuConfig(Policy::MixedBF16, 10);
    if (!cuda_backend_available()) {
        device.device = DeviceChoice::CUDA; // no CUDA here: opening it throws
        // Every reason (no CUDA in this build, no module, no driver, no GPU) ends with the
        // way out.
        QTest::newRow("device unavailable") << device << QStringLiteral("--device cpu");
    }
    RunConfig batch = cpuConfig(Policy::FP32, 10);
    batch.batch_size = 4096; // more than the 512 training samples
    QTest::newRow("batch too large") << batch << QStringLiteral("4096");
}

void TestWorker::failingJobs()
{
    QFETCH(RunConfig, config);
    QFETCH(QString, expected);
    RunStore store;
    RunController controller(&store);
    RunConfig second = config;
    second.policy = Policy::FP32;
    const int group = controller.start(tinyMlp(), {config, second});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    for (int id : store.groupRuns(group)) {
        const RunRecord *r = store.run(id);
        QCOMPARE(r->status, RunRecord::Status::Failed);
        QVERIFY2(r->failure.contains(expected), qPrintable(r->failure));
        // The reason is also an error event, as the CLI records it in its logs.
        QVERIFY(!r->events.empty());
        QCOMPARE(r->events.back().event.kind, RunEvent::Kind::Error);
        QVERIFY(!r->summary.has_value());
    }
    // The worker thread survived: the next job trains.
    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 20)});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(next).at(0));
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(20));
}

void TestWorker::stopAndWaitThenStartAgain()
{
    RunStore store;
    RunController controller(&store);
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 100000)});
    const int id = store.groupRuns(group).at(0);
    QTRY_VERIFY_WITH_TIMEOUT(store.run(id)->steps.size() >= 5, k_timeoutMs);
    QSignalSpy finished(&controller, &RunController::jobFinished);
    controller.stopAndWait();
    // Returned with everything delivered: no event loop turn needed.
    QVERIFY(!controller.isRunning());
    QCOMPARE(finished.count(), 1);
    QCOMPARE(store.run(id)->status, RunRecord::Status::Stopped);
    QVERIFY(store.run(id)->summary.has_value());

    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 20)});
    QVERIFY(next > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    QCOMPARE(store.run(store.groupRuns(next).at(0))->status, RunRecord::Status::Finished);
}

void TestWorker::destroyMidRunJoins()
{
    RunStore store;
    auto *controller = new RunController(&store);
    const int group = controller->start(
        tinyMlp(), {cpuConfig(Policy::FP32, 100000), cpuConfig(Policy::MixedFP16, 100000)});
    const std::vector<int> ids = store.groupRuns(group);
    QTRY_VERIFY_WITH_TIMEOUT(store.run(ids[0])->steps.size() >= 5, k_timeoutMs);
    QElapsedTimer clock;
    clock.start();
    delete controller; // stops, joins the thread, delivers the last signals
    QVERIFY(clock.elapsed() < k_timeoutMs);
    for (int id : ids) {
        QVERIFY(isOver(store.run(id)));
        QCOMPARE(store.run(id)->status, RunRecord::Status::Stopped);
    }
    // Nothing is left queued for the dead controller or its worker.
    QCoreApplication::processEvents();
    QCOMPARE(store.run(ids[0])->status, RunRecord::Status::Stopped);
}

void TestWorker::storeGoneBeforeController()
{
    // A window may destroy its children in any order: the controller must not write
    // into a store that is gone.
    auto *store = new RunStore;
    RunController controller(store);
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 100000)});
    const int id = store->groupRuns(group).at(0);
    QTRY_VERIFY_WITH_TIMEOUT(store->run(id)->steps.size() >= 5, k_timeoutMs);
    delete store;
    controller.stopAndWait();
    QVERIFY(!controller.isRunning());
    QCOMPARE(controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 10)}), 0); // no store: refused
}

void TestWorker::searchRunsOnTheWorkerThread()
{
    // Every trial runs on the controller's worker thread (the one training uses, named
    // "mixlab-training"), never on the GUI thread; the results come back in order.
    RunStore store;
    RunController controller(&store);
    std::mutex mutex;
    std::set<QThread *> threads;
    QStringList names;
    controller.setSearchTrialForTesting([&](Policy, int batch) {
        std::lock_guard lock(mutex);
        threads.insert(QThread::currentThread());
        names << QThread::currentThread()->objectName();
        return fittingTrial(batch);
    });
    QSignalSpy searching(&controller, &RunController::searchingChanged);
    QSignalSpy trials(&controller, &RunController::searchTrialDone);
    QSignalSpy done(&controller, &RunController::searchPolicyDone);
    QSignalSpy finished(&controller, &RunController::searchFinished);
    QVERIFY(controller.startSearch(fakeSearch({Policy::FP32, Policy::MixedFP16}, 8, 64)));
    QVERIFY(controller.isSearching() && controller.isBusy() && !controller.isRunning());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.at(0).at(0).toBool(), false);
    QVERIFY(!controller.isBusy());
    QCOMPARE(searching.count(), 2);
    QCOMPARE(searching.at(1).at(0).toBool(), false);

    QCOMPARE(trials.count(), 8); // 8, 16, 32, 64 under each policy
    for (int i = 0; i < trials.count(); ++i) {
        QCOMPARE(trials.at(i).at(0).toInt(), i / 4);
        QCOMPARE(trials.at(i).at(1).value<BatchTrial>().batch, 8 << (i % 4));
    }
    QCOMPARE(done.count(), 2);
    QCOMPARE(done.at(1).at(1).value<MaxBatchResult>().largest_fit, 64);
    QCOMPARE(threads.size(), std::size_t(1));
    QVERIFY(*threads.begin() != QThread::currentThread());
    QCOMPARE(names.front(), QStringLiteral("mixlab-training"));
}

void TestWorker::searchStopsBetweenTrials()
{
    // The worker on this thread, so Stop lands at an exact point: pressed during the trial
    // at batch 4, that trial finishes and is reported, no other trial starts, the second
    // policy never runs, and the search ends stopped. The same worker then runs a search.
    MaxBatchWorker worker;
    worker.setTrialForTesting([&worker](Policy, int batch) {
        if (batch == 4) worker.requestStop();
        return fittingTrial(batch);
    });
    QSignalSpy started(&worker, &MaxBatchWorker::trialStarted);
    QSignalSpy trials(&worker, &MaxBatchWorker::trialDone);
    QSignalSpy policies(&worker, &MaxBatchWorker::policyStarted);
    QSignalSpy done(&worker, &MaxBatchWorker::policyDone);
    QSignalSpy finished(&worker, &MaxBatchWorker::searchFinished);
    worker.resetStop();
    worker.runSearch(fakeSearch({Policy::FP32, Policy::MixedFP16}, 1, 1024));
    QCOMPARE(started.count(), 3); // 1, 2, 4
    QCOMPARE(trials.count(), 3);
    QCOMPARE(trials.back().at(1).value<BatchTrial>().batch, 4);
    QCOMPARE(policies.count(), 1);
    QCOMPARE(done.count(), 0);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toBool(), true);

    // A fresh stop for the next search: the old request does not stop it.
    worker.setTrialForTesting([](Policy, int batch) { return fittingTrial(batch); });
    finished.clear();
    done.clear();
    worker.resetStop();
    worker.runSearch(fakeSearch({Policy::FP32}, 8, 32));
    QCOMPARE(done.count(), 1);
    QCOMPARE(done.at(0).at(1).value<MaxBatchResult>().largest_fit, 32);
    QCOMPARE(finished.at(0).at(0).toBool(), false);
}

void TestWorker::searchStoppedBeforeItBegins()
{
    // A real CPU search stopped before it began: it ends stopped before opening the device
    // (RunGroup::prepare checks first), loading the data or trying a batch.
    MaxBatchWorker worker;
    QSignalSpy prepared(&worker, &MaxBatchWorker::searchPrepared);
    QSignalSpy started(&worker, &MaxBatchWorker::trialStarted);
    QSignalSpy failed(&worker, &MaxBatchWorker::searchFailed);
    QSignalSpy finished(&worker, &MaxBatchWorker::searchFinished);
    worker.resetStop();
    worker.requestStop();
    worker.runSearch(fakeSearch({Policy::FP32}, 8, 64));
    QCOMPARE(prepared.count(), 0);
    QCOMPARE(started.count(), 0);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toBool(), true);

    // Unstopped, the same real search opens the device and the data sized for it (the
    // engine's size_synthetic_for_search: 4x the limit of synthetic samples) and finds the
    // limit.
    QSignalSpy done(&worker, &MaxBatchWorker::policyDone);
    SearchJob search = fakeSearch({Policy::FP32}, 8, 64);
    search.options.warmup_steps = 1;
    search.options.timed_steps = 1;
    worker.resetStop();
    worker.runSearch(search);
    QCOMPARE(prepared.count(), 1);
    QCOMPARE(prepared.at(0).at(0).value<MaxBatchContext>().trainSamples, qint64(4 * 64));
    QCOMPARE(done.count(), 1);
    QCOMPARE(done.at(0).at(1).value<MaxBatchResult>().largest_fit, 64);
}

void TestWorker::trainingAndSearchTakeTurns()
{
    // One job at a time on the one worker thread: a search is refused while training runs
    // and training while a search runs; each starts once the other has ended.
    RunStore store;
    RunController controller(&store);
    controller.setSearchTrialForTesting([](Policy, int batch) { return fittingTrial(batch, 20); });
    QSignalSpy searching(&controller, &RunController::searchingChanged);
    const int group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 100000)});
    QVERIFY(group > 0);
    QVERIFY(!controller.startSearch(fakeSearch({Policy::FP32}, 1, 1 << 20)));
    QVERIFY(controller.isRunning() && !controller.isSearching());
    QCOMPARE(searching.count(), 0);
    controller.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isBusy(), k_timeoutMs);
    QCOMPARE(store.run(store.groupRuns(group).at(0))->status, RunRecord::Status::Stopped);

    QSignalSpy trials(&controller, &RunController::searchTrialDone);
    QSignalSpy finished(&controller, &RunController::searchFinished);
    QVERIFY(controller.startSearch(fakeSearch({Policy::FP32}, 1, 1 << 20)));
    QCOMPARE(controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 20)}), 0);
    QCOMPARE(store.runIds().size(), std::size_t(1)); // the refused job left no run behind
    QVERIFY(!controller.startSearch(fakeSearch({Policy::FP32}, 1, 8))); // nor a second search
    QTRY_VERIFY_WITH_TIMEOUT(trials.count() >= 2, k_timeoutMs);
    controller.stop(); // the search's stop, through its own token
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QVERIFY(!controller.isBusy());

    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 20)});
    QVERIFY(next > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    QCOMPARE(store.run(store.groupRuns(next).at(0))->status, RunRecord::Status::Finished);
}

void TestWorker::stopAndWaitMidSearch()
{
    // What closing the window does mid-search: stopAndWait returns with the search ended
    // and everything it sent delivered (no event-loop turn needed), and a later search
    // starts the thread again.
    RunStore store;
    RunController controller(&store);
    std::atomic<int> trialsRun{0};
    controller.setSearchTrialForTesting([&trialsRun](Policy, int batch) {
        ++trialsRun;
        return fittingTrial(batch, 20);
    });
    QSignalSpy trials(&controller, &RunController::searchTrialDone);
    QSignalSpy searching(&controller, &RunController::searchingChanged);
    QSignalSpy finished(&controller, &RunController::searchFinished);
    QVERIFY(controller.startSearch(fakeSearch({Policy::FP32}, 1, 1 << 20)));
    QTRY_VERIFY_WITH_TIMEOUT(trials.count() >= 2, k_timeoutMs);
    controller.stopAndWait();
    QVERIFY(!controller.isBusy());
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(0).toBool(), true);
    QCOMPARE(searching.back().at(0).toBool(), false);
    QCOMPARE(trials.count(), trialsRun.load()); // every trial run was delivered
    const int ran = trialsRun.load();
    QCoreApplication::processEvents();
    QCOMPARE(trialsRun.load(), ran); // and none runs after

    controller.setSearchTrialForTesting([](Policy, int batch) { return fittingTrial(batch); });
    QVERIFY(controller.startSearch(fakeSearch({Policy::FP32}, 8, 16)));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, k_timeoutMs);
    QCOMPARE(finished.at(1).at(0).toBool(), false);
}

QTEST_GUILESS_MAIN(TestWorker)
#include "tst_worker.moc"
