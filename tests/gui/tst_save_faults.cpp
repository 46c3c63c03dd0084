// Saving under faults, through the menus a user would use: Save As, Export logs, Export
// chart(s) and Export report into a read-only folder and onto a full disk (64 KiB tmpfs
// mounts: permissions mean nothing to root). The dialog must name the path and the
// reason, the file already at that path must stay as it was, and the app goes on. Also:
// an experiment saved while a run is going loads back, and the run is not disturbed.
#include "charts/chartpanel.h"
#include "files/experiment.h"
#include "runs/logview.h"
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"
#include "common/usermessages.h"

#include "mixlab/model_spec.h"

#include "gui_fixtures.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDialog>
#include <QFileDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <unistd.h>

namespace {

constexpr int k_runTimeoutMs = 60000;

QByteArray sha1(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly)
               ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha1)
               : QByteArray("unreadable");
}

bool runTool(const QString &program, const QStringList &args, QString *output)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, args);
    const bool ok =
        p.waitForFinished(10000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    if (output) *output = QString::fromLocal8Bit(p.readAll()).trimmed();
    return ok;
}

// Answers the modal dialogs of one menu action as a user would: the export settings
// dialog (picking `format`), the file dialog (typing `path`), and "replace it?" (yes).
class DialogAnswerer : public QObject {
public:
    DialogAnswerer(const QString &path, const QString &format) : m_path(path), m_format(format)
    {
        m_timer.setInterval(20);
        connect(&m_timer, &QTimer::timeout, this, &DialogAnswerer::poll);
        m_timer.start();
    }

private:
    void poll()
    {
        QWidget *modal = QApplication::activeModalWidget();
        if (!modal) return;
        if (auto *file = qobject_cast<QFileDialog *>(modal)) {
            // Typed into the name field: selectFile() works through the file system
            // model, which may still be loading the folder.
            if (auto *name = file->findChild<QLineEdit *>("fileNameEdit"))
                name->setText(m_path);
            else
                file->selectFile(m_path);
            // Queued: accept() may ask "replace it?" in a nested loop, which this timer
            // must stay free to answer.
            QTimer::singleShot(0, file, [file] {
                static_cast<QDialog *>(file)->accept();
            }); // protected in QFileDialog
        } else if (auto *box = qobject_cast<QMessageBox *>(modal)) {
            if (QAbstractButton *yes = box->button(QMessageBox::Yes)) yes->click();
        } else if (auto *dialog = qobject_cast<QDialog *>(modal)) {
            for (QComboBox *combo : dialog->findChildren<QComboBox *>()) {
                const int i = combo->findData(m_format);
                if (i >= 0) combo->setCurrentIndex(i);
            }
            QTimer::singleShot(0, dialog, [dialog] { dialog->accept(); });
        }
    }

    QString m_path, m_format;
    QTimer m_timer;
};

} // namespace

class TestSaveFaults : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QTemporaryDir m_settingsDir;
    QRandomGenerator m_rng{20260714};
    std::unique_ptr<MainWindow> m_window;
    std::vector<UserMessage> m_messages;
    QStringList m_mounts;

    void trigger(const QString &text)
    {
        for (QAction *a : m_window->findChildren<QAction *>())
            if (a->text().remove('&') == text) {
                QMetaObject::invokeMethod(a, &QAction::trigger, Qt::QueuedConnection);
                return;
            }
        QFAIL(qPrintable("no action " + text));
    }

    // A 64 KiB tmpfs at `dir`; false (with the reason) where mounting is not allowed.
    bool mountSmall(const QString &dir, QString *why)
    {
        QDir().mkpath(dir);
        if (::geteuid() != 0) {
            *why = "mounting a tmpfs needs root";
            return false;
        }
        if (!runTool("mount", {"-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", dir}, why))
            return false;
        m_mounts << dir;
        return true;
    }

    void unmountAll()
    {
        for (const QString &dir : std::as_const(m_mounts)) runTool("umount", {"-l", dir}, nullptr);
        m_mounts.clear();
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(m_settingsDir.isValid());
        enterAppTestMode();
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
        QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
        setUserMessageRecorder([this](const UserMessage &m) {
            m_messages.push_back(m);
            return -1;
        });

        // One real, finished CPU run: the charts and the report need one.
        m_window = std::make_unique<MainWindow>();
        m_window->setConfirmCloseForTesting(false);
        m_window->show();
        m_window->designer()->setSpec(tinyGuiModel());
        m_window->runPanel()->setConfig(quickCpuConfig(1));
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->runPanel()->isStartBlocked(), 10000);
        m_window->startRun();
        QVERIFY(m_window->controller()->isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->controller()->isRunning(), k_runTimeoutMs);
        const RunRecord *run = m_window->store()->run(m_window->store()->runIds().front());
        QCOMPARE(run->status, RunRecord::Status::Finished);
        QVERIFY(!run->steps.empty());
    }

    void cleanupTestCase()
    {
        m_window.reset();
        unmountAll();
        setUserMessageRecorder({});
    }

    void init() { m_messages.clear(); }
    void cleanup() { unmountAll(); }

    void faultGivesDialogAndKeepsFile_data()
    {
        QTest::addColumn<QString>("action");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("format"); // the chart export's format choice
        QTest::addColumn<bool>("full");      // full disk, else read-only

        const struct {
            const char *name, *action, *file, *format;
        } ops[] = {
            {"save experiment", "Save As...", "exp.mixlab.json", ""},
            {"export logs JSON", "Export logs...", "log.json", ""},
            {"export logs CSV", "Export logs...", "log.csv", ""},
            {"export chart PNG", "Export chart(s)...", "charts.png", "png"},
            {"export chart SVG", "Export chart(s)...", "charts.svg", "svg"},
            {"export chart PDF", "Export chart(s)...", "charts.pdf", "pdf"},
            {"export report HTML", "Export report...", "report.html", ""},
            {"export report PDF", "Export report...", "report.pdf", ""},
        };
        for (const auto &op : ops) {
            QTest::newRow(qPrintable(QString("%1, read-only folder").arg(op.name)))
                << op.action << op.file << op.format << false;
            QTest::newRow(qPrintable(QString("%1, full disk").arg(op.name)))
                << op.action << op.file << op.format << true;
        }
    }

    void faultGivesDialogAndKeepsFile()
    {
        QFETCH(QString, action);
        QFETCH(QString, file);
        QFETCH(QString, format);
        QFETCH(bool, full);

        const QString dir = m_dir.filePath(
            QString("mnt-%1").arg(QTest::currentDataTag()).replace(' ', '_').remove(','));
        QString why;
        if (!mountSmall(dir, &why)) QSKIP(qPrintable("cannot mount a small tmpfs here: " + why));
        // What the user saved there earlier: random bytes it must keep.
        const QString target = dir + "/" + file;
        {
            QFile prev(target);
            QVERIFY(prev.open(QIODevice::WriteOnly));
            prev.write(QByteArray(1024, 'x') + QByteArray::number(m_rng.generate64()));
        }
        const QByteArray before = sha1(target);
        QString reason;
        if (full) {
            QFile filler(dir + "/filler");
            QVERIFY(filler.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
            const QByteArray chunk(4096, 'f');
            for (int i = 0; i < 64 && filler.write(chunk) == chunk.size(); ++i) {}
            QVERIFY2(filler.error() == QFileDevice::WriteError ||
                         filler.error() == QFileDevice::ResourceError,
                     qPrintable(filler.errorString()));
            reason = "No space left on device";
        } else {
            QString out;
            QVERIFY2(runTool("mount", {"-o", "remount,ro", dir}, &out), qPrintable(out));
            reason = "Read-only file system";
        }
        const QStringList filesBefore = QDir(dir).entryList(QDir::Files | QDir::Hidden);

        {
            DialogAnswerer answer(target, format);
            trigger(action);
            (void)QTest::qWaitFor([this] { return !m_messages.empty(); }, 20000);
            QVERIFY2(!m_messages.empty(),
                     qPrintable("no dialog; the folder holds: " +
                                QDir(dir).entryList(QDir::Files | QDir::Hidden).join(", ") +
                                "; size " + QString::number(QFileInfo(target).size()) + "; log: " +
                                m_window->logView()->plainText().right(300) + "; modal: " +
                                (QApplication::activeModalWidget()
                                     ? QApplication::activeModalWidget()->metaObject()->className()
                                     : "none")));
            QTest::qWait(50);
        }
        QCOMPARE(int(m_messages.size()), 1);
        const UserMessage &m = m_messages.front();
        QCOMPARE(m.kind, UserMessage::Kind::Error);
        QVERIFY2(m.text.contains(target),
                 qPrintable("the dialog does not name the path: " + m.text));
        QVERIFY2(m.text.contains(reason),
                 qPrintable("the dialog does not say \"" + reason + "\": " + m.text));
        QCOMPARE(sha1(target), before);
        QCOMPARE(QDir(dir).entryList(QDir::Files | QDir::Hidden),
                 filesBefore); // no temp files left
        QVERIFY(QApplication::activeModalWidget() == nullptr);

        // The app goes on: the same save to a good place works.
        unmountAll();
        const QString good = m_dir.filePath(QString("ok-%1").arg(file));
        QFile::remove(good);
        m_messages.clear();
        {
            DialogAnswerer answer(good, format);
            trigger(action);
            QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(good).size() > 0, 20000);
            QTest::qWait(50);
        }
        QVERIFY2(m_messages.empty(), m_messages.empty() ? "" : qPrintable(m_messages.front().text));
    }

    // Save while the worker trains: the file holds the steps so far and loads back; the
    // run goes on to finish as if nothing happened.
    void saveWhileRunning()
    {
        MainWindow w;
        w.setConfirmCloseForTesting(false);
        w.designer()->setSpec(tinyGuiModel());
        w.runPanel()->setConfig(
            quickCpuConfig(40)); // 320 steps: still going when saved, even under ASan
        QTRY_VERIFY_WITH_TIMEOUT(!w.runPanel()->isStartBlocked(), 10000);
        w.startRun();
        QVERIFY(w.controller()->isRunning());
        const int id = w.store()->runIds().front();
        QTRY_VERIFY_WITH_TIMEOUT(w.store()->run(id)->steps.size() >= 3, k_runTimeoutMs);
        const QString path = m_dir.filePath("while-running.mixlab.json");
        QString error;
        QVERIFY2(w.saveExperimentAs(path, &error), qPrintable(error));
        const std::size_t stepsAtSave = w.store()->run(id)->steps.size();
        QVERIFY(w.controller()->isRunning());

        RunStore back;
        ExperimentFile file;
        QVERIFY2(loadExperiment(path, &file, &back, &error), qPrintable(error));
        QCOMPARE(back.runIds().size(), std::size_t(1));
        const RunRecord *saved = back.run(back.runIds().front());
        QVERIFY(saved->steps.size() >= 3 && saved->steps.size() <= stepsAtSave);
        QCOMPARE(saved->status, RunRecord::Status::Stopped); // it was running: comes back stopped
        for (std::size_t i = 0; i < saved->steps.size(); ++i)
            QCOMPARE(saved->steps[i].loss, w.store()->run(id)->steps[i].loss);

        QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);
        const RunRecord *done = w.store()->run(id);
        QCOMPARE(done->status, RunRecord::Status::Finished);
        QCOMPARE(qint64(done->steps.size()), done->totalSteps);
        QVERIFY(done->steps.size() > saved->steps.size());
        for (std::size_t i = 1; i < done->steps.size(); ++i)
            QCOMPARE(done->steps[i].step, done->steps[i - 1].step + 1); // none lost or repeated
    }
};

QTEST_MAIN(TestSaveFaults)
#include "tst_save_faults.moc"
