// Faults during a run, seen from the app's worker: out of memory at setup and mid-run
// (the CPU backend's test hook, core/src/backends/fault_injection.h), NaN/Inf losses with the
// stop-or-continue setting, and Stop pressed at every phase of a job. Each ends the
// affected run with a message naming what happened, leaves the other runs, the store and
// the exported logs intact, and the worker runs the next job.
#include "files/logexport.h"
#include "runs/maxbatchdialog.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"
#include "runs/trainingworker.h"

#include "mixlab/backend.h"

#include "env_scope.h"
#include "one_omp_thread_main.h"

#include <QCheckBox>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QApplication>
#include <QtTest>

#include <unistd.h>

#include <chrono>
#include <cstring>

#include "test_models.h"

using namespace mixlab;
using mixlab::test::EnvScope;

namespace {

// Generous: a loaded 2-core CI machine; the runs themselves take well under a second.
constexpr int k_timeoutMs = 60000;
// How soon a stopped job must hand the worker back. A step of the tiny model takes well
// under a millisecond and the longest thing left running after a Stop (one step, the data
// load of a few hundred samples) a few milliseconds: 2 s leaves room for a starved CPU
// while still catching a stop that waits for an epoch, an evaluation or the profiling pass.
constexpr qint64 k_promptMs = 2000;

ModelSpec tinyMlp() { return test::tiny_mlp({.hidden = 32}); }

RunConfig cpuConfig(Policy policy, std::int64_t steps, int batch = 32)
{
    RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 512;
    c.dataset.synthetic_test = 128;
    c.policy = policy;
    c.batch_size = batch;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.seed = 11;
    return c;
}

bool hasEvent(const RunRecord &r, RunEvent::Kind kind, const QString &part, std::int64_t step = -1)
{
    for (const TimedEvent &e : r.events)
        if (e.event.kind == kind && QString::fromStdString(e.event.message).contains(part) &&
            (step < 0 || e.event.step == step))
            return true;
    return false;
}

// The next job after a fault trains to its end: the worker thread is fine.
void nextJobRuns(RunController &controller, RunStore &store)
{
    const int next = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 20)});
    QVERIFY(next > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(next).at(0));
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(20));
}

} // namespace

class TestRunFaults : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void outOfMemoryAtSetup();
    void outOfMemoryMidCompare();
    void nonFiniteLoss_data();
    void nonFiniteLoss();
    void stopOnNanCheckboxBindsConfig();
    void stopAtEveryPhase_data();
    void stopAtEveryPhase();
    void maxBatchSearchUnderLimitAndStop();
};

void TestRunFaults::init()
{
    qRegisterMetaType<MetricsBatch>();
    qRegisterMetaType<mixlab::RunSummary>();
    qRegisterMetaType<RunContext>();
    qRegisterMetaType<mixlab::StepProfile>();
}

void TestRunFaults::cleanup()
{
    qunsetenv("MIXLAB_FAULT_OOM_AFTER_BYTES");
    qunsetenv("MIXLAB_FAULT_OOM_AT_STEP");
}

// A limit the synthetic data fits in (512 + 128 samples of 3 KB: ~2 MB) but not a run at
// batch 256 (its input alone is 3 MB): the run fails while set up, with the batch named
// and the advice to lower it or use mixed precision; the next job (no limit) trains.
void TestRunFaults::outOfMemoryAtSetup()
{
    RunStore store;
    RunController controller(&store);
    int group = 0;
    {
        EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", 2'500'000);
        group = controller.start(tinyMlp(), {cpuConfig(Policy::FP32, 10, 256)});
        QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    }
    const RunRecord *r = store.run(store.groupRuns(group).at(0));
    QCOMPARE(r->status, RunRecord::Status::Failed);
    for (const char *part : {"out of memory setting up", "batch size 256", "Lower the batch size",
                             "mixed-precision policy"})
        QVERIFY2(r->failure.contains(QLatin1String(part)), qPrintable(r->failure));
    QVERIFY(hasEvent(*r, RunEvent::Kind::Error, QStringLiteral("batch size 256")));
    QVERIFY(r->steps.empty());
    nextJobRuns(controller, store);
}

// Out of memory at the 10th step of the second run of a compare (the hook counts the
// backend's training steps: in lockstep the second run's k-th step is the 2k-th): that
// run fails with the step named and keeps its first 9 steps; the first run trains to its
// end and is profiled; both export as a compare log that carries the error (the CLI's
// log of the same compare is the same: tst_cli_agreement).
void TestRunFaults::outOfMemoryMidCompare()
{
    RunStore store;
    RunController controller(&store);
    int group = 0;
    {
        EnvScope env("MIXLAB_FAULT_OOM_AT_STEP", 20);
        group = controller.start(tinyMlp(),
                                 {cpuConfig(Policy::FP32, 40), cpuConfig(Policy::MixedFP16, 40)});
        QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    }
    const std::vector<int> ids = store.groupRuns(group);
    const RunRecord *ok = store.run(ids[0]);
    const RunRecord *failed = store.run(ids[1]);
    QCOMPARE(ok->status, RunRecord::Status::Finished);
    QCOMPARE(ok->steps.size(), std::size_t(40));
    QVERIFY(ok->summary.has_value());
    QVERIFY(ok->profile.has_value()); // the survivor is still profiled
    QCOMPARE(failed->status, RunRecord::Status::Failed);
    QVERIFY2(failed->failure.contains(QStringLiteral("out of memory at step 10")),
             qPrintable(failed->failure));
    QVERIFY2(failed->failure.contains(QStringLiteral("batch size 32")),
             qPrintable(failed->failure));
    QVERIFY(
        hasEvent(*failed, RunEvent::Kind::Error, QStringLiteral("out of memory at step 10"), 10));
    // The steps trained before the fault all reached the store, in order.
    QCOMPARE(failed->steps.size(), std::size_t(9));
    for (std::size_t i = 0; i < failed->steps.size(); ++i)
        QCOMPARE(failed->steps[i].step, std::int64_t(i + 1));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("compare.json"));
    QString error;
    QVERIFY2(exportLogs(store, ids, path, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray json = f.readAll();
    QVERIFY(json.contains("out of memory at step 10"));

    nextJobRuns(controller, store);
}

void TestRunFaults::nonFiniteLoss_data()
{
    QTest::addColumn<bool>("stopOnNan");
    QTest::newRow("stop") << true;
    QTest::newRow("continue") << false;
}

// A learning rate that blows the weights up within a few steps. Stop: the run ends by
// itself with an error event naming the first non-finite step. Continue: one warning and
// the run trains all its steps.
void TestRunFaults::nonFiniteLoss()
{
    QFETCH(bool, stopOnNan);
    RunStore store;
    RunController controller(&store);
    RunConfig c = cpuConfig(Policy::FP32, 60);
    c.optimizer.lr = 1e30f;
    c.stop_on_non_finite_loss = stopOnNan;
    const int group = controller.start(tinyMlp(), {c});
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(group).at(0));
    std::int64_t firstBad = 0;
    for (const StepMetrics &m : r->steps)
        if (!std::isfinite(m.loss)) {
            firstBad = m.step;
            break;
        }
    QVERIFY2(firstBad > 0, "the loss never went non-finite");
    const QString atStep = QStringLiteral("at step %1").arg(firstBad);
    QVERIFY(r->summary.has_value());
    if (stopOnNan) {
        QCOMPARE(r->status, RunRecord::Status::Stopped);
        QVERIFY2(QString::fromStdString(r->summary->halted).contains(atStep),
                 r->summary->halted.c_str());
        QVERIFY(hasEvent(*r, RunEvent::Kind::Error, atStep, firstBad));
        QVERIFY(r->steps.size() < 60);
    } else {
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QVERIFY(r->summary->halted.empty());
        QVERIFY(hasEvent(*r, RunEvent::Kind::Warning, atStep, firstBad));
        QVERIFY(!hasEvent(*r, RunEvent::Kind::Error, QString()));
        QCOMPARE(r->steps.size(), std::size_t(60));
    }
    nextJobRuns(controller, store);
}

// The Run panel's checkbox is the config's stop_on_non_finite_loss, both ways.
void TestRunFaults::stopOnNanCheckboxBindsConfig()
{
    RunPanel panel;
    auto *check = panel.findChild<QCheckBox *>(QStringLiteral("stopOnNanCheck"));
    QVERIFY(check);
    RunConfig c = panel.config();
    c.stop_on_non_finite_loss = true;
    panel.setConfig(c);
    QVERIFY(check->isChecked());
    QSignalSpy changed(&panel, &RunPanel::configChanged);
    check->setChecked(false);
    QCOMPARE(changed.count(), 1);
    QVERIFY(!panel.config().stop_on_non_finite_loss);
    check->setChecked(true);
    QVERIFY(panel.config().stop_on_non_finite_loss);
    // Saved with the config: the run format carries it.
    QVERIFY(parse_run_config(run_config_to_json(panel.config())).stop_on_non_finite_loss);
}

void TestRunFaults::stopAtEveryPhase_data()
{
    // Where Stop is pressed: a worker phase (with the run being planned or profiled), or a
    // point the trainer reports ("step" n of run r, or the start "event" at step 0).
    QTest::addColumn<QString>("where");
    QTest::addColumn<int>("runIndex");
    QTest::addColumn<int>("step");
    QTest::addColumn<bool>("trainingDone"); // the stop comes after training finished
    QTest::newRow("opening the device") << "OpeningDevice" << -1 << 0 << false;
    QTest::newRow("loading the dataset") << "LoadingData" << -1 << 0 << false;
    QTest::newRow("building the graph") << "BuildingGraph" << -1 << 0 << false;
    QTest::newRow("planning the first run") << "Planning" << 0 << 0 << false;
    QTest::newRow("between the runs' setups") << "Planning" << 1 << 0 << false;
    QTest::newRow("first step") << "event" << 0 << 0 << false;
    QTest::newRow("mid-epoch") << "step" << 0 << 5 << false;
    // 512 samples / batch 32: step 16 ends epoch 1 and is reported just before the
    // evaluation begins (run 0's comes first in lockstep; run 1 is then at step 15).
    QTest::newRow("evaluation") << "step" << 0 << 16 << false;
    QTest::newRow("between compare runs' steps") << "step" << 0 << 7 << false;
    // As run 0's pass begins: it completes (too short to cut), run 1's is not taken.
    QTest::newRow("profiling pass") << "Profiling" << 0 << 0 << true;
}

// The worker on this thread, so the hooks press Stop at the exact point: runJob must
// return within k_promptMs of it, every run ends stopped (or, when the stop comes during
// the profiling pass, stays finished), and the same worker runs the next job.
void TestRunFaults::stopAtEveryPhase()
{
    QFETCH(QString, where);
    QFETCH(int, runIndex);
    QFETCH(int, step);
    QFETCH(bool, trainingDone);

    TrainingWorker worker;
    QElapsedTimer sinceStop;
    auto pressStop = [&] {
        if (sinceStop.isValid()) return;
        sinceStop.start();
        worker.requestStop();
    };
    connect(&worker, &TrainingWorker::phaseStarted, this,
            [&](TrainingWorker::Phase phase, int run) {
                const QString name = QString::fromLatin1(
                    QMetaEnum::fromType<TrainingWorker::Phase>().valueToKey(int(phase)));
                if (name == where && run == runIndex) pressStop();
            });
    worker.setSinkHookForTesting([&](int run, const char *what, std::int64_t at) {
        if (where == QLatin1String(what) && run == runIndex && at == step) pressStop();
    });
    QSignalSpy finished(&worker, &TrainingWorker::runFinished);
    QSignalSpy failed(&worker, &TrainingWorker::runFailed);
    QSignalSpy metrics(&worker, &TrainingWorker::metrics);
    QSignalSpy profiled(&worker, &TrainingWorker::runProfiled);

    TrainingJob job;
    job.model = tinyMlp();
    // Long enough that nothing ends by itself before the stop (a few seconds of steps),
    // except for the profiling row, whose stop must come after training.
    const std::int64_t steps = trainingDone ? 20 : 100000;
    job.runs = {cpuConfig(Policy::FP32, steps), cpuConfig(Policy::FP32, steps)};
    job.runIds = {1, 2};
    worker.resetStop();
    worker.runJob(job);
    QVERIFY2(sinceStop.isValid(), "the stop point was never reached");
    const qint64 ms = sinceStop.elapsed();
    QVERIFY2(ms < k_promptMs, qPrintable(QStringLiteral("returned %1 ms after the stop").arg(ms)));

    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.count(), 2);
    std::int64_t trained[2] = {0, 0};
    int epochs = 0;
    for (const QList<QVariant> &args : metrics)
        for (const MetricsBatch::PerRun &r : args.at(0).value<MetricsBatch>().runs) {
            trained[r.runId - 1] += std::int64_t(r.steps.size());
            epochs += int(r.epochs.size());
        }
    for (const QList<QVariant> &args : finished) {
        const bool stopped = args.at(2).toBool();
        const auto summary = args.at(1).value<mixlab::RunSummary>();
        QCOMPARE(stopped, !trainingDone);
        QCOMPARE(summary.steps, trained[args.at(0).toInt() - 1]);
    }
    if (where == QLatin1String("step") && step == 16)
        QCOMPARE(epochs, 0); // the evaluation of epoch 1 was cut short, not reported
    if (trainingDone) {
        QCOMPARE(profiled.count(), 1); // run 0's profile is kept, run 1's was not taken
    } else {
        QCOMPARE(profiled.count(), 0);
        // In lockstep no run gets more than one step ahead of the other.
        QVERIFY(std::abs(trained[0] - trained[1]) <= 1);
    }

    // The same worker runs the next job to its end.
    worker.setSinkHookForTesting({});
    QObject::disconnect(&worker, &TrainingWorker::phaseStarted, this, nullptr);
    finished.clear();
    TrainingJob next;
    next.model = tinyMlp();
    next.runs = {cpuConfig(Policy::FP32, 12)};
    next.runIds = {3};
    worker.resetStop();
    worker.runJob(next);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.at(0).at(2).toBool(), false);
    QCOMPARE(finished.at(0).at(1).value<mixlab::RunSummary>().steps, std::int64_t(12));
}

// The largest-batch search with real CPU trials under a memory limit (the hook): it finds
// a largest batch below the limit, its first failure being the backend's out-of-memory
// message; then a second search, stopped as its first trial lands, ends within k_promptMs.
void TestRunFaults::maxBatchSearchUnderLimitAndStop()
{
    // The search makes synthetic data of 4x the search limit (size_synthetic_for_search):
    // 4096 + 256 samples of 3 KB (13.4 MB with labels and the test order); 7.5 MB more
    // holds batch 256 (its input is 3.1 MB, 6.3 MB with its gradient, parameters and state
    // 0.6 MB) but not batch 1024 (12.6 MB of input alone).
    EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", 13'374'720 + 7'500'000);
    MaxBatchJob job;
    job.model = test::tiny_mlp({.hidden = 16});
    job.config.dataset.name = "synthetic";
    job.config.device = DeviceChoice::CPU;
    job.policies = {Policy::FP32};
    job.device.backend = mixlab::BackendKind::Cpu;
    RunStore store;
    RunController controller(&store); // the app's worker thread, where the search runs
    MaxBatchDialog d(&controller);
    d.setJob(job);
    d.setSearchRange(32, 1024);
    d.setTrialSteps(1, 1);
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.back().front().toBool(), false);
    const MaxBatchResult &result = d.policyStates().at(0).result;
    QVERIFY2(result.largest_fit >= 256 && result.largest_fit < 1024,
             qPrintable(QStringLiteral("largest fit %1: %2 %3")
                            .arg(result.largest_fit)
                            .arg(d.errorText(), d.summaryText())));
    QVERIFY(result.failure_out_of_memory);
    QVERIFY2(QString::fromStdString(result.failure_reason)
                 .contains(QStringLiteral("out of device memory")),
             result.failure_reason.c_str());

    QElapsedTimer sinceStop;
    connect(&d, &MaxBatchDialog::trialAdded, &d, [&] {
        if (sinceStop.isValid()) return;
        sinceStop.start();
        d.stop();
    });
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, k_timeoutMs);
    QCOMPARE(finished.back().front().toBool(), true);
    QVERIFY2(sinceStop.elapsed() < k_promptMs, qPrintable(QString::number(sinceStop.elapsed())));
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestRunFaults, QApplication)
#include "tst_run_faults.moc"
