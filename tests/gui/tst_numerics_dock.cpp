// The Numerics dock: grids built from crafted samples (cell shares, each format's band
// rows, the gradient band moved by the loss scale, updates and the lost-update line), the
// view switching kinds and formats, hover texts, the empty states, compare groups side by
// side, export, the experiment file keeping the samples, the run panel's setting and the
// app's default, and a real CPU run's samples reaching the store through the worker.
#include "app/mainwindow.h"
#include "files/experiment.h"
#include "numerics/numericsgrid.h"
#include "numerics/numericsheatmap.h"
#include "numerics/numericsview.h"
#include "numerics/shareschart.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"

#include "mixlab/model_spec.h"

#include "app_test_mode.h"

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <QFile>
#include <QImageReader>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "test_models.h"

using namespace mixlab;

namespace {

constexpr int k_timeoutMs = 120000;

ValueHistogram values(std::initializer_list<std::pair<int, std::uint64_t>> counts,
                      std::uint64_t zero = 0)
{
    ValueHistogram h;
    for (auto [b, n] : counts) h.binades[std::size_t(b - k_numerics_binade_min)] = n;
    h.zero = zero;
    return h;
}

// Layer 1 (dense): weights at 2^-3 (30) and 2^-2 (50) with 20 zeros; gradients as stored,
// at 2^3 (60) and 2^16 (40: fp16 overflows them); updates 12 binades below the weight (25)
// and 5 below (75). Layer 2 (activation): activations only.
NumericsSample sample(std::int64_t step, float scale)
{
    NumericsSample s;
    s.step = step;
    s.loss_scale = scale;
    LayerNumerics dense;
    dense.path = "layer 1";
    dense.type = "dense";
    dense.weights = values({{-3, 30}, {-2, 50}}, 20);
    dense.activations = values({{0, 10}});
    dense.gradients = values({{3, 60}, {16, 40}});
    UpdateHistogram u;
    u.ratios[std::size_t(-12 - k_numerics_d_min)] = 25;
    u.ratios[std::size_t(-5 - k_numerics_d_min)] = 75;
    u.idle = 7; // not updates: out of the shares
    dense.updates = u;
    LayerNumerics act;
    act.path = "layer 2";
    act.type = "activation";
    act.activations = values({{-1, 4}});
    s.layers = {dense, act};
    return s;
}

RunConfig numericsConfig(Policy policy, int every)
{
    RunConfig c;
    c.dataset.name = "synthetic";
    c.policy = policy;
    c.numerics_every = every;
    c.device = DeviceChoice::CPU;
    return c;
}

// A finished run of `group` holding the samples.
int addRun(RunStore &store, int group, Policy policy, std::vector<NumericsSample> samples)
{
    const int id = store.addRun(numericsConfig(policy, 10), QString(), group);
    store.appendNumerics(id, samples);
    store.setStatus(id, RunRecord::Status::Finished);
    return id;
}

NumericsHeatmap *heatmapOf(const NumericsView &view, int run, const QString &path)
{
    return view.findChild<NumericsHeatmap *>(QStringLiteral("heatmap:%1:%2").arg(run).arg(path));
}

// The centre of a heatmap cell, in widget coordinates.
QPointF cellCentre(const NumericsHeatmap &h, int column, int row)
{
    const QRectF plot = numericsPlotRect(QRectF(h.rect()), true);
    const int n = int(h.grid().columns.size());
    const int rows = h.rows().second - h.rows().first + 1;
    return {plot.left() + (column + 0.5) * plot.width() / n,
            plot.top() + (h.rows().second - row + 0.5) * plot.height() / rows};
}

} // namespace

class TestNumericsDock : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cellShares();
    void bandRowsPerFormat();
    void fp8BandIsPerTensorScaled();
    void gradientBandFollowsLossScale();
    void updatesAndTheLostLine();
    void displayRowsTakeInTheNearLines();
    void viewSwitchesKindAndFormat();
    void formatFollowsThePolicyUntilPicked();
    void compareGroupSideBySide();
    void tooltips();
    void emptyStates();
    void exportsPngSvgPdf();
    void experimentKeepsNumerics();
    void runPanelSettingAndAppDefault();
    void dockKeepsTheWindowWidth_data();
    void dockKeepsTheWindowWidth();
    void workerRunReachesStore();

private:
    QTemporaryDir m_settingsDir;
};

void TestNumericsDock::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    // Never touch the user's own settings (the main window reads and writes them).
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestNumericsDock::cellShares()
{
    const std::vector<NumericsGrid> grids =
        buildNumericsGrids({sample(10, 1), sample(20, 1)}, TensorKind::Weights, NumberFormat::FP16);
    QCOMPARE(grids.size(), std::size_t(1)); // layer 2 has no weights
    const NumericsGrid &g = grids[0];
    QCOMPARE(g.path, QStringLiteral("layer 1"));
    QCOMPARE(g.type, QStringLiteral("dense"));
    QCOMPARE(g.columns.size(), std::size_t(2));
    QCOMPARE(g.columns[1].step, std::int64_t(20));
    // Shares of every value, the 20 zeros included (format_shares' denominator).
    QCOMPARE(g.columns[0].total, std::uint64_t(100));
    QCOMPARE(g.share(0, -3), 0.30);
    QCOMPARE(g.share(0, -2), 0.50);
    QCOMPARE(g.share(0, -1), 0.0);
    QCOMPARE(g.count(1, -2), std::uint64_t(50));
    QVERIFY(g.valueRows.has_value());
    QCOMPARE(*g.valueRows, std::make_pair(-3, -2));
    // Weights near 2^-3 are inside fp16: nothing overflows or flushes.
    QCOMPARE(g.columns[0].overflow, 0.0);
    QCOMPARE(g.columns[0].flush, 0.0);
}

void TestNumericsDock::bandRowsPerFormat()
{
    const FormatBand fp16 = formatBand(NumberFormat::FP16);
    QCOMPARE(fp16.overflowAbove, 15);
    QCOMPARE(fp16.normalFrom, -14);
    QCOMPARE(fp16.subnormalFrom, -24);
    QCOMPARE(fp16.flushAtOrBelow, -26); // 2^-25's binade rounds up to the smallest subnormal
    const FormatBand bf16 = formatBand(NumberFormat::BF16);
    QCOMPARE(bf16.overflowAbove, 127);
    QCOMPARE(bf16.normalFrom, -126);
    QCOMPARE(bf16.subnormalFrom, -133);
    const FormatBand e4m3 = formatBand(NumberFormat::FP8E4M3);
    QCOMPARE(e4m3.overflowAbove, 8); // 448
    QCOMPARE(e4m3.normalFrom, -6);
    QCOMPARE(e4m3.subnormalFrom, -9);
    const FormatBand e5m2 = formatBand(NumberFormat::FP8E5M2);
    QCOMPARE(e5m2.overflowAbove, 15); // 57344
    QCOMPARE(e5m2.normalFrom, -14);
    QCOMPARE(e5m2.subnormalFrom, -16);
    QCOMPARE(e5m2.flushAtOrBelow, -18);
    // Every grid column of a value kind carries its format's band: the 16-bit formats'
    // where the format puts it, fp8's with its top at the largest value (activations at
    // 2^0: a per-tensor scale of 2^8 for E4M3, 2^15 for E5M2).
    for (NumberFormat f : k_number_formats) {
        const auto grids = buildNumericsGrids({sample(10, 1)}, TensorKind::Activations, f);
        QCOMPARE(grids.size(), std::size_t(2));
        const NumericsColumn &c = grids[0].columns[0];
        QVERIFY(c.band.has_value());
        const FormatLimits &l = format_limits(f);
        const int scale = isFp8(f) ? l.max_binade : 0;
        QCOMPARE(c.tensorShift.has_value(), isFp8(f));
        QCOMPARE(c.tensorShift.value_or(0), scale);
        QCOMPARE(c.band->overflowAbove, l.max_binade - scale);
        QCOMPARE(c.band->normalFrom, l.min_normal_binade - scale);
    }
}

void TestNumericsDock::fp8BandIsPerTensorScaled()
{
    // Gradients from 2^-21 (30) to 2^-2 (70), as stored at a loss scale of 2^4: unscaled
    // they sit at 2^-25 .. 2^-6. Unscaled E5M2 (smallest subnormal 2^-16) would flush all
    // of them; fp8 scales each tensor, so its band's top is at the largest value.
    NumericsSample s = sample(10, 16);
    s.layers[0].gradients = values({{-21, 30}, {-2, 70}});
    const auto e5m2 = buildNumericsGrids({s}, TensorKind::Gradients, NumberFormat::FP8E5M2);
    const NumericsColumn &c = e5m2[0].columns[0];
    QCOMPARE(c.shift, 4);
    QCOMPARE(*c.tensorShift, 15 - -2);       // 2^-2 to E5M2's top binade, 2^15
    QCOMPARE(c.band->overflowAbove, -2 - 4); // the largest value's row, unscaled
    QCOMPARE(c.band->subnormalFrom, -16 - 17 - 4);
    // E5M2 spans 2^-17 .. 2^15 (33 binades): 20 binades of values fit, nothing is lost.
    QCOMPARE(c.flush, 0.0);
    QCOMPARE(c.overflow, 0.0);
    // E4M3 spans 2^-10 .. 2^8: scaled by 2^10, 2^-21 goes to 2^-11 and flushes.
    const auto e4m3 = buildNumericsGrids({s}, TensorKind::Gradients, NumberFormat::FP8E4M3);
    QCOMPARE(*e4m3[0].columns[0].tensorShift, 8 - -2);
    QCOMPARE(e4m3[0].columns[0].flush, 0.3);
    QVERIFY(cellToolTip(e4m3[0], 0, -6).contains("scaled by 2^10"));
    // 16-bit formats stay where the format puts them.
    const auto fp16 = buildNumericsGrids({s}, TensorKind::Gradients, NumberFormat::FP16);
    QVERIFY(!fp16[0].columns[0].tensorShift.has_value());
    QCOMPARE(fp16[0].columns[0].band->overflowAbove, 15 - 4);
    QVERIFY(!cellToolTip(fp16[0], 0, -6).contains("band:"));
    // A layer whose values are all zero has no largest value: the band stays unscaled.
    s.layers[0].gradients = values({}, 50);
    const auto zeros = buildNumericsGrids({s}, TensorKind::Gradients, NumberFormat::FP8E5M2);
    QVERIFY(!zeros[0].columns[0].tensorShift.has_value());
}

void TestNumericsDock::gradientBandFollowsLossScale()
{
    // Step 10 at scale 2^16, step 20 after a backoff at 2^15, step 30 unscaled.
    const auto grids = buildNumericsGrids({sample(10, 65536), sample(20, 32768), sample(30, 1)},
                                          TensorKind::Gradients, NumberFormat::FP16);
    QCOMPARE(grids.size(), std::size_t(1));
    const NumericsGrid &g = grids[0];
    // Shown unscaled: stored 2^3 is 2^-13 at scale 2^16, 2^-12 at 2^15, 2^3 at 1.
    QCOMPARE(g.columns[0].shift, 16);
    QCOMPARE(g.count(0, 3 - 16), std::uint64_t(60));
    QCOMPARE(g.count(0, 3), std::uint64_t(0));
    QCOMPARE(g.count(1, 3 - 15), std::uint64_t(60));
    QCOMPARE(g.count(2, 3), std::uint64_t(60));
    // The band sits log2(scale) binades lower at each step.
    QCOMPARE(g.columns[0].band->overflowAbove, 15 - 16);
    QCOMPARE(g.columns[0].band->normalFrom, -14 - 16);
    QCOMPARE(g.columns[0].band->subnormalFrom, -24 - 16);
    QCOMPARE(g.columns[1].band->overflowAbove, 15 - 15);
    QCOMPARE(g.columns[2].band->overflowAbove, 15);
    // What fp16 does to the stored (scaled) values: 2^16 overflows, 40 of 100.
    QCOMPARE(g.columns[0].overflow, 0.4);
    QCOMPARE(g.columns[0].flush, 0.0);
    // Against the moved band the overflowing values sit above its line, as stored.
    QVERIFY(16 - 16 > g.columns[0].band->overflowAbove);
    QVERIFY(g.columns[0].exactShift);
    // A scale that is no power of two: its nearest binade, marked inexact.
    const auto odd =
        buildNumericsGrids({sample(10, 1000)}, TensorKind::Gradients, NumberFormat::FP16);
    QCOMPARE(odd[0].columns[0].shift, 10);
    QVERIFY(!odd[0].columns[0].exactShift);
}

void TestNumericsDock::updatesAndTheLostLine()
{
    QCOMPARE(lostUpdateTop(NumberFormat::FP16), -12);
    QCOMPARE(lostUpdateTop(NumberFormat::BF16), -9);
    NumericsSample skipped = sample(20, 1);
    skipped.skipped = true;
    skipped.layers[0].updates.reset();
    const auto grids =
        buildNumericsGrids({sample(10, 1), skipped}, TensorKind::Updates, NumberFormat::FP16);
    QCOMPARE(grids.size(), std::size_t(1));
    const NumericsGrid &g = grids[0];
    QCOMPARE(g.columns[0].total, std::uint64_t(100)); // the 7 idle weights left out
    QCOMPARE(g.share(0, -12), 0.25);
    QCOMPARE(g.share(0, -5), 0.75);
    QVERIFY(!g.columns[0].band.has_value());
    // fp16 weights lose the updates at d <= -12: 25 of 100.
    QCOMPARE(*g.columns[0].lost, 0.25);
    QVERIFY(!g.columns[1].present);
    const auto e4m3 =
        buildNumericsGrids({sample(10, 1)}, TensorKind::Updates, NumberFormat::FP8E4M3);
    QCOMPARE(*e4m3[0].columns[0].lost, 1.0); // d <= -5: every update
}

void TestNumericsDock::displayRowsTakeInTheNearLines()
{
    const auto fp16 = buildNumericsGrids({sample(10, 1)}, TensorKind::Weights, NumberFormat::FP16);
    // Values at -3..-2 (+2 margin); fp16's lines at 16 and -26 fit in 72 rows.
    QCOMPARE(*displayRows({&fp16[0]}), std::make_pair(-26, 16));
    // bf16's lines are far away: the values keep the picture.
    const auto bf16 = buildNumericsGrids({sample(10, 1)}, TensorKind::Weights, NumberFormat::BF16);
    QCOMPARE(*displayRows({&bf16[0]}), std::make_pair(-5, 0));
    QVERIFY(!displayRows({nullptr}).has_value());
}

void TestNumericsDock::viewSwitchesKindAndFormat()
{
    RunStore store;
    const int id = addRun(store, store.newGroup(), Policy::MixedFP16, {sample(10, 65536)});
    NumericsView view(&store);
    view.resize(800, 900);
    view.setRun(id);
    view.setKind(TensorKind::Weights);
    NumericsHeatmap *h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QVERIFY(h);
    QCOMPARE(h->grid().kind, TensorKind::Weights);
    QVERIFY(!heatmapOf(view, id, QStringLiteral("layer 2"))); // no weights there

    // The combo box drives the view.
    auto *kind = view.findChild<QComboBox *>("numericsKindCombo");
    kind->setCurrentIndex(kind->findData(int(TensorKind::Activations)));
    QCOMPARE(view.kind(), TensorKind::Activations);
    QVERIFY(heatmapOf(view, id, QStringLiteral("layer 2")));

    view.setKind(TensorKind::Gradients);
    QCOMPARE(kind->currentData().toInt(), int(TensorKind::Gradients));
    h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QCOMPARE(h->grid().columns[0].band->overflowAbove, 15 - 16);

    auto *format = view.findChild<QComboBox *>("numericsFormatCombo");
    format->setCurrentIndex(format->findData(int(NumberFormat::BF16)));
    QCOMPARE(view.format(), NumberFormat::BF16);
    h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QCOMPARE(h->grid().format, NumberFormat::BF16);
    QCOMPARE(h->grid().columns[0].band->overflowAbove, 127 - 16);
    QVERIFY(view.findChild<QLabel *>("numericsLegend")->text().contains("2^127"));

    view.setKind(TensorKind::Updates);
    h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QCOMPARE(h->grid().kind, TensorKind::Updates);
    QVERIFY(view.findChild<QLabel *>("numericsLegend")->text().contains("-9"));
    QVERIFY(view.emptyText().isEmpty());
}

void TestNumericsDock::formatFollowsThePolicyUntilPicked()
{
    RunStore store;
    const int fp8 = addRun(store, store.newGroup(), Policy::MixedFP8, {sample(10, 1)});
    const int bf16 = addRun(store, store.newGroup(), Policy::MixedBF16, {sample(10, 1)});
    NumericsView view(&store);
    auto *format = view.findChild<QComboBox *>("numericsFormatCombo");
    // mixed_fp8's recipe gives gradients E5M2, weights and activations E4M3; its updates
    // go into fp32 masters read as bf16.
    view.setRun(fp8);
    QCOMPARE(view.kind(), TensorKind::Gradients);
    QCOMPARE(view.format(), NumberFormat::FP8E5M2);
    QCOMPARE(format->currentData().toInt(), int(NumberFormat::FP8E5M2));
    QCOMPARE(heatmapOf(view, fp8, QStringLiteral("layer 1"))->grid().format, NumberFormat::FP8E5M2);
    const QString legend = view.findChild<QLabel *>("numericsLegend")->text();
    QVERIFY2(legend.contains("scale per tensor") && legend.contains("normal 29 binades below") &&
                 legend.contains("33 and more below") && !legend.contains("2^15"),
             qPrintable(legend));
    view.setKind(TensorKind::Activations);
    QCOMPARE(view.format(), NumberFormat::FP8E4M3);
    view.setKind(TensorKind::Updates);
    QCOMPARE(view.format(), NumberFormat::BF16);
    view.setRun(bf16);
    QCOMPARE(view.format(), NumberFormat::BF16);
    // Runs shown side by side share the narrowest policy's format, whichever is chosen.
    const int group = store.newGroup();
    const int fp32 = addRun(store, group, Policy::FP32, {sample(10, 1)});
    addRun(store, group, Policy::MixedFP8, {sample(10, 1)});
    view.setKind(TensorKind::Gradients);
    view.setRun(fp32);
    QCOMPARE(view.format(), NumberFormat::FP8E5M2);
    // Once the user picks a format it stays, whatever the run or the kind.
    format->setCurrentIndex(format->findData(int(NumberFormat::FP16)));
    QCOMPARE(view.format(), NumberFormat::FP16);
    view.setRun(fp8);
    view.setKind(TensorKind::Gradients);
    QCOMPARE(view.format(), NumberFormat::FP16);
    QCOMPARE(heatmapOf(view, fp8, QStringLiteral("layer 1"))->grid().format, NumberFormat::FP16);
}

void TestNumericsDock::compareGroupSideBySide()
{
    RunStore store;
    const int group = store.newGroup();
    const int fp32 = addRun(store, group, Policy::FP32, {sample(10, 1)});
    const int mixed = addRun(store, group, Policy::MixedFP16, {sample(10, 65536)});
    const int other = addRun(store, store.newGroup(), Policy::FP32, {sample(10, 1)});
    NumericsView view(&store);
    view.setRun(mixed);
    QCOMPARE(view.shownRuns(), (std::vector<int>{fp32, mixed}));
    NumericsHeatmap *a = heatmapOf(view, fp32, QStringLiteral("layer 1"));
    NumericsHeatmap *b = heatmapOf(view, mixed, QStringLiteral("layer 1"));
    QVERIFY(a && b);
    QVERIFY(!heatmapOf(view, other, QStringLiteral("layer 1")));
    // One y range for the layer, so the two read against each other.
    QCOMPARE(a->rows(), b->rows());
    QCOMPARE(a->grid().columns[0].shift, 0);
    QCOMPARE(b->grid().columns[0].shift, 16);

    // New samples of a shown run arrive through the store; a hidden dock takes them in
    // when it shows, a visible one within its refresh interval.
    store.appendNumerics(fp32, {sample(20, 1)});
    QTest::qWait(400);
    QCOMPARE(heatmapOf(view, fp32, QStringLiteral("layer 1"))->grid().columns.size(),
             std::size_t(1));
    view.show();
    QCOMPARE(heatmapOf(view, fp32, QStringLiteral("layer 1"))->grid().columns.size(),
             std::size_t(2));
    store.appendNumerics(fp32, {sample(30, 1)});
    QTRY_COMPARE(heatmapOf(view, fp32, QStringLiteral("layer 1"))->grid().columns.size(),
                 std::size_t(3));
}

void TestNumericsDock::tooltips()
{
    RunStore store;
    const int id = addRun(store, store.newGroup(), Policy::MixedFP16, {sample(10, 65536)});
    NumericsView view(&store);
    view.resize(700, 900);
    view.setRun(id);
    view.setKind(TensorKind::Weights);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    NumericsHeatmap *h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QVERIFY(h->width() > 100 && h->height() > 100);
    const QPointF p = cellCentre(*h, 0, -3);
    QCOMPARE(h->cellAt(p), std::make_optional(std::make_pair(0, -3)));
    QCOMPARE(h->toolTipAt(p), QStringLiteral("layer 1 (dense), step 10\nbinade 2^-3 .. 2^-2\n"
                                             "share 30.00% (30 of 100 values)"));
    QVERIFY(h->toolTipAt(QPointF(1, 1)).isEmpty()); // the label margin

    view.setKind(TensorKind::Gradients);
    h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QCOMPARE(h->toolTipAt(cellCentre(*h, 0, 3 - 16)),
             QStringLiteral("layer 1 (dense), step 10\nbinade 2^-13 .. 2^-12\n"
                            "share 60.00% (60 of 100 values)\nunscaled: stored x 65536 (2^16)"));
    auto *chart = view.findChild<SharesChart *>(QStringLiteral("shares:%1:layer 1").arg(id));
    QVERIFY(chart);
    QCOMPARE(chart->toolTipAt(QPointF(chart->width() / 2.0, chart->height() / 2.0)),
             QStringLiteral("step 10: fp16 overflow 40.00%, flush 0"));

    view.setKind(TensorKind::Updates);
    h = heatmapOf(view, id, QStringLiteral("layer 1"));
    QVERIFY(h->toolTipAt(cellCentre(*h, 0, -12))
                .contains(QStringLiteral("update 12 binades below its weight")));
    chart = view.findChild<SharesChart *>(QStringLiteral("shares:%1:layer 1").arg(id));
    QCOMPARE(chart->toolTipAt(QPointF(chart->width() / 2.0, 10)),
             QStringLiteral("step 10: fp16 weights would lose 25.00% of the updates"));
}

void TestNumericsDock::emptyStates()
{
    RunStore store;
    NumericsView view(&store);
    QVERIFY(view.emptyText().contains("No run chosen"));
    RunConfig off = numericsConfig(Policy::FP32, 0);
    const int offId = store.addRun(off, QString(), store.newGroup());
    view.setRun(offId);
    QVERIFY(view.emptyText().contains("Numerics were off"));
    QVERIFY(view.emptyText().contains("Numerics every"));
    QVERIFY(!view.findChild<QWidget *>("numericsExportButton")->isEnabled());

    const int onId = store.addRun(numericsConfig(Policy::FP32, 50), QString(), store.newGroup());
    store.setStatus(onId, RunRecord::Status::Running);
    view.setRun(onId);
    QVERIFY2(view.emptyText().contains("first sample comes after step 50"),
             qPrintable(view.emptyText()));
    // The first sample arrives: the heatmaps replace the note.
    store.appendNumerics(onId, {sample(50, 1)});
    view.refreshNow();
    QVERIFY(view.emptyText().isEmpty());
    QVERIFY(heatmapOf(view, onId, QStringLiteral("layer 1")));

    // A run that ended before its first sample says so.
    const int shortId = store.addRun(numericsConfig(Policy::FP32, 50), QString(), store.newGroup());
    StepMetrics m;
    m.step = 20;
    store.appendSteps(shortId, {m});
    store.setStatus(shortId, RunRecord::Status::Finished);
    view.setRun(shortId);
    QVERIFY2(
        view.emptyText().contains("ended at step 20, before its first numerics sample at step 50"),
        qPrintable(view.emptyText()));
}

void TestNumericsDock::exportsPngSvgPdf()
{
    RunStore store;
    const int group = store.newGroup();
    addRun(store, group, Policy::FP32, {sample(10, 1), sample(20, 1)});
    const int id = addRun(store, group, Policy::MixedFP16, {sample(10, 65536), sample(20, 32768)});
    NumericsView view(&store);
    view.setRun(id);
    QTemporaryDir dir;
    QString error;
    const QString png = dir.filePath("n.png");
    QVERIFY2(view.exportTo(png, &error), qPrintable(error));
    QImageReader reader(png);
    QCOMPARE(reader.size(), view.exportSize());
    const QImage image(png);
    // The heatmaps are drawn: viridis colours appear (not just white and text).
    bool coloured = false;
    for (int y = 0; y < image.height() && !coloured; y += 3)
        for (int x = 0; x < image.width() && !coloured; x += 3) {
            const QColor c = image.pixelColor(x, y);
            coloured = c.green() > c.red() + 40 && c.blue() > 60;
        }
    QVERIFY(coloured);
    for (const char *name : {"n.svg", "n.pdf"}) {
        const QString path = dir.filePath(name);
        QVERIFY2(view.exportTo(path, &error), qPrintable(error));
        QVERIFY(QFileInfo(path).size() > 1000);
    }
    QVERIFY(!view.exportTo(dir.filePath("n.bmp"), &error));
    QVERIFY(error.contains(".png"));
    // Nothing to export: a message, no file.
    RunStore empty;
    NumericsView none(&empty);
    QVERIFY(!none.exportTo(dir.filePath("none.png"), &error));
    QVERIFY(!QFile::exists(dir.filePath("none.png")));
}

void TestNumericsDock::experimentKeepsNumerics()
{
    RunStore store;
    const int group = store.newGroup();
    const int id = addRun(store, group, Policy::MixedFP16, {sample(10, 65536), sample(20, 32768)});
    addRun(store, group, Policy::FP32, {});
    QTemporaryDir dir;
    const QString path = dir.filePath("e.mixlab.json");
    ExperimentFile file;
    file.model = test::tiny_mlp();
    file.config = numericsConfig(Policy::MixedFP16, 25);
    QString error;
    QVERIFY2(saveExperiment(path, file, store, &error), qPrintable(error));

    RunStore loaded;
    ExperimentFile loadedFile;
    QVERIFY2(loadExperiment(path, &loadedFile, &loaded, &error), qPrintable(error));
    QCOMPARE(loadedFile.config.numerics_every, 25); // the setting, in the file's config
    const std::vector<int> ids = loaded.runIds();
    QCOMPARE(ids.size(), std::size_t(2));
    QVERIFY(loaded.run(ids[0])->numerics == store.run(id)->numerics);
    QVERIFY(loaded.run(ids[1])->numerics.empty());
    // The reopened experiment shows the same dock.
    NumericsView before(&store), after(&loaded);
    before.setRun(id);
    after.setRun(ids[0]);
    QCOMPARE(heatmapOf(after, ids[0], QStringLiteral("layer 1"))->grid().columns.size(),
             std::size_t(2));
    QCOMPARE(heatmapOf(after, ids[0], QStringLiteral("layer 1"))->rows(),
             heatmapOf(before, id, QStringLiteral("layer 1"))->rows());

    // A file from before the numerics (no "numerics" key) still opens, without samples.
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    nlohmann::json j = nlohmann::json::parse(f.readAll().toStdString());
    f.close();
    for (auto &run : j["runs"]) run.erase("numerics");
    const QString old = dir.filePath("old.mixlab.json");
    QFile o(old);
    QVERIFY(o.open(QIODevice::WriteOnly));
    o.write(QByteArray::fromStdString(j.dump()));
    o.close();
    RunStore oldStore;
    QVERIFY2(loadExperiment(old, &loadedFile, &oldStore, &error), qPrintable(error));
    QVERIFY(oldStore.run(oldStore.runIds()[0])->numerics.empty());
}

void TestNumericsDock::runPanelSettingAndAppDefault()
{
    RunPanel panel;
    RunConfig c = panel.config();
    c.numerics_every = 30;
    panel.setConfig(c);
    QCOMPARE(panel.config().numerics_every, 30);
    auto *spin = panel.findChild<QSpinBox *>("numericsEverySpin");
    QVERIFY(spin);
    QSignalSpy changed(&panel, &RunPanel::configChanged);
    spin->setValue(0);
    QCOMPARE(panel.config().numerics_every, 0);
    QCOMPARE(spin->text(), QStringLiteral("off"));
    QCOMPARE(changed.count(), 1);

    // The app starts with numerics on at its default interval, and the setting goes into
    // the run's config as the worker gets it.
    MainWindow window;
    window.setConfirmCloseForTesting(false);
    QCOMPARE(window.runPanel()->config().numerics_every, RunPanel::k_defaultNumericsEvery);
    QVERIFY(window.numericsDock());
    QVERIFY(!window.numericsDock()->isVisible());
    QAction *action = window.findChild<QAction *>("numericsAction");
    QVERIFY(action);
}

void TestNumericsDock::dockKeepsTheWindowWidth_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280x800") << QSize(1280, 800);
    QTest::newRow("1600x1000") << QSize(1600, 1000);
}

// Opening Numerics on a compare keeps the window as wide as it was: the dock takes the
// designer column's place rather than growing the window past a 1280-pixel screen. It
// grew to 1331 pixels under X11 (xcb), showing the dock before the hidden column had left
// the layout; the offscreen platform these suites run on does not grow a window to its
// layout's minimum that way, so this holds the invariant, and the 1280x800 screenshot of
// a scripted compare (`mixlab --numerics --size 1280x800`) is what showed the defect.
void TestNumericsDock::dockKeepsTheWindowWidth()
{
    QFETCH(QSize, size);
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const int g = w.store()->newGroup();
    addRun(*w.store(), g, Policy::FP32, {sample(10, 1.0f), sample(20, 1.0f)});
    addRun(*w.store(), g, Policy::MixedFP16, {sample(10, 65536.0f), sample(20, 65536.0f)});
    w.openNumerics();
    QTRY_VERIFY(w.numericsDock()->isVisible() && w.numericsDock()->width() >= 420);
    QTest::qWait(100); // the dock's layout pass (makeRoomForDock) has run
    QCOMPARE(w.width(), size.width());
    w.numericsDock()->close();
    QTRY_VERIFY(w.findChild<QSplitter *>("leftSplitter")->isVisible());
}

void TestNumericsDock::workerRunReachesStore()
{
    // The seed MLP (Dense 3000, Dense 1000) on a little synthetic data, on the CPU: its
    // samples travel through the worker's batches into the store.
    const ModelSpec seed =
        load_model_spec(std::string(MIXLAB_SOURCE_DIR) + "/resources/models/seed-mlp.json");
    RunConfig c = numericsConfig(Policy::MixedFP16, 2);
    c.dataset.synthetic_train = 64;
    c.dataset.synthetic_test = 16;
    c.batch_size = 16;
    c.steps = 4;
    RunStore store;
    RunController controller(&store);
    QSignalSpy appended(&store, &RunStore::numericsAppended);
    const int group = controller.start(seed, {c});
    QVERIFY(group > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!controller.isRunning(), k_timeoutMs);
    const RunRecord *r = store.run(store.groupRuns(group).front());
    QVERIFY2(r->status == RunRecord::Status::Finished, qPrintable(r->failure));
    QVERIFY(appended.count() >= 1);
    QCOMPARE(r->numerics.size(), std::size_t(2));
    QCOMPARE(r->numerics[0].step, std::int64_t(2));
    QCOMPARE(r->numerics[1].step, std::int64_t(4));
    QVERIFY(r->numerics[0].loss_scale > 1); // mixed_fp16 scales its loss
    // Every dense layer sampled its weights, gradients and updates.
    int dense = 0;
    for (const LayerNumerics &l : r->numerics[0].layers) {
        if (l.type != "dense") continue;
        ++dense;
        QVERIFY(l.weights && l.weights->total() > 0);
        QVERIFY(l.gradients && l.activations);
    }
    QCOMPARE(dense, 3);
    // And the dock draws them.
    NumericsView view(&store);
    view.setRun(r->id);
    QVERIFY(view.emptyText().isEmpty());
    QVERIFY(heatmapOf(view, r->id, QStringLiteral("layer 1")) ||
            heatmapOf(view, r->id, QStringLiteral("layer 2")));
}

QTEST_MAIN(TestNumericsDock)
#include "tst_numerics_dock.moc"
