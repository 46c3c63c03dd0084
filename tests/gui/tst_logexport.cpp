// Log export: the store's runs written through RunLog read like the CLI's logs (JSON
// fields of `mixlab-log/1` train and compare logs, CSV one row a step), and equal what
// the CLI's own recording of the same metrics would write.
#include "files/logexport.h"
#include "runs/runstore.h"

#include "mixlab/environment.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_log.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "gui_fixtures.h"
#include "test_models.h"

#include <random>
#include <set>

using namespace mixlab;
using Json = nlohmann::json;

namespace {

ModelSpec tinyMlp() { return test::tiny_mlp({.hidden = 16}); }

Environment cpuEnvironment()
{
    DeviceInfo d;
    d.backend = mixlab::BackendKind::Cpu;
    d.name = "CPU (no CUDA device)";
    return describe_environment(d);
}

// A finished run as the worker leaves it, metrics random but seeded.
RunRecord fabricate(std::mt19937 &rng, Policy policy, int nSteps)
{
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    RunRecord r;
    r.config.policy = policy;
    r.config.batch_size = 32;
    r.config.dataset.name = "synthetic";
    r.modelJson = QString::fromStdString(model_spec_to_json(tinyMlp()));
    r.status = RunRecord::Status::Finished;
    r.totalSteps = nSteps;
    for (int i = 0; i < nSteps; ++i) {
        StepMetrics m;
        m.step = i + 1;
        m.epoch = 1 + i / 8;
        m.loss = 2.3f * u(rng);
        m.accuracy = u(rng);
        m.step_ms = 0.25f + u(rng);
        m.wall_ms = 10.0 * i + double(u(rng));
        m.samples_per_s = 1e5 * double(u(rng));
        m.loss_scale = 65536;
        m.next_loss_scale = 65536;
        r.steps.push_back(m);
    }
    if (nSteps > 2) r.steps[2].loss = std::numeric_limits<float>::quiet_NaN(); // diverged
    for (int e = 1; e <= nSteps / 8; ++e) {
        EpochMetrics m;
        m.epoch = e;
        m.train_loss = u(rng);
        m.test_accuracy = u(rng);
        m.seconds = double(u(rng));
        r.epochs.push_back(m);
    }
    r.events.push_back({QDateTime::currentDateTime(), RunEvent{RunEvent::Kind::Info, 0, "start"}});
    r.events.push_back(
        {QDateTime::currentDateTime(), RunEvent{RunEvent::Kind::SkippedStep, 4, "skip"}});
    RunSummary s;
    s.steps = nSteps;
    s.epochs_done = nSteps / 8;
    s.mean_step_ms = 0.5;
    s.final_test_accuracy = u(rng);
    r.summary = s;
    RunContext c;
    c.input = Shape{{32, 32, 3}};
    c.classes = 10;
    c.environment = cpuEnvironment();
    r.context = c;
    return r;
}

std::vector<int> fillStore(RunStore &store)
{
    std::mt19937 rng(99);
    const int g = store.newGroup();
    RunRecord a = fabricate(rng, Policy::FP32, 24);
    RunRecord b = fabricate(rng, Policy::MixedFP16, 19);
    a.group = b.group = g;
    return {store.insertRecord(a), store.insertRecord(b)};
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

std::set<std::string> keys(const Json &j)
{
    std::set<std::string> out;
    for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
    return out;
}

// The fields run_log.h documents for the CLI's logs.
const std::set<std::string> k_stepKeys = {
    "step",       "epoch",           "loss",     "accuracy", "step_ms", "wall_ms", "samples_per_s",
    "loss_scale", "next_loss_scale", "overflow", "skipped"};
const std::set<std::string> k_epochKeys = {"epoch",        "train_loss",    "train_accuracy",
                                           "test_loss",    "test_accuracy", "seconds",
                                           "skipped_steps"};
const std::set<std::string> k_summaryKeys = {"steps",
                                             "skipped_steps",
                                             "epochs_done",
                                             "mean_step_ms",
                                             "median_step_ms",
                                             "final_train_loss",
                                             "final_test_loss",
                                             "final_test_accuracy",
                                             "final_loss_scale",
                                             "wall_seconds",
                                             "stopped"};

// What the CLI would have written for the same records: a RunLog fed directly.
std::string cliLog(const RunStore &store, const std::vector<int> &ids, bool json)
{
    RunLog log(ids.size() == 1 ? RunLog::Kind::Train : RunLog::Kind::Compare);
    const ModelSpec spec = tinyMlp();
    log.set_model(spec, build_graph(spec, Shape{{32, 32, 3}}, 10));
    log.set_environment(cpuEnvironment());
    for (int id : ids) {
        const RunRecord &r = *store.run(id);
        const int i = log.add_run(r.config);
        for (const auto &m : r.steps) log.on_step(i, m);
        for (const auto &m : r.epochs) log.on_epoch(i, m);
        for (const auto &e : r.events) log.on_event(i, e.event);
        log.set_summary(i, *r.summary);
    }
    return json ? log.to_json() : log.to_csv();
}

} // namespace

class TestLogExport : public QObject {
    Q_OBJECT
private slots:
    void trainJson();
    void compareJson();
    void runsOfTwoGroupsKeepTheirModels();
    void csvOneRowPerStep();
    void sameBytesAsTheCli_data();
    void sameBytesAsTheCli();
    void refusals();
    void runWithoutContext();
};

void TestLogExport::trainJson()
{
    QTemporaryDir dir;
    RunStore store;
    const std::vector<int> ids = fillStore(store);
    const QString path = dir.filePath(QStringLiteral("one.json"));
    QString error;
    QVERIFY2(exportLogs(store, {ids[0]}, path, &error), qPrintable(error));
    const Json j = Json::parse(readAll(path).toStdString());
    QCOMPARE(j["format"].get<std::string>(), std::string("mixlab-log/1"));
    QCOMPARE(j["kind"].get<std::string>(), std::string("train"));
    QCOMPARE(j["steps"].size(), std::size_t(24));
    QCOMPARE(j["epochs"].size(), std::size_t(3));
    QCOMPARE(j["events"].size(), std::size_t(2));
    QVERIFY(keys(j["steps"][0]) == k_stepKeys);
    QVERIFY(keys(j["epochs"][0]) == k_epochKeys);
    QVERIFY(keys(j["summary"]) == k_summaryKeys);
    QVERIFY(j["steps"][2]["loss"].is_null()); // NaN as the CLI writes it
    QCOMPARE(j["steps"][23]["step"].get<int>(), 24);
    QCOMPARE(j["events"][1]["kind"].get<std::string>(), std::string("skipped_step"));
    QCOMPARE(j["config"]["policy"].get<std::string>(), std::string("fp32"));
    QCOMPARE(j["config"]["model"]["name"].get<std::string>(), std::string("tiny"));
    const Graph g = build_graph(tinyMlp(), Shape{{32, 32, 3}}, 10);
    QCOMPARE(j["graph"]["total_params"].get<std::int64_t>(), g.total_params);
    QCOMPARE(j["graph"]["input"].get<std::string>(), std::string("32x32x3"));
    QCOMPARE(j["environment"]["backend"].get<std::string>(), std::string("cpu"));
    QVERIFY(!j.contains("runs"));
    QVERIFY(!QFile::exists(path + QStringLiteral(".tmp")));
}

void TestLogExport::compareJson()
{
    QTemporaryDir dir;
    RunStore store;
    const std::vector<int> ids = fillStore(store);
    const QString path = dir.filePath(QStringLiteral("both.JSON")); // suffix in any case
    QString error;
    QVERIFY2(exportLogs(store, ids, path, &error), qPrintable(error));
    const Json j = Json::parse(readAll(path).toStdString());
    QCOMPARE(j["format"].get<std::string>(), std::string("mixlab-log/1"));
    QCOMPARE(j["kind"].get<std::string>(), std::string("compare"));
    QVERIFY(j["config"]["policies"] == Json::array({"fp32", "mixed_fp16"}));
    QCOMPARE(j["runs"].size(), std::size_t(2));
    QVERIFY(!j.contains("steps"));
    QCOMPARE(j["runs"][1]["run"].get<int>(), 1);
    QCOMPARE(j["runs"][1]["policy"].get<std::string>(), std::string("mixed_fp16"));
    QCOMPARE(j["runs"][0]["steps"].size(), std::size_t(24));
    QCOMPARE(j["runs"][1]["steps"].size(), std::size_t(19));
    QVERIFY(keys(j["runs"][1]["steps"][0]) == k_stepKeys);
    QVERIFY(keys(j["runs"][1]["summary"]) == k_summaryKeys);
    QCOMPARE(j["runs"][1]["config"]["policy"].get<std::string>(), std::string("mixed_fp16"));
}

// Two compares with a model change between them (an Apply), exported together: each run
// carries the model it trained, and a run stopped before its first evaluation says it has
// no test accuracy.
void TestLogExport::runsOfTwoGroupsKeepTheirModels()
{
    QTemporaryDir dir;
    RunStore store;
    std::vector<int> ids = fillStore(store);
    ModelSpec changed = tinyMlp();
    changed.layers.back().force_fp32 = true;
    std::mt19937 rng(7);
    const int g2 = store.newGroup();
    for (Policy p : {Policy::FP32, Policy::MixedFP16}) {
        RunRecord r = fabricate(rng, p, 5);
        r.group = g2;
        r.modelJson = QString::fromStdString(model_spec_to_json(changed));
        stopBeforeFirstEvaluation(r);
        ids.push_back(store.insertRecord(r));
    }
    const QString path = dir.filePath(QStringLiteral("two-groups.json"));
    QString error;
    QVERIFY2(exportLogs(store, ids, path, &error), qPrintable(error));
    const Json j = Json::parse(readAll(path).toStdString());
    QCOMPARE(j["runs"].size(), std::size_t(4));
    for (std::size_t r = 0; r < 4; ++r) {
        const ModelSpec ran = parse_model_spec(store.run(ids[r])->modelJson.toStdString());
        QVERIFY2(parse_model_spec(j["runs"][r]["config"]["model"].dump()) == ran,
                 qPrintable(QString::number(r)));
        QCOMPARE(j["runs"][r]["config"]["model"]["layers"].back().contains("dtype"), r >= 2);
    }
    QVERIFY(parse_model_spec(j["config"]["model"].dump()) == tinyMlp()); // the first run's
    QVERIFY(j["runs"][3]["summary"]["final_test_accuracy"].is_null());
    QVERIFY(j["runs"][3]["summary"]["final_test_loss"].is_null());
    QVERIFY(j["runs"][0]["summary"]["final_test_accuracy"].is_number());
}

void TestLogExport::csvOneRowPerStep()
{
    QTemporaryDir dir;
    RunStore store;
    const std::vector<int> ids = fillStore(store);
    const QString path = dir.filePath(QStringLiteral("both.csv"));
    QString error;
    QVERIFY2(exportLogs(store, ids, path, &error), qPrintable(error));
    const QList<QByteArray> lines = readAll(path).trimmed().split('\n');
    QCOMPARE(lines.size(), 1 + 24 + 19);
    QCOMPARE(lines[0],
             QByteArray("run,policy,step,epoch,loss,accuracy,step_ms,wall_ms,samples_per_s,"
                        "loss_scale,next_loss_scale,overflow,skipped"));
    for (const QByteArray &line : lines) QCOMPARE(line.count(','), 12);
    QVERIFY(lines[1].startsWith("0,fp32,1,1,"));
    QVERIFY(lines[3].startsWith("0,fp32,3,1,nan,")); // the NaN step
    QVERIFY(lines[25].startsWith("1,mixed_fp16,1,1,"));
}

void TestLogExport::sameBytesAsTheCli_data()
{
    QTest::addColumn<bool>("json");
    QTest::addColumn<bool>("compare");
    QTest::newRow("json train") << true << false;
    QTest::newRow("json compare") << true << true;
    QTest::newRow("csv train") << false << false;
    QTest::newRow("csv compare") << false << true;
}

void TestLogExport::sameBytesAsTheCli()
{
    QFETCH(bool, json);
    QFETCH(bool, compare);
    QTemporaryDir dir;
    RunStore store;
    std::vector<int> ids = fillStore(store);
    if (!compare) ids.resize(1);
    const QString path =
        dir.filePath(json ? QStringLiteral("log.json") : QStringLiteral("log.csv"));
    QString error;
    QVERIFY2(exportLogs(store, ids, path, &error), qPrintable(error));
    QCOMPARE(readAll(path), QByteArray::fromStdString(cliLog(store, ids, json)));
}

void TestLogExport::refusals()
{
    QTemporaryDir dir;
    RunStore store;
    const std::vector<int> ids = fillStore(store);
    QString error;
    QVERIFY(!exportLogs(store, ids, dir.filePath(QStringLiteral("log.txt")), &error));
    QVERIFY2(error.contains(QStringLiteral(".json or .csv")), qPrintable(error));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("log.txt"))));
    QVERIFY(!exportLogs(store, {}, dir.filePath(QStringLiteral("log.json")), &error));
    QVERIFY(!exportLogs(store, {ids[0], 999}, dir.filePath(QStringLiteral("log.json")), &error));
    QVERIFY2(error.contains(QStringLiteral("999")), qPrintable(error));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("log.json"))));
    const QString unwritable = QStringLiteral("/nonexistent/folder/log.json");
    QVERIFY(!exportLogs(store, ids, unwritable, &error));
    QVERIFY2(error.contains(unwritable), qPrintable(error));
}

void TestLogExport::runWithoutContext()
{
    // A run that failed before its data was loaded: no graph, but still a valid log.
    QTemporaryDir dir;
    RunStore store;
    std::mt19937 rng(3);
    RunRecord r = fabricate(rng, Policy::FP32, 0);
    r.context.reset();
    r.summary.reset();
    r.status = RunRecord::Status::Failed;
    const int id = store.insertRecord(r);
    const QString path = dir.filePath(QStringLiteral("failed.json"));
    QString error;
    QVERIFY2(exportLogs(store, {id}, path, &error), qPrintable(error));
    const Json j = Json::parse(readAll(path).toStdString());
    QCOMPARE(j["kind"].get<std::string>(), std::string("train"));
    QVERIFY(j["graph"].is_null());
    QVERIFY(j["summary"].is_null());
    QVERIFY(j["environment"].is_object());
    QCOMPARE(j["events"].size(), std::size_t(2));
}

QTEST_GUILESS_MAIN(TestLogExport)
#include "tst_logexport.moc"
