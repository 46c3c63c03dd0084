// mixlab-cli end to end: the real binary run with QProcess. Bad input exits 2 with one
// line naming the problem; tiny train and compare runs on the CPU write logs that parse,
// also when one run of a compare fails alone; maxbatch searches; summary reports the seed
// MLP's parameter count; corpus reports a word corpus's vocabulary, tokens and perplexities.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace {

struct CliResult {
    int code = -1;
    QString out, err;
};

// Keys every step record of a log carries (run_log.h documents the schema).
const QStringList k_step_keys = {"step",    "epoch",         "loss",       "accuracy", "step_ms",
                                 "wall_ms", "samples_per_s", "loss_scale", "overflow", "skipped"};

QJsonObject read_json(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
    if (error.error != QJsonParseError::NoError) qWarning() << path << error.errorString();
    return doc.object();
}

QStringList read_lines(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
    return QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_tiny, m_bad, m_unknown;

    CliResult run(const QStringList& args,
                  const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
    {
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(MIXLAB_CLI_PATH), args);
        CliResult r;
        if (!p.waitForStarted(10000) || !p.waitForFinished(60000)) {
            p.kill();
            p.waitForFinished();
            r.err = "did not start or finish: " + p.errorString();
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = QString::fromUtf8(p.readAllStandardOutput());
        r.err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }

    // "@tiny", "@bad", "@unknown" name the test's model files, "@dir" its folder.
    QStringList expand(QStringList args) const
    {
        for (QString& a : args) {
            a.replace("@tiny", m_tiny);
            a.replace("@bad", m_bad);
            a.replace("@unknown", m_unknown);
            a.replace("@dir", m_dir.path());
        }
        return args;
    }

    void write(const QString& path, const QByteArray& text)
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(text);
    }

    static QString details(const CliResult& r)
    {
        return QString("exit %1\nstdout:\n%2\nstderr:\n%3").arg(r.code).arg(r.out, r.err);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(MIXLAB_CLI_PATH), MIXLAB_CLI_PATH);
        QVERIFY(m_dir.isValid());
        m_tiny = m_dir.filePath("tiny.json");
        m_bad = m_dir.filePath("malformed.json");
        m_unknown = m_dir.filePath("unknown-layer.json");
        // Small enough that 20 CPU steps take a fraction of a second.
        write(m_tiny, R"({"format": "mixlab-model/1", "name": "tiny", "layers": [
            {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
            {"type": "dense", "units": 10}]})");
        write(m_bad, R"({"format": "mixlab-model/1", "layers": [{"type": "flatten"},)");
        write(m_unknown, R"({"format": "mixlab-model/1", "name": "u", "layers": [
            {"type": "flatten"}, {"type": "bogus_layer", "units": 10}]})");
    }

    void version()
    {
        const CliResult r = run({"--version"});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out.trimmed(), QString("mixlab-cli %1").arg(MIXLAB_VERSION));
    }

    void help_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("specific"); // an option only this command has
        QTest::newRow("train") << "train"
                               << "--policy P";
        QTest::newRow("compare") << "compare"
                                 << "--policies";
        QTest::newRow("summary") << "summary"
                                 << "--json";
    }

    void help()
    {
        QFETCH(QString, command);
        QFETCH(QString, specific);
        const CliResult r = run({command, "--help"});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.startsWith("usage: mixlab-cli " + command), qPrintable(r.out));
        QVERIFY(r.out.contains("--model FILE"));
        if (command != "summary") QVERIFY2(r.out.contains("--clip X"), qPrintable(r.out));
        QVERIFY2(r.out.contains(specific), qPrintable(r.out));
        QVERIFY(r.err.isEmpty());
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("fragment"); // the message must name this
        // Valid apart from what each row adds: were the check missing, it would train
        // (briefly) and exit 0, and the row would fail.
        const QStringList train = {"train",     "--model",          "@tiny", "--dataset",
                                   "synthetic", "--synthetic-size", "256",   "--steps",
                                   "3",         "--device",         "cpu",   "--batch",
                                   "32"};
        auto with = [&](QStringList base, const QStringList& extra) {
            // A row's option replaces the base's copy, so no "given twice" error hides it.
            for (const QString& e : extra) {
                const int at = base.indexOf(e.section('=', 0, 0));
                if (e.startsWith("--") && at >= 0) base.remove(at, 2);
            }
            return base + extra;
        };
        QTest::newRow("missing model file")
            << with(train, {"--model", "@dir/none.json"}) << "none.json";
        QTest::newRow("malformed model JSON")
            << with(train, {"--model", "@bad"}) << "malformed.json";
        QTest::newRow("unknown layer type")
            << with(train, {"--model", "@unknown"}) << "bogus_layer";
        QTest::newRow("batch 0") << with(train, {"--batch", "0"}) << "--batch";
        QTest::newRow("batch 10000000") << with(train, {"--batch", "10000000"}) << "--batch";
        QTest::newRow("batch above the split") << with(train, {"--batch", "1000"}) << "1000";
        QTest::newRow("non-numeric batch") << with(train, {"--batch", "abc"}) << "--batch";
        QTest::newRow("batch with no value") << with(train, {"--batch="}) << "--batch";
        QStringList by_epochs = train;
        by_epochs.remove(by_epochs.indexOf("--steps"), 2);
        QTest::newRow("epochs 0") << by_epochs + QStringList{"--epochs", "0"} << "--epochs";
        QTest::newRow("epochs and steps") << with(train, {"--epochs", "2"}) << "--epochs";
        QTest::newRow("lr nan") << with(train, {"--lr", "nan"}) << "--lr";
        QTest::newRow("lr negative") << with(train, {"--lr", "-0.1"}) << "--lr";
        QTest::newRow("clip negative") << with(train, {"--clip", "-0.25"}) << "--clip";
        QTest::newRow("clip nan") << with(train, {"--clip", "nan"}) << "--clip";
        QTest::newRow("fp8 history 0") << with(train, {"--fp8-history", "0"}) << "--fp8-history";
        QTest::newRow("fp8 margin 9") << with(train, {"--fp8-margin", "9"}) << "--fp8-margin";
        QTest::newRow("clip not a number") << with(train, {"--clip", "quarter"}) << "--clip";
        QTest::newRow("unknown policy") << with(train, {"--policy", "fp12"}) << "fp12";
        QTest::newRow("unknown option") << with(train, {"--frobnicate", "3"}) << "--frobnicate";
        QTest::newRow("positional argument") << with(train, {"extra"}) << "extra";
        QTest::newRow("bad device") << with(train, {"--device", "tpu"}) << "tpu";
        QTest::newRow("bad optimizer") << with(train, {"--optimizer", "lion"}) << "--optimizer";
        QTest::newRow("missing dataset folder")
            << with(train, {"--dataset", "@dir/no-such-folder"}) << "no-such-folder";
        QTest::newRow("unwritable --log-json folder")
            << with(train, {"--log-json", "@dir/missing/log.json"}) << "missing/log.json";
        QTest::newRow("--log-json under a file")
            << with(train, {"--log-json", "@tiny/log.json"}) << "tiny.json/log.json";
        QTest::newRow("--log-csv is a folder") << with(train, {"--log-csv", "@dir"}) << "--log-csv";
        QTest::newRow("no model") << QStringList{"train", "--dataset", "synthetic"} << "--model";
        QTest::newRow("malformed run config") << with(train, {"--run", "@bad"}) << "malformed.json";
        QTest::newRow("missing run config")
            << with(train, {"--run", "@dir/none-run.json"}) << "none-run.json";
        QStringList compare = train;
        compare[0] = "compare";
        QTest::newRow("compare unknown policy")
            << compare + QStringList{"--policies", "fp32,fp12"} << "fp12";
        QTest::newRow("compare repeated policy")
            << compare + QStringList{"--policies", "fp32,fp32"} << "fp32";
        QTest::newRow("compare no policies") << compare << "--policies";
        QTest::newRow("summary bad input")
            << QStringList{"summary", "--model", "@tiny", "--input", "32x32"} << "--input";
        QTest::newRow("summary wrong classes")
            << QStringList{"summary", "--model", "@tiny", "--input", "8x8x1", "--classes", "7"}
            << "7";
        QTest::newRow("corpus: none given") << QStringList{"corpus", "--json"} << "synthetic-text";
        QTest::newRow("corpus: two given")
            << QStringList{"corpus", "synthetic-text", "@dir"} << "give one corpus";
        QTest::newRow("corpus: missing folder")
            << QStringList{"corpus", "@dir/no-such-corpus"} << "no-such-corpus";
        QTest::newRow("corpus: a folder without splits")
            << QStringList{"corpus", "@dir"} << "train.txt is missing";
        QTest::newRow("corpus: --vocab for a folder")
            << QStringList{"corpus", "@dir", "--vocab", "100"} << "synthetic-text only";
        QTest::newRow("corpus: --vocab 3")
            << QStringList{"corpus", "synthetic-text", "--vocab", "3"} << "--vocab";
        QTest::newRow("corpus: --synthetic-tokens 0")
            << QStringList{"corpus", "synthetic-text", "--synthetic-tokens=0"}
            << "--synthetic-tokens";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "frobnicate";
    }

    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, fragment);
        const CliResult r = run(expand(args));
        QVERIFY2(r.code == 2, qPrintable(details(r)));
        QVERIFY2(r.err.contains(expand({fragment}).front()), qPrintable(details(r)));
        if (args.front() != "frobnicate") { // the unknown command also prints the usage
            QVERIFY2(r.err.trimmed().count('\n') == 0, qPrintable("not one line: " + r.err));
            QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
        }
    }

    void trainWritesLogs()
    {
        const QString json = m_dir.filePath("train.json"), csv = m_dir.filePath("train.csv");
        const CliResult r = run({"train", "--model", m_tiny, "--dataset", "synthetic",
                                 "--synthetic-size", "512", "--steps=20", "--device", "cpu",
                                 "--batch", "32", "--log-json", json, "--log-csv", csv});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        // Summary on stdout, progress on stderr.
        QVERIFY2(r.out.contains("policy") && r.out.contains("fp32"), qPrintable(r.out));
        QVERIFY(r.out.contains("test accuracy"));
        QVERIFY(r.out.contains("final loss scale"));
        QVERIFY2(r.err.contains("step 20/20"), qPrintable(r.err));

        const QJsonObject log = read_json(json);
        QCOMPARE(log["format"].toString(), QString("mixlab-log/1"));
        QCOMPARE(log["kind"].toString(), QString("train"));
        const QJsonObject config = log["config"].toObject();
        QCOMPARE(config["format"].toString(), QString("mixlab-run/1"));
        QCOMPARE(config["batch_size"].toInt(), 32);
        QCOMPARE(config["steps"].toInt(), 20);
        QCOMPARE(config["policy"].toString(), QString("fp32"));
        QCOMPARE(config["model"].toObject()["name"].toString(), QString("tiny"));
        const QJsonObject env = log["environment"].toObject();
        QCOMPARE(env["backend"].toString(), QString("cpu"));
        QCOMPARE(env["compute_capability"].toString(), QString("cpu"));
        QVERIFY(!env["os"].toString().isEmpty());
        QCOMPARE(env["mixlab_version"].toString(), QString(MIXLAB_VERSION));

        const QJsonArray steps = log["steps"].toArray();
        QCOMPARE(steps.size(), 20);
        for (int i = 0; i < steps.size(); ++i) {
            const QJsonObject s = steps[i].toObject();
            for (const QString& key : k_step_keys) QVERIFY2(s.contains(key), qPrintable(key));
            QCOMPARE(s["step"].toInt(), i + 1);
            QVERIFY(s["loss"].isDouble());
            QVERIFY(s["step_ms"].toDouble() > 0);
        }
        QVERIFY(!log["epochs"].toArray().isEmpty());
        QVERIFY(log["events"].isArray());
        const QJsonObject summary = log["summary"].toObject();
        QCOMPARE(summary["steps"].toInt(), 20);
        QCOMPARE(summary["skipped_steps"].toInt(), 0);

        const QStringList lines = read_lines(csv);
        QCOMPARE(lines.size(), 1 + 20);
        QVERIFY(lines.front().startsWith("run,policy,step,epoch,loss"));
        QCOMPARE(lines[20].section(',', 2, 2), QString("20"));
        QVERIFY(!QFile::exists(json + ".tmp"));
        QVERIFY(!QFile::exists(csv + ".tmp"));
    }

    // --save-weights: a safetensors file whose header names the model's tensors in
    // PyTorch's names (tst_safetensors checks the bytes); --load-weights takes it back.
    void trainSavesWeights()
    {
        const QString weights = m_dir.filePath("tiny.st");
        const QStringList base = {"train",     "--model",          m_tiny, "--dataset",
                                  "synthetic", "--synthetic-size", "64",   "--device",
                                  "cpu",       "--batch",          "16"};
        CliResult r = run(base + QStringList{"--steps", "5", "--save-weights", weights});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("weights") && r.out.contains("tiny.st"), qPrintable(r.out));
        QVERIFY(!QFile::exists(weights + ".tmp"));
        QFile f(weights);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QVERIFY(bytes.size() > 8);
        quint64 n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | quint8(bytes[i]);
        QVERIFY(n % 8 == 0 && 8 + n <= quint64(bytes.size()));
        const QJsonObject header = QJsonDocument::fromJson(bytes.mid(8, qsizetype(n))).object();
        QCOMPARE(header["1.weight"].toObject()["shape"].toArray(), QJsonArray({16, 3072}));
        QCOMPARE(header["2.bias"].toObject()["dtype"].toString(), QString("F32"));
        const QJsonObject meta = header["__metadata__"].toObject();
        QCOMPARE(meta["format"].toString(), QString("mixlab-weights/1"));
        QCOMPARE(meta["policy"].toString(), QString("fp32"));
        QCOMPARE(meta["step"].toString(), QString("5"));
        QVERIFY(meta["model"].toString().contains("\"tiny\""));

        r = run(base + QStringList{"--steps", "1", "--load-weights", weights});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        r = run({"train", "--help"});
        QVERIFY(r.out.contains("--save-weights") && r.out.contains("safetensors"));
        r = run({"compare", "--help"});
        QVERIFY(!r.out.contains("--save-weights"));
    }

    void trainSavesPredictions()
    {
        // The test split's images, labels and logits: the logits' argmax must give the
        // accuracy the run printed (the same evaluation).
        const QString preds = m_dir.filePath("tiny.pred.st");
        const QStringList base = {"train",     "--model",          m_tiny, "--dataset",
                                  "synthetic", "--synthetic-size", "200",  "--device",
                                  "cpu",       "--batch",          "16",   "--steps",
                                  "8"};
        CliResult r = run(base + QStringList{"--save-predictions", preds});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("predictions") && r.out.contains("tiny.pred.st"),
                 qPrintable(r.out));
        QFile f(preds);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        quint64 n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | quint8(bytes[i]);
        QVERIFY(n % 8 == 0 && 8 + n <= quint64(bytes.size()));
        const QJsonObject header = QJsonDocument::fromJson(bytes.mid(8, qsizetype(n))).object();
        const QJsonArray label_shape = header["labels"].toObject()["shape"].toArray();
        QCOMPARE(label_shape.size(), 1);
        const int samples = label_shape[0].toInt();
        QVERIFY(samples > 0);
        QCOMPARE(header["images"].toObject()["shape"].toArray(), QJsonArray({samples, 32, 32, 3}));
        QCOMPARE(header["images"].toObject()["dtype"].toString(), QString("U8"));
        const QJsonObject logits = header["logits"].toObject();
        QCOMPARE(logits["shape"].toArray(), QJsonArray({samples, 10}));
        QCOMPARE(logits["dtype"].toString(), QString("F32"));
        const QJsonObject meta = header["__metadata__"].toObject();
        QCOMPARE(meta["format"].toString(), QString("mixlab-predictions/1"));
        QCOMPARE(meta["step"].toString(), QString("8"));
        QCOMPARE(
            QJsonDocument::fromJson(meta["normalization_mean"].toString().toUtf8()).array().size(),
            3);

        // Recount the accuracy from the raw tensors.
        const qsizetype data = qsizetype(8 + n);
        const auto range = [&](const char* name) {
            return header[name].toObject()["data_offsets"].toArray()[0].toInteger() + data;
        };
        int correct = 0;
        for (int i = 0; i < samples; ++i) {
            float row[10];
            std::memcpy(row, bytes.constData() + range("logits") + i * 40, sizeof row);
            qint64 label = 0;
            std::memcpy(&label, bytes.constData() + range("labels") + i * 8, sizeof label);
            correct += int(std::max_element(row, row + 10) - row) == label;
        }
        const QString printed = QString::number(double(correct) / samples, 'f', 4);
        QVERIFY2(r.out.contains("test accuracy     " + printed),
                 qPrintable(printed + " not in:\n" + r.out));

        // Refused before training: one file for both, or a group of several runs.
        r = run(base + QStringList{"--save-predictions", preds, "--save-weights", preds});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("the same file"), qPrintable(r.err));
        r = run({"compare", "--help"});
        QVERIFY(!r.out.contains("--save-predictions"));
    }

    // --save-checkpoint, then --resume: the resumed run's steps and final weights are those
    // of the run that never stopped (tst_checkpoint checks every case; this is the CLI's
    // round trip), its log says so and carries the checkpoint's settings.
    void trainResumesFromCheckpoint()
    {
        const QStringList base = {
            "train",      "--model",     m_tiny, "--dataset", "synthetic", "--synthetic-size",
            "64",         "--device",    "cpu",  "--batch",   "16",        "--policy",
            "mixed_fp16", "--optimizer", "adam", "--lr",      "0.002"};
        const QString straight_csv = m_dir.filePath("straight.csv");
        const QString straight_st = m_dir.filePath("straight.st");
        CliResult r = run(base + QStringList{"--epochs", "2", "--log-csv", straight_csv,
                                             "--save-weights", straight_st});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        const QString ck = m_dir.filePath("tiny.ckpt");
        r = run(base + QStringList{"--epochs", "1", "--save-checkpoint", ck});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("checkpoint") && r.out.contains("tiny.ckpt"), qPrintable(r.out));
        QVERIFY(!QFile::exists(ck + ".tmp"));

        const QString csv = m_dir.filePath("resumed.csv");
        const QString json = m_dir.filePath("resumed.json");
        const QString st = m_dir.filePath("resumed.st");
        r = run({"train", "--resume", ck, "--epochs", "2", "--log-csv", csv, "--log-json", json,
                 "--save-weights", st});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QFile a(straight_st), b(st);
        QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
        QVERIFY2(a.readAll() == b.readAll(), "resumed weights differ from the straight run's");
        // Steps 5..8, each loss as the straight run wrote it.
        const QStringList straight = read_lines(straight_csv), resumed = read_lines(csv);
        QCOMPARE(straight.size(), 1 + 8);
        QCOMPARE(resumed.size(), 1 + 4);
        for (int i = 1; i <= 4; ++i) {
            QCOMPARE(resumed[i].section(',', 2, 2), QString::number(4 + i));
            QCOMPARE(resumed[i].section(',', 4, 4), straight[4 + i].section(',', 4, 4));
        }
        const QJsonObject log = read_json(json);
        const QJsonObject config = log["config"].toObject();
        QCOMPARE(config["policy"].toString(), QString("mixed_fp16"));
        QCOMPARE(config["optimizer"].toObject()["type"].toString(), QString("adam"));
        QCOMPARE(config["epochs"].toInt(), 2);
        QCOMPARE(config["model"].toObject()["name"].toString(), QString("tiny"));
        bool said = false;
        for (const QJsonValue& e : log["events"].toArray())
            said = said || e.toObject()["message"].toString().contains("resumed from checkpoint '" +
                                                                       ck + "' at step 4");
        QVERIFY2(said, "the log should say the run resumed, from which file and step");

        r = run({"train", "--help"});
        QVERIFY(r.out.contains("--save-checkpoint") && r.out.contains("--resume"));
        r = run({"compare", "--help"});
        QVERIFY(!r.out.contains("--resume"));
    }

    void runConfigUnderOptions()
    {
        // --run gives the config; options on the command line win over it.
        const QString run_file = m_dir.filePath("run.json");
        write(run_file, R"({"format": "mixlab-run/1",
            "dataset": {"name": "synthetic", "synthetic_train": 256, "synthetic_test": 64},
            "policy": "mixed_fp16", "batch_size": 16, "steps": 6, "seed": 7, "device": "cpu",
            "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.5}})");
        const QString json = m_dir.filePath("run-log.json");
        const CliResult r = run({"train", "--model", m_tiny, "--run", run_file, "--batch", "32",
                                 "--clip", "0.25", "--log-json", json});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        const QJsonObject config = read_json(json)["config"].toObject();
        QCOMPARE(config["batch_size"].toInt(), 32);                   // the option
        QCOMPARE(config["policy"].toString(), QString("mixed_fp16")); // the file
        QCOMPARE(config["steps"].toInt(), 6);
        QCOMPARE(config["seed"].toInteger(), qint64(7));
        QCOMPARE(config["optimizer"].toObject()["momentum"].toDouble(), 0.5);
        QCOMPARE(config["optimizer"].toObject()["clip_norm"].toDouble(), 0.25); // the option
        QCOMPARE(read_json(json)["steps"].toArray().size(), 6);
    }

    void compareWritesLogs()
    {
        const QString json = m_dir.filePath("compare.json"), csv = m_dir.filePath("compare.csv");
        const CliResult r =
            run({"compare", "--policies", "fp32,mixed_fp16", "--model", m_tiny, "--dataset",
                 "synthetic", "--synthetic-size", "512", "--steps", "20", "--device", "cpu",
                 "--batch", "32", "--log-json", json, "--log-csv", csv});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("speedup"), qPrintable(r.out));
        QVERIFY(r.out.contains("fp32"));
        QVERIFY(r.out.contains("mixed_fp16"));
        QVERIFY(r.err.contains("[mixed_fp16]"));

        const QJsonObject log = read_json(json);
        QCOMPARE(log["format"].toString(), QString("mixlab-log/1"));
        QCOMPARE(log["kind"].toString(), QString("compare"));
        QVERIFY(log.contains("environment"));
        const QJsonArray runs = log["runs"].toArray();
        QCOMPARE(runs.size(), 2);
        const QStringList policies = {"fp32", "mixed_fp16"};
        for (int i = 0; i < 2; ++i) {
            const QJsonObject run = runs[i].toObject();
            QCOMPARE(run["policy"].toString(), policies[i]);
            QCOMPARE(run["config"].toObject()["policy"].toString(), policies[i]);
            const QJsonArray steps = run["steps"].toArray();
            QCOMPARE(steps.size(), 20);
            for (const QString& key : k_step_keys) QVERIFY(steps.last().toObject().contains(key));
            QCOMPARE(run["summary"].toObject()["steps"].toInt(), 20);
        }
        // mixed_fp16 scales its loss (dynamic by default); fp32 does not.
        QCOMPARE(runs[0].toObject()["summary"].toObject()["final_loss_scale"].toDouble(), 1.0);
        QVERIFY(runs[1].toObject()["summary"].toObject()["final_loss_scale"].toDouble() > 1.0);

        const QStringList lines = read_lines(csv);
        QCOMPARE(lines.size(), 1 + 2 * 20);
        QCOMPARE(lines.filter(",mixed_fp16,").size(), 20);
    }

    // Out of memory at the CPU backend's 20th training step (its test hook,
    // core/src/backends/fault_injection.h): in lockstep that is mixed_fp16's 10th. That run
    // ends alone, as in the app (tests/gui/tst_run_faults.cpp; tst_cli_agreement compares
    // the two logs): fp32 trains its 40 steps, the log holds both runs with the failed one's
    // error, stderr names it, the exit status is 1.
    void compareRunFailsAlone()
    {
        const QString json = m_dir.filePath("failing.json"), csv = m_dir.filePath("failing.csv");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("MIXLAB_FAULT_OOM_AT_STEP", "20");
        const CliResult r =
            run({"compare", "--policies", "fp32,mixed_fp16", "--model", m_tiny, "--dataset",
                 "synthetic", "--synthetic-size", "512", "--steps", "40", "--device", "cpu",
                 "--batch", "32", "--log-json", json, "--log-csv", csv},
                env);
        QVERIFY2(r.code == 1, qPrintable(details(r)));
        QVERIFY2(r.err.contains("mixlab-cli compare: the mixed_fp16 run failed: out of memory at "
                                "step 10"),
                 qPrintable(r.err));
        QVERIFY2(r.out.contains("speedup"), qPrintable(r.out)); // the table, with the survivor
        QVERIFY2(r.out.contains("failed"), qPrintable(r.out));

        const QJsonArray runs = read_json(json)["runs"].toArray();
        QCOMPARE(runs.size(), 2);
        const QJsonObject ok = runs[0].toObject(), failed = runs[1].toObject();
        QCOMPARE(ok["steps"].toArray().size(), 40);
        QCOMPARE(ok["summary"].toObject()["steps"].toInt(), 40);
        QCOMPARE(failed["steps"].toArray().size(), 9); // every step before the fault
        QVERIFY(failed["summary"].isNull());
        const QJsonObject error = failed["events"].toArray().last().toObject();
        QCOMPARE(error["kind"].toString(), QString("error"));
        QCOMPARE(error["step"].toInt(), 10);
        QVERIFY2(error["message"].toString().contains("batch size 32"),
                 qPrintable(error["message"].toString()));
        QCOMPARE(read_lines(csv).size(), 1 + 40 + 9);
    }

    // The synthetic test split is the engine's rule (synthetic_test_size: a fifth, rounded
    // up): 512 training samples come with 103 test samples (the app's too:
    // tests/gui/tst_cli_agreement.cpp).
    void syntheticSplitFollowsTheEngine()
    {
        const CliResult r =
            run({"train", "--model", m_tiny, "--dataset", "synthetic", "--synthetic-size", "512",
                 "--steps", "2", "--device", "cpu", "--batch", "32"});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.err.contains("512 training, 103 test samples"), qPrintable(r.err));
    }

    // maxbatch on a RunGroup: synthetic data sized by the engine to 4x --limit (max_batch.h),
    // every batch up to the limit fits the CPU, and the JSON says so.
    void maxbatchSearchesOnTheGroup()
    {
        const QString json = m_dir.filePath("maxbatch.json");
        const CliResult r =
            run({"maxbatch", "--policies", "fp32,mixed_fp16", "--model", m_tiny, "--dataset",
                 "synthetic", "--device", "cpu", "--start", "8", "--limit", "32", "--warmup", "0",
                 "--timed-steps", "1", "--json", json});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("128 training samples (sized to 4x --limit"), qPrintable(r.out));
        QVERIFY2(r.err.contains("maxbatch mixed_fp16: batch 32 fits"), qPrintable(r.err));
        const QJsonObject j = read_json(json);
        QCOMPARE(j["format"].toString(), QString("mixlab-maxbatch/1"));
        QCOMPARE(j["training_samples"].toInt(), 128);
        QVERIFY(j["complete"].toBool());
        const QJsonArray policies = j["policies"].toArray();
        QCOMPARE(policies.size(), 2);
        for (const QJsonValue& p : policies) {
            QCOMPARE(p.toObject()["largest_fit"].toInt(), 32);
            QVERIFY(p.toObject()["reached_limit"].toBool());
        }
    }

    void summarySeedMlp()
    {
        const QString model = QStringLiteral(MIXLAB_SOURCE_DIR "/resources/models/seed-mlp.json");
        const CliResult r =
            run({"summary", "--model", model, "--input", "32x32x3", "--classes", "10", "--json"});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QJsonParseError error{};
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8(), &error).object();
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
        QCOMPARE(j["total_params"].toInteger(), qint64(12230010));
        QCOMPARE(j["input"].toString(), QString("32x32x3"));
        const QJsonArray layers = j["layers"].toArray();
        QVERIFY(layers.size() >= 4);
        QCOMPARE(layers[1].toObject()["params"].toInteger(), qint64(3072 * 3000 + 3000));
        QCOMPARE(layers[1].toObject()["output_shape"].toString(), QString("3000"));
        QVERIFY(layers[1].toObject()["tensor_core_friendly"].toBool());
        QVERIFY(!layers[3].toObject()["tensor_core_friendly"].toBool()); // 10 units

        const CliResult table =
            run({"summary", "--model", model, "--input", "32x32x3", "--classes", "10"});
        QCOMPARE(table.code, 0);
        QVERIFY2(table.out.contains("12230010"), qPrintable(table.out));
    }

    void corpusReportsAFolder()
    {
        // 9 training tokens (7 words and 2 <eos>), 6 distinct; "z" and "q" are unseen in train.
        const QString folder = m_dir.filePath("words");
        QVERIFY(QDir().mkpath(folder));
        write(folder + "/train.txt", "a b a\nb c d e\n");
        write(folder + "/valid.txt", "a z\n");
        write(folder + "/test.txt", "q e\n");
        const CliResult r = run({"corpus", folder, "--json"});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["name"].toString(), QString("words"));
        QCOMPARE(j["vocab_size"].toInt(), 7); // a b <eos> c d e, then <unk> for z
        QCOMPARE(j["tokens"].toObject()["train"].toInt(), 9);
        QCOMPARE(j["tokens"].toObject()["test"].toInt(), 3);
        QCOMPARE(j["oov"].toObject()["valid"].toInt(), 1);
        QCOMPARE(j["oov"].toObject()["test"].toInt(), 1);
        // test = <unk> (0 + 1), e (1 + 1), <eos> (2 + 1), each over 9 + 7 = 16.
        const double expected =
            std::exp(-(std::log(1.0 / 16) + std::log(2.0 / 16) + std::log(3.0 / 16)) / 3);
        QVERIFY(qFuzzyCompare(j["unigram_perplexity"].toObject()["test"].toDouble(), expected));
        QVERIFY(j["entropy_bits"].isNull());
        QCOMPARE(j["sample"].toString(), QString("<unk> e <eos>"));

        const CliResult table = run({"corpus", folder});
        QVERIFY2(table.code == 0, qPrintable(details(table)));
        QVERIFY2(table.out.contains("vocabulary          7 words"), qPrintable(table.out));
        QVERIFY(!table.out.contains("entropy rate"));
    }

    void corpusReportsSyntheticText()
    {
        const QStringList args = {
            "corpus", "--seed", "3", "synthetic-text", "--vocab", "200", "--synthetic-tokens",
            "5000",   "--json"};
        const CliResult r = run(args);
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(j["name"].toString(), QString("synthetic-text"));
        QCOMPARE(j["seed"].toInt(), 3);
        QCOMPARE(j["vocab_size"].toInt(), 200);
        QCOMPARE(j["tokens"].toObject()["train"].toInt(), 5000);
        QCOMPARE(j["tokens"].toObject()["valid"].toInt(), 500);
        const double bits = j["entropy_bits"].toDouble();
        QVERIFY(bits > 0 && bits < 3); // 8 successors per context: at most 3 bits
        QVERIFY(qFuzzyCompare(j["perplexity_floor"].toDouble(), std::exp2(bits)));
        QVERIFY(j["unigram_perplexity"].toObject()["test"].toDouble() > std::exp2(bits));
        QCOMPARE(run(args).out, r.out); // deterministic by seed

        const CliResult table = run({"corpus", "synthetic-text", "--synthetic-tokens", "1000"});
        QVERIFY2(table.code == 0, qPrintable(details(table)));
        QVERIFY2(table.out.contains("perplexity floor"), qPrintable(table.out));
        QVERIFY(table.err.isEmpty());

        const CliResult help = run({"corpus", "--help"});
        QCOMPARE(help.code, 0);
        QVERIFY(help.out.startsWith("usage: mixlab-cli corpus FOLDER|synthetic-text"));
    }

    // --write: the synthetic text as a corpus folder that reads back with the same words
    // (plus the <eos> of each written line end); never over a corpus already there.
    void corpusWritesAFolder()
    {
        const QString folder = m_dir.filePath("written");
        const CliResult w = run({"corpus", "synthetic-text", "--vocab", "200", "--synthetic-tokens",
                                 "3000", "--write", folder, "--json"});
        QVERIFY2(w.code == 0, qPrintable(details(w)));
        QFile train(folder + "/train.txt");
        QVERIFY(train.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = train.readAll().split('\n');
        QCOMPARE(lines.size(), 4); // 1,000 words per line, then the empty tail after the last \n
        QCOMPARE(lines[0].split(' ').size(), 1000);
        const QJsonObject synthetic = QJsonDocument::fromJson(w.out.toUtf8()).object();
        const CliResult r = run({"corpus", folder, "--json"});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        const QJsonObject back = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(back["tokens"].toObject()["train"].toInt(), 3000 + 3); // an <eos> per line
        QCOMPARE(back["oov"].toObject()["test"].toInt() <= 10, true);
        QVERIFY2(back["sample"].toString().startsWith(synthetic["sample"].toString().left(20)),
                 qPrintable(back["sample"].toString()));

        const CliResult again =
            run({"corpus", "synthetic-text", "--synthetic-tokens", "1000", "--write", folder});
        QCOMPARE(again.code, 2);
        QVERIFY2(again.err.contains("train.txt' exists"), qPrintable(again.err));
    }

    // The seed model as Keras 3 writes it imports to seed-mlp.json, and the policy its
    // layers ran under is printed as the one to train with.
    void importWritesTheSeed()
    {
        const QString out = m_dir.filePath("imported-seed.json");
        const CliResult r = run(
            {"import", QStringLiteral(MIXLAB_SOURCE_DIR) + "/tests/data/keras/seed-mlp.keras3.json",
             "-o", out});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QFile written(out),
            seed(QStringLiteral(MIXLAB_SOURCE_DIR) + "/resources/models/seed-mlp.json");
        QVERIFY(written.open(QIODevice::ReadOnly) && seed.open(QIODevice::ReadOnly));
        QCOMPARE(written.readAll(), seed.readAll());
        QVERIFY2(r.out.contains("--policy mixed_fp16"), qPrintable(r.out));
        QVERIFY2(r.out.contains("Keras's mixed_float16"), qPrintable(r.out));
        QVERIFY2(r.out.contains("--input 32x32x3"), qPrintable(r.out));
        QVERIFY2(r.err.isEmpty(), qPrintable(r.err));

        const CliResult help = run({"import", "--help"});
        QVERIFY2(help.code == 0, qPrintable(details(help)));
        QVERIFY2(help.out.startsWith("usage: mixlab-cli import FILE -o MODEL.json"),
                 qPrintable(help.out));
    }

    // A refused layer: exit 2, one line naming the layer, its class and what MixLab
    // supports, and no file written.
    void importRefusesAndWritesNothing()
    {
        const QString keras = m_dir.filePath("keras-dilated.json");
        write(keras, R"({"class_name": "Sequential", "config": {"name": "k", "layers": [
            {"class_name": "Conv2D", "config": {"name": "conv", "filters": 4,
             "kernel_size": [3, 3], "dilation_rate": [2, 2]}}]},
            "keras_version": "2.13.1", "backend": "tensorflow"})");
        const QString out = m_dir.filePath("refused.json");
        const CliResult r = run({"import", keras, "-o", out});
        QVERIFY2(r.code == 2, qPrintable(details(r)));
        QVERIFY2(r.err.startsWith("mixlab-cli import: "), qPrintable(r.err));
        QVERIFY2(r.err.contains("layer \"conv\" (Conv2D)"), qPrintable(r.err));
        QVERIFY2(r.err.contains("dilation_rate 1 only"), qPrintable(r.err));
        QCOMPARE(r.err.trimmed().count('\n'), 0);
        QVERIFY(r.out.isEmpty());
        QVERIFY(!QFile::exists(out));
        QVERIFY(!QFile::exists(out + ".tmp"));
    }

    void summaryDefaultsSaySo()
    {
        const CliResult r = run({"summary", "--model", m_tiny});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.err.contains("32x32x3"), qPrintable(r.err));
        QVERIFY(r.out.contains("input 32x32x3, 10 classes"));
    }

    // numerics: a pure fp16 run sampled every 5 steps prints every layer with its kinds and
    // the updates fp16 weights lost; a log without numerics, a missing log and no log at
    // all are bad input (exit 2, one line naming what to do).
    void numericsSummarisesALog()
    {
        const QString log = m_dir.filePath("numerics.json");
        const CliResult t =
            run(expand({"train", "--model", "@tiny", "--dataset", "synthetic", "--synthetic-size",
                        "512", "--steps", "20", "--device", "cpu", "--policy", "fp16",
                        "--numerics-every", "5", "--log-json", log}));
        QVERIFY2(t.code == 0, qPrintable(details(t)));
        const CliResult r = run({"numerics", log});
        QVERIFY2(r.code == 0, qPrintable(details(r)));
        QVERIFY2(r.out.contains("run 0 (fp16): 4 numerics samples, steps 5..20"),
                 qPrintable(r.out));
        for (const char* text : {"layer 1 (dense)", "layer 2 (dense)", "weights", "activations",
                                 "gradients (applied)", "fp8_e4m3", "updates lost to half-ulp"})
            QVERIFY2(r.out.contains(text), qPrintable(text + QString(" missing:\n") + r.out));
        // The lost updates per format, all four.
        static const QRegularExpression lost(
            "updates lost to half-ulp rounding by weights in fp16 [^,]+, bf16 [^,]+, "
            "fp8_e4m3 [^,]+, fp8_e5m2 \\S+");
        QVERIFY2(lost.match(r.out).hasMatch(), qPrintable(r.out));

        // --json: the same summary as one object; fp16 weights lost updates in layer 1, and
        // fp8 weights (fewer mantissa bits) lose at least as many.
        const CliResult j = run({"numerics", log, "--json"});
        QVERIFY2(j.code == 0, qPrintable(details(j)));
        QJsonParseError error;
        const QJsonObject doc = QJsonDocument::fromJson(j.out.toUtf8(), &error).object();
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(j.out));
        QCOMPARE(doc["format"].toString(), QString("mixlab-numerics/1"));
        const QJsonArray runs = doc["runs"].toArray();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0]["policy"].toString(), QString("fp16"));
        const QJsonObject summary = runs[0]["summary"].toObject();
        QCOMPARE(summary["samples"].toInt(), 4);
        const QJsonObject layer1 = summary["layers"].toArray()[0].toObject();
        QCOMPARE(layer1["path"].toString(), QString("layer 1"));
        const QJsonObject shares = layer1["lost_updates"].toObject();
        QVERIFY(shares["fp16"].toDouble() > 0);
        QVERIFY(shares["fp8_e4m3"].toDouble() >= shares["fp16"].toDouble());
        QCOMPARE(layer1["lost_updates_fp16_by_step"].toArray().size(), 4);
        for (const char* kind : {"weights", "activations", "gradients"}) {
            const QJsonObject k = layer1[kind].toObject();
            QVERIFY2(k["values"].toDouble() > 0, kind);
            for (const char* f : {"fp16", "bf16", "fp8_e4m3", "fp8_e5m2"})
                QVERIFY2(k["formats"][f]["flush"].isDouble(), kind);
        }
    }

    void numericsBadInput()
    {
        const QString plain = m_dir.filePath("plain.json");
        const CliResult t =
            run(expand({"train", "--model", "@tiny", "--dataset", "synthetic", "--synthetic-size",
                        "256", "--steps", "4", "--device", "cpu", "--log-json", plain}));
        QVERIFY2(t.code == 0, qPrintable(details(t)));
        const CliResult none = run({"numerics", plain});
        QCOMPARE(none.code, 2);
        QVERIFY2(none.err.contains("holds no numerics: train with --numerics-every N"),
                 qPrintable(details(none)));
        const CliResult missing = run({"numerics", m_dir.filePath("absent.json")});
        QCOMPARE(missing.code, 2);
        QVERIFY2(missing.err.contains("cannot read"), qPrintable(details(missing)));
        const CliResult nothing = run({"numerics"});
        QCOMPARE(nothing.code, 2);
        QVERIFY2(nothing.err.contains("name a run log"), qPrintable(details(nothing)));
        const CliResult model = run(expand({"numerics", "@tiny"}));
        QCOMPARE(model.code, 2);
        QVERIFY2(model.err.contains("tiny.json"), qPrintable(details(model)));
        const CliResult negative =
            run(expand({"train", "--model", "@tiny", "--device", "cpu", "--numerics-every", "-1"}));
        QCOMPARE(negative.code, 2);
        QVERIFY2(negative.err.contains("--numerics-every"), qPrintable(details(negative)));
    }
};

QTEST_APPLESS_MAIN(TestCli)
#include "tst_cli.moc"
