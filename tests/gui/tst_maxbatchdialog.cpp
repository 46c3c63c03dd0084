// The "Find largest batch" dialog: a real CPU search draws one sorted curve per policy,
// fills the table and names the largest batch; failures (a stand-in trial that runs out
// of memory) are marked and summarised; errors show in the dialog; Stop, close and
// destruction mid-search end the search on the worker thread without hanging; training
// and a search take turns on that thread, in the dialog and in the main window.
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "runs/maxbatchdialog.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"
#include "common/runcolors.h"

#include "mixlab/error.h"

#include <QAction>
#include <QChart>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QThread>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>

#include "gui_fixtures.h"
#include "test_models.h"

using namespace mixlab;

namespace {

// Generous: a loaded 2-core CI machine; the searches themselves take about a second.
constexpr int k_timeoutMs = 60000;

QString name(Policy p) { return QString::fromStdString(std::string(policy_name(p))); }

// The app's worker thread as MainWindow has it: the dialog's searches run there.
struct Worker {
    RunStore store;
    RunController controller{&store};
};

MaxBatchJob cpuJob(std::vector<Policy> policies)
{
    MaxBatchJob job;
    job.model = test::tiny_mlp({.hidden = 24});
    job.config.dataset.name = "synthetic";
    job.config.device = DeviceChoice::CPU;
    job.config.seed = 11;
    job.policies = std::move(policies);
    job.device.backend = mixlab::BackendKind::Cpu;
    return job;
}

std::vector<QLineSeries *> curves(const MaxBatchDialog &d)
{
    std::vector<QLineSeries *> out;
    for (QAbstractSeries *s : d.chart()->series())
        if (s->type() == QAbstractSeries::SeriesTypeLine)
            out.push_back(static_cast<QLineSeries *>(s));
    return out;
}

std::vector<QScatterSeries *> failureMarks(const MaxBatchDialog &d)
{
    std::vector<QScatterSeries *> out;
    for (QAbstractSeries *s : d.chart()->series())
        if (s->type() == QAbstractSeries::SeriesTypeScatter)
            out.push_back(static_cast<QScatterSeries *>(s));
    return out;
}

// A stand-in device: a batch fits up to a per-policy capacity, above it the trial runs
// out of memory; throughput grows with the batch so the curve has a shape.
mixlab::BatchTrial fakeTrial(const std::map<Policy, int> &capacity, Policy p, int batch)
{
    BatchTrial t;
    t.batch = batch;
    t.fits = batch <= capacity.at(p);
    if (t.fits) {
        t.step_ms = 1.0 + batch / 100.0;
        t.samples_per_s = batch / t.step_ms * 1000.0;
        t.device_bytes = std::int64_t(batch) << 20;
    } else {
        t.out_of_memory = true;
        t.why_not = "out of device memory allocating " + std::to_string(batch) + " MiB";
    }
    return t;
}

} // namespace

class TestMaxBatchDialog : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cpuSearchDrawsCurves();
    void failuresAreMarkedAndSummarised();
    void policyErrorShowsAndOthersRun();
    void setupErrorShows();
    void limitBelowStartIsRefused();
    void blockedJobDoesNotStart();
    void defaultLimitFollowsDevice_data();
    void defaultLimitFollowsDevice();
    void stopRightAwayEnds();
    void stopBetweenTrials();
    void closeMidSearch();
    void destroyMidSearch();
    void menuActionOpensDialog();
    void startWaitsForTraining();
    void windowWaitsForSearch();
    void closingWindowMidSearchStopsAndJoins();
};

void TestMaxBatchDialog::initTestCase()
{
    enterAppTestMode(); // MainWindow's QSettings stay out of $HOME
}

void TestMaxBatchDialog::cpuSearchDrawsCurves()
{
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32, Policy::MixedFP16}));
    d.setSearchRange(8, 64);
    d.setTrialSteps(1, 2);
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    QSignalSpy added(&d, &MaxBatchDialog::trialAdded);
    d.start();
    QVERIFY(d.isRunning());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.front().front().toBool(), false); // not stopped
    QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
    QVERIFY(!d.isRunning());

    // Nothing fails on the CPU below the limit: 8, 16, 32, 64 under each policy.
    const std::vector<int> batches = {8, 16, 32, 64};
    QCOMPARE(added.count(), 8);
    const auto lines = curves(d);
    QCOMPARE(int(lines.size()), 2);
    const Policy policies[] = {Policy::FP32, Policy::MixedFP16};
    for (int i = 0; i < 2; ++i) {
        QCOMPARE(lines[std::size_t(i)]->name(), name(policies[i]));
        QCOMPARE(lines[std::size_t(i)]->pen().color(), policyColor(policies[i]));
        const QList<QPointF> pts = lines[std::size_t(i)]->points();
        QCOMPARE(pts.size(), int(batches.size()));
        for (int k = 0; k < pts.size(); ++k) {
            QCOMPARE(int(pts[k].x()), batches[std::size_t(k)]);
            QVERIFY2(std::isfinite(pts[k].y()) && pts[k].y() > 0,
                     "a fitting batch has a throughput");
        }
        const auto &state = d.policyStates()[std::size_t(i)];
        QVERIFY(state.done);
        QCOMPARE(state.result.largest_fit, 64);
        QVERIFY(state.result.reached_limit);
    }
    for (QScatterSeries *s : failureMarks(d)) QCOMPARE(s->count(), 0);

    QTableWidget *t = d.table();
    QCOMPARE(t->rowCount(), 8);
    for (int r = 0; r < 8; ++r) {
        QCOMPARE(t->item(r, 0)->text(), name(policies[r / 4]));
        QCOMPARE(t->item(r, 1)->text().toInt(), batches[std::size_t(r % 4)]);
        QVERIFY(t->item(r, 3)->text().toDouble() > 0);
        QCOMPARE(t->item(r, 5)->text(), QStringLiteral("fits"));
    }
    const QString summary = d.summaryText();
    QVERIFY2(summary.contains("fp32: largest batch 64, the search limit"), qPrintable(summary));
    QVERIFY2(summary.contains("mixed_fp16: largest batch 64, the search limit"),
             qPrintable(summary));
    QVERIFY2(summary.contains("both fit the search limit 64"), qPrintable(summary));
}

void TestMaxBatchDialog::failuresAreMarkedAndSummarised()
{
    const std::map<Policy, int> capacity = {{Policy::FP32, 100}, {Policy::MixedFP16, 200}};
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32, Policy::MixedFP16}));
    d.setSearchRange(32, 4096);
    w.controller.setSearchTrialForTesting(
        [capacity](Policy p, int batch) { return fakeTrial(capacity, p, batch); });
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    // Drawn at once and in order: after every trial the curve holds it, sorted by batch.
    int unsortedDraws = 0, missingDraws = 0;
    connect(&d, &MaxBatchDialog::trialAdded, &d, [&](int index, int batch) {
        const auto lines = curves(d);
        const auto marks = failureMarks(d);
        const QList<QPointF> pts =
            lines[std::size_t(index)]->points() + marks[std::size_t(index)]->points();
        if (std::none_of(pts.begin(), pts.end(),
                         [batch](const QPointF &p) { return int(p.x()) == batch; }))
            ++missingDraws;
        const QList<QPointF> fit = lines[std::size_t(index)]->points();
        for (int k = 1; k < fit.size(); ++k)
            if (fit[k].x() <= fit[k - 1].x()) ++unsortedDraws;
        // The bisection's failures arrive out of order (128, then 112, then 104): the
        // table lists each policy's trials by batch all the same.
        QTableWidget *t = d.table();
        for (int r = 1; r < t->rowCount(); ++r)
            if (t->item(r, 0)->text() == t->item(r - 1, 0)->text() &&
                t->item(r, 1)->text().toInt() <= t->item(r - 1, 1)->text().toInt())
                ++unsortedDraws;
    });
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
    QCOMPARE(missingDraws, 0);
    QCOMPARE(unsortedDraws, 0);

    const auto lines = curves(d);
    const auto marks = failureMarks(d);
    QCOMPARE(int(lines.size()), 2);
    QCOMPARE(int(marks.size()), 2);
    int rows = 0;
    for (int i = 0; i < 2; ++i) {
        const auto &state = d.policyStates()[std::size_t(i)];
        const int cap = capacity.at(state.policy);
        QVERIFY(state.done);
        // The answer is a batch seen to fit, within the search's 2% of the true capacity
        // (bisection stops there) and on a multiple of 8.
        QVERIFY(state.result.largest_fit <= cap && state.result.largest_fit >= cap * 0.9);
        QVERIFY(state.result.first_failure > cap);
        rows += int(state.trials.size());

        // The bisection tries batches out of order; the curve is sorted all the same.
        const QList<QPointF> pts = lines[std::size_t(i)]->points();
        QVERIFY(pts.size() >= 3);
        for (int k = 1; k < pts.size(); ++k) QVERIFY(pts[k].x() > pts[k - 1].x());
        for (const QPointF &p : pts) QVERIFY(p.x() <= cap);
        // Every failure is a mark on the batch axis at the batch that failed.
        const QList<QPointF> fails = marks[std::size_t(i)]->points();
        QVERIFY(!fails.isEmpty());
        for (const QPointF &p : fails) {
            QVERIFY(p.x() > cap);
            QCOMPARE(p.y(), 0.0);
        }
        QCOMPARE(int(pts.size() + fails.size()), int(state.trials.size()));

        const QString line = QStringLiteral("%1: largest batch %2 (%3: out of memory)")
                                 .arg(name(state.policy))
                                 .arg(state.result.largest_fit)
                                 .arg(state.result.first_failure);
        QVERIFY2(d.summaryText().contains(line), qPrintable(d.summaryText() + "\nwanted: " + line));
    }
    const auto &base = d.policyStates()[0].result, &mixed = d.policyStates()[1].result;
    const QString ratio = QStringLiteral("mixed_fp16 fits %1x the batch of fp32 (%2 vs %3)")
                              .arg(double(mixed.largest_fit) / base.largest_fit, 0, 'f', 2)
                              .arg(mixed.largest_fit)
                              .arg(base.largest_fit);
    QVERIFY2(d.summaryText().contains(ratio), qPrintable(d.summaryText() + "\nwanted: " + ratio));

    // The table holds every trial, a failure with its reason.
    QTableWidget *t = d.table();
    QCOMPARE(t->rowCount(), rows);
    int failedRows = 0;
    for (int r = 0; r < rows; ++r)
        if (t->item(r, 5)->text() == QStringLiteral("does not fit: out of memory")) {
            ++failedRows;
            QVERIFY(t->item(r, 5)->toolTip().contains("out of device memory"));
            QCOMPARE(t->item(r, 3)->text(), QStringLiteral("-"));
        }
    QCOMPARE(failedRows, int(marks[0]->count() + marks[1]->count()));
}

void TestMaxBatchDialog::policyErrorShowsAndOthersRun()
{
    const std::map<Policy, int> capacity = {{Policy::FP32, 64}, {Policy::MixedFP16, 128}};
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32, Policy::MixedBF16, Policy::MixedFP16}));
    d.setSearchRange(8, 512);
    w.controller.setSearchTrialForTesting([capacity](Policy p, int batch) {
        if (p == Policy::MixedBF16) throw mixlab::DeviceError("bfloat16 is not available here");
        return fakeTrial(capacity, p, batch);
    });
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.front().front().toBool(), false);
    QVERIFY2(d.errorText().contains("bfloat16 is not available here"), qPrintable(d.errorText()));
    QVERIFY(d.summaryText().contains("mixed_bf16: failed: bfloat16 is not available here"));
    QVERIFY(d.policyStates()[0].done);
    QVERIFY(!d.policyStates()[1].done);
    QVERIFY(d.policyStates()[2].done);
    QCOMPARE(d.policyStates()[2].result.largest_fit, 128);
    QVERIFY(d.summaryText().contains("mixed_fp16 fits 2.00x the batch of fp32 (128 vs 64)"));
}

void TestMaxBatchDialog::setupErrorShows()
{
    MaxBatchJob job = cpuJob({Policy::FP32});
    job.config.dataset.name = "/nonexistent/mixlab-dataset-folder";
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(job);
    d.setSearchRange(8, 16);
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QVERIFY(!d.isRunning());
    QVERIFY(!d.errorText().isEmpty());
    QCOMPARE(d.table()->rowCount(), 0);
    // The dialog is still usable: a good job runs next.
    d.setJob(cpuJob({Policy::FP32}));
    d.setTrialSteps(1, 1);
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, k_timeoutMs);
    QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
    QCOMPARE(d.policyStates()[0].result.largest_fit, 16);
}

void TestMaxBatchDialog::limitBelowStartIsRefused()
{
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32}));
    d.setSearchRange(64, 32);
    d.start();
    QVERIFY(!d.isRunning());
    QVERIFY2(d.errorText().contains("below the start"), qPrintable(d.errorText()));
}

void TestMaxBatchDialog::blockedJobDoesNotStart()
{
    MaxBatchJob job = cpuJob({Policy::FP32});
    job.blocked = "The model is not valid: layer 2 has no units";
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(job);
    d.start();
    QVERIFY(!d.isRunning());
    QVERIFY(d.errorText().contains("layer 2 has no units"));
}

void TestMaxBatchDialog::defaultLimitFollowsDevice_data()
{
    QTest::addColumn<int>("choice");
    QTest::addColumn<QString>("probed");
    QTest::addColumn<int>("limit");
    QTest::newRow("cpu chosen") << int(DeviceChoice::CPU) << "cuda" << 1024;
    QTest::newRow("auto on a cpu-only machine") << int(DeviceChoice::Auto) << "cpu" << 1024;
    QTest::newRow("auto on a gpu") << int(DeviceChoice::Auto) << "cuda" << 65536;
    QTest::newRow("cuda chosen") << int(DeviceChoice::CUDA) << "" << 65536;
}

void TestMaxBatchDialog::defaultLimitFollowsDevice()
{
    QFETCH(int, choice);
    QFETCH(QString, probed);
    QFETCH(int, limit);
    MaxBatchJob job = cpuJob({Policy::FP32});
    job.config.device = DeviceChoice(choice);
    job.device.backend = *mixlab::parse_backend_kind(probed.toStdString());
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(job);
    QCOMPARE(d.searchStart(), 32);
    QCOMPARE(d.searchLimit(), limit);
    // A limit the user set stays, whatever the device.
    d.setSearchRange(16, 333);
    d.setJob(job);
    QCOMPARE(d.searchLimit(), 333);
}

void TestMaxBatchDialog::stopRightAwayEnds()
{
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32, Policy::MixedFP16}));
    d.setSearchRange(8, 64);
    d.setTrialSteps(1, 1);
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    // A second search, stopped at once: ends, marked stopped, without hanging.
    d.start();
    QVERIFY(d.isRunning());
    d.stop();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, k_timeoutMs);
    QVERIFY(!d.isRunning());
    QCOMPARE(finished.back().front().toBool(), true);
    QVERIFY(d.table()->rowCount() <= 1); // at most the trial that was in flight
    QVERIFY2(d.summaryText().contains("stopped"), qPrintable(d.summaryText()));
}

void TestMaxBatchDialog::stopBetweenTrials()
{
    // Trials that take a while, so Stop lands while one is in flight.
    const std::map<Policy, int> capacity = {{Policy::FP32, 1 << 20}, {Policy::MixedFP16, 1 << 20}};
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32, Policy::MixedFP16}));
    d.setSearchRange(1, 1 << 20);
    w.controller.setSearchTrialForTesting([capacity](Policy p, int batch) {
        QThread::msleep(100);
        return fakeTrial(capacity, p, batch);
    });
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    connect(&d, &MaxBatchDialog::trialAdded, &d, [&d](int, int batch) {
        if (batch == 4) d.stop();
    });
    d.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.front().front().toBool(), true);
    // 1, 2, 4, the one in flight when Stop came, and one more should the GUI thread of
    // a loaded machine take a whole trial to take in the Stop; mixed_fp16 never ran.
    const auto &fp32 = d.policyStates()[0];
    QVERIFY(fp32.trials.size() >= 3 && fp32.trials.size() <= 5);
    QVERIFY(!fp32.done);
    QVERIFY(d.policyStates()[1].trials.empty());
    QVERIFY2(d.summaryText().contains("fp32: stopped, largest batch so far"),
             qPrintable(d.summaryText()));
    QVERIFY2(d.summaryText().contains("mixed_fp16: not run (stopped)"),
             qPrintable(d.summaryText()));
}

void TestMaxBatchDialog::closeMidSearch()
{
    const std::map<Policy, int> capacity = {{Policy::FP32, 1 << 20}};
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32}));
    d.setSearchRange(1, 1 << 20);
    w.controller.setSearchTrialForTesting([capacity](Policy p, int batch) {
        QThread::msleep(20);
        return fakeTrial(capacity, p, batch);
    });
    d.show();
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    QSignalSpy added(&d, &MaxBatchDialog::trialAdded);
    d.start();
    QTRY_VERIFY_WITH_TIMEOUT(added.count() >= 2, k_timeoutMs);
    QVERIFY(d.close());
    QVERIFY(!d.isVisible());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QVERIFY(!d.isRunning());
    QVERIFY(!w.controller.isBusy()); // the worker thread is free for the next job
}

void TestMaxBatchDialog::destroyMidSearch()
{
    // The dialog destroyed while a trial runs on the worker thread: the destructor stops
    // the search, which ends there; what it still sends is dropped with the dialog, and
    // the worker is free again soon after. The second trial waits at a gate, so the search
    // is surely mid-way when the dialog goes (a real CPU search of a tiny model may finish
    // before a loaded machine's GUI thread sees its first trial).
    const std::map<Policy, int> capacity = {{Policy::FP32, 1 << 20}, {Policy::MixedFP16, 1 << 20}};
    std::atomic<int> trials{0};
    std::atomic<bool> open{false};
    Worker w;
    w.controller.setSearchTrialForTesting([capacity, &trials, &open](Policy p, int batch) {
        if (trials.fetch_add(1) == 1)
            while (!open.load()) QThread::msleep(5);
        return fakeTrial(capacity, p, batch);
    });
    {
        auto *d = new MaxBatchDialog(&w.controller);
        d->setJob(cpuJob({Policy::FP32, Policy::MixedFP16}));
        d->setSearchRange(8, 1 << 20);
        d->start();
        QTRY_VERIFY_WITH_TIMEOUT(trials.load() >= 2, k_timeoutMs); // the second trial waits
        delete d;
    }
    QVERIFY(w.controller.isSearching());
    open.store(true);
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller.isBusy(),
                             k_timeoutMs); // nothing reached the gone dialog
    QCOMPARE(trials.load(), 2);            // stopped: no trial after the one in flight
}

void TestMaxBatchDialog::menuActionOpensDialog()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    auto *action = w.findChild<QAction *>("maxBatchAction");
    QVERIFY(action);
    QVERIFY(action->text().contains("largest batch"));
    action->trigger();
    auto *dialog = w.findChild<MaxBatchDialog *>();
    QVERIFY(dialog);
    QCOMPARE(w.maxBatchDialog(), dialog);
    QVERIFY(dialog->isVisible());
    QVERIFY(!dialog->isModal());
    action->trigger(); // the same dialog again, not a second one
    QCOMPARE(w.findChildren<MaxBatchDialog *>().size(), 1);
    dialog->close();
}

void TestMaxBatchDialog::startWaitsForTraining()
{
    // Training holds the one worker thread: the dialog's Start is disabled and says why,
    // start() refuses with the reason and leaves the training alone, and once the training
    // has ended (here: stopped) a search runs, during which training is refused in turn.
    Worker w;
    MaxBatchDialog d(&w.controller);
    d.setJob(cpuJob({Policy::FP32}));
    d.setSearchRange(8, 16);
    w.controller.setSearchTrialForTesting([](Policy p, int batch) {
        return fakeTrial({{p, 1 << 20}}, p, batch);
    });
    auto *startStop = d.findChild<QPushButton *>("maxBatchStartStop");
    QVERIFY(startStop->isEnabled());
    QVERIFY(w.controller.start(tinyGuiModel(), {quickCpuConfig(10000)}) >
            0); // far longer than the test
    QVERIFY(!startStop->isEnabled());
    QVERIFY2(startStop->toolTip().contains("training job is running"),
             qPrintable(startStop->toolTip()));
    QSignalSpy finished(&d, &MaxBatchDialog::searchFinished);
    d.start();
    QVERIFY(!d.isRunning());
    QCOMPARE(finished.count(), 1);
    QVERIFY2(d.errorText().contains("a training job is running"), qPrintable(d.errorText()));
    QVERIFY(w.controller.isRunning());

    w.controller.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller.isBusy(), k_timeoutMs);
    QVERIFY(startStop->isEnabled());
    d.start();
    QVERIFY(d.isRunning());
    QCOMPARE(w.controller.start(tinyGuiModel(), {quickCpuConfig(1)}), 0);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, k_timeoutMs);
    QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
    QCOMPARE(d.policyStates()[0].result.largest_fit, 16);
    QCOMPARE(w.store.runIds().size(), std::size_t(1)); // the refused training left no run
}

void TestMaxBatchDialog::windowWaitsForSearch()
{
    // A search holds the one worker thread: the window's Start and Compare (actions and
    // run panel buttons) are disabled, the actions' tooltips say why, startRun() does
    // nothing, and Stop stops the search through the dialog. Then training starts again.
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    w.runPanel()->setComparePolicies({Policy::FP32, Policy::MixedFP16});
    auto *start = w.findChild<QAction *>("startAction");
    auto *compare = w.findChild<QAction *>("compareAction");
    auto *stop = w.findChild<QAction *>("stopAction");
    auto *startButton = w.runPanel()->findChild<QPushButton *>("startButton");
    auto *compareButton = w.runPanel()->findChild<QPushButton *>("compareButton");
    QVERIFY(start->isEnabled() && compare->isEnabled() && !stop->isEnabled());
    QVERIFY(startButton->isEnabled() && compareButton->isEnabled());

    w.controller()->setSearchTrialForTesting([](Policy p, int batch) {
        QThread::msleep(20);
        return fakeTrial({{p, 1 << 20}}, p, batch);
    });
    MaxBatchDialog *d = w.showMaxBatchDialog();
    QCOMPARE(w.maxBatchDialog(), d);
    d->setSearchRange(1, 1 << 20);
    QSignalSpy finished(d, &MaxBatchDialog::searchFinished);
    QSignalSpy added(d, &MaxBatchDialog::trialAdded);
    d->start();
    QVERIFY(d->isRunning());
    QVERIFY(w.controller()->isSearching());
    QVERIFY(!start->isEnabled() && !compare->isEnabled() && stop->isEnabled());
    QVERIFY(!startButton->isEnabled() && !compareButton->isEnabled());
    QVERIFY2(start->toolTip().contains("Find largest batch is searching"),
             qPrintable(start->toolTip()));
    w.startRun();
    w.startCompare();
    QVERIFY(w.store()->runIds().empty());
    QVERIFY(!w.controller()->isRunning());

    QTRY_VERIFY_WITH_TIMEOUT(added.count() >= 2, k_timeoutMs);
    stop->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, k_timeoutMs);
    QCOMPARE(finished.front().front().toBool(), true);
    QVERIFY(start->isEnabled() && compare->isEnabled() && !stop->isEnabled());
    QVERIFY(startButton->isEnabled() && compareButton->isEnabled());
    w.startRun();
    QVERIFY(w.controller()->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_timeoutMs);
    QCOMPARE(w.store()->run(w.store()->runIds().front())->status, RunRecord::Status::Finished);
}

void TestMaxBatchDialog::closingWindowMidSearchStopsAndJoins()
{
    // Closing the window mid-search asks nothing, stops the search and joins the worker
    // thread before close() returns: the search has ended (stopped) and its last trials
    // reached the dialog without an event-loop turn.
    std::atomic<int> trialsRun{0};
    MainWindow w;
    w.show();
    w.setConfirmCloseForTesting(false);
    w.controller()->setSearchTrialForTesting([&trialsRun](Policy p, int batch) {
        QThread::msleep(20);
        ++trialsRun;
        return fakeTrial({{p, 1 << 20}}, p, batch);
    });
    MaxBatchDialog *d = w.showMaxBatchDialog();
    d->setJob(cpuJob({Policy::FP32}));
    d->setSearchRange(1, 1 << 20);
    QSignalSpy finished(d, &MaxBatchDialog::searchFinished);
    QSignalSpy added(d, &MaxBatchDialog::trialAdded);
    d->start();
    QTRY_VERIFY_WITH_TIMEOUT(added.count() >= 2, k_timeoutMs);
    QVERIFY(w.close());
    QVERIFY(!w.controller()->isBusy());
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().front().toBool(), true);
    QVERIFY(!d->isRunning());
    QCOMPARE(int(d->policyStates()[0].trials.size()), trialsRun.load());
}

QTEST_MAIN(TestMaxBatchDialog)
#include "tst_maxbatchdialog.moc"
