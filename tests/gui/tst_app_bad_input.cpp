// Bad input to the app, one row each, entering the ways a user would: File > Open and
// File > Import model and Run > Continue training from checkpoint (through their file
// dialogs), `mixlab <file>` on the command line, the run panel's dataset folder dialog and
// the settings fields. Every row must end in a
// dialog naming the problem, with the experiment shown, its runs and every file on disk
// left exactly as they were.
#include "app/mainwindow.h"
#include "designer/modeldesigner.h"
#include "files/experiment.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"
#include "common/usermessages.h"

#include "mixlab/model_spec.h"
#include "mixlab/run_group.h"

#include "app_test_mode.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDirIterator>
#include <QFileDialog>
#include <QLineEdit>
#include <QMap>
#include <QMessageBox>
#include <QRandomGenerator>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <functional>

#include <unistd.h>

namespace {

constexpr int k_side = 8;
constexpr int k_cifarRecord = 1 + 3072;

QByteArray be32(quint32 v)
{
    QByteArray b(4, '\0');
    for (int i = 0; i < 4; ++i) b[i] = char((v >> (24 - 8 * i)) & 0xff);
    return b;
}

QByteArray randomBytes(QRandomGenerator &rng, qsizetype n, int below = 256)
{
    QByteArray b(n, '\0');
    for (qsizetype i = 0; i < n; ++i) b[i] = char(rng.bounded(below));
    return b;
}

enum class Route { OpenMenu, CommandLine, ImportMenu, ContinueMenu, DatasetFolder };

// Answers every modal QFileDialog with `path`, as a user typing it and pressing Open,
// for as long as it lives; a message box the file dialog raises itself is recorded and
// closed, so a row fails instead of hanging.
class FileDialogAnswerer : public QObject {
public:
    explicit FileDialogAnswerer(const QString &path) : m_path(path)
    {
        m_timer.setInterval(20);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            QWidget *modal = QApplication::activeModalWidget();
            if (auto *dialog = qobject_cast<QFileDialog *>(modal)) {
                // Typed into the name field, as a user would: selectFile() works through the
                // file system model, which may still be loading the folder.
                if (auto *name = dialog->findChild<QLineEdit *>("fileNameEdit"))
                    name->setText(m_path);
                else
                    dialog->selectFile(m_path);
                static_cast<QDialog *>(dialog)->accept(); // QFileDialog::accept is protected
            } else if (auto *box = qobject_cast<QMessageBox *>(modal)) {
                m_unexpected << box->text();
                box->reject();
            }
        });
        m_timer.start();
    }
    QStringList unexpected() const { return m_unexpected; }

private:
    QString m_path;
    QTimer m_timer;
    QStringList m_unexpected;
};

} // namespace

Q_DECLARE_METATYPE(Route)

class TestAppBadInput : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QTemporaryDir m_settingsDir;
    QRandomGenerator m_rng{20260712};
    std::unique_ptr<MainWindow> m_window;
    std::vector<UserMessage> m_messages;
    QString m_baseline; // the experiment the window shows before every row

    QString path(const QString &name) const { return m_dir.filePath(name); }

    void write(const QString &name, const QByteArray &bytes)
    {
        QDir().mkpath(QFileInfo(path(name)).absolutePath());
        QFile f(path(name));
        QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(name));
        QCOMPARE(f.write(bytes), bytes.size());
    }

    static QByteArray model(const QByteArray &layers, const QByteArray &format = "mixlab-model/1")
    {
        return "{\"format\": \"" + format + "\", \"name\": \"m\", \"layers\": [" + layers + "]}";
    }

    // An experiment file around a model and a config (JSON text each), no runs.
    static QByteArray experiment(const QByteArray &modelJson, const QByteArray &configJson,
                                 const QByteArray &format = "mixlab-experiment/1")
    {
        return "{\"format\": \"" + format + "\", \"model\": " + modelJson +
               ", \"config\": " + configJson + ", \"compare_policies\": [], \"runs\": []}";
    }

    void writeIdx(const QString &folder, const std::function<void(QByteArray &)> &damage)
    {
        for (const auto &[prefix, n] : {std::pair{QString("train"), 64}, {QString("t10k"), 16}}) {
            QByteArray images = be32(0x803) + be32(n) + be32(k_side) + be32(k_side) +
                                randomBytes(m_rng, qsizetype(n) * k_side * k_side);
            const QByteArray labels = be32(0x801) + be32(n) + randomBytes(m_rng, n, 10);
            if (prefix == "train") damage(images);
            write(folder + "/" + prefix + "-images-idx3-ubyte", images);
            write(folder + "/" + prefix + "-labels-idx1-ubyte", labels);
        }
    }

    // Path -> hash of every file under the test folder.
    QMap<QString, QByteArray> snapshotFiles() const
    {
        QMap<QString, QByteArray> files;
        QDirIterator it(m_dir.path(), QDir::Files | QDir::Hidden | QDir::System,
                        QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString p = it.next();
            QFile f(p);
            files[p] = f.open(QIODevice::ReadOnly)
                           ? QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha1)
                           : QByteArray("unreadable");
        }
        return files;
    }

    // What the window shows, as the bytes an experiment file of it would hold.
    QByteArray snapshotWindow() const
    {
        QTemporaryDir dir;
        ExperimentFile file;
        file.model = m_window->designer()->spec();
        file.config = m_window->runPanel()->config();
        file.comparePolicies = m_window->runPanel()->comparePolicies();
        QString error;
        const QString out = dir.filePath("state.json");
        if (!saveExperiment(out, file, *m_window->store(), &error))
            return "cannot snapshot: " + error.toUtf8();
        QFile f(out);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("unreadable snapshot");
    }

    // Waits for the dialogs a row should raise (file dialogs answer themselves).
    bool waitForMessage(int timeoutMs = 10000)
    {
        return QTest::qWaitFor([this] { return !m_messages.empty(); }, timeoutMs);
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
            return -1; // a question is cancelled
        });

        const QByteArray head = R"({"type": "flatten"}, )";
        const QByteArray tiny =
            model(head + R"({"type": "dense", "units": 16, "activation": "relu"},
                                                {"type": "dense", "units": 10})");
        write("malformed.json", R"({"format": "mixlab-model/1", "layers": [{"type": "flatten"},)");
        write("empty.json", "  \n");
        write("unknown-layer.json", model(head + R"({"type": "bogus_layer", "units": 10})"));
        write("units-zero.json", model(head + R"({"type": "dense", "units": 0})"));
        write("units-negative.json", model(head + R"({"type": "dense", "units": -16})"));
        write("units-1e9.json",
              model(head +
                    R"({"type": "dense", "units": 1000000000}, {"type": "dense", "units": 10})"));
        write("filters-zero.json", model(R"({"type": "conv2d", "filters": 0, "kernel": 3}, )" +
                                         head + R"({"type": "dense", "units": 10})"));
        write("kernel-negative.json", model(R"({"type": "conv2d", "filters": 4, "kernel": -3}, )" +
                                            head + R"({"type": "dense", "units": 10})"));
        write("no-layers.json", model(""));
        write("future-model.json",
              model(head + R"({"type": "dense", "units": 10})", "mixlab-model/9"));
        // Parses, but a 9x9 kernel does not fit a 5x5 image after the first conv.
        write(
            "too-deep.json",
            model(
                R"({"type": "conv2d", "filters": 4, "kernel": 31}, {"type": "conv2d", "filters": 4, "kernel": 9}, )" +
                head + R"({"type": "dense", "units": 10})"));
        QVERIFY(QDir().mkpath(path("model-dir.json")));
        // Keras: a layer MixLab has no equivalent of, Python instead of JSON, an archive
        // that is no archive.
        write("keras-gru.json",
              R"({"class_name": "Sequential", "config": {"name": "rnn", "layers": [
                   {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 20, 8],
                    "dtype": "float32", "name": "input_1"}},
                   {"class_name": "GRU", "config": {"name": "gru_1", "units": 16}},
                   {"class_name": "Dense", "config": {"name": "dense", "units": 10}}]},
                 "keras_version": "2.13.1", "backend": "tensorflow"})");
        write("keras-python.json", "model = keras.Sequential([keras.layers.Dense(10)])\n");
        write("keras-garbage.keras", randomBytes(m_rng, 512));
        // Weights of another model: a valid safetensors file whose one tensor is not the
        // tiny model's (it has 1.weight, 1.bias, 2.weight, 2.bias).
        {
            QByteArray header =
                R"({"__metadata__": {"format": "mixlab-weights/1"}, "0.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})";
            while (header.size() % 8 != 0) header += ' ';
            QByteArray file(8, '\0');
            for (int i = 0; i < 8; ++i) file[i] = char((quint64(header.size()) >> (8 * i)) & 0xff);
            write("other-model.safetensors", file + header + QByteArray(16, '\0'));
        }

        // A real checkpoint of the tiny model (four CPU steps), cut in half; and a
        // checkpoint's header whose metadata lacks the run config.
        {
            mixlab::RunConfig c;
            c.dataset.name = "synthetic";
            c.dataset.synthetic_train = 64;
            c.dataset.synthetic_test = 16;
            c.batch_size = 16;
            c.epochs = 1;
            c.device = mixlab::DeviceChoice::CPU;
            mixlab::RunGroupOptions options;
            options.run_outputs.resize(1);
            options.run_outputs.front().checkpoint_file = path("whole.safetensors").toStdString();
            mixlab::RunGroup group(mixlab::parse_model_spec(tiny.toStdString()), {c}, options);
            struct : mixlab::MetricsSink, mixlab::RunGroupObserver {
                void on_step(int, const mixlab::StepMetrics &) override {}
                void on_epoch(int, const mixlab::EpochMetrics &) override {}
                void on_event(int, const mixlab::RunEvent &) override {}
            } quiet;
            QVERIFY(!group.run(quiet, quiet).any_failed());
            QFile whole(path("whole.safetensors"));
            QVERIFY(whole.open(QIODevice::ReadOnly));
            const QByteArray bytes = whole.readAll();
            write("ckpt-truncated.safetensors", bytes.left(bytes.size() / 2));
            // (moc reads this file too: plain strings, no raw string with unbalanced braces.)
            const QByteArray quoted = tiny.simplified().replace('"', "\\\"");
            QByteArray header = "{\"__metadata__\": {\"format\": \"mixlab-checkpoint/1\", "
                                "\"model\": \"" +
                                quoted + "\"}}";
            while (header.size() % 8 != 0) header += ' ';
            QByteArray file(8, '\0');
            for (int i = 0; i < 8; ++i) file[i] = char((quint64(header.size()) >> (8 * i)) & 0xff);
            write("ckpt-no-run.safetensors", file + header);
            write("ckpt-text.safetensors", "step 16, epoch 2, lr 0.05\n");
        }

        const QByteArray cfg =
            R"({"format": "mixlab-run/1", "device": "cpu", "dataset": "synthetic")";
        write("exp-malformed.mixlab.json", experiment(tiny, cfg + "}").left(80));
        write("exp-truncated.mixlab.json", experiment(tiny, cfg + "}").chopped(3));
        write("exp-not-object.mixlab.json", "[\"mixlab-experiment/1\"]");
        write("exp-future.mixlab.json", experiment(tiny, cfg + "}", "mixlab-experiment/3"));
        write("exp-other-format.mixlab.json", experiment(tiny, cfg + "}", "mixlab-run/1"));
        write("exp-unknown-layer.mixlab.json",
              experiment(model(head + R"({"type": "bogus_layer"})"), cfg + "}"));
        write("exp-units-1e9.mixlab.json",
              experiment(model(head + R"({"type": "dense", "units": 1000000000})"), cfg + "}"));
        write("exp-units-zero.mixlab.json",
              experiment(model(head + R"({"type": "dense", "units": 0})"), cfg + "}"));
        write("exp-units-negative.mixlab.json",
              experiment(model(head + R"({"type": "dense", "units": -3})"), cfg + "}"));
        write("exp-batch-zero.mixlab.json", experiment(tiny, cfg + R"(, "batch_size": 0})"));
        write("exp-batch-huge.mixlab.json", experiment(tiny, cfg + R"(, "batch_size": 10000000})"));
        write("exp-epochs-zero.mixlab.json", experiment(tiny, cfg + R"(, "epochs": 0})"));
        write("exp-lr-nan.mixlab.json",
              experiment(tiny, cfg + R"(, "optimizer": {"type": "sgd", "lr": "nan"}})"));
        write("exp-lr-inf.mixlab.json",
              experiment(tiny, cfg + R"(, "optimizer": {"type": "sgd", "lr": 1e999}})"));
        write(
            "exp-missing-dataset.mixlab.json",
            experiment(tiny, "{\"format\": \"mixlab-run/1\", \"device\": \"cpu\", \"dataset\": \"" +
                                 path("no-such-data").toUtf8() + "\"}"));
        write(
            "exp-broken-dataset.mixlab.json",
            experiment(tiny, "{\"format\": \"mixlab-run/1\", \"device\": \"cpu\", \"dataset\": \"" +
                                 path("idx-magic").toUtf8() + "\"}"));
        write("exp-runs-broken.mixlab.json",
              "{\"format\": \"mixlab-experiment/1\", \"model\": " + tiny + ", \"config\": " + cfg +
                  "}, \"compare_policies\": [\"fp32\"], \"runs\": [{\"name\": 3}]}");
        write("exp-policy-unknown.mixlab.json",
              "{\"format\": \"mixlab-experiment/1\", \"model\": " + tiny + ", \"config\": " + cfg +
                  "}, \"compare_policies\": [\"fp7\"], \"runs\": []}");
        write("exp-binary.mixlab.json", randomBytes(m_rng, 4096));
        QVERIFY(QDir().mkpath(path("exp-dir.mixlab.json")));

        writeIdx("idx-magic", [](QByteArray &b) { b.replace(0, 4, be32(0x00001234)); });
        writeIdx("idx-swapped", [](QByteArray &b) { b.replace(0, 4, be32(0x801)); });
        writeIdx("idx-truncated", [](QByteArray &b) { b.chop(b.size() / 2); });
        writeIdx("idx-short-header", [](QByteArray &b) { b.truncate(10); });
        writeIdx("idx-file-is-dir", [](QByteArray &) {});
        QVERIFY(QFile::remove(path("idx-file-is-dir/t10k-labels-idx1-ubyte")));
        QVERIFY(QDir().mkpath(path("idx-file-is-dir/t10k-labels-idx1-ubyte")));
        auto cifar = [&](int records) {
            QByteArray b = randomBytes(m_rng, qsizetype(records) * k_cifarRecord);
            for (int r = 0; r < records; ++r)
                b[qsizetype(r) * k_cifarRecord] = char(m_rng.bounded(10));
            return b;
        };
        for (int i = 1; i <= 5; ++i)
            write(QString("cifar-truncated/data_batch_%1.bin").arg(i), cifar(4));
        write("cifar-truncated/test_batch.bin", cifar(2).left(k_cifarRecord + 100));
        QVERIFY(QDir().mkpath(path("empty-folder")));

        // The experiment every row starts from: a model, a config and two runs with
        // metrics, saved to a file that must never change.
        {
            RunStore store;
            mixlab::RunConfig config;
            config.dataset.name = "synthetic";
            config.device = mixlab::DeviceChoice::CPU;
            config.batch_size = 24;
            config.seed = 99;
            for (int r = 0; r < 2; ++r) {
                const int id = store.addRun(config,
                                            QString::fromStdString(mixlab::model_spec_to_json(
                                                mixlab::parse_model_spec(tiny.toStdString()))),
                                            store.newGroup());
                std::vector<mixlab::StepMetrics> steps(20);
                for (int i = 0; i < 20; ++i) {
                    steps[i].step = i + 1;
                    steps[i].epoch = 1;
                    steps[i].loss = float(2.0 + m_rng.generateDouble());
                    steps[i].accuracy = float(m_rng.generateDouble());
                    steps[i].step_ms = 1.0 + m_rng.generateDouble();
                }
                store.appendSteps(id, steps);
                store.setStatus(id, RunRecord::Status::Finished);
            }
            ExperimentFile file;
            file.model = mixlab::parse_model_spec(tiny.toStdString());
            file.config = config;
            file.comparePolicies = {mixlab::Policy::FP32, mixlab::Policy::MixedFP16};
            QString error;
            m_baseline = path("baseline.mixlab.json");
            QVERIFY2(saveExperiment(m_baseline, file, store, &error), qPrintable(error));
        }
        m_window = std::make_unique<MainWindow>();
        m_window->setConfirmCloseForTesting(false);
        m_window->show();
        QString error;
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
        QCOMPARE(m_window->store()->runIds().size(), std::size_t(2));
    }

    void cleanupTestCase()
    {
        m_window.reset();
        setUserMessageRecorder({});
    }

    void init() { m_messages.clear(); }

    void badInputGivesDialog_data()
    {
        QTest::addColumn<Route>("route");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("fragment"); // the dialog must name this (besides the path)

        auto row = [](const char *name, Route route, const char *file, const char *fragment) {
            QTest::newRow(name) << route << QString(file) << QString(fragment);
        };
        // File > Import model... (the designer's model from a mixlab-model/1 file)
        row("import: malformed JSON", Route::ImportMenu, "malformed.json", "malformed.json");
        row("import: blank file", Route::ImportMenu, "empty.json", "empty");
        row("import: unknown layer type", Route::ImportMenu, "unknown-layer.json", "bogus_layer");
        row("import: zero units", Route::ImportMenu, "units-zero.json", "\"units\"");
        row("import: negative units", Route::ImportMenu, "units-negative.json", "\"units\"");
        row("import: 10^9-unit dense layer", Route::ImportMenu, "units-1e9.json", "1000000000");
        row("import: zero filters", Route::ImportMenu, "filters-zero.json", "\"filters\"");
        row("import: negative kernel", Route::ImportMenu, "kernel-negative.json", "kernel");
        row("import: no layers", Route::ImportMenu, "no-layers.json", "no layers");
        row("import: future format", Route::ImportMenu, "future-model.json", "mixlab-model/9");
        row("import: does not build for the data", Route::ImportMenu, "too-deep.json",
            "does not build");
        row("import: missing file", Route::CommandLine, "none-model.json", "none-model.json");
        row("import: Keras layer without an equivalent", Route::ImportMenu, "keras-gru.json",
            "\"gru_1\" (GRU): MixLab has no equivalent");
        row("import: Keras, not JSON", Route::ImportMenu, "keras-python.json", "not valid JSON");
        row("import: .keras that is no archive", Route::ImportMenu, "keras-garbage.keras", "keras");
        row("import: missing .keras", Route::CommandLine, "none-model.keras", "none-model.keras");
        // Run > Continue training from checkpoint...
        row("continue: truncated checkpoint", Route::ContinueMenu, "ckpt-truncated.safetensors",
            "truncated");
        row("continue: a weights file", Route::ContinueMenu, "other-model.safetensors",
            "is a weights file");
        row("continue: a text file", Route::ContinueMenu, "ckpt-text.safetensors", "header length");
        row("continue: no run config", Route::ContinueMenu, "ckpt-no-run.safetensors", "\"run\"");
        // File > Open... (experiment files)
        row("open: malformed JSON", Route::OpenMenu, "exp-malformed.mixlab.json", "malformed JSON");
        row("open: truncated", Route::OpenMenu, "exp-truncated.mixlab.json", "malformed JSON");
        row("open: binary garbage", Route::OpenMenu, "exp-binary.mixlab.json",
            "not a MixLab experiment");
        row("open: not an object", Route::OpenMenu, "exp-not-object.mixlab.json", "JSON object");
        row("open: future format", Route::OpenMenu, "exp-future.mixlab.json", "newer MixLab");
        row("open: another format", Route::OpenMenu, "exp-other-format.mixlab.json",
            "mixlab-run/1");
        row("open: unknown layer type", Route::OpenMenu, "exp-unknown-layer.mixlab.json",
            "bogus_layer");
        row("open: 10^9-unit dense layer", Route::OpenMenu, "exp-units-1e9.mixlab.json",
            "1000000000");
        row("open: zero units", Route::OpenMenu, "exp-units-zero.mixlab.json", "\"units\"");
        row("open: negative units", Route::OpenMenu, "exp-units-negative.mixlab.json", "\"units\"");
        row("open: batch 0", Route::OpenMenu, "exp-batch-zero.mixlab.json", "batch_size");
        row("open: batch 10^7", Route::OpenMenu, "exp-batch-huge.mixlab.json", "batch_size");
        row("open: epochs 0", Route::OpenMenu, "exp-epochs-zero.mixlab.json", "epochs");
        row("open: lr NaN", Route::OpenMenu, "exp-lr-nan.mixlab.json", "lr");
        row("open: lr 1e999", Route::OpenMenu, "exp-lr-inf.mixlab.json", "lr");
        row("open: a broken run", Route::OpenMenu, "exp-runs-broken.mixlab.json", "run 1");
        row("open: unknown compare policy", Route::OpenMenu, "exp-policy-unknown.mixlab.json",
            "fp7");
        // `mixlab <file>`
        row("command line: future format", Route::CommandLine, "exp-future.mixlab.json",
            "newer MixLab");
        row("command line: malformed JSON", Route::CommandLine, "exp-malformed.mixlab.json",
            "malformed JSON");
        row("command line: missing file", Route::CommandLine, "none.mixlab.json",
            "none.mixlab.json");
        row("command line: a folder", Route::CommandLine, "exp-dir.mixlab.json", "folder");
        // Run panel > Dataset > Folder...
        row("dataset: IDX wrong magic", Route::DatasetFolder, "idx-magic", "not an IDX image");
        row("dataset: IDX label magic in an image file", Route::DatasetFolder, "idx-swapped",
            "idx-swapped");
        row("dataset: IDX truncated", Route::DatasetFolder, "idx-truncated", "truncated");
        row("dataset: IDX short header", Route::DatasetFolder, "idx-short-header",
            "idx-short-header");
        row("dataset: a folder where a file belongs", Route::DatasetFolder, "idx-file-is-dir",
            "t10k-labels-idx1-ubyte");
        row("dataset: CIFAR truncated", Route::DatasetFolder, "cifar-truncated", "test_batch.bin");
        row("dataset: empty folder", Route::DatasetFolder, "empty-folder", "empty-folder");
    }

    void badInputGivesDialog()
    {
        QFETCH(Route, route);
        QFETCH(QString, file);
        QFETCH(QString, fragment);
        // The baseline shown again, in case an earlier row failed half-way.
        QString error;
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
        m_messages.clear();
        const QMap<QString, QByteArray> filesBefore = snapshotFiles();
        const QByteArray windowBefore = snapshotWindow();
        const QString fileBefore = m_window->currentFile();
        const QString full = path(file);
        FileDialogAnswerer answer(full);

        switch (route) {
        case Route::OpenMenu:
            QMetaObject::invokeMethod(
                m_window.get(), [this] { triggerMenu("Open..."); }, Qt::QueuedConnection);
            break;
        case Route::ImportMenu:
            QMetaObject::invokeMethod(
                m_window.get(),
                [this] { m_window->findChild<QAction *>("importModelAction")->trigger(); },
                Qt::QueuedConnection);
            break;
        case Route::ContinueMenu:
            QMetaObject::invokeMethod(
                m_window.get(),
                [this] { m_window->findChild<QAction *>("continueTrainingAction")->trigger(); },
                Qt::QueuedConnection);
            break;
        case Route::CommandLine:
            if (file.startsWith("exp-") || file.startsWith("none.")) {
                m_window->openFromCommandLine(full);
            } else {
                // `mixlab --model <file>`: main.cpp's dialog around importModel.
                if (!m_window->importModel(full, &error))
                    showUserError(m_window.get(), "Import model",
                                  QString("Could not import the model %1:\n%2").arg(full, error));
            }
            break;
        case Route::DatasetFolder: {
            auto *combo = m_window->runPanel()->findChild<QComboBox *>("datasetCombo");
            const int chooser = combo->count() - 1; // "Folder..."
            QMetaObject::invokeMethod(
                combo,
                [combo, chooser] {
                    combo->setCurrentIndex(chooser);
                    emit combo->activated(chooser);
                },
                Qt::QueuedConnection);
            break;
        }
        }
        QVERIFY2(waitForMessage(), qPrintable("no dialog came; file dialog messages: " +
                                              answer.unexpected().join(" | ")));
        QTest::qWait(20); // a second dialog for the same input would be a bug too
        QCOMPARE(int(m_messages.size()), 1);
        const UserMessage &m = m_messages.front();
        QCOMPARE(m.kind, UserMessage::Kind::Error);
        QVERIFY2(m.text.contains(full), qPrintable("the dialog does not name the path: " + m.text));
        QVERIFY2(m.text.contains(fragment, Qt::CaseInsensitive),
                 qPrintable(QString("the dialog does not say \"%1\": %2").arg(fragment, m.text)));
        QVERIFY2(!m.text.contains("what():") && !m.text.contains("basic_string"),
                 qPrintable(m.text));

        QCOMPARE(m_window->currentFile(), fileBefore);
        QCOMPARE(snapshotWindow(), windowBefore);
        QCOMPARE(snapshotFiles(), filesBefore);
        QCOMPARE(m_window->store()->runIds().size(), std::size_t(2));
        QVERIFY(QApplication::activeModalWidget() == nullptr);
    }

    // Run > Start from weights with another model's file: the run is refused as it is set
    // up, before a step, with the engine's message naming the tensor; the experiment's
    // runs stay, and the next run (from fresh weights) trains.
    void startWeightsOfAnotherModel()
    {
        QString error;
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
        m_messages.clear();
        mixlab::RunConfig quick = m_window->runPanel()->config();
        quick.steps = 4;
        quick.dataset.synthetic_train = 96;
        quick.dataset.synthetic_test = 24;
        m_window->runPanel()->setConfig(quick);
        const QString file = path("other-model.safetensors");
        {
            FileDialogAnswerer answer(file);
            QMetaObject::invokeMethod(
                m_window.get(),
                [this] { m_window->findChild<QAction *>("startWeightsAction")->trigger(); },
                Qt::QueuedConnection);
            QTRY_COMPARE(m_window->runPanel()->startWeights(), file);
        }
        m_window->startRun();
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->controller()->isRunning(), 60000);
        std::vector<int> ids = m_window->store()->runIds();
        QCOMPARE(ids.size(), std::size_t(3));
        const RunRecord *refused = m_window->store()->run(ids.back());
        QCOMPARE(refused->status, RunRecord::Status::Failed);
        QVERIFY2(refused->failure.contains(file) && refused->failure.contains("1.weight") &&
                     refused->failure.contains("another model"),
                 qPrintable(refused->failure));
        QVERIFY(refused->steps.empty());
        QVERIFY(refused->weightsPath.isEmpty());
        for (int i = 0; i < 2; ++i)
            QCOMPARE(m_window->store()->run(ids[std::size_t(i)])->status,
                     RunRecord::Status::Finished);

        QVERIFY(m_window->runPanel()->startWeights().isEmpty());
        m_window->startRun();
        QTRY_VERIFY_WITH_TIMEOUT(!m_window->controller()->isRunning(), 60000);
        ids = m_window->store()->runIds();
        QCOMPARE(ids.size(), std::size_t(4));
        const RunRecord *next = m_window->store()->run(ids.back());
        QCOMPARE(next->status, RunRecord::Status::Finished);
        QCOMPARE(next->steps.size(), std::size_t(4));
        QVERIFY(m_messages.empty());
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
    }

    // An experiment that reads fine but whose dataset is not usable here opens (its runs
    // are worth keeping) with a dialog saying so, never silently on other data.
    void experimentWithUnusableDataset_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("missing dataset folder") << "exp-missing-dataset.mixlab.json"
                                                << "no-such-data";
        QTest::newRow("dataset with a wrong magic") << "exp-broken-dataset.mixlab.json"
                                                    << "not an IDX image";
    }

    void experimentWithUnusableDataset()
    {
        QFETCH(QString, file);
        QFETCH(QString, fragment);
        QString error;
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
        m_messages.clear();
        const QMap<QString, QByteArray> filesBefore = snapshotFiles();
        m_window->openFromCommandLine(path(file));
        QCOMPARE(int(m_messages.size()), 1);
        QVERIFY2(m_messages.front().text.contains(fragment), qPrintable(m_messages.front().text));
        QVERIFY2(m_messages.front().text.contains("synthetic"),
                 qPrintable(m_messages.front().text));
        QCOMPARE(snapshotFiles(), filesBefore);
        QCOMPARE(m_window->runPanel()->config().dataset.name, std::string("synthetic"));
        QVERIFY(m_window->runPanel()->isStartBlocked() == false);
    }

    // The settings fields: what the widgets let through never reaches a run unchecked.
    void settingsFieldsRefuseBadValues()
    {
        QString error;
        QVERIFY2(m_window->openExperiment(m_baseline, &error), qPrintable(error));
        RunPanel *panel = m_window->runPanel();
        auto *batch = panel->findChild<QSpinBox *>("batchSpin");
        auto *epochs = panel->findChild<QSpinBox *>("epochsSpin");
        auto *lr = panel->findChild<QLineEdit *>("lrEdit");
        QVERIFY(batch && epochs && lr);

        // Typed as a user would: the spin boxes refuse what is out of range.
        for (const char *text : {"0", "10000000", "-1"}) {
            batch->selectAll();
            batch->clear();
            QTest::keyClicks(batch, text);
            batch->interpretText();
            QVERIFY2(batch->value() >= 1 && batch->value() <= 1048576, text);
            QVERIFY2(panel->config().batch_size >= 1 && panel->config().batch_size <= 1048576,
                     text);
        }
        epochs->clear();
        QTest::keyClicks(epochs, "0");
        epochs->interpretText();
        QVERIFY(epochs->value() >= 1);
        QVERIFY(panel->config().epochs >= 1);

        // The learning rate field takes digits only: "nan" and "-" never get in.
        const float lrBefore = panel->config().optimizer.lr;
        for (const char *text : {"nan", "-0.1", "inf"}) {
            lr->clear();
            QTest::keyClicks(lr, text);
            QVERIFY2(!lr->text().contains('n') && !lr->text().contains('-'),
                     qPrintable(lr->text()));
        }
        // What it lets through and no run may use: zero blocks Start, with a reason.
        lr->clear();
        QTest::keyClicks(lr, "0");
        QVERIFY2(panel->isStartBlocked(), "a learning rate of 0 did not block Start");
        QVERIFY2(panel->startBlockReason().contains("lr", Qt::CaseInsensitive) ||
                     panel->startBlockReason().contains("learning rate", Qt::CaseInsensitive),
                 qPrintable(panel->startBlockReason()));
        lr->clear();
        QTest::keyClicks(lr, "1e999"); // no float holds it
        QVERIFY2(panel->isStartBlocked() || panel->config().optimizer.lr == lrBefore,
                 "an unrepresentable learning rate reached the config");
        QVERIFY(std::isfinite(panel->config().optimizer.lr));
        lr->clear();
        QTest::keyClicks(lr, "0.05");
        QVERIFY2(!panel->isStartBlocked(), qPrintable(panel->startBlockReason()));
        QVERIFY(m_messages.empty());
    }

private:
    void triggerMenu(const QString &text)
    {
        for (QAction *a : m_window->findChildren<QAction *>())
            if (a->text().remove('&') == text) {
                a->trigger();
                return;
            }
        QFAIL(qPrintable("no action " + text));
    }
};

QTEST_MAIN(TestAppBadInput)
#include "tst_app_bad_input.moc"
