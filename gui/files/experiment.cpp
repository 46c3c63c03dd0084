// Experiment files: writing the store's runs as `mixlab-experiment/1` JSON and reading
// them back with every field checked before the store is touched.
#include "files/experiment.h"

#include "runs/runstore.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/step_profile.h"
#include "mixlab/trainer.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QSaveFile>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *k_formatPrefix = "mixlab-experiment/";
constexpr int k_formatVersion = 1;

// Column order of the compact per-step and per-epoch rows (one array per step keeps a
// 100,000-step run's file a third of the size objects would make it).
const std::vector<std::string> k_stepColumns = {
    "step", "epoch", "loss", "accuracy", "step_ms", "wall_ms", "samples_per_s",
    "loss_scale", "next_loss_scale", "overflow", "skipped"};
const std::vector<std::string> k_epochColumns = {
    "epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy", "seconds",
    "skipped_steps"};

// ---- writing ---------------------------------------------------------------------------

// A float as the shortest decimal that reads back to it, when reading that decimal as a
// double and narrowing gives the same float (nearly always); otherwise the float's
// exact double. Non-finite values become null (JSON has no NaN).
Json floatJson(float v)
{
    if (!std::isfinite(v)) return nullptr;
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    double d = 0;
    std::from_chars(buf, r.ptr, d);
    return float(d) == v ? d : double(v);
}

Json doubleJson(double v)
{
    if (!std::isfinite(v)) return nullptr;
    return v;
}

Json timeJson(const QDateTime &t)
{
    if (!t.isValid()) return nullptr;
    return t.toUTC().toString(Qt::ISODateWithMs).toStdString();
}

QString statusKey(RunRecord::Status s)
{
    switch (s) {
    case RunRecord::Status::Queued: return QStringLiteral("queued");
    case RunRecord::Status::Running: return QStringLiteral("running");
    case RunRecord::Status::Finished: return QStringLiteral("finished");
    case RunRecord::Status::Stopped: return QStringLiteral("stopped");
    case RunRecord::Status::Failed: return QStringLiteral("failed");
    }
    return QStringLiteral("stopped");
}

Json summaryJson(const std::optional<mixlab::RunSummary> &s)
{
    if (!s) return nullptr;
    Json j;
    j["steps"] = s->steps;
    j["skipped_steps"] = s->skipped_steps;
    j["epochs_done"] = s->epochs_done;
    j["mean_step_ms"] = doubleJson(s->mean_step_ms);
    j["median_step_ms"] = doubleJson(s->median_step_ms);
    j["final_train_loss"] = floatJson(s->final_train_loss);
    // Null when the run never evaluated (an evaluated accuracy is always finite; a loss may
    // not be, and is null then too).
    j["final_test_loss"] = s->final_test_loss ? floatJson(*s->final_test_loss) : Json(nullptr);
    j["final_test_accuracy"] = s->final_test_accuracy ? floatJson(*s->final_test_accuracy) : Json(nullptr);
    j["final_loss_scale"] = floatJson(s->final_loss_scale);
    j["wall_seconds"] = doubleJson(s->wall_seconds);
    j["stopped"] = s->stopped;
    return j;
}

Json contextJson(const std::optional<RunContext> &c)
{
    if (!c) return nullptr;
    Json j;
    j["input"] = c->input.dims;
    j["classes"] = c->classes;
    j["dataset_name"] = c->datasetName.toStdString();
    j["dataset_source"] = c->datasetSource.toStdString();
    j["environment"] = Json::parse(mixlab::environment_to_json(c->environment));
    return j;
}

// The profiling pass, keyed by name like `mixlab-cli explain --json`'s phase breakdown.
// An optional field of a run: files without it (older ones) load as "not profiled".
Json profileJson(const mixlab::StepProfile &p)
{
    Json j;
    j["steps"] = p.steps;
    j["replayed"] = p.replayed;
    Json phases = Json::object();
    for (int i = 0; i < mixlab::k_step_phases; ++i)
        phases[std::string(mixlab::step_phase_name(mixlab::StepPhase(i)))] = doubleJson(p.phase_ms[std::size_t(i)]);
    j["phases_ms"] = std::move(phases);
    j["device_ms"] = doubleJson(p.device_ms);
    j["step_ms"] = doubleJson(p.step_ms);
    j["wall_ms"] = doubleJson(p.wall_ms);
    j["overhead_ms"] = doubleJson(p.overhead_ms);
    j["gpu_busy_fraction"] = doubleJson(p.gpu_busy_fraction);
    Json layers = Json::array();
    for (const mixlab::LayerTime &l : p.layers) {
        Json lj;
        lj["path"] = l.path;
        lj["type"] = l.type;
        lj["forward_ms"] = doubleJson(l.forward_ms);
        lj["backward_ms"] = doubleJson(l.backward_ms);
        lj["flops"] = doubleJson(l.flops);
        lj["bytes"] = doubleJson(l.bytes);
        lj["gemm"] = l.is_gemm;
        lj["tensor_cores"] = l.tensor_cores;
        lj["tensor_core_note"] = l.tensor_core_note;
        layers.push_back(std::move(lj));
    }
    j["layers"] = std::move(layers);
    return j;
}

Json runJson(const RunRecord &r)
{
    Json j;
    j["name"] = r.name.toStdString();
    j["color"] = r.color.name(QColor::HexRgb).toStdString();
    j["visible"] = r.visible;
    j["status"] = statusKey(r.status).toStdString();
    j["failure"] = r.failure.toStdString();
    j["group"] = r.group;
    j["config"] = Json::parse(mixlab::run_config_to_json(r.config));
    j["model"] = r.modelJson.isEmpty() ? Json(nullptr) : Json::parse(r.modelJson.toStdString());
    j["total_steps"] = r.totalSteps;
    j["device_memory_mb"] = doubleJson(r.deviceMemoryMB);
    j["started"] = timeJson(r.started);
    j["ended"] = timeJson(r.ended);
    j["context"] = contextJson(r.context);

    Json steps;
    steps["columns"] = k_stepColumns;
    Json rows = Json::array();
    for (const mixlab::StepMetrics &m : r.steps)
        rows.push_back(Json::array({m.step, m.epoch, floatJson(m.loss), floatJson(m.accuracy),
                                    floatJson(m.step_ms), doubleJson(m.wall_ms),
                                    doubleJson(m.samples_per_s), floatJson(m.loss_scale),
                                    floatJson(m.next_loss_scale), m.overflow, m.skipped}));
    steps["rows"] = std::move(rows);
    j["steps"] = std::move(steps);

    Json epochs;
    epochs["columns"] = k_epochColumns;
    Json erows = Json::array();
    for (const mixlab::EpochMetrics &e : r.epochs)
        erows.push_back(Json::array({e.epoch, floatJson(e.train_loss), floatJson(e.train_accuracy),
                                     floatJson(e.test_loss), floatJson(e.test_accuracy),
                                     doubleJson(e.seconds), e.skipped_steps}));
    epochs["rows"] = std::move(erows);
    j["epochs"] = std::move(epochs);

    Json events = Json::array();
    for (const TimedEvent &e : r.events) {
        Json ej;
        ej["time"] = timeJson(e.time);
        ej["step"] = e.event.step;
        ej["kind"] = std::string(mixlab::run_event_kind_name(e.event.kind));
        ej["message"] = e.event.message;
        events.push_back(std::move(ej));
    }
    j["events"] = std::move(events);
    j["summary"] = summaryJson(r.summary);
    if (r.profile) j["profile"] = profileJson(*r.profile);
    return j;
}

// ---- reading ---------------------------------------------------------------------------

// Thrown inside the reader; turned into the caller's error message.
struct LoadError {
    std::string message;
};

[[noreturn]] void fail(const std::string &where, const std::string &what)
{
    throw LoadError{where.empty() ? what : where + ": " + what};
}

std::string typeName(const Json &j) { return j.is_null() ? "null" : j.type_name(); }

const Json &field(const Json &obj, const std::string &key, const std::string &where)
{
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where, "\"" + key + "\" is missing");
    return *it;
}

const Json &objectField(const Json &obj, const std::string &key, const std::string &where)
{
    const Json &j = field(obj, key, where);
    if (!j.is_object()) fail(where, "\"" + key + "\" must be an object, got " + typeName(j));
    return j;
}

const Json &arrayField(const Json &obj, const std::string &key, const std::string &where)
{
    const Json &j = field(obj, key, where);
    if (!j.is_array()) fail(where, "\"" + key + "\" must be an array, got " + typeName(j));
    return j;
}

std::string stringOf(const Json &j, const std::string &what, const std::string &where)
{
    if (!j.is_string()) fail(where, what + " must be a string, got " + typeName(j));
    return j.get<std::string>();
}

std::string stringField(const Json &obj, const std::string &key, const std::string &where)
{
    return stringOf(field(obj, key, where), "\"" + key + "\"", where);
}

bool boolOf(const Json &j, const std::string &what, const std::string &where)
{
    if (!j.is_boolean()) fail(where, what + " must be true or false, got " + typeName(j));
    return j.get<bool>();
}

std::int64_t intOf(const Json &j, const std::string &what, const std::string &where)
{
    if (!j.is_number_integer()) fail(where, what + " must be an integer, got " + typeName(j));
    return j.get<std::int64_t>();
}

// Numbers; null stands for a non-finite value (NaN: the sign and kind are not kept).
double realOf(const Json &j, const std::string &what, const std::string &where)
{
    if (j.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!j.is_number()) fail(where, what + " must be a number or null, got " + typeName(j));
    return j.get<double>();
}

QDateTime timeOf(const Json &j, const std::string &what, const std::string &where)
{
    if (j.is_null()) return QDateTime();
    const QString text = QString::fromStdString(stringOf(j, what, where));
    QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
    if (!t.isValid()) fail(where, what + " is not an ISO 8601 date and time: \"" + text.toStdString() + "\"");
    return t.toLocalTime();
}

// The columns a table names, mapped to their positions; each expected one must be there.
std::vector<std::size_t> columnMap(const Json &table, const std::vector<std::string> &expected,
                                   const std::string &where)
{
    const Json &cols = arrayField(table, "columns", where);
    std::vector<std::size_t> out;
    for (const std::string &name : expected) {
        std::size_t pos = cols.size();
        for (std::size_t i = 0; i < cols.size(); ++i)
            if (cols[i].is_string() && cols[i].get<std::string>() == name) pos = i;
        if (pos == cols.size()) fail(where, "column \"" + name + "\" is missing from \"columns\"");
        out.push_back(pos);
    }
    return out;
}

mixlab::RunEvent::Kind eventKindOf(const std::string &name, const std::string &where)
{
    using K = mixlab::RunEvent::Kind;
    for (K k : {K::Info, K::Warning, K::ScaleChange, K::SkippedStep, K::Error})
        if (mixlab::run_event_kind_name(k) == name) return k;
    fail(where, "unknown event kind \"" + name + "\"");
}

mixlab::Environment environmentOf(const Json &j, const std::string &where)
{
    if (!j.is_object()) fail(where, "\"environment\" must be an object, got " + typeName(j));
    const std::string w = where + " environment";
    mixlab::Environment e;
    const std::string backend = stringField(j, "backend", w);
    const std::optional<mixlab::BackendKind> kind = mixlab::parse_backend_kind(backend);
    if (!kind) fail(w, "\"backend\" must be \"cpu\" or \"cuda\", got \"" + backend + "\"");
    e.backend = *kind;
    e.device_name = stringField(j, "device_name", w);
    e.compute_capability = stringField(j, "compute_capability", w);
    e.device_memory_bytes = intOf(field(j, "device_memory_bytes", w), "\"device_memory_bytes\"", w);
    e.tensor_cores = boolOf(field(j, "tensor_cores", w), "\"tensor_cores\"", w);
    e.bf16 = boolOf(field(j, "bf16", w), "\"bf16\"", w);
    e.tf32 = boolOf(field(j, "tf32", w), "\"tf32\"", w);
    e.driver_version = stringField(j, "driver_version", w);
    e.runtime_version = stringField(j, "runtime_version", w);
    e.cublas_version = stringField(j, "cublas_version", w);
    e.cudnn_version = stringField(j, "cudnn_version", w);
    e.os = stringField(j, "os", w);
    e.os_release = stringField(j, "os_release", w);
    e.cpu_model = stringField(j, "cpu_model", w);
    e.cpu_threads = int(intOf(field(j, "cpu_threads", w), "\"cpu_threads\"", w));
    e.host_memory_bytes = intOf(field(j, "host_memory_bytes", w), "\"host_memory_bytes\"", w);
    e.compiler = stringField(j, "compiler", w);
    e.mixlab_version = stringField(j, "mixlab_version", w);
    e.built_with_cuda = boolOf(field(j, "built_with_cuda", w), "\"built_with_cuda\"", w);
    return e;
}

mixlab::RunConfig configOf(const Json &j, const std::string &where)
{
    if (!j.is_object()) fail(where, "\"config\" must be an object, got " + typeName(j));
    try {
        return mixlab::parse_run_config(j.dump());
    } catch (const mixlab::Error &e) {
        fail(where, std::string("config: ") + e.what());
    }
}

mixlab::ModelSpec modelOf(const Json &j, const std::string &where)
{
    if (!j.is_object()) fail(where, "\"model\" must be an object, got " + typeName(j));
    try {
        return mixlab::parse_model_spec(j.dump());
    } catch (const mixlab::Error &e) {
        fail(where, std::string("model: ") + e.what());
    }
}

std::optional<mixlab::RunSummary> summaryOf(const Json &j, const std::string &where)
{
    if (j.is_null()) return std::nullopt;
    if (!j.is_object()) fail(where, "\"summary\" must be an object or null, got " + typeName(j));
    const std::string w = where + " summary";
    auto real = [&](const char *k) { return realOf(field(j, k, w), std::string("\"") + k + "\"", w); };
    auto integer = [&](const char *k) { return intOf(field(j, k, w), std::string("\"") + k + "\"", w); };
    mixlab::RunSummary s;
    s.steps = integer("steps");
    s.skipped_steps = integer("skipped_steps");
    s.epochs_done = int(integer("epochs_done"));
    s.mean_step_ms = real("mean_step_ms");
    s.median_step_ms = real("median_step_ms");
    s.final_train_loss = float(real("final_train_loss"));
    // An evaluation gives both; files written before runs could say "never evaluated" hold
    // 0 and 0 for such a run, which no evaluation gives (a cross-entropy is never 0).
    const double testLoss = real("final_test_loss"), testAccuracy = real("final_test_accuracy");
    if (!std::isnan(testAccuracy) && !(testLoss == 0 && testAccuracy == 0)) {
        s.final_test_loss = float(testLoss);
        s.final_test_accuracy = float(testAccuracy);
    }
    s.final_loss_scale = float(real("final_loss_scale"));
    s.wall_seconds = real("wall_seconds");
    s.stopped = boolOf(field(j, "stopped", w), "\"stopped\"", w);
    return s;
}

mixlab::StepProfile profileOf(const Json &j, const std::string &where)
{
    if (!j.is_object()) fail(where, "\"profile\" must be an object or null, got " + typeName(j));
    const std::string w = where + " profile";
    auto real = [](const Json &o, const char *k, const std::string &at) {
        return realOf(field(o, k, at), std::string("\"") + k + "\"", at);
    };
    mixlab::StepProfile p;
    p.steps = int(intOf(field(j, "steps", w), "\"steps\"", w));
    p.replayed = boolOf(field(j, "replayed", w), "\"replayed\"", w);
    const Json &phases = objectField(j, "phases_ms", w);
    for (int i = 0; i < mixlab::k_step_phases; ++i)
        p.phase_ms[std::size_t(i)] =
            real(phases, std::string(mixlab::step_phase_name(mixlab::StepPhase(i))).c_str(), w + " phases_ms");
    p.device_ms = real(j, "device_ms", w);
    p.step_ms = real(j, "step_ms", w);
    p.wall_ms = real(j, "wall_ms", w);
    p.overhead_ms = real(j, "overhead_ms", w);
    p.gpu_busy_fraction = real(j, "gpu_busy_fraction", w);
    const Json &layers = arrayField(j, "layers", w);
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string wl = w + " layer " + std::to_string(i + 1);
        const Json &lj = layers[i];
        if (!lj.is_object()) fail(wl, "must be an object, got " + typeName(lj));
        mixlab::LayerTime l;
        l.path = stringField(lj, "path", wl);
        l.type = stringField(lj, "type", wl);
        l.forward_ms = real(lj, "forward_ms", wl);
        l.backward_ms = real(lj, "backward_ms", wl);
        l.flops = real(lj, "flops", wl);
        l.bytes = real(lj, "bytes", wl);
        l.is_gemm = boolOf(field(lj, "gemm", wl), "\"gemm\"", wl);
        l.tensor_cores = boolOf(field(lj, "tensor_cores", wl), "\"tensor_cores\"", wl);
        l.tensor_core_note = stringField(lj, "tensor_core_note", wl);
        p.layers.push_back(std::move(l));
    }
    return p;
}

RunRecord runOf(const Json &j, const std::string &where)
{
    if (!j.is_object()) fail(where, "must be an object, got " + typeName(j));
    RunRecord r;
    r.name = QString::fromStdString(stringField(j, "name", where));
    const std::string color = stringField(j, "color", where);
    r.color = QColor(QString::fromStdString(color));
    if (!r.color.isValid()) fail(where, "\"color\" is not a colour: \"" + color + "\"");
    r.visible = boolOf(field(j, "visible", where), "\"visible\"", where);
    const QString status = QString::fromStdString(stringField(j, "status", where));
    if (status == QLatin1String("finished")) r.status = RunRecord::Status::Finished;
    else if (status == QLatin1String("failed")) r.status = RunRecord::Status::Failed;
    // A run saved while queued or running has no future here: it is over, unfinished.
    else if (status == QLatin1String("stopped") || status == QLatin1String("running") ||
             status == QLatin1String("queued"))
        r.status = RunRecord::Status::Stopped;
    else fail(where, "unknown status \"" + status.toStdString() + "\"");
    r.failure = QString::fromStdString(stringField(j, "failure", where));
    r.group = int(intOf(field(j, "group", where), "\"group\"", where));
    r.config = configOf(field(j, "config", where), where);
    const Json &model = field(j, "model", where);
    if (!model.is_null())
        r.modelJson = QString::fromStdString(mixlab::model_spec_to_json(modelOf(model, where)));
    r.totalSteps = intOf(field(j, "total_steps", where), "\"total_steps\"", where);
    r.deviceMemoryMB = realOf(field(j, "device_memory_mb", where), "\"device_memory_mb\"", where);
    if (std::isnan(r.deviceMemoryMB)) r.deviceMemoryMB = 0;
    r.started = timeOf(field(j, "started", where), "\"started\"", where);
    r.ended = timeOf(field(j, "ended", where), "\"ended\"", where);

    const Json &ctx = field(j, "context", where);
    if (!ctx.is_null()) {
        if (!ctx.is_object()) fail(where, "\"context\" must be an object or null, got " + typeName(ctx));
        const std::string w = where + " context";
        RunContext c;
        const Json &input = arrayField(ctx, "input", w);
        for (const Json &d : input) c.input.dims.push_back(int(intOf(d, "\"input\" entries", w)));
        c.classes = int(intOf(field(ctx, "classes", w), "\"classes\"", w));
        c.datasetName = QString::fromStdString(stringField(ctx, "dataset_name", w));
        c.datasetSource = QString::fromStdString(stringField(ctx, "dataset_source", w));
        c.environment = environmentOf(field(ctx, "environment", w), w);
        r.context = c;
    }

    const Json &steps = objectField(j, "steps", where);
    const std::string ws = where + " steps";
    const std::vector<std::size_t> sc = columnMap(steps, k_stepColumns, ws);
    const Json &rows = arrayField(steps, "rows", ws);
    r.steps.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Json &row = rows[i];
        const std::string w = ws + " row " + std::to_string(i + 1);
        if (!row.is_array() || row.size() < k_stepColumns.size())
            fail(w, "must be an array of " + std::to_string(k_stepColumns.size()) + " values");
        auto at = [&](int c) -> const Json & { return row[sc[std::size_t(c)]]; };
        auto name = [&](int c) { return "\"" + k_stepColumns[std::size_t(c)] + "\""; };
        mixlab::StepMetrics m;
        m.step = intOf(at(0), name(0), w);
        m.epoch = int(intOf(at(1), name(1), w));
        m.loss = float(realOf(at(2), name(2), w));
        m.accuracy = float(realOf(at(3), name(3), w));
        m.step_ms = float(realOf(at(4), name(4), w));
        m.wall_ms = realOf(at(5), name(5), w);
        m.samples_per_s = realOf(at(6), name(6), w);
        m.loss_scale = float(realOf(at(7), name(7), w));
        m.next_loss_scale = float(realOf(at(8), name(8), w));
        m.overflow = boolOf(at(9), name(9), w);
        m.skipped = boolOf(at(10), name(10), w);
        r.steps.push_back(m);
    }

    const Json &epochs = objectField(j, "epochs", where);
    const std::string we = where + " epochs";
    const std::vector<std::size_t> ec = columnMap(epochs, k_epochColumns, we);
    const Json &erows = arrayField(epochs, "rows", we);
    for (std::size_t i = 0; i < erows.size(); ++i) {
        const Json &row = erows[i];
        const std::string w = we + " row " + std::to_string(i + 1);
        if (!row.is_array() || row.size() < k_epochColumns.size())
            fail(w, "must be an array of " + std::to_string(k_epochColumns.size()) + " values");
        auto at = [&](int c) -> const Json & { return row[ec[std::size_t(c)]]; };
        auto name = [&](int c) { return "\"" + k_epochColumns[std::size_t(c)] + "\""; };
        mixlab::EpochMetrics e;
        e.epoch = int(intOf(at(0), name(0), w));
        e.train_loss = float(realOf(at(1), name(1), w));
        e.train_accuracy = float(realOf(at(2), name(2), w));
        e.test_loss = float(realOf(at(3), name(3), w));
        e.test_accuracy = float(realOf(at(4), name(4), w));
        e.seconds = realOf(at(5), name(5), w);
        e.skipped_steps = intOf(at(6), name(6), w);
        r.epochs.push_back(e);
    }

    const Json &events = arrayField(j, "events", where);
    for (std::size_t i = 0; i < events.size(); ++i) {
        const std::string w = where + " event " + std::to_string(i + 1);
        const Json &ej = events[i];
        if (!ej.is_object()) fail(w, "must be an object, got " + typeName(ej));
        TimedEvent e;
        e.time = timeOf(field(ej, "time", w), "\"time\"", w);
        e.event.step = intOf(field(ej, "step", w), "\"step\"", w);
        e.event.kind = eventKindOf(stringField(ej, "kind", w), w);
        e.event.message = stringField(ej, "message", w);
        r.events.push_back(std::move(e));
    }
    r.summary = summaryOf(field(j, "summary", where), where);
    // Optional (files from before the profiling pass have none).
    if (const auto it = j.find("profile"); it != j.end() && !it->is_null())
        r.profile = profileOf(*it, where);
    return r;
}

QString withPath(const QString &path, const std::string &message)
{
    return QStringLiteral("'%1': %2").arg(path, QString::fromStdString(message));
}

} // namespace

bool saveExperiment(const QString &path, const ExperimentFile &file, const RunStore &store,
                    QString *error)
{
    QByteArray bytes;
    try {
        Json root;
        root["format"] = k_experimentFormat;
        root["model"] = Json::parse(mixlab::model_spec_to_json(file.model));
        root["config"] = Json::parse(mixlab::run_config_to_json(file.config));
        Json policies = Json::array();
        for (mixlab::Policy p : file.comparePolicies) policies.push_back(std::string(mixlab::policy_name(p)));
        root["compare_policies"] = std::move(policies);
        Json runs = Json::array();
        for (int id : store.runIds()) {
            const RunRecord *r = store.run(id);
            if (!r) continue;
            if (r->status == RunRecord::Status::Queued && r->steps.empty() && r->events.empty())
                continue; // never began: nothing to keep
            runs.push_back(runJson(*r));
        }
        root["runs"] = std::move(runs);
        const std::string text = root.dump(1) + "\n";
        bytes = QByteArray(text.data(), qsizetype(text.size()));
    } catch (const std::exception &e) {
        if (error) *error = QStringLiteral("cannot save '%1': %2").arg(path, QString::fromUtf8(e.what()));
        return false;
    }

    QSaveFile out(path);
    // Unbuffered: a write that fails (disk full) must fail here. Qt 6.4's QSaveFile does
    // not notice a failed flush of its buffer at commit() and renames an empty file over
    // the old one.
    if (!out.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        if (error) *error = QStringLiteral("cannot save '%1': %2").arg(path, out.errorString());
        return false;
    }
    if (out.write(bytes) != bytes.size() || !out.commit()) {
        if (error) *error = QStringLiteral("cannot save '%1': %2").arg(path, out.errorString());
        out.cancelWriting();
        return false;
    }
    return true;
}

bool loadExperiment(const QString &path, ExperimentFile *file, RunStore *store, QString *error)
{
    if (!file || !store) {
        if (error) *error = QStringLiteral("cannot open '%1': nowhere to load it into").arg(path);
        return false;
    }
    QFile in(path);
    if (!in.open(QIODevice::ReadOnly)) {
        if (error) *error = QStringLiteral("cannot open '%1': %2").arg(path, in.errorString());
        return false;
    }
    const QByteArray bytes = in.readAll();
    if (in.error() != QFileDevice::NoError) {
        if (error) *error = QStringLiteral("cannot read '%1': %2").arg(path, in.errorString());
        return false;
    }

    ExperimentFile loaded;
    std::vector<RunRecord> runs;
    try {
        Json root;
        try {
            root = Json::parse(bytes.constData(), bytes.constData() + bytes.size());
        } catch (const Json::parse_error &e) {
            // nlohmann's message starts with "[json.exception.parse_error.101] ".
            std::string what = e.what();
            if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
            fail("", "not a MixLab experiment (malformed JSON: " + what + ")");
        }
        if (!root.is_object()) fail("", "not a MixLab experiment (the file is not a JSON object)");
        const auto fmt = root.find("format");
        if (fmt == root.end() || !fmt->is_string())
            fail("", "not a MixLab experiment (no \"format\" field)");
        const std::string format = fmt->get<std::string>();
        const std::string prefix = k_formatPrefix;
        if (format.rfind(prefix, 0) != 0)
            fail("", "not a MixLab experiment (format \"" + format + "\", expected \"" +
                         k_experimentFormat + "\")");
        int version = 0;
        const std::string vtext = format.substr(prefix.size());
        const auto r = std::from_chars(vtext.data(), vtext.data() + vtext.size(), version);
        if (r.ec != std::errc() || r.ptr != vtext.data() + vtext.size() || version < 1)
            fail("", "unknown experiment format \"" + format + "\"");
        if (version > k_formatVersion)
            fail("", "written by a newer MixLab (format \"" + format + "\"); this version reads \"" +
                         k_experimentFormat + "\": update MixLab to open it");

        loaded.model = modelOf(field(root, "model", ""), "");
        loaded.config = configOf(field(root, "config", ""), "");
        for (const Json &p : arrayField(root, "compare_policies", "")) {
            const std::string name = stringOf(p, "\"compare_policies\" entries", "");
            try {
                loaded.comparePolicies.push_back(mixlab::parse_policy(name));
            } catch (const mixlab::Error &e) {
                fail("compare_policies", e.what());
            }
        }
        const Json &jruns = arrayField(root, "runs", "");
        for (std::size_t i = 0; i < jruns.size(); ++i)
            runs.push_back(runOf(jruns[i], "run " + std::to_string(i + 1)));
    } catch (const LoadError &e) {
        if (error) *error = withPath(path, e.message);
        return false;
    } catch (const std::exception &e) {
        if (error) *error = withPath(path, e.what());
        return false;
    }

    // Everything checked: now replace. Groups keep their numbers (the Why? panel and the
    // report name them); a run without a valid one gets a group of its own above them.
    store->clear();
    int lastGroup = 0;
    for (const RunRecord &r : runs) lastGroup = std::max(lastGroup, r.group);
    for (RunRecord &r : runs) {
        if (r.group <= 0) r.group = ++lastGroup;
        store->insertRecord(std::move(r));
    }
    *file = std::move(loaded);
    return true;
}
