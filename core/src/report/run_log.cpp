// RunLog: records runs' metrics and writes them as `mixlab-log/1` JSON (each type in its
// own JSON form) and CSV; also the up-front check that an output path can be written
// (the atomic writing itself is atomic_file.h's). Reading a log back is run_log_read.cpp.
#include "mixlab/run_log.h"

#include "mixlab/error.h"
#include "mixlab/metrics_json.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

namespace mixlab {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// CSV keeps host times to the microsecond and rates to 0.1/s: a spreadsheet's column
// reads better so, and no host clock is finer. Dividing by an integer scale (not
// multiplying by 0.001) gives the double nearest the decimal, so it prints short.
double rounded(double v, double per_unit)
{
    return std::isfinite(v) ? std::round(v * per_unit) / per_unit : v;
}

std::string csv_number(double v)
{
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string csv_number(float v)
{
    if (!std::isfinite(v)) return csv_number(double(v));
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string_view head_name(OutputHead h)
{
    switch (h) {
    case OutputHead::Logits: return "logits";
    case OutputHead::SoftmaxFolded: return "softmax_folded";
    case OutputHead::SigmoidKeras: return "sigmoid_keras";
    }
    return "unknown";
}

std::string graph_json_of(const Graph& graph)
{
    Json g;
    g["input"] = graph.input.to_string();
    g["classes"] = graph.classes;
    g["head"] = std::string(head_name(graph.head));
    g["total_params"] = graph.total_params;
    g["total_flops"] = graph.total_flops;
    return g.dump();
}

Json summary_json(const std::optional<RunSummary>& s)
{
    return s ? run_summary_to_json(*s) : Json(nullptr);
}

template <class T, class F>
Json array_of(const std::vector<T>& items, F&& to_json)
{
    Json a = Json::array();
    for (const T& item : items) a.push_back(to_json(item));
    return a;
}

std::string describe_errno(int err) { return std::strerror(err); }

std::string quoted_with_option(const std::string& path, std::string_view option)
{
    std::string s = option.empty() ? std::string() : std::string(option) + ": ";
    return s + "'" + path + "'";
}

} // namespace

RunLog::RunLog(Kind kind) : m_kind(kind) {}

void RunLog::set_model(const ModelSpec& spec, const Graph& graph)
{
    m_model_json = model_spec_to_json(spec);
    m_graph_json = graph_json_of(graph);
}

void RunLog::set_run_start_weights(int run, std::string path)
{
    run_at(run).start_weights = std::move(path);
}

const std::string& RunLog::start_weights(int run) const { return checked(run).start_weights; }

void RunLog::set_run_model(int run, const ModelSpec& spec, const Graph& graph)
{
    Run& r = run_at(run);
    r.model_json = model_spec_to_json(spec);
    r.graph_json = graph_json_of(graph);
}

const std::string& RunLog::model_json(const Run& r) const
{
    return r.model_json.empty() ? m_model_json : r.model_json;
}

const std::string& RunLog::graph_json(const Run& r) const
{
    return r.graph_json.empty() ? m_graph_json : r.graph_json;
}

void RunLog::set_environment(const Environment& env) { m_environment = env; }

std::optional<Environment> RunLog::environment() const { return m_environment; }

int RunLog::add_run(const RunConfig& config)
{
    Run r;
    r.config = config;
    m_runs.push_back(std::move(r));
    return int(m_runs.size()) - 1;
}

void RunLog::set_summary(int run, const RunSummary& summary) { run_at(run).summary = summary; }

RunLog::Run& RunLog::run_at(int run)
{
    if (run < 0) run = 0;
    // The trainer may report for a run nobody announced; keep its data rather than drop it.
    while (int(m_runs.size()) <= run) m_runs.push_back(Run{});
    return m_runs[std::size_t(run)];
}

const RunLog::Run& RunLog::checked(int run) const
{
    if (run < 0 || run >= int(m_runs.size()))
        throw std::out_of_range("RunLog: no run " + std::to_string(run));
    return m_runs[std::size_t(run)];
}

void RunLog::on_step(int run, const StepMetrics& m)
{
    run_at(run).steps.push_back(m);
    if (m_next) m_next->on_step(run, m);
}

void RunLog::on_epoch(int run, const EpochMetrics& m)
{
    run_at(run).epochs.push_back(m);
    if (m_next) m_next->on_epoch(run, m);
    try {
        if (m_epoch_json) write_json(*m_epoch_json);
        if (m_epoch_csv) write_csv(*m_epoch_csv);
    } catch (const std::exception& e) {
        if (!m_warned_save) {
            m_warned_save = true;
            on_event(run, RunEvent{RunEvent::Kind::Warning, 0,
                                   std::string("could not save the log at the end of epoch ") +
                                       std::to_string(m.epoch) + ": " + e.what()});
        }
    }
}

void RunLog::on_event(int run, const RunEvent& e)
{
    run_at(run).events.push_back(e);
    if (m_next) m_next->on_event(run, e);
}

const RunConfig& RunLog::config(int run) const { return checked(run).config; }
const std::vector<StepMetrics>& RunLog::steps(int run) const { return checked(run).steps; }
const std::vector<EpochMetrics>& RunLog::epochs(int run) const { return checked(run).epochs; }
const std::vector<RunEvent>& RunLog::events(int run) const { return checked(run).events; }
const std::vector<NumericsSample>& RunLog::numerics(int run) const { return checked(run).numerics; }

void RunLog::on_numerics(int run, const NumericsSample& sample)
{
    run_at(run).numerics.push_back(sample);
    if (m_next) m_next->on_numerics(run, sample);
}
const std::optional<RunSummary>& RunLog::summary(int run) const { return checked(run).summary; }

std::string RunLog::to_json() const
{
    static const Run empty{};
    const Run& first = m_runs.empty() ? empty : m_runs.front();
    auto config_json = [&](const Run& r) {
        Json j = Json::parse(run_config_to_json(r.config));
        j["model"] = Json::parse(model_json(r));
        // Where the run's first weights came from is part of how it was set up: beside the
        // model, not only in the events (a reader of the config alone sees it).
        if (!r.start_weights.empty()) j["start_weights"] = r.start_weights;
        // How a mixed_fp8 run's fp8 GEMMs ran, from the log's device: the CPU emulates
        // them (E4M3/E5M2 rounding in fp32 math), a GPU runs its fp8 tensor cores.
        if (r.config.policy == Policy::MixedFP8 && m_environment)
            j["fp8_execution"] =
                m_environment->backend == BackendKind::Cpu ? "emulated" : "tensor_cores";
        return j;
    };

    Json root;
    root["format"] = std::string(k_log_format);
    root["kind"] = m_kind == Kind::Train ? "train" : "compare";
    Json config = config_json(first);
    if (m_kind == Kind::Compare) {
        Json policies = Json::array();
        for (const Run& r : m_runs) policies.push_back(std::string(policy_name(r.config.policy)));
        config["policies"] = policies;
    }
    root["config"] = config;
    root["graph"] = Json::parse(graph_json(first));
    root["environment"] = m_environment ? environment_to_json(*m_environment) : Json(nullptr);
    // Language models only: a classifier's log, and logs written before, have no such key.
    if (m_perplexity_references)
        root["perplexity_references"] = perplexity_references_to_json(*m_perplexity_references);

    if (m_kind == Kind::Train) {
        const Run& r = first;
        root["steps"] = array_of(r.steps, step_metrics_to_json);
        root["epochs"] = array_of(r.epochs, epoch_metrics_to_json);
        root["events"] = array_of(r.events, run_event_to_json);
        if (!r.numerics.empty()) root["numerics"] = array_of(r.numerics, numerics_sample_to_json);
        root["summary"] = summary_json(r.summary);
    } else {
        Json runs = Json::array();
        for (std::size_t i = 0; i < m_runs.size(); ++i) {
            const Run& r = m_runs[i];
            Json j;
            j["run"] = int(i);
            j["policy"] = std::string(policy_name(r.config.policy));
            j["config"] = config_json(r);
            j["graph"] = Json::parse(graph_json(r));
            j["steps"] = array_of(r.steps, step_metrics_to_json);
            j["epochs"] = array_of(r.epochs, epoch_metrics_to_json);
            j["events"] = array_of(r.events, run_event_to_json);
            if (!r.numerics.empty()) j["numerics"] = array_of(r.numerics, numerics_sample_to_json);
            j["summary"] = summary_json(r.summary);
            runs.push_back(std::move(j));
        }
        root["runs"] = std::move(runs);
    }
    return root.dump(1) + "\n";
}

std::string RunLog::to_csv() const
{
    std::string out = "run,policy,step,epoch,loss,accuracy,step_ms,wall_ms,samples_per_s,"
                      "loss_scale,next_loss_scale,overflow,skipped\n";
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
        const std::string prefix =
            std::to_string(i) + "," + std::string(policy_name(m_runs[i].config.policy)) + ",";
        for (const StepMetrics& m : m_runs[i].steps) {
            out += prefix;
            out += std::to_string(m.step) + "," + std::to_string(m.epoch) + ",";
            out += csv_number(m.loss) + "," + csv_number(m.accuracy) + ",";
            out += csv_number(m.step_ms) + "," + csv_number(rounded(m.wall_ms, 1e3)) + ",";
            out += csv_number(rounded(m.samples_per_s, 10)) + ",";
            out += csv_number(m.loss_scale) + "," + csv_number(m.next_loss_scale) + ",";
            out += std::string(m.overflow ? "1" : "0") + "," + (m.skipped ? "1" : "0") + "\n";
        }
    }
    return out;
}

void RunLog::write_json(const std::string& path) const { write_file_atomically(path, to_json()); }
void RunLog::write_csv(const std::string& path) const { write_file_atomically(path, to_csv()); }

void check_output_path(const std::string& path, std::string_view option)
{
    const std::string what = quoted_with_option(path, option);
    if (path.empty())
        throw InputError((option.empty() ? std::string("output path") : std::string(option)) +
                         ": the file name is empty");
    const fs::path p(path);
    std::error_code ec;
    if (fs::is_directory(p, ec))
        throw InputError(what + " is a folder; give a file name inside it");
    fs::path folder = p.parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::exists(folder, ec))
        throw InputError(what + ": the folder '" + folder.string() + "' does not exist");
    if (!fs::is_directory(folder, ec))
        throw InputError(what + ": '" + folder.string() + "' is not a folder");
    // access() says yes to root for a read-only folder and knows nothing of read-only
    // mounts; creating the temporary file the real write will use is the honest test.
    const std::string probe = path + ".tmp";
    const bool existed = fs::exists(probe, ec);
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) {
        const int err = errno;
        throw InputError(what + " cannot be written: " + describe_errno(err));
    }
    ::close(fd);
    if (!existed) ::unlink(probe.c_str());
}

} // namespace mixlab
