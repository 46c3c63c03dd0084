// The JSON forms of a run's steps, epochs, events and summary: each metric's key, how it
// is written and how it is read, in one table per type that the object and the table
// forms share.
#include "mixlab/metrics_json.h"

#include "base/json_util.h"
#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace mixlab {
namespace {

using Json = nlohmann::ordered_json;

template <class T>
struct Field {
    const char* key;
    Json (*write)(const T&);
    void (*read)(const JsonReader&, T&); // null: written only (derived from other fields)
    // Set for a field only some values have (a language model's): written for those,
    // a table's column only when a row has it, and a document without it reads fine.
    bool (*present)(const T&) = nullptr;
};

bool is_lm(const EpochMetrics& m) { return m.language_model; }
bool has_fp8(const StepMetrics& m) { return m.fp8_log2_scale_min.has_value(); }
Json optional_number(const std::optional<float>& v) { return v ? json_number(*v) : Json(nullptr); }
Json optional_perplexity(const std::optional<float>& loss)
{
    return loss ? json_number(perplexity(*loss)) : Json(nullptr);
}
std::optional<float> read_optional(const JsonReader& r)
{
    const double v = r.number();
    return std::isnan(v) ? std::nullopt : std::optional<float>(float(v));
}

const Field<StepMetrics> k_step_fields[] = {
    {"step", [](const StepMetrics& m) { return Json(m.step); },
     [](const JsonReader& r, StepMetrics& m) { m.step = r.int64(); }},
    {"epoch", [](const StepMetrics& m) { return Json(m.epoch); },
     [](const JsonReader& r, StepMetrics& m) { m.epoch = r.int32(); }},
    {"loss", [](const StepMetrics& m) { return json_number(m.loss); },
     [](const JsonReader& r, StepMetrics& m) { m.loss = r.number_float(); }},
    {"accuracy", [](const StepMetrics& m) { return json_number(m.accuracy); },
     [](const JsonReader& r, StepMetrics& m) { m.accuracy = r.number_float(); }},
    {"step_ms", [](const StepMetrics& m) { return json_number(m.step_ms); },
     [](const JsonReader& r, StepMetrics& m) { m.step_ms = r.number_float(); }},
    {"wall_ms", [](const StepMetrics& m) { return json_number(m.wall_ms); },
     [](const JsonReader& r, StepMetrics& m) { m.wall_ms = r.number(); }},
    {"samples_per_s", [](const StepMetrics& m) { return json_number(m.samples_per_s); },
     [](const JsonReader& r, StepMetrics& m) { m.samples_per_s = r.number(); }},
    {"loss_scale", [](const StepMetrics& m) { return json_number(m.loss_scale); },
     [](const JsonReader& r, StepMetrics& m) { m.loss_scale = r.number_float(); }},
    {"next_loss_scale", [](const StepMetrics& m) { return json_number(m.next_loss_scale); },
     [](const JsonReader& r, StepMetrics& m) { m.next_loss_scale = r.number_float(); }},
    {"overflow", [](const StepMetrics& m) { return Json(m.overflow); },
     [](const JsonReader& r, StepMetrics& m) { m.overflow = r.boolean(); }},
    {"skipped", [](const StepMetrics& m) { return Json(m.skipped); },
     [](const JsonReader& r, StepMetrics& m) { m.skipped = r.boolean(); }},
    // mixed_fp8: the range of log2(scale) across the fp8 tensors.
    {"fp8_log2_scale_min",
     [](const StepMetrics& m) { return optional_number(m.fp8_log2_scale_min); },
     [](const JsonReader& r, StepMetrics& m) { m.fp8_log2_scale_min = read_optional(r); }, has_fp8},
    {"fp8_log2_scale_max",
     [](const StepMetrics& m) { return optional_number(m.fp8_log2_scale_max); },
     [](const JsonReader& r, StepMetrics& m) { m.fp8_log2_scale_max = read_optional(r); }, has_fp8},
};

const Field<EpochMetrics> k_epoch_fields[] = {
    {"epoch", [](const EpochMetrics& m) { return Json(m.epoch); },
     [](const JsonReader& r, EpochMetrics& m) { m.epoch = r.int32(); }},
    {"train_loss", [](const EpochMetrics& m) { return json_number(m.train_loss); },
     [](const JsonReader& r, EpochMetrics& m) { m.train_loss = r.number_float(); }},
    {"train_accuracy", [](const EpochMetrics& m) { return json_number(m.train_accuracy); },
     [](const JsonReader& r, EpochMetrics& m) { m.train_accuracy = r.number_float(); }},
    {"test_loss", [](const EpochMetrics& m) { return json_number(m.test_loss); },
     [](const JsonReader& r, EpochMetrics& m) { m.test_loss = r.number_float(); }},
    {"test_accuracy", [](const EpochMetrics& m) { return json_number(m.test_accuracy); },
     [](const JsonReader& r, EpochMetrics& m) { m.test_accuracy = r.number_float(); }},
    {"seconds", [](const EpochMetrics& m) { return json_number(m.seconds); },
     [](const JsonReader& r, EpochMetrics& m) { m.seconds = r.number(); }},
    {"skipped_steps", [](const EpochMetrics& m) { return Json(m.skipped_steps); },
     [](const JsonReader& r, EpochMetrics& m) { m.skipped_steps = r.int64(); }},
    // Language models: validation, perplexities (exp of the per-token losses: written for
    // the reader, not read back) and the learning rate of the epoch.
    {"valid_loss", [](const EpochMetrics& m) { return optional_number(m.valid_loss); },
     [](const JsonReader& r, EpochMetrics& m) {
         m.language_model = true;
         m.valid_loss = read_optional(r);
     },
     is_lm},
    {"valid_accuracy", [](const EpochMetrics& m) { return optional_number(m.valid_accuracy); },
     [](const JsonReader& r, EpochMetrics& m) { m.valid_accuracy = read_optional(r); }, is_lm},
    {"train_perplexity",
     [](const EpochMetrics& m) { return json_number(perplexity(m.train_loss)); }, nullptr, is_lm},
    {"valid_perplexity", [](const EpochMetrics& m) { return optional_perplexity(m.valid_loss); },
     nullptr, is_lm},
    {"test_perplexity", [](const EpochMetrics& m) { return json_number(perplexity(m.test_loss)); },
     nullptr, is_lm},
    {"lr", [](const EpochMetrics& m) { return json_number(m.lr); },
     [](const JsonReader& r, EpochMetrics& m) {
         m.language_model = true;
         m.lr = r.number_float();
     },
     is_lm},
};

template <class T, std::size_t N>
Json object_of(const T& value, const Field<T> (&fields)[N])
{
    Json j;
    for (const Field<T>& f : fields)
        if (!f.present || f.present(value)) j[f.key] = f.write(value);
    return j;
}

template <class T, std::size_t N>
T object_from(const JsonReader& j, const Field<T> (&fields)[N])
{
    j.as_object();
    T value;
    for (const Field<T>& f : fields) {
        if (!f.read) continue;
        if (f.present) {
            if (const auto v = j.find(f.key)) f.read(*v, value);
        } else {
            f.read(j.at(f.key), value);
        }
    }
    return value;
}

template <class T, std::size_t N>
Json table_of(const std::vector<T>& values, const Field<T> (&fields)[N])
{
    // An optional field's column when any row has it (a row without it holds null).
    bool used[N];
    for (std::size_t k = 0; k < N; ++k) {
        used[k] = !fields[k].present;
        for (const T& v : values) used[k] = used[k] || fields[k].present(v);
    }
    Json columns = Json::array();
    for (std::size_t k = 0; k < N; ++k)
        if (used[k]) columns.push_back(fields[k].key);
    Json rows = Json::array();
    for (const T& v : values) {
        Json row = Json::array();
        for (std::size_t k = 0; k < N; ++k) {
            if (!used[k]) continue;
            const bool has = !fields[k].present || fields[k].present(v);
            row.push_back(has ? fields[k].write(v) : Json(nullptr));
        }
        rows.push_back(std::move(row));
    }
    Json j;
    j["columns"] = std::move(columns);
    j["rows"] = std::move(rows);
    return j;
}

template <class T, std::size_t N>
std::vector<T> table_from(const JsonReader& table, const Field<T> (&fields)[N])
{
    // Each field's position among the columns the file names.
    const JsonReader columns = table.array("columns");
    std::size_t position[N];
    for (std::size_t k = 0; k < N; ++k) {
        position[k] = columns.size();
        for (std::size_t i = 0; i < columns.size(); ++i) {
            const nlohmann::json& name = columns.json()[i];
            if (name.is_string() && name.get<std::string>() == fields[k].key) position[k] = i;
        }
        if (position[k] == columns.size() && !fields[k].present)
            table.fail("column " + json_util::quoted(fields[k].key) +
                       " is missing from \"columns\"");
    }
    const JsonReader rows = table.array("rows");
    std::vector<T> out;
    out.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const JsonReader row = rows.element(i, "row");
        if (!row.json().is_array() || row.json().size() < columns.size())
            row.fail("must be an array of " + std::to_string(columns.size()) + " values");
        T value;
        for (std::size_t k = 0; k < N; ++k) {
            if (!fields[k].read || position[k] == columns.size()) continue;
            const JsonReader cell = row.cell(position[k], json_util::quoted(fields[k].key));
            // A row of a table that mixes kinds (runs of a compare are one kind, so this
            // is only a hand-written file) holds null where it lacks an optional field.
            if (fields[k].present && cell.is_null()) continue;
            fields[k].read(cell, value);
        }
        out.push_back(value);
    }
    return out;
}

} // namespace

nlohmann::ordered_json step_metrics_to_json(const StepMetrics& m)
{
    return object_of(m, k_step_fields);
}

StepMetrics step_metrics_from_json(const JsonReader& j) { return object_from(j, k_step_fields); }

nlohmann::ordered_json epoch_metrics_to_json(const EpochMetrics& m)
{
    return object_of(m, k_epoch_fields);
}

EpochMetrics epoch_metrics_from_json(const JsonReader& j) { return object_from(j, k_epoch_fields); }

nlohmann::ordered_json step_metrics_table(const std::vector<StepMetrics>& steps)
{
    return table_of(steps, k_step_fields);
}

std::vector<StepMetrics> step_metrics_from_table(const JsonReader& j)
{
    return table_from(j, k_step_fields);
}

nlohmann::ordered_json epoch_metrics_table(const std::vector<EpochMetrics>& epochs)
{
    return table_of(epochs, k_epoch_fields);
}

std::vector<EpochMetrics> epoch_metrics_from_table(const JsonReader& j)
{
    return table_from(j, k_epoch_fields);
}

std::optional<RunEvent::Kind> parse_run_event_kind(std::string_view name)
{
    using K = RunEvent::Kind;
    for (K k : {K::Info, K::Warning, K::ScaleChange, K::SkippedStep, K::Error})
        if (run_event_kind_name(k) == name) return k;
    return std::nullopt;
}

std::optional<Fp8Operand> parse_fp8_operand(std::string_view name)
{
    using O = Fp8Operand;
    for (O o : {O::X, O::W, O::Dy})
        if (fp8_operand_name(o) == name) return o;
    return std::nullopt;
}

nlohmann::ordered_json fp8_amax_jump_to_json(const Fp8AmaxJump& jump)
{
    Json j;
    j["reports_stopped"] = jump.reports_stopped;
    if (jump.reports_stopped) return j;
    j["layer"] = jump.layer;
    j["operand"] = std::string(fp8_operand_name(jump.operand));
    j["amax"] = json_number(jump.amax);
    j["history_max"] = json_number(jump.history_max);
    j["more_tensors"] = jump.more_tensors;
    return j;
}

Fp8AmaxJump fp8_amax_jump_from_json(const JsonReader& j)
{
    j.as_object();
    Fp8AmaxJump jump;
    jump.reports_stopped = j.at("reports_stopped").boolean();
    if (jump.reports_stopped) return jump;
    jump.layer = j.at("layer").string();
    const JsonReader operand = j.at("operand");
    const std::optional<Fp8Operand> o = parse_fp8_operand(operand.string());
    if (!o) operand.fail_type("\"x\", \"w\" or \"dy\"");
    jump.operand = *o;
    jump.amax = j.at("amax").number_float();
    jump.history_max = j.at("history_max").number_float();
    jump.more_tensors = j.at("more_tensors").int32();
    if (jump.more_tensors < 0) j.at("more_tensors").fail_type("a count (0 or more)");
    return jump;
}

nlohmann::ordered_json run_event_to_json(const RunEvent& e)
{
    Json j;
    j["step"] = e.step;
    j["kind"] = std::string(run_event_kind_name(e.kind));
    j["message"] = e.message;
    if (e.fp8_amax_jump) j["fp8_amax_jump"] = fp8_amax_jump_to_json(*e.fp8_amax_jump);
    return j;
}

RunEvent run_event_from_json(const JsonReader& j)
{
    j.as_object();
    RunEvent e;
    e.step = j.at("step").int64();
    const JsonReader kind = j.at("kind");
    const std::optional<RunEvent::Kind> k = parse_run_event_kind(kind.string());
    if (!k) j.fail("unknown event kind \"" + kind.string() + "\"");
    e.kind = *k;
    e.message = j.at("message").string();
    // Events written before the key, and every event but an fp8 amax jump, have none.
    if (j.find("fp8_amax_jump"))
        e.fp8_amax_jump = fp8_amax_jump_from_json(j.object("fp8_amax_jump"));
    return e;
}

nlohmann::ordered_json run_summary_to_json(const RunSummary& s)
{
    Json j;
    j["steps"] = s.steps;
    j["skipped_steps"] = s.skipped_steps;
    j["epochs_done"] = s.epochs_done;
    j["mean_step_ms"] = json_number(s.mean_step_ms);
    j["median_step_ms"] = json_number(s.median_step_ms);
    j["final_train_loss"] = json_number(s.final_train_loss);
    // Null when the run never evaluated (an evaluated accuracy is always finite; a loss
    // may not be, and is null then too).
    j["final_test_loss"] = s.final_test_loss ? json_number(*s.final_test_loss) : Json(nullptr);
    j["final_test_accuracy"] =
        s.final_test_accuracy ? json_number(*s.final_test_accuracy) : Json(nullptr);
    if (s.language_model) {
        j["final_valid_loss"] = optional_number(s.final_valid_loss);
        j["final_test_perplexity"] = optional_perplexity(s.final_test_loss);
        j["final_lr"] = json_number(s.final_lr);
    }
    j["final_loss_scale"] = json_number(s.final_loss_scale);
    j["wall_seconds"] = json_number(s.wall_seconds);
    j["stopped"] = s.stopped;
    if (!s.halted.empty()) j["halted"] = s.halted;
    return j;
}

RunSummary run_summary_from_json(const JsonReader& j)
{
    j.as_object();
    RunSummary s;
    s.steps = j.at("steps").int64();
    s.skipped_steps = j.at("skipped_steps").int64();
    s.epochs_done = j.at("epochs_done").int32();
    s.mean_step_ms = j.at("mean_step_ms").number();
    s.median_step_ms = j.at("median_step_ms").number();
    s.final_train_loss = j.at("final_train_loss").number_float();
    // An evaluation gives both; files written before runs could say "never evaluated"
    // hold 0 and 0 for such a run, which no evaluation gives (a cross-entropy is never 0).
    const double test_loss = j.at("final_test_loss").number();
    const double test_accuracy = j.at("final_test_accuracy").number();
    if (!std::isnan(test_accuracy) && !(test_loss == 0 && test_accuracy == 0)) {
        s.final_test_loss = float(test_loss);
        s.final_test_accuracy = float(test_accuracy);
    }
    if (const auto lr = j.find("final_lr")) {
        s.language_model = true;
        s.final_lr = lr->number_float();
        s.final_valid_loss = read_optional(j.at("final_valid_loss"));
    }
    s.final_loss_scale = j.at("final_loss_scale").number_float();
    s.wall_seconds = j.at("wall_seconds").number();
    s.stopped = j.at("stopped").boolean();
    if (const auto halted = j.find("halted")) s.halted = halted->string();
    return s;
}

} // namespace mixlab
