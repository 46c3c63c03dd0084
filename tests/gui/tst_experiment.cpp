// Experiment files: save then load gives back every run (metrics, events, summaries,
// names, colours, statuses); bad files (malformed, newer or foreign format, missing or
// mistyped fields) are refused with a message and leave the store untouched.
#include "files/experiment.h"
#include "runs/runstore.h"

#include "mixlab/environment.h"
#include "mixlab/explain.h"
#include "mixlab/json_io.h"
#include "mixlab/model_spec.h"
#include "mixlab/step_profile.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "format_v1.h"
#include "gui_fixtures.h"
#include "profile_checks.h"
#include "test_models.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mixlab;
using Json = nlohmann::ordered_json;
using Plain = nlohmann::json; // compares objects whatever their keys' order

namespace {

ModelSpec tinyMlp()
{
    return test::tiny_mlp(
        {.hidden = 24, .activation = Activation::Gelu, .dropout = 0.25f, .fp32_output = true});
}

// A run as the worker would have left it, with random (seeded) metrics: float fields
// get values with full 24-bit mantissas so a lossy round trip would show.
RunRecord fabricate(std::mt19937 &rng, Policy policy, int nSteps, std::uint64_t seed)
{
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    RunRecord r;
    r.config.policy = policy;
    r.config.batch_size = 64;
    r.config.seed = seed;
    r.config.dataset.name = "synthetic";
    r.config.optimizer.type = OptimizerType::AdamW;
    r.config.optimizer.lr = 3e-4f * (1 + u(rng));
    r.modelJson = QString::fromStdString(model_spec_to_json(tinyMlp()));
    r.status = RunRecord::Status::Finished;
    r.totalSteps = nSteps;
    r.deviceMemoryMB = 12.345678 * (1 + u(rng));
    r.started = QDateTime::currentDateTime().addSecs(-60);
    r.ended = QDateTime::currentDateTime();
    for (int i = 0; i < nSteps; ++i) {
        StepMetrics m;
        m.step = i + 1;
        m.epoch = 1 + i / 10;
        m.loss = 2.3f * u(rng) + 0.01f;
        m.accuracy = u(rng);
        m.step_ms = 0.5f + u(rng);
        m.wall_ms = 1000.0 * (i + double(u(rng)));
        m.samples_per_s = 64000.0 / (0.5 + double(u(rng)));
        m.loss_scale = std::ldexp(1.0f, 10 + i % 7);
        m.next_loss_scale = m.loss_scale * (i % 5 == 0 ? 0.5f : 1.0f);
        m.overflow = i % 5 == 0;
        m.skipped = m.overflow;
        r.steps.push_back(m);
    }
    for (int e = 1; e <= nSteps / 10; ++e) {
        EpochMetrics m;
        m.epoch = e;
        m.train_loss = u(rng);
        m.train_accuracy = u(rng);
        m.test_loss = u(rng);
        m.test_accuracy = u(rng);
        m.seconds = 3.25 * double(u(rng));
        m.skipped_steps = e;
        r.epochs.push_back(m);
    }
    const QDateTime t0 = QDateTime::currentDateTime();
    r.events.push_back({t0, RunEvent{RunEvent::Kind::Info, 0, "started \"quoted\" ünïcode"}});
    r.events.push_back(
        {t0.addMSecs(17), RunEvent{RunEvent::Kind::ScaleChange, 5, "scale 1024 -> 512"}});
    r.events.push_back({t0.addMSecs(33), RunEvent{RunEvent::Kind::SkippedStep, 5, "skipped"}});
    r.events.push_back({t0.addMSecs(40), RunEvent{RunEvent::Kind::Warning, 0, "sigmoid output"}});
    // An fp8 amax jump's facts ride with its event (mixlab/metrics_json.h's form).
    Fp8AmaxJump jump;
    jump.layer = "layer 2";
    jump.operand = Fp8Operand::Dy;
    jump.amax = 8192 * (1 + u(rng));
    jump.history_max = 16 * (1 + u(rng));
    jump.more_tensors = 1;
    r.events.push_back(
        {t0.addMSecs(52), RunEvent{RunEvent::Kind::Warning, 7, "fp8 amax jump: layer 2 dy", jump}});
    RunSummary s;
    s.steps = nSteps;
    s.skipped_steps = nSteps / 5;
    s.epochs_done = nSteps / 10;
    s.mean_step_ms = 0.123456789;
    s.median_step_ms = 0.1;
    s.final_train_loss = u(rng);
    s.final_test_loss = u(rng);
    s.final_test_accuracy = u(rng);
    s.final_loss_scale = 32768;
    s.wall_seconds = 61.5;
    r.summary = s;
    RunContext c;
    c.input = Shape{{32, 32, 3}};
    c.classes = 10;
    c.datasetName = QStringLiteral("synthetic");
    c.datasetSource = QStringLiteral("built-in");
    DeviceInfo d;
    d.backend = mixlab::BackendKind::Cpu;
    d.name = "CPU (no CUDA device)";
    c.environment = describe_environment(d);
    r.context = c;
    return r;
}

// A profiling pass with full-mantissa times, so that a lossy round trip would show.
StepProfile someProfile(std::mt19937 &rng)
{
    std::uniform_real_distribution<double> u(0.001, 2.0);
    StepProfile p;
    p.steps = 10;
    p.replayed = true;
    for (double &ms : p.phase_ms) ms = u(rng);
    p.device_ms = u(rng);
    p.step_ms = u(rng);
    p.wall_ms = u(rng);
    p.overhead_ms = u(rng);
    p.gpu_busy_fraction = 0.75;
    for (const char *type : {"flatten", "dense", "dense"}) {
        LayerTime l;
        l.path = "layer " + std::to_string(p.layers.size());
        l.type = type;
        l.forward_ms = u(rng);
        l.backward_ms = u(rng);
        l.flops = 1e6 * u(rng);
        l.bytes = 1e5 * u(rng);
        l.is_gemm = l.type == "dense";
        l.tensor_cores = p.layers.size() == 1;
        l.tensor_core_note = p.layers.size() == 2 ? "units 10 is not a multiple of 8" : "";
        p.layers.push_back(l);
    }
    return p;
}

// Two compare runs (one failed mid-way, renamed, hidden; one profiled), one stopped
// single run with a diverged step that ended itself, one queued run that never began.
void fillStore(RunStore &store)
{
    std::mt19937 rng(1234);
    const int g1 = store.newGroup();
    RunRecord a = fabricate(rng, Policy::FP32, 40, 42);
    a.group = g1;
    a.profile = someProfile(rng);
    RunRecord b = fabricate(rng, Policy::MixedFP16, 23, 42);
    b.group = g1;
    b.status = RunRecord::Status::Failed;
    b.failure = QStringLiteral("out of memory: asked for 2 GiB, 1 GiB free");
    b.summary.reset();
    b.name = QStringLiteral("renamed run");
    b.visible = false;
    b.color = QColor(0x12, 0x34, 0x56);
    const int g2 = store.newGroup();
    RunRecord c = fabricate(rng, Policy::FP16, 12, (std::uint64_t(1) << 63) + 5);
    c.group = g2;
    c.status = RunRecord::Status::Stopped;
    c.steps[3].loss = std::numeric_limits<float>::quiet_NaN();
    c.steps[4].loss = std::numeric_limits<float>::infinity();
    c.summary->stopped = true;
    c.summary->halted = "loss is infinite at step 5";
    c.context.reset();
    store.insertRecord(a);
    store.insertRecord(b);
    store.insertRecord(c);
    store.addRun(RunConfig{}, QString(), store.newGroup()); // queued, never began
}

ExperimentFile someFile()
{
    ExperimentFile f;
    f.model = tinyMlp();
    f.config.batch_size = 128;
    f.config.epochs = 3;
    f.config.policy = Policy::MixedBF16;
    f.config.loss_scale.mode = LossScaleMode::Static;
    f.config.loss_scale.init = 1024;
    f.comparePolicies = {Policy::FP32, Policy::MixedFP16, Policy::MixedBF16};
    return f;
}

bool sameFloat(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Non-finite values come back as NaN (the file stores null for both NaN and inf).
bool sameLoaded(float saved, float loaded)
{
    return std::isfinite(saved) ? saved == loaded : std::isnan(loaded);
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll();
}

void writeAll(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(bytes), bytes.size());
}

// Every field of a loaded run `l` against the run `s` that was saved.
void compareRuns(const RunRecord &l, const RunRecord &s)
{
    QCOMPARE(l.name, s.name);
    QCOMPARE(l.color, s.color);
    QCOMPARE(l.visible, s.visible);
    QCOMPARE(l.status, s.status);
    QCOMPARE(l.failure, s.failure);
    QCOMPARE(run_config_to_json(l.config), run_config_to_json(s.config));
    QCOMPARE(l.config.seed, s.config.seed); // 2^63 + 5 survives (no double on the way)
    QCOMPARE(l.modelJson, s.modelJson);
    QCOMPARE(l.group, s.group); // the Why? panel and the report name groups by number
    QCOMPARE(l.totalSteps, s.totalSteps);
    QCOMPARE(l.deviceMemoryMB, s.deviceMemoryMB);
    QCOMPARE(l.started, s.started);
    QCOMPARE(l.ended, s.ended);
    QCOMPARE(l.steps.size(), s.steps.size());
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
        const StepMetrics &x = s.steps[i], &y = l.steps[i];
        QCOMPARE(y.step, x.step);
        QCOMPARE(y.epoch, x.epoch);
        QVERIFY2(sameLoaded(x.loss, y.loss), qPrintable(QStringLiteral("step %1").arg(i)));
        QCOMPARE(y.accuracy, x.accuracy);
        QCOMPARE(y.step_ms, x.step_ms);
        QCOMPARE(y.wall_ms, x.wall_ms);
        QCOMPARE(y.samples_per_s, x.samples_per_s);
        QCOMPARE(y.loss_scale, x.loss_scale);
        QCOMPARE(y.next_loss_scale, x.next_loss_scale);
        QCOMPARE(y.overflow, x.overflow);
        QCOMPARE(y.skipped, x.skipped);
    }
    QCOMPARE(l.epochs.size(), s.epochs.size());
    for (std::size_t i = 0; i < s.epochs.size(); ++i) {
        const EpochMetrics &x = s.epochs[i], &y = l.epochs[i];
        QCOMPARE(y.epoch, x.epoch);
        QCOMPARE(y.train_loss, x.train_loss);
        QCOMPARE(y.train_accuracy, x.train_accuracy);
        QCOMPARE(y.test_loss, x.test_loss);
        QCOMPARE(y.test_accuracy, x.test_accuracy);
        QCOMPARE(y.seconds, x.seconds);
        QCOMPARE(y.skipped_steps, x.skipped_steps);
    }
    QCOMPARE(l.events.size(), s.events.size());
    for (std::size_t i = 0; i < s.events.size(); ++i) {
        QCOMPARE(l.events[i].time, s.events[i].time);
        QCOMPARE(l.events[i].event.kind, s.events[i].event.kind);
        QCOMPARE(l.events[i].event.step, s.events[i].event.step);
        QCOMPARE(l.events[i].event.message, s.events[i].event.message);
        QVERIFY(l.events[i].event.fp8_amax_jump == s.events[i].event.fp8_amax_jump);
    }
    QCOMPARE(l.summary.has_value(), s.summary.has_value());
    if (s.summary) {
        const RunSummary &x = *s.summary, &y = *l.summary;
        QCOMPARE(y.steps, x.steps);
        QCOMPARE(y.skipped_steps, x.skipped_steps);
        QCOMPARE(y.epochs_done, x.epochs_done);
        QCOMPARE(y.mean_step_ms, x.mean_step_ms);
        QCOMPARE(y.median_step_ms, x.median_step_ms);
        QVERIFY(sameFloat(y.final_train_loss, x.final_train_loss));
        QVERIFY(y.final_test_loss == x.final_test_loss);
        QVERIFY(y.final_test_accuracy == x.final_test_accuracy);
        QCOMPARE(y.final_loss_scale, x.final_loss_scale);
        QCOMPARE(y.wall_seconds, x.wall_seconds);
        QCOMPARE(y.stopped, x.stopped);
        QCOMPARE(y.halted, x.halted);
    }
    QCOMPARE(l.profile.has_value(), s.profile.has_value());
    if (s.profile) mixlab::test::compare_profiles(*l.profile, *s.profile);
    QCOMPARE(l.context.has_value(), s.context.has_value());
    if (s.context) {
        QCOMPARE(l.context->input, s.context->input);
        QCOMPARE(l.context->classes, s.context->classes);
        QCOMPARE(l.context->datasetName, s.context->datasetName);
        QCOMPARE(l.context->datasetSource, s.context->datasetSource);
        QVERIFY(environment_to_json(l.context->environment) ==
                environment_to_json(s.context->environment));
    }
}

} // namespace

class TestExperiment : public QObject {
    Q_OBJECT
private slots:
    void roundTrip();
    void runningBecomesStopped();
    void unevaluatedRunHasNoTestAccuracy();
    void badFilesRefused_data();
    void badFilesRefused();
    void missingFileRefused();
    void unwritablePathRefused();
    void oldFileOpens();
    void profileSharedWithCli();
};

void TestExperiment::roundTrip()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("exp.mixlab.json"));
    RunStore store;
    fillStore(store);
    const ExperimentFile file = someFile();
    QString error;
    QVERIFY2(saveExperiment(path, file, store, &error), qPrintable(error));
    QVERIFY(error.isEmpty());
    QVERIFY(!QFile::exists(path + QStringLiteral(".tmp")));
    const Json saved = Json::parse(readAll(path).toStdString());
    QVERIFY(saved["format"] == k_experimentFormat);
    // The diverged run's NaN and inf losses are nulls (JSON has neither).
    QVERIFY(saved["runs"][2]["steps"]["rows"][3][2].is_null());
    QVERIFY(saved["runs"][2]["steps"]["rows"][4][2].is_null());
    QVERIFY(saved["runs"][2]["steps"]["rows"][5][2].is_number());

    RunStore loadedStore;
    loadedStore.addRun(RunConfig{}, QString(), 1); // replaced by the file's runs
    QSignalSpy added(&loadedStore, &RunStore::runAdded);
    QSignalSpy removed(&loadedStore, &RunStore::runRemoved);
    ExperimentFile loaded;
    QVERIFY2(loadExperiment(path, &loaded, &loadedStore, &error), qPrintable(error));
    QCOMPARE(removed.count(), 1);
    QCOMPARE(added.count(), 3); // the queued run that never began is not saved

    QCOMPARE(model_spec_to_json(loaded.model), model_spec_to_json(file.model));
    QCOMPARE(run_config_to_json(loaded.config), run_config_to_json(file.config));
    QVERIFY(loaded.comparePolicies == file.comparePolicies);

    const std::vector<int> before = store.runIds(), after = loadedStore.runIds();
    QCOMPARE(after.size(), std::size_t(3));
    for (std::size_t k = 0; k < after.size(); ++k) {
        const RunRecord &s = *store.run(before[k]);
        const RunRecord &l = *loadedStore.run(after[k]);
        compareRuns(l, s);
    }
    // Compare groups stay together, apart from other groups.
    const RunRecord &l0 = *loadedStore.run(after[0]), &l1 = *loadedStore.run(after[1]),
                    &l2 = *loadedStore.run(after[2]);
    QCOMPARE(l0.group, l1.group);
    QVERIFY(l2.group != l0.group);
    QCOMPARE(loadedStore.groupRuns(l0.group).size(), std::size_t(2));

    // Saving what was loaded gives the same file (nothing drifts across generations).
    const QString again = dir.filePath(QStringLiteral("again.mixlab.json"));
    QVERIFY(saveExperiment(again, loaded, loadedStore, &error));
    Json j1 = Json::parse(readAll(path).toStdString()),
         j2 = Json::parse(readAll(again).toStdString());
    QCOMPARE(QString::fromStdString(j2.dump()), QString::fromStdString(j1.dump()));
}

// A run stopped before its first evaluation has no test numbers: null in the file, none
// back. Files from before that wrote 0 and 0 for such a run; they read as none too.
void TestExperiment::unevaluatedRunHasNoTestAccuracy()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("stopped.mixlab.json"));
    RunStore store;
    std::mt19937 rng(8);
    RunRecord r = fabricate(rng, Policy::MixedFP16, 6, 1);
    stopBeforeFirstEvaluation(r);
    store.insertRecord(r);
    QString error;
    QVERIFY2(saveExperiment(path, someFile(), store, &error), qPrintable(error));
    Json saved = Json::parse(readAll(path).toStdString());
    QVERIFY(saved["runs"][0]["summary"]["final_test_accuracy"].is_null());
    QVERIFY(saved["runs"][0]["summary"]["final_test_loss"].is_null());
    // Writes `json` over the file and reads it back: whether it opened, and the test
    // accuracy its run's summary gives.
    const auto readBack = [&](const Json &json) {
        QFile out(path);
        bool opened = out.open(QIODevice::WriteOnly | QIODevice::Truncate);
        out.write(QByteArray::fromStdString(json.dump(1)));
        out.close();
        RunStore loaded;
        ExperimentFile file;
        opened = opened && loadExperiment(path, &file, &loaded, &error);
        return std::make_pair(opened,
                              opened ? loaded.run(loaded.runIds()[0])->summary->final_test_accuracy
                                     : std::optional<float>());
    };
    QVERIFY(readBack(saved) == std::make_pair(true, std::optional<float>()));

    saved["runs"][0]["summary"]["final_test_accuracy"] = 0.0;
    saved["runs"][0]["summary"]["final_test_loss"] = 0.0;
    QVERIFY(readBack(saved) == std::make_pair(true, std::optional<float>()));
    // A real evaluation that reached 0 % accuracy still has a loss: it is kept.
    saved["runs"][0]["summary"]["final_test_loss"] = 2.5;
    QVERIFY(readBack(saved) == std::make_pair(true, std::optional<float>(0.0f)));
}

void TestExperiment::runningBecomesStopped()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("running.mixlab.json"));
    RunStore store;
    std::mt19937 rng(5);
    RunRecord r = fabricate(rng, Policy::FP32, 15, 1);
    r.status = RunRecord::Status::Running;
    r.summary.reset();
    store.insertRecord(r);
    QString error;
    QVERIFY2(saveExperiment(path, someFile(), store, &error), qPrintable(error));
    RunStore loadedStore;
    ExperimentFile f;
    QVERIFY2(loadExperiment(path, &f, &loadedStore, &error), qPrintable(error));
    const RunRecord *l = loadedStore.run(loadedStore.runIds().at(0));
    QCOMPARE(l->status, RunRecord::Status::Stopped);
    QCOMPARE(l->steps.size(), std::size_t(15)); // what it had recorded is kept
}

void TestExperiment::badFilesRefused_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected"); // part of the message

    // A good file to spoil one way at a time.
    RunStore store;
    fillStore(store);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("good.mixlab.json"));
    QString error;
    QVERIFY(saveExperiment(path, someFile(), store, &error));
    const QByteArray good = readAll(path);
    const Json base = Json::parse(good.toStdString());
    auto spoilt = [&](auto &&edit) {
        Json j = base;
        edit(j);
        return QByteArray::fromStdString(j.dump());
    };

    QTest::newRow("truncated") << good.left(good.size() / 2) << QStringLiteral("malformed JSON");
    QTest::newRow("empty") << QByteArray() << QStringLiteral("malformed JSON");
    QTest::newRow("not an object") << QByteArray("[1, 2]") << QStringLiteral("not a JSON object");
    QTest::newRow("no format") << spoilt([](Json &j) { j.erase("format"); })
                               << QStringLiteral("no \"format\"");
    QTest::newRow("a log, not an experiment")
        << spoilt([](Json &j) { j["format"] = "mixlab-log/1"; }) << QStringLiteral("mixlab-log/1");
    QTest::newRow("newer format") << spoilt([](Json &j) { j["format"] = "mixlab-experiment/3"; })
                                  << QStringLiteral("newer MixLab");
    QTest::newRow("garbled version") << spoilt([](Json &j) { j["format"] = "mixlab-experiment/x"; })
                                     << QStringLiteral("unknown experiment format");
    QTest::newRow("runs missing") << spoilt([](Json &j) { j.erase("runs"); })
                                  << QStringLiteral("\"runs\" is missing");
    QTest::newRow("steps missing") << spoilt([](Json &j) { j["runs"][1].erase("steps"); })
                                   << QStringLiteral("run 2: \"steps\" is missing");
    QTest::newRow("visible mistyped") << spoilt([](Json &j) { j["runs"][0]["visible"] = "yes"; })
                                      << QStringLiteral("\"visible\" must be true or false");
    QTest::newRow("step row short") << spoilt([](Json &j) {
        j["runs"][0]["steps"]["rows"][3] = Json::array({1, 2});
    }) << QStringLiteral("run 1 steps row 4");
    QTest::newRow("loss a string")
        << spoilt([](Json &j) { j["runs"][0]["steps"]["rows"][0][2] = "low"; })
        << QStringLiteral("\"loss\" must be a number");
    QTest::newRow("bad model") << spoilt([](Json &j) { j["model"]["layers"][1]["units"] = -5; })
                               << QStringLiteral("layer 1");
    QTest::newRow("bad status") << spoilt([](Json &j) { j["runs"][2]["status"] = "exploded"; })
                                << QStringLiteral("unknown status");
    QTest::newRow("bad policy") << spoilt([](Json &j) { j["compare_policies"][0] = "fp8"; })
                                << QStringLiteral("fp8");
    QTest::newRow("bad event kind")
        << spoilt([](Json &j) { j["runs"][0]["events"][1]["kind"] = "boom"; })
        << QStringLiteral("unknown event kind");
    QTest::newRow("bad colour") << spoilt([](Json &j) { j["runs"][0]["color"] = "not-a-colour"; })
                                << QStringLiteral("\"color\"");
}

void TestExperiment::badFilesRefused()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.mixlab.json"));
    writeAll(path, content);

    RunStore store;
    const int kept = store.addRun(RunConfig{}, QStringLiteral("{}"), store.newGroup());
    store.appendSteps(kept, {StepMetrics{}});
    QSignalSpy added(&store, &RunStore::runAdded);
    QSignalSpy removed(&store, &RunStore::runRemoved);
    ExperimentFile file;
    file.model.name = "untouched";
    QString error;
    QVERIFY(!loadExperiment(path, &file, &store, &error));
    QVERIFY2(error.contains(expected), qPrintable(error));
    QVERIFY2(error.contains(path), qPrintable(error));
    QCOMPARE(added.count(), 0);
    QCOMPARE(removed.count(), 0);
    QCOMPARE(store.runIds(), std::vector<int>{kept});
    QCOMPARE(store.run(kept)->steps.size(), std::size_t(1));
    QCOMPARE(file.model.name, std::string("untouched"));
}

void TestExperiment::missingFileRefused()
{
    RunStore store;
    ExperimentFile file;
    QString error;
    QVERIFY(!loadExperiment(QStringLiteral("/nonexistent/x.mixlab.json"), &file, &store, &error));
    QVERIFY2(error.contains(QStringLiteral("/nonexistent/x.mixlab.json")), qPrintable(error));
}

void TestExperiment::unwritablePathRefused()
{
    RunStore store;
    fillStore(store);
    QString error;
    QVERIFY(!saveExperiment(QStringLiteral("/nonexistent/folder/x.mixlab.json"), someFile(), store,
                            &error));
    QVERIFY2(error.contains(QStringLiteral("/nonexistent/folder/x.mixlab.json")),
             qPrintable(error));
}

// A file the app saved as mixlab-experiment/1 (tests/data/format-v1) opens with the same
// runs, metrics and profiles, and saves as the current format without losing any.
void TestExperiment::oldFileOpens()
{
    const QString path = mixlab::test::format_v1_path("app.mixlab.json");
    const Plain file = Plain::parse(mixlab::test::format_v1_text("app.mixlab.json"));
    QCOMPARE(file["format"].get<std::string>(), std::string("mixlab-experiment/1"));
    RunStore store;
    ExperimentFile loaded;
    QString error;
    QVERIFY2(loadExperiment(path, &loaded, &store, &error), qPrintable(error));
    QCOMPARE(loaded.model.name, std::string("mnist-mlp"));
    QVERIFY(loaded.comparePolicies == (std::vector<Policy>{Policy::FP32, Policy::MixedFP16}));
    const std::vector<int> ids = store.runIds();
    QCOMPARE(ids.size(), std::size_t(2));
    for (std::size_t k = 0; k < ids.size(); ++k) {
        const RunRecord &r = *store.run(ids[k]);
        const Plain &saved = file["runs"][k];
        QCOMPARE(r.name.toStdString(), saved["name"].get<std::string>());
        QCOMPARE(r.status, RunRecord::Status::Finished);
        QCOMPARE(r.group, store.run(ids[0])->group);
        QCOMPARE(r.config.policy, k == 0 ? Policy::FP32 : Policy::MixedFP16);
        QCOMPARE(r.steps.size(), saved["steps"]["rows"].size());
        QCOMPARE(r.steps.size(), std::size_t(10));
        for (std::size_t i = 0; i < r.steps.size(); ++i) {
            const Plain &row = saved["steps"]["rows"][i]; // step, epoch, loss, ... (columns)
            QCOMPARE(r.steps[i].step, row[0].get<std::int64_t>());
            QCOMPARE(r.steps[i].loss, float(row[2].get<double>()));
            QCOMPARE(r.steps[i].wall_ms, row[5].get<double>());
            QCOMPARE(r.steps[i].loss_scale, float(row[7].get<double>()));
        }
        QCOMPARE(r.epochs.size(), saved["epochs"]["rows"].size());
        QCOMPARE(r.events.size(), saved["events"].size());
        QCOMPARE(r.events.back().event.message,
                 saved["events"].back()["message"].get<std::string>());
        QVERIFY(r.summary.has_value());
        QCOMPARE(r.summary->median_step_ms, saved["summary"]["median_step_ms"].get<double>());
        QCOMPARE(r.summary->final_test_accuracy.value_or(-1),
                 float(saved["summary"]["final_test_accuracy"].get<double>()));
        QVERIFY(r.context.has_value());
        QCOMPARE(r.context->environment.backend, BackendKind::Cpu);
        QCOMPARE(r.context->environment.cpu_model,
                 saved["context"]["environment"]["cpu_model"].get<std::string>());
        // The profile under version 1's keys.
        const Plain &profile = saved["profile"];
        QVERIFY(r.profile.has_value());
        QCOMPARE(r.profile->steps, profile["steps"].get<int>());
        QCOMPARE(r.profile->replayed, profile["replayed"].get<bool>());
        QCOMPARE(r.profile->phase_ms[std::size_t(StepPhase::Forward)],
                 profile["phases_ms"]["forward"].get<double>());
        QCOMPARE(r.profile->device_ms, profile["device_ms"].get<double>());
        QCOMPARE(r.profile->step_ms, profile["step_ms"].get<double>());
        QCOMPARE(r.profile->wall_ms, profile["wall_ms"].get<double>());
        QCOMPARE(r.profile->gpu_busy_fraction, profile["gpu_busy_fraction"].get<double>());
        QCOMPARE(r.profile->layers.size(), profile["layers"].size());
        for (std::size_t i = 0; i < r.profile->layers.size(); ++i) {
            QCOMPARE(r.profile->layers[i].bytes, profile["layers"][i]["bytes"].get<double>());
            QCOMPARE(r.profile->layers[i].tensor_core_note,
                     profile["layers"][i]["tensor_core_note"].get<std::string>());
        }
    }

    // Saved again it is the current format, and opens with everything it had.
    QTemporaryDir dir;
    const QString again = dir.filePath(QStringLiteral("again.mixlab.json"));
    QVERIFY2(saveExperiment(again, loaded, store, &error), qPrintable(error));
    QCOMPARE(Plain::parse(readAll(again).toStdString())["format"].get<std::string>(),
             std::string(k_experimentFormat));
    RunStore reloaded;
    ExperimentFile file2;
    QVERIFY2(loadExperiment(again, &file2, &reloaded, &error), qPrintable(error));
    QCOMPARE(reloaded.runIds().size(), ids.size());
    for (std::size_t k = 0; k < ids.size(); ++k)
        compareRuns(*reloaded.run(reloaded.runIds()[k]), *store.run(ids[k]));
}

// The test of one serializer: a profile `mixlab-cli explain --json` wrote reads
// into the app and is saved with the same keys and values; a profile the app saved reads
// back from the CLI's form.
void TestExperiment::profileSharedWithCli()
{
    QTemporaryDir dir;
    QString error;
    // mixlab-cli's form -> the app. The CLI's profiles (mixlab-explain/1's phase_breakdown,
    // whose keys version 2 of both documents kept) into runs of the store.
    const std::string cliText = mixlab::test::format_v1_text("cli-explain.json");
    const Plain cli = Plain::parse(cliText);
    const ExplainDocument explained = parse_explain_json(cliText);
    RunStore store;
    std::mt19937 rng(3);
    for (const RunFacts &f : explained.runs) {
        RunRecord r = fabricate(rng, f.policy, 10, 42);
        r.profile = f.profile;
        store.insertRecord(r);
    }
    const QString path = dir.filePath(QStringLiteral("from-cli.mixlab.json"));
    QVERIFY2(saveExperiment(path, someFile(), store, &error), qPrintable(error));
    const Plain saved = Plain::parse(readAll(path).toStdString());
    for (std::size_t i = 0; i < explained.runs.size(); ++i) {
        Plain expected = cli["phase_breakdown"][i];
        expected.erase("policy"); // the entry's own: the run it belongs to
        const Plain &appProfile = saved["runs"][i]["profile"];
        QVERIFY2(appProfile == expected, Plain::diff(expected, appProfile).dump().c_str());
    }
    RunStore loaded;
    ExperimentFile file;
    QVERIFY2(loadExperiment(path, &file, &loaded, &error), qPrintable(error));
    for (std::size_t i = 0; i < explained.runs.size(); ++i)
        mixlab::test::compare_profiles(*loaded.run(loaded.runIds()[i])->profile,
                                       *explained.runs[i].profile);

    // The app -> mixlab-cli's form: the profiles of a file the app saved, in an explain
    // document as the CLI writes it, read back by the CLI's reader.
    RunStore app;
    ExperimentFile appFile;
    QVERIFY2(
        loadExperiment(mixlab::test::format_v1_path("app.mixlab.json"), &appFile, &app, &error),
        qPrintable(error));
    const QString appSaved = dir.filePath(QStringLiteral("app-now.mixlab.json"));
    QVERIFY2(saveExperiment(appSaved, appFile, app, &error), qPrintable(error));
    const Plain appPlain = Plain::parse(readAll(appSaved).toStdString());
    std::vector<RunFacts> facts;
    for (int id : app.runIds()) {
        RunFacts f;
        f.policy = app.run(id)->config.policy;
        f.profile = app.run(id)->profile;
        facts.push_back(f);
    }
    const std::string cliForm = explain_to_json(facts, {});
    const Plain cliPlain = Plain::parse(cliForm);
    const ExplainDocument back = parse_explain_json(cliForm);
    for (std::size_t i = 0; i < facts.size(); ++i) {
        QVERIFY2(cliPlain["runs"][i]["profile"] == appPlain["runs"][i]["profile"],
                 Plain::diff(appPlain["runs"][i]["profile"], cliPlain["runs"][i]["profile"])
                     .dump()
                     .c_str());
        mixlab::test::compare_profiles(*back.runs[i].profile, *app.run(app.runIds()[i])->profile);
    }
}

QTEST_GUILESS_MAIN(TestExperiment)
#include "tst_experiment.moc"
