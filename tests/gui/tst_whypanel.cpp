// The Why? panel, offscreen: RunFacts built from a RunStore (losses, loss-scale changes,
// profiles), the runs table, the profiling views (phase bars, sortable layer table,
// roofline), the explain() rows for a sigmoid-output model compared fp32 against
// mixed_fp16 worded for the app, Apply for every kind of fix (units and filters, float32,
// activation as undoable designer edits; policy and batch as run-panel changes) that stays
// "Applied" until undone, profiles through experiment files, a group that goes away, and
// the main window's Why? action following the runs table's selection.
#include "files/experiment.h"
#include "analysis/layertablemodel.h"
#include "app/mainwindow.h"
#include "designer/layerpath.h"
#include "designer/layerpropertyeditor.h"
#include "designer/modeldesigner.h"
#include "analysis/phasebars.h"
#include "analysis/rooflinechart.h"
#include "analysis/runfacts_from_store.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstore.h"
#include "analysis/whypanel.h"

#include "mixlab/model_spec.h"
#include "mixlab/step_time.h"

#include "gui_fixtures.h"
#include "profile_checks.h"

#include <limits>

#include <QAction>
#include <QBarSet>
#include <QChart>
#include <QComboBox>
#include <QFile>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDockWidget>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

namespace {

// Seed-MLP style, tiny: logits from a 10-unit dense left in 16 bits, then a sigmoid.
const char *k_model = R"({"format": "mixlab-model/1", "name": "tiny-seed",
    "layers": [{"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
               {"type": "dense", "units": 10},
               {"type": "activation", "activation": "sigmoid", "dtype": "float32"}]})";

// Models whose hidden GEMM layer's output width (20 units, 12 filters) keeps tensor cores
// off their fast path under mixed_fp16 and is most of the work: explain() fixes it with
// set_units, to the next multiple of 8, in the layer the path names (nested ones too).
const char *k_denseModel = R"({"format": "mixlab-model/1", "name": "dense-20",
    "layers": [{"type": "flatten"}, {"type": "dense", "units": 20, "activation": "relu"},
               {"type": "dense", "units": 10}]})";
const char *k_convModel = R"({"format": "mixlab-model/1", "name": "conv-12",
    "layers": [{"type": "conv2d", "filters": 12, "kernel": 3, "padding": "same", "activation": "relu"},
               {"type": "flatten"}, {"type": "dense", "units": 10}]})";
const char *k_blockModel = R"({"format": "mixlab-model/1", "name": "block-12",
    "layers": [{"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same", "activation": "relu"},
               {"type": "residual", "activation": "relu", "body": [
                   {"type": "conv2d", "filters": 12, "kernel": 3, "padding": "same", "activation": "relu"},
                   {"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same"}]},
               {"type": "flatten"}, {"type": "dense", "units": 10}]})";

const mixlab::Shape k_input{{4, 4, 1}};
constexpr int k_classes = 10;

int addFinishedRun(RunStore &store, int group, mixlab::Policy policy, double medianMs, int halveAt,
                   QRandomGenerator &rng, mixlab::BackendKind backend = mixlab::BackendKind::Cpu,
                   const char *model = k_model)
{
    FinishedRunSpec spec;
    spec.modelJson = QString::fromUtf8(model);
    spec.input = k_input;
    spec.policy = policy;
    spec.medianMs = medianMs;
    spec.halveAt = halveAt;
    spec.backend = backend;
    return addFinishedRun(store, group, spec, rng);
}

// Where most tests start: one finished group, fp32 (2 ms a step) against mixed_fp16.
struct FinishedCompare {
    RunStore store;
    QRandomGenerator rng;
    int group = 0, fp32 = 0, mixed = 0;

    explicit FinishedCompare(quint32 seed, double mixedMs = 1.0, int mixedHalveAt = 0,
                             mixlab::BackendKind backend = mixlab::BackendKind::Cpu,
                             const char *model = k_model)
        : rng(seed)
    {
        group = store.newGroup();
        fp32 = addFinishedRun(store, group, mixlab::Policy::FP32, 2.0, 0, rng, backend, model);
        mixed = addFinishedRun(store, group, mixlab::Policy::MixedFP16, mixedMs, mixedHalveAt, rng,
                               backend, model);
    }
};

// A designer holding the model the runs trained.
struct DesignerOnModel {
    ModelDesigner designer;
    explicit DesignerOnModel(const char *model = k_model)
    {
        designer.setInput(k_input, k_classes);
        designer.setSpec(mixlab::parse_model_spec(model));
    }
};

// A profiling pass by hand: random phase times (their sum is the span, as the engine
// measures it), `gemms` dense layers with random times and sizes, and a cast and an
// activation that are not GEMMs.
mixlab::StepProfile makeProfile(QRandomGenerator &rng, int gemms)
{
    mixlab::StepProfile p;
    p.steps = 10;
    for (double &v : p.phase_ms) {
        v = 0.05 + rng.generateDouble();
        p.device_ms += v;
    }
    p.step_ms = p.device_ms * (0.95 + 0.1 * rng.generateDouble());
    p.wall_ms = p.step_ms * 1.25;
    p.overhead_ms = p.wall_ms - p.step_ms;
    p.gpu_busy_fraction = p.step_ms / p.wall_ms;
    for (int i = 0; i < gemms; ++i) {
        mixlab::LayerTime l;
        l.path = "layer " + std::to_string(2 * i + 1);
        l.type = "dense";
        l.forward_ms = 0.01 + 0.5 * rng.generateDouble();
        l.backward_ms = 0.01 + rng.generateDouble();
        l.flops = 1e6 * (1 + 100 * rng.generateDouble());
        l.bytes = 1e4 * (1 + 100 * rng.generateDouble());
        l.is_gemm = true;
        l.tensor_cores = i % 2 == 0;
        l.tensor_core_note = l.tensor_cores ? "" : "k = 10 is not a multiple of 8";
        p.layers.push_back(l);
        mixlab::LayerTime a;
        a.path = "layer " + std::to_string(2 * i + 2);
        a.type = i == 0 ? "cast" : "activation";
        a.forward_ms = 0.001 + 0.1 * rng.generateDouble();
        a.backward_ms = 0.001 + 0.1 * rng.generateDouble();
        a.bytes = 1e4;
        p.layers.push_back(a);
    }
    return p;
}

int indexOf(const WhyPanel &panel, const std::string &id)
{
    const auto &ex = panel.explanations();
    for (std::size_t i = 0; i < ex.size(); ++i)
        if (ex[i].id == id) return int(i);
    return -1;
}

// The first explanation with a fix of this kind; -1 when none.
int indexOfFix(const WhyPanel &panel, mixlab::FixKind kind)
{
    const auto &ex = panel.explanations();
    for (std::size_t i = 0; i < ex.size(); ++i)
        if (ex[i].fix && ex[i].fix->kind == kind) return int(i);
    return -1;
}

} // namespace

class TestWhyPanel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void factsFromStore();
    void unfinishedGroupIsNotExplained();
    void showsRunsAndExplanations();
    void applyFloat32IsUndoable();
    void applyActivation();
    void applyUnits_data();
    void applyUnits();
    void applyBatch();
    void applyPolicy();
    void profileReachesFacts();
    void phaseBarsPerPolicy_data();
    void phaseBarsPerPolicy();
    void layerTableSorts();
    void rooflineHasOnePointPerGemm();
    void groupWithoutProfile();
    void profileSurvivesExperimentFile();
    void experimentWithoutProfileLoads();
    void suggestionsNameTheAppsControls();
    void tableHeadersFitANarrowDock();
    void groupGoneClearsThePanel();
    void mainWindowAction();
    void dockLeavesTheChartsTheirWidth_data();
    void dockLeavesTheChartsTheirWidth();
    void newSessionOpensWithoutWhy();

private:
    QTemporaryDir m_settingsDir;
};

void TestWhyPanel::initTestCase()
{
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestWhyPanel::factsFromStore()
{
    FinishedCompare f(11, 1.0, 7);
    RunStore &store = f.store;
    const int g = f.group;
    const int b = f.mixed;
    QString error;
    const std::vector<mixlab::RunFacts> facts = runFactsFromStore(store, g, &error);
    QVERIFY2(facts.size() == 2, qPrintable(error));
    QCOMPARE(facts[0].policy, mixlab::Policy::FP32);
    QCOMPARE(facts[1].policy, mixlab::Policy::MixedFP16);
    QCOMPARE(facts[1].batch, 32);
    QCOMPARE(facts[1].baseline, 0);
    // Losses copied exactly, in step order.
    QCOMPARE(facts[1].train_loss.size(), std::size_t(20));
    for (std::size_t i = 0; i < 20; ++i)
        QCOMPARE(facts[1].train_loss[i], store.run(b)->steps[i].loss);
    // First step's scale, then one entry where it changed.
    using Entry = std::pair<std::int64_t, float>;
    QCOMPARE(facts[0].scale_history, (std::vector<Entry>{{1, 65536.f}}));
    QCOMPARE(facts[1].scale_history, (std::vector<Entry>{{1, 65536.f}, {7, 32768.f}}));
    QCOMPARE(facts[0].device.backend, mixlab::BackendKind::Cpu);
    QCOMPARE(facts[0].graph.head, mixlab::OutputHead::SigmoidKeras);
    QCOMPARE(facts[0].graph.classes, k_classes);
    QCOMPARE(latestFinishedGroup(store), g);
}

void TestWhyPanel::unfinishedGroupIsNotExplained()
{
    FinishedCompare f(12);
    RunStore &store = f.store;
    const int g = f.group;
    const int b = f.mixed;
    store.setStatus(b, RunRecord::Status::Running);
    QVERIFY(!groupFinished(store, g));
    QCOMPARE(latestFinishedGroup(store), 0);
    QVERIFY(runFactsFromStore(store, g).empty());
    WhyPanel panel(&store);
    panel.showGroup(0);
    QCOMPARE(panel.group(), 0);
    QVERIFY(panel.explanations().empty());
    // Finishing the run brings the group in, without being asked again.
    store.setStatus(b, RunRecord::Status::Finished);
    QTRY_COMPARE(panel.group(), g);
    QVERIFY(!panel.explanations().empty());
}

void TestWhyPanel::showsRunsAndExplanations()
{
    FinishedCompare f(13, 0.8, 7);
    RunStore &store = f.store;
    const int g = f.group;
    WhyPanel panel(&store);
    panel.resize(600, 800);
    panel.show();
    panel.showGroup(g);
    QCOMPARE(panel.group(), g);

    QTableWidget *t = panel.runsTable();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("fp32"));
    QCOMPARE(t->item(1, 0)->text(), QStringLiteral("mixed_fp16"));
    QCOMPARE(t->item(1, 1)->text(), QStringLiteral("0.800"));
    QCOMPARE(t->item(0, 2)->text(), QStringLiteral("1.00x"));
    QCOMPARE(t->item(1, 2)->text(), QStringLiteral("2.50x"));
    QCOMPARE(t->item(1, 4)->text(), QStringLiteral("32768"));

    const int sigmoid = indexOf(panel, "sigmoid_output");
    const int fp32 = indexOf(panel, "output_float32");
    QVERIFY(sigmoid >= 0);
    QVERIFY(fp32 >= 0);
    // Paths count from 0, as build_graph names them: the 10-unit dense is "layer 2".
    QCOMPARE(panel.explanations()[std::size_t(fp32)].fix,
             std::optional(mixlab::Fix::set_dtype_float32("layer 2")));
    // Each explanation's sentence and suggestion are on screen.
    for (const mixlab::Explanation &e : panel.explanations()) {
        QWidget *card = panel.findChild<QWidget *>(
            QStringLiteral("whyCard_%1").arg(QString::fromStdString(e.id)));
        QVERIFY2(card, e.id.c_str());
    }
    // No profiling pass in this store: the panel says so instead of empty charts.
    auto *noProfile = panel.findChild<QLabel *>("whyNoProfile");
    QVERIFY(noProfile && noProfile->text().contains(QStringLiteral("No profiling pass")));
    // Without a designer the model fixes cannot be applied.
    QVERIFY(panel.applyButton(fp32));
    QVERIFY(!panel.applyButton(fp32)->isEnabled());
    QVERIFY(!panel.apply(fp32));
}

void TestWhyPanel::applyFloat32IsUndoable()
{
    FinishedCompare f(14);
    DesignerOnModel d;
    ModelDesigner &designer = d.designer;
    WhyPanel panel(&f.store);
    panel.setDesigner(&designer);
    panel.show();
    panel.showGroup(0);
    const int fp32 = indexOf(panel, "output_float32");
    QVERIFY(fp32 >= 0);
    QPushButton *apply = panel.applyButton(fp32);
    QVERIFY(apply && apply->isEnabled());
    QVERIFY(!designer.spec().layers[2].force_fp32);

    QTest::mouseClick(apply, Qt::LeftButton);
    QVERIFY(designer.spec().layers[2].force_fp32);
    QCOMPARE(designer.undoStack()->count(), 1);
    QVERIFY(
        panel.appliedText().contains(QStringLiteral("layer 2: dtype float32; undo with Ctrl+Z")));
    QVERIFY(!apply->isEnabled());
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    // Nothing else of the model moved.
    mixlab::ModelSpec expected = mixlab::parse_model_spec(k_model);
    expected.layers[2].force_fp32 = true;
    QVERIFY(designer.spec() == expected);

    // The panel rebuilt (a run renamed, a new group, a reopened file): the fix is in the
    // model, so its button stays "Applied", and applying it again adds no undo step.
    const QPointer<QPushButton> before = apply;
    f.store.rename(f.mixed, QStringLiteral("renamed"));
    QTRY_VERIFY(!before); // the cards were built again
    apply = panel.applyButton(fp32);
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    QVERIFY(!apply->isEnabled());
    QString error;
    QVERIFY(!panel.apply(fp32, &error));
    QVERIFY2(error.contains(QStringLiteral("already")), qPrintable(error));
    QCOMPARE(designer.undoStack()->count(), 1);

    // Undone: the advice applies again.
    designer.undoStack()->undo();
    QVERIFY(!designer.spec().layers[2].force_fp32);
    QVERIFY(designer.spec() == mixlab::parse_model_spec(k_model));
    QVERIFY(apply->isEnabled());
    QCOMPARE(apply->text(), QStringLiteral("Apply"));
    // Done by hand in the property editor rather than by Apply: "Applied" all the same.
    designer.undoStack()->redo();
    QVERIFY(!apply->isEnabled());
}

void TestWhyPanel::applyActivation()
{
    FinishedCompare f(15);
    DesignerOnModel d;
    ModelDesigner &designer = d.designer;
    WhyPanel panel(&f.store);
    panel.setDesigner(&designer);
    panel.showGroup(f.group);
    const int sigmoid = indexOf(panel, "sigmoid_output");
    QVERIFY(sigmoid >= 0);
    QPushButton *apply = panel.applyButton(sigmoid);
    QVERIFY(apply && apply->isEnabled());
    apply->click();
    QCOMPARE(designer.spec().layers[3].activation, mixlab::Activation::Softmax);
    QCOMPARE(designer.undoStack()->count(), 1);
    QVERIFY(panel.appliedText().startsWith(QStringLiteral("layer 3: activation softmax")));
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    QVERIFY(!apply->isEnabled());
    designer.undoStack()->undo();
    QCOMPARE(designer.spec().layers[3].activation, mixlab::Activation::Sigmoid);
    QVERIFY(designer.spec() == mixlab::parse_model_spec(k_model));
    QCOMPARE(apply->text(), QStringLiteral("Apply"));
    QVERIFY(apply->isEnabled());

    // A model that no longer has the layer is refused, not edited elsewhere.
    designer.setSpec(mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "short",
        "layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]})"));
    QString error;
    QVERIFY(!panel.apply(sigmoid, &error));
    QVERIFY2(error.contains(QStringLiteral("layer 3")), qPrintable(error));
    QCOMPARE(designer.undoStack()->count(), 0);
}

void TestWhyPanel::applyUnits_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("path");  // the graph's name of the layer
    QTest::addColumn<QString>("field"); // the property editor's spin box
    QTest::addColumn<int>("before");
    QTest::addColumn<int>("after");
    QTest::newRow("dense units") << k_denseModel << "layer 1"
                                 << "units" << 20 << 24;
    QTest::newRow("conv2d filters") << k_convModel << "layer 0"
                                    << "filters" << 12 << 16;
    QTest::newRow("nested conv2d") << k_blockModel << "layer 1 > body 0"
                                   << "filters" << 12 << 16;
}

// set_units: the layer's units (dense) or filters (conv2d) as one undo step of its own,
// "Applied" until undone; a spin-box step in the property editor after it is a step of its
// own too, so undo takes back exactly what Apply did.
void TestWhyPanel::applyUnits()
{
    QFETCH(QString, model);
    QFETCH(QString, path);
    QFETCH(QString, field);
    QFETCH(int, before);
    QFETCH(int, after);
    const QByteArray json = model.toUtf8();
    FinishedCompare f(19, 1.0, 0, mixlab::BackendKind::Cpu, json.constData());
    DesignerOnModel d(json.constData());
    ModelDesigner &designer = d.designer;
    QVERIFY2(designer.isValid(), qPrintable(designer.validationMessage()));
    WhyPanel panel(&f.store);
    panel.setDesigner(&designer);
    panel.show();
    panel.showGroup(f.group);
    const int units = indexOfFix(panel, mixlab::FixKind::SetUnits);
    QVERIFY(units >= 0);
    const mixlab::Explanation e = panel.explanations()[std::size_t(units)];
    QCOMPARE(e.id, std::string("dims_multiple_of_8"));
    QCOMPARE(e.fix, std::optional(mixlab::Fix::set_units(path.toStdString(), after)));
    const mixlab::ModelSpec original = designer.spec();
    const LayerPath layerPath = pathNamedIn(path, original);
    const auto width = [&](const mixlab::ModelSpec &spec) {
        const mixlab::LayerSpec *l = layerAt(spec, layerPath);
        return l->type == mixlab::LayerType::Dense ? l->units : l->filters;
    };
    QCOMPARE(width(original), before);

    QPushButton *apply = panel.applyButton(units);
    QVERIFY(apply && apply->isEnabled());
    QCOMPARE(apply->text(), QStringLiteral("Apply"));
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(width(designer.spec()), after);
    QCOMPARE(designer.undoStack()->count(), 1);
    QCOMPARE(panel.appliedText(),
             QStringLiteral("%1: %2 %3; undo with Ctrl+Z").arg(path, field).arg(after));
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    QVERIFY(!apply->isEnabled());
    // Nothing else of the model moved.
    mixlab::ModelSpec expected = original;
    mixlab::LayerSpec *edited = layerAt(expected, layerPath);
    (edited->type == mixlab::LayerType::Dense ? edited->units : edited->filters) = after;
    QVERIFY(designer.spec() == expected);

    // The edited layer is selected: a step of its spin box is an undo step of its own.
    auto *spin = designer.propertyEditor()->findChild<QSpinBox *>(field);
    QVERIFY(spin);
    QCOMPARE(designer.propertyEditor()->layerPath(), layerPath);
    QCOMPARE(spin->value(), after);
    spin->setValue(after + 1);
    QCOMPARE(designer.undoStack()->count(), 2);
    QVERIFY(apply->isEnabled()); // the fix's width is gone again
    designer.undoStack()->undo();
    QCOMPARE(width(designer.spec()), after);
    QVERIFY(!apply->isEnabled());
    designer.undoStack()->undo();
    QVERIFY(designer.spec() == original);
    QCOMPARE(apply->text(), QStringLiteral("Apply"));
    QVERIFY(apply->isEnabled());

    // Spin-box steps before Apply are not taken into its undo step either.
    designer.selectPath(layerPath);
    spin->setValue(before + 1);
    QCOMPARE(designer.undoStack()->count(), 1);
    QVERIFY(panel.apply(units));
    QCOMPARE(designer.undoStack()->count(), 2);
    designer.undoStack()->undo();
    QCOMPARE(width(designer.spec()), before + 1);

    // A model whose layer at that path has no units or filters is refused, not edited.
    mixlab::ModelSpec other = original;
    mixlab::LayerSpec relu;
    relu.type = mixlab::LayerType::Activation;
    relu.activation = mixlab::Activation::Relu;
    *layerAt(other, layerPath) = relu;
    designer.setSpec(other);
    QString error;
    QVERIFY(!panel.apply(units, &error));
    QVERIFY2(error.contains(QStringLiteral("no units or filters")), qPrintable(error));
    QCOMPARE(designer.undoStack()->count(), 0);
    QVERIFY(designer.spec() == other);
}

// set_batch, from explain() itself: a GPU group too small to fill the device.
void TestWhyPanel::applyBatch()
{
    FinishedCompare f(16, 1.0, 0, mixlab::BackendKind::Cuda);
    WhyPanel panel(&f.store);
    RunPanel runPanel;
    mixlab::RunConfig c = runPanel.config();
    c.batch_size = 32;
    runPanel.setConfig(c);
    panel.showGroup(f.group);
    const int batch = indexOfFix(panel, mixlab::FixKind::SetBatch);
    QVERIFY(batch >= 0);
    QCOMPARE(panel.explanations()[std::size_t(batch)].id, std::string("small_batch"));
    const int suggested = panel.explanations()[std::size_t(batch)].fix->batch;
    QVERIFY(suggested > 32);
    // No run panel: nothing to change, said on the button.
    QPushButton *apply = panel.applyButton(batch);
    QVERIFY(apply && !apply->isEnabled());
    QString error;
    QVERIFY(!panel.apply(batch, &error));
    QVERIFY2(error.contains(QStringLiteral("no run panel")), qPrintable(error));

    panel.setRunPanel(&runPanel);
    apply = panel.applyButton(batch);
    QVERIFY(apply && apply->isEnabled());
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(runPanel.config().batch_size, suggested);
    QCOMPARE(panel.appliedText(), QStringLiteral("run settings: batch %1 (was 32)").arg(suggested));
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    QVERIFY(!apply->isEnabled());
    // The run panel has no undo: setting the batch back is how it is undone, and the
    // advice applies again.
    c = runPanel.config();
    c.batch_size = 32;
    runPanel.setConfig(c);
    QCOMPARE(apply->text(), QStringLiteral("Apply"));
    QVERIFY(apply->isEnabled());
}

// set_policy goes through RunPanel::setConfig. explain() gives it only for a pure fp16 run
// whose loss stalled; the fix is set by hand here through the entry point the buttons use.
void TestWhyPanel::applyPolicy()
{
    FinishedCompare f(17);
    WhyPanel panel(&f.store);
    RunPanel runPanel;
    panel.setRunPanel(&runPanel);
    mixlab::RunConfig c = runPanel.config();
    c.policy = mixlab::Policy::FP16;
    runPanel.setConfig(c);
    panel.showGroup(f.group);
    QVERIFY(!panel.explanations().empty());
    auto &ex = const_cast<std::vector<mixlab::Explanation> &>(panel.explanations());
    ex[0].fix = mixlab::Fix::set_policy(mixlab::Policy::MixedFP16);
    QCOMPARE(panel.isApplied(ex[0]), std::optional(false));
    QVERIFY(panel.apply(0));
    QCOMPARE(runPanel.config().policy, mixlab::Policy::MixedFP16);
    QCOMPARE(panel.appliedText(), QStringLiteral("run settings: policy mixed_fp16 (was fp16)"));
    // In the settings already: nothing to do, and the panel says so.
    QString error;
    QCOMPARE(panel.isApplied(ex[0]), std::optional(true));
    QVERIFY(!panel.apply(0, &error));
    QVERIFY2(error.contains(QStringLiteral("already")), qPrintable(error));
    // Back to fp16 by hand: the fix applies again.
    runPanel.setConfig(c);
    QCOMPARE(panel.isApplied(ex[0]), std::optional(false));
    // An explanation without a fix has nothing to apply.
    ex[0].fix.reset();
    QVERIFY(!WhyPanel::canApply(ex[0]));
    QVERIFY(!panel.apply(0, &error));
    QVERIFY2(error.contains(QStringLiteral("no change to apply")), qPrintable(error));
}

void TestWhyPanel::profileReachesFacts()
{
    FinishedCompare f(21, 1.0, 0, mixlab::BackendKind::Cuda);
    RunStore &store = f.store;
    const int g = f.group;
    const int a = f.fp32;
    const mixlab::StepProfile p = makeProfile(f.rng, 2);
    QSignalSpy changed(&store, &RunStore::runChanged);
    store.setProfile(a, p);
    QCOMPARE(changed.count(), 1);
    const std::vector<mixlab::RunFacts> facts = runFactsFromStore(store, g);
    QCOMPARE(facts.size(), std::size_t(2));
    QVERIFY(facts[0].profile.has_value());
    QCOMPARE(facts[0].profile->phase_ms, p.phase_ms);
    QCOMPARE(facts[0].profile->layers.size(), p.layers.size());
    QVERIFY(facts[0].gpu_busy_fraction.has_value());
    QCOMPARE(*facts[0].gpu_busy_fraction, p.gpu_busy_fraction);
    QVERIFY(!facts[1].profile.has_value());
    QVERIFY(!facts[1].gpu_busy_fraction.has_value());

    // On the CPU backend the profile reaches the facts, but no GPU was busy or idle.
    FinishedCompare cpu(28);
    cpu.store.setProfile(cpu.fp32, p);
    const std::vector<mixlab::RunFacts> cpuFacts = runFactsFromStore(cpu.store, cpu.group);
    QVERIFY(cpuFacts[0].profile.has_value());
    QVERIFY(!cpuFacts[0].gpu_busy_fraction.has_value());
}

void TestWhyPanel::phaseBarsPerPolicy_data()
{
    QTest::addColumn<QString>("backend");
    QTest::newRow("cpu") << "cpu";
    QTest::newRow("cuda") << "cuda";
}

void TestWhyPanel::phaseBarsPerPolicy()
{
    QFETCH(QString, backend);
    FinishedCompare f(22, 1.0, 0, *mixlab::parse_backend_kind(backend.toStdString()));
    RunStore &store = f.store;
    const int g = f.group;
    const int a = f.fp32;
    const int b = f.mixed;
    const mixlab::StepProfile pa = makeProfile(f.rng, 3), pb = makeProfile(f.rng, 3);
    store.setProfile(a, pa);
    store.setProfile(b, pb);
    WhyPanel panel(&store);
    panel.resize(700, 900);
    panel.show();
    panel.showGroup(g);
    QVERIFY(panel.tabs()->isVisible());
    QCOMPARE(panel.tabs()->count(), 4);
    QCOMPARE(panel.tabs()->currentIndex(), int(WhyPanel::k_explanationTab)); // the sentences first
    for (int tab : {WhyPanel::k_timeTab, WhyPanel::k_layersTab, WhyPanel::k_rooflineTab})
        QVERIFY(panel.tabs()->isTabEnabled(tab));
    panel.tabs()->setCurrentIndex(WhyPanel::k_timeTab);
    QVERIFY(panel.phaseBars()->isVisible());

    QHorizontalStackedBarSeries *series = panel.phaseBars()->series();
    QVERIFY(series);
    QCOMPARE(panel.phaseBars()->chart()->series().size(), 1);
    // One set per phase, one value per run in group order, colours fixed by phase.
    QCOMPARE(series->count(), mixlab::k_step_phases);
    const QList<QBarSet *> sets = series->barSets();
    for (int ph = 0; ph < mixlab::k_step_phases; ++ph) {
        QBarSet *set = sets[ph];
        QCOMPARE(set->label(),
                 QString::fromUtf8(mixlab::step_phase_name(mixlab::StepPhase(ph)).data()));
        QCOMPARE(set->count(), 2);
        QCOMPARE(set->at(0), pa.phase_ms[std::size_t(ph)]);
        QCOMPARE(set->at(1), pb.phase_ms[std::size_t(ph)]);
        QCOMPARE(set->color(), PhaseBars::phaseColor(mixlab::StepPhase(ph)));
    }
    QVERIFY(series->isLabelsVisible());
    // The line under the bars: the sum of separately timed phases against the profiled
    // step, wall time; GPU busy only where a GPU ran.
    const QString line = panel.phaseSummary()->text();
    QVERIFY2(line.contains(
                 QStringLiteral("sum of phases (each timed alone) %1 ms vs profiled step %2 ms")
                     .arg(pa.device_ms, 0, 'f', 3)
                     .arg(pa.step_ms, 0, 'f', 3)),
             qPrintable(line));
    QCOMPARE(
        line.contains(QStringLiteral("GPU busy %1%").arg(100 * pb.gpu_busy_fraction, 0, 'f', 0)),
        backend == QStringLiteral("cuda"));
    QCOMPARE(line.contains(QStringLiteral("GPU busy")), backend == QStringLiteral("cuda"));
    QVERIFY(line.contains(QStringLiteral("mixed_fp16")));
    // The tooltip says that neither is the step time of the table.
    QVERIFY(panel.phaseSummary()->toolTip().contains(
        QString::fromStdString(mixlab::step_time_definition())));

    // A new profile for a run of the group redraws the bars.
    mixlab::StepProfile pc = makeProfile(f.rng, 1);
    store.setProfile(b, pc);
    QTRY_COMPARE(panel.phaseBars()->series()->barSets()[1]->at(1), pc.phase_ms[1]);
}

void TestWhyPanel::layerTableSorts()
{
    RunStore store;
    QRandomGenerator rng(23);
    const int g = store.newGroup();
    const int a = addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    const mixlab::StepProfile p = makeProfile(rng, 4); // a group of one run
    store.setProfile(a, p);
    WhyPanel panel(&store);
    panel.show();
    panel.showGroup(g);
    LayerTableModel *model = panel.layerModel();
    QCOMPARE(model->rowCount(), int(p.layers.size()));
    QCOMPARE(model->columnCount(), 8);
    // Graph order first.
    for (int r = 0; r < model->rowCount(); ++r)
        QCOMPARE(model->index(r, LayerTableModel::Layer).data().toString(),
                 QString::fromStdString(p.layers[std::size_t(r)].path));

    // Clicking the "Fwd ms" header sorts descending-then-ascending as Qt's views do; ask
    // for descending explicitly and check every neighbour pair.
    QTableView *view = panel.layerView();
    QVERIFY(view->isSortingEnabled());
    view->sortByColumn(LayerTableModel::ForwardMs, Qt::DescendingOrder);
    double previous = std::numeric_limits<double>::infinity();
    double largest = 0;
    for (const mixlab::LayerTime &l : p.layers) largest = std::max(largest, l.forward_ms);
    for (int r = 0; r < model->rowCount(); ++r) {
        const double v =
            model->index(r, LayerTableModel::ForwardMs).data(LayerTableModel::SortRole).toDouble();
        QVERIFY(v <= previous);
        previous = v;
    }
    QCOMPARE(model->layer(0).forward_ms, largest);
    QCOMPARE(model->index(0, LayerTableModel::ForwardMs).data().toString(),
             QString::number(largest, 'f', 3));
    view->sortByColumn(LayerTableModel::ForwardMs, Qt::AscendingOrder);
    QCOMPARE(model->layer(model->rowCount() - 1).forward_ms, largest);
    // Clicking a header goes through the same path.
    const int x =
        view->horizontalHeader()->sectionViewportPosition(LayerTableModel::BackwardMs) + 5;
    QTest::mouseClick(view->horizontalHeader()->viewport(), Qt::LeftButton, {}, QPoint(x, 5));
    QCOMPARE(view->horizontalHeader()->sortIndicatorSection(), int(LayerTableModel::BackwardMs));
    for (int r = 1; r < model->rowCount(); ++r) {
        const double a0 = model->layer(r - 1).backward_ms, a1 = model->layer(r).backward_ms;
        QVERIFY(view->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder ? a0 <= a1
                                                                                     : a0 >= a1);
    }

    // Shares are of the step's device time; rates from FLOPs, bytes and time.
    const mixlab::LayerTime &l0 = model->layer(0);
    const double ms = l0.forward_ms + l0.backward_ms;
    QCOMPARE(model->index(0, LayerTableModel::Share).data().toString(),
             QString::number(100 * ms / p.device_ms, 'f', 1));
    // Three significant digits: the text reads back to the rate within half a unit of the third.
    auto close = [](const QString &text, double v) {
        return std::abs(text.toDouble() - v) <= 0.005 * v;
    };
    if (l0.flops > 0)
        QVERIFY(close(model->index(0, LayerTableModel::Tflops).data().toString(),
                      l0.flops / (ms * 1e9)));
    QVERIFY(close(model->index(0, LayerTableModel::GBs).data().toString(), l0.bytes / (ms * 1e6)));
    QVERIFY(
        model->index(0, LayerTableModel::GBs).data().toString().remove('.').remove('-').size() >=
        3);
    // Tensor-core column: "-" for non-GEMMs, the reason for GEMMs without.
    bool sawNote = false, sawDash = false;
    for (int r = 0; r < model->rowCount(); ++r) {
        const QString t = model->index(r, LayerTableModel::TensorCores).data().toString();
        sawNote |= t.startsWith(QStringLiteral("no: k = 10"));
        sawDash |= t == QStringLiteral("-");
    }
    QVERIFY(sawNote && sawDash);
}

void TestWhyPanel::rooflineHasOnePointPerGemm()
{
    FinishedCompare f(24);
    RunStore &store = f.store;
    const int g = f.group;
    const int a = f.fp32;
    const int b = f.mixed;
    const mixlab::StepProfile pa = makeProfile(f.rng, 3), pb = makeProfile(f.rng, 2);
    store.setProfile(a, pa);
    store.setProfile(b, pb);
    WhyPanel panel(&store);
    panel.setCeilings(std::nullopt); // no roofs known
    panel.show();
    panel.showGroup(g);
    QCOMPARE(panel.runCombo()->count(), 2);
    RooflineChart *roof = panel.roofline();
    QCOMPARE(roof->points().size(), std::size_t(3));
    QCOMPARE(roof->roofCount(), 0);
    QVERIFY(panel.findChild<QLabel *>("whyRooflineNote")
                ->text()
                .contains(QStringLiteral("no roof lines")));
    for (std::size_t i = 0; i < 3; ++i) {
        const mixlab::LayerTime &l = pa.layers[2 * i];
        QCOMPARE(roof->points()[i].layer, QString::fromStdString(l.path));
        QCOMPARE(roof->points()[i].intensity, l.flops / l.bytes);
        QCOMPARE(roof->points()[i].tflops, l.flops / ((l.forward_ms + l.backward_ms) * 1e9));
    }
    // The combo picks the run: the mixed run has two GEMM layers.
    panel.runCombo()->setCurrentIndex(1);
    QCOMPARE(roof->points().size(), std::size_t(2));
    QCOMPARE(panel.layerModel()->rowCount(), int(pb.layers.size()));

    // With ceilings: the policy's GEMM roof, fp32's, and the memory roof.
    mixlab::Ceilings c;
    c.device_name = "test device";
    c.fp32_tflops = 1.5;
    c.tf32_tflops = 3;
    c.fp16_tflops = 6;
    c.bf16_tflops = 6;
    c.copy_gbs = 80;
    panel.setCeilings(c);
    QCOMPARE(roof->roofCount(), 3);
    panel.runCombo()->setCurrentIndex(0); // fp32: its roof is fp32's, drawn once
    QCOMPARE(roof->roofCount(), 2);
    QCOMPARE(roof->points().size(), std::size_t(3));
    // Log-log axes: one point series per layer plus the roofs.
    QCOMPARE(roof->chart()->series().size(), 3 + 2);
}

void TestWhyPanel::groupWithoutProfile()
{
    FinishedCompare f(25);
    WhyPanel panel(&f.store);
    panel.show();
    panel.showGroup(f.group);
    // The explanations show; the profiling tabs are there but disabled, and why is said.
    QCOMPARE(panel.tabs()->currentIndex(), int(WhyPanel::k_explanationTab));
    for (int tab : {WhyPanel::k_timeTab, WhyPanel::k_layersTab, WhyPanel::k_rooflineTab})
        QVERIFY(!panel.tabs()->isTabEnabled(tab));
    QVERIFY(panel.findChild<QLabel *>("whyNoProfile")->isVisible());
    QVERIFY(!panel.phaseBars()->series());
    QCOMPARE(panel.layerModel()->rowCount(), 0);
    QVERIFY(panel.roofline()->points().empty());
}

void TestWhyPanel::profileSurvivesExperimentFile()
{
    FinishedCompare f(26);
    RunStore &store = f.store;
    const int g = f.group;
    const int a = f.fp32;
    mixlab::StepProfile p = makeProfile(f.rng, 2);
    p.replayed = true;
    store.setProfile(a, p);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("e.mixlab.json"));
    ExperimentFile file;
    file.model = mixlab::parse_model_spec(k_model);
    QString error;
    QVERIFY2(saveExperiment(path, file, store, &error), qPrintable(error));

    RunStore loaded;
    ExperimentFile back;
    QVERIFY2(loadExperiment(path, &back, &loaded, &error), qPrintable(error));
    const std::vector<int> ids = loaded.runIds();
    QCOMPARE(ids.size(), std::size_t(2));
    const RunRecord *r = loaded.run(ids[0]);
    QVERIFY(r->profile.has_value());
    QVERIFY(!loaded.run(ids[1])->profile.has_value());
    mixlab::test::compare_profiles(*r->profile, p);
    // The profile is an optional field of the current format.
    QFile saved(path);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    const QJsonObject root = QJsonDocument::fromJson(saved.readAll()).object();
    QCOMPARE(root.value("format").toString(), QString::fromLatin1(k_experimentFormat));
    const QJsonArray runs = root.value("runs").toArray();
    QVERIFY(runs[0].toObject().contains("profile"));
    QVERIFY(!runs[1].toObject().contains("profile"));

    // A mistyped profile is refused with where it is wrong, and the store is untouched.
    QJsonObject run0 = runs[0].toObject();
    QJsonObject prof = run0.value("profile").toObject();
    prof.insert("layers", QStringLiteral("none"));
    run0.insert("profile", prof);
    QJsonArray badRuns = runs;
    badRuns[0] = run0;
    QJsonObject badRoot = root;
    badRoot.insert("runs", badRuns);
    const QString badPath = dir.filePath(QStringLiteral("bad.mixlab.json"));
    QFile bad(badPath);
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(QJsonDocument(badRoot).toJson());
    bad.close();
    QVERIFY(!loadExperiment(badPath, &back, &loaded, &error));
    QVERIFY2(error.contains(QStringLiteral("profile")) &&
                 error.contains(QStringLiteral("\"layers\" must be an array")),
             qPrintable(error));
    QCOMPARE(loaded.runIds(), ids);
}

void TestWhyPanel::experimentWithoutProfileLoads()
{
    // A file written before profiles existed: the same format, no "profile" field.
    RunStore store;
    QRandomGenerator rng(27);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("old.mixlab.json"));
    ExperimentFile file;
    file.model = mixlab::parse_model_spec(k_model);
    QString error;
    QVERIFY2(saveExperiment(path, file, store, &error), qPrintable(error));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(!f.readAll().contains("\"profile\""));
    f.close();
    RunStore loaded;
    ExperimentFile back;
    QVERIFY2(loadExperiment(path, &back, &loaded, &error), qPrintable(error));
    QCOMPARE(loaded.runIds().size(), std::size_t(1));
    QVERIFY(!loaded.run(loaded.runIds()[0])->profile.has_value());
    // Null reads as "not profiled" too.
    QJsonObject root = QJsonDocument::fromJson([&] {
                           QFile g2(path);
                           g2.open(QIODevice::ReadOnly);
                           return g2.readAll();
                       }())
                           .object();
    QJsonArray runs = root.value("runs").toArray();
    QJsonObject run0 = runs[0].toObject();
    run0.insert("profile", QJsonValue::Null);
    runs[0] = run0;
    root.insert("runs", runs);
    QFile w(path);
    QVERIFY(w.open(QIODevice::WriteOnly | QIODevice::Truncate));
    w.write(QJsonDocument(root).toJson());
    w.close();
    QVERIFY2(loadExperiment(path, &back, &loaded, &error), qPrintable(error));
    QVERIFY(!loaded.run(loaded.runIds()[0])->profile.has_value());
}

// The suggestions name the app's controls, not the CLI's options or the model file's
// fields; the runs are on the CPU, so the device advice is there too.
void TestWhyPanel::suggestionsNameTheAppsControls()
{
    FinishedCompare f(29);
    WhyPanel panel(&f.store);
    panel.showGroup(f.group);
    QVERIFY(indexOf(panel, "cpu_backend") >= 0);
    for (const mixlab::Explanation &e : panel.explanations()) {
        const QString suggestion = QString::fromStdString(e.suggestion);
        QVERIFY2(!suggestion.contains(QStringLiteral("--")) &&
                     !suggestion.contains(QStringLiteral("\"dtype\"")),
                 qPrintable(suggestion));
    }
    const auto suggestionOf = [&](const char *id) {
        return QString::fromStdString(
            panel.explanations()[std::size_t(indexOf(panel, id))].suggestion);
    };
    QVERIFY(suggestionOf("cpu_backend").contains(QStringLiteral("Device: cuda")));
    QVERIFY(suggestionOf("output_float32").contains(QStringLiteral("Precision: keep in float32")));
    // And on screen, in the card.
    auto *card = panel.findChild<QWidget *>(QStringLiteral("whyCard_output_float32"));
    QVERIFY(card);
    auto *label = card->findChild<QLabel *>("whySuggestion");
    QVERIFY(label && label->text().contains(QStringLiteral("Precision: keep in float32")));
}

// At the dock's narrowest, every header of the runs table is whole (a stretched column
// narrower than its title showed "edian m", "peedu").
void TestWhyPanel::tableHeadersFitANarrowDock()
{
    FinishedCompare f(30);
    WhyPanel panel(&f.store);
    panel.resize(420, 800);
    panel.show();
    panel.showGroup(f.group);
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTableWidget *t = panel.runsTable();
    QHeaderView *header = t->horizontalHeader();
    const QFontMetrics metrics(header->font());
    for (int c = 0; c < t->columnCount(); ++c) {
        const QString title = t->horizontalHeaderItem(c)->text();
        QVERIFY2(header->sectionSize(c) >= metrics.horizontalAdvance(title), qPrintable(title));
        QVERIFY2(header->sectionViewportPosition(c) + header->sectionSize(c) <=
                     header->viewport()->width() + 1,
                 qPrintable(title));
    }
}

// The group shown goes away (New, another experiment opened, its runs deleted): the panel
// follows the latest group again instead of explaining runs that are gone.
void TestWhyPanel::groupGoneClearsThePanel()
{
    FinishedCompare f(31);
    DesignerOnModel d;
    WhyPanel panel(&f.store);
    panel.setDesigner(&d.designer);
    panel.show();
    panel.showGroup(f.group);
    QVERIFY(panel.apply(indexOf(panel, "output_float32")));
    QVERIFY(panel.findChild<QLabel *>("whyApplied")->isVisible());

    f.store.clear();
    QTRY_COMPARE(panel.group(), 0);
    QVERIFY(panel.explanations().empty());
    QVERIFY(!panel.runsTable()->isVisible());
    QVERIFY(!panel.findChild<QLabel *>("whyApplied")->isVisible());
    QCOMPARE(panel.findChild<QLabel *>("whyTitle")->text(), QStringLiteral("Why?"));

    // The next group to finish is shown, with the numbers the store gives it again.
    const int g = f.store.newGroup();
    QCOMPARE(g, 1);
    addFinishedRun(f.store, g, mixlab::Policy::FP32, 2.0, 0, f.rng);
    QTRY_COMPARE(panel.group(), g);
    QVERIFY(
        panel.findChild<QLabel *>("whyTitle")->text().startsWith(QStringLiteral("Why? Group 1:")));
}

void TestWhyPanel::mainWindowAction()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.show();
    QVERIFY(!w.whyAction()->isEnabled());
    RunStore &store = *w.store();
    QRandomGenerator rng(17);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
    // Nothing selected: Why? explains the newest finished group (a first comparison's
    // button works without the user knowing about the selection).
    QVERIFY(w.whyAction()->isEnabled());
    auto *dock = w.findChild<QDockWidget *>("whyDock");
    QVERIFY(dock && !dock->isVisible());
    w.whyAction()->trigger();
    QVERIFY(dock->isVisible());
    QCOMPARE(w.whyPanel()->group(), g);
    QVERIFY(indexOf(*w.whyPanel(), "output_float32") >= 0);
    dock->hide();
    // Runs selected: their group, when it is one finished group.
    w.runsTable()->selectAll();
    QVERIFY(w.whyAction()->isEnabled());
    QCOMPARE(w.selectedFinishedGroup(), g);
    w.whyAction()->trigger();
    QCOMPARE(w.whyPanel()->group(), g);
    // A run of a group still under way, selected: nothing to explain yet.
    store.addRun(mixlab::RunConfig{}, QStringLiteral("{}"), store.newGroup());
    w.runsTable()->clearSelection();
    QVERIFY(w.whyAction()->isEnabled());
    w.runsTable()->selectRow(w.runsTable()->model()->rowCount() - 1); // the new run
    QCOMPARE(w.runsTable()->selectedRunIds().size(), std::size_t(1));
    QVERIFY(!w.whyAction()->isEnabled());
}

void TestWhyPanel::dockLeavesTheChartsTheirWidth_data()
{
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("designerKept");
    QTest::newRow("1280x800") << QSize(1280, 800) << false;
    QTest::newRow("1600x1000") << QSize(1600, 1000) << false;
    QTest::newRow("2400x1300") << QSize(2400, 1300) << true;
}

// Opening Why? never squeezes the centre: its charts keep two columns and the runs table
// every column. Where the window cannot hold the designer column too, the dock takes its
// place until it closes.
void TestWhyPanel::dockLeavesTheChartsTheirWidth()
{
    QFETCH(QSize, size);
    QFETCH(bool, designerKept);
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QRandomGenerator rng(18);
    const int g = w.store()->newGroup();
    addFinishedRun(*w.store(), g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(*w.store(), g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
    auto *design = w.findChild<QSplitter *>("leftSplitter");
    auto *centre = w.findChild<QSplitter *>("centreSplitter");
    auto *dock = w.findChild<QDockWidget *>("whyDock");
    w.showWhy(g);
    QTRY_VERIFY(dock->isVisible() && dock->width() >= 420);
    QCOMPARE(w.width(), size.width()); // the window did not grow past its screen to hold it all
    QCOMPARE(design->isVisible(), designerKept);
    QVERIFY2(centre->width() >= 2 * 300, qPrintable(QString::number(centre->width())));
    QTRY_COMPARE(w.runsTable()->horizontalScrollBar()->maximum(), 0);
    dock->close();
    QTRY_VERIFY(design->isVisible());
}

// Quitting with Why? open does not open it (empty) at the next start, where at 1280x800 it
// would take the designer's place.
void TestWhyPanel::newSessionOpensWithoutWhy()
{
    {
        MainWindow w;
        w.setConfirmCloseForTesting(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QRandomGenerator rng(19);
        const int g = w.store()->newGroup();
        addFinishedRun(*w.store(), g, mixlab::Policy::FP32, 2.0, 0, rng);
        addFinishedRun(*w.store(), g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
        w.showWhy(g);
        QTRY_VERIFY(w.findChild<QDockWidget *>("whyDock")->isVisible());
        QVERIFY(w.close()); // saves the window's layout
    }
    MainWindow next;
    next.setConfirmCloseForTesting(false);
    next.resize(1280, 800);
    next.show();
    QVERIFY(QTest::qWaitForWindowExposed(&next));
    QTest::qWait(50);
    QVERIFY(!next.findChild<QDockWidget *>("whyDock")->isVisible());
    QVERIFY(next.findChild<QSplitter *>("leftSplitter")->isVisible());
}

QTEST_MAIN(TestWhyPanel)
#include "tst_whypanel.moc"
