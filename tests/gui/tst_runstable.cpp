// RunsTable over a RunStore: one row per run, rename and hide write back to the store,
// delete removes, progress/step time/speedup/accuracy columns computed from the data.
#include "runs/runstable.h"
#include "runs/runstablemodel.h"
#include "runs/runstore.h"

#include "mixlab/step_time.h"
#include "mixlab/trainer.h"

#include <QApplication>
#include <QHeaderView>
#include <QImage>
#include <QScrollBar>
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
std::vector<mixlab::StepMetrics> steps(int first, int n, float ms, QRandomGenerator &rng,
                                       std::vector<float> *times)
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
        if (times && m.step > mixlab::k_warmup_steps) times->push_back(m.step_ms);
        out.push_back(m);
    }
    return out;
}

// The upper median, as mixlab::headline_step_ms takes it.
double median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
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
    void headersSayWhatTheNumbersAre();
    void everyShownColumnFits();
    void nameStaysReadableWhenNarrow();
    void progressTextReadsOnTheFill_data();
    void progressTextReadsOnTheFill();
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
    QCOMPARE(model->data(model->index(0, RunsTableModel::Name), Qt::DecorationRole).value<QColor>(),
             store.run(a)->color);

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
    QVERIFY(model->setData(model->index(0, RunsTableModel::Name),
                           QStringLiteral("  baseline fp32 "), Qt::EditRole));
    QCOMPARE(store.run(id)->name, QStringLiteral("baseline fp32"));
    QCOMPARE(cell(model, 0, RunsTableModel::Name), QStringLiteral("baseline fp32"));
    QVERIFY(changed.count() >= 1);
    // An empty name is refused; the old one stays.
    QVERIFY(!model->setData(model->index(0, RunsTableModel::Name), QStringLiteral("   "),
                            Qt::EditRole));
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
    // The headline step time, live: the median of steps 11..40 (the warm-up left out).
    const double expected = median(times);
    QCOMPARE(model->stepMs(*store.run(id)), expected);
    QCOMPARE(cell(model, 0, RunsTableModel::StepMs), QString::number(expected, 'f', 3));
    // 40 steps took 400 ms of wall time: 60 more take about 0.6 s.
    QCOMPARE(cell(model, 0, RunsTableModel::Eta), QStringLiteral("1s"));
    QCOMPARE(cell(model, 0, RunsTableModel::Skipped), QStringLiteral("5")); // steps 7, 14, ... 35
    // More steps move it (the cached value follows the step count).
    store.appendSteps(id, steps(41, 20, 2.0f, rng, &times));
    QCOMPARE(model->stepMs(*store.run(id)), median(times));
    QCOMPARE(cell(model, 0, RunsTableModel::TestAccuracy),
             QString()); // not evaluated yet, still running

    // When the run ends, the summary's figures win over the ones computed live.
    mixlab::RunSummary summary;
    summary.steps = 60;
    summary.skipped_steps = 9;
    summary.mean_step_ms = 3.5;
    summary.median_step_ms = 3.25;
    summary.epochs_done = 1;
    summary.final_test_accuracy = 0.8765f;
    store.setSummary(id, summary);
    store.setStatus(id, RunRecord::Status::Stopped);
    QCOMPARE(cell(model, 0, RunsTableModel::StepMs), QStringLiteral("3.250"));
    QCOMPARE(cell(model, 0, RunsTableModel::Skipped), QStringLiteral("9"));
    QCOMPARE(cell(model, 0, RunsTableModel::TestAccuracy), QStringLiteral("87.65 %"));
    QCOMPARE(cell(model, 0, RunsTableModel::Eta), QString());

    // Stopped before it evaluated: no accuracy, and the table says so rather than 0 %.
    summary.final_test_accuracy.reset();
    summary.final_test_loss.reset();
    store.setSummary(id, summary);
    QCOMPARE(cell(model, 0, RunsTableModel::TestAccuracy), QStringLiteral("\u2014"));
    QVERIFY(cell(model, 0, RunsTableModel::TestAccuracy, Qt::ToolTipRole)
                .contains(QStringLiteral("before it evaluated")));
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
    const double live = median(t32) / median(t16);
    QCOMPARE(cell(model, 1, RunsTableModel::Speedup),
             QStringLiteral("%1\u00d7").arg(live, 0, 'f', 2));
    QCOMPARE(cell(model, 0, RunsTableModel::Speedup), QStringLiteral("1.00\u00d7"));
    QCOMPARE(cell(model, 2, RunsTableModel::Speedup), QString()); // alone in its group

    mixlab::RunSummary s32, s16;
    s32.median_step_ms = 10.0;
    s16.median_step_ms = 8.0;
    store.setSummary(fp32, s32);
    store.setSummary(mixed, s16);
    QCOMPARE(cell(model, 1, RunsTableModel::Speedup), QStringLiteral("1.25\u00d7"));
    s16.median_step_ms = 12.5; // slower than fp32, the seed user's story
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

void TestRunsTable::headersSayWhatTheNumbersAre()
{
    RunStore store;
    RunsTable table(&store);
    const RunsTableModel *model = table.tableModel();
    const auto tip = [&](int column) {
        return model->headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString();
    };
    QVERIFY(tip(RunsTableModel::StepMs)
                .contains(QString::fromStdString(mixlab::step_time_definition())));
    QVERIFY(tip(RunsTableModel::Speedup)
                .contains(QString::fromStdString(mixlab::speedup_definition())));
    for (int c = RunsTableModel::Progress; c < RunsTableModel::ColumnCount; ++c)
        if (c != RunsTableModel::Policy && c != RunsTableModel::Batch)
            QVERIFY2(!tip(c).isEmpty(),
                     qPrintable(model->headerData(c, Qt::Horizontal).toString()));
}

// At the width it asks for (what the bottom row gives it at 1280 px) every shown column
// is in view: no horizontal scroll bar. Policy and batch, which the default name says, start
// hidden; ETA shows only while a run trains.
void TestRunsTable::everyShownColumnFits()
{
    QRandomGenerator rng(5);
    RunStore store;
    RunsTable table(&store);
    const int g = store.newGroup();
    for (mixlab::Policy p : {mixlab::Policy::FP32, mixlab::Policy::MixedFP16}) {
        const int id = store.addRun(configFor(p, 256), "{}", g);
        store.setStarted(id, 60, 1);
        store.setStatus(id, RunRecord::Status::Running);
        store.appendSteps(id, steps(1, 30, 4.0f, rng, nullptr));
    }
    QVERIFY(table.isColumnHidden(RunsTableModel::Policy));
    QVERIFY(table.isColumnHidden(RunsTableModel::Batch));
    QVERIFY(!table.isColumnHidden(RunsTableModel::Eta));
    table.resize(table.sizeHint().width(), 200);
    table.show();
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    QCOMPARE(table.horizontalScrollBar()->maximum(), 0);
    const int skipped = table.horizontalHeader()->sectionViewportPosition(RunsTableModel::Skipped);
    QVERIFY(skipped + table.columnWidth(RunsTableModel::Skipped) <= table.viewport()->width());
    QVERIFY(table.columnWidth(RunsTableModel::Name) >=
            table.fontMetrics().horizontalAdvance(QStringLiteral("fp32 b256")));
    for (int id : store.runIds()) store.setStatus(id, RunRecord::Status::Finished);
    QVERIFY(table.isColumnHidden(RunsTableModel::Eta));
    QVERIFY(table.sizeHint().width() < 570); // beside the log at 1280 px
}

// When a language model's columns come in (wider than a classifier's) the table scrolls
// sideways and the run's name keeps its width; given room again, the name stretches.
void TestRunsTable::nameStaysReadableWhenNarrow()
{
    RunStore store;
    RunsTable table(&store);
    table.resize(table.sizeHint().width(), 200); // a classifier's columns fit
    table.show();
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    QCOMPARE(table.horizontalScrollBar()->maximum(), 0);
    table.setDesignedLanguageModel(true); // valid and test perplexity, LR
    const int readable = table.fontMetrics().horizontalAdvance(QStringLiteral("fp32 b256"));
    QTRY_VERIFY(table.horizontalScrollBar()->maximum() > 0);
    QVERIFY2(table.columnWidth(RunsTableModel::Name) >= readable,
             qPrintable(QString::number(table.columnWidth(RunsTableModel::Name))));
    table.resize(table.sizeHint().width() + 200, 200);
    QTRY_COMPARE(table.horizontalScrollBar()->maximum(), 0);
    QVERIFY(table.columnWidth(RunsTableModel::Name) >= readable + 150); // took the room
}

void TestRunsTable::progressTextReadsOnTheFill_data()
{
    QTest::addColumn<bool>("selected");
    QTest::newRow("not selected") << false;
    QTest::newRow("selected") << true;
}

// "30 / 60" of a half-done run: the text in the row's text colour with no fill under it,
// the fill in a strip below it reaching half way, selected or not.
void TestRunsTable::progressTextReadsOnTheFill()
{
    QFETCH(bool, selected);
    QRandomGenerator rng(6);
    RunStore store;
    RunsTable table(&store);
    const int id = store.addRun(configFor(mixlab::Policy::FP32, 32), "{}", store.newGroup());
    store.setStarted(id, 60, 1);
    store.setStatus(id, RunRecord::Status::Stopped);
    store.appendSteps(id, steps(1, 30, 4.0f, rng, nullptr));
    table.setColumnWidth(RunsTableModel::Progress, 160);
    table.resize(900, 120);
    if (selected)
        table.selectRow(0);
    else
        table.clearSelection();
    table.show();
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    QImage image = table.viewport()->grab().toImage();
    image = image.scaled(table.viewport()->size()); // one pixel per logical pixel
    const QRect cell = table.visualRect(table.tableModel()->index(0, RunsTableModel::Progress));
    const QPalette palette = table.palette();
    const QColor ink = palette.color(selected ? QPalette::HighlightedText : QPalette::Text);
    const QColor fill = selected ? ink : palette.color(QPalette::Highlight);
    const auto near = [](QColor a, QColor b) {
        return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) +
                   std::abs(a.blue() - b.blue()) <
               40;
    };
    // The strip: the fill from the left edge to the middle, not beyond.
    const int stripY = cell.bottom() - 4;
    int filled = 0;
    for (int x = cell.left() + 4; x <= cell.right() - 4; ++x)
        if (near(image.pixelColor(x, stripY), fill)) ++filled;
    QVERIFY2(std::abs(filled - (cell.width() - 8) / 2) <= 2, qPrintable(QString::number(filled)));
    // Above it the text, in the ink colour, on the row's own background: no fill there.
    int inked = 0;
    const QColor background = image.pixelColor(cell.left() + 6, cell.top() + 3);
    for (int y = cell.top() + 1; y < stripY - 2; ++y)
        for (int x = cell.left() + 4; x <= cell.right() - 4; ++x) {
            const QColor c = image.pixelColor(x, y);
            if (near(c, ink)) ++inked;
            QVERIFY2(near(c, ink) || near(c, background) || !near(c, fill) || selected,
                     qPrintable(QStringLiteral("fill under the text at %1,%2").arg(x).arg(y)));
        }
    QVERIFY2(inked > 15, qPrintable(QString::number(inked)));
    QVERIFY(!near(ink, background));
}

QTEST_MAIN(TestRunsTable)
#include "tst_runstable.moc"
