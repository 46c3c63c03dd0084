// MainWindow end to end, offscreen: the parts and first-start defaults, Start blocked by
// an invalid model, real CPU runs and a compare through the Start path, Stop and close
// mid-run leaving no training thread, a failed run, and layout persistence.
#include "aboutdialog.h"
#include "chartpanel.h"
#include "logview.h"
#include "mainwindow.h"
#include "modeldesigner.h"
#include "runcontroller.h"
#include "runpanel.h"
#include "runstable.h"
#include "runstablemodel.h"
#include "runstore.h"

#include "mixlab/dataset.h"
#include "mixlab/model_spec.h"

#include "gui_fixtures.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

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
        if (comm.open(QIODevice::ReadOnly) && comm.readAll().trimmed() == "mixlab-training")
            ++n;
    }
    return n;
}

QPushButton *button(MainWindow &w, const char *name) { return w.runPanel()->findChild<QPushButton *>(name); }

QStringList menuTitles(MainWindow &w)
{
    QStringList titles;
    for (QAction *a : w.menuBar()->actions())
        titles << a->text().remove(QLatin1Char('&'));
    return titles;
}

QMenu *menu(MainWindow &w, const QString &title)
{
    for (QAction *a : w.menuBar()->actions())
        if (a->text().remove(QLatin1Char('&')) == title)
            return a->menu();
    return nullptr;
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
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

private:
    QTemporaryDir m_settingsDir;
};

void TestMainWindow::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    // Never touch the user's own settings.
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestMainWindow::init()
{
    QSettings(QStringLiteral("MixLab"), QStringLiteral("mixlab")).clear();
    QTRY_COMPARE_WITH_TIMEOUT(trainingThreads(), 0, 2000);
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
    const mixlab::Shape expected = mixlab::default_dataset_name() == "fashion-mnist" ? mixlab::Shape{{28, 28, 1}}
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
    if (w.deviceInfo().backend == "cpu")
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
    QCOMPARE(table->data(table->index(0, RunsTableModel::Progress)).toString(), QStringLiteral("24 / 24"));
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
    QVERIFY(table->data(table->index(1, RunsTableModel::Speedup)).toString().endsWith(QChar(0x00d7)));
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
    QTRY_VERIFY(w.logView()->plainText().contains(QStringLiteral("[%1] failed: %2").arg(run->name, run->failure)));

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
        QVERIFY2(mainSizes.front() >= 540 && mainSizes.front() <= 580, qPrintable(QString::number(mainSizes.front())));
        QVERIFY(w.close());
    }
    MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE(w.size(), QSize(1234, 789));
    QCOMPARE(w.findChild<QSplitter *>("mainSplitter")->sizes(), mainSizes);
    QCOMPARE(w.findChild<QSplitter *>("bottomSplitter")->sizes(), bottomSizes);
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
    cpu.backend = "cpu";
    cpu.name = "CPU (no CUDA device)";
    const QString cpuText = AboutDialog(cpu).versionsText();
    QVERIFY2(cpuText.contains(QStringLiteral("MixLab: " MIXLAB_VERSION)), qPrintable(cpuText));
    QVERIFY(cpuText.contains(QStringLiteral("Qt: %1").arg(QString::fromLatin1(qVersion()))));
    for (const char *fact : {"GPU", "CUDA runtime", "CUDA driver", "cuBLAS", "cuDNN"})
        QVERIFY2(cpuText.contains(QStringLiteral("%1: not available").arg(QLatin1String(fact))), fact);

    mixlab::DeviceInfo gpu;
    gpu.backend = "cuda";
    gpu.name = "NVIDIA GeForce RTX 2060";
    gpu.cc_major = 7;
    gpu.cc_minor = 5;
    gpu.memory_bytes = std::int64_t(6) << 30;
    gpu.driver_version = "550.54";
    gpu.runtime_version = "13.0";
    gpu.cublas_version = "13.0.0";
    gpu.cudnn_version = "9.1.0";
    const QString gpuText = AboutDialog(gpu).versionsText();
    QVERIFY2(gpuText.contains(QStringLiteral("GPU: NVIDIA GeForce RTX 2060, compute capability 7.5, 6.0 GiB")),
             qPrintable(gpuText));
    QVERIFY(gpuText.contains(QStringLiteral("CUDA runtime: 13.0")));
    QVERIFY(gpuText.contains(QStringLiteral("CUDA driver: 550.54")));
    QVERIFY(gpuText.contains(QStringLiteral("cuBLAS: 13.0.0")));
    QVERIFY(gpuText.contains(QStringLiteral("cuDNN: 9.1.0")));
    QVERIFY(!gpuText.contains(QStringLiteral("not available")));
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
