// MainWindow end to end, offscreen: the parts and first-start defaults, Start blocked by
// an invalid model, real CPU runs and a compare through the Start path, Stop and close
// mid-run leaving no training thread, a failed run, and layout persistence; the primary
// actions in view at every size, the wheel, the modified mark and the questions to save
// before Quit and New, the file dialogs' folders and names, runs of N steps, the help.
#include "app/aboutdialog.h"
#include "charts/chartpanel.h"
#include "common/filedialogs.h"
#include "app/guidedialog.h"
#include "designer/layerpropertyeditor.h"
#include "designer/layertree.h"
#include "runs/logview.h"
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "app/shortcutsdialog.h"
#include "common/usermessages.h"
#include "runs/runcontroller.h"
#include "files/reportgroupdialog.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstablemodel.h"
#include "runs/runstore.h"

#include "mixlab/dataset.h"
#include "mixlab/model_spec.h"

#include "gui_fixtures.h"
#include "wheel_input.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>

#include <deque>

namespace {

constexpr int k_runTimeoutMs = 60000;

// What the worker's thread is called (RunController names it): on Linux the name is
// the task's comm, so /proc tells whether such a thread still exists.
int trainingThreads()
{
    int n = 0;
    const QDir tasks(QStringLiteral("/proc/self/task"));
    for (const QString &tid : tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QFile comm(tasks.filePath(tid + QStringLiteral("/comm")));
        if (comm.open(QIODevice::ReadOnly) && comm.readAll().trimmed() == "mixlab-training") ++n;
    }
    return n;
}

QPushButton *button(MainWindow &w, const char *name)
{
    return w.runPanel()->findChild<QPushButton *>(name);
}

QStringList menuTitles(MainWindow &w)
{
    QStringList titles;
    for (QAction *a : w.menuBar()->actions()) titles << a->text().remove(QLatin1Char('&'));
    return titles;
}

QMenu *menu(MainWindow &w, const QString &title)
{
    for (QAction *a : w.menuBar()->actions())
        if (a->text().remove(QLatin1Char('&')) == title) return a->menu();
    return nullptr;
}

// A menu entry by its text without the mnemonic, as the user reads it.
QAction *menuAction(MainWindow &w, const QString &menuTitle, const QString &text)
{
    for (QAction *a : menu(w, menuTitle)->actions())
        if (a->text().remove(QLatin1Char('&')) == text) return a;
    return nullptr;
}

// Every action of the menus and submenus that has a key.
void actionsWithKeys(const QMenu *m, QList<QAction *> &out)
{
    for (QAction *a : m->actions()) {
        if (a->menu())
            actionsWithKeys(a->menu(), out);
        else if (!a->shortcut().isEmpty())
            out << a;
    }
}

// Whole inside every widget around it up to the window: nothing of it cut off by a
// scroll area's viewport, a splitter or the window's edge.
bool fullyShown(QWidget *w, QString *why)
{
    if (!w->isVisible()) {
        *why = QStringLiteral("%1 is hidden").arg(w->objectName());
        return false;
    }
    QRect r = w->rect();
    for (QWidget *child = w; child->parentWidget() && !child->isWindow();
         child = child->parentWidget()) {
        r.translate(child->pos());
        QWidget *parent = child->parentWidget();
        if (!parent->rect().contains(r)) {
            *why = QStringLiteral("%1 (%2,%3 %4x%5) is cut by %6 %7 (%8x%9)")
                       .arg(w->objectName())
                       .arg(r.x())
                       .arg(r.y())
                       .arg(r.width())
                       .arg(r.height())
                       .arg(QString::fromLatin1(parent->metaObject()->className()),
                            parent->objectName())
                       .arg(parent->width())
                       .arg(parent->height());
            return false;
        }
    }
    return true;
}

QByteArray fileText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void init();
    void constructsWithPartsAndDefaults();
    void invalidModelBlocksStart();
    void cpuRunThroughStart();
    void compareRunsTwoPolicies();
    void failedRunKeepsTheAppWorking();
    void stopMidRun();
    void closeMidRun();
    void settingsPersistLayout();
    void experimentSaveOpenAndRecent();
    void aboutShowsVersions();
    void primaryActionsInView_data();
    void primaryActionsInView();
    void wheelLeavesSettingsAlone_data();
    void wheelLeavesSettingsAlone();
    void titleMarksUnsavedChanges();
    void quitAsksToSaveChanges_data();
    void quitAsksToSaveChanges();
    void noQuestionRightAfterSave();
    void fileDialogsRememberFoldersAndNameFiles();
    void trainForStepsRunsAndIsSaved();
    void shortcutListHasEveryMenuKey();
    void documentationIsBuiltIn();

private:
    // Answers the next question (-1: the dialog closed); errors are recorded too.
    void answerNext(int choice) { m_dialogs.answers.push_back(choice); }
    QTemporaryDir m_settingsDir;
    DialogScript m_dialogs;
};

void TestMainWindow::cleanupTestCase() { DialogScript::uninstall(); }

void TestMainWindow::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    // Never touch the user's own settings.
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestMainWindow::init()
{
    QSettings(QStringLiteral("MixLab"), QStringLiteral("mixlab")).clear();
    QTRY_COMPARE_WITH_TIMEOUT(trainingThreads(), 0, 2000);
    // No dialog ever blocks a test: messages and file dialogs are answered here.
    m_dialogs.install();
}

void TestMainWindow::constructsWithPartsAndDefaults()
{
    MainWindow w;
    QVERIFY(w.findChild<ModelDesigner *>());
    QVERIFY(w.findChild<RunPanel *>());
    QVERIFY(w.findChild<ChartPanel *>());
    QVERIFY(w.findChild<RunsTable *>());
    QVERIFY(w.findChild<LogView *>());
    for (const char *name : {"mainSplitter", "leftSplitter", "centreSplitter", "bottomSplitter"})
        QVERIFY2(w.findChild<QSplitter *>(name), name);
    QCOMPARE(menuTitles(w), (QStringList{"File", "Edit", "Run", "View", "Help"}));
    QVERIFY(menu(w, "Edit")->actions().contains(w.designer()->undoAction()));
    QVERIFY(menu(w, "Edit")->actions().contains(w.designer()->redoAction()));
    QCOMPARE(w.designer()->undoAction()->shortcut(), QKeySequence(QKeySequence::Undo));

    // First start: the seed MLP on a dataset that exists here; Start works at once.
    QCOMPARE(QString::fromStdString(w.designer()->spec().name), QStringLiteral("seed-mlp"));
    QCOMPARE(w.runPanel()->config().dataset.name, mixlab::default_dataset_name());
    const mixlab::Shape expected = mixlab::default_dataset_name() == "fashion-mnist"
                                       ? mixlab::Shape{{28, 28, 1}}
                                       : mixlab::Shape{{32, 32, 3}};
    QCOMPARE(w.designer()->input(), expected);
    QVERIFY2(w.designer()->isValid(), qPrintable(w.designer()->validationMessage()));
    QVERIFY(button(w, "startButton")->isEnabled());
    QVERIFY(button(w, "compareButton")->isEnabled());
    QVERIFY(!button(w, "stopButton")->isEnabled());
    QVERIFY(!w.designer()->undoStack()->canUndo());

    // The probe answers shortly; the status bar then names the device.
    QTRY_VERIFY(w.deviceKnown());
    auto *device = w.findChild<QLabel *>("deviceStatus");
    QVERIFY(device);
    if (w.deviceInfo().backend == mixlab::BackendKind::Cpu)
        QCOMPARE(device->text(), QStringLiteral("CPU (no CUDA device)"));
    else
        QVERIFY(device->text().contains(QStringLiteral("compute capability")));
    QVERIFY(w.logView()->plainText().contains(QStringLiteral("Device: ")));
    QVERIFY(w.findChild<QProgressBar *>("overallProgress"));
}

void TestMainWindow::invalidModelBlocksStart()
{
    MainWindow w;
    mixlab::ModelSpec spec = w.designer()->spec();
    QVERIFY(spec.layers.size() >= 4);
    spec.layers[3].units = 7; // the output no longer has one unit per class
    w.designer()->setSpec(spec);
    QVERIFY(!w.designer()->isValid());
    const QString message = w.designer()->validationMessage();
    QVERIFY(!message.isEmpty());
    QVERIFY(!button(w, "startButton")->isEnabled());
    QVERIFY(!button(w, "compareButton")->isEnabled());
    auto *label = w.runPanel()->findChild<QLabel *>("blockLabel");
    QVERIFY(label->isVisibleTo(w.runPanel()));
    QVERIFY2(label->text().contains(message), qPrintable(label->text()));
    // Start through the menu does nothing either.
    w.startRun();
    QVERIFY(!w.controller()->isRunning());
    QCOMPARE(w.store()->runIds().size(), size_t(0));

    spec.layers[3].units = 10;
    w.designer()->setSpec(spec);
    QVERIFY(button(w, "startButton")->isEnabled());
    QVERIFY(!label->isVisibleTo(w.runPanel()));
}

void TestMainWindow::cpuRunThroughStart()
{
    MainWindow w;
    w.show();
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(3)); // 8 steps an epoch, 24 in all
    QVERIFY(button(w, "startButton")->isEnabled());
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    QVERIFY(w.controller()->isRunning());
    QVERIFY(!button(w, "startButton")->isEnabled());
    QVERIFY(button(w, "stopButton")->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);

    QCOMPARE(w.store()->runIds().size(), size_t(1));
    const RunRecord *run = w.store()->run(w.store()->runIds().front());
    QCOMPARE(run->status, RunRecord::Status::Finished);
    QCOMPARE(run->steps.size(), size_t(24));
    QCOMPARE(run->epochs.size(), size_t(3));
    QVERIFY(run->summary.has_value());
    QCOMPARE(run->config.device, mixlab::DeviceChoice::CPU);

    RunsTableModel *table = w.runsTable()->tableModel();
    QCOMPARE(table->rowCount(), 1);
    QCOMPARE(table->data(table->index(0, RunsTableModel::Progress)).toString(),
             QStringLiteral("24 / 24"));
    QVERIFY(!table->data(table->index(0, RunsTableModel::StepMs)).toString().isEmpty());
    QVERIFY(!table->data(table->index(0, RunsTableModel::TestAccuracy)).toString().isEmpty());

    const QString prefix = QStringLiteral("[%1]").arg(run->name);
    QTRY_VERIFY(w.logView()->plainText().contains(prefix + QStringLiteral(" finished")));
    QVERIFY(w.logView()->plainText().contains(prefix + QStringLiteral(" started")));
    QCOMPARE(w.findChild<QProgressBar *>("overallProgress")->value(), 1000);
    QVERIFY(button(w, "startButton")->isEnabled());
    QVERIFY(!button(w, "stopButton")->isEnabled());
}

void TestMainWindow::compareRunsTwoPolicies()
{
    MainWindow w;
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(2));
    w.runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedFP16});
    QTest::mouseClick(button(w, "compareButton"), Qt::LeftButton);
    QVERIFY(w.controller()->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);

    const std::vector<int> ids = w.store()->runIds();
    QCOMPARE(ids.size(), size_t(2));
    const RunRecord *a = w.store()->run(ids[0]);
    const RunRecord *b = w.store()->run(ids[1]);
    QCOMPARE(a->group, b->group);
    QCOMPARE(a->config.policy, mixlab::Policy::FP32);
    QCOMPARE(b->config.policy, mixlab::Policy::MixedFP16);
    for (const RunRecord *r : {a, b}) {
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QCOMPARE(r->steps.size(), size_t(16));
        QCOMPARE(r->config.seed, std::uint64_t(7)); // same everything but the policy
        QCOMPARE(r->config.batch_size, 32);
    }
    RunsTableModel *table = w.runsTable()->tableModel();
    QCOMPARE(table->rowCount(), 2);
    QVERIFY(
        table->data(table->index(1, RunsTableModel::Speedup)).toString().endsWith(QChar(0x00d7)));
    QTRY_VERIFY(w.logView()->plainText().contains(QStringLiteral("[%1] finished").arg(b->name)));
}

void TestMainWindow::failedRunKeepsTheAppWorking()
{
    MainWindow w;
    w.designer()->setSpec(tinyGuiModel());
    mixlab::RunConfig bad = quickCpuConfig(1);
    bad.dataset.synthetic_train = 16; // fewer samples than one batch of 32
    w.runPanel()->setConfig(bad);
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
    const RunRecord *run = w.store()->run(w.store()->runIds().front());
    QCOMPARE(run->status, RunRecord::Status::Failed);
    QVERIFY(!run->failure.isEmpty());
    RunsTableModel *table = w.runsTable()->tableModel();
    QVERIFY(table->data(table->index(0, RunsTableModel::Status)).toString().contains(run->failure));
    QTRY_VERIFY(w.logView()->plainText().contains(
        QStringLiteral("[%1] failed: %2").arg(run->name, run->failure)));

    // The next run works.
    w.runPanel()->setConfig(quickCpuConfig(1));
    QVERIFY(button(w, "startButton")->isEnabled());
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
    QCOMPARE(w.store()->run(w.store()->runIds().back())->status, RunRecord::Status::Finished);
}

void TestMainWindow::stopMidRun()
{
    {
        MainWindow w;
        w.designer()->setSpec(tinyGuiModel());
        w.runPanel()->setConfig(quickCpuConfig(10000)); // far longer than the test waits
        QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
        const int id = w.store()->runIds().front();
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->run(id)->steps.size() >= 3, k_runTimeoutMs);
        QTest::mouseClick(button(w, "stopButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), 10000);
        const RunRecord *run = w.store()->run(id);
        QCOMPARE(run->status, RunRecord::Status::Stopped);
        QVERIFY(run->steps.size() < size_t(8 * 10000));
        QVERIFY(button(w, "startButton")->isEnabled());
        QVERIFY(!button(w, "stopButton")->isEnabled());
        w.setConfirmCloseForTesting(false); // the stopped run is not saved: no question
        QVERIFY(w.close());
    }
    QTRY_COMPARE_WITH_TIMEOUT(trainingThreads(), 0, 2000);
}

void TestMainWindow::closeMidRun()
{
    MainWindow w;
    w.show();
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(10000));
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    const int id = w.store()->runIds().front();
    QTRY_VERIFY_WITH_TIMEOUT(w.store()->run(id)->steps.size() >= 3, k_runTimeoutMs);
    // The worker thread, and the OpenMP helpers it started, which inherit its name.
    QVERIFY(trainingThreads() >= 1);
    QVERIFY(w.close());
    // close() returned only after the worker's thread was joined; its OpenMP helpers
    // end with it, a moment later.
    QVERIFY(!w.controller()->isRunning());
    QTRY_COMPARE_WITH_TIMEOUT(trainingThreads(), 0, 2000);
    QCOMPARE(w.store()->run(id)->status, RunRecord::Status::Stopped);
}

void TestMainWindow::settingsPersistLayout()
{
    QList<int> mainSizes, bottomSizes;
    {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.resize(1234, 789);
        QTRY_COMPARE(w.size(), QSize(1234, 789));
        auto *mainSplitter = w.findChild<QSplitter *>("mainSplitter");
        auto *bottom = w.findChild<QSplitter *>("bottomSplitter");
        mainSplitter->setSizes({560, 1234 - 560}); // not the default split
        bottom->setSizes({250, 600});
        mainSizes = mainSplitter->sizes();
        bottomSizes = bottom->sizes();
        QVERIFY2(mainSizes.front() >= 540 && mainSizes.front() <= 580,
                 qPrintable(QString::number(mainSizes.front())));
        // The designer dragged as small as it goes: its property editor keeps its rows.
        w.findChild<QSplitter *>("leftSplitter")->setSizes({10, 2000});
        QVERIFY(w.close());
    }
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE(w.size(), QSize(1234, 789));
    QCOMPARE(w.findChild<QSplitter *>("mainSplitter")->sizes(), mainSizes);
    QCOMPARE(w.findChild<QSplitter *>("bottomSplitter")->sizes(), bottomSizes);
    auto *editor = w.designer()->findChild<QWidget *>("propertyEditorScroll");
    QVERIFY2(editor->height() >= 5 * editor->fontMetrics().lineSpacing(),
             qPrintable(QString::number(editor->height())));
}

void TestMainWindow::experimentSaveOpenAndRecent()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("run.mixlab.json"));
    {
        MainWindow w;
        w.designer()->setSpec(tinyGuiModel());
        w.runPanel()->setConfig(quickCpuConfig(1));
        QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
        QString error;
        QVERIFY2(w.saveExperimentAs(path, &error), qPrintable(error));
        QCOMPARE(w.currentFile(), path);
        QVERIFY(w.windowTitle().contains(QStringLiteral("run.mixlab.json")));
        QVERIFY(w.close());
    }
    MainWindow w;
    QCOMPARE(w.recentFiles().value(0), QFileInfo(path).absoluteFilePath());
    QString error;
    QVERIFY2(w.openExperiment(path, &error), qPrintable(error));
    QCOMPARE(QString::fromStdString(w.designer()->spec().name), QStringLiteral("tiny"));
    QCOMPARE(w.runPanel()->config().dataset.synthetic_train, std::int64_t(256));
    QCOMPARE(w.runsTable()->tableModel()->rowCount(), 1);
    // A file that is not an experiment is refused with a message, and nothing changes.
    QFile junk(dir.filePath(QStringLiteral("junk.json")));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("{\"format\": \"something-else/1\"}");
    junk.close();
    QVERIFY(!w.openExperiment(junk.fileName(), &error));
    QVERIFY(!error.isEmpty());
    QCOMPARE(w.runsTable()->tableModel()->rowCount(), 1);
    QCOMPARE(w.currentFile(), path);
}

void TestMainWindow::aboutShowsVersions()
{
    mixlab::DeviceInfo cpu;
    cpu.backend = mixlab::BackendKind::Cpu;
    cpu.name = "CPU (no CUDA device)";
    const QString cpuText = AboutDialog(cpu).versionsText();
    QVERIFY2(cpuText.contains(QStringLiteral("MixLab: " MIXLAB_VERSION)), qPrintable(cpuText));
    QVERIFY(cpuText.contains(QStringLiteral("Qt: %1").arg(QString::fromLatin1(qVersion()))));
    for (const char *fact : {"GPU", "CUDA runtime", "CUDA driver", "cuBLAS", "cuDNN"})
        QVERIFY2(cpuText.contains(QStringLiteral("%1: not available").arg(QLatin1String(fact))),
                 fact);

    mixlab::DeviceInfo gpu;
    gpu.backend = mixlab::BackendKind::Cuda;
    gpu.name = "NVIDIA GeForce RTX 2060";
    gpu.cc_major = 7;
    gpu.cc_minor = 5;
    gpu.memory_bytes = std::int64_t(6) << 30;
    gpu.driver_version = "550.54";
    gpu.runtime_version = "13.0";
    gpu.cublas_version = "13.0.0";
    gpu.cudnn_version = "9.1.0";
    const QString gpuText = AboutDialog(gpu).versionsText();
    QVERIFY2(gpuText.contains(
                 QStringLiteral("GPU: NVIDIA GeForce RTX 2060, compute capability 7.5, 6.0 GiB")),
             qPrintable(gpuText));
    QVERIFY(gpuText.contains(QStringLiteral("CUDA runtime: 13.0")));
    QVERIFY(gpuText.contains(QStringLiteral("CUDA driver: 550.54")));
    QVERIFY(gpuText.contains(QStringLiteral("cuBLAS: 13.0.0")));
    QVERIFY(gpuText.contains(QStringLiteral("cuDNN: 9.1.0")));
    QVERIFY(!gpuText.contains(QStringLiteral("not available")));
}

void TestMainWindow::primaryActionsInView_data()
{
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("why");
    for (const QSize size : {QSize(1280, 800), QSize(1600, 1000)})
        for (const bool why : {false, true})
            QTest::addRow("%dx%d%s", size.width(), size.height(), why ? " with Why?" : "")
                << size << why;
}

// Start, Compare, Stop and the reason they are blocked are on the first screen: inside
// the window and not inside anything that scrolls them away.
void TestMainWindow::primaryActionsInView()
{
    QFETCH(QSize, size);
    QFETCH(bool, why);
    MainWindow w;
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE(w.size(), size);
    if (why) {
        w.showWhy();
        QTRY_VERIFY(w.findChild<QDockWidget *>("whyDock")->isVisible());
    }
    mixlab::ModelSpec bad = w.designer()->spec();
    bad.layers[3].units = 7; // the output no longer has one unit per class: a long reason
    w.designer()->setSpec(bad);
    // The toolbar's Start, Compare, Stop and Why? are in view at every size, Why? open or
    // not, and greyed-out Start says why.
    QToolBar *bar = w.runToolBar();
    for (QAction *action :
         {w.findChild<QAction *>("startAction"), w.findChild<QAction *>("compareAction"),
          w.findChild<QAction *>("stopAction"), w.whyAction()}) {
        QVERIFY(action);
        QWidget *button = bar->widgetForAction(action);
        QString why;
        QTRY_VERIFY2(fullyShown(button, &why),
                     qPrintable(action->iconText() + QStringLiteral(": ") + why));
    }
    QVERIFY(!w.findChild<QAction *>("startAction")->isEnabled());
    QVERIFY(w.findChild<QAction *>("startAction")
                ->toolTip()
                .contains(QStringLiteral("The model is not valid")));
    // Where Why? leaves the run panel in view (at 1600 wide it takes the design column's
    // place), its own buttons and the whole reason line are in view too.
    if (w.runPanel()->isVisibleTo(&w)) {
        auto *label = w.runPanel()->findChild<QLabel *>("blockLabel");
        QVERIFY(label->text().startsWith(QStringLiteral("The model is not valid")));
        for (const char *name : {"startButton", "compareButton", "stopButton", "blockLabel"}) {
            QWidget *part = w.runPanel()->findChild<QWidget *>(name);
            QString why;
            QTRY_VERIFY2(fullyShown(part, &why), qPrintable(why));
        }
        QTRY_VERIFY2(label->height() >= label->heightForWidth(label->width()),
                     qPrintable(QStringLiteral("%1 < %2")
                                    .arg(label->height())
                                    .arg(label->heightForWidth(label->width()))));
    } else {
        QVERIFY2(why, "the run panel is hidden without the Why? dock");
    }
    if (!why) {
        // The property editor keeps room for its fields.
        auto *editor = w.designer()->findChild<QWidget *>("propertyEditorScroll");
        QVERIFY2(editor->height() >= 5 * editor->fontMetrics().lineSpacing(),
                 qPrintable(QString::number(editor->height())));
        return;
    }
}

void TestMainWindow::wheelLeavesSettingsAlone_data()
{
    QTest::addColumn<QString>("name");
    QTest::newRow("run panel: device") << "deviceCombo";
    QTest::newRow("run panel: batch") << "batchSpin";
    QTest::newRow("run panel: train for") << "lengthUnitCombo";
    QTest::newRow("property editor: units") << "units";
    QTest::newRow("palette: block filters") << "blockFilters";
}

// The app's own combo and spin boxes, wherever they are: the wheel over one that has not
// been clicked into changes nothing.
void TestMainWindow::wheelLeavesSettingsAlone()
{
    QFETCH(QString, name);
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    w.designer()->selectRow(1); // dense 3000: the editor shows units
    w.designer()->layerTree()->setFocus();
    auto *field = w.findChild<QWidget *>(name);
    QVERIFY(field);
    QTRY_VERIFY(field->isVisible());
    QCOMPARE(field->focusPolicy(), Qt::StrongFocus);
    const QString before = shownValue(field);
    const QString spec = QString::fromStdString(mixlab::model_spec_to_json(w.designer()->spec()));
    wheelDownOver(field);
    wheelDownOver(field);
    QCOMPARE(shownValue(field), before);
    QCOMPARE(QString::fromStdString(mixlab::model_spec_to_json(w.designer()->spec())), spec);
    QVERIFY(!w.isWindowModified());
}

// One notion of "changed since the last save or open" drives the title's mark: an edit
// sets it, undoing back to the saved model or setting a field back clears it.
void TestMainWindow::titleMarksUnsavedChanges()
{
    QTemporaryDir dir;
    MainWindow w;
    QVERIFY(w.windowTitle().contains(QStringLiteral("[*]")));
    QVERIFY(!w.isWindowModified());
    QTRY_VERIFY(w.deviceKnown()); // the probe's defaults are not the user's edits
    QVERIFY(!w.isWindowModified());

    w.designer()->selectRow(1);
    w.designer()->addLayer(mixlab::LayerType::Dropout);
    QVERIFY(w.isWindowModified());
    w.designer()->undoStack()->undo();
    QVERIFY(!w.isWindowModified());

    auto *batch = w.runPanel()->findChild<QSpinBox *>("batchSpin");
    const int size = batch->value();
    batch->setValue(size + 1);
    QVERIFY(w.isWindowModified());
    batch->setValue(size);
    QVERIFY(!w.isWindowModified());

    w.designer()->addLayer(mixlab::LayerType::Dropout);
    QString error;
    QVERIFY2(w.saveExperimentAs(dir.filePath(QStringLiteral("marked.mixlab.json")), &error),
             qPrintable(error));
    QVERIFY(!w.isWindowModified());
    w.designer()->undoStack()->undo(); // now the model differs from the saved one
    QVERIFY(w.isWindowModified());
    w.designer()->undoStack()->redo();
    QVERIFY(!w.isWindowModified());
    QVERIFY(w.close());
    QVERIFY(m_dialogs.messages.empty());
}

void TestMainWindow::quitAsksToSaveChanges_data()
{
    QTest::addColumn<int>("answer"); // Save, Discard, Cancel; -1: the question closed
    QTest::addColumn<QString>(
        "file"); // "saved": the experiment has a file; "gone": its folder went away
    QTest::addColumn<QString>("saveAs"); // the save dialog's answer for an untitled one
    QTest::addColumn<bool>("closes");
    QTest::addColumn<bool>("written"); // the edit is in the file afterwards
    QTest::newRow("cancel") << 2 << "saved"
                            << "" << false << false;
    QTest::newRow("question closed") << -1 << "saved"
                                     << "" << false << false;
    QTest::newRow("discard") << 1 << "saved"
                             << "" << true << false;
    QTest::newRow("save") << 0 << "saved"
                          << "" << true << true;
    QTest::newRow("save untitled") << 0 << ""
                                   << "new.mixlab.json" << true << true;
    QTest::newRow("save untitled, dialog cancelled") << 0 << ""
                                                     << "" << false << false;
    QTest::newRow("save fails") << 0 << "gone"
                                << "" << false << false;
}

// Quit with unsaved changes asks Save / Discard / Cancel; only a save that worked, or
// Discard, lets the window close.
void TestMainWindow::quitAsksToSaveChanges()
{
    QFETCH(int, answer);
    QFETCH(QString, file);
    QFETCH(QString, saveAs);
    QFETCH(bool, closes);
    QFETCH(bool, written);
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("experiments"));
    QVERIFY(QDir().mkpath(folder));
    QString path = folder + QStringLiteral("/quit.mixlab.json");
    MainWindow w;
    w.show();
    QString error;
    if (!file.isEmpty()) QVERIFY2(w.saveExperimentAs(path, &error), qPrintable(error));
    if (file == QLatin1String("gone")) QVERIFY(QDir(folder).removeRecursively());
    if (!saveAs.isEmpty()) {
        path = dir.filePath(saveAs);
        m_dialogs.fileAnswers.push_back(path);
    }
    w.designer()->selectRow(1);
    w.designer()->addLayer(mixlab::LayerType::Dropout);
    QVERIFY(w.isWindowModified());

    answerNext(answer);
    QCOMPARE(w.close(), closes);
    QCOMPARE(w.isVisible(), !closes);
    QVERIFY(!m_dialogs.messages.empty());
    const UserMessage &question = m_dialogs.messages.front();
    QCOMPARE(question.kind, UserMessage::Kind::Question);
    QCOMPARE(question.title, QStringLiteral("Quit MixLab"));
    QCOMPARE(question.choices, (QStringList{"Save", "Discard", "Cancel"}));
    QCOMPARE(fileText(path).contains("\"dropout\""), written);
    if (file == QLatin1String("gone")) { // the failure is said, naming the file
        QCOMPARE(m_dialogs.messages.size(), std::size_t(2));
        QVERIFY2(m_dialogs.messages.back().text.contains(path),
                 qPrintable(m_dialogs.messages.back().text));
    }
    if (!closes) {
        QVERIFY(w.isWindowModified()); // nothing lost: the edit is still there, unsaved
        w.setConfirmCloseForTesting(false);
    }
}

// Right after a save nothing is unsaved: New and Quit do not ask. After another run, New
// asks, and Cancel keeps the runs.
void TestMainWindow::noQuestionRightAfterSave()
{
    QTemporaryDir dir;
    MainWindow w;
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
    QVERIFY(w.isWindowModified());
    QString error;
    QVERIFY2(w.saveExperimentAs(dir.filePath(QStringLiteral("after.mixlab.json")), &error),
             qPrintable(error));
    QVERIFY(!w.isWindowModified());

    menuAction(w, QStringLiteral("File"), QStringLiteral("New"))->trigger();
    QVERIFY(m_dialogs.messages.empty());
    QVERIFY(w.store()->runIds().empty());
    QCOMPARE(QString::fromStdString(w.designer()->spec().name), QStringLiteral("seed-mlp"));
    QVERIFY(!w.isWindowModified());

    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
    answerNext(2); // Cancel
    menuAction(w, QStringLiteral("File"), QStringLiteral("New"))->trigger();
    QCOMPARE(m_dialogs.messages.size(), std::size_t(1));
    QCOMPARE(m_dialogs.messages.front().title, QStringLiteral("New experiment"));
    QCOMPARE(w.store()->runIds().size(), std::size_t(1));
    QVERIFY(w.isWindowModified());
    w.setConfirmCloseForTesting(false);
}

// Each kind of file dialog starts where the last one of its kind chose (remembered by
// the next start too) and proposes a name made from the model's.
void TestMainWindow::fileDialogsRememberFoldersAndNameFiles()
{
    QCOMPARE(fileStem(QStringLiteral("small-cnn")), QStringLiteral("small-cnn"));
    QCOMPARE(fileStem(QStringLiteral("ResNet 18 (CIFAR)")), QStringLiteral("ResNet-18-CIFAR"));
    QCOMPARE(fileStem(QString()), QStringLiteral("mixlab"));

    QTemporaryDir experiments, logs;
    const QString here = QDir::currentPath();
    {
        MainWindow w;
        w.designer()->setSpec(tinyGuiModel()); // named "tiny"
        m_dialogs.fileAnswers.push_back(experiments.filePath(QStringLiteral("first.mixlab.json")));
        menuAction(w, QStringLiteral("File"), QStringLiteral("Save As..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().start,
                 QDir(here).filePath(QStringLiteral("tiny.mixlab.json")));
        QCOMPARE(m_dialogs.fileRequests.back().mode, FileRequest::Mode::Save);
        QVERIFY(QFile::exists(experiments.filePath(QStringLiteral("first.mixlab.json"))));
        // Saving again under another name starts at the file itself.
        menuAction(w, QStringLiteral("File"), QStringLiteral("Save As..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().start,
                 experiments.filePath(QStringLiteral("first.mixlab.json")));
        menuAction(w, QStringLiteral("File"), QStringLiteral("Open..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().start, experiments.path());
        // Another kind of file has its own folder.
        menuAction(w, QStringLiteral("File"), QStringLiteral("Import model..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().kind, FileKind::Model);
        QCOMPARE(m_dialogs.fileRequests.back().start, here);

        w.runPanel()->setConfig(quickCpuConfig(1));
        w.startRun();
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
        m_dialogs.fileAnswers.push_back(logs.filePath(QStringLiteral("tiny-log.json")));
        menuAction(w, QStringLiteral("File"), QStringLiteral("Export logs..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().start,
                 QDir(here).filePath(QStringLiteral("tiny-log.json")));
        QVERIFY(QFile::exists(logs.filePath(QStringLiteral("tiny-log.json"))));
        menuAction(w, QStringLiteral("File"), QStringLiteral("Export logs..."))->trigger();
        QCOMPARE(m_dialogs.fileRequests.back().start,
                 logs.filePath(QStringLiteral("tiny-log.json")));
        // The report first asks which group (ReportGroupDialog): take the one it offers.
        QTimer::singleShot(0, &w, [] {
            if (auto *choose = qobject_cast<ReportGroupDialog *>(QApplication::activeModalWidget()))
                choose->accept();
        });
        menuAction(w, QStringLiteral("File"), QStringLiteral("Export report..."))->trigger();
        QVERIFY2(QRegularExpression(QStringLiteral("^tiny-group-\\d+-report\\.html$"))
                     .match(QFileInfo(m_dialogs.fileRequests.back().start).fileName())
                     .hasMatch(),
                 qPrintable(m_dialogs.fileRequests.back().start));
        w.setConfirmCloseForTesting(false);
    }
    // The next start remembers the folders.
    MainWindow w;
    menuAction(w, QStringLiteral("File"), QStringLiteral("Open..."))->trigger();
    QCOMPARE(m_dialogs.fileRequests.back().start, experiments.path());
    QVERIFY2(m_dialogs.messages.empty(), qPrintable(m_dialogs.messages.front().text));
}

// "Train for N steps" trains that many steps, and the experiment file keeps the choice.
void TestMainWindow::trainForStepsRunsAndIsSaved()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("steps.mixlab.json"));
    {
        MainWindow w;
        w.designer()->setSpec(tinyGuiModel());
        w.runPanel()->setConfig(quickCpuConfig(3)); // 24 steps as epochs
        auto *unit = w.runPanel()->findChild<QComboBox *>("lengthUnitCombo");
        unit->setCurrentIndex(unit->findText(QStringLiteral("steps")));
        w.runPanel()->findChild<QSpinBox *>("stepsSpin")->setValue(5);
        QTest::mouseClick(button(w, "startButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
        const RunRecord *run = w.store()->run(w.store()->runIds().front());
        QCOMPARE(run->status, RunRecord::Status::Finished);
        QCOMPARE(run->steps.size(), std::size_t(5));
        QCOMPARE(run->config.steps, std::int64_t(5));
        QString error;
        QVERIFY2(w.saveExperimentAs(path, &error), qPrintable(error));
        QVERIFY(w.close());
    }
    MainWindow w;
    QString error;
    QVERIFY2(w.openExperiment(path, &error), qPrintable(error));
    QCOMPARE(w.runPanel()->findChild<QComboBox *>("lengthUnitCombo")->currentText(),
             QStringLiteral("steps"));
    QCOMPARE(w.runPanel()->findChild<QSpinBox *>("stepsSpin")->value(), 5);
    QCOMPARE(w.runPanel()->config().steps, std::int64_t(5));
    QVERIFY(!w.isWindowModified());
}

// Help > Keyboard shortcuts is made from the actions: every menu entry with a key is
// listed with it, and so are the layer tree's keys.
void TestMainWindow::shortcutListHasEveryMenuKey()
{
    MainWindow w;
    w.show();
    QAction *open = menuAction(w, QStringLiteral("Help"), QStringLiteral("Keyboard shortcuts"));
    QVERIFY(open);
    open->trigger();
    auto *dialog = w.findChild<ShortcutsDialog *>();
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->isVisible());
    const QStringList entries = dialog->entries();
    QList<QAction *> keyed;
    for (QAction *top : w.menuBar()->actions()) actionsWithKeys(top->menu(), keyed);
    QVERIFY(keyed.size() >= 10);
    for (QAction *a : keyed) {
        const QString wanted = QStringLiteral("%1 = %2").arg(
            a->text().remove(QLatin1Char('&')), a->shortcut().toString(QKeySequence::NativeText));
        QVERIFY2(
            std::any_of(entries.begin(), entries.end(),
                        [&](const QString &e) { return e.endsWith(wanted); }),
            qPrintable(wanted + QStringLiteral(" not in:\n") + entries.join(QLatin1Char('\n'))));
    }
    QVERIFY(entries.contains(QStringLiteral("Run: Start = Ctrl+R")));
    // Bringing models and weights in and out, and continuing from a checkpoint (issue 19).
    for (const char *entry :
         {"File: Import model... = Ctrl+I", "File: Save weights... = Ctrl+Shift+W",
          "Run: Start from weights... = Ctrl+Shift+L",
          "Run: Continue training from checkpoint... = Ctrl+Shift+K"})
        QVERIFY2(entries.contains(QLatin1String(entry)),
                 qPrintable(QLatin1String(entry) + QStringLiteral(" not in:\n") +
                            entries.join(QLatin1Char('\n'))));
    QVERIFY2(entries.contains(QStringLiteral("File: Quit = Ctrl+Q")),
             qPrintable(entries.join(QLatin1Char('\n'))));
    QVERIFY(entries.contains(QStringLiteral("Layer tree (while it has the focus): Remove = Del")));
    QVERIFY(entries.contains(
        QStringLiteral("Layer tree (while it has the focus): Duplicate = Ctrl+D")));
}

// Help > MixLab documentation: the quick guide, from the app's own resources.
void TestMainWindow::documentationIsBuiltIn()
{
    QVERIFY(QFile::exists(QStringLiteral(":/docs/guide.html")));
    MainWindow w;
    QAction *open = menuAction(w, QStringLiteral("Help"), QStringLiteral("MixLab documentation"));
    QVERIFY(open);
    QCOMPARE(open->shortcut(), QKeySequence(QKeySequence::HelpContents));
    open->trigger();
    auto *guide = w.findChild<GuideDialog *>();
    QVERIFY(guide);
    const QString text = guide->text();
    for (const char *part :
         {"The parts of the window", "Precision policies", "Comparing precisions",
          "What Why? shows", "mixed_fp16", "Keyboard shortcuts"})
        QVERIFY2(text.contains(QLatin1String(part)), part);
    open->trigger(); // shown again, not a second window
    QCOMPARE(w.findChildren<GuideDialog *>().size(), 1);
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
