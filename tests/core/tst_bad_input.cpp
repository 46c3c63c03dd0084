// Bad input to mixlab-cli, one row each: broken model and run files, bad sizes and
// options, damaged dataset files. Every row must end with its exit code, a short stderr
// naming the problem, no crash, and every file already in the folder left as it was.
#include "keras_archive_writer.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

#include <sys/resource.h>
#include <unistd.h>

namespace {

struct CliResult {
    int code = -1;
    bool normal_exit = false;
    QString out, err;
};

// Sizes of the IDX files written: small, so every row runs in a fraction of a second.
constexpr int k_side = 8;
constexpr int k_train = 64, k_test = 16;
constexpr int k_cifar_record = 1 + 3072;

// Text a crash or a sanitizer leaves on stderr; none may appear even on bad input.
const QStringList k_crash_text = {
    "terminate called",           "Segmentation fault", "Aborted",     "AddressSanitizer",
    "UndefinedBehaviorSanitizer", "runtime error:",     "core dumped", "what():"};

QByteArray be32(quint32 v)
{
    QByteArray b(4, '\0');
    for (int i = 0; i < 4; ++i) b[i] = char((v >> (24 - 8 * i)) & 0xff);
    return b;
}

// Random bytes: all-zero images would hide a reader that skips them.
QByteArray random_bytes(QRandomGenerator& rng, qsizetype n, int below = 256)
{
    QByteArray b(n, '\0');
    for (qsizetype i = 0; i < n; ++i) b[i] = char(rng.bounded(below));
    return b;
}

} // namespace

class TestBadInput : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QRandomGenerator m_rng{20260711};

    QString path(const QString& name) const { return m_dir.filePath(name); }

    void write(const QString& name, const QByteArray& bytes)
    {
        QDir().mkpath(QFileInfo(path(name)).absolutePath());
        QFile f(path(name));
        QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(name));
        QCOMPARE(f.write(bytes), bytes.size());
    }

    QByteArray model(const QByteArray& layers, const QByteArray& format = "mixlab-model/1")
    {
        return "{\"format\": \"" + format + "\", \"name\": \"m\", \"layers\": [" + layers + "]}";
    }

    // An IDX folder of k_side x k_side images; `damage` edits the train-images bytes.
    void write_idx(const QString& folder, const std::function<void(QByteArray&)>& damage)
    {
        for (const auto& [prefix, n] :
             {std::pair{QString("train"), k_train}, {QString("t10k"), k_test}}) {
            QByteArray images = be32(0x803) + be32(n) + be32(k_side) + be32(k_side) +
                                random_bytes(m_rng, qsizetype(n) * k_side * k_side);
            const QByteArray labels = be32(0x801) + be32(n) + random_bytes(m_rng, n, 10);
            if (prefix == "train") damage(images);
            write(folder + "/" + prefix + "-images-idx3-ubyte", images);
            write(folder + "/" + prefix + "-labels-idx1-ubyte", labels);
        }
    }

    // Path -> hash of every file under the test folder: what "nothing saved changed" means.
    QMap<QString, QByteArray> snapshot() const
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

    CliResult run(const QStringList& args, qint64 address_space_cap)
    {
        QProcess p;
        if (address_space_cap > 0) {
            // The row's model asks for more host memory than the cap: the engine must say
            // so, where without the cap it would take gigabytes from the shared machine.
            p.setChildProcessModifier([address_space_cap] {
                const rlimit lim{rlim_t(address_space_cap), rlim_t(address_space_cap)};
                setrlimit(RLIMIT_AS, &lim);
            });
        }
        p.start(QStringLiteral(MIXLAB_CLI_PATH), args);
        CliResult r;
        if (!p.waitForStarted(10000) || !p.waitForFinished(30000)) {
            p.kill();
            p.waitForFinished();
            r.err = "did not start or finish in 30 s: " + p.errorString();
            return r;
        }
        r.normal_exit = p.exitStatus() == QProcess::NormalExit;
        r.code = r.normal_exit ? p.exitCode() : -1;
        r.out = QString::fromUtf8(p.readAllStandardOutput());
        r.err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }

    QStringList expand(QStringList args) const
    {
        for (QString& a : args) a.replace("@", m_dir.path() + "/");
        return args;
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
        const QByteArray head = R"({"type": "flatten"}, )";
        write("tiny.json", model(head + R"({"type": "dense", "units": 16, "activation": "relu"},
                                           {"type": "dense", "units": 10})"));
        write("lm.json", model(R"({"type": "embedding", "vocab": "dataset", "dim": 8},
                                  {"type": "lstm", "hidden": 8},
                                  {"type": "dense", "units": "vocab", "tie_weights": true})"));
        write("lm-untied-dim.json", model(R"({"type": "embedding", "vocab": "dataset", "dim": 8},
                       {"type": "lstm", "hidden": 16},
                       {"type": "dense", "units": "vocab", "tie_weights": true})"));
        write("malformed.json", R"({"format": "mixlab-model/1", "layers": [{"type": "flatten"},)");
        write("empty.json", "  \n");
        write("array.json", "[1, 2, 3]");
        write("unknown-layer.json", model(head + R"({"type": "bogus_layer", "units": 10})"));
        write("units-zero.json", model(head + R"({"type": "dense", "units": 0})"));
        write("units-negative.json", model(head + R"({"type": "dense", "units": -16})"));
        write("units-1e9.json", model(head + R"({"type": "dense", "units": 1000000000},
                                                {"type": "dense", "units": 10})"));
        write("units-huge-number.json", model(head + R"({"type": "dense", "units": 1e999})"));
        write("filters-zero.json", model(R"({"type": "conv2d", "filters": 0, "kernel": 3}, )" +
                                         head + R"({"type": "dense", "units": 10})"));
        write("kernel-negative.json", model(R"({"type": "conv2d", "filters": 4, "kernel": -3}, )" +
                                            head + R"({"type": "dense", "units": 10})"));
        write("no-layers.json", model(""));
        write("future-model.json",
              model(head + R"({"type": "dense", "units": 10})", "mixlab-model/9"));
        // 3072 inputs (synthetic is 32x32x3) x 600000 units: under the per-layer limit of
        // 2^31 weights, but 7 GB of fp32 weights alone.
        write("host-memory.json", model(head + R"({"type": "dense", "units": 600000},
                                                  {"type": "dense", "units": 10})"));
        write("unreadable.json", model(head + R"({"type": "dense", "units": 10})"));
        QDir().mkpath(path("model-dir.json"));
        if (::geteuid() != 0) QVERIFY(QFile::setPermissions(path("unreadable.json"), {}));

        const QByteArray run_head = R"({"format": "mixlab-run/1", "device": "cpu", )";
        write("run-malformed.json", run_head + R"("batch_size": 8,)");
        write("run-future.json", R"({"format": "mixlab-run/9", "batch_size": 8})");
        write("run-no-format.json", R"({"batch_size": 8})");
        write("run-batch-zero.json", run_head + R"("batch_size": 0})");
        write("run-batch-huge.json", run_head + R"("batch_size": 10000000})");
        write("run-epochs-zero.json", run_head + R"("epochs": 0})");
        write("run-lr-negative.json", run_head + R"("optimizer": {"type": "sgd", "lr": -0.1}})");
        write("run-lr-string-nan.json", run_head + R"("optimizer": {"type": "sgd", "lr": "nan"}})");
        write("run-lr-inf.json", run_head + R"("optimizer": {"type": "sgd", "lr": 1e999}})");
        write("run-clip-negative.json",
              run_head + R"("optimizer": {"type": "sgd", "clip_norm": -1}})");
        write("run-unknown-field.json", run_head + R"("batchsize": 8})");
        write("run-split-fp16.json",
              run_head +
                  R"("policy": "mixed_fp16", "optimizer": {"master_weights": "bf16_split"}})");
        write("run-fp8-history-zero.json",
              run_head + R"("policy": "mixed_fp8", "fp8": {"amax_history": 0}})");
        write("run-fp8-margin-fraction.json", run_head + R"("fp8": {"margin": 1.5}})");

        write_idx("idx-magic", [](QByteArray& b) { b.replace(0, 4, be32(0x00001234)); });
        write_idx("idx-swapped", [](QByteArray& b) { b.replace(0, 4, be32(0x801)); });
        write_idx("idx-truncated", [](QByteArray& b) { b.chop(b.size() / 2); });
        write_idx("idx-short-header", [](QByteArray& b) { b.truncate(10); });
        write_idx("idx-file-is-dir", [](QByteArray&) {});
        QVERIFY(QFile::remove(path("idx-file-is-dir/t10k-labels-idx1-ubyte")));
        QVERIFY(QDir().mkpath(path("idx-file-is-dir/t10k-labels-idx1-ubyte")));

        // CIFAR-10: five whole training batches, a test batch cut 100 bytes into a record.
        auto cifar = [&](int records) {
            QByteArray b = random_bytes(m_rng, qsizetype(records) * k_cifar_record);
            for (int r = 0; r < records; ++r)
                b[qsizetype(r) * k_cifar_record] = char(m_rng.bounded(10));
            return b;
        };
        for (int i = 1; i <= 5; ++i)
            write(QString("cifar-truncated/data_batch_%1.bin").arg(i), cifar(4));
        write("cifar-truncated/test_batch.bin", cifar(2).left(k_cifar_record + 100));
        write("not-a-folder", "a file where the dataset folder belongs\n");

        // Word-level corpora: each folder holds the three splits, one of them damaged.
        const QByteArray words = "the cat sat on the mat\nand the dog ran\n";
        auto corpus = [&](const QString& folder, const QByteArray& train, const QByteArray& valid,
                          const QByteArray& test) {
            for (const auto& [name, text] : {std::pair{QString("train.txt"), train},
                                             {QString("valid.txt"), valid},
                                             {QString("test.txt"), test}})
                if (!text.isNull()) write(folder + "/" + name, text);
        };
        corpus("corpus-ok", words, words, words);
        corpus("corpus-missing-valid", words, QByteArray(), words);
        corpus("corpus-empty-test", words, words, QByteArray(""));
        corpus("corpus-nul", words, words, QByteArray("the\0cat\n", 8));
        corpus("corpus-latin1", "caf\xE9 au lait\n", words, words);
        corpus("corpus-long-line", words, QByteArray(1 << 20, 'x') + "yz\n", words);

        // Saved weights of tiny.json, cut 10 bytes short, and of a wider model.
        write("tiny-wide.json",
              model(head + R"({"type": "dense", "units": 32, "activation": "relu"},
                                                {"type": "dense", "units": 10})"));
        for (const char* m : {"tiny", "tiny-wide"}) {
            const CliResult r =
                run(expand({"train", "--model", QString("@%1.json").arg(m), "--dataset",
                            "synthetic", "--synthetic-size", "32", "--steps", "1", "--batch", "16",
                            "--device", "cpu", "--save-weights", QString("@%1.st").arg(m)}),
                    0);
            QVERIFY2(r.code == 0, qPrintable(details(r)));
        }
        QFile tiny(path("tiny.st"));
        QVERIFY(tiny.open(QIODevice::ReadOnly));
        write("truncated.st", tiny.readAll().chopped(10));
        // A checkpoint of tiny.json after 2 steps; cut short; and its tensors under a header
        // whose model is tiny-wide.json (a checkpoint whose model and tensors disagree).
        {
            const CliResult r =
                run(expand({"train", "--model", "@tiny.json", "--dataset", "synthetic",
                            "--synthetic-size", "64", "--steps", "2", "--batch", "16", "--device",
                            "cpu", "--save-checkpoint", "@tiny.ckpt"}),
                    0);
            QVERIFY2(r.code == 0, qPrintable(details(r)));
            QFile ck(path("tiny.ckpt"));
            QVERIFY(ck.open(QIODevice::ReadOnly));
            const QByteArray bytes = ck.readAll();
            write("truncated.ckpt", bytes.chopped(6));
            quint64 n = 0;
            for (int i = 7; i >= 0; --i) n = (n << 8) | quint8(bytes[i]);
            QJsonObject header = QJsonDocument::fromJson(bytes.mid(8, qsizetype(n))).object();
            QJsonObject meta = header["__metadata__"].toObject();
            QFile wide(path("tiny-wide.json"));
            QVERIFY(wide.open(QIODevice::ReadOnly));
            meta["model"] = QString::fromUtf8(wide.readAll());
            header["__metadata__"] = meta;
            QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
            while (json.size() % 8) json += ' ';
            QByteArray len(8, '\0');
            for (int i = 0; i < 8; ++i) len[i] = char((quint64(json.size()) >> (8 * i)) & 0xff);
            write("other-model.ckpt", len + json + bytes.mid(8 + qsizetype(n)));
        }
        // Keras models for mixlab-cli import (Keras 2's to_json() form), and a spec an
        // earlier import wrote, which a refused import must leave as it is.
        auto keras = [](const QByteArray& layers) {
            return R"({"class_name": "Sequential", "config": {"name": "k", "layers": [)" + layers +
                   R"(]}, "keras_version": "2.13.1", "backend": "tensorflow"})";
        };
        write("keras-gru.json", keras(R"({"class_name": "GRU", "config": {"name": "gru",
              "units": 8}}, {"class_name": "Dense", "config": {"name": "d", "units": 10}})"));
        write("keras-dilated.json",
              keras(R"({"class_name": "Conv2D", "config": {"name": "conv", "filters": 4,
                       "kernel_size": [3, 3], "dilation_rate": [2, 2]}})"));
        write("keras-malformed.json", keras("").left(40));
        write("keras-layer.json", R"({"class_name": "Dense", "config": {"layers": []}})");
        QFile seed(QStringLiteral(MIXLAB_SOURCE_DIR) + "/tests/data/keras/seed-mlp.keras2.json");
        QVERIFY(seed.open(QIODevice::ReadOnly));
        write("keras-seed.json", seed.readAll());
        write("kept-model.json", model(R"({"type": "flatten"}, {"type": "dense", "units": 10})"));
        // .keras archives (zips written with libzip): text named .keras, a whole archive cut
        // in half, a zip without config.json, one with a malformed config, one tf.keras 2.13
        // wrote (another weights layout), and one whose model.weights.h5 lacks a layer's
        // variables.
        write("keras-text.keras", keras(""));
        const std::string seed3 = [] {
            QFile f(QStringLiteral(MIXLAB_SOURCE_DIR) + "/tests/data/keras/seed-mlp.keras3.json");
            return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
        }();
        QVERIFY(!seed3.empty());
        const auto zip = [&](const char* name,
                             const std::vector<std::pair<std::string, std::string>>& members) {
            mixlab::test::write_zip(path(name).toStdString(), members);
        };
        zip("keras-seed.keras", {{"metadata.json", "{}"}, {"config.json", seed3}});
        QFile whole(path("keras-seed.keras"));
        QVERIFY(whole.open(QIODevice::ReadOnly));
        const QByteArray archive = whole.readAll();
        write("keras-cut.keras", archive.left(archive.size() / 2));
        zip("keras-noconfig.keras", {{"metadata.json", "{}"}});
        zip("keras-213.keras",
            {{"metadata.json",
              R"({"keras_version": "2.13.1", "date_saved": "2023-08-01@10:00:00"})"},
             {"config.json", seed3}});
        zip("keras-badconfig.keras", {{"config.json", keras("").left(40).toStdString()}});
        zip("keras-noweights.keras",
            {{"config.json", seed3},
             {"model.weights.h5", mixlab::test::h5_bytes({{"layers/dense/vars/0", {1}, {0.0f}}})}});

        // Already saved: a log from an earlier run that failing runs must not touch.
        write("kept-log.json", R"({"format": "mixlab-log/1", "kind": "train", "earlier": true})");
    }

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("fragment");  // stderr must name this
        QTest::addColumn<qint64>("memory_cap"); // RLIMIT_AS in bytes, 0 for none

        // Valid apart from each row's change, and writing over kept-log.json: were a check
        // missing, it would train briefly, exit 0 and rewrite that log, failing the row.
        const QStringList train = {"train",     "--model",          "@tiny.json",    "--dataset",
                                   "synthetic", "--synthetic-size", "256",           "--steps",
                                   "3",         "--device",         "cpu",           "--batch",
                                   "16",        "--log-json",       "@kept-log.json"};
        auto with = [&](QStringList base, const QStringList& extra) {
            for (qsizetype i = 0; i < extra.size(); ++i) {
                if (!extra[i].startsWith("--")) continue;
                const qsizetype at = base.indexOf(extra[i].section('=', 0, 0));
                if (at >= 0) base.remove(at, 2); // the row's value replaces the base's
            }
            return base + extra;
        };
        auto model = [&](const char* row, const char* file, const char* fragment) {
            QTest::newRow(row) << with(train, {"--model", QString("@") + file}) << 2
                               << QString(fragment) << qint64(0);
        };
        model("model: malformed JSON", "malformed.json", "malformed.json");
        model("model: blank file", "empty.json", "is empty");
        model("model: not an object", "array.json", "JSON object");
        model("model: unknown layer type", "unknown-layer.json", "bogus_layer");
        model("model: zero units", "units-zero.json", "\"units\"");
        model("model: negative units", "units-negative.json", "\"units\"");
        model("model: 10^9-unit dense layer", "units-1e9.json", "1000000000");
        model("model: units 1e999", "units-huge-number.json", "units-huge-number.json");
        model("model: zero filters", "filters-zero.json", "\"filters\"");
        model("model: negative kernel", "kernel-negative.json", "kernel");
        model("model: no layers", "no-layers.json", "no layers");
        model("model: future format", "future-model.json", "mixlab-model/9");
        model("model: a folder", "model-dir.json", "model-dir.json");
        model("model: missing file", "none.json", "none.json");
        model("model: unreadable file", "unreadable.json", "unreadable.json");
        // Fits the per-layer limit but not the host: a run-time failure, exit 1, whose
        // message names the memory. Capped at 3 GB so the test never takes 7 GB.
        QTest::newRow("model: more host memory than there is")
            << with(train, {"--model", "@host-memory.json"}) << 1 << QString("memory")
            << qint64(3) * 1024 * 1024 * 1024;

        auto run = [&](const char* row, const char* file, const char* fragment) {
            QStringList args = with(train, {"--run", QString("@") + file});
            args.remove(args.indexOf("--batch"), 2); // so the file's batch_size counts
            QTest::newRow(row) << args << 2 << QString(fragment) << qint64(0);
        };
        run("run: malformed JSON", "run-malformed.json", "run-malformed.json");
        run("run: future format", "run-future.json", "mixlab-run/9");
        run("run: no format", "run-no-format.json", "\"format\"");
        run("run: batch_size 0", "run-batch-zero.json", "batch_size");
        run("run: batch_size 10^7", "run-batch-huge.json", "batch_size");
        run("run: lr negative", "run-lr-negative.json", "lr");
        run("run: lr a string", "run-lr-string-nan.json", "lr");
        run("run: lr 1e999", "run-lr-inf.json", "run-lr-inf.json");
        run("run: clip_norm negative", "run-clip-negative.json", "clip_norm");
        run("run: unknown field", "run-unknown-field.json", "batchsize");
        run("run: split masters under mixed_fp16", "run-split-fp16.json",
            "\"optimizer.master_weights\": \"bf16_split\" splits fp32 masters behind bfloat16 "
            "weights, so it applies to the mixed_bf16 policy only");
        run("run: fp8 amax_history 0", "run-fp8-history-zero.json",
            "\"fp8.amax_history\" must be between 1 and 1024 steps, got 0");
        run("run: fp8 margin 1.5", "run-fp8-margin-fraction.json",
            "\"fp8.margin\" must be an integer, got 1.5");
        run("run: missing file", "none-run.json", "none-run.json");
        run("run: a folder", "model-dir.json", "model-dir.json");
        {
            QStringList args = with(train, {"--run", "@run-epochs-zero.json"});
            args.remove(args.indexOf("--steps"), 2); // steps would stand in for epochs
            QTest::newRow("run: epochs 0") << args << 2 << QString("epochs") << qint64(0);
        }

        auto option = [&](const char* row, const QStringList& extra, const char* fragment) {
            QTest::newRow(row) << with(train, extra) << 2 << QString(fragment) << qint64(0);
        };
        option("--batch 0", {"--batch", "0"}, "--batch");
        option("--batch 10^7", {"--batch", "10000000"}, "--batch");
        option("--batch -1", {"--batch=-1"}, "--batch");
        option("--lr nan", {"--lr", "nan"}, "--lr");
        option("--lr inf", {"--lr", "inf"}, "--lr");
        option("--lr 0", {"--lr", "0"}, "--lr");
        option("--clip -1", {"--clip=-1"}, "--clip");
        option("--clip inf", {"--clip", "inf"}, "--clip");
        option("--master-weights bf16_split under fp32", {"--master-weights", "bf16_split"},
               "applies to the mixed_bf16 policy only");
        option("--master-weights typo", {"--master-weights", "bf16"}, "--master-weights");
        option("--synthetic-size 0", {"--synthetic-size", "0"}, "--synthetic-size");
        option("--log-json in a missing folder", {"--log-json", "@no-such-dir/log.json"},
               "no-such-dir");
        option("--log-json is a folder", {"--log-json", "@model-dir.json"}, "--log-json");
        option("--load-weights truncated", {"--load-weights", "@truncated.st"},
               "truncated: tensor \"2.bias\" ends at byte offset");
        option("--load-weights of another model", {"--load-weights", "@tiny-wide.st"},
               "tensor \"1.weight\": expected shape [16, 3072], found [32, 3072]");
        option("--load-weights missing file", {"--load-weights", "@none.st"}, "none.st");
        option("--save-weights in a missing folder", {"--save-weights", "@no-such-dir/w.st"},
               "no-such-dir");
        option("--save-checkpoint in a missing folder",
               {"--save-checkpoint", "@no-such-dir/c.ckpt"}, "no-such-dir");
        option("--load-weights of a truncated checkpoint", {"--load-weights", "@truncated.ckpt"},
               "truncated.ckpt");

        // --resume: valid apart from each row's change (tiny.ckpt is at step 2 of 2).
        const QStringList resume = {"train", "--resume",   "@tiny.ckpt",    "--steps",
                                    "4",     "--log-json", "@kept-log.json"};
        auto resumed = [&](const char* row, const QStringList& extra, const char* fragment) {
            QTest::newRow(row) << with(resume, extra) << 2 << QString(fragment) << qint64(0);
        };
        resumed("--resume truncated", {"--resume", "@truncated.ckpt"}, "ends at byte offset");
        resumed("--resume a weights file", {"--resume", "@tiny.st"},
                "is a weights file (mixlab-weights/1), not a checkpoint");
        resumed("--resume a model file", {"--resume", "@tiny.json"}, "tiny.json");
        resumed("--resume missing file", {"--resume", "@none.ckpt"}, "none.ckpt");
        resumed("--resume tensors of another model", {"--resume", "@other-model.ckpt"},
                "tensor \"1.weight\": expected shape [32, 3072], found [16, 3072]");
        resumed("--resume at its end", {"--steps", "2"},
                "the checkpoint is at step 2 and the run ends at step 2");
        for (const QStringList& changed :
             {QStringList{"--model", "@tiny.json"}, QStringList{"--policy", "mixed_fp16"},
              QStringList{"--batch", "8"}, QStringList{"--optimizer", "adam"},
              QStringList{"--lr", "0.5"}, QStringList{"--seed", "3"},
              QStringList{"--dataset", "synthetic"}, QStringList{"--load-weights", "@tiny.st"}}) {
            const QByteArray row = ("--resume with " + changed.front()).toUtf8();
            resumed(row.constData(), changed,
                    (changed.front() + " cannot be given with --resume").toUtf8().constData());
        }
        {
            QStringList args = with(train, {"--epochs", "0"});
            args.remove(args.indexOf("--steps"), 2);
            QTest::newRow("--epochs 0") << args << 2 << QString("--epochs") << qint64(0);
        }

        auto data = [&](const char* row, const char* folder, const char* fragment) {
            QStringList args = with(train, {"--dataset", QString("@") + folder});
            args.remove(args.indexOf("--synthetic-size"), 2); // applies to synthetic only
            QTest::newRow(row) << args << 2 << QString(fragment) << qint64(0);
        };
        data("IDX: wrong magic", "idx-magic",
             "idx-magic/train-images-idx3-ubyte is not an IDX image");
        data("IDX: label magic in an image file", "idx-swapped", "swapped");
        data("IDX: truncated images", "idx-truncated", "train-images-idx3-ubyte is truncated");
        data("IDX: truncated header", "idx-short-header", "train-images-idx3-ubyte");
        data("IDX: a folder where a file belongs", "idx-file-is-dir", "t10k-labels-idx1-ubyte");
        data("CIFAR: truncated .bin", "cifar-truncated", "test_batch.bin");
        data("dataset: missing folder", "no-such-dataset", "no-such-dataset' does not exist");
        data("dataset: a file, not a folder", "not-a-folder", "not a folder");

        data("dataset: a word corpus for an image model", "corpus-ok", "word-level text corpus");

        auto corpus = [&](const char* row, const QStringList& args, const char* fragment) {
            QTest::newRow(row) << QStringList{"corpus"} + args << 2 << QString(fragment)
                               << qint64(0);
        };
        corpus("corpus: missing split", {"@corpus-missing-valid"}, "valid.txt is missing");
        corpus("corpus: empty split", {"@corpus-empty-test"}, "test.txt is empty");
        corpus("corpus: NUL byte", {"@corpus-nul"}, "test.txt is not a text file: a NUL byte");
        corpus("corpus: not UTF-8", {"@corpus-latin1"},
               "train.txt is not a text file: an invalid UTF-8");
        corpus("corpus: line over 1 MiB", {"@corpus-long-line"},
               "valid.txt: line 1 is longer than 1048576 bytes");
        corpus("corpus: shorter than one batch", {"@corpus-ok", "--batch", "20"},
               "train.txt holds 12 tokens, fewer than one batch needs");
        corpus("corpus: missing folder", {"@no-such-corpus"}, "no-such-corpus");
        corpus("corpus: synthetic vocabulary 1", {"synthetic-text", "--vocab", "1"}, "--vocab");

        // Training a language model on the same damaged corpora: the same messages, exit 2,
        // and the kept log untouched.
        const QStringList lm = {"train",    "--model",    "@lm.json",      "--steps", "3",
                                "--device", "cpu",        "--bptt",        "3",       "--batch",
                                "2",        "--log-json", "@kept-log.json"};
        auto lm_data = [&](const char* row, const char* folder, const char* fragment) {
            QTest::newRow(row) << with(lm, {"--dataset", QString("@") + folder}) << 2
                               << QString(fragment) << qint64(0);
        };
        lm_data("lm: missing split", "corpus-missing-valid", "valid.txt is missing");
        lm_data("lm: empty split", "corpus-empty-test", "test.txt is empty");
        lm_data("lm: NUL byte", "corpus-nul", "test.txt is not a text file: a NUL byte");
        lm_data("lm: not UTF-8", "corpus-latin1", "train.txt is not a text file");
        lm_data("lm: line over 1 MiB", "corpus-long-line", "valid.txt: line 1 is longer");
        QTest::newRow("lm: shorter than one batch")
            << with(lm, {"--dataset", "@corpus-ok", "--batch", "20"}) << 2
            << QString("fewer than one batch needs") << qint64(0);
        QTest::newRow("lm: images for a language model")
            << with(lm, {"--dataset", "synthetic"}) << 2 << QString("is a language model")
            << qint64(0);
        QTest::newRow("lm: tied decoder wider than the embedding")
            << with(lm, {"--model", "@lm-untied-dim.json", "--dataset", "@corpus-ok"}) << 2
            << QString("tie_weights") << qint64(0);
        QTest::newRow("lm: bptt 0")
            << with(lm, {"--bptt", "0"}) << 2 << QString("--bptt") << qint64(0);
        QTest::newRow("lm: temperature 0")
            << with(lm, {"--sample-words", "5", "--temperature", "0"}) << 2
            << QString("--temperature") << qint64(0);
        QTest::newRow("lm: vocab for a corpus folder")
            << with(lm, {"--dataset", "@corpus-ok", "--vocab", "100"}) << 2 << QString("--vocab")
            << qint64(0);
        option("--sample-words for a classifier", {"--sample-words", "5"}, "--sample-words");

        // mixlab-cli import: a refused Keras model writes nothing, not even over a spec an
        // earlier import left.
        auto keras = [&](const char* row, const char* file, const char* fragment) {
            QTest::newRow(row) << QStringList{"import", QString("@") + file, "-o",
                                              "@kept-model.json"}
                               << 2 << QString(fragment) << qint64(0);
        };
        keras("import: unsupported layer", "keras-gru.json",
              "layer \"gru\" (GRU): MixLab has no equivalent");
        keras("import: dilated Conv2D", "keras-dilated.json",
              "layer \"conv\" (Conv2D): \"dilation_rate\"");
        keras("import: malformed JSON", "keras-malformed.json", "not valid JSON");
        keras("import: a MixLab spec", "tiny.json", "not a Keras model");
        keras("import: a layer, not a model", "keras-layer.json", "Sequential and Functional");
        keras("import: missing file", "none-keras.json", "none-keras.json");
        keras("import: a folder", "model-dir.json", "model-dir.json");
        keras("import: .keras not a zip", "keras-text.keras", "is not a whole zip archive");
        keras("import: .keras truncated", "keras-cut.keras", "is not a whole zip archive");
        keras("import: .keras without config.json", "keras-noconfig.keras", "holds no config.json");
        keras("import: .keras with a bad config", "keras-badconfig.keras",
              "config.json: the Keras model is not valid JSON");
        keras("import: .keras written by Keras 2.13", "keras-213.keras",
              "was written by Keras 2.13.1 (metadata.json's keras_version)");
        QTest::newRow("import: .keras without weights, --weights-out")
            << QStringList{"import",           "@keras-seed.keras", "-o",
                           "@kept-model.json", "--weights-out",     "@kept-weights.st"}
            << 2 << QString("came without weights") << qint64(0);
        QTest::newRow("import: .keras missing a layer's weights")
            << QStringList{"import",           "@keras-noweights.keras", "-o",
                           "@kept-model.json", "--weights-out",          "@kept-weights.st"}
            << 2 << QString("Keras layer 'dense' has 1 variables") << qint64(0);
        QTest::newRow("import: no -o") << QStringList{"import", "@keras-seed.json"} << 2
                                       << QString("-o MODEL.json") << qint64(0);
        QTest::newRow("import: -o in a missing folder")
            << QStringList{"import", "@keras-seed.json", "-o", "@missing/model.json"} << 2
            << QString("missing/model.json") << qint64(0);

        QTest::newRow("summary: 10^9-unit dense layer")
            << QStringList{"summary", "--model", "@units-1e9.json", "--input", "8x8x1"} << 2
            << QString("1000000000") << qint64(0);
        QTest::newRow("summary: future format")
            << QStringList{"summary", "--model", "@future-model.json", "--input", "8x8x1"} << 2
            << QString("mixlab-model/9") << qint64(0);
    }

    void badInput()
    {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, fragment);
        QFETCH(qint64, memory_cap);
        if (QTest::currentDataTag() == QLatin1String("model: unreadable file") && ::geteuid() == 0)
            QSKIP("running as root, which reads a chmod 000 file anyway");
#if defined(__SANITIZE_ADDRESS__)
        // AddressSanitizer reserves terabytes of address space for its shadow memory at
        // start, so no RLIMIT_AS cap lets the sanitized CLI even begin (tools/sanitize.sh).
        if (memory_cap > 0) QSKIP("an address-space cap cannot apply to an AddressSanitizer build");
#endif
        const QMap<QString, QByteArray> before = snapshot();

        const CliResult r = run(expand(args), memory_cap);

        QVERIFY2(r.normal_exit, qPrintable("crashed or hung: " + details(r)));
        for (const QString& text : k_crash_text)
            QVERIFY2(!r.err.contains(text), qPrintable(details(r)));
        QVERIFY2(r.code == code, qPrintable(details(r)));
        QVERIFY2(r.err.contains(fragment),
                 qPrintable("stderr does not name '" + fragment + "'\n" + details(r)));
        // One line naming the problem; a raw library message ("[json.exception...") is not one.
        QVERIFY2(r.err.trimmed().count('\n') == 0, qPrintable("not one line: " + r.err));
        QVERIFY2(r.err.startsWith("mixlab-cli " + args.front() + ": "), qPrintable(r.err));
        QVERIFY2(!r.err.contains("exception"), qPrintable(r.err));
        QVERIFY2(r.out.isEmpty(), qPrintable(r.out));

        const QMap<QString, QByteArray> after = snapshot();
        QCOMPARE(after.keys(), before.keys()); // nothing written, nothing left behind
        for (auto it = before.begin(); it != before.end(); ++it)
            QVERIFY2(after.value(it.key()) == it.value(), qPrintable(it.key() + " changed"));
    }

    // The rows above would pass for a CLI that refuses everything: this valid run, with
    // the same files and options, must train and write the log the rows keep intact.
    void validRunWritesTheLog()
    {
        const QString log = path("fresh-log.json");
        const CliResult r = run(
            expand({"train", "--model", "@tiny.json", "--dataset", "synthetic", "--synthetic-size",
                    "256", "--steps", "3", "--device", "cpu", "--batch", "16", "--log-json", log}),
            0);
        QVERIFY2(r.normal_exit && r.code == 0, qPrintable(details(r)));
        QVERIFY(QFile::exists(log));
        QVERIFY(QFile::remove(log));
    }
};

QTEST_APPLESS_MAIN(TestBadInput)
#include "tst_bad_input.moc"
