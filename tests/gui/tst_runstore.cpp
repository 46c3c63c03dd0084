// RunStore bookkeeping and signals (ids, default names and colours, appends, statuses,
// removal) and the run colour palette.
#include "common/runcolors.h"
#include "runs/runstore.h"

#include <QSignalSpy>
#include <QtTest>

#include <set>

using namespace mixlab;

namespace {

RunConfig config(Policy policy, int batch)
{
    RunConfig c;
    c.policy = policy;
    c.batch_size = batch;
    return c;
}

std::vector<StepMetrics> someSteps(std::int64_t first, int n)
{
    std::vector<StepMetrics> out;
    for (int i = 0; i < n; ++i) {
        StepMetrics m;
        m.step = first + i;
        m.loss = 2.0f / float(m.step);
        out.push_back(m);
    }
    return out;
}

} // namespace

class TestRunStore : public QObject {
    Q_OBJECT
private slots:
    void addRunNamesAndColours();
    void idsAreNeverReused();
    void appendsSignalFirstNewIndex();
    void statusNameAndTimes();
    void renameVisibilityAndNoOps();
    void unknownIdsAreIgnored();
    void groupsAndClear();
    void insertRecordKeepsItsLook();
    void paletteReadableOnWhite();
    void runColorStable();
};

void TestRunStore::addRunNamesAndColours()
{
    RunStore store;
    QSignalSpy added(&store, &RunStore::runAdded);
    const int g = store.newGroup();
    const int a = store.addRun(config(Policy::FP32, 256), QStringLiteral("{}"), g);
    const int b = store.addRun(config(Policy::MixedFP16, 32), QStringLiteral("{}"), g);
    QCOMPARE(a, 1);
    QCOMPARE(b, 2);
    QCOMPARE(added.count(), 2);
    QCOMPARE(added.at(1).at(0).toInt(), b);
    QCOMPARE(store.run(a)->name, QStringLiteral("fp32 b256 #1"));
    QCOMPARE(store.run(b)->name, QStringLiteral("mixed_fp16 b32 #2"));
    QCOMPARE(store.run(a)->color, runColor(a));
    QVERIFY(store.run(a)->color != store.run(b)->color);
    QCOMPARE(store.run(a)->status, RunRecord::Status::Queued);
    QCOMPARE(store.run(b)->group, g);
    QVERIFY(store.run(a)->visible);
    QCOMPARE(store.runIds(), (std::vector<int>{a, b}));
}

void TestRunStore::idsAreNeverReused()
{
    RunStore store;
    const int a = store.addRun(config(Policy::FP32, 8), {}, 1);
    store.removeRun(a);
    const int b = store.addRun(config(Policy::FP32, 8), {}, 1);
    QVERIFY(b > a);
    store.clear();
    const int c = store.addRun(config(Policy::FP32, 8), {}, 1);
    QVERIFY(c > b);
    QCOMPARE(store.runIds(), std::vector<int>{c});
}

void TestRunStore::appendsSignalFirstNewIndex()
{
    RunStore store;
    const int id = store.addRun(config(Policy::FP32, 8), {}, 1);
    QSignalSpy steps(&store, &RunStore::stepsAppended);
    QSignalSpy epochs(&store, &RunStore::epochsAppended);
    QSignalSpy events(&store, &RunStore::eventsAppended);

    store.appendSteps(id, someSteps(1, 5));
    store.appendSteps(id, someSteps(6, 3));
    store.appendSteps(id, {}); // nothing new: no signal
    QCOMPARE(steps.count(), 2);
    QCOMPARE(steps.at(0).at(1).toInt(), 0);
    QCOMPARE(steps.at(1).at(0).toInt(), id);
    QCOMPARE(steps.at(1).at(1).toInt(), 5);
    QCOMPARE(store.run(id)->steps.size(), std::size_t(8));
    QCOMPARE(store.run(id)->steps.back().step, std::int64_t(8));

    EpochMetrics e;
    e.epoch = 1;
    e.test_accuracy = 0.5f;
    store.appendEpochs(id, {e});
    e.epoch = 2;
    store.appendEpochs(id, {e});
    QCOMPARE(epochs.count(), 2);
    QCOMPARE(epochs.at(1).at(1).toInt(), 1);

    TimedEvent t{QDateTime::currentDateTime(), RunEvent{RunEvent::Kind::Warning, 3, "careful"}};
    store.appendEvents(id, {t, t});
    QCOMPARE(events.count(), 1);
    QCOMPARE(events.at(0).at(1).toInt(), 0);
    QCOMPARE(store.run(id)->events.size(), std::size_t(2));
    QCOMPARE(store.run(id)->events[1].event.message, std::string("careful"));
}

void TestRunStore::statusNameAndTimes()
{
    RunStore store;
    const int id = store.addRun(config(Policy::FP32, 8), {}, 1);
    QSignalSpy changed(&store, &RunStore::runChanged);
    store.setStarted(id, 300, 12.5);
    store.setStatus(id, RunRecord::Status::Running);
    QCOMPARE(store.run(id)->totalSteps, qint64(300));
    QCOMPARE(store.run(id)->deviceMemoryMB, 12.5);
    QVERIFY(store.run(id)->started.isValid());
    QVERIFY(!store.run(id)->ended.isValid());
    store.setStatus(id, RunRecord::Status::Running); // same: no signal
    QCOMPARE(changed.count(), 2);

    store.setStatus(id, RunRecord::Status::Failed, QStringLiteral("out of memory"));
    QCOMPARE(store.run(id)->status, RunRecord::Status::Failed);
    QCOMPARE(store.run(id)->failure, QStringLiteral("out of memory"));
    QVERIFY(store.run(id)->ended.isValid());
    QCOMPARE(changed.count(), 3);

    RunSummary s;
    s.steps = 42;
    store.setSummary(id, s);
    QCOMPARE(store.run(id)->summary->steps, std::int64_t(42));
    QCOMPARE(changed.count(), 4);

    QCOMPARE(runStatusName(RunRecord::Status::Queued), QStringLiteral("Queued"));
    QCOMPARE(runStatusName(RunRecord::Status::Stopped), QStringLiteral("Stopped"));
    QCOMPARE(runStatusName(RunRecord::Status::Failed), QStringLiteral("Failed"));
}

void TestRunStore::renameVisibilityAndNoOps()
{
    RunStore store;
    const int id = store.addRun(config(Policy::FP32, 8), {}, 1);
    QSignalSpy changed(&store, &RunStore::runChanged);
    store.rename(id, QStringLiteral("  baseline  "));
    QCOMPARE(store.run(id)->name, QStringLiteral("baseline"));
    store.rename(id, QStringLiteral("   ")); // blank names are refused
    QCOMPARE(store.run(id)->name, QStringLiteral("baseline"));
    store.setVisible(id, false);
    store.setVisible(id, false);
    QVERIFY(!store.run(id)->visible);
    QCOMPARE(changed.count(), 2);
}

void TestRunStore::unknownIdsAreIgnored()
{
    RunStore store;
    QSignalSpy anything(&store, &RunStore::runChanged);
    QSignalSpy steps(&store, &RunStore::stepsAppended);
    QSignalSpy removed(&store, &RunStore::runRemoved);
    store.appendSteps(99, someSteps(1, 2));
    store.setStatus(99, RunRecord::Status::Running);
    store.setSummary(99, RunSummary{});
    store.rename(99, QStringLiteral("x"));
    store.removeRun(99);
    QVERIFY(!store.run(99));
    QVERIFY(!store.mutableRun(99));
    QCOMPARE(anything.count() + steps.count() + removed.count(), 0);
}

void TestRunStore::groupsAndClear()
{
    RunStore store;
    const int g1 = store.newGroup();
    const int g2 = store.newGroup();
    QVERIFY(g2 > g1);
    const int a = store.addRun(config(Policy::FP32, 8), {}, g1);
    const int b = store.addRun(config(Policy::FP32, 8), {}, g2);
    const int c = store.addRun(config(Policy::MixedFP16, 8), {}, g1);
    QCOMPARE(store.groupRuns(g1), (std::vector<int>{a, c}));
    QCOMPARE(store.groupRuns(g2), std::vector<int>{b});
    QSignalSpy removed(&store, &RunStore::runRemoved);
    store.removeRun(b);
    QCOMPARE(removed.count(), 1);
    QCOMPARE(store.runIds(), (std::vector<int>{a, c}));
    store.clear();
    QCOMPARE(removed.count(), 3);
    QVERIFY(store.runIds().empty());
    // A new (or opened) experiment numbers its groups from 1 again; run ids go on.
    QCOMPARE(store.newGroup(), 1);
    QVERIFY(store.addRun(config(Policy::FP32, 8), {}, 1) > c);
}

void TestRunStore::insertRecordKeepsItsLook()
{
    RunStore store;
    store.addRun(config(Policy::FP32, 8), {}, 1);
    RunRecord r;
    r.id = 77; // ignored: the store numbers its runs
    r.name = QStringLiteral("from file");
    r.color = QColor(10, 20, 30);
    r.status = RunRecord::Status::Finished;
    r.steps = someSteps(1, 4);
    QSignalSpy added(&store, &RunStore::runAdded);
    int seenSteps = -1;
    connect(&store, &RunStore::runAdded, this,
            [&](int id) { seenSteps = int(store.run(id)->steps.size()); });
    const int id = store.insertRecord(r);
    QCOMPARE(id, 2);
    QCOMPARE(added.count(), 1);
    QCOMPARE(seenSteps, 4); // the data is there when runAdded arrives
    QCOMPARE(store.run(id)->name, QStringLiteral("from file"));
    QCOMPARE(store.run(id)->color, QColor(10, 20, 30));
    QCOMPARE(store.run(id)->status, RunRecord::Status::Finished);
}

void TestRunStore::paletteReadableOnWhite()
{
    const auto &p = runPalette();
    QVERIFY(p.size() >= 8);
    std::set<QRgb> distinct;
    for (const QColor &c : p) {
        // 3:1 is WCAG's floor for graphics (lines, markers) against their background.
        QVERIFY2(contrastRatio(c, Qt::white) >= 3.0, qPrintable(c.name()));
        distinct.insert(c.rgb());
    }
    QCOMPARE(distinct.size(), p.size());
    // The ratio itself: black on white is 21, a colour against itself 1.
    QVERIFY(qAbs(contrastRatio(Qt::black, Qt::white) - 21.0) < 1e-9);
    QVERIFY(qAbs(contrastRatio(p[0], p[0]) - 1.0) < 1e-12);
    // Per-policy colours differ between the policies a compare shows together.
    QVERIFY(policyColor(Policy::FP32) != policyColor(Policy::MixedFP16));
    QVERIFY(policyColor(Policy::MixedFP16) != policyColor(Policy::MixedBF16));
}

void TestRunStore::runColorStable()
{
    const int n = int(runPalette().size());
    QCOMPARE(runColor(1), runPalette()[0]);
    QCOMPARE(runColor(3), runColor(3));
    QCOMPARE(runColor(1 + n), runColor(1));
    QVERIFY(runColor(2) != runColor(1));
    QVERIFY(runColor(0).isValid());
    QVERIFY(runColor(-5).isValid());
}

QTEST_GUILESS_MAIN(TestRunStore)
#include "tst_runstore.moc"
