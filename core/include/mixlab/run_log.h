// RunLog: a MetricsSink that records everything of one run or of a compare group
// (config, environment, per-step and per-epoch metrics, events, summaries) and writes
// it as JSON (`mixlab-log/1`) and CSV. The CLI writes it; the GUI reuses it for export.
//
// JSON, one run (kind "train"):
//   {"format": "mixlab-log/1", "kind": "train",
//    "config": {<run_config_to_json fields>, "model": <model_spec_to_json>,
//               "start_weights": PATH (only for a run that started from a weights file:
//               --load-weights, the app's Run > Start from weights)},
//    "graph": {"input": "32x32x3", "classes": 10, "head": "logits",
//              "total_params": N, "total_flops": N},
//    "environment": {<environment_to_json fields>},
//    "perplexity_references": {"unigram", "trigram", "floor"} (language models only; the
//        trigram null past k_max_trigram_train_tokens, the floor for synthetic-text only),
//    "steps":  [{"step", "epoch", "loss", "accuracy", "step_ms", "wall_ms",
//                "samples_per_s", "loss_scale", "next_loss_scale", "overflow", "skipped"}],
//    "epochs": [{"epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy",
//                "seconds", "skipped_steps"}],
//               language models add "valid_loss", "valid_accuracy" (null without a
//               validation split), "train_perplexity", "valid_perplexity",
//               "test_perplexity" (exp of the per-token losses) and "lr"; their steps'
//               "samples_per_s" count tokens
//    "events": [{"step", "kind", "message"}],   kind: run_event_kind_name; a mixed_fp8
//        run's amax jump warnings add "fp8_amax_jump": {"reports_stopped": false, "layer",
//        "operand": "x"|"w"|"dy", "amax", "history_max", "more_tensors"}, or
//        {"reports_stopped": true} on the last, after which none are reported (older logs:
//        the message alone, which explain still reads)
//    "numerics": [<numerics_sample_to_json>] (numerics.h; only when the run sampled them,
//        RunConfig::numerics_every: logs without it read as before),
//    "summary": {"steps", "skipped_steps", "epochs_done", "mean_step_ms",
//                "median_step_ms", "final_train_loss", "final_test_loss",
//                "final_test_accuracy", ("final_valid_loss", "final_test_perplexity",
//                "final_lr": language models), "final_loss_scale", "wall_seconds", "stopped",
//                "halted" (only when the run ended itself: why)}
//                or null when the run did not finish}
//
// JSON, a compare group (kind "compare"): "config" is the first run's config with
// "policies": [names in run order] added; "graph" and "environment" as above; and
//   "runs": [{"run": index, "policy": name, "config": {...this run's config and model...},
//             "graph": {...this run's graph...},
//             "steps": [...], "epochs": [...], "events": [...], "numerics": [...] (when
//             sampled), "summary": {...}}]
// with no top-level steps/epochs/events/summary. Runs of several groups (the app's
// export) may have trained different models: each run's config and graph are its own,
// the top-level ones the first run's.
//
// Steps, epochs, events and summaries are in metrics_json.h's forms, the environment in
// environment.h's. A summary's "final_test_loss" and "final_test_accuracy" are null when
// the run never evaluated the test split.
//
// JSON numbers are the values measured (floats as their shortest decimal); the CSV
// rounds host times to the microsecond and rates to 0.1/s. Non-finite metrics (a diverged
// fp16 loss) are written as null in JSON, "nan"/"inf" in CSV. CSV (both kinds), one row
// per step in the order they arrived:
//   run,policy,step,epoch,loss,accuracy,step_ms,wall_ms,samples_per_s,loss_scale,
//   next_loss_scale,overflow,skipped
//
// Not thread-safe: record and write from one thread (the one driving the runs).
#pragma once
#include "mixlab/atomic_file.h" // write_file_atomically, which the logs use
#include "mixlab/environment.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/text_corpus.h"
#include "mixlab/trainer.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

inline constexpr std::string_view k_log_format = "mixlab-log/1";

class RunLog : public MetricsSink {
public:
    enum class Kind { Train, Compare };

    explicit RunLog(Kind kind = Kind::Train);

    // A log as to_json wrote it, read back strictly: its runs' configs, models, graphs,
    // environment, steps, epochs, events and summaries, so that to_json() gives the same
    // document again. InputError naming the field otherwise.
    static RunLog parse(std::string_view json_text);

    // The model every run trained, unless set_run_model says otherwise for a run.
    void set_model(const ModelSpec& spec, const Graph& graph);
    void set_environment(const Environment& env);
    // A language model's test-perplexity references (unigram, trigram count model, the
    // source's floor), written as "perplexity_references"; classifiers' logs have none.
    void set_perplexity_references(const PerplexityReferences& references)
    {
        m_perplexity_references = references;
    }
    const std::optional<PerplexityReferences>& perplexity_references() const
    {
        return m_perplexity_references;
    }
    // Registers a run; its index is what the trainer passes to the on_* calls
    // (0, 1, ... in the order added).
    int add_run(const RunConfig& config);
    // The model this run trained, when it is not the log's (set_model) one.
    void set_run_model(int run, const ModelSpec& spec, const Graph& graph);
    // The weights file the run started from (its config's "start_weights"); empty: none.
    void set_run_start_weights(int run, std::string path);
    const std::string& start_weights(int run) const;
    void set_summary(int run, const RunSummary& summary);
    // Every call is recorded, then passed on to `next` (e.g. a progress printer).
    void forward_to(MetricsSink* next) { m_next = next; }
    // At every epoch end the log so far is written to these files (atomically), so a
    // killed process loses at most the epoch in progress. A failed write does not stop
    // the run: it is recorded once as a warning event and tried again next epoch.
    void save_each_epoch(std::optional<std::string> json_path, std::optional<std::string> csv_path)
    {
        m_epoch_json = std::move(json_path);
        m_epoch_csv = std::move(csv_path);
    }

    void on_step(int run, const StepMetrics& m) override;
    void on_epoch(int run, const EpochMetrics& m) override;
    void on_event(int run, const RunEvent& e) override;
    void on_numerics(int run, const NumericsSample& sample) override;

    Kind kind() const { return m_kind; }
    int run_count() const { return int(m_runs.size()); }
    const RunConfig& config(int run) const;
    const std::vector<StepMetrics>& steps(int run) const;
    const std::vector<EpochMetrics>& epochs(int run) const;
    const std::vector<RunEvent>& events(int run) const;
    // The run's numerics samples in step order; empty when it sampled none.
    const std::vector<NumericsSample>& numerics(int run) const;
    const std::optional<RunSummary>& summary(int run) const;
    // What set_environment was given; none when it was never called.
    std::optional<Environment> environment() const;

    std::string to_json() const;
    std::string to_csv() const;
    // Atomic: FILE.tmp is written, flushed and renamed over FILE. Throws Error naming
    // the path when the file cannot be written.
    void write_json(const std::string& path) const;
    void write_csv(const std::string& path) const;

private:
    struct Run {
        RunConfig config;
        std::string model_json, graph_json; // empty: the log's
        std::string start_weights;
        std::vector<StepMetrics> steps;
        std::vector<EpochMetrics> epochs;
        std::vector<RunEvent> events;
        std::vector<NumericsSample> numerics;
        std::optional<RunSummary> summary;
    };
    Run& run_at(int run); // grows the list for an index the trainer sends unannounced
    const Run& checked(int run) const;
    const std::string& model_json(const Run& r) const;
    const std::string& graph_json(const Run& r) const;

    Kind m_kind;
    std::optional<Environment> m_environment;
    std::optional<PerplexityReferences> m_perplexity_references;
    std::vector<Run> m_runs;
    std::string m_model_json = "null";
    std::string m_graph_json = "null";
    MetricsSink* m_next = nullptr;
    std::optional<std::string> m_epoch_json, m_epoch_csv;
    bool m_warned_save = false;
};

// Throws InputError naming `path` (and the option, when given, e.g. "--log-json") when
// a file cannot be created there: the folder is missing, is not a folder, is not
// writable, or the path is itself a folder. Call before a run starts, so that a long
// run does not end in a log it cannot write. Leaves no file behind.
void check_output_path(const std::string& path, std::string_view option = {});

} // namespace mixlab
