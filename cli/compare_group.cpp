// The group behind `train`, `compare` and `explain`: a RunGroup observed into the log,
// the progress printer and stderr.
#include "compare_group.h"

#include "progress_printer.h"

#include "mixlab/error.h"
#include "mixlab/model_spec.h"
#include "mixlab/text_corpus.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

namespace mixlab::cli {
namespace {

// Turns what the group reports into the log's setup, the progress printer and stderr
// lines; the printer lives from the start of training to the end of the group.
class CliObserver : public RunGroupObserver {
public:
    CliObserver(CompareGroup& group, const TrainInputs& in) : m_group(group), m_in(in) {}

    void on_prepared(const GroupFacts& facts) override
    {
        note_device(m_in.config, facts);
        m_group.facts = facts;
        RunLog& log = m_group.log;
        log.set_model(m_in.spec, facts.graph);
        log.set_environment(facts.environment);
        if (facts.perplexity_references)
            log.set_perplexity_references(*facts.perplexity_references);
        for (const RunConfig& c : m_group.configs) {
            const int run = log.add_run(c);
            if (m_in.load_weights) log.set_run_start_weights(run, *m_in.load_weights);
        }
    }

    void on_run_started(int run, const RunStart& start) override
    {
        const RunConfig& c = m_group.configs[std::size_t(run)];
        m_group.device_bytes.resize(m_group.configs.size());
        m_group.device_bytes[std::size_t(run)] = start.device_bytes;
        // One run (train) prints no "[policy] " prefix.
        const std::string label =
            m_group.log.kind() == RunLog::Kind::Train ? "" : std::string(policy_name(c.policy));
        m_infos.push_back({label, start.total_steps, start.steps_per_epoch,
                           c.steps > 0 ? 0 : c.epochs, is_language_model(m_in.spec)});
    }

    void on_phase(GroupPhase phase, int run) override
    {
        if (phase == GroupPhase::Training) start_training();
        if (phase == GroupPhase::Profiling && run == 0)
            std::fprintf(stderr,
                         "profiling: %d steps per run with events between phases and "
                         "layers, then %d unmarked for the wall time\n",
                         m_group.profile_steps, m_group.profile_steps);
    }

    void on_run_finished(int run, const RunSummary& summary) override
    {
        m_group.log.set_summary(run, summary);
    }

private:
    // Every run is set up: progress from here on, and the log saved at each epoch's end.
    void start_training()
    {
        m_printer.emplace(stderr, m_infos, m_in.progress_every);
        m_group.log.forward_to(&*m_printer);
        m_group.log.save_each_epoch(m_in.log_json, m_in.log_csv);
        const GroupFacts& f = m_group.facts;
        // The runs' own first events say what trains how; this says on what data.
        if (m_group.log.kind() == RunLog::Kind::Train)
            std::fprintf(stderr, "dataset %s (%s): ", f.dataset_name.c_str(),
                         f.dataset_source.c_str());
        else
            std::fprintf(stderr, "comparing %zu policies in lockstep on dataset %s (%s): ",
                         m_group.configs.size(), f.dataset_name.c_str(), f.dataset_source.c_str());
        std::fprintf(stderr, "%lld training, %lld test samples of %s\n",
                     static_cast<long long>(f.train_samples),
                     static_cast<long long>(f.test_samples), f.graph.input.to_string().c_str());
        if (f.perplexity_references)
            std::fprintf(stderr, "%s\n",
                         perplexity_references_text(*f.perplexity_references, {}).c_str());
    }

    CompareGroup& m_group;
    const TrainInputs& m_in;
    std::vector<ProgressPrinter::RunInfo> m_infos;
    std::optional<ProgressPrinter> m_printer;
};

} // namespace

std::vector<Policy> parse_policies(const ArgParser& p)
{
    const auto text = p.value("--policies");
    if (!text) throw InputError("--policies is required, e.g. --policies fp32,mixed_fp16");
    std::vector<Policy> out;
    for (const std::string& name : split_list("--policies", *text)) {
        const Policy pol = parse_policy(name);
        if (std::find(out.begin(), out.end(), pol) != out.end())
            throw InputError("--policies names " + name + " twice");
        out.push_back(pol);
    }
    return out;
}

void run_compare_group(CompareGroup& g, const TrainInputs& in, MetricsSink* sink,
                       const char* command)
{
    RunGroupOptions options;
    options.profile_steps = g.profile_steps;
    options.sample_words = in.sample_words;
    options.sample_temperature = in.temperature;
    options.load_weights = in.load_weights.value_or("");
    options.save_weights = in.save_weights.value_or("");
    options.save_predictions = in.save_predictions.value_or("");
    if (in.save_checkpoint) {
        // train's run (a group of one): the file it names, written as the app's checkpoint
        // folders are, except that a write that fails fails the run.
        if (g.configs.size() != 1)
            throw InputError("--save-checkpoint takes one run, not " +
                             std::to_string(g.configs.size()));
        options.run_outputs.resize(1);
        options.run_outputs.front().checkpoint_file = *in.save_checkpoint;
    }
    options.resume = in.resume.value_or("");
    RunGroup group(in.spec, g.configs, options);
    CliObserver observer(g, in);
    InterruptStop interrupt;
    g.outcome = group.run(sink ? *sink : g.log, observer, interrupt.token());
    g.log.forward_to(nullptr); // the printer ends with the observer
    g.interrupted = interrupt.interrupted();
    if (const auto& failed = g.outcome.setup_failure)
        throw_setup_error(failed->error, failed->phase, failed->run, g.configs);

    try {
        if (in.log_json) g.log.write_json(*in.log_json);
        if (in.log_csv) g.log.write_csv(*in.log_csv);
    } catch (const std::exception& e) {
        // A run's failure is the news; a log that could not be written is said beside it.
        if (!g.outcome.any_failed()) throw;
        std::fprintf(stderr, "mixlab-cli %s: %s\n", command, e.what());
    }
}

bool report_failed_runs(const CompareGroup& g, const char* command)
{
    bool any = false;
    for (std::size_t i = 0; i < g.outcome.runs.size(); ++i) {
        const RunOutcome& r = g.outcome.runs[i];
        if (r.status != RunOutcome::Status::Failed) continue;
        std::fprintf(stderr, "mixlab-cli %s: the %s run failed: %s\n", command,
                     std::string(policy_name(g.configs[i].policy)).c_str(), r.failure.c_str());
        any = true;
    }
    return any;
}

} // namespace mixlab::cli
