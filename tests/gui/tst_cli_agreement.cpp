// The app and mixlab-cli on the same command line: both binaries run (the app offscreen,
// cold, in a temporary home) and their logs compared. They share one engine group
// (RunGroup), so the synthetic test split, the settings, every step's loss and a compare
// where one run runs out of memory mid-run (same failure step and message, the other run
// finishing) must come out the same. tst_cli tests the CLI's side alone.
#include "mixlab/run_config.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

namespace {

// Generous: a loaded 2-core machine; each program takes a couple of seconds.
constexpr int k_timeoutMs = 120000;

struct Ran {
    int code = -1;
    QString output;
};

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// A run's events but the app's profiling-pass line: the app profiles every finished job
// (the Why? panel's data), `mixlab-cli compare` does not.
QJsonArray eventsButProfiling(const QJsonArray &events)
{
    QJsonArray out;
    for (const QJsonValue &e : events)
        if (!e.toObject()["message"].toString().startsWith(QStringLiteral("profiling pass")))
            out.append(e);
    return out;
}

QString details(const Ran &r) { return QStringLiteral("exit %1:\n%2").arg(r.code).arg(r.output); }

} // namespace

class TestCliAgreement : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_model;
    int m_runs = 0;

    // Both programs see the same environment: one OpenMP thread (the same arithmetic in
    // both: a GEMM split over other threads could round differently), a home of their own
    // (the app's settings and autosave stay out of the user's), and `extra`.
    QProcessEnvironment environment(const QStringList &extra) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        const QString home = m_dir.filePath(QStringLiteral("home"));
        env.insert(QStringLiteral("HOME"), home);
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/.config"));
        env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/.local/share"));
        env.insert(QStringLiteral("XDG_CACHE_HOME"), home + QStringLiteral("/.cache"));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_dir.path());
        for (const QString &pair : extra)
            env.insert(pair.section(QLatin1Char('='), 0, 0), pair.section(QLatin1Char('='), 1));
        return env;
    }

    Ran run(const QString &program, const QStringList &args, const QStringList &env)
    {
        QProcess p;
        p.setProcessEnvironment(environment(env));
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(program, args);
        Ran r;
        if (!p.waitForStarted(k_timeoutMs) || !p.waitForFinished(k_timeoutMs)) {
            p.kill();
            p.waitForFinished();
            r.output = QStringLiteral("did not start or finish: ") + p.errorString();
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.output = QString::fromLocal8Bit(p.readAll());
        return r;
    }

    // `settings` (dataset, sizes, device, policies...) given to the app with --start or
    // --compare and to `mixlab-cli train` or `compare`; each writes its log. Returns the
    // app's and the CLI's logs.
    std::pair<QJsonObject, QJsonObject> runBoth(const QStringList &settings,
                                                const QStringList &policies, const QStringList &env,
                                                int cliCode)
    {
        const int n = ++m_runs;
        const QString appLog = m_dir.filePath(QStringLiteral("app%1.json").arg(n));
        const QString cliLog = m_dir.filePath(QStringLiteral("cli%1.json").arg(n));
        const bool comparing = !policies.isEmpty();
        QStringList appArgs = settings;
        appArgs << QStringLiteral("--model") << m_model << QStringLiteral("--log-json") << appLog
                << QStringLiteral("--screenshot")
                << m_dir.filePath(QStringLiteral("app%1.png").arg(n))
                << QStringLiteral("--no-recover") << QStringLiteral("--no-autosave");
        if (comparing)
            appArgs << QStringLiteral("--compare") << QStringLiteral("--policies")
                    << policies.join(QLatin1Char(','));
        else
            appArgs << QStringLiteral("--start");
        QStringList cliArgs{comparing ? QStringLiteral("compare") : QStringLiteral("train")};
        cliArgs << settings << QStringLiteral("--model") << m_model << QStringLiteral("--log-json")
                << cliLog;
        if (comparing) cliArgs << QStringLiteral("--policies") << policies.join(QLatin1Char(','));

        const Ran app = run(QStringLiteral(MIXLAB_APP_PATH), appArgs, env);
        const Ran cli = run(QStringLiteral(MIXLAB_CLI_PATH), cliArgs, env);
        [&] {
            QVERIFY2(app.code == 0, qPrintable(details(app)));
            QVERIFY2(cli.code == cliCode, qPrintable(details(cli)));
        }();
        return {readJson(appLog), readJson(cliLog)};
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(QStringLiteral(MIXLAB_APP_PATH)), MIXLAB_APP_PATH);
        QVERIFY2(QFile::exists(QStringLiteral(MIXLAB_CLI_PATH)), MIXLAB_CLI_PATH);
        QVERIFY(m_dir.isValid());
        QVERIFY(QDir(m_dir.path()).mkpath(QStringLiteral("home")));
        m_model = m_dir.filePath(QStringLiteral("tiny.json"));
        QFile f(m_model);
        QVERIFY(f.open(QIODevice::WriteOnly));
        // Small enough that 40 CPU steps take a fraction of a second.
        f.write(R"({"format": "mixlab-model/1", "name": "tiny", "layers": [
            {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
            {"type": "dense", "units": 10}]})");
    }

    void syntheticSplit_data()
    {
        QTest::addColumn<int>("size");
        QTest::newRow("512: 102.4 rounds up") << 512;
        QTest::newRow("3: a fifth rounds up to one sample") << 3;
        QTest::newRow("1000: a multiple of 5") << 1000;
    }

    // --synthetic-size n gives both the engine's test split (synthetic_test_size: a fifth,
    // rounded up) and otherwise the same settings.
    void syntheticSplit()
    {
        QFETCH(int, size);
        const auto [app, cli] =
            runBoth({QStringLiteral("--dataset"), QStringLiteral("synthetic"),
                     QStringLiteral("--synthetic-size"), QString::number(size),
                     QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--batch"),
                     QStringLiteral("1"), QStringLiteral("--device"), QStringLiteral("cpu"),
                     QStringLiteral("--numerics-every"), QStringLiteral("1")},
                    {}, {}, 0);
        if (QTest::currentTestFailed()) return;
        const QJsonObject dataset = app["config"].toObject()["dataset"].toObject();
        QCOMPARE(dataset["synthetic_train"].toInt(), size);
        QCOMPARE(dataset["synthetic_test"].toInteger(), qint64(mixlab::synthetic_test_size(size)));
        QCOMPARE(app["config"].toObject(), cli["config"].toObject());
        QCOMPARE(app["steps"].toArray().size(), 2);
        QCOMPARE(cli["steps"].toArray().size(), 2);
        // Numerics at every step (the app samples every 50 unless told, the CLI never): the
        // same samples through the app's worker and store as the CLI writes.
        QCOMPARE(app["config"].toObject()["numerics_every"].toInt(), 1);
        QCOMPARE(app["numerics"].toArray().size(), 2);
        QCOMPARE(app["numerics"].toArray(), cli["numerics"].toArray());
    }

    // Out of memory at the CPU backend's 20th training step (its test hook, core/src/
    // backends/fault_injection.h): in lockstep that is mixed_fp16's 10th. In both, that run
    // ends alone at step 10 with the same message and its 9 steps before, and fp32 trains
    // its 40; every step's loss is the same in both (the same engine, data and weights).
    void failingRunInACompare()
    {
        const auto [app, cli] =
            runBoth({QStringLiteral("--dataset"), QStringLiteral("synthetic"),
                     QStringLiteral("--synthetic-size"), QStringLiteral("512"),
                     QStringLiteral("--steps"), QStringLiteral("40"), QStringLiteral("--batch"),
                     QStringLiteral("32"), QStringLiteral("--device"), QStringLiteral("cpu"),
                     QStringLiteral("--numerics-every"), QStringLiteral("0")},
                    {QStringLiteral("fp32"), QStringLiteral("mixed_fp16")},
                    {QStringLiteral("MIXLAB_FAULT_OOM_AT_STEP=20")}, 1);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(app["kind"].toString(), QStringLiteral("compare"));
        QCOMPARE(app["config"].toObject(), cli["config"].toObject());
        const QJsonArray appRuns = app["runs"].toArray(), cliRuns = cli["runs"].toArray();
        QCOMPARE(appRuns.size(), 2);
        QCOMPARE(cliRuns.size(), 2);
        for (int i = 0; i < 2; ++i) {
            const QJsonObject a = appRuns[i].toObject(), c = cliRuns[i].toObject();
            QCOMPARE(a["policy"].toString(), c["policy"].toString());
            const QJsonArray as = a["steps"].toArray(), cs = c["steps"].toArray();
            QCOMPARE(as.size(), cs.size());
            for (int s = 0; s < as.size(); ++s) {
                QCOMPARE(as[s].toObject()["step"].toInt(), cs[s].toObject()["step"].toInt());
                // QCOMPARE on floats: equal to about 5 significant digits (qFuzzyCompare);
                // one engine, one thread, the same data and weights give the same loss.
                QCOMPARE(float(as[s].toObject()["loss"].toDouble()),
                         float(cs[s].toObject()["loss"].toDouble()));
            }
            QCOMPARE(eventsButProfiling(a["events"].toArray()), c["events"].toArray());
        }
        const QJsonObject ok = appRuns[0].toObject(), failed = appRuns[1].toObject();
        QCOMPARE(ok["steps"].toArray().size(), 40);
        QCOMPARE(ok["summary"].toObject()["steps"].toInt(), 40);
        QCOMPARE(cliRuns[0].toObject()["summary"].toObject()["steps"].toInt(), 40);
        QCOMPARE(failed["steps"].toArray().size(), 9);
        QVERIFY(failed["summary"].isNull());
        QVERIFY(cliRuns[1].toObject()["summary"].isNull());
        const QJsonObject error = failed["events"].toArray().last().toObject();
        QCOMPARE(error["kind"].toString(), QStringLiteral("error"));
        QCOMPARE(error["step"].toInt(), 10);
        QVERIFY2(error["message"].toString().startsWith(
                     QStringLiteral("out of memory at step 10 of the "
                                    "mixed_fp16 run at batch size 32")),
                 qPrintable(error["message"].toString()));
    }
};

QTEST_GUILESS_MAIN(TestCliAgreement)
#include "tst_cli_agreement.moc"
