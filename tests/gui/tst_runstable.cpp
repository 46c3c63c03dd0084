// RunsTable over a RunStore: one row per run, rename and hide write back to the store,
// delete removes, progress/step time/speedup/accuracy columns computed from the data.
#include "runstable.h"
#include "runstablemodel.h"
#include "runstore.h"

#include "mixlab/trainer.h"

#include <QApplication>
#include <QItemSelectionModel>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>

namespace {

mixlab::RunConfig configFor(mixlab::Policy p, int batch)
{
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.policy = p;
    c.batch_size = batch;
    return c;
}

// n steps whose device times are drawn around `ms`; the first k_warmup_steps are 50x
// slower, as a real warm-up is, so a mean that forgets to drop them is far off.
std::vector<mixlab::StepMetrics> steps(int first, int n, float ms, QRandomGenerator &rng, std::vector<float> *times)
{
    std::vector<mixlab::StepMetrics> out;
    for (int i = 0; i < n; ++i) {
        mixlab::StepMetrics m;
        m.step = first + i;
        m.epoch = 1;
        m.loss = 2.3f - 0.01f * float(m.step);
        m.accuracy = 0.1f;
        const float jitter = float(rng.bounded(1000)) / 1000.0f * 0.2f * ms;
        m.step_ms = m.step <= mixlab::k_warmup_steps ? 50.0f * ms : ms + jitter;
        m.wall_ms = 10.0 * double(m.step);
        m.skipped = (m.step % 7) == 0;
        if (times && m.step > mixlab::k_warmup_steps)
            times->push_back(m.step_ms);
        out.push_back(m);
    }
    return out;
}

double mean(const std::vector<float> &v)
{
    double s = 0;
    for (float x : v)
        s += x;
    return s / double(v.size());
}

QString cell(const RunsTableModel *model, int row, int column, int role = Qt::DisplayRole)
{
    return model->data(model->index(row, column), role).toString();
}

} // namespace

class TestRunsTable : public QObject {
    Q_OBJECT
private slots:
    void rowsFollowTheStore();
    void renameWritesBack();
    void hideWritesBack();
    void deleteRemoves();
    void progressAndStepTime();
    void speedupAgainstGroupBaseline();
    void failedRunShowsReason();
};

void TestRunsTable::rowsFollowTheStore()
{
    RunStore store;
    RunsTable table(&store);
    const RunsTableModel *model = table.tableModel();
    QCOMPARE(model->rowCount(), 0);
    const int g = store.newGroup();
    const int a = store.addRun(configFor(mixlab::Policy::FP32, 64), "{}", g);
    const int b = store.addRun(configFor(mixlab::Policy::MixedFP16, 64), "{}", g);
    QCOMPARE(model->rowCount(), 2);
    QCOMPARE(model->runIdAt(0), a);
    QCOMPARE(model->runIdAt(1), b);
    QCOMPARE(cell(model, 0, RunsTableModel::Policy), QStringLiteral("fp32"));
    QCOMPARE(cell(model, 1, RunsTableModel::Policy), QStringLiteral("mixed_fp16"));
    QCOMPARE(cell(model, 1, RunsTableModel::Batch), QStringLiteral("64"));
    QCOMPARE(cell(model, 0, RunsTableModel::Name), store.run(a)->name);
    QCOMPARE(cell(model, 0, RunsTableModel::Status), runStatusName(RunRecord::Status::Queued));
    QCOMPARE(model->data(model->index(0, RunsTableModel::Name), Qt::DecorationRole).value<QColor>(), store.run(a)->color);

    table.selectRow(1);
    QCOMPARE(table.selectedRunIds(), std::vector<int>{b});
    store.setStatus(a, RunRecord::Status::Running);
    QCOMPARE(cell(model, 0, RunsTableModel::Status), runStatusName(RunRecord::Status::Running));
}

void TestRunsTable::renameWritesBack()
{
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    const int id = store.addRun(configFor(mixlab::Policy::FP32, 32), "{}", store.newGroup());
    QSignalSpy changed(model, &QAbstractItemModel::dataChanged);
    QVERIFY(model->flags(model->index(0, RunsTableModel::Name)) & Qt::ItemIsEditable);
    QVERIFY(!(model->flags(model->index(0, RunsTableModel::Policy)) & Qt::ItemIsEditable));
    QVERIFY(model->setData(model->index(0, RunsTableModel::Name), QStringLiteral("  baseline fp32 "), Qt::EditRole));
    QCOMPARE(store.run(id)->name, QStringLiteral("baseline fp32"));
    QCOMPARE(cell(model, 0, RunsTableModel::Name), QStringLiteral("baseline fp32"));
    QVERIFY(changed.count() >= 1);
    // An empty name is refused; the old one stays.
    QVERIFY(!model->setData(model->index(0, RunsTableModel::Name), QStringLiteral("   "), Qt::EditRole));
    QCOMPARE(store.run(id)->name, QStringLiteral("baseline fp32"));
    // A rename from elsewhere (the experiment loader, the context menu) shows too.
    store.rename(id, QStringLiteral("other"));
    QCOMPARE(cell(model, 0, RunsTableModel::Name), QStringLiteral("other"));
}

void TestRunsTable::hideWritesBack()
{
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    const int id = store.addRun(configFor(mixlab::Policy::FP32, 32), "{}", store.newGroup());
    const QModelIndex shown = model->index(0, RunsTableModel::Name); // the checkbox beside the name
    QVERIFY(model->flags(shown) & Qt::ItemIsUserCheckable);
    QCOMPARE(model->data(shown, Qt::CheckStateRole).toInt(), int(Qt::Checked));
    QVERIFY(model->setData(shown, int(Qt::Unchecked), Qt::CheckStateRole));
    QVERIFY(!store.run(id)->visible);
    QCOMPARE(model->data(shown, Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    table.setRunsVisible({id}, true);
    QVERIFY(store.run(id)->visible);
    QCOMPARE(model->data(shown, Qt::CheckStateRole).toInt(), int(Qt::Checked));
}

void TestRunsTable::deleteRemoves()
{
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    const int g = store.newGroup();
    const int a = store.addRun(configFor(mixlab::Policy::FP32, 32), "{}", g);
    const int b = store.addRun(configFor(mixlab::Policy::MixedFP16, 32), "{}", g);
    const int c = store.addRun(configFor(mixlab::Policy::FP16, 32), "{}", g);
    store.setStatus(a, RunRecord::Status::Finished);
    store.setStatus(b, RunRecord::Status::Running);
    store.setStatus(c, RunRecord::Status::Failed, QStringLiteral("boom"));

    // The running run stays: the worker is still writing into it.
    table.deleteRuns({a, b});
    QCOMPARE(model->rowCount(), 2);
    QVERIFY(!store.run(a));
    QVERIFY(store.run(b));
    QCOMPARE(model->runIdAt(0), b);
    QCOMPARE(model->runIdAt(1), c);

    table.selectRow(1);
    QTest::keyClick(&table, Qt::Key_Delete);
    QCOMPARE(model->rowCount(), 1);
    QVERIFY(!store.run(c));

    store.setStatus(b, RunRecord::Status::Stopped);
    store.clear();
    QCOMPARE(model->rowCount(), 0);
}

void TestRunsTable::progressAndStepTime()
{
    QRandomGenerator rng(1234);
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    const int id = store.addRun(configFor(mixlab::Policy::FP32, 32), "{}", store.newGroup());
    store.setStarted(id, 100, 12.5);
    store.setStatus(id, RunRecord::Status::Running);
    QCOMPARE(cell(model, 0, RunsTableModel::StepMs), QString()); // no steps yet

    std::vector<float> times;
    store.appendSteps(id, steps(1, 40, 4.0f, rng, &times));
    const QModelIndex progress = model->index(0, RunsTableModel::Progress);
    QCOMPARE(model->data(progress).toString(), QStringLiteral("40 / 100"));
    QCOMPARE(model->data(progress, RunsTableModel::k_fractionRole).toDouble(), 0.4);
    // Warm-up excluded: mean of steps 11..40 only.
    const double expected = mean(times);
    QVERIFY(std::abs(RunsTableModel::meanStepMs(*store.run(id)) - expected) < 1e-9 * expected);
    QCOMPARE(cell(model, 0, RunsTableModel::StepMs), QString::number(expected, 'f', 3));
    // 40 steps took 400 ms of wall time: 60 more take about 0.6 s.
    QCOMPARE(cell(model, 0, RunsTableModel::Eta), QStringLiteral("1s"));
    QCOMPARE(cell(model, 0, RunsTableModel::Skipped), QStringLiteral("5")); // steps 7, 14, ... 35

    // When the run ends, the summary's figures win over the ones computed live.
    mixlab::RunSummary summary;
    summary.steps = 40;
    summary.skipped_steps = 9;
    summary.mean_step_ms = 3.25;
    summary.epochs_done = 1;
    summary.final_test_accuracy = 0.8765f;
    store.setSummary(id, summary);
    store.setStatus(id, RunRecord::Status::Stopped);
    QCOMPARE(cell(model, 0, RunsTableModel::StepMs), QStringLiteral("3.250"));
    QCOMPARE(cell(model, 0, RunsTableModel::Skipped), QStringLiteral("9"));
    QCOMPARE(cell(model, 0, RunsTableModel::TestAccuracy), QStringLiteral("87.65 %"));
    QCOMPARE(cell(model, 0, RunsTableModel::Eta), QString());
}

void TestRunsTable::speedupAgainstGroupBaseline()
{
    QRandomGenerator rng(99);
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    const int g = store.newGroup();
    const int fp32 = store.addRun(configFor(mixlab::Policy::FP32, 256), "{}", g);
    const int mixed = store.addRun(configFor(mixlab::Policy::MixedFP16, 256), "{}", g);
    const int alone = store.addRun(configFor(mixlab::Policy::FP32, 256), "{}", store.newGroup());

    std::vector<float> t32, t16;
    store.appendSteps(fp32, steps(1, 30, 10.0f, rng, &t32));
    store.appendSteps(mixed, steps(1, 30, 8.0f, rng, &t16));
    store.appendSteps(alone, steps(1, 30, 5.0f, rng, nullptr));
    const double live = mean(t32) / mean(t16);
    QCOMPARE(cell(model, 1, RunsTableModel::Speedup), QStringLiteral("%1\u00d7").arg(live, 0, 'f', 2));
    QCOMPARE(cell(model, 0, RunsTableModel::Speedup), QStringLiteral("1.00\u00d7"));
    QCOMPARE(cell(model, 2, RunsTableModel::Speedup), QString()); // alone in its group

    mixlab::RunSummary s32, s16;
    s32.mean_step_ms = 10.0;
    s16.mean_step_ms = 8.0;
    store.setSummary(fp32, s32);
    store.setSummary(mixed, s16);
    QCOMPARE(cell(model, 1, RunsTableModel::Speedup), QStringLiteral("1.25\u00d7"));
    s16.mean_step_ms = 12.5; // slower than fp32, the seed user's story
    store.setSummary(mixed, s16);
    QCOMPARE(cell(model, 1, RunsTableModel::Speedup), QStringLiteral("0.80\u00d7"));
    QVERIFY(std::abs(model->speedup(*store.run(mixed)) - 0.8) < 1e-12);
}

void TestRunsTable::failedRunShowsReason()
{
    RunStore store;
    RunsTable table(&store);
    RunsTableModel *model = table.tableModel();
    store.addRun(configFor(mixlab::Policy::MixedBF16, 32), "{}", store.newGroup());
    const QString why = QStringLiteral("out of device memory: 12.0 GiB asked, 3.1 GiB free");
    store.setStatus(model->runIdAt(0), RunRecord::Status::Failed, why);
    QVERIFY(cell(model, 0, RunsTableModel::Status).contains(why));
    QVERIFY(cell(model, 0, RunsTableModel::Policy, Qt::ToolTipRole).contains(why));
}

QTEST_MAIN(TestRunsTable)
#include "tst_runstable.moc"
