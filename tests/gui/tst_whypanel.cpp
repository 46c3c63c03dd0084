// The Why? panel, offscreen: RunFacts built from a RunStore (losses, loss-scale changes),
// the runs table, the explain() rows for a sigmoid-output model compared fp32 against
// mixed_fp16, Apply as an undoable designer edit or a run-panel change, and the main
// window's Why? action following the runs table's selection.
#include "mainwindow.h"
#include "modeldesigner.h"
#include "runfacts_from_store.h"
#include "runpanel.h"
#include "runstable.h"
#include "runstore.h"
#include "whypanel.h"

#include "mixlab/model_spec.h"

#include <QAction>
#include <QDockWidget>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSettings>
#include <QStandardPaths>
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

const mixlab::Shape k_input{{4, 4, 1}};
constexpr int k_classes = 10;

// A finished run of `steps` steps with random losses; the scale halves at `halveAt`.
int addFinishedRun(RunStore &store, int group, mixlab::Policy policy, double medianMs,
                   int halveAt, QRandomGenerator &rng)
{
    mixlab::RunConfig c;
    c.policy = policy;
    c.batch_size = 32;
    c.steps = 20;
    const int id = store.addRun(c, QString::fromUtf8(k_model), group);
    RunContext ctx;
    ctx.input = k_input;
    ctx.classes = k_classes;
    ctx.environment.backend = "cpu";
    ctx.environment.device_name = "CPU (no CUDA device)";
    ctx.environment.compute_capability = "cpu";
    store.setContext(id, ctx);
    store.setStatus(id, RunRecord::Status::Running);
    std::vector<mixlab::StepMetrics> steps;
    float scale = 65536;
    for (int s = 1; s <= 20; ++s) {
        mixlab::StepMetrics m;
        m.step = s;
        m.epoch = 1;
        m.loss = 2.3f - 0.05f * float(s) + 0.1f * float(rng.generateDouble());
        m.accuracy = float(rng.generateDouble());
        if (s == halveAt)
            scale /= 2;
        m.loss_scale = scale;
        steps.push_back(m);
    }
    store.appendSteps(id, steps);
    mixlab::RunSummary sum;
    sum.steps = 20;
    sum.median_step_ms = medianMs;
    sum.mean_step_ms = medianMs;
    sum.final_loss_scale = scale;
    sum.final_train_loss = steps.back().loss;
    store.setSummary(id, sum);
    store.setStatus(id, RunRecord::Status::Finished);
    return id;
}

int indexOf(const WhyPanel &panel, const std::string &id)
{
    const auto &ex = panel.explanations();
    for (std::size_t i = 0; i < ex.size(); ++i)
        if (ex[i].id == id)
            return int(i);
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
    void applyRunSetting();
    void mainWindowAction();

private:
    QTemporaryDir m_settingsDir;
};

void TestWhyPanel::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestWhyPanel::factsFromStore()
{
    RunStore store;
    QRandomGenerator rng(11);
    const int g = store.newGroup();
    const int a = addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    const int b = addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 7, rng);
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
    QCOMPARE(facts[0].device.backend, std::string("cpu"));
    QCOMPARE(facts[0].graph.head, mixlab::OutputHead::SigmoidKeras);
    QCOMPARE(facts[0].graph.classes, k_classes);
    QCOMPARE(latestFinishedGroup(store), g);
    Q_UNUSED(a);
}

void TestWhyPanel::unfinishedGroupIsNotExplained()
{
    RunStore store;
    QRandomGenerator rng(12);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    const int b = addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
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
    RunStore store;
    QRandomGenerator rng(13);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(store, g, mixlab::Policy::MixedFP16, 0.8, 7, rng);
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
    QCOMPARE(panel.explanations()[std::size_t(fp32)].apply_path, std::string("layer 2"));
    // Each explanation's sentence and suggestion are on screen.
    for (const mixlab::Explanation &e : panel.explanations()) {
        QWidget *card = panel.findChild<QWidget *>(QStringLiteral("whyCard_%1").arg(QString::fromStdString(e.id)));
        QVERIFY2(card, e.id.c_str());
    }
    auto *note = panel.findChild<QLabel *>("whyNote");
    QVERIFY(note && note->text().contains(QStringLiteral("not measured yet")));
    // Without a designer the model fixes cannot be applied.
    QVERIFY(panel.applyButton(fp32));
    QVERIFY(!panel.applyButton(fp32)->isEnabled());
    QVERIFY(!panel.apply(fp32));
}

void TestWhyPanel::applyFloat32IsUndoable()
{
    RunStore store;
    QRandomGenerator rng(14);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
    ModelDesigner designer;
    designer.setInput(k_input, k_classes);
    designer.setSpec(mixlab::parse_model_spec(k_model));
    WhyPanel panel(&store);
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
    QVERIFY(panel.appliedText().contains(QStringLiteral("layer 2: dtype float32; undo with Ctrl+Z")));
    QVERIFY(!apply->isEnabled());
    // Nothing else of the model moved.
    mixlab::ModelSpec expected = mixlab::parse_model_spec(k_model);
    expected.layers[2].force_fp32 = true;
    QVERIFY(designer.spec() == expected);

    designer.undoStack()->undo();
    QVERIFY(!designer.spec().layers[2].force_fp32);
    QVERIFY(designer.spec() == mixlab::parse_model_spec(k_model));
}

void TestWhyPanel::applyActivation()
{
    RunStore store;
    QRandomGenerator rng(15);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
    ModelDesigner designer;
    designer.setInput(k_input, k_classes);
    designer.setSpec(mixlab::parse_model_spec(k_model));
    WhyPanel panel(&store);
    panel.setDesigner(&designer);
    panel.showGroup(g);
    const int sigmoid = indexOf(panel, "sigmoid_output");
    QVERIFY(sigmoid >= 0);
    QVERIFY(panel.applyButton(sigmoid));
    panel.applyButton(sigmoid)->click();
    QCOMPARE(designer.spec().layers[3].activation, mixlab::Activation::Softmax);
    QVERIFY(panel.appliedText().startsWith(QStringLiteral("layer 3: activation softmax")));
    designer.undoStack()->undo();
    QCOMPARE(designer.spec().layers[3].activation, mixlab::Activation::Sigmoid);

    // A model that no longer has the layer is refused, not edited elsewhere.
    designer.setSpec(mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "short",
        "layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]})"));
    QString error;
    QVERIFY(!panel.apply(sigmoid, &error));
    QVERIFY2(error.contains(QStringLiteral("layer 3")), qPrintable(error));
    QCOMPARE(designer.undoStack()->count(), 0);
}

void TestWhyPanel::applyRunSetting()
{
    RunStore store;
    WhyPanel panel(&store);
    RunPanel runPanel;
    panel.setRunPanel(&runPanel);
    // explain() gives set_policy/set_batch only for GPU runs; fake one by hand through
    // the same entry point the buttons use.
    mixlab::RunConfig c = runPanel.config();
    c.batch_size = 32;
    c.policy = mixlab::Policy::FP16;
    runPanel.setConfig(c);
    QRandomGenerator rng(16);
    const int g = store.newGroup();
    addFinishedRun(store, g, mixlab::Policy::FP32, 2.0, 0, rng);
    addFinishedRun(store, g, mixlab::Policy::MixedFP16, 1.0, 0, rng);
    panel.showGroup(g);
    QVERIFY(!panel.explanations().empty());
    // The two run-config fixes go through RunPanel::setConfig.
    auto &ex = const_cast<std::vector<mixlab::Explanation> &>(panel.explanations());
    ex[0].apply_kind = "set_batch";
    ex[0].apply_value = "256";
    QVERIFY(panel.apply(0));
    QCOMPARE(runPanel.config().batch_size, 256);
    QVERIFY(panel.appliedText().contains(QStringLiteral("batch 256 (was 32)")));
    ex[0].apply_kind = "set_policy";
    ex[0].apply_value = "mixed_fp16";
    QVERIFY(panel.apply(0));
    QCOMPARE(runPanel.config().policy, mixlab::Policy::MixedFP16);
    ex[0].apply_value = "fp12";
    QString error;
    QVERIFY(!panel.apply(0, &error));
    QVERIFY(!error.isEmpty());
    QCOMPARE(runPanel.config().policy, mixlab::Policy::MixedFP16);
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
    QVERIFY(!w.whyAction()->isEnabled()); // nothing selected yet
    w.runsTable()->selectAll();
    QVERIFY(w.whyAction()->isEnabled());
    QCOMPARE(w.selectedFinishedGroup(), g);
    auto *dock = w.findChild<QDockWidget *>("whyDock");
    QVERIFY(dock && !dock->isVisible());
    w.whyAction()->trigger();
    QVERIFY(dock->isVisible());
    QCOMPARE(w.whyPanel()->group(), g);
    QVERIFY(indexOf(*w.whyPanel(), "output_float32") >= 0);
    w.runsTable()->clearSelection();
    QVERIFY(!w.whyAction()->isEnabled());
}

QTEST_MAIN(TestWhyPanel)
#include "tst_whypanel.moc"
