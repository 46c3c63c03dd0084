// The engine's JSON forms, type by type: each value written and read back equal (non-finite
// numbers as NaN), the keys the documents promise, and the strict reader's messages that
// say where a field is missing or mistyped. Also the loss-scale history rule.
#include "mixlab/device.h"
#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/explain.h"
#include "mixlab/json_io.h"
#include "mixlab/metrics_json.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"

#include <nlohmann/json.hpp>

#include <QtTest>

#include <cmath>
#include <limits>
#include <random>

#include "profile_checks.h"
#include "test_models.h"

using namespace mixlab;
using Json = nlohmann::json;

namespace {

const double k_nan = std::numeric_limits<double>::quiet_NaN();
const float k_inf = std::numeric_limits<float>::infinity();

// What a writer gave, as a reader receives it: through text, as a file holds it.
Json through_text(const nlohmann::ordered_json& j) { return Json::parse(j.dump()); }

// The InputError message `read` throws, or "" when it does not throw.
template <class F>
std::string error_of(F&& read)
{
    try {
        read();
    } catch (const InputError& e) {
        return e.what();
    }
    return {};
}

DeviceInfo some_gpu()
{
    DeviceInfo d;
    d.backend = BackendKind::Cuda;
    d.name = "NVIDIA H200 \"ü\"";
    d.cc_major = 9;
    d.cc_minor = 0;
    d.memory_bytes = std::int64_t(141) << 30;
    d.tensor_cores = d.bf16 = d.tf32 = true;
    d.driver_version = "13.0";
    d.runtime_version = "13.0";
    d.cublas_version = "13.1.0";
    d.cudnn_version = "9.12.0";
    return d;
}

// Full-mantissa floats and doubles, so that a lossy round trip would show.
StepProfile some_profile(std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.001, 3.0);
    StepProfile p;
    p.steps = 7;
    p.replayed = true;
    for (double& ms : p.phase_ms) ms = u(rng);
    p.device_ms = u(rng);
    p.step_ms = u(rng);
    p.wall_ms = u(rng);
    p.overhead_ms = 0;
    p.gpu_busy_fraction = 0.875;
    for (int i = 0; i < 3; ++i) {
        LayerTime l;
        l.path = "layer " + std::to_string(i);
        l.type = i == 1 ? "conv2d" : "dense";
        l.forward_ms = u(rng);
        l.backward_ms = u(rng);
        l.flops = 1e9 * u(rng);
        l.bytes = 1e6 * u(rng);
        l.is_gemm = i != 0;
        l.tensor_cores = i == 2;
        l.tensor_core_note = i == 1 ? "channels 3 are not a multiple of 8" : "";
        p.layers.push_back(l);
    }
    p.layers[0].backward_ms = k_nan; // a time that never came back
    return p;
}

RunSummary some_summary()
{
    RunSummary s;
    s.steps = 1234;
    s.skipped_steps = 17;
    s.epochs_done = 3;
    s.mean_step_ms = 1.2345678901234;
    s.median_step_ms = 1.1111111111;
    s.final_train_loss = 0.43219876f;
    s.final_test_loss = 0.54329876f;
    s.final_test_accuracy = 0.87659876f;
    s.final_loss_scale = 8192;
    s.wall_seconds = 61.123456789;
    s.stopped = true;
    s.halted = "loss is NaN at step 1234";
    return s;
}

void compare_summaries(const RunSummary& a, const RunSummary& b)
{
    QCOMPARE(a.steps, b.steps);
    QCOMPARE(a.skipped_steps, b.skipped_steps);
    QCOMPARE(a.epochs_done, b.epochs_done);
    QCOMPARE(a.mean_step_ms, b.mean_step_ms);
    QCOMPARE(a.median_step_ms, b.median_step_ms);
    QVERIFY(test::same_time(a.final_train_loss, b.final_train_loss));
    QVERIFY(a.final_test_loss == b.final_test_loss);
    QVERIFY(a.final_test_accuracy == b.final_test_accuracy);
    QCOMPARE(a.final_loss_scale, b.final_loss_scale);
    QCOMPARE(a.wall_seconds, b.wall_seconds);
    QCOMPARE(a.stopped, b.stopped);
    QCOMPARE(a.halted, b.halted);
}

std::vector<StepMetrics> some_steps()
{
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<StepMetrics> out;
    for (int i = 1; i <= 9; ++i) {
        StepMetrics m;
        m.step = i + (std::int64_t(1) << 40); // past 32 bits
        m.epoch = 1 + i / 4;
        m.loss = 2.3f * u(rng);
        m.accuracy = u(rng);
        m.step_ms = 0.5f + u(rng);
        m.wall_ms = 1000.0 * (i + double(u(rng)));
        m.samples_per_s = 64000.0 / (0.5 + double(u(rng)));
        m.loss_scale = std::ldexp(1.0f, 10 + i % 3);
        m.next_loss_scale = m.loss_scale * (i % 3 == 0 ? 0.5f : 1.0f);
        m.overflow = i % 3 == 0;
        m.skipped = m.overflow;
        out.push_back(m);
    }
    out[2].loss = std::numeric_limits<float>::quiet_NaN();
    out[3].loss = k_inf;
    return out;
}

void compare_steps(const std::vector<StepMetrics>& a, const std::vector<StepMetrics>& b)
{
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        const StepMetrics &x = a[i], &y = b[i];
        QCOMPARE(y.step, x.step);
        QCOMPARE(y.epoch, x.epoch);
        // inf is written as null too and comes back as NaN.
        QVERIFY(std::isfinite(x.loss) ? y.loss == x.loss : std::isnan(y.loss));
        QCOMPARE(y.accuracy, x.accuracy);
        QCOMPARE(y.step_ms, x.step_ms);
        QCOMPARE(y.wall_ms, x.wall_ms);
        QCOMPARE(y.samples_per_s, x.samples_per_s);
        QCOMPARE(y.loss_scale, x.loss_scale);
        QCOMPARE(y.next_loss_scale, x.next_loss_scale);
        QCOMPARE(y.overflow, x.overflow);
        QCOMPARE(y.skipped, x.skipped);
    }
}

std::vector<EpochMetrics> some_epochs()
{
    std::vector<EpochMetrics> out;
    for (int e = 1; e <= 3; ++e) {
        EpochMetrics m;
        m.epoch = e;
        m.train_loss = 1.0f / float(e + 2);
        m.train_accuracy = 0.3f * float(e);
        m.test_loss = 1.1f / float(e + 2);
        m.test_accuracy = 0.29f * float(e);
        m.seconds = 3.25 / e;
        m.skipped_steps = e * 2;
        out.push_back(m);
    }
    return out;
}

void compare_epochs(const std::vector<EpochMetrics>& a, const std::vector<EpochMetrics>& b)
{
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        QCOMPARE(b[i].epoch, a[i].epoch);
        QCOMPARE(b[i].train_loss, a[i].train_loss);
        QCOMPARE(b[i].train_accuracy, a[i].train_accuracy);
        QCOMPARE(b[i].test_loss, a[i].test_loss);
        QCOMPARE(b[i].test_accuracy, a[i].test_accuracy);
        QCOMPARE(b[i].seconds, a[i].seconds);
        QCOMPARE(b[i].skipped_steps, a[i].skipped_steps);
    }
}

} // namespace

class TestJsonForms : public QObject {
    Q_OBJECT

private slots:
    void numbers()
    {
        // The shortest decimal that reads back to the float, not the widened double.
        QCOMPARE(json_number(0.3f).dump(), std::string("0.3"));
        QVERIFY(json_number(k_inf).is_null());
        QVERIFY(json_number(k_nan).is_null());
        QCOMPARE(json_number(0.1).dump(), std::string("0.1"));
        for (float f : {1e-45f, 3.4028235e38f, 0.1f, 65536.0f, 1.17549435e-38f})
            QCOMPARE(float(Json::parse(json_number(f).dump()).get<double>()), f);
    }

    void formatVersions()
    {
        QVERIFY(format_version("mixlab-log/1", "mixlab-log/") == 1);
        QVERIFY(format_version("mixlab-experiment/12", "mixlab-experiment/") == 12);
        for (const char* bad : {"mixlab-log/0", "mixlab-log/01", "mixlab-log/+1", "mixlab-log/x",
                                "mixlab-log/", "mixlab-log/1.0", "mixlab-run/1"})
            QVERIFY2(!format_version(bad, "mixlab-log/"), bad);
    }

    // Messages say where the value is and what is wrong with it.
    void readerMessages()
    {
        const Json doc = Json::parse(R"({"runs": [{"name": "a", "steps": "many", "n": 3000000000,
                                          "sub": {"x": 1}, "list": [1, "two"]}]})");
        const JsonReader root(doc);
        const JsonReader run = root.array("runs").element(0, "run");
        QCOMPARE(run.where(), std::string("run 1"));
        QCOMPARE(QString::fromStdString(error_of([&] { run.at("color"); })),
                 QString("run 1: \"color\" is missing"));
        QCOMPARE(QString::fromStdString(error_of([&] { run.at("steps").int64(); })),
                 QString("run 1: \"steps\" must be an integer, got \"many\""));
        QVERIFY(error_of([&] { run.at("n").int32(); }).find("between") != std::string::npos);
        QCOMPARE(run.at("n").int64(), std::int64_t(3000000000));
        QCOMPARE(QString::fromStdString(error_of([&] { run.object("sub").at("y"); })),
                 QString("run 1 sub: \"y\" is missing"));
        QCOMPARE(QString::fromStdString(error_of([&] { run.object("name"); })),
                 QString("run 1: \"name\" must be an object, got \"a\""));
        QCOMPARE(
            QString::fromStdString(error_of([&] { run.array("list").element(1, "item").int64(); })),
            QString("run 1 item 2: must be an integer, got \"two\""));
        QCOMPARE(QString::fromStdString(error_of([&] { root.at("runs").boolean(); })).left(36),
                 QString("\"runs\" must be true or false, got [{"));
        QVERIFY(!run.find("missing").has_value());
        QVERIFY(std::isnan(JsonReader(Json(nullptr)).number()));
    }

    void deviceInfo()
    {
        for (const DeviceInfo& d : {some_gpu(), DeviceInfo{}}) {
            const nlohmann::ordered_json j = device_info_to_json(d);
            std::vector<std::string> keys;
            for (const auto& item : j.items()) keys.push_back(item.key());
            QCOMPARE(keys, (std::vector<std::string>{"backend", "name", "compute_capability",
                                                     "memory_bytes", "tensor_cores", "bf16", "tf32",
                                                     "driver_version", "runtime_version",
                                                     "cublas_version", "cudnn_version"}));
            const Json text = through_text(j);
            const DeviceInfo back = device_info_from_json(JsonReader(text));
            QCOMPARE(back.backend, d.backend);
            QCOMPARE(back.name, d.name);
            QCOMPARE(back.cc_major, d.cc_major);
            QCOMPARE(back.cc_minor, d.cc_minor);
            QCOMPARE(back.memory_bytes, d.memory_bytes);
            QCOMPARE(back.tensor_cores, d.tensor_cores);
            QCOMPARE(back.bf16, d.bf16);
            QCOMPARE(back.tf32, d.tf32);
            QCOMPARE(back.driver_version, d.driver_version);
            QCOMPARE(back.runtime_version, d.runtime_version);
            QCOMPARE(back.cublas_version, d.cublas_version);
            QCOMPARE(back.cudnn_version, d.cudnn_version);
        }
        QCOMPARE(device_info_to_json(some_gpu())["backend"].get<std::string>(),
                 std::string("cuda"));
        QCOMPARE(device_info_to_json(some_gpu())["compute_capability"].get<std::string>(),
                 std::string("9.0"));
        Json bad = through_text(device_info_to_json(some_gpu()));
        bad["compute_capability"] = "9";
        QVERIFY(error_of([&] {
                    device_info_from_json(JsonReader(bad, "run 1 device"));
                }).find("run 1 device: \"compute_capability\" must be \"major.minor\"") == 0);
        bad["compute_capability"] = "8.9";
        bad["backend"] = "tpu";
        QVERIFY(error_of([&] {
                    device_info_from_json(JsonReader(bad));
                }).find("\"cpu\" or \"cuda\"") != std::string::npos);
    }

    // An Environment reads back whole, and gives back the DeviceInfo it describes.
    void environment()
    {
        for (const DeviceInfo& d : {some_gpu(), DeviceInfo{}}) {
            const Environment env = describe_environment(d);
            const Json text = through_text(environment_to_json(env));
            const Environment back = environment_from_json(JsonReader(text));
            QVERIFY(environment_to_json(back) == environment_to_json(env));
            const DeviceInfo device = device_info_of(env);
            QCOMPARE(device.backend, d.backend);
            QCOMPARE(device.name, d.name);
            QCOMPARE(device.cc_major, d.cc_major);
            QCOMPARE(device.cc_minor, d.cc_minor);
            QCOMPARE(device.memory_bytes, d.memory_bytes);
            QCOMPARE(device.bf16, d.bf16);
            QVERIFY(environment_to_json(describe_environment(device)) == environment_to_json(env));
        }
        QCOMPARE(device_info_of(describe_environment(some_gpu())).cudnn_version,
                 std::string("9.12.0"));
        Json bad = through_text(environment_to_json(describe_environment(DeviceInfo{})));
        bad.erase("cpu_threads");
        QCOMPARE(QString::fromStdString(error_of(
                     [&] { environment_from_json(JsonReader(bad, "run 2 context environment")); })),
                 QString("run 2 context environment: \"cpu_threads\" is missing"));
    }

    void stepProfile()
    {
        const StepProfile p = some_profile(3);
        const nlohmann::ordered_json j = step_profile_to_json(p);
        std::vector<std::string> keys;
        for (const auto& item : j.items()) keys.push_back(item.key());
        QCOMPARE(keys, (std::vector<std::string>{"profiled_steps", "replayed", "phases_ms",
                                                 "sum_of_phases_ms", "measured_step_ms",
                                                 "wall_ms_per_step", "overhead_ms",
                                                 "gpu_busy_fraction", "layers"}));
        QCOMPARE(j["phases_ms"].size(), std::size_t(k_step_phases));
        QVERIFY(j["phases_ms"].contains("loss scaling"));
        QVERIFY(j["layers"][1].contains("bytes_estimate"));
        QVERIFY(j["layers"][0]["backward_ms"].is_null());
        const Json text = through_text(j);
        test::compare_profiles(step_profile_from_json(JsonReader(text)), p);

        Json bad = text;
        bad["layers"][2]["gemm"] = "yes";
        QCOMPARE(QString::fromStdString(
                     error_of([&] { step_profile_from_json(JsonReader(bad, "run 2 profile")); })),
                 QString("run 2 profile layer 3: \"gemm\" must be true or false, got \"yes\""));
        bad = text;
        bad["phases_ms"].erase("optimizer");
        QCOMPARE(QString::fromStdString(
                     error_of([&] { step_profile_from_json(JsonReader(bad, "run 2 profile")); })),
                 QString("run 2 profile phases_ms: \"optimizer\" is missing"));
    }

    void metrics()
    {
        const std::vector<StepMetrics> steps = some_steps();
        std::vector<StepMetrics> one_by_one;
        for (const StepMetrics& m : steps) {
            const Json text = through_text(step_metrics_to_json(m));
            one_by_one.push_back(step_metrics_from_json(JsonReader(text)));
        }
        compare_steps(steps, one_by_one);
        const Json table = through_text(step_metrics_table(steps));
        QCOMPARE(table["rows"].size(), steps.size());
        compare_steps(steps, step_metrics_from_table(JsonReader(table)));
        // The table's keys are the object's: one set of keys, two layouts.
        std::vector<std::string> object_keys;
        const nlohmann::ordered_json object = step_metrics_to_json(steps[0]);
        for (const auto& item : object.items()) object_keys.push_back(item.key());
        QCOMPARE(table["columns"].get<std::vector<std::string>>(), object_keys);
        // Columns are found by name, in any order.
        Json shuffled = table;
        std::swap(shuffled["columns"][0], shuffled["columns"][2]);
        for (Json& row : shuffled["rows"]) std::swap(row[0], row[2]);
        compare_steps(steps, step_metrics_from_table(JsonReader(shuffled)));
        Json short_row = table;
        short_row["rows"][3] = Json::array({1, 2});
        QCOMPARE(QString::fromStdString(error_of(
                     [&] { step_metrics_from_table(JsonReader(short_row, "run 1 steps")); })),
                 QString("run 1 steps row 4: must be an array of 11 values"));
        Json no_column = table;
        no_column["columns"][4] = "step_time";
        QVERIFY(error_of([&] {
                    step_metrics_from_table(JsonReader(no_column));
                }).find("column \"step_ms\" is missing") != std::string::npos);

        const std::vector<EpochMetrics> epochs = some_epochs();
        std::vector<EpochMetrics> epochs_back;
        for (const EpochMetrics& m : epochs) {
            const Json text = through_text(epoch_metrics_to_json(m));
            epochs_back.push_back(epoch_metrics_from_json(JsonReader(text)));
        }
        compare_epochs(epochs, epochs_back);
        compare_epochs(epochs, epoch_metrics_from_table(
                                   JsonReader(through_text(epoch_metrics_table(epochs)))));
    }

    void events()
    {
        using K = RunEvent::Kind;
        for (K k : {K::Info, K::Warning, K::ScaleChange, K::SkippedStep, K::Error}) {
            const RunEvent e{k, 42, "a \"quoted\" message\nwith ünïcode"};
            const Json text = through_text(run_event_to_json(e));
            const RunEvent back = run_event_from_json(JsonReader(text));
            QCOMPARE(back.kind, e.kind);
            QCOMPARE(back.step, e.step);
            QCOMPARE(back.message, e.message);
            QVERIFY(parse_run_event_kind(run_event_kind_name(k)) == k);
        }
        Json bad = through_text(run_event_to_json(RunEvent{}));
        QVERIFY(!bad.contains("fp8_amax_jump")); // an event without facts: as before them
        bad["kind"] = "boom";
        QCOMPARE(QString::fromStdString(
                     error_of([&] { run_event_from_json(JsonReader(bad, "run 1 event 2")); })),
                 QString("run 1 event 2: unknown event kind \"boom\""));
    }

    // An fp8 amax jump's facts ride on its event and read back whole; the trainer's last
    // report is its flag alone; wrong facts are named.
    void fp8AmaxJumpEvents()
    {
        Fp8AmaxJump jump;
        jump.layer = "layer 4 > body 2 reached x";
        jump.operand = Fp8Operand::Dy;
        jump.amax = 1.5e-3f;
        jump.history_max = 3.0517578e-5f;
        jump.more_tensors = 3;
        const RunEvent e{RunEvent::Kind::Warning, 77, "fp8 amax jump: words", jump};
        const Json text = through_text(run_event_to_json(e));
        QCOMPARE(text["fp8_amax_jump"],
                 Json::parse(R"({"reports_stopped": false, "layer": "layer 4 > body 2 reached x",
                                 "operand": "dy", "amax": 0.0015,
                                 "history_max": 3.0517578e-05, "more_tensors": 3})"));
        const RunEvent back = run_event_from_json(JsonReader(text));
        QCOMPARE(back.message, e.message);
        QVERIFY(back.fp8_amax_jump == jump);
        for (Fp8Operand o : {Fp8Operand::X, Fp8Operand::W, Fp8Operand::Dy})
            QVERIFY(parse_fp8_operand(fp8_operand_name(o)) == o);

        Fp8AmaxJump stop;
        stop.reports_stopped = true;
        const Json stopped =
            through_text(run_event_to_json(RunEvent{RunEvent::Kind::Warning, 90, "no more", stop}));
        QCOMPARE(stopped["fp8_amax_jump"], Json::parse(R"({"reports_stopped": true})"));
        QVERIFY(run_event_from_json(JsonReader(stopped)).fp8_amax_jump == stop);

        const auto error = [](const Json& j) {
            return QString::fromStdString(
                error_of([&] { run_event_from_json(JsonReader(j, "run 1 event 3")); }));
        };
        Json bad = text;
        bad["fp8_amax_jump"]["operand"] = "dw";
        QCOMPARE(error(bad), QString("run 1 event 3 fp8_amax_jump: \"operand\" must be \"x\", "
                                     "\"w\" or \"dy\", got \"dw\""));
        bad = text;
        bad["fp8_amax_jump"].erase("layer");
        QVERIFY2(error(bad).contains("\"layer\""), qPrintable(error(bad)));
        bad = text;
        bad["fp8_amax_jump"]["more_tensors"] = -1;
        QVERIFY2(error(bad).contains("\"more_tensors\" must be a count"), qPrintable(error(bad)));
        bad = text;
        bad["fp8_amax_jump"] = "layer 1 x";
        QVERIFY2(error(bad).contains("must be an object"), qPrintable(error(bad)));
    }

    void summary()
    {
        const RunSummary s = some_summary();
        compare_summaries(run_summary_from_json(JsonReader(through_text(run_summary_to_json(s)))),
                          s);
        // Never evaluated, did not end itself: null test numbers, no "halted".
        RunSummary quiet = s;
        quiet.final_test_loss.reset();
        quiet.final_test_accuracy.reset();
        quiet.halted.clear();
        quiet.final_train_loss = std::numeric_limits<float>::quiet_NaN();
        const Json text = through_text(run_summary_to_json(quiet));
        QVERIFY(text["final_test_loss"].is_null());
        QVERIFY(text["final_test_accuracy"].is_null());
        QVERIFY(!text.contains("halted"));
        compare_summaries(run_summary_from_json(JsonReader(text)), quiet);
    }

    // Run configs and model specs inside other documents: read as their own files are,
    // with the message placed where they sit.
    void configAndModel()
    {
        RunConfig c;
        c.policy = Policy::MixedBF16;
        c.batch_size = 96;
        c.steps = 500;
        c.seed = (std::uint64_t(1) << 63) + 5;
        c.optimizer.type = OptimizerType::AdamW;
        c.loss_scale.mode = LossScaleMode::Static;
        c.dataset.name = "synthetic";
        const Json config = Json::parse(run_config_to_json(c));
        QCOMPARE(run_config_to_json(run_config_from_json(JsonReader(config))),
                 run_config_to_json(c));
        Json bad = config;
        bad["batch_size"] = 0;
        const std::string message =
            error_of([&] { run_config_from_json(JsonReader(bad, "run 3", "\"config\"")); });
        QVERIFY2(message.find("run 3: \"config\": \"batch_size\" must be between") == 0,
                 message.c_str());

        const ModelSpec spec = test::tiny_mlp({.hidden = 12});
        const Json model = Json::parse(model_spec_to_json(spec));
        QVERIFY(model_spec_from_json(JsonReader(model)) == spec);
        Json bad_model = model;
        bad_model["layers"][1]["units"] = -5;
        QVERIFY(error_of([&] {
                    model_spec_from_json(JsonReader(bad_model, "run 1", "\"model\""));
                }).find("run 1: \"model\": layer 1") == 0);
    }

    // What a step adds to a run's facts: the scale only where it changed.
    void recordStep()
    {
        RunFacts f;
        const float scales[] = {65536, 65536, 32768, 32768, 65536};
        for (int i = 0; i < 5; ++i) {
            StepMetrics m;
            m.step = i + 1;
            m.loss = float(i);
            m.accuracy = 0.1f * float(i);
            m.loss_scale = scales[i];
            record_step(f, m);
        }
        QCOMPARE(f.train_loss, (std::vector<float>{0, 1, 2, 3, 4}));
        QCOMPARE(f.final_train_accuracy, 0.4f);
        const std::vector<std::pair<std::int64_t, float>> expected{
            {1, 65536.0f}, {3, 32768.0f}, {5, 65536.0f}};
        QVERIFY(f.scale_history == expected);
    }

    void explainFacts()
    {
        RunFacts f;
        f.policy = Policy::MixedFP16;
        f.batch = 128;
        f.device = some_gpu();
        f.summary = some_summary();
        f.final_train_accuracy = 0.8125f;
        f.scale_history = {{1, 65536.0f}, {40, 32768.0f}};
        f.loss_scale_mode = LossScaleMode::Dynamic;
        f.gpu_busy_fraction = 0.4375;
        f.profile = some_profile(9);
        f.baseline = 0;
        const RunFacts back = run_facts_from_json(JsonReader(through_text(run_facts_to_json(f))));
        QCOMPARE(back.policy, f.policy);
        QCOMPARE(back.batch, f.batch);
        QCOMPARE(back.device.name, f.device.name);
        QCOMPARE(back.device.cc_major, 9);
        compare_summaries(back.summary, f.summary);
        QCOMPARE(back.final_train_accuracy, f.final_train_accuracy);
        QVERIFY(back.scale_history == f.scale_history);
        QCOMPARE(back.loss_scale_mode, f.loss_scale_mode);
        QCOMPARE(back.gpu_busy_fraction, f.gpu_busy_fraction);
        QCOMPARE(back.baseline, f.baseline);
        QVERIFY(back.profile.has_value());
        test::compare_profiles(*back.profile, *f.profile);

        RunFacts bare = f;
        bare.profile.reset();
        bare.gpu_busy_fraction.reset();
        const RunFacts bare_back =
            run_facts_from_json(JsonReader(through_text(run_facts_to_json(bare))));
        QVERIFY(!bare_back.profile);
        QVERIFY(!bare_back.gpu_busy_fraction);

        // Every kind of fix, with its typed value, and an explanation without one.
        std::vector<Explanation> all;
        for (const Fix& fix : {Fix::set_units("layer 1", 1008), Fix::set_dtype_float32("layer 3"),
                               Fix::set_activation("layer 4", Activation::Softmax),
                               Fix::set_policy(Policy::MixedBF16), Fix::set_batch(256)})
            all.push_back(
                {"rule", Explanation::Severity::Advice, -1, "sentence ü", "suggestion", fix});
        all.push_back({"speed", Explanation::Severity::Warning, 1, "slower", "", std::nullopt});
        for (const Explanation& e : all) {
            const Json text = through_text(explanation_to_json(e));
            QCOMPARE(text.contains("apply"), e.fix.has_value());
            const Explanation b = explanation_from_json(JsonReader(text));
            QCOMPARE(b.id, e.id);
            QCOMPARE(b.severity, e.severity);
            QCOMPARE(b.run, e.run);
            QCOMPARE(b.sentence, e.sentence);
            QCOMPARE(b.suggestion, e.suggestion);
            QVERIFY(b.fix == e.fix);
        }
        // A fix the reader does not know, or a value its kind cannot take, is refused by name.
        Json unknown = through_text(explanation_to_json(all[0]));
        unknown["apply"]["kind"] = "set_depth";
        QVERIFY_THROWS_EXCEPTION(InputError, explanation_from_json(JsonReader(unknown)));
        Json bad_units = through_text(explanation_to_json(all[0]));
        bad_units["apply"]["value"] = "lots";
        QVERIFY_THROWS_EXCEPTION(InputError, explanation_from_json(JsonReader(bad_units)));

        // The document: the runs with their speedups against the first, read back whole.
        RunFacts base = bare;
        base.policy = Policy::FP32;
        base.summary.median_step_ms = 2 * f.summary.median_step_ms;
        const std::string doc = explain_to_json({base, f}, {all[1], all.back()});
        const Json j = Json::parse(doc);
        QCOMPARE(j["format"].get<std::string>(), std::string(k_explain_format));
        QCOMPARE(j["runs"][1]["speedup"].get<double>(), 2.0);
        const ExplainDocument read = parse_explain_json(doc);
        QCOMPARE(read.runs.size(), std::size_t(2));
        QCOMPARE(read.explanations.size(), std::size_t(2));
        QCOMPARE(read.runs[0].policy, Policy::FP32);
        test::compare_profiles(*read.runs[1].profile, *f.profile);
        QCOMPARE(explain_to_json(read.runs, read.explanations), doc);

        Json future = j;
        future["format"] = "mixlab-explain/3";
        QVERIFY(error_of([&] { parse_explain_json(future.dump()); }).find("newer MixLab") !=
                std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestJsonForms)
#include "tst_json_forms.moc"
