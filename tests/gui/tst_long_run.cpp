// A long CPU run through the app's worker, RunStore and visible views (charts, runs
// table, log): the GUI event loop keeps answering throughout (99% of 20 ms probes within
// 50 ms, none a quarter of a second late) and the process's memory grows after warm-up
// by no more than what the store keeps per step.
// MIXLAB_SOAK_STEPS (default 20000) sets the length; MIXLAB_SOAK_REPORT names a file
// that gets RSS at every tenth of the run and the event-loop delays (tests/acceptance/soak.sh).
#include "charts/chartpanel.h"
#include "runs/logview.h"
#include "runs/runcontroller.h"
#include "runs/runstable.h"
#include "runs/runstore.h"

#include "one_omp_thread_main.h"

#include <QElapsedTimer>
#include <QFile>
#include <QSplitter>
#include <QTextStream>
#include <QTimer>
#include <QApplication>
#include <QtTest>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "test_models.h"

using namespace mixlab;

namespace {

// VmRSS (resident now) and VmHWM (peak resident) of this process, in KiB.
struct Rss {
    qint64 rssKb = 0, hwmKb = 0;
};

Rss readRss()
{
    Rss r;
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return r;
    for (const QByteArray &line : f.readAll().split('\n')) {
        const QList<QByteArray> parts = line.simplified().split(' ');
        if (parts.size() < 2) continue;
        if (parts[0] == "VmRSS:") r.rssKb = parts[1].toLongLong();
        if (parts[0] == "VmHWM:") r.hwmKb = parts[1].toLongLong();
    }
    return r;
}

qint64 envSteps()
{
    bool ok = false;
    const qint64 n = qEnvironmentVariable("MIXLAB_SOAK_STEPS").toLongLong(&ok);
    return ok && n >= 1000 ? n : 20000;
}

} // namespace

class TestLongRun : public QObject {
    Q_OBJECT
private slots:
    void longRunStaysFlatAndResponsive();
};

void TestLongRun::longRunStaysFlatAndResponsive()
{
    const qint64 steps = envSteps();

    // The parts the main window arranges, shown, so every redraw really paints.
    RunStore store;
    QSplitter window(Qt::Vertical);
    auto *charts = new ChartPanel(&store, &window);
    auto *table = new RunsTable(&store, &window);
    auto *log = new LogView(&store, &window);
    window.addWidget(charts);
    window.addWidget(table);
    window.addWidget(log);
    window.resize(1280, 900);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    RunController controller(&store);

    // A tiny MLP on tiny synthetic data at batch 4: steps of well under a millisecond, so
    // the GUI gets metrics as fast as the worker can batch them.
    RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 256; // 64 steps an epoch: an evaluation every 64 steps
    c.dataset.synthetic_test = 64;
    c.batch_size = 4;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.optimizer.lr = 0.01f;
    c.seed = 3;

    // The probe: a 20 ms timer; how late each tick comes is how long the event loop was
    // busy with something else (a redraw, a batch of metrics, the table).
    constexpr int k_probeMs = 20;
    QElapsedTimer clock;
    qint64 lastTick = 0, maxDelayMs = 0, maxDelayAtStep = 0;
    std::vector<qint64> delays; // per tick, ms late
    struct Sample {
        qint64 step;
        Rss rss;
        qint64 maxDelayMs;
    };
    std::vector<Sample> samples;
    int runId = 0;
    qint64 nextSample = steps / 10;
    QTimer probe;
    probe.setInterval(k_probeMs);
    probe.setTimerType(Qt::PreciseTimer);
    connect(&probe, &QTimer::timeout, this, [&] {
        const qint64 now = clock.elapsed();
        const qint64 late = std::max<qint64>(0, now - lastTick - k_probeMs);
        lastTick = now;
        delays.push_back(late);
        const RunRecord *r = runId ? store.run(runId) : nullptr;
        const qint64 done = r ? qint64(r->steps.size()) : 0;
        if (late > maxDelayMs) {
            maxDelayMs = late;
            maxDelayAtStep = done;
        }
        while (done >= nextSample && nextSample <= steps) {
            samples.push_back({done, readRss(), maxDelayMs});
            nextSample += steps / 10;
        }
    });

    clock.start();
    probe.start();
    const int group = controller.start(test::tiny_mlp({.hidden = 4}), {c});
    QVERIFY(group > 0);
    runId = store.groupRuns(group).at(0);
    // A starved 2-core machine runs ~1-2k steps a second; the default 20k steps take
    // 10-30 s here.
    const int timeoutMs = int(std::min<qint64>(60000 + steps * 5, 3'600'000));
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), timeoutMs);
    // The last redraws after the final batch: the probe keeps measuring through them.
    QTest::qWait(300);
    probe.stop();
    if (samples.empty() || samples.back().step < steps)
        samples.push_back({qint64(store.run(runId)->steps.size()), readRss(), maxDelayMs});
    const double seconds = clock.elapsed() / 1000.0;
    // CPU time of this (the GUI) thread: how much of the run the views cost.
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    const double guiCpuSeconds = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                 double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;

    const RunRecord *r = store.run(runId);
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(qint64(r->steps.size()), steps);

    std::vector<qint64> sorted = delays;
    std::sort(sorted.begin(), sorted.end());
    const qint64 p99 = sorted.empty() ? 0 : sorted[std::size_t(double(sorted.size() - 1) * 0.99)];

    const Sample &warm = samples.front(); // 10% of the run: warm-up (first redraws, caches) done
    const Sample &end = samples.back();
    const double bytesPerStep = end.step > warm.step ? double(end.rss.rssKb - warm.rss.rssKb) *
                                                           1024.0 / double(end.step - warm.step)
                                                     : 0.0;

    QString report;
    QTextStream out(&report);
    out << "steps " << steps << " in " << seconds << " s (" << double(steps) / seconds
        << " steps/s); GUI thread CPU " << guiCpuSeconds << " s\n";
    out << "event loop: " << delays.size() << " probes every " << k_probeMs << " ms, max delay "
        << maxDelayMs << " ms (at step " << maxDelayAtStep << "), p99 " << p99 << " ms\n";
    for (const Sample &s : samples)
        out << "step " << s.step << ": VmRSS " << s.rss.rssKb << " KiB, VmHWM " << s.rss.hwmKb
            << " KiB, max delay so far " << s.maxDelayMs << " ms\n";
    out << "RSS growth after warm-up: " << (end.rss.rssKb - warm.rss.rssKb) << " KiB over "
        << (end.step - warm.step) << " steps = " << bytesPerStep << " bytes/step (RunStore keeps "
        << sizeof(StepMetrics) << " bytes/step)\n";
    out.flush();
    qInfo().noquote() << report;
    const QString reportPath = qEnvironmentVariable("MIXLAB_SOAK_REPORT");
    if (!reportPath.isEmpty()) {
        QFile f(reportPath);
        QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text),
                 qPrintable(reportPath));
        f.write(report.toUtf8());
    }

#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer the run still looks for memory errors over every step, but
    // its numbers are not the app's: each step is ~3x slower (the GUI thread too), and
    // its quarantine keeps freed blocks (256 MiB), so RSS grows with every free.
    return;
#endif
    // Responsive throughout: 99% of the probes within 50 ms of their time, and no freeze
    // (nothing near a quarter of a second). The single worst delay is partly the machine's:
    // on a 2-core machine loaded by other builds it was 134 ms and 168 ms in two runs (the
    // same code passed at 53 ms when the load dropped), so it gets a looser bound of its own.
    QVERIFY2(p99 < 50, qPrintable(report));
    QVERIFY2(maxDelayMs < 250, qPrintable(report));
    // What may grow per step after warm-up: the store's StepMetrics (kept for export,
    // up to 3x in a std::vector: the new block while the old one is copied, and freed
    // blocks the heap keeps), the engine's 4-byte step time, and the charts' per-redraw
    // point lists (5 series x 16 bytes, rebuilt, so they only add heap that was freed).
    // Anything per step beyond that (a leak per batch, an unbounded chart series) would
    // pass this within a few thousand steps. 8 MiB covers heap slack and Qt's caches.
    const double allowedPerStep = 3.0 * double(sizeof(StepMetrics)) + 4.0 + 5.0 * 16.0;
    const double allowedKb = allowedPerStep * double(end.step - warm.step) / 1024.0 + 8 * 1024.0;
    QVERIFY2(double(end.rss.rssKb - warm.rss.rssKb) < allowedKb, qPrintable(report));
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestLongRun, QApplication)
#include "tst_long_run.moc"
