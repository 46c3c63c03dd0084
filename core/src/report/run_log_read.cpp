// RunLog::parse: a `mixlab-log/1` document read back into a RunLog, every field checked,
// through the same JSON forms that wrote it.
#include "mixlab/run_log.h"

#include "base/json_util.h"
#include "mixlab/error.h"
#include "mixlab/json_io.h"
#include "mixlab/metrics_json.h"

#include <nlohmann/json.hpp>

namespace mixlab {
namespace {

using Json = nlohmann::ordered_json;

const json_util::DocumentKind k_document{
    "run log",    "log file",           k_log_format, "\"kind\": \"train\", ...",
    "experiment", "mixlab-experiment/", false};

// A log's config: a run config with the run's "model" beside its fields (and, at the top
// of a compare log, the "policies"; for a mixed_fp8 run, "fp8_execution"; for a run that
// started from a weights file, "start_weights"). The model's text is model_spec_to_json's,
// or "null".
RunConfig config_from_json(const JsonReader& j, std::string& model_json, std::string& start_weights)
{
    j.as_object();
    nlohmann::json run_only = j.json();
    run_only.erase("model");
    run_only.erase("policies");
    run_only.erase("fp8_execution"); // written from the environment, which is read apart
    run_only.erase("start_weights");
    if (const auto weights = j.find("start_weights")) start_weights = weights->string();
    const RunConfig config = run_config_from_json(JsonReader(run_only, j.where(), j.name()));
    const JsonReader model = j.at("model");
    model_json = model.is_null() ? "null" : model_spec_to_json(model_spec_from_json(model));
    return config;
}

// The graph's summary, its fields checked, in the order RunLog writes them; "null" when
// the log had no model.
std::string graph_from_json(const JsonReader& j)
{
    if (j.is_null()) return "null";
    const JsonReader g = j.as_object();
    Json out;
    out["input"] = g.at("input").string();
    out["classes"] = g.at("classes").int32();
    out["head"] = g.at("head").string();
    out["total_params"] = g.at("total_params").int64();
    out["total_flops"] = g.at("total_flops").int64();
    return out.dump();
}

template <class T, class F>
std::vector<T> array_from(const JsonReader& array, std::string_view noun, F&& from_json)
{
    std::vector<T> out;
    for (std::size_t i = 0; i < array.size(); ++i) out.push_back(from_json(array.element(i, noun)));
    return out;
}

} // namespace

RunLog RunLog::parse(std::string_view json_text)
{
    const nlohmann::json doc = json_util::parse_document(json_text, k_document);
    const JsonReader root(doc);
    const JsonReader kind = root.at("kind");
    const std::string kind_name = kind.string();
    if (kind_name != "train" && kind_name != "compare") kind.fail_type("\"train\" or \"compare\"");
    RunLog log(kind_name == "train" ? Kind::Train : Kind::Compare);
    if (!root.at("environment").is_null())
        log.m_environment = environment_from_json(root.object("environment"));
    // Logs written before language models have no such key.
    if (const auto refs = root.find("perplexity_references"))
        log.m_perplexity_references = perplexity_references_from_json(*refs);
    log.m_graph_json = graph_from_json(root.at("graph"));

    // The steps, epochs, events and summary of one run, wherever they sit.
    auto read_metrics = [](const JsonReader& j, Run& r) {
        r.steps = array_from<StepMetrics>(j.array("steps"), "step", step_metrics_from_json);
        r.epochs = array_from<EpochMetrics>(j.array("epochs"), "epoch", epoch_metrics_from_json);
        r.events = array_from<RunEvent>(j.array("events"), "event", run_event_from_json);
        // Runs that sampled no numerics (and logs written before them) have no such key.
        if (j.find("numerics"))
            r.numerics = array_from<NumericsSample>(j.array("numerics"), "numerics sample",
                                                    numerics_sample_from_json);
        if (!j.at("summary").is_null()) r.summary = run_summary_from_json(j.object("summary"));
    };
    Run top;
    top.config = config_from_json(root.object("config"), log.m_model_json, top.start_weights);
    if (log.m_kind == Kind::Train) {
        read_metrics(root, top);
        log.m_runs.push_back(std::move(top));
        return log;
    }
    const JsonReader runs = root.array("runs");
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const JsonReader j = runs.element(i, "run").as_object();
        Run r;
        r.config = config_from_json(j.object("config"), r.model_json, r.start_weights);
        r.graph_json = graph_from_json(j.at("graph"));
        read_metrics(j, r);
        log.m_runs.push_back(std::move(r));
    }
    return log;
}

} // namespace mixlab
