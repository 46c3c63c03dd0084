// Experiment files: writing the store's runs as `mixlab-experiment/2` JSON, with the
// engine's JSON forms for what the engine reports, and reading versions 1 and 2 back with
// every field checked before the store is touched.
#include "files/experiment.h"

#include "runs/runstore.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/json_io.h"
#include "mixlab/metrics_json.h"
#include "mixlab/numerics.h"
#include "mixlab/step_profile.h"
#include "mixlab/trainer.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QSaveFile>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *k_formatFamily = "mixlab-experiment/";

// ---- writing ---------------------------------------------------------------------------

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

Json contextJson(const std::optional<RunContext> &c)
{
    if (!c) return nullptr;
    Json j;
    j["input"] = c->input.dims;
    // Language models: the input is a sequence of tokens (optional: images write none).
    if (c->input.sequence) j["sequence"] = true;
    j["classes"] = c->classes;
    j["dataset_name"] = c->datasetName.toStdString();
    j["dataset_source"] = c->datasetSource.toStdString();
    j["environment"] = mixlab::environment_to_json(c->environment);
    // Language models (optional: images and older files have none).
    if (c->perplexityReferences)
        j["perplexity_references"] =
            mixlab::perplexity_references_to_json(*c->perplexityReferences);
    return j;
}

// Steps and epochs as tables, events with the time the app received them, the summary
// and the profiling pass in the engine's own JSON forms (metrics_json.h, step_profile.h).
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
    j["device_memory_mb"] = mixlab::json_number(r.deviceMemoryMB);
    j["started"] = timeJson(r.started);
    j["ended"] = timeJson(r.ended);
    j["context"] = contextJson(r.context);
    j["steps"] = mixlab::step_metrics_table(r.steps);
    j["epochs"] = mixlab::epoch_metrics_table(r.epochs);
    Json events = Json::array();
    for (const TimedEvent &e : r.events) {
        Json ej;
        ej["time"] = timeJson(e.time);
        ej.update(mixlab::run_event_to_json(e.event));
        events.push_back(std::move(ej));
    }
    j["events"] = std::move(events);
    j["summary"] = r.summary ? mixlab::run_summary_to_json(*r.summary) : Json(nullptr);
    // Optional: a run that sampled no numerics (RunConfig::numerics_every 0) has none.
    if (!r.numerics.empty()) {
        Json numerics = Json::array();
        for (const mixlab::NumericsSample &s : r.numerics)
            numerics.push_back(mixlab::numerics_sample_to_json(s));
        j["numerics"] = std::move(numerics);
    }
    // Optional: a run of a stopped or failed group has none.
    if (r.profile) j["profile"] = mixlab::step_profile_to_json(*r.profile);
    // Optional: the run's checkpoint folder (Run > Checkpoints at epoch ends), which
    // outlives the session: an opened experiment's runs can still be continued.
    if (!r.checkpointFolder.isEmpty()) j["checkpoint_folder"] = r.checkpointFolder.toStdString();
    // Optional: the weights file the run started from (Run > Start from weights).
    if (!r.startWeights.isEmpty()) j["start_weights"] = r.startWeights.toStdString();
    // Optional: what a language model wrote after training.
    if (r.sample) {
        Json sj;
        sj["words"] = r.sample->words;
        sj["temperature"] = mixlab::json_number(r.sample->temperature);
        sj["text"] = r.sample->text.toStdString();
        if (!r.sample->failure.isEmpty()) sj["failure"] = r.sample->failure.toStdString();
        j["sample"] = std::move(sj);
    }
    return j;
}

// ---- reading ---------------------------------------------------------------------------

// Version 1 named the profile's numbers after StepProfile's fields; version 2 uses the
// keys `mixlab-cli explain --json` gave them (step_profile.h says why). A version-1
// profile is renamed in place, then read like any other.
void upgradeVersion1Profile(nlohmann::json &run)
{
    if (!run.is_object()) return; // the reader says what is wrong with it
    const auto profile = run.find("profile");
    if (profile == run.end() || !profile->is_object()) return;
    const auto rename = [](nlohmann::json &object, const char *from, const char *to) {
        const auto it = object.find(from);
        if (it == object.end() || object.contains(to)) return;
        object[to] = std::move(*it);
        object.erase(from);
    };
    rename(*profile, "steps", "profiled_steps");
    rename(*profile, "device_ms", "sum_of_phases_ms");
    rename(*profile, "step_ms", "measured_step_ms");
    rename(*profile, "wall_ms", "wall_ms_per_step");
    if (const auto layers = profile->find("layers"); layers != profile->end() && layers->is_array())
        for (nlohmann::json &layer : *layers)
            if (layer.is_object()) rename(layer, "bytes", "bytes_estimate");
}

QDateTime timeOf(const mixlab::JsonReader &j)
{
    if (j.is_null()) return QDateTime();
    const QString text = QString::fromStdString(j.string());
    QDateTime t = QDateTime::fromString(text, Qt::ISODateWithMs);
    if (!t.isValid())
        j.fail(j.name() + " is not an ISO 8601 date and time: \"" + text.toStdString() + "\"");
    return t.toLocalTime();
}

RunRecord::Status statusOf(const mixlab::JsonReader &j)
{
    const QString status = QString::fromStdString(j.string());
    if (status == QLatin1String("finished")) return RunRecord::Status::Finished;
    if (status == QLatin1String("failed")) return RunRecord::Status::Failed;
    // A run saved while queued or running has no future here: it is over, unfinished.
    if (status == QLatin1String("stopped") || status == QLatin1String("running") ||
        status == QLatin1String("queued"))
        return RunRecord::Status::Stopped;
    j.fail("unknown status \"" + status.toStdString() + "\"");
}

RunContext contextOf(const mixlab::JsonReader &ctx)
{
    RunContext c;
    const mixlab::JsonReader input = ctx.array("input");
    for (std::size_t i = 0; i < input.size(); ++i)
        c.input.dims.push_back(input.cell(i, "\"input\" entries").int32());
    if (const auto sequence = ctx.find("sequence")) c.input.sequence = sequence->boolean();
    c.classes = ctx.at("classes").int32();
    c.datasetName = QString::fromStdString(ctx.at("dataset_name").string());
    c.datasetSource = QString::fromStdString(ctx.at("dataset_source").string());
    c.environment = mixlab::environment_from_json(ctx.object("environment"));
    if (const auto refs = ctx.find("perplexity_references"))
        c.perplexityReferences = mixlab::perplexity_references_from_json(*refs);
    return c;
}

RunRecord runOf(const mixlab::JsonReader &run)
{
    run.as_object();
    RunRecord r;
    r.name = QString::fromStdString(run.at("name").string());
    const std::string color = run.at("color").string();
    r.color = QColor(QString::fromStdString(color));
    if (!r.color.isValid()) run.fail("\"color\" is not a colour: \"" + color + "\"");
    r.visible = run.at("visible").boolean();
    r.status = statusOf(run.at("status"));
    r.failure = QString::fromStdString(run.at("failure").string());
    r.group = run.at("group").int32();
    r.config = mixlab::run_config_from_json(run.at("config"));
    if (!run.at("model").is_null()) {
        const mixlab::ModelSpec model = mixlab::model_spec_from_json(run.at("model"));
        r.modelJson = QString::fromStdString(mixlab::model_spec_to_json(model));
    }
    r.totalSteps = run.at("total_steps").int64();
    r.deviceMemoryMB = run.at("device_memory_mb").number();
    if (std::isnan(r.deviceMemoryMB)) r.deviceMemoryMB = 0;
    r.started = timeOf(run.at("started"));
    r.ended = timeOf(run.at("ended"));
    if (!run.at("context").is_null()) r.context = contextOf(run.object("context"));
    r.steps = mixlab::step_metrics_from_table(run.object("steps"));
    r.epochs = mixlab::epoch_metrics_from_table(run.object("epochs"));
    const mixlab::JsonReader events = run.array("events");
    for (std::size_t i = 0; i < events.size(); ++i) {
        const mixlab::JsonReader e = events.element(i, "event").as_object();
        r.events.push_back({timeOf(e.at("time")), mixlab::run_event_from_json(e)});
    }
    if (!run.at("summary").is_null())
        r.summary = mixlab::run_summary_from_json(run.object("summary"));
    // Optional (files from before the numerics, and runs that sampled none, have none).
    if (run.find("numerics")) {
        const mixlab::JsonReader numerics = run.array("numerics");
        for (std::size_t i = 0; i < numerics.size(); ++i)
            r.numerics.push_back(mixlab::numerics_sample_from_json(
                numerics.element(i, "numerics sample").as_object()));
    }
    // Optional (files from before the profiling pass have none).
    if (run.find("profile")) r.profile = mixlab::step_profile_from_json(run.object("profile"));
    // Optional (runs that wrote no checkpoints).
    if (const auto folder = run.find("checkpoint_folder"))
        r.checkpointFolder = QString::fromStdString(folder->string());
    // Optional (runs that started from fresh weights).
    if (const auto weights = run.find("start_weights"))
        r.startWeights = QString::fromStdString(weights->string());
    // Optional (language models that wrote one).
    if (run.find("sample")) {
        const mixlab::JsonReader sj = run.object("sample");
        RunSample sample;
        sample.words = sj.at("words").int32();
        sample.temperature = sj.at("temperature").number_float();
        sample.text = QString::fromStdString(sj.at("text").string());
        if (const auto failure = sj.find("failure"))
            sample.failure = QString::fromStdString(failure->string());
        r.sample = std::move(sample);
    }
    return r;
}

// Thrown for a file that is not an experiment MixLab can read; becomes the message.
struct LoadError {
    std::string message;
};

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
        for (mixlab::Policy p : file.comparePolicies)
            policies.push_back(std::string(mixlab::policy_name(p)));
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
        if (error)
            *error = QStringLiteral("cannot save '%1': %2").arg(path, QString::fromUtf8(e.what()));
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
        nlohmann::json root;
        try {
            root = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size());
        } catch (const nlohmann::json::parse_error &e) {
            // nlohmann's message starts with "[json.exception.parse_error.101] ".
            std::string what = e.what();
            if (const auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
            throw LoadError{"not a MixLab experiment (malformed JSON: " + what + ")"};
        }
        if (!root.is_object())
            throw LoadError{"not a MixLab experiment (the file is not a JSON object)"};
        const auto fmt = root.find("format");
        if (fmt == root.end() || !fmt->is_string())
            throw LoadError{"not a MixLab experiment (no \"format\" field)"};
        const std::string format = fmt->get<std::string>();
        if (format.rfind(k_formatFamily, 0) != 0)
            throw LoadError{"not a MixLab experiment (format \"" + format + "\", expected \"" +
                            k_experimentFormat + "\")"};
        const std::optional<int> version = mixlab::format_version(format, k_formatFamily);
        if (!version) throw LoadError{"unknown experiment format \"" + format + "\""};
        if (*version > *mixlab::format_version(k_experimentFormat, k_formatFamily))
            throw LoadError{"written by a newer MixLab (format \"" + format +
                            "\"); this version reads \"" + k_experimentFormat +
                            "\": update MixLab to open it"};
        if (*version == 1)
            if (const auto jruns = root.find("runs"); jruns != root.end() && jruns->is_array())
                for (nlohmann::json &run : *jruns) upgradeVersion1Profile(run);

        const mixlab::JsonReader doc(root);
        loaded.model = mixlab::model_spec_from_json(doc.at("model"));
        loaded.config = mixlab::run_config_from_json(doc.at("config"));
        const mixlab::JsonReader policies = doc.array("compare_policies");
        for (std::size_t i = 0; i < policies.size(); ++i) {
            const std::string name = policies.cell(i, "\"compare_policies\" entries").string();
            try {
                loaded.comparePolicies.push_back(mixlab::parse_policy(name));
            } catch (const mixlab::Error &e) {
                throw LoadError{std::string("compare_policies: ") + e.what()};
            }
        }
        const mixlab::JsonReader jruns = doc.array("runs");
        for (std::size_t i = 0; i < jruns.size(); ++i)
            runs.push_back(runOf(jruns.element(i, "run")));
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
