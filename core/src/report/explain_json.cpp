// The explain facts and explanations as JSON: `mixlab-cli explain --json`'s document
// (mixlab-explain/2) written and read here, and version 1 read.
#include "mixlab/explain.h"

#include "base/json_util.h"
#include "mixlab/error.h"
#include "mixlab/json_io.h"
#include "mixlab/metrics_json.h"
#include "mixlab/step_time.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <string>

namespace mixlab {
namespace {

using Json = nlohmann::ordered_json;

const json_util::DocumentKind k_document{"explain output",
                                         "explain file",
                                         k_explain_format,
                                         "\"runs\": [...], \"explanations\": [...]",
                                         "run log",
                                         "mixlab-log/",
                                         false};

Policy policy_from_json(const JsonReader& j)
{
    try {
        return parse_policy(j.string());
    } catch (const InputError& e) {
        j.fail(std::string("\"policy\": ") + e.what());
    }
}

LossScaleMode loss_scaling_from_json(const JsonReader& j)
{
    const std::string name = j.string();
    for (LossScaleMode m : {LossScaleMode::Dynamic, LossScaleMode::Static, LossScaleMode::None,
                            LossScaleMode::Default})
        if (loss_scale_mode_name(m) == name) return m;
    j.fail_type("\"dynamic\", \"static\" or \"none\"");
}

Explanation::Severity severity_from_json(const JsonReader& j)
{
    using S = Explanation::Severity;
    const std::string name = j.string();
    for (S s : {S::Info, S::Advice, S::Warning})
        if (severity_name(s) == name) return s;
    j.fail_type("\"info\", \"advice\" or \"warning\"");
}

// mixlab-explain/1's run: the summary's numbers flat beside the policy, the device as its
// name and backend; its profile came apart, in "phase_breakdown".
RunFacts run_facts_from_v1(const JsonReader& j)
{
    j.as_object();
    RunFacts f;
    f.policy = policy_from_json(j.at("policy"));
    f.batch = j.at("batch").int32();
    f.loss_scale_mode = loss_scaling_from_json(j.at("loss_scaling"));
    f.device.name = j.at("device").string();
    // Builds between DeviceInfo's BackendKind enum and this reader wrote the enum's number.
    const JsonReader backend = j.at("backend");
    if (backend.json().is_number_integer() && (backend.int64() == 0 || backend.int64() == 1))
        f.device.backend = backend.int64() == 0 ? BackendKind::Cpu : BackendKind::Cuda;
    else
        f.device.backend = backend_kind_from_json(backend);
    f.summary.steps = j.at("steps").int64();
    f.summary.skipped_steps = j.at("skipped_steps").int64();
    f.summary.mean_step_ms = j.at("mean_step_ms").number();
    f.summary.median_step_ms = j.at("median_step_ms").number();
    f.summary.final_train_loss = j.at("final_train_loss").number_float();
    f.summary.final_loss_scale = j.at("final_loss_scale").number_float();
    if (const auto accuracy = j.find("final_test_accuracy"))
        f.summary.final_test_accuracy = accuracy->number_float();
    f.baseline = 0; // version 1's speedups are against the first run
    return f;
}

} // namespace

nlohmann::ordered_json run_facts_to_json(const RunFacts& f)
{
    Json j;
    j["policy"] = std::string(policy_name(f.policy));
    j["batch"] = f.batch;
    if (f.summary.language_model) j["bptt"] = f.bptt;
    j["loss_scaling"] = std::string(loss_scale_mode_name(f.loss_scale_mode));
    // Written when not the default, so documents from before the option read the same.
    if (f.master_weights != MasterWeights::FP32)
        j["master_weights"] = std::string(master_weights_name(f.master_weights));
    if (f.device_bytes > 0) j["device_bytes"] = f.device_bytes;
    j["baseline"] = f.baseline;
    j["device"] = device_info_to_json(f.device);
    j["summary"] = run_summary_to_json(f.summary);
    j["final_train_accuracy"] = json_number(f.final_train_accuracy);
    j["gpu_busy_fraction"] =
        f.gpu_busy_fraction ? json_number(*f.gpu_busy_fraction) : Json(nullptr);
    Json history = Json::array();
    for (const auto& [step, scale] : f.scale_history) {
        Json h;
        h["step"] = step;
        h["loss_scale"] = json_number(scale);
        history.push_back(std::move(h));
    }
    j["scale_history"] = std::move(history);
    j["profile"] = f.profile ? step_profile_to_json(*f.profile) : Json(nullptr);
    return j;
}

RunFacts run_facts_from_json(const JsonReader& j)
{
    j.as_object();
    RunFacts f;
    f.policy = policy_from_json(j.at("policy"));
    f.batch = j.at("batch").int32();
    if (const auto bptt = j.find("bptt")) f.bptt = bptt->int32();
    f.loss_scale_mode = loss_scaling_from_json(j.at("loss_scaling"));
    if (const auto m = j.find("master_weights")) {
        const std::string name = m->string();
        if (name == master_weights_name(MasterWeights::Bf16Split))
            f.master_weights = MasterWeights::Bf16Split;
        else if (name != master_weights_name(MasterWeights::FP32))
            m->fail_type("\"fp32\" or \"bf16_split\"");
    }
    if (const auto bytes = j.find("device_bytes")) f.device_bytes = bytes->int64();
    f.baseline = j.at("baseline").int32();
    f.device = device_info_from_json(j.object("device"));
    f.summary = run_summary_from_json(j.object("summary"));
    f.final_train_accuracy = j.at("final_train_accuracy").number_float();
    if (const auto busy = j.find("gpu_busy_fraction")) f.gpu_busy_fraction = busy->number();
    const JsonReader history = j.array("scale_history");
    for (std::size_t i = 0; i < history.size(); ++i) {
        const JsonReader h = history.element(i, "scale change").as_object();
        f.scale_history.emplace_back(h.at("step").int64(), h.at("loss_scale").number_float());
    }
    if (j.find("profile")) f.profile = step_profile_from_json(j.object("profile"));
    return f;
}

namespace {

// A fix as explain --json spells it: {"kind": "set_units", "path": "layer 3", "value": "16"},
// the value in the form fix_value_text writes.
Fix fix_from_json(const JsonReader& apply)
{
    const JsonReader kind = apply.at("kind");
    const std::string name = kind.string();
    const std::string path = apply.at("path").string();
    const JsonReader value = apply.at("value");
    const std::string text = value.string();
    const auto whole = [&](const char* what) {
        int n = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec != std::errc() || end != text.data() + text.size() || n < 1)
            value.fail(std::string(what) + " must be a positive whole number, got \"" + text +
                       "\"");
        return n;
    };
    for (FixKind k : {FixKind::SetUnits, FixKind::SetDtypeFloat32, FixKind::SetActivation,
                      FixKind::SetPolicy, FixKind::SetBatch}) {
        if (fix_kind_name(k) != name) continue;
        switch (k) {
        case FixKind::SetUnits: return Fix::set_units(path, whole("units"));
        case FixKind::SetDtypeFloat32: return Fix::set_dtype_float32(path);
        case FixKind::SetActivation:
            for (Activation a : {Activation::None, Activation::Relu, Activation::Sigmoid,
                                 Activation::Tanh, Activation::Gelu, Activation::Softmax})
                if (activation_name(a) == text) return Fix::set_activation(path, a);
            value.fail("unknown activation \"" + text + "\"");
        case FixKind::SetPolicy: try { return Fix::set_policy(parse_policy(text));
            } catch (const InputError& e) {
                value.fail(e.what());
            }
        case FixKind::SetBatch: return Fix::set_batch(whole("batch"));
        }
    }
    kind.fail("unknown fix \"" + name + "\"");
}

} // namespace

nlohmann::ordered_json explanation_to_json(const Explanation& e)
{
    Json j;
    j["id"] = e.id;
    j["severity"] = std::string(severity_name(e.severity));
    j["run"] = e.run;
    j["sentence"] = e.sentence;
    j["suggestion"] = e.suggestion;
    if (e.fix) {
        Json apply;
        apply["kind"] = std::string(fix_kind_name(e.fix->kind));
        apply["path"] = e.fix->path;
        apply["value"] = fix_value_text(*e.fix);
        j["apply"] = std::move(apply);
    }
    return j;
}

Explanation explanation_from_json(const JsonReader& j)
{
    j.as_object();
    Explanation e;
    e.id = j.at("id").string();
    e.severity = severity_from_json(j.at("severity"));
    e.run = j.at("run").int32();
    e.sentence = j.at("sentence").string();
    e.suggestion = j.at("suggestion").string();
    if (j.find("apply")) e.fix = fix_from_json(j.object("apply"));
    return e;
}

std::string explain_to_json(const std::vector<RunFacts>& group,
                            const std::vector<Explanation>& explanations)
{
    Json runs = Json::array();
    for (const RunFacts& f : group) {
        Json run = run_facts_to_json(f);
        const double x = speedup(group.front().summary.median_step_ms, f.summary.median_step_ms);
        run["speedup"] = x > 0 ? Json(x) : Json(nullptr);
        runs.push_back(std::move(run));
    }
    Json ex = Json::array();
    for (const Explanation& e : explanations) ex.push_back(explanation_to_json(e));
    Json doc;
    doc["format"] = std::string(k_explain_format);
    doc["runs"] = std::move(runs);
    doc["explanations"] = std::move(ex);
    return doc.dump(2) + "\n";
}

ExplainDocument parse_explain_json(std::string_view json_text)
{
    int version = 0;
    const nlohmann::json doc = json_util::parse_document(json_text, k_document, &version);
    const JsonReader root(doc);
    ExplainDocument out;
    const JsonReader runs = root.array("runs");
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const JsonReader run = runs.element(i, "run");
        out.runs.push_back(version == 1 ? run_facts_from_v1(run) : run_facts_from_json(run));
    }
    if (version == 1) {
        const JsonReader phases = root.array("phase_breakdown");
        for (std::size_t i = 0; i < phases.size() && i < out.runs.size(); ++i) {
            const JsonReader p = phases.element(i, "phase_breakdown entry");
            if (p.is_null()) continue;
            RunFacts& f = out.runs[i];
            f.profile = step_profile_from_json(p);
            if (ran_on_gpu(f)) f.gpu_busy_fraction = f.profile->gpu_busy_fraction;
        }
    }
    const JsonReader explanations = root.array("explanations");
    for (std::size_t i = 0; i < explanations.size(); ++i)
        out.explanations.push_back(explanation_from_json(explanations.element(i, "explanation")));
    return out;
}

} // namespace mixlab
