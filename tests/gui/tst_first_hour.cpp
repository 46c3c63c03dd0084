// The app's first hour as a new user tried it (issue 13), offscreen on the CPU backend:
// a small model designed with the palette and the property editor, a compare of fp32
// against mixed_fp16, a Why? fix applied, a second compare, the logs and the report
// exported, the experiment saved and opened in a fresh window. It checks what that user
// checked: each exported run's config is the model that run trained (its own events say
// which layers ran in float32), every run is in every file, and nothing is lost on reopen.
#include "files/logexport.h"
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "designer/layerpalette.h"
#include "designer/layerpropertyeditor.h"
#include "files/reportexport.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstablemodel.h"
#include "runs/runstore.h"
#include "analysis/whypanel.h"

#include "mixlab/model_spec.h"

#include "gui_fixtures.h"

#include <nlohmann/json.hpp>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>

#include <map>

namespace {

using Json = nlohmann::json;

constexpr int k_runTimeoutMs = 120000;

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Whether the run's own description of its kernels says `layer` ran as a float32 GEMM
// (the engine logs one line per GEMM when a run starts: "layer 2 dense float32 GEMM, ...").
bool eventsSayFloat32(const Json &events, const std::string &layer)
{
    for (const Json &e : events)
        if (e["message"].get<std::string>().rfind(layer + " dense float32 GEMM", 0) == 0)
            return true;
    return false;
}

void clickPalette(ModelDesigner &designer, const char *entry)
{
    auto *button = designer.palette()->findChild<QToolButton *>(QStringLiteral("palette_") +
                                                                QLatin1String(entry));
    QVERIFY2(button, entry);
    QTest::mouseClick(button, Qt::LeftButton);
}

} // namespace

class TestFirstHour : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void designCompareApplyCompareExportSaveReopen();

private:
    // Presses Compare and waits for the job, profiling pass included; returns its group.
    static int compare(MainWindow &w);

    QTemporaryDir m_settingsDir;
};

void TestFirstHour::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings(QStringLiteral("MixLab"), QStringLiteral("mixlab")).clear();
}

int TestFirstHour::compare(MainWindow &w)
{
    auto *button = w.runPanel()->findChild<QPushButton *>("compareButton");
    if (!button || !button->isEnabled()) return 0;
    const std::size_t before = w.store()->runIds().size();
    QTest::mouseClick(button, Qt::LeftButton);
    if (!w.controller()->isRunning()) return 0;
    if (!QTest::qWaitFor([&] { return !w.controller()->isRunning(); }, k_runTimeoutMs)) return 0;
    const std::vector<int> ids = w.store()->runIds();
    if (ids.size() != before + 2) return 0;
    return w.store()->run(ids.back())->group;
}

void TestFirstHour::designCompareApplyCompareExportSaveReopen()
{
    QTemporaryDir dir;
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    ModelDesigner &designer = *w.designer();

    // The data first (the designer checks shapes against it), then a blank model.
    w.runPanel()->setConfig(quickCpuConfig(1)); // 256 synthetic images, batch 32: 8 steps
    mixlab::ModelSpec blank;
    blank.name = "first-hour";
    designer.setSpec(blank);

    // Flatten, a hidden dense layer set to 24 relu units, and a 10-unit output layer.
    clickPalette(designer, "flatten");
    clickPalette(designer, "dense");
    LayerPropertyEditor *editor = designer.propertyEditor();
    QCOMPARE(editor->layerPath().toString(), QStringLiteral("layer 1"));
    auto *units = editor->findChild<QSpinBox *>("units");
    QVERIFY(units && units->isVisibleTo(editor));
    units->setValue(24);
    auto *activation = editor->findChild<QComboBox *>("activation");
    QVERIFY(activation);
    activation->setCurrentIndex(activation->findText(QStringLiteral("relu")));
    clickPalette(designer, "dense");
    QCOMPARE(editor->layerPath().toString(), QStringLiteral("layer 2"));
    units->setValue(10);
    QVERIFY2(designer.isValid(), qPrintable(designer.validationMessage()));
    const mixlab::ModelSpec designed = designer.spec();
    QCOMPARE(designed.layers.size(), std::size_t(3));
    QCOMPARE(designed.layers[1].units, 24);
    QCOMPARE(designed.layers[1].activation, mixlab::Activation::Relu);
    QCOMPARE(designed.layers[2].units, 10);
    QVERIFY(!designed.layers[2].force_fp32);

    // Compare fp32 against mixed_fp16, and nothing else.
    for (mixlab::Policy p : mixlab::k_all_policies) {
        auto *box = w.runPanel()->findChild<QCheckBox *>(
            QStringLiteral("compare_") + QString::fromUtf8(mixlab::policy_name(p).data()));
        QVERIFY(box);
        const bool wanted = p == mixlab::Policy::FP32 || p == mixlab::Policy::MixedFP16;
        if (box->isChecked() != wanted) QTest::mouseClick(box, Qt::LeftButton);
    }
    const int first = compare(w);
    QVERIFY(first > 0);

    // Why? on that group: the output layer computes the logits in float16; Apply keeps it
    // in float32, as one undoable edit, and the button says it is done.
    w.runsTable()->selectAll();
    QVERIFY(w.whyAction()->isEnabled());
    w.whyAction()->trigger();
    QVERIFY(w.findChild<QDockWidget *>("whyDock")->isVisible());
    WhyPanel &why = *w.whyPanel();
    QCOMPARE(why.group(), first);
    int fix = -1;
    for (std::size_t i = 0; i < why.explanations().size(); ++i)
        if (why.explanations()[i].id == "output_float32") fix = int(i);
    QVERIFY(fix >= 0);
    const std::optional<mixlab::Fix> &float32 = why.explanations()[std::size_t(fix)].fix;
    QVERIFY(float32 && float32->kind == mixlab::FixKind::SetDtypeFloat32);
    QCOMPARE(float32->path, std::string("layer 2"));
    QPushButton *apply = why.applyButton(fix);
    QVERIFY(apply && apply->isEnabled());
    QTest::mouseClick(apply, Qt::LeftButton);
    QVERIFY(designer.spec().layers[2].force_fp32);
    QCOMPARE(apply->text(), QStringLiteral("Applied"));
    QVERIFY(!apply->isEnabled());
    mixlab::ModelSpec applied = designed;
    applied.layers[2].force_fp32 = true;
    QVERIFY(designer.spec() == applied);

    const int second = compare(w);
    QVERIFY(second > first);
    const std::vector<int> ids = w.store()->runIds();
    QCOMPARE(ids.size(), std::size_t(4));
    // Each group keeps the model it was started with.
    std::map<int, mixlab::ModelSpec> ranWith = {{first, designed}, {second, applied}};
    for (int id : ids) {
        const RunRecord &r = *w.store()->run(id);
        QCOMPARE(r.status, RunRecord::Status::Finished);
        QVERIFY(mixlab::parse_model_spec(r.modelJson.toStdString()) == ranWith.at(r.group));
    }

    // The logs of every run, JSON and CSV, as File > Export logs writes them.
    const QString jsonPath = dir.filePath(QStringLiteral("first-hour.json"));
    const QString csvPath = dir.filePath(QStringLiteral("first-hour.csv"));
    QString error;
    QVERIFY2(exportLogs(*w.store(), ids, jsonPath, &error), qPrintable(error));
    QVERIFY2(exportLogs(*w.store(), ids, csvPath, &error), qPrintable(error));
    const Json log = Json::parse(readAll(jsonPath).toStdString());
    QCOMPARE(log["runs"].size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const RunRecord &r = *w.store()->run(ids[i]);
        const Json &run = log["runs"][i];
        const mixlab::ModelSpec exported = mixlab::parse_model_spec(run["config"]["model"].dump());
        QVERIFY2(
            exported == ranWith.at(r.group),
            qPrintable(
                QStringLiteral(
                    "run %1 (%2, group %3): the log's config.model is not the model it trained")
                    .arg(i)
                    .arg(r.name)
                    .arg(r.group)));
        // The log agrees with itself: the model says float32 where the run's kernels did.
        if (r.config.policy == mixlab::Policy::MixedFP16)
            QCOMPARE(exported.layers[2].force_fp32, eventsSayFloat32(run["events"], "layer 2"));
        QCOMPARE(run["steps"].size(), r.steps.size());
        QVERIFY(run["summary"].is_object());
        QVERIFY(run["summary"]["final_test_accuracy"].is_number()); // an evaluated run has one
    }
    const QList<QByteArray> rows = readAll(csvPath).trimmed().split('\n');
    std::size_t steps = 0;
    for (int id : ids) steps += w.store()->run(id)->steps.size();
    QCOMPARE(std::size_t(rows.size()), 1 + steps);
    QVERIFY(rows.back().startsWith("3,mixed_fp16,"));

    // The report of the second compare: its runs, and no advice that is in the model now.
    const QString reportPath = dir.filePath(QStringLiteral("first-hour.html"));
    QVERIFY2(exportReport(*w.store(), second, reportPath, &error), qPrintable(error));
    const QString report = QString::fromUtf8(readAll(reportPath));
    for (int id : w.store()->groupRuns(second))
        QVERIFY(report.contains(w.store()->run(id)->name.toHtmlEscaped()));
    for (int id : w.store()->groupRuns(first))
        QVERIFY(!report.contains(w.store()->run(id)->name.toHtmlEscaped()));
    QVERIFY(!report.contains(QStringLiteral("computes the logits in float16")));

    // Save, and open it in a fresh window: every run, its model, config, data and group.
    const QString experiment = dir.filePath(QStringLiteral("first-hour.mixlab.json"));
    QVERIFY2(w.saveExperimentAs(experiment, &error), qPrintable(error));
    MainWindow reopened;
    reopened.setConfirmCloseForTesting(false);
    QString warning;
    QVERIFY2(reopened.openExperiment(experiment, &error, &warning), qPrintable(error));
    QVERIFY2(warning.isEmpty(), qPrintable(warning));
    QVERIFY(reopened.designer()->spec() == applied);
    const std::vector<int> back = reopened.store()->runIds();
    QCOMPARE(back.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const RunRecord &a = *w.store()->run(ids[i]);
        const RunRecord &b = *reopened.store()->run(back[i]);
        QCOMPARE(b.name, a.name);
        QCOMPARE(b.group, a.group); // "Why? Group 2" is still group 2
        QCOMPARE(b.status, a.status);
        QVERIFY(mixlab::parse_model_spec(b.modelJson.toStdString()) == ranWith.at(a.group));
        QCOMPARE(mixlab::run_config_to_json(b.config), mixlab::run_config_to_json(a.config));
        QCOMPARE(b.steps.size(), a.steps.size());
        QCOMPARE(b.epochs.size(), a.epochs.size());
        QCOMPARE(b.events.size(), a.events.size());
        QVERIFY(b.summary.has_value());
        QCOMPARE(b.summary->median_step_ms, a.summary->median_step_ms);
        QVERIFY(b.summary->final_test_accuracy == a.summary->final_test_accuracy);
        QCOMPARE(b.profile.has_value(), a.profile.has_value());
    }
    // The reopened runs export the same log: nothing of what ran was lost.
    const QString againPath = dir.filePath(QStringLiteral("reopened.json"));
    QVERIFY2(exportLogs(*reopened.store(), back, againPath, &error), qPrintable(error));
    const Json again = Json::parse(readAll(againPath).toStdString());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        QCOMPARE(QString::fromStdString(again["runs"][i]["config"].dump()),
                 QString::fromStdString(log["runs"][i]["config"].dump()));
        QCOMPARE(QString::fromStdString(again["runs"][i]["summary"].dump()),
                 QString::fromStdString(log["runs"][i]["summary"].dump()));
    }
    // Why? in the new window explains the latest group by its own number; that group ran
    // with the fix, so the advice is gone.
    reopened.showWhy();
    QCOMPARE(reopened.whyPanel()->group(), second);
    QVERIFY(!reopened.whyPanel()->explanations().empty());
    for (const mixlab::Explanation &e : reopened.whyPanel()->explanations())
        QVERIFY2(e.id != "output_float32", e.sentence.c_str());
}

QTEST_MAIN(TestFirstHour)
#include "tst_first_hour.moc"
