// Autosave and crash recovery: the session's file written and kept up to date, removed
// by a clean close, offered (and recovered with its runs) after a crash, left alone while
// its session lives, reported and moved aside when it cannot be read; and closing the
// window mid-compare stopping the worker with the autosave and logs consistent.
#include "files/autosave.h"
#include "files/experiment.h"
#include "files/logexport.h"
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"
#include "common/usermessages.h"

#include "mixlab/model_spec.h"

#include "gui_fixtures.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLockFile>
#include <QRandomGenerator>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <cerrno>

namespace {

// Loads an experiment file into a fresh store; the run count, or -1 with the reason.
int runsIn(const QString &path, QString *error = nullptr, RunStore *into = nullptr)
{
    RunStore local;
    RunStore *store = into ? into : &local;
    ExperimentFile file;
    QString e;
    if (!loadExperiment(path, &file, store, &e)) {
        if (error) *error = e;
        return -1;
    }
    return int(store->runIds().size());
}

// A pid no process has now: what a killed session's lock holds.
qint64 deadPid()
{
    for (qint64 pid = 32000; pid > 1000; --pid)
        if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH &&
            !QFile::exists(QString("/proc/%1").arg(pid)))
            return pid;
    return -1;
}

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

} // namespace

class TestAutosave : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_settingsDir;
    std::vector<UserMessage> m_messages;
    int m_answer = -1; // what the recorder answers a question
    QRandomGenerator m_rng{20260713};

    // An experiment file with `runs` finished runs of random metrics, as a crashed
    // session's autosave would be.
    void writeExperiment(const QString &path, int runs)
    {
        RunStore store;
        const mixlab::RunConfig config = quickCpuConfig(1);
        const QString modelJson =
            QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel()));
        for (int r = 0; r < runs; ++r) {
            const int id = store.addRun(config, modelJson, store.newGroup());
            std::vector<mixlab::StepMetrics> steps(12);
            for (int i = 0; i < 12; ++i) {
                steps[i].step = i + 1;
                steps[i].epoch = 1;
                steps[i].loss = float(1.0 + m_rng.generateDouble());
                steps[i].accuracy = float(m_rng.generateDouble());
                steps[i].step_ms = float(0.5 + m_rng.generateDouble());
            }
            store.appendSteps(id, steps);
            store.setStatus(id, RunRecord::Status::Stopped);
        }
        ExperimentFile file;
        file.model = tinyGuiModel();
        file.config = config;
        QString error;
        QVERIFY2(saveExperiment(path, file, store, &error), qPrintable(error));
    }

    // A lock file as QLockFile writes it, but naming a process that is gone.
    void writeStaleLock(const QString &lockPath)
    {
        QByteArray content;
        {
            QLockFile real(lockPath);
            QVERIFY(real.tryLock(0));
            QFile f(lockPath);
            QVERIFY(f.open(QIODevice::ReadOnly));
            content = f.readAll();
        } // unlocked and removed here
        const qint64 pid = deadPid();
        QVERIFY(pid > 0);
        QList<QByteArray> lines = content.split('\n');
        QCOMPARE(lines.front(), QByteArray::number(QCoreApplication::applicationPid()));
        lines.front() = QByteArray::number(pid);
        QFile f(lockPath);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(lines.join('\n'));
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_settingsDir.isValid());
        enterAppTestMode();
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
        setUserMessageRecorder([this](const UserMessage &m) {
            m_messages.push_back(m);
            return m.kind == UserMessage::Kind::Question ? m_answer : -1;
        });
    }

    void cleanupTestCase() { setUserMessageRecorder({}); }

    void init()
    {
        m_messages.clear();
        m_answer = -1;
    }

    void writtenAndUpdated()
    {
        QTemporaryDir dir;
        MainWindow w;
        w.setConfirmCloseForTesting(false);
        QString error;
        QVERIFY2(w.startAutosave(dir.path(), &error), qPrintable(error));
        const QString file = w.autosave()->filePath();
        QVERIFY(file.startsWith(dir.path()));
        QVERIFY(QFile::exists(file + ".lock"));
        QCOMPARE(w.autosave()->interval(), Autosave::k_defaultIntervalMs);
        w.autosave()->setInterval(50);
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(file), 5000);
        QCOMPARE(runsIn(file, &error), 0);
        QVERIFY(!w.autosave()->isChanged());

        // A run recorded: the next tick writes it, with its metrics.
        const int id = w.store()->addRun(
            quickCpuConfig(1), QString::fromStdString(mixlab::model_spec_to_json(tinyGuiModel())),
            w.store()->newGroup());
        std::vector<mixlab::StepMetrics> steps(5);
        for (int i = 0; i < 5; ++i) {
            steps[i].step = i + 1;
            steps[i].epoch = 1;
            steps[i].loss = float(2 + m_rng.generateDouble());
        }
        w.store()->appendSteps(id, steps);
        QTRY_COMPARE_WITH_TIMEOUT(runsIn(file), 1, 5000);
        RunStore back;
        QCOMPARE(runsIn(file, &error, &back), 1);
        QCOMPARE(back.run(back.runIds().front())->steps.size(), std::size_t(5));
        QCOMPARE(back.run(back.runIds().front())->steps[3].loss, steps[3].loss);

        // Unchanged: no rewrite.
        QTRY_VERIFY(!w.autosave()->isChanged());
        const QDateTime written = QFileInfo(file).lastModified();
        QTest::qWait(300);
        QCOMPARE(QFileInfo(file).lastModified(), written);

        // A model edit is a change too.
        w.designer()->setSpec(
            mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "edited",
            "layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]})"));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(file).lastModified() != written, 5000);
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().contains("\"edited\""));

        // Clean close (the edited model unsaved, without the question to save): file and
        // lock gone.
        w.setConfirmCloseForTesting(false);
        QVERIFY(w.close());
        QVERIFY(!QFile::exists(file));
        QVERIFY(!QFile::exists(file + ".lock"));
        QVERIFY(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).isEmpty());
    }

    // The 60 s timer does not wait for an epoch's end: that saves at once.
    void epochEndSavesAtOnce()
    {
        QTemporaryDir dir;
        MainWindow w;
        QString error;
        QVERIFY2(w.startAutosave(dir.path(), &error), qPrintable(error));
        const QString file = w.autosave()->filePath();
        QVERIFY(!QFile::exists(file));
        const int id = w.store()->addRun(quickCpuConfig(1), QString(), w.store()->newGroup());
        w.store()->setStatus(id, RunRecord::Status::Running);
        mixlab::EpochMetrics e;
        e.epoch = 1;
        e.train_loss = float(1 + m_rng.generateDouble());
        w.store()->appendEpochs(id, {e});
        QVERIFY(QFile::exists(file)); // synchronously, not on the next tick
        RunStore back;
        QCOMPARE(runsIn(file, &error, &back), 1);
        QCOMPARE(back.run(back.runIds().front())->epochs.size(), std::size_t(1));
    }

    void destroyedWindowRemovesIt()
    {
        QTemporaryDir dir;
        QString file;
        {
            MainWindow w;
            QString error;
            QVERIFY2(w.startAutosave(dir.path(), &error), qPrintable(error));
            QVERIFY(w.autosave()->saveNow(&error));
            file = w.autosave()->filePath();
            QVERIFY(QFile::exists(file));
        }
        QVERIFY(!QFile::exists(file));
        QVERIFY(!QFile::exists(file + ".lock"));
    }

    void staleAutosaveOfferedAndRecovered()
    {
        QTemporaryDir dir;
        const QString orphan = dir.filePath("session-crashed.mixlab");
        writeExperiment(orphan, 2);
        writeStaleLock(orphan + ".lock");
        QCOMPARE(int(Autosave::findOrphans(dir.path()).size()), 1);

        MainWindow w;
        w.setConfirmCloseForTesting(false);
        QString error;
        QVERIFY2(w.startAutosave(dir.path(), &error), qPrintable(error));
        m_answer = 0; // Recover
        QVERIFY(w.offerRecovery(dir.path()));
        QCOMPARE(int(m_messages.size()), 1);
        const UserMessage &q = m_messages.front();
        QCOMPARE(q.kind, UserMessage::Kind::Question);
        QVERIFY2(q.text.contains(
                     "Recover the experiment MixLab was working on when it stopped unexpectedly ("),
                 qPrintable(q.text));
        QVERIFY2(q.text.contains("2 run"), qPrintable(q.text));
        QCOMPARE(q.choices, QStringList({"Recover", "Discard"}));

        // The runs are back with their metrics; the orphan is gone, saved in our own file.
        QCOMPARE(w.store()->runIds().size(), std::size_t(2));
        for (int id : w.store()->runIds())
            QCOMPARE(w.store()->run(id)->steps.size(), std::size_t(12));
        QCOMPARE(w.designer()->spec().name, std::string("tiny"));
        QVERIFY(w.currentFile().isEmpty());
        QVERIFY(!QFile::exists(orphan));
        QVERIFY(!QFile::exists(orphan + ".lock"));
        QCOMPARE(runsIn(w.autosave()->filePath(), &error), 2);
        // Our own, live autosave is not an orphan.
        QVERIFY(Autosave::findOrphans(dir.path()).empty());
        // Recovered, not saved to a file of the user's: Quit would offer to save it.
        QVERIFY(w.isWindowModified());
        w.setConfirmCloseForTesting(false);
        QVERIFY(w.close());
    }

    void staleAutosaveDiscarded()
    {
        QTemporaryDir dir;
        const QString orphan = dir.filePath("session-crashed.mixlab");
        writeExperiment(orphan, 1);
        // No lock at all (removed by hand, or a session that died before writing it):
        // nobody holds it, so it is an orphan too.
        MainWindow w;
        m_answer = 1; // Discard
        QVERIFY(!w.offerRecovery(dir.path()));
        QCOMPARE(int(m_messages.size()), 1);
        QVERIFY(w.store()->runIds().empty());
        QVERIFY(!QFile::exists(orphan));
    }

    // Another MixLab, running now, holds its lock: its file is neither offered nor touched.
    void liveLockLeftAlone()
    {
        QTemporaryDir dir;
        const QString other = dir.filePath("session-other.mixlab");
        writeExperiment(other, 1);
        QLockFile live(other + ".lock");
        QVERIFY(live.tryLock(0));
        QFile f(other);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray before = f.readAll();
        f.close();

        QVERIFY(Autosave::findOrphans(dir.path()).empty());
        MainWindow w;
        m_answer = 0;
        QVERIFY(!w.offerRecovery(dir.path()));
        QVERIFY(m_messages.empty());
        QVERIFY(w.store()->runIds().empty());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), before);
        QVERIFY(live.isLocked());
        QVERIFY(QFile::exists(other + ".lock"));
    }

    void corruptAutosaveReportedAndMovedAside()
    {
        QTemporaryDir dir;
        const QString orphan = dir.filePath("session-crashed.mixlab");
        writeExperiment(orphan, 1);
        {
            // Cut mid-write, as a full disk without QSaveFile would leave it.
            QFile f(orphan);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.resize(f.size() / 2));
        }
        writeStaleLock(orphan + ".lock");
        MainWindow w;
        m_answer = 0;
        QVERIFY(!w.offerRecovery(dir.path()));
        QCOMPARE(int(m_messages.size()), 1);
        const UserMessage &m = m_messages.front();
        QCOMPARE(m.kind, UserMessage::Kind::Error);
        QVERIFY2(m.text.contains("could not be read") && m.text.contains("malformed JSON") &&
                     m.text.contains(".corrupt-"),
                 qPrintable(m.text));
        QVERIFY(!QFile::exists(orphan));
        const QStringList aside =
            QDir(dir.path()).entryList({"session-crashed.mixlab.corrupt-*"}, QDir::Files);
        QCOMPARE(aside.size(), 1);
        QVERIFY(Autosave::findOrphans(dir.path()).empty()); // not offered again
        QVERIFY(w.store()->runIds().empty());
    }

    // Closing the window mid-compare: the worker stops (bounded), nothing hangs, the
    // autosave held every finished epoch until the clean close removed it, and the runs
    // left in the store export as a consistent log.
    void closeMidCompare()
    {
        QTemporaryDir dir;
        auto w = std::make_unique<MainWindow>();
        w->show();
        w->setConfirmCloseForTesting(false);
        QString error;
        QVERIFY2(w->startAutosave(dir.path(), &error), qPrintable(error));
        w->designer()->setSpec(tinyGuiModel());
        mixlab::RunConfig config = quickCpuConfig(10000);
        w->runPanel()->setConfig(config);
        w->runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedBF16});
        QTRY_VERIFY_WITH_TIMEOUT(!w->runPanel()->isStartBlocked(), 10000);
        w->startCompare();
        QVERIFY(w->controller()->isRunning());
        QCOMPARE(w->store()->runIds().size(), std::size_t(2));
        const int first = w->store()->runIds().front();
        // Two epochs of the first run: each one's end wrote the autosave.
        QTRY_VERIFY_WITH_TIMEOUT(w->store()->run(first)->epochs.size() >= 2, 60000);
        const QString file = w->autosave()->filePath();
        RunStore saved;
        QVERIFY2(runsIn(file, &error, &saved) == 2, qPrintable(error));
        QVERIFY(!saved.run(saved.runIds().front())->epochs.empty());

        QElapsedTimer closing;
        closing.start();
        QVERIFY(w->close());
        QVERIFY2(closing.elapsed() < 10000, qPrintable(QString::number(closing.elapsed())));
        QVERIFY(!w->controller()->isRunning());
        QTRY_COMPARE_WITH_TIMEOUT(trainingThreads(), 0, 2000);
        for (int id : w->store()->runIds()) {
            const RunRecord *r = w->store()->run(id);
            QVERIFY(r->status != RunRecord::Status::Running);
        }
        QVERIFY(!QFile::exists(file));
        QVERIFY(!QFile::exists(file + ".lock"));

        const QString log = dir.filePath("after-close.json");
        QVERIFY2(exportLogs(*w->store(), w->store()->runIds(), log, &error), qPrintable(error));
        QFile f(log);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
        QVERIFY(doc.isObject());
        QVERIFY(doc.object().contains("runs"));
        // Destroying the closed window must not hang either.
        QElapsedTimer destroying;
        destroying.start();
        w.reset();
        QVERIFY(destroying.elapsed() < 5000);
    }
};

QTEST_MAIN(TestAutosave)
#include "tst_autosave.moc"
