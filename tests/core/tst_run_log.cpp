// RunLog fed a made-up sequence of metrics: what it records, the JSON and CSV it writes
// (read back field by field), atomic writing, the up-front path check, and the
// environment description.
#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_log.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "format_v1.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

using namespace mixlab;
using Json = nlohmann::json;

namespace {

const char* k_model = R"({"format": "mixlab-model/1", "name": "log-mlp", "layers": [
    {"type": "flatten"}, {"type": "dense", "units": 24, "activation": "relu"},
    {"type": "dense", "units": 10}]})";

// Metrics that look like a run's: random but never zero, seeded.
std::vector<StepMetrics> fake_steps(int n, std::uint32_t seed, int steps_per_epoch)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0.05f, 3.0f);
    std::vector<StepMetrics> out;
    double wall = 0;
    float scale = 65536.0f;
    for (int i = 1; i <= n; ++i) {
        StepMetrics m;
        m.step = i;
        m.epoch = 1 + (i - 1) / steps_per_epoch;
        m.loss = u(rng);
        m.accuracy = u(rng) / 3.0f;
        m.step_ms = u(rng);
        wall += m.step_ms + u(rng);
        m.wall_ms = wall;
        m.samples_per_s = 32.0 * 1000.0 / m.step_ms;
        m.loss_scale = scale;
        m.overflow = i % 7 == 3;
        m.skipped = m.overflow;
        if (m.overflow) scale *= 0.5f;
        m.next_loss_scale = scale;
        out.push_back(m);
    }
    return out;
}

EpochMetrics fake_epoch(int epoch, std::uint32_t seed)
{
    std::mt19937 rng(seed + std::uint32_t(epoch));
    std::uniform_real_distribution<float> u(0.05f, 1.0f);
    EpochMetrics e;
    e.epoch = epoch;
    e.train_loss = u(rng);
    e.train_accuracy = u(rng);
    e.test_loss = u(rng);
    e.test_accuracy = u(rng);
    e.seconds = u(rng) * 10;
    e.skipped_steps = epoch;
    return e;
}

RunSummary fake_summary(std::int64_t steps)
{
    RunSummary s;
    s.steps = steps;
    s.skipped_steps = 3;
    s.epochs_done = 2;
    s.mean_step_ms = 1.234567;
    s.median_step_ms = 1.111111;
    s.final_train_loss = 0.4321f;
    s.final_test_loss = 0.5432f;
    s.final_test_accuracy = 0.8765f;
    s.final_loss_scale = 8192.0f;
    s.wall_seconds = 12.5;
    s.stopped = false;
    return s;
}

// Counts what a RunLog passes on.
struct CountingSink : MetricsSink {
    int steps = 0, epochs = 0, events = 0, last_run = -1;
    void on_step(int run, const StepMetrics&) override
    {
        ++steps;
        last_run = run;
    }
    void on_epoch(int run, const EpochMetrics&) override
    {
        ++epochs;
        last_run = run;
    }
    void on_event(int run, const RunEvent&) override
    {
        ++events;
        last_run = run;
    }
};

std::string read_file(const QString& path)
{
    std::ifstream in(path.toStdString());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::string item;
    std::istringstream in(s);
    while (std::getline(in, item, sep)) out.push_back(item);
    return out;
}

// A float written to JSON must read back as the same float: the log keeps float
// metrics exactly (shortest round-trip decimal), so the comparison is exact.
bool same_float(const Json& j, float v)
{
    if (!std::isfinite(v)) return j.is_null();
    return j.is_number() && float(j.get<double>()) == v;
}

} // namespace

class TestRunLog : public QObject {
    Q_OBJECT

private:
    ModelSpec m_spec;
    Graph m_graph;
    Environment m_env;

    RunConfig config_for(Policy p) const
    {
        RunConfig c;
        c.policy = p;
        c.batch_size = 32;
        c.epochs = 2;
        c.seed = 1234;
        c.dataset.name = "synthetic";
        return c;
    }

private slots:
    void initTestCase()
    {
        m_spec = parse_model_spec(k_model);
        m_graph = build_graph(m_spec, Shape{{8, 8, 3}}, 10);
        DeviceInfo cpu;
        cpu.backend = BackendKind::Cpu;
        cpu.name = "CPU (no CUDA device)";
        m_env = describe_environment(cpu);
    }

    // A process killed mid-run keeps every finished epoch: the files are rewritten at
    // each epoch end, not before; a folder that vanished costs one warning, not the run.
    void savesEachEpoch()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string json = dir.filePath("run.json").toStdString();
        const std::string csv = dir.filePath("run.csv").toStdString();
        RunLog log;
        log.add_run(config_for(Policy::FP32));
        log.save_each_epoch(json, csv);
        const auto steps = fake_steps(20, 11, 10);
        for (int i = 0; i < 10; ++i) log.on_step(0, steps[std::size_t(i)]);
        QVERIFY(!QFile::exists(QString::fromStdString(json))); // nothing before an epoch ends
        log.on_epoch(0, fake_epoch(1, 11));
        for (int i = 10; i < 15; ++i) log.on_step(0, steps[std::size_t(i)]);
        // As if killed now: the files hold epoch 1 and its 10 steps, not the 5 after.
        std::ifstream f(json);
        QVERIFY(f.good());
        const nlohmann::json doc = nlohmann::json::parse(f); // a train log: one run, top level
        QCOMPARE(doc["epochs"].size(), std::size_t(1));
        QCOMPARE(doc["steps"].size(), std::size_t(10));
        QFile c(QString::fromStdString(csv));
        QVERIFY(c.open(QIODevice::ReadOnly));
        QCOMPARE(c.readAll().count('\n'), 1 + 10); // header + one row per step

        RunLog lost;
        lost.add_run(config_for(Policy::FP32));
        lost.save_each_epoch(dir.filePath("gone/run.json").toStdString(), std::nullopt);
        lost.on_epoch(0, fake_epoch(1, 12));
        lost.on_epoch(0, fake_epoch(2, 12));
        QCOMPARE(lost.events(0).size(), std::size_t(1)); // warned once
        QCOMPARE(lost.events(0).front().kind, RunEvent::Kind::Warning);
        QVERIFY(lost.events(0).front().message.find("epoch 1") != std::string::npos);
        QCOMPARE(lost.epochs(0).size(), std::size_t(2));
    }

    void recordsAndForwards()
    {
        RunLog log;
        CountingSink next;
        log.forward_to(&next);
        log.add_run(config_for(Policy::FP32));
        const auto steps = fake_steps(25, 7, 10);
        for (const auto& s : steps) log.on_step(0, s);
        log.on_epoch(0, fake_epoch(1, 7));
        log.on_event(0, RunEvent{RunEvent::Kind::ScaleChange, 3, "loss scale 65536 -> 32768"});
        QCOMPARE(next.steps, 25);
        QCOMPARE(next.epochs, 1);
        QCOMPARE(next.events, 1);
        QCOMPARE(log.steps(0).size(), std::size_t(25));
        QCOMPARE(log.steps(0)[12].loss, steps[12].loss);
        QCOMPARE(log.epochs(0).size(), std::size_t(1));
        QCOMPARE(log.events(0).front().step, std::int64_t(3));
        QVERIFY(!log.summary(0).has_value());
        log.set_summary(0, fake_summary(25));
        QVERIFY(log.summary(0).has_value());
        QVERIFY_THROWS_EXCEPTION(std::out_of_range, log.steps(5));
    }

    void unannouncedRunIsKept()
    {
        // The trainer may report run 2 of a group nobody registered: keep, not drop.
        RunLog log(RunLog::Kind::Compare);
        log.add_run(config_for(Policy::FP32));
        log.on_step(2, fake_steps(1, 3, 10).front());
        QCOMPARE(log.run_count(), 3);
        QCOMPARE(log.steps(2).size(), std::size_t(1));
        QVERIFY(log.steps(1).empty());
    }

    void singleRunJson()
    {
        RunLog log;
        log.set_model(m_spec, m_graph);
        log.set_environment(m_env);
        const RunConfig cfg = config_for(Policy::MixedFP16);
        log.add_run(cfg);
        auto steps = fake_steps(23, 11, 10);
        steps[5].loss = std::numeric_limits<float>::quiet_NaN(); // a diverged step
        steps[6].loss = std::numeric_limits<float>::infinity();
        steps[0].loss = 0.3f; // widened to double this would print 0.30000001192092896
        for (const auto& s : steps) log.on_step(0, s);
        log.on_epoch(0, fake_epoch(1, 11));
        log.on_epoch(0, fake_epoch(2, 11));
        log.on_event(0, RunEvent{RunEvent::Kind::SkippedStep, 3, "step 3 skipped: overflow"});
        log.on_event(0,
                     RunEvent{RunEvent::Kind::Warning, 0, "a \"quoted\" warning\nwith a newline"});
        log.set_summary(0, fake_summary(23));

        const std::string text = log.to_json();
        QVERIFY2(text.find("\"loss\": 0.3,") != std::string::npos, text.substr(0, 2000).c_str());
        const Json j = Json::parse(text);
        QCOMPARE(j.at("format").get<std::string>(), std::string(k_log_format));
        QCOMPARE(j.at("kind").get<std::string>(), std::string("train"));
        QVERIFY(!j.contains("runs"));

        const Json& c = j.at("config");
        QCOMPARE(c.at("format").get<std::string>(), std::string(k_run_format));
        QCOMPARE(c.at("policy").get<std::string>(), std::string("mixed_fp16"));
        QCOMPARE(c.at("batch_size").get<int>(), 32);
        QCOMPARE(c.at("seed").get<std::uint64_t>(), std::uint64_t(1234));
        QCOMPARE(c.at("model").at("name").get<std::string>(), std::string("log-mlp"));
        QCOMPARE(c.at("model").at("layers").size(), std::size_t(3));
        // The config in the log is a run config the parser takes back unchanged.
        Json run_only = c;
        run_only.erase("model");
        const RunConfig back = parse_run_config(run_only.dump());
        QCOMPARE(run_config_to_json(back), run_config_to_json(cfg));

        const Json& g = j.at("graph");
        QCOMPARE(g.at("input").get<std::string>(), std::string("8x8x3"));
        QCOMPARE(g.at("classes").get<int>(), 10);
        QCOMPARE(g.at("total_params").get<std::int64_t>(), m_graph.total_params);

        const Json& env = j.at("environment");
        for (const char* key :
             {"backend", "device_name", "compute_capability", "driver_version", "runtime_version",
              "cublas_version", "cudnn_version", "os", "cpu_model", "compiler", "mixlab_version"})
            QVERIFY2(env.contains(key), key);
        QCOMPARE(env.at("backend").get<std::string>(), std::string("cpu"));

        const Json& js = j.at("steps");
        QCOMPARE(js.size(), steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const Json& s = js[i];
            QCOMPARE(s.at("step").get<std::int64_t>(), steps[i].step);
            QCOMPARE(s.at("epoch").get<int>(), steps[i].epoch);
            QVERIFY2(same_float(s.at("loss"), steps[i].loss), s.dump().c_str());
            QVERIFY(same_float(s.at("accuracy"), steps[i].accuracy));
            QVERIFY(same_float(s.at("step_ms"), steps[i].step_ms));
            QVERIFY(same_float(s.at("loss_scale"), steps[i].loss_scale));
            QVERIFY(same_float(s.at("next_loss_scale"), steps[i].next_loss_scale));
            // Host times and rates as measured (to the microsecond and 0.1/s at least).
            QVERIFY(std::abs(s.at("wall_ms").get<double>() - steps[i].wall_ms) <= 0.5e-3 + 1e-9);
            QVERIFY(std::abs(s.at("samples_per_s").get<double>() - steps[i].samples_per_s) <=
                    0.05 + 1e-9);
            QCOMPARE(s.at("overflow").get<bool>(), steps[i].overflow);
            QCOMPARE(s.at("skipped").get<bool>(), steps[i].skipped);
        }
        QVERIFY(js[5].at("loss").is_null());
        QVERIFY(js[6].at("loss").is_null());

        QCOMPARE(j.at("epochs").size(), std::size_t(2));
        const EpochMetrics e2 = fake_epoch(2, 11);
        QCOMPARE(j.at("epochs")[1].at("epoch").get<int>(), 2);
        QVERIFY(same_float(j.at("epochs")[1].at("test_accuracy"), e2.test_accuracy));
        QVERIFY(same_float(j.at("epochs")[1].at("train_loss"), e2.train_loss));
        QCOMPARE(j.at("epochs")[1].at("skipped_steps").get<std::int64_t>(), std::int64_t(2));

        const Json& ev = j.at("events");
        QCOMPARE(ev.size(), std::size_t(2));
        QCOMPARE(ev[0].at("kind").get<std::string>(),
                 std::string(run_event_kind_name(RunEvent::Kind::SkippedStep)));
        QCOMPARE(ev[1].at("message").get<std::string>(),
                 std::string("a \"quoted\" warning\nwith a newline"));

        const Json& sum = j.at("summary");
        QCOMPARE(sum.at("steps").get<std::int64_t>(), std::int64_t(23));
        QCOMPARE(sum.at("skipped_steps").get<std::int64_t>(), std::int64_t(3));
        QCOMPARE(sum.at("mean_step_ms").get<double>(), 1.234567);
        QVERIFY(same_float(sum.at("final_test_accuracy"), 0.8765f));
        QVERIFY(same_float(sum.at("final_loss_scale"), 8192.0f));
        QCOMPARE(sum.at("stopped").get<bool>(), false);
    }

    void unfinishedRunHasNullSummary()
    {
        RunLog log;
        log.add_run(config_for(Policy::FP32));
        const Json j = Json::parse(log.to_json());
        QVERIFY(j.at("summary").is_null());
        QVERIFY(j.at("steps").is_array());
        QVERIFY(j.at("steps").empty());
        QVERIFY(j.at("environment").is_null()); // never described: says so, no made-up facts
    }

    void compareJson()
    {
        RunLog log(RunLog::Kind::Compare);
        log.set_model(m_spec, m_graph);
        log.set_environment(m_env);
        const Policy policies[] = {Policy::FP32, Policy::MixedFP16, Policy::MixedBF16};
        for (Policy p : policies) log.add_run(config_for(p));
        // Lockstep: the runs' steps interleave.
        const auto a = fake_steps(12, 1, 5), b = fake_steps(12, 2, 5), c = fake_steps(9, 3, 5);
        for (std::size_t i = 0; i < 12; ++i) {
            log.on_step(0, a[i]);
            log.on_step(1, b[i]);
            if (i < c.size()) log.on_step(2, c[i]);
        }
        log.on_epoch(1, fake_epoch(1, 2));
        log.on_event(1, RunEvent{RunEvent::Kind::ScaleChange, 4, "65536 -> 32768"});
        log.set_summary(0, fake_summary(12));
        log.set_summary(1, fake_summary(12));

        const Json j = Json::parse(log.to_json());
        QCOMPARE(j.at("kind").get<std::string>(), std::string("compare"));
        QVERIFY(!j.contains("steps"));
        QVERIFY(!j.contains("summary"));
        const std::vector<std::string> names = j.at("config").at("policies");
        QCOMPARE(names, (std::vector<std::string>{"fp32", "mixed_fp16", "mixed_bf16"}));
        const Json& runs = j.at("runs");
        QCOMPARE(runs.size(), std::size_t(3));
        for (int r = 0; r < 3; ++r) {
            QCOMPARE(runs[r].at("run").get<int>(), r);
            QCOMPARE(runs[r].at("policy").get<std::string>(),
                     std::string(policy_name(policies[r])));
            QCOMPARE(runs[r].at("config").at("policy").get<std::string>(),
                     std::string(policy_name(policies[r])));
            QVERIFY(runs[r].at("config").contains("model"));
        }
        QCOMPARE(runs[0].at("steps").size(), std::size_t(12));
        QCOMPARE(runs[2].at("steps").size(), std::size_t(9));
        QVERIFY(same_float(runs[1].at("steps")[4].at("loss"), b[4].loss));
        QVERIFY(same_float(runs[2].at("steps")[8].at("step_ms"), c[8].step_ms));
        QCOMPARE(runs[1].at("epochs").size(), std::size_t(1));
        QVERIFY(runs[0].at("epochs").empty());
        QCOMPARE(runs[1].at("events").size(), std::size_t(1));
        QVERIFY(runs[2].at("summary").is_null());
        QCOMPARE(runs[1].at("summary").at("steps").get<std::int64_t>(), std::int64_t(12));
    }

    // Runs of two compare groups in one log (the app's export) trained different models:
    // each run's config and graph are its own, the top level the first run's.
    void eachRunCarriesItsModel()
    {
        ModelSpec wider = m_spec;
        wider.name = "log-mlp-wider";
        wider.layers[1].units *= 2;
        wider.layers.back().force_fp32 = true;
        const Graph wider_graph = build_graph(wider, m_graph.input, m_graph.classes);
        RunLog log(RunLog::Kind::Compare);
        log.set_environment(m_env);
        for (int r = 0; r < 4; ++r) {
            const int index =
                log.add_run(config_for(r % 2 == 0 ? Policy::FP32 : Policy::MixedFP16));
            if (r < 2)
                log.set_run_model(index, m_spec, m_graph);
            else
                log.set_run_model(index, wider, wider_graph);
        }
        RunSummary stopped = fake_summary(5);
        stopped.stopped = true;
        stopped.final_test_loss.reset();
        stopped.final_test_accuracy.reset();
        log.set_summary(3, stopped);

        const Json j = Json::parse(log.to_json());
        const Json& runs = j.at("runs");
        QCOMPARE(runs.size(), std::size_t(4));
        for (int r = 0; r < 4; ++r) {
            const ModelSpec& expected = r < 2 ? m_spec : wider;
            const Graph& graph = r < 2 ? m_graph : wider_graph;
            QVERIFY(parse_model_spec(runs[r].at("config").at("model").dump()) == expected);
            QCOMPARE(runs[r].at("graph").at("total_params").get<std::int64_t>(),
                     graph.total_params);
        }
        QVERIFY(parse_model_spec(j.at("config").at("model").dump()) == m_spec);
        QCOMPARE(j.at("graph").at("total_params").get<std::int64_t>(), m_graph.total_params);
        // A run stopped before it evaluated has no test numbers, not zeros.
        const Json& sum = runs[3].at("summary");
        QVERIFY(sum.at("final_test_accuracy").is_null());
        QVERIFY(sum.at("final_test_loss").is_null());
        QVERIFY(sum.at("stopped").get<bool>());
    }

    void csvOneRowPerStep()
    {
        RunLog log(RunLog::Kind::Compare);
        log.add_run(config_for(Policy::FP32));
        log.add_run(config_for(Policy::MixedFP16));
        auto a = fake_steps(17, 5, 10), b = fake_steps(17, 6, 10);
        b[2].loss = std::numeric_limits<float>::quiet_NaN();
        for (std::size_t i = 0; i < a.size(); ++i) {
            log.on_step(0, a[i]);
            log.on_step(1, b[i]);
        }
        const auto lines = split(log.to_csv(), '\n');
        QCOMPARE(lines.size(), std::size_t(1 + 34));
        const auto header = split(lines[0], ',');
        QCOMPARE(header,
                 (std::vector<std::string>{"run", "policy", "step", "epoch", "loss", "accuracy",
                                           "step_ms", "wall_ms", "samples_per_s", "loss_scale",
                                           "next_loss_scale", "overflow", "skipped"}));
        // Rows come run by run; check a few cells of each.
        for (std::size_t i = 0; i < a.size(); ++i) {
            const auto row = split(lines[1 + i], ',');
            QCOMPARE(row.size(), header.size());
            QCOMPARE(row[0], std::string("0"));
            QCOMPARE(row[1], std::string("fp32"));
            QCOMPARE(std::stoll(row[2]), a[i].step);
            QCOMPARE(std::stof(row[4]), a[i].loss); // shortest round-trip: exact
            QCOMPARE(std::stof(row[6]), a[i].step_ms);
            QCOMPARE(row[11], std::string(a[i].overflow ? "1" : "0"));
        }
        const auto nan_row = split(lines[1 + a.size() + 2], ',');
        QCOMPARE(nan_row[1], std::string("mixed_fp16"));
        QCOMPARE(nan_row[4], std::string("nan"));
    }

    void writesAtomically()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString json_path = dir.filePath("run.json");
        const QString csv_path = dir.filePath("run.csv");
        {
            QFile old(json_path);
            QVERIFY(old.open(QIODevice::WriteOnly));
            old.write("old contents that are longer than nothing");
        }
        RunLog log;
        log.set_model(m_spec, m_graph);
        log.add_run(config_for(Policy::FP32));
        for (const auto& s : fake_steps(4, 9, 10)) log.on_step(0, s);
        log.write_json(json_path.toStdString());
        log.write_csv(csv_path.toStdString());

        QCOMPARE(read_file(json_path), log.to_json());
        QCOMPARE(read_file(csv_path), log.to_csv());
        QVERIFY(!QFile::exists(json_path + ".tmp"));
        QVERIFY(!QFile::exists(csv_path + ".tmp"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 2);
    }

    void writeFailureNamesPath()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("missing/sub/run.json").toStdString();
        try {
            write_file_atomically(path, "{}");
            QFAIL("no error for a missing folder");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(path) != std::string::npos, e.what());
        }
    }

    void checkOutputPath_data()
    {
        QTest::addColumn<QString>("relative"); // inside the temp dir; "@file" is a plain file
        QTest::addColumn<bool>("ok");
        QTest::newRow("new file") << "log.json" << true;
        QTest::newRow("existing file") << "@file" << true;
        QTest::newRow("missing folder") << "nope/log.json" << false;
        QTest::newRow("parent is a file") << "@file/log.json" << false;
        QTest::newRow("path is a folder") << "." << false;
        QTest::newRow("empty name") << "" << false;
    }

    void checkOutputPath()
    {
        QFETCH(QString, relative);
        QFETCH(bool, ok);
        QTemporaryDir dir;
        const QString file = dir.filePath("plain.txt");
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("x");
        }
        QString path = relative.isEmpty() ? QString() : dir.filePath(relative);
        path.replace(dir.filePath("@file"), file);
        const QStringList before =
            QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot);
        if (ok) {
            check_output_path(path.toStdString(), "--log-json");
        } else {
            try {
                check_output_path(path.toStdString(), "--log-json");
                QFAIL("no error");
            } catch (const InputError& e) {
                const std::string msg = e.what();
                QVERIFY2(msg.find("--log-json") != std::string::npos, e.what());
                if (!path.isEmpty())
                    QVERIFY2(msg.find(path.toStdString()) != std::string::npos, e.what());
            }
        }
        // The probe leaves nothing behind.
        QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), before);
    }

    // A log written now reads back into a RunLog that writes the same document again.
    void readsBack()
    {
        RunLog log(RunLog::Kind::Compare);
        log.set_model(m_spec, m_graph);
        log.set_environment(m_env);
        log.add_run(config_for(Policy::FP32));
        log.add_run(config_for(Policy::MixedFP16));
        auto a = fake_steps(12, 1, 5), b = fake_steps(12, 2, 5);
        b[3].loss = std::numeric_limits<float>::quiet_NaN();
        for (std::size_t i = 0; i < a.size(); ++i) {
            log.on_step(0, a[i]);
            log.on_step(1, b[i]);
        }
        log.on_epoch(1, fake_epoch(1, 2));
        log.on_event(1, RunEvent{RunEvent::Kind::ScaleChange, 4, "65536 -> 32768"});
        Fp8AmaxJump jump;
        jump.layer = "layer 2";
        jump.operand = Fp8Operand::W;
        jump.amax = 96;
        jump.history_max = 2;
        log.on_event(1, RunEvent{RunEvent::Kind::Warning, 9, "fp8 amax jump: layer 2 w", jump});
        RunSummary halted = fake_summary(12);
        halted.halted = "loss is NaN at step 4";
        log.set_summary(1, halted);

        const RunLog back = RunLog::parse(log.to_json());
        QCOMPARE(back.to_json(), log.to_json());
        QCOMPARE(back.run_count(), 2);
        QCOMPARE(back.steps(1).size(), b.size());
        QVERIFY(std::isnan(back.steps(1)[3].loss));
        QCOMPARE(back.steps(0)[7].loss, a[7].loss);
        QCOMPARE(back.summary(1)->halted, halted.halted);
        QVERIFY(!back.summary(0));
        QCOMPARE(back.environment()->cpu_model, m_env.cpu_model);
        QCOMPARE(back.config(1).policy, Policy::MixedFP16);
        // An event's facts (an fp8 amax jump's) come back with it; the others have none.
        QCOMPARE(back.events(1).size(), std::size_t(2));
        QVERIFY(!back.events(1)[0].fp8_amax_jump);
        QVERIFY(back.events(1)[1].fp8_amax_jump == jump);
        QCOMPARE(back.events(1)[1].message, std::string("fp8 amax jump: layer 2 w"));

        RunLog train;
        train.add_run(config_for(Policy::FP32));
        for (const auto& s : fake_steps(3, 4, 10)) train.on_step(0, s);
        QCOMPARE(RunLog::parse(train.to_json()).to_json(), train.to_json());
        // A run that started from a weights file says so in its config, and reads back.
        QVERIFY(Json::parse(train.to_json())["config"].count("start_weights") == 0);
        train.set_run_start_weights(0, "/data/seed weights.safetensors");
        QCOMPARE(Json::parse(train.to_json())["config"]["start_weights"].get<std::string>(),
                 std::string("/data/seed weights.safetensors"));
        const RunLog started = RunLog::parse(train.to_json());
        QCOMPARE(started.start_weights(0), std::string("/data/seed weights.safetensors"));
        QCOMPARE(started.to_json(), train.to_json());
        log.set_run_start_weights(1, "w.safetensors");
        QCOMPARE(RunLog::parse(log.to_json()).start_weights(1), std::string("w.safetensors"));
        QVERIFY(RunLog::parse(log.to_json()).start_weights(0).empty());

        Json bad = Json::parse(log.to_json());
        bad["runs"][1]["steps"][2]["skipped"] = 1;
        try {
            RunLog::parse(bad.dump());
            QFAIL("a mistyped step was read");
        } catch (const InputError& e) {
            QVERIFY2(
                std::string(e.what()).find("run 2 step 3: \"skipped\" must be true or false") == 0,
                e.what());
        }
    }

    // Logs MixLab 0.1.0 wrote (the CLI's train and compare logs, the app's export) read
    // back, and write the same document again: nothing of them is lost or changed.
    void oldLogsReadBack_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("runs");
        QTest::newRow("mixlab-cli train") << "cli-train-log.json" << 1;
        QTest::newRow("mixlab-cli compare") << "cli-compare-log.json" << 2;
        QTest::newRow("the app's export") << "app-log.json" << 2;
    }

    void oldLogsReadBack()
    {
        QFETCH(QString, file);
        QFETCH(int, runs);
        const std::string text = test::format_v1_text(qPrintable(file));
        QVERIFY(!text.empty());
        const RunLog log = RunLog::parse(text);
        QCOMPARE(log.run_count(), runs);
        const Json original = Json::parse(text);
        const Json again = Json::parse(log.to_json());
        QVERIFY2(again == original, Json::diff(original, again).dump().substr(0, 2000).c_str());
        for (int r = 0; r < runs; ++r) {
            const Json& run = runs == 1 ? original : original["runs"][std::size_t(r)];
            QCOMPARE(log.steps(r).size(), std::size_t(10));
            QCOMPARE(log.steps(r).size(), run["steps"].size());
            QCOMPARE(log.epochs(r).size(), run["epochs"].size());
            QCOMPARE(log.events(r).size(), run["events"].size());
            QCOMPARE(log.steps(r)[9].loss, float(run["steps"][9]["loss"].get<double>()));
            QCOMPARE(log.summary(r)->median_step_ms,
                     run["summary"]["median_step_ms"].get<double>());
        }
        QCOMPARE(log.environment()->backend, BackendKind::Cpu);
    }

    void environmentCpu()
    {
        QCOMPARE(m_env.backend, BackendKind::Cpu);
        QCOMPARE(m_env.compute_capability, std::string("cpu"));
        QCOMPARE(m_env.driver_version, std::string("cpu"));
        QCOMPARE(m_env.cudnn_version, std::string("cpu"));
        QCOMPARE(m_env.mixlab_version, std::string(MIXLAB_VERSION));
        QVERIFY(!m_env.os.empty());
        QVERIFY(!m_env.cpu_model.empty());
        QVERIFY(!m_env.compiler.empty());
        QVERIFY(m_env.cpu_threads >= 1);
        QVERIFY(m_env.host_memory_bytes > 0);
        const Json j = environment_to_json(m_env);
        QCOMPARE(j.at("os").get<std::string>(), m_env.os);
        QCOMPARE(j.at("cpu_threads").get<int>(), m_env.cpu_threads);
    }

    void environmentCuda()
    {
        DeviceInfo gpu;
        gpu.backend = BackendKind::Cuda;
        gpu.name = "NVIDIA H200";
        gpu.cc_major = 9;
        gpu.cc_minor = 0;
        gpu.memory_bytes = std::int64_t(141) << 30;
        gpu.tensor_cores = gpu.bf16 = gpu.tf32 = true;
        gpu.driver_version = "13.0";
        gpu.runtime_version = "13.0";
        gpu.cublas_version = "13.1.0";
        gpu.cudnn_version = ""; // not linked: says unknown rather than nothing
        const Environment e = describe_environment(gpu);
        QCOMPARE(e.compute_capability, std::string("9.0"));
        QCOMPARE(e.device_name, std::string("NVIDIA H200"));
        QCOMPARE(e.cublas_version, std::string("13.1.0"));
        QCOMPARE(e.cudnn_version, std::string("unknown"));
        QVERIFY(e.bf16);
        const Json j = environment_to_json(e);
        QCOMPARE(j.at("device_memory_bytes").get<std::int64_t>(), gpu.memory_bytes);
        QCOMPARE(j.at("compute_capability").get<std::string>(), std::string("9.0"));
    }
};

QTEST_APPLESS_MAIN(TestRunLog)
#include "tst_run_log.moc"
