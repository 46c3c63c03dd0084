// The app's way in and out for models and weights, offscreen: File > Import model with a
// Keras model (a new unsaved experiment with the file's model and policy, after the
// question to save the current one; Cancel keeps everything), File > Save weights of a
// trained run (greyed out, saying why, until a run has weights; an atomic copy of the
// safetensors file the run left), and Run > Start from weights (shown in the run panel,
// written in the run's log with the file's SHA-256, the run training on from it); a run
// whose weights cannot be written says so in its log and in the menu's tooltip.
#include "app/mainwindow.h"
#include "common/filedialogs.h"
#include "common/usermessages.h"
#include "designer/modeldesigner.h"
#include "files/logexport.h"
#include "runs/logview.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstore.h"
#include "runs/weightsfolder.h"

#include "mixlab/keras_import.h"
#include "mixlab/model_spec.h"

#include "gui_fixtures.h"

#include <QAction>
#include <QCryptographicHash>
#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>

#include <deque>

namespace {

constexpr int k_runTimeoutMs = 60000;

QString source(const QString &relative) { return QStringLiteral(MIXLAB_SOURCE_DIR "/") + relative; }

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QAction *action(MainWindow &w, const char *name)
{
    auto *a = w.findChild<QAction *>(name);
    if (!a) qFatal("no action %s", name);
    return a;
}

} // namespace

class TestAppImportWeights : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanupTestCase();
    void kerasImportIsANewUnsavedExperiment_data();
    void kerasImportIsANewUnsavedExperiment();
    void kerasImportCancelledKeepsTheExperiment();
    void mixlabModelImportKeepsTheRuns();
    void saveWeightsGreyedOutWithoutWeights();
    void weightsOutAndBackIn();
    void compareRunsEachKeepTheirWeights();
    void weightsThatCannotBeKeptAreSaid();

private:
    QTemporaryDir m_dir, m_settingsDir;
    DialogScript m_dialogs;

    int startAndWait(MainWindow &w, bool compare = false)
    {
        const std::size_t before = w.store()->runIds().size();
        if (compare)
            w.startCompare();
        else
            w.startRun();
        if (!w.controller()->isRunning()) return 0;
        if (!QTest::qWaitFor([&] { return !w.controller()->isRunning(); }, k_runTimeoutMs))
            return 0;
        const std::vector<int> ids = w.store()->runIds();
        return ids.size() > before ? ids.back() : 0;
    }
};

void TestAppImportWeights::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QVERIFY(m_settingsDir.isValid());
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestAppImportWeights::init()
{
    // No dialog ever blocks a test: messages and file dialogs are answered here.
    m_dialogs.install();
}

void TestAppImportWeights::cleanupTestCase() { DialogScript::uninstall(); }

void TestAppImportWeights::kerasImportIsANewUnsavedExperiment_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("policy");
    QTest::addColumn<QString>("modelClass");
    QTest::newRow("seed MLP, Keras 2") << "tests/data/keras/seed-mlp.keras2.json"
                                       << "mixed_fp16"
                                       << "Sequential";
    QTest::newRow("seed MLP, Keras 3") << "tests/data/keras/seed-mlp.keras3.json"
                                       << "mixed_fp16"
                                       << "Sequential";
    QTest::newRow("small ResNet, Keras 2") << "tests/data/keras/small-resnet.keras2.json"
                                           << ""
                                           << "Functional";
    QTest::newRow("small ResNet, Keras 3") << "tests/data/keras/small-resnet.keras3.json"
                                           << ""
                                           << "Functional";
}

void TestAppImportWeights::kerasImportIsANewUnsavedExperiment()
{
    QFETCH(QString, file);
    QFETCH(QString, policy);
    QFETCH(QString, modelClass);
    const QString path = source(file);
    const mixlab::KerasImport expected = mixlab::load_keras_model(path.toStdString());

    MainWindow w;
    w.setConfirmCloseForTesting(false);
    // An experiment with a run and an edited model: the import must ask before it goes.
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    FinishedRunSpec run;
    run.modelJson = QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel()));
    QRandomGenerator rng(5);
    addFinishedRun(*w.store(), w.store()->newGroup(), run, rng);
    QVERIFY(w.isModified());

    m_dialogs.answers = {1}; // Discard
    m_dialogs.fileAnswers = {path};
    action(w, "importModelAction")->trigger();

    QCOMPARE(int(m_dialogs.messages.size()), 1);
    QCOMPARE(m_dialogs.messages.front().kind, UserMessage::Kind::Question);
    // The designer holds exactly the file's model, the run panel its policy.
    QVERIFY(w.designer()->spec() == expected.spec);
    QCOMPARE(w.runPanel()->config().policy, expected.policy);
    if (!policy.isEmpty())
        QCOMPARE(QString::fromStdString(std::string(mixlab::policy_name(expected.policy))), policy);
    if (file.contains(QLatin1String("seed-mlp")))
        QVERIFY(w.designer()->spec() ==
                mixlab::load_model_spec(source("resources/models/seed-mlp.json").toStdString()));
    // A new experiment: no runs, no file, unsaved.
    QVERIFY(w.store()->runIds().empty());
    QVERIFY(w.currentFile().isEmpty());
    QVERIFY(w.isModified());
    QVERIFY(w.windowTitle().startsWith(QLatin1String("untitled")));
    // The notice names what came in: the class, the layer count, Keras's policy and the
    // input shape to choose data for.
    const QString notice = w.statusBar()->currentMessage();
    QVERIFY2(notice.contains(modelClass), qPrintable(notice));
    QVERIFY2(notice.contains(QStringLiteral("%1 layers").arg(expected.spec.layers.size())),
             qPrintable(notice));
    QVERIFY2(notice.contains(QString::fromStdString(expected.keras_policy)), qPrintable(notice));
    QVERIFY2(notice.contains(QLatin1String("32x32x3")), qPrintable(notice));
    QVERIFY2(w.logView()->plainText().contains(notice), qPrintable(w.logView()->plainText()));
}

void TestAppImportWeights::kerasImportCancelledKeepsTheExperiment()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    FinishedRunSpec run;
    run.modelJson = QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel()));
    QRandomGenerator rng(6);
    addFinishedRun(*w.store(), w.store()->newGroup(), run, rng);
    const mixlab::RunConfig config = w.runPanel()->config();

    m_dialogs.answers = {2}; // Cancel
    m_dialogs.fileAnswers = {source("tests/data/keras/seed-mlp.keras2.json")};
    action(w, "importModelAction")->trigger();
    QCOMPARE(int(m_dialogs.messages.size()), 1);
    QVERIFY(w.designer()->spec() == tinyGuiModel());
    QCOMPARE(w.store()->runIds().size(), std::size_t(1));
    QCOMPARE(mixlab::run_config_to_json(w.runPanel()->config()),
             mixlab::run_config_to_json(config));
}

void TestAppImportWeights::mixlabModelImportKeepsTheRuns()
{
    // A MixLab model file still replaces the designer's model alone, without a question.
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.runPanel()->setConfig(quickCpuConfig(1));
    FinishedRunSpec run;
    run.modelJson = QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel()));
    QRandomGenerator rng(7);
    addFinishedRun(*w.store(), w.store()->newGroup(), run, rng);
    const QString path = m_dir.filePath("tiny.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(mixlab::model_spec_to_json(tinyGuiModel()).c_str());
    f.close();
    m_dialogs.fileAnswers = {path};
    action(w, "importModelAction")->trigger();
    QVERIFY(m_dialogs.messages.empty());
    QVERIFY(w.designer()->spec() == tinyGuiModel());
    QCOMPARE(w.store()->runIds().size(), std::size_t(1));
}

void TestAppImportWeights::saveWeightsGreyedOutWithoutWeights()
{
    MainWindow w;
    QAction *save = action(w, "saveWeightsAction");
    QVERIFY(!save->isEnabled());
    QVERIFY2(save->toolTip().contains(QLatin1String("No run has trained weights")),
             qPrintable(save->toolTip()));
    // A run of an opened experiment (or put in by hand) has none either.
    FinishedRunSpec run;
    run.modelJson = QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel()));
    QRandomGenerator rng(8);
    addFinishedRun(*w.store(), w.store()->newGroup(), run, rng);
    QVERIFY(!save->isEnabled());
    QVERIFY(!w.weightsFolder()->path().isEmpty());
}

void TestAppImportWeights::weightsOutAndBackIn()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.show();
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(2));
    const int first = startAndWait(w);
    QVERIFY(first != 0);
    const RunRecord *trained = w.store()->run(first);
    QCOMPARE(trained->status, RunRecord::Status::Finished);
    QVERIFY2(QFile::exists(trained->weightsPath), qPrintable(trained->weightsFailure));
    QVERIFY(trained->weightsPath.startsWith(w.weightsFolder()->path()));

    // File > Save weights: enabled, a copy of the run's file, which is safetensors.
    QAction *save = action(w, "saveWeightsAction");
    QVERIFY(save->isEnabled());
    QVERIFY2(save->toolTip().contains(trained->name), qPrintable(save->toolTip()));
    const QString saved = m_dir.filePath("tiny.safetensors");
    m_dialogs.fileAnswers = {saved};
    save->trigger();
    QVERIFY2(m_dialogs.messages.empty(),
             m_dialogs.messages.empty() ? "" : qPrintable(m_dialogs.messages.front().text));
    const QByteArray bytes = readAll(saved);
    QCOMPARE(bytes, readAll(trained->weightsPath));
    QVERIFY(bytes.size() > 8);
    QVERIFY(bytes.contains("mixlab-weights/1"));
    QVERIFY(bytes.contains("\"1.weight\""));
    QVERIFY(w.logView()->plainText().contains(QStringLiteral("written to %1").arg(saved)));

    // Run > Start from weights: shown in the run panel, then in the run's log with the
    // file's hash, the run starting where the first ended.
    m_dialogs.fileAnswers = {saved};
    action(w, "startWeightsAction")->trigger();
    QCOMPARE(w.runPanel()->startWeights(), saved);
    auto *row = w.runPanel()->findChild<QWidget *>("startWeightsRow");
    QVERIFY(row->isVisibleTo(w.runPanel()));
    QVERIFY(w.runPanel()
                ->findChild<QLabel *>("startWeightsLabel")
                ->text()
                .contains("tiny.safetensors"));
    const int second = startAndWait(w);
    QVERIFY(second != 0);
    const RunRecord *resumed = w.store()->run(second);
    QCOMPARE(resumed->status, RunRecord::Status::Finished);
    const QString sha =
        QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
    bool logged = false;
    for (const TimedEvent &e : resumed->events)
        logged = logged || (QString::fromStdString(e.event.message).contains(saved) &&
                            QString::fromStdString(e.event.message).contains(sha));
    QVERIFY(logged);
    // ...and in its config, as the exported log (and the experiment file) writes it.
    QCOMPARE(resumed->startWeights, saved);
    const QString exported = m_dir.filePath(QStringLiteral("started-log.json"));
    QString exportError;
    QVERIFY2(exportLogs(*w.store(), {second}, exported, &exportError), qPrintable(exportError));
    QVERIFY2(QString::fromUtf8(readAll(exported))
                 .contains(QStringLiteral("\"start_weights\": \"%1\"").arg(saved)),
             qPrintable(QString::fromUtf8(readAll(exported)).left(600)));
    QVERIFY(w.store()->run(first)->startWeights.isEmpty());
    // Trained weights: the second run's first loss is below the first run's.
    QVERIFY2(resumed->steps.front().loss < trained->steps.front().loss,
             qPrintable(QStringLiteral("%1 vs %2")
                            .arg(resumed->steps.front().loss)
                            .arg(trained->steps.front().loss)));
    // Once: the next run starts fresh again.
    QVERIFY(w.runPanel()->startWeights().isEmpty());
    QVERIFY(!row->isVisibleTo(w.runPanel()));

    // A run that leaves the store takes its file along.
    const QString kept = trained->weightsPath;
    w.store()->removeRun(first);
    QVERIFY(!QFile::exists(kept));
}

void TestAppImportWeights::compareRunsEachKeepTheirWeights()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    w.runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedFP16});
    QVERIFY(startAndWait(w, true) != 0);
    const std::vector<int> ids = w.store()->runIds();
    QCOMPARE(ids.size(), std::size_t(2));
    QVERIFY(w.store()->run(ids[0])->weightsPath != w.store()->run(ids[1])->weightsPath);
    for (int row = 0; row < 2; ++row) {
        const int id = ids[std::size_t(row)];
        const RunRecord *r = w.store()->run(id);
        QVERIFY2(QFile::exists(r->weightsPath), qPrintable(r->weightsFailure));
        // The selected run is the one File > Save weights writes.
        w.runsTable()->selectRow(row);
        QCOMPARE(w.runsTable()->selectedRunIds(), std::vector<int>{id});
        QCOMPARE(w.weightsRun(), id);
    }
}

void TestAppImportWeights::weightsThatCannotBeKeptAreSaid()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    // A folder that is not there: the write fails, the run does not.
    w.controller()->setWeightsFolder(m_dir.filePath(QStringLiteral("no/such/folder")));
    const int id = startAndWait(w);
    QVERIFY(id != 0);
    const RunRecord *r = w.store()->run(id);
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QVERIFY(r->weightsPath.isEmpty());
    QVERIFY(r->weightsFailure.contains(QLatin1String("no/such/folder")));
    bool logged = false;
    for (const TimedEvent &e : r->events)
        logged = logged || (e.event.kind == mixlab::RunEvent::Kind::Warning &&
                            QString::fromStdString(e.event.message).contains("Save weights"));
    QVERIFY(logged);
    QAction *save = action(w, "saveWeightsAction");
    QVERIFY(!save->isEnabled());
    w.runsTable()->selectRow(0);
    QVERIFY2(save->toolTip().contains(QLatin1String("could not be kept")) &&
                 save->toolTip().contains(r->weightsFailure),
             qPrintable(save->toolTip()));
}

QTEST_MAIN(TestAppImportWeights)
#include "tst_app_import_weights.moc"
