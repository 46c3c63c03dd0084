// The app's checkpoints, offscreen on the CPU backend: Run > Checkpoints at epoch ends
// (each run of a compare group keeps its newest K in a folder of its own), Continue
// training (from the runs table's menu or a file: a new run, named for what it continues,
// bit-identical to a straight run, the designer's unsaved edits untouched), a checkpoint
// that cannot be written (said, the run goes on), Delete run taking the run's checkpoints
// (asked first), run folders made as they are named and gone again when a run wrote none
// into them, the session weights folders a crashed session left, and the new actions'
// keys. With MIXLAB_SHOTS_DIR set, the new UI is saved there as PNGs at 1600x1000 and
// 1280x800.
#include "app/mainwindow.h"
#include "app/shortcutsdialog.h"
#include "designer/modeldesigner.h"
#include "files/logexport.h"
#include "runs/checkpointfolders.h"
#include "runs/continuedialog.h"
#include "runs/logview.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstore.h"
#include "runs/weightsfolder.h"

#include "mixlab/checkpoint.h"
#include "mixlab/checkpoint_folder.h"

#include "gui_fixtures.h"

#include <QAction>
#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QFile>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <algorithm>

namespace {

constexpr int k_runTimeoutMs = 60000;

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QAction *action(const QWidget &w, const char *name)
{
    auto *a = w.findChild<QAction *>(name);
    if (!a) qFatal("no action %s", name);
    return a;
}

std::vector<mixlab::CheckpointFile> checkpointsOf(const RunRecord &r)
{
    return mixlab::list_checkpoints(QFile::encodeName(r.checkpointFolder).toStdString());
}

// MIXLAB_SHOTS_DIR/<name>-<width>x<height>.png (the size of `sizeOf`, else the widget's
// window), when that is set.
void shoot(QWidget &widget, const QString &name, const QWidget *sizeOf = nullptr)
{
    const QString dir = qEnvironmentVariable("MIXLAB_SHOTS_DIR");
    if (dir.isEmpty()) return;
    QDir().mkpath(dir);
    const QWidget *window = sizeOf ? sizeOf : widget.window();
    widget.grab().save(QStringLiteral("%1/%2-%3x%4.png")
                           .arg(dir, name)
                           .arg(window->width())
                           .arg(window->height()));
}

} // namespace

class TestAppCheckpoints : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanup();
    void cleanupTestCase();
    void compareRunsKeepTheirNewestCheckpoint();
    void continueIsBitIdenticalToAStraightRun();
    void continueFromAFileAsksForTheEpochs();
    void checkpointThatCannotBeWrittenIsSaid();
    void offSettingWritesNone();
    void deletingARunDeletesItsCheckpoints();
    void runFoldersAreNotShared();
    void runWithoutCheckpointLeavesNoFolder();
    void crashedSessionsWeightsFoldersGo();
    void newActionsHaveTheirOwnKeys();

private:
    QTemporaryDir m_settingsDir, m_dir;
    DialogScript m_dialogs;

    // Starts the run panel's run (or compare) and waits for the job; the new runs' ids.
    std::vector<int> trainAndWait(MainWindow &w, bool compare = false)
    {
        const std::vector<int> before = w.store()->runIds();
        compare ? w.startCompare() : w.startRun();
        if (!waitIdle(w)) return {};
        return newRuns(w, before);
    }
    static bool waitIdle(MainWindow &w)
    {
        return QTest::qWaitFor([&] { return !w.controller()->isRunning(); }, k_runTimeoutMs);
    }
    static std::vector<int> newRuns(const MainWindow &w, const std::vector<int> &before)
    {
        std::vector<int> out;
        for (int id : w.store()->runIds())
            if (std::find(before.begin(), before.end(), id) == before.end()) out.push_back(id);
        return out;
    }
};

void TestAppCheckpoints::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    QVERIFY(m_dir.isValid());
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestAppCheckpoints::init()
{
    QSettings(QStringLiteral("MixLab"), QStringLiteral("mixlab")).clear();
    checkpointfolders::setRootFolderForTesting(m_dir.filePath(QStringLiteral("checkpoints")));
    m_dialogs.install();
}

void TestAppCheckpoints::cleanup() { ContinueDialog::setAnswererForTesting({}); }

void TestAppCheckpoints::cleanupTestCase()
{
    DialogScript::uninstall();
    checkpointfolders::setRootFolderForTesting({});
}

// Two epochs of a two-run compare group with "keep the last 1": each run has a folder of
// its own under the experiment's, holding exactly one checkpoint, the second epoch's
// (256 samples, batch 32: step 16), which the core reads as that run's. The log says
// where they are; Show checkpoints says it too.
void TestAppCheckpoints::compareRunsKeepTheirNewestCheckpoint()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(1600, 1000);
    action(w, "checkpointKeep1")->trigger();
    QCOMPARE(checkpointfolders::keepSetting(), 1);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(2));
    w.runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedFP16});
    const std::vector<int> ids = trainAndWait(w, true);
    QCOMPARE(ids.size(), std::size_t(2));
    QString folders[2];
    for (int i = 0; i < 2; ++i) {
        const RunRecord *r = w.store()->run(ids[std::size_t(i)]);
        QCOMPARE(r->status, RunRecord::Status::Finished);
        QVERIFY2(r->checkpointFolder.startsWith(checkpointfolders::experimentFolder({})),
                 qPrintable(r->checkpointFolder));
        const std::vector<mixlab::CheckpointFile> files = checkpointsOf(*r);
        QCOMPARE(files.size(), std::size_t(1));
        QCOMPARE(files.front().step, std::int64_t(16));
        QCOMPARE(files.front().epoch, std::int64_t(2));
        const mixlab::CheckpointHeader h = mixlab::read_checkpoint_header(files.front().path);
        QCOMPARE(h.config.policy, r->config.policy);
        QVERIFY(r->checkpointFailure.isEmpty());
        folders[i] = r->checkpointFolder;
        QVERIFY2(w.logView()->plainText().contains(
                     QStringLiteral("Checkpoints of %1: 1 checkpoint").arg(r->name)),
                 qPrintable(w.logView()->plainText()));
    }
    QVERIFY(folders[0] != folders[1]);
    // The folders outlive the session, and the experiment file keeps where they are.
    const QString saved = m_dir.filePath(QStringLiteral("compare.mixlab.json"));
    QString error;
    QVERIFY2(w.saveExperimentAs(saved, &error), qPrintable(error));
    {
        MainWindow reopened;
        reopened.setConfirmCloseForTesting(false);
        QVERIFY2(reopened.openExperiment(saved, &error), qPrintable(error));
        const std::vector<int> again = reopened.store()->runIds();
        QCOMPARE(again.size(), std::size_t(2));
        for (int i = 0; i < 2; ++i)
            QCOMPARE(reopened.store()->run(again[std::size_t(i)])->checkpointFolder, folders[i]);
    }

    // Show checkpoints: the folder, the count and the newest's epoch, offering to open it.
    m_dialogs.answers = {1}; // Close
    emit w.runsTable()->showCheckpointsRequested(ids[0]);
    QCOMPARE(int(m_dialogs.messages.size()), 1);
    const QString text = m_dialogs.messages.front().text;
    QVERIFY2(text.contains(folders[0]) &&
                 text.contains(QLatin1String("newest at step 16 (2 epochs done)")),
             qPrintable(text));
    QCOMPARE(m_dialogs.messages.front().choices.front(), QStringLiteral("Open folder"));

    // The runs table's menu: Continue and Show for the one selected run.
    w.show();
    w.runsTable()->selectRow(0);
    bool offered = false;
    QTimer::singleShot(200, this, [&] {
        if (auto *menu = qobject_cast<QMenu *>(QApplication::activePopupWidget())) {
            offered = action(*menu, "continueRunAction")->isEnabled() &&
                      action(*menu, "showCheckpointsAction")->isEnabled();
            shoot(*menu, QStringLiteral("runs-table-menu-in"), &w);
            menu->close();
        }
    });
    emit w.runsTable()->customContextMenuRequested(
        w.runsTable()->visualRect(w.runsTable()->model()->index(0, 0)).center());
    QVERIFY(offered);
    // The Run menu with the checkpoint setting open.
    auto *menu = w.findChild<QMenu *>("checkpointMenu");
    QVERIFY(menu);
    menu->adjustSize();
    shoot(*menu, QStringLiteral("run-checkpoint-menu"));
    for (QMenu *m : w.menuBar()->findChildren<QMenu *>())
        if (m->title() == QLatin1String("&Run")) {
            m->adjustSize();
            shoot(*m, QStringLiteral("run-menu"));
        }
}

// Two epochs, then Continue training (the runs table's entry) to four: the continued run's
// weights file is byte for byte that of a straight four-epoch run, and its last two
// epochs' metrics and steps equal the straight run's; it is named for the run it
// continues and the epoch, its log (and exported log) says it resumed from the file at
// step 16, and the designer keeps its unsaved model.
void TestAppCheckpoints::continueIsBitIdenticalToAStraightRun()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(1600, 1000);
    w.show();
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(4));
    const std::vector<int> straight = trainAndWait(w);
    QCOMPARE(straight.size(), std::size_t(1));
    w.runPanel()->setConfig(quickCpuConfig(2));
    const std::vector<int> first = trainAndWait(w);
    QCOMPARE(first.size(), std::size_t(1));
    const RunRecord *source = w.store()->run(first.front());
    QCOMPARE(checkpointsOf(*source).size(), std::size_t(1));
    const QString checkpoint = checkpointfolders::newest(source->checkpointFolder);

    // An unsaved edit of the design: continuing must leave it alone.
    mixlab::ModelSpec edited = tinyGuiModel();
    edited.layers[1].units = 24;
    w.designer()->setSpec(edited);
    QVERIFY(w.isModified());

    int offered = 0;
    ContinueDialog::setAnswererForTesting([&](ContinueDialog &d) {
        offered = d.totalEpochs();
        d.resize(d.sizeHint());
        shoot(d, QStringLiteral("continue-dialog"));
        d.setTotalEpochs(4);
        return d.totalEpochs();
    });
    const std::vector<int> before = w.store()->runIds();
    emit w.runsTable()->continueTrainingRequested(first.front());
    QVERIFY(w.controller()->isRunning());
    QVERIFY(waitIdle(w));
    QCOMPARE(offered, 4); // a finished 2-epoch run: as many again
    const std::vector<int> added = newRuns(w, before);
    QCOMPARE(added.size(), std::size_t(1));
    const RunRecord *cont = w.store()->run(added.front());
    const RunRecord *ref = w.store()->run(straight.front());
    QCOMPARE(cont->status, RunRecord::Status::Finished);
    QVERIFY2(cont->name.contains(source->name) &&
                 cont->name.contains(QLatin1String("continued after epoch 2")),
             qPrintable(cont->name));
    QVERIFY(w.designer()->spec() == edited);
    QVERIFY(w.isModified());

    // Bit for bit: the weights, the last epochs, the steps after the checkpoint.
    QVERIFY(!cont->weightsPath.isEmpty() && !ref->weightsPath.isEmpty());
    QCOMPARE(readAll(cont->weightsPath), readAll(ref->weightsPath));
    QCOMPARE(cont->epochs.size(), std::size_t(2));
    for (std::size_t e = 0; e < 2; ++e) {
        const mixlab::EpochMetrics &a = cont->epochs[e], &b = ref->epochs[e + 2];
        QCOMPARE(a.epoch, b.epoch);
        QCOMPARE(a.train_loss, b.train_loss);
        QCOMPARE(a.test_loss, b.test_loss);
        QCOMPARE(a.test_accuracy, b.test_accuracy);
    }
    QCOMPARE(cont->steps.size(), std::size_t(16));
    for (std::size_t s = 0; s < 16; ++s) {
        QCOMPARE(cont->steps[s].step, ref->steps[s + 16].step);
        QCOMPARE(cont->steps[s].loss, ref->steps[s + 16].loss);
    }

    // The log and the exported log say where it came from.
    const QString resumed =
        QStringLiteral("resumed from checkpoint '%1' at step 16").arg(checkpoint);
    bool logged = false;
    for (const TimedEvent &e : cont->events)
        logged = logged || QString::fromStdString(e.event.message).contains(resumed);
    QVERIFY(logged);
    const QString exported = m_dir.filePath(QStringLiteral("continued-log.json"));
    QString error;
    QVERIFY2(exportLogs(*w.store(), {cont->id}, exported, &error), qPrintable(error));
    QVERIFY(QString::fromUtf8(readAll(exported)).contains(resumed));
    w.runsTable()->selectRow(int(w.store()->runIds().size()) - 1);
    shoot(w, QStringLiteral("continued-run"));
    w.resize(1280, 800);
    QTest::qWait(50);
    shoot(w, QStringLiteral("continued-run"));
    // The continued run has checkpoints of its own (epoch 4): it can be continued again.
    QVERIFY(!checkpointfolders::newest(cont->checkpointFolder).isEmpty());
    QVERIFY(cont->checkpointFolder != source->checkpointFolder);
    bool continuable = false;
    QTimer::singleShot(200, this, [&] {
        if (auto *menu = qobject_cast<QMenu *>(QApplication::activePopupWidget())) {
            continuable = action(*menu, "continueRunAction")->isEnabled();
            shoot(*menu, QStringLiteral("runs-table-menu-in"), &w);
            menu->close();
        }
    });
    const int row = int(w.store()->runIds().size()) - 1;
    emit w.runsTable()->customContextMenuRequested(
        w.runsTable()->visualRect(w.runsTable()->model()->index(row, 0)).center());
    QVERIFY(continuable);
}

// Run > Continue training from checkpoint...: the file dialog, then the epochs (a total
// not beyond the checkpoint is refused by name, nothing started).
void TestAppCheckpoints::continueFromAFileAsksForTheEpochs()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    const std::vector<int> first = trainAndWait(w);
    QCOMPARE(first.size(), std::size_t(1));
    const QString checkpoint =
        checkpointfolders::newest(w.store()->run(first.front())->checkpointFolder);
    QVERIFY(!checkpoint.isEmpty());

    QString error;
    QVERIFY(!w.continueTraining(checkpoint, 1, &error));
    QVERIFY2(error.contains(QLatin1String("after epoch 1")), qPrintable(error));
    QVERIFY(!w.controller()->isRunning());

    ContinueDialog::setAnswererForTesting([](ContinueDialog &d) {
        d.setTotalEpochs(2);
        return d.totalEpochs();
    });
    m_dialogs.fileAnswers = {checkpoint};
    const std::vector<int> before = w.store()->runIds();
    action(w, "continueTrainingAction")->trigger();
    QVERIFY(waitIdle(w));
    const std::vector<int> added = newRuns(w, before);
    QCOMPARE(added.size(), std::size_t(1));
    const RunRecord *r = w.store()->run(added.front());
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(8));
    QVERIFY2(r->name.contains(QFileInfo(checkpoint).fileName()), qPrintable(r->name));
    QVERIFY(m_dialogs.messages.empty());

    // The dialog's header is the one the continue uses (the file is read once before the
    // run): a file gone while the question is open is not read again to refuse; the run
    // starts from what was read and its setup, which reads the whole file, names it.
    const QString gone = checkpoint + QStringLiteral(".moved");
    ContinueDialog::setAnswererForTesting([&](ContinueDialog &d) {
        QFile::rename(checkpoint, gone);
        d.setTotalEpochs(2);
        return d.totalEpochs();
    });
    m_dialogs.fileAnswers = {checkpoint};
    const std::vector<int> beforeGone = w.store()->runIds();
    action(w, "continueTrainingAction")->trigger();
    QVERIFY(waitIdle(w));
    QVERIFY(QFile::exists(gone) && !QFile::exists(checkpoint));
    const std::vector<int> failed = newRuns(w, beforeGone);
    QCOMPARE(failed.size(), std::size_t(1));
    const RunRecord *f = w.store()->run(failed.front());
    QCOMPARE(f->status, RunRecord::Status::Failed);
    QVERIFY2(f->failure.contains(checkpoint), qPrintable(f->failure));
    for (const UserMessage &m : m_dialogs.messages)
        QVERIFY2(!m.text.contains(QLatin1String("Could not continue training")),
                 qPrintable(m.text));
}

// A checkpoint folder that cannot be made: the run trains to its end without checkpoints,
// its log warns as it starts, naming the folder and why, and the job's end says so in the
// log and the status bar.
void TestAppCheckpoints::checkpointThatCannotBeWrittenIsSaid()
{
    const QString blocker = m_dir.filePath(QStringLiteral("a-file"));
    {
        QFile f(blocker);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a folder");
    }
    checkpointfolders::setRootFolderForTesting(blocker);
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(2));
    const std::vector<int> ids = trainAndWait(w);
    QCOMPARE(ids.size(), std::size_t(1));
    const RunRecord *r = w.store()->run(ids.front());
    QCOMPARE(r->status, RunRecord::Status::Finished);
    QCOMPARE(r->steps.size(), std::size_t(16));
    QVERIFY2(r->checkpointFailure.contains(blocker), qPrintable(r->checkpointFailure));
    QVERIFY(r->checkpointFolder.isEmpty());
    bool warned = false;
    for (const TimedEvent &e : r->events)
        warned =
            warned ||
            (e.event.kind == mixlab::RunEvent::Kind::Warning && e.event.step == 0 &&
             QString::fromStdString(e.event.message)
                 .contains(QStringLiteral("cannot make the checkpoint folder '%1").arg(blocker)));
    QVERIFY(warned);
    QVERIFY2(w.logView()->plainText().contains(QLatin1String("could not be written (the run "
                                                             "went on)")),
             qPrintable(w.logView()->plainText()));
}

void TestAppCheckpoints::offSettingWritesNone()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    action(w, "checkpointKeep0")->trigger();
    QCOMPARE(checkpointfolders::keepSetting(), 0);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    const std::vector<int> ids = trainAndWait(w);
    QCOMPARE(ids.size(), std::size_t(1));
    QVERIFY(w.store()->run(ids.front())->checkpointFolder.isEmpty());
}

// Delete run on a run with checkpoints: the question names the run, their count, size and
// folder; Cancel keeps all; Delete removes the run and the checkpoints, leaving a file it
// did not write (and so its folder); a folder left empty goes. Without checkpoints, no
// question.
void TestAppCheckpoints::deletingARunDeletesItsCheckpoints()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    action(w, "checkpointKeep2")->trigger();
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(2));
    w.runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedFP16});
    const std::vector<int> ids = trainAndWait(w, true);
    QCOMPARE(ids.size(), std::size_t(2));
    const RunRecord *a = w.store()->run(ids[0]);
    const QString folderA = a->checkpointFolder, folderB = w.store()->run(ids[1])->checkpointFolder;
    const std::vector<mixlab::CheckpointFile> files = checkpointsOf(*a);
    QCOMPARE(files.size(), std::size_t(2));
    qint64 bytes = 0;
    for (const mixlab::CheckpointFile &f : files) bytes += f.bytes;
    const QString notes = folderA + QStringLiteral("/notes.txt");
    {
        QFile f(notes);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("the user's own file");
    }

    m_dialogs.messages.clear();
    m_dialogs.answers = {1}; // Cancel
    w.runsTable()->deleteRuns({ids[0]});
    QCOMPARE(int(m_dialogs.messages.size()), 1);
    const UserMessage &asked = m_dialogs.messages.front();
    QCOMPARE(asked.kind, UserMessage::Kind::Question);
    for (const QString &part :
         {a->name, QStringLiteral("2 checkpoints"), QLocale().formattedDataSize(bytes, 0), folderA})
        QVERIFY2(asked.text.contains(part), qPrintable(asked.text + "\n  expected: " + part));
    QVERIFY(w.store()->run(ids[0]));
    QCOMPARE(checkpointsOf(*w.store()->run(ids[0])).size(), std::size_t(2));

    m_dialogs.answers = {0}; // Delete
    w.runsTable()->deleteRuns({ids[0]});
    QVERIFY(!w.store()->run(ids[0]));
    QVERIFY(mixlab::list_checkpoints(QFile::encodeName(folderA).toStdString()).empty());
    QVERIFY(QFile::exists(notes));
    m_dialogs.answers = {0};
    w.runsTable()->deleteRuns({ids[1]});
    QVERIFY(!w.store()->run(ids[1]));
    QVERIFY(!QFileInfo::exists(folderB));
    QCOMPARE(int(m_dialogs.messages.size()), 3); // one question each, no error

    // A run without checkpoints goes unasked.
    action(w, "checkpointKeep0")->trigger();
    const std::vector<int> plain = trainAndWait(w);
    QCOMPARE(plain.size(), std::size_t(1));
    w.runsTable()->deleteRuns(plain);
    QVERIFY(!w.store()->run(plain.front()));
    QCOMPARE(int(m_dialogs.messages.size()), 3);
}

// A run numbered as a run of another session, window or process in the same second gets a
// folder of its own, made as it is chosen (not at the first checkpoint): the other one's
// checkpoints are not offered, nor deleted, as its. Three claims of run 1's name in a row
// (one second, unless the clock turns between them): three folders, each there at once,
// the later ones the first's with "-2" and "-3".
void TestAppCheckpoints::runFoldersAreNotShared()
{
    QTemporaryDir root; // none of the suite's other runs' folders in it
    QVERIFY(root.isValid());
    checkpointfolders::setRootFolderForTesting(root.path());
    const QString experiment = checkpointfolders::experimentFolder({});
    QStringList made;
    for (int i = 0; i < 3; ++i) {
        QString error;
        const QString folder =
            checkpointfolders::runFolder(experiment, 1, mixlab::Policy::FP32, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY2(!made.contains(folder) && QFileInfo(folder).isDir(), qPrintable(folder));
        made << folder;
    }
    if (QFileInfo(made[0]).fileName().left(15) == QFileInfo(made[2]).fileName().left(15)) {
        QCOMPARE(made[1], made[0] + QStringLiteral("-2"));
        QCOMPARE(made[2], made[0] + QStringLiteral("-3"));
    }
    for (const QString &folder : made) QVERIFY(checkpointfolders::release(folder));
}

// A run's folder is there from the job's start; a run that ends without writing a
// checkpoint into it (here: its start weights file is missing, so it fails in setup; a
// stop before the first step ends the same way) leaves no empty folder behind (nor an
// empty experiment folder) and names none (a later run may claim the name); one holding a
// file the run did not write stays, named; one that wrote a checkpoint keeps it.
void TestAppCheckpoints::runWithoutCheckpointLeavesNoFolder()
{
    QTemporaryDir root; // the suite's other runs' folders are not in the count
    QVERIFY(root.isValid());
    checkpointfolders::setRootFolderForTesting(root.path());
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.designer()->setSpec(tinyGuiModel());
    w.runPanel()->setConfig(quickCpuConfig(1));
    const QDir experiment(checkpointfolders::experimentFolder({}));
    const QString missing = m_dir.filePath(QStringLiteral("no-such-weights.safetensors"));
    // The new run's id and the folder it had as the job started (empty: none there). The
    // job cannot end before this returns: its end is handled on this thread.
    const auto startFailing = [&](const QString &extraFile) {
        const std::vector<int> before = w.store()->runIds();
        w.runPanel()->setStartWeights(missing);
        w.startRun();
        const std::vector<int> ids = newRuns(w, before);
        if (ids.size() != 1) return std::pair<int, QString>{0, QString()};
        const QString folder = w.store()->run(ids.front())->checkpointFolder;
        const bool there = QFileInfo(folder).isDir();
        if (there && !extraFile.isEmpty()) {
            QFile f(folder + QLatin1Char('/') + extraFile);
            if (f.open(QIODevice::WriteOnly)) f.write("the user's own file");
        }
        if (!waitIdle(w)) return std::pair<int, QString>{0, QString()};
        return std::pair<int, QString>{ids.front(), there ? folder : QString()};
    };
    const auto entries = [&] {
        return experiment.entryList(QDir::AllEntries | QDir::NoDotAndDotDot);
    };

    const auto [failed, claimed] = startFailing({});
    QVERIFY(failed != 0);
    QVERIFY2(!claimed.isEmpty(), "the run's folder was not there as the job started");
    const RunRecord *r = w.store()->run(failed);
    QCOMPARE(r->status, RunRecord::Status::Failed);
    QVERIFY2(r->failure.contains(missing), qPrintable(r->failure));
    QVERIFY2(!QFileInfo::exists(claimed), qPrintable(claimed));
    QVERIFY(r->checkpointFolder.isEmpty());
    QVERIFY(r->checkpointFailure.isEmpty());
    // Nor the experiment's folder, which the claim made.
    QVERIFY2(!QFileInfo::exists(experiment.path()), qPrintable(entries().join(' ')));
    QVERIFY(QFileInfo(root.path()).isDir());

    const auto [kept, keptFolder] = startFailing(QStringLiteral("notes.txt"));
    QVERIFY(kept != 0 && !keptFolder.isEmpty());
    QVERIFY(QFileInfo::exists(keptFolder + QStringLiteral("/notes.txt")));
    QCOMPARE(w.store()->run(kept)->checkpointFolder, keptFolder);
    QCOMPARE(entries(), QStringList{QFileInfo(keptFolder).fileName()});

    const std::vector<int> trained = trainAndWait(w);
    QCOMPARE(trained.size(), std::size_t(1));
    const RunRecord *t = w.store()->run(trained.front());
    QCOMPARE(t->status, RunRecord::Status::Finished);
    QVERIFY(QFileInfo(t->checkpointFolder).isDir());
    QCOMPARE(checkpointsOf(*t).size(), std::size_t(1));
    QVERIFY(t->checkpointFolder != keptFolder);
    QCOMPARE(entries().size(), qsizetype(2));
}

// A folder named for a process that is gone goes; one of this process, of a live one
// (pid 1) or named otherwise stays.
void TestAppCheckpoints::crashedSessionsWeightsFoldersGo()
{
    QTemporaryDir base;
    QVERIFY(base.isValid());
    const QString own = QStringLiteral("session-%1-abcdef").arg(QCoreApplication::applicationPid());
    const QStringList folders = {QStringLiteral("session-999999999-dead01"), own,
                                 QStringLiteral("session-1-init01"),
                                 QStringLiteral("session-Xy12ab")};
    for (const QString &f : folders) {
        QVERIFY(QDir(base.path()).mkpath(f));
        QFile file(base.path() + QLatin1Char('/') + f + QStringLiteral("/run-1.safetensors"));
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    QCOMPARE(WeightsFolder::removeAbandoned(base.path()), 1);
    QVERIFY(!QDir(base.path() + QStringLiteral("/session-999999999-dead01")).exists());
    for (const QString &f : folders.mid(1))
        QVERIFY2(QDir(base.path() + '/' + f).exists(), qPrintable(f));
}

// Import model, Save weights, Start from weights and Continue training each have a key
// that no other action of the window has, and the shortcuts list shows it.
void TestAppCheckpoints::newActionsHaveTheirOwnKeys()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    const QList<ShortcutsDialog::Group> groups = ShortcutsDialog::collect(&w, {});
    ShortcutsDialog dialog(groups);
    const QStringList entries = dialog.entries();
    for (const char *name : {"importModelAction", "saveWeightsAction", "startWeightsAction",
                             "continueTrainingAction"}) {
        const QKeySequence key = action(w, name)->shortcut();
        QVERIFY2(!key.isEmpty(), name);
        for (QAction *other : w.findChildren<QAction *>())
            if (other != action(w, name))
                for (const QKeySequence &k : other->shortcuts())
                    QVERIFY2(k != key, qPrintable(QStringLiteral("%1 and %2 share %3")
                                                      .arg(QLatin1String(name), other->text(),
                                                           key.toString())));
        const QString shown = key.toString(QKeySequence::NativeText);
        QVERIFY2(std::any_of(entries.begin(), entries.end(),
                             [&](const QString &e) { return e.contains(shown); }),
                 qPrintable(entries.join('\n')));
    }
    dialog.resize(dialog.sizeHint());
    shoot(dialog, QStringLiteral("shortcuts"));
}

QTEST_MAIN(TestAppCheckpoints)
#include "tst_app_checkpoints.moc"
