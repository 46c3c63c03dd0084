// RunGroup: setting up a group's device, data, graph and runs with stop checks between
// the phases, the one lockstep loop (a failing run ends alone), the profiling pass, and
// max-batch searches on the group's device and data.
#include "mixlab/run_group.h"

#include "mixlab/error.h"
#include "mixlab/policy.h"

#include <algorithm>
#include <utility>

namespace mixlab {

namespace {

// The profiling pass's extra steps train the model further but are not the run's timed
// steps: the run's logged steps and summary stay those of the training.
class DiscardSink : public MetricsSink {
public:
    void on_step(int, const StepMetrics&) override {}
    void on_epoch(int, const EpochMetrics&) override {}
    void on_event(int, const RunEvent&) override {}
};

// Stop during setup: thrown between phases, caught by run() and prepare().
struct StoppedInSetup {};

void check_stop(const std::stop_token& stop)
{
    if (stop.stop_requested()) throw StoppedInSetup{};
}

std::string message_of(const std::exception_ptr& error)
{
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error (an exception that is not a std::exception)";
    }
}

} // namespace

std::string_view group_phase_name(GroupPhase phase)
{
    switch (phase) {
    case GroupPhase::OpeningDevice: return "opening the device";
    case GroupPhase::LoadingData: return "loading the data";
    case GroupPhase::BuildingGraph: return "building the graph";
    case GroupPhase::Planning: return "planning";
    case GroupPhase::Training: return "training";
    case GroupPhase::Profiling: return "profiling";
    case GroupPhase::Searching: return "searching";
    }
    return "?";
}

bool GroupOutcome::any_failed() const
{
    return std::any_of(runs.begin(), runs.end(),
                       [](const RunOutcome& r) { return r.status == RunOutcome::Status::Failed; });
}

int profile_steps_for(const RunSummary& s, const RunGroupOptions& o)
{
    if (o.profile_steps <= 0) return 0;
    const double ms = s.median_step_ms > 0 ? s.median_step_ms : s.mean_step_ms;
    if (!(o.profile_seconds > 0) || !(ms > 0)) return o.profile_steps;
    const int fit = int(o.profile_seconds * 1000.0 / (3.0 * ms));
    return std::clamp(fit, std::min(2, o.profile_steps), o.profile_steps);
}

// Where run() is in setting up: the phase announced last and the run being set up (-1:
// the group's own parts), so that a failure names whose it was.
struct RunGroup::SetupState {
    GroupPhase phase = GroupPhase::OpeningDevice;
    int run = -1;
};

RunGroup::RunGroup(ModelSpec model, std::vector<RunConfig> configs, RunGroupOptions options)
    : m_model(std::move(model)), m_configs(std::move(configs)), m_options(options)
{
    if (m_configs.empty()) throw InputError("a run group needs at least one run config");
    if ((!m_options.save_weights.empty() || !m_options.save_predictions.empty()) &&
        m_configs.size() != 1)
        throw InputError("saving weights or predictions takes a group of one run, not " +
                         std::to_string(m_configs.size()));
    if (!m_options.resume.empty() && m_configs.size() != 1)
        throw InputError("resuming from a checkpoint takes a group of one run, not " +
                         std::to_string(m_configs.size()));
    const std::vector<RunGroupOptions::RunOutputs>& outputs = m_options.run_outputs;
    if (!outputs.empty() && outputs.size() != m_configs.size())
        throw InputError("run outputs: " + std::to_string(outputs.size()) + " given for " +
                         std::to_string(m_configs.size()) + " runs (give one per run, or none)");
    m_checkpoints.resize(m_configs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const RunGroupOptions::RunOutputs& o = outputs[i];
        const std::string which = "run outputs of run " + std::to_string(i) + ": ";
        if (!o.checkpoint_folder.empty() && !o.checkpoint_file.empty())
            throw InputError(which + "a checkpoint folder ('" + o.checkpoint_folder +
                             "') or a checkpoint file ('" + o.checkpoint_file + "'), not both");
        if (!o.checkpoint_file.empty())
            m_checkpoints[i] =
                RunCheckpoints{CheckpointRotation::one_file(o.checkpoint_file), true};
        if (o.checkpoint_folder.empty()) continue;
        if (o.keep_checkpoints < 1)
            throw InputError(which + "keep_checkpoints must be at least 1, got " +
                             std::to_string(o.keep_checkpoints));
        m_checkpoints[i] =
            RunCheckpoints{CheckpointRotation(o.checkpoint_folder, o.keep_checkpoints), false};
    }
}

RunGroup::~RunGroup() = default;

const RunConfig& RunGroup::config(int run) const { return m_configs.at(std::size_t(run)); }

const GroupFacts& RunGroup::facts() const
{
    if (!m_facts) throw Error("run group: no facts before the data is loaded and the graph built");
    return *m_facts;
}

TrainingRun* RunGroup::training_run(int run)
{
    return std::size_t(run) < m_runs.size() ? m_runs[std::size_t(run)].get() : nullptr;
}

void RunGroup::check_run(int run) const
{
    if (!m_backend) throw Error("run group: check_run before the device is open");
    const RunConfig& c = config(run);
    validate_run_config(c);
    check_policy_supported(m_backend->info(), c.policy);
}

// The part of setting up that run() and prepare() share: the device, the data, the graph
// and the data's device copy. Stop is checked after each phase (each may take seconds: a
// large dataset, a CUDA context).
void RunGroup::set_up_shared(RunGroupObserver& observer, const std::stop_token& stop,
                             bool check_runs, SetupState& state)
{
    const RunConfig& first = m_configs.front();
    check_stop(stop);
    state = {GroupPhase::OpeningDevice, -1};
    observer.on_phase(state.phase, -1);
    m_backend = make_backend(first.device);
    // Every run's policy before the data: a GPU without bf16 should not cost a data load.
    for (int i = 0; check_runs && i < size(); ++i) {
        state.run = i;
        check_run(i);
    }
    state.run = -1;
    check_stop(stop);

    state.phase = GroupPhase::LoadingData;
    observer.on_phase(state.phase, -1);
    DatasetOptions data_options = first.dataset;
    const bool language_model = is_language_model(m_model);
    // synthetic-text is a language model's built-in corpus, as synthetic is an image
    // model's (and Fashion-MNIST, when installed, its default).
    if (data_options.name.empty() && language_model) data_options.name = "synthetic-text";
    m_data = load_dataset(data_options, first.seed);
    check_stop(stop);
    require_matching_data(language_model, m_model.name, *m_data);

    state.phase = GroupPhase::BuildingGraph;
    observer.on_phase(state.phase, -1);
    const Dataset& d = *m_data;
    GroupFacts facts;
    facts.graph = build_graph(
        m_model, d.is_text() ? Shape::tokens() : Shape{{d.height, d.width, d.channels}}, d.classes);
    facts.dataset_name = d.name;
    facts.dataset_source = d.source;
    facts.train_samples = d.train.n;
    facts.test_samples = d.test.n;
    if (d.is_text()) facts.perplexity_references = test_perplexity_references(*d.text);
    facts.device = m_backend->info();
    facts.environment = describe_environment(facts.device);
    m_facts = std::move(facts);
    observer.on_prepared(*m_facts);
    check_stop(stop);

    m_device_data = std::make_unique<DeviceDataset>(*m_data, *m_backend);
}

// Each run's network, activations and state, planned one run after the other with stop
// checked before each and after the last (each allocates and plans a whole network); then
// every run's start.
void RunGroup::set_up_runs(RunGroupObserver& observer, const std::stop_token& stop,
                           SetupState& state)
{
    for (int i = 0; i < size(); ++i) {
        check_stop(stop);
        state = {GroupPhase::Planning, i};
        observer.on_phase(state.phase, i);
        m_runs.push_back(std::make_unique<TrainingRun>(m_facts->graph, m_configs[std::size_t(i)],
                                                       *m_device_data, *m_backend, i));
        m_runs.back()->set_stop_token(stop);
        if (!m_options.load_weights.empty()) m_runs.back()->load_weights(m_options.load_weights);
        if (!m_options.resume.empty()) m_runs.back()->resume(m_options.resume);
    }
    check_stop(stop);
    state.run = -1;
    for (int i = 0; i < size(); ++i) {
        const TrainingRun& r = *m_runs[std::size_t(i)];
        observer.on_run_started(i,
                                RunStart{r.total_steps(), r.steps_per_epoch(), r.device_bytes()});
    }
    state.phase = GroupPhase::Training;
    observer.on_phase(state.phase, -1);
}

void RunGroup::require_fresh(const char* what) const
{
    // A second setup would replace the backend and data that the first one's device data
    // and runs refer to: one group, one job.
    if (m_backend) throw Error(std::string("run group: ") + what + " on a group already set up");
}

GroupOutcome RunGroup::run(MetricsSink& sink, RunGroupObserver& observer, std::stop_token stop)
{
    require_fresh("run()");
    GroupOutcome out;
    out.runs.resize(m_configs.size());
    SetupState state;
    try {
        set_up_shared(observer, stop, true, state);
        set_up_runs(observer, stop, state);
    } catch (const StoppedInSetup&) {
        // Every run ends stopped with nothing done; those set up so far are freed first.
        m_runs.clear();
        for (int i = 0; i < size(); ++i) {
            RunOutcome& r = out.runs[std::size_t(i)];
            r.status = RunOutcome::Status::Stopped;
            r.summary.stopped = true;
            observer.on_run_finished(i, r.summary);
        }
        return out;
    } catch (...) {
        fail_setup(std::current_exception(), state, sink, observer, out);
        return out;
    }
    train_in_lockstep(sink, observer, stop, out);
    save_weights(out);
    sample_runs(observer, out);
    profile_runs(observer, stop, out);
    return out;
}

void RunGroup::fail_setup(std::exception_ptr error, const SetupState& state, MetricsSink& sink,
                          RunGroupObserver& observer, GroupOutcome& out)
{
    m_runs.clear(); // the runs set up so far give their memory back before anything else
    const std::string message = message_of(error);
    std::vector<std::string> texts(m_configs.size(), message);
    if (state.run >= 0) {
        // The culprit keeps its own message; the others say whose setup failed.
        const std::string culprit(policy_name(config(state.run).policy));
        for (int i = 0; i < size(); ++i)
            if (i != state.run)
                texts[std::size_t(i)] =
                    "not run: the " + culprit + " run of this group could not start: " + message;
    }
    out.setup_failure = GroupOutcome::SetupFailure{state.phase, state.run, error};
    // Every run's Error event first (an exported log carries the reason), then the ends.
    for (int i = 0; i < size(); ++i)
        sink.on_event(i, RunEvent{RunEvent::Kind::Error, 0, texts[std::size_t(i)]});
    for (int i = 0; i < size(); ++i) {
        RunOutcome& r = out.runs[std::size_t(i)];
        r.status = RunOutcome::Status::Failed;
        r.failure = texts[std::size_t(i)];
        r.error = i == state.run || state.run < 0
                      ? error
                      : std::make_exception_ptr(Error(texts[std::size_t(i)]));
        observer.on_run_failed(i, r.failure);
    }
}

// The run fails alone: the steps before the fault did train, so those still in flight are
// reported (the curve reaches the fault); then the run is destroyed, giving its memory back
// to the runs that go on, and the failure is reported at the step that failed.
void RunGroup::fail_run(int i, std::exception_ptr error, MetricsSink& sink,
                        RunGroupObserver& observer, GroupOutcome& out)
{
    std::unique_ptr<TrainingRun>& run = m_runs[std::size_t(i)];
    const std::int64_t step = run ? run->steps_done() + 1 : 0;
    // What failed may be the run's own state, so a second error here is dropped: the
    // first one is the one the user needs.
    try {
        if (run) run->finish(sink, true);
    } catch (...) {}
    run.reset();
    RunOutcome& r = out.runs[std::size_t(i)];
    r.status = RunOutcome::Status::Failed;
    r.failure = message_of(error);
    r.error = std::move(error);
    sink.on_event(i, RunEvent{RunEvent::Kind::Error, step, r.failure});
    observer.on_run_failed(i, r.failure);
}

// One step of each run in turn, in run order, until every run is done or stop is asked
// for; a run that throws ends alone (fail_run) and the others go on. Then each run that
// is left is finished (its last records reported, its last epoch evaluated unless
// stopped) and reported.
void RunGroup::train_in_lockstep(MetricsSink& sink, RunGroupObserver& observer,
                                 const std::stop_token& stop, GroupOutcome& out)
{
    bool stopped = false;
    for (;;) {
        bool any = false;
        for (int i = 0; i < size(); ++i) {
            TrainingRun* run = m_runs[std::size_t(i)].get();
            if (!run || run->finished()) continue;
            if (stop.stop_requested()) {
                stopped = true;
                break;
            }
            try {
                run->step(sink);
                // An epoch's last step: every step reported, the epoch evaluated.
                if (run->steps_done() % run->steps_per_epoch() == 0)
                    save_checkpoint(i, false, sink, out);
            } catch (...) {
                fail_run(i, std::current_exception(), sink, observer, out);
            }
            any = true;
        }
        if (stopped || !any) break;
    }
    for (int i = 0; i < size(); ++i) {
        TrainingRun* run = m_runs[std::size_t(i)].get();
        if (!run) continue;
        try {
            RunOutcome& r = out.runs[std::size_t(i)];
            r.summary = run->finish(sink, stopped);
            r.status =
                r.summary.stopped ? RunOutcome::Status::Stopped : RunOutcome::Status::Finished;
            save_checkpoint(i, true, sink, out);
        } catch (...) {
            fail_run(i, std::current_exception(), sink, observer, out);
        }
    }
    for (int i = 0; i < size(); ++i)
        if (m_runs[std::size_t(i)]) observer.on_run_finished(i, out.runs[std::size_t(i)].summary);
}

// One path for both kinds of checkpoint (RunOutputs): they differ in what a failure does
// and in a stop before the first step. A named file is the output the user asked for, so a
// run that cannot write it during training fails (better at epoch 1 than after the last);
// the folder's are a safety net the front end set up, so the run goes on with a warning.
void RunGroup::save_checkpoint(int i, bool at_end, MetricsSink& sink, GroupOutcome& out)
{
    std::optional<RunCheckpoints>& target = m_checkpoints[std::size_t(i)];
    TrainingRun* run = m_runs[std::size_t(i)].get();
    if (!target || !run || run->steps_done() == target->last_step) return;
    const std::int64_t step = run->steps_done();
    if (step == 0 && !target->named) return; // nothing trained: nothing worth keeping
    target->last_step = step;
    std::string problem;
    try {
        const std::string path = target->rotation.path_for(step / run->steps_per_epoch(), step);
        run->save_checkpoint(path, m_model);
        problem = target->rotation.written(path);
    } catch (...) {
        if (target->named && !at_end) throw; // fails the run, as any error of its step would
        problem = "the checkpoint at step " + std::to_string(step) +
                  " could not be written: " + message_of(std::current_exception());
        out.runs[std::size_t(i)].checkpoint_failure = problem;
        if (target->named) return; // the front end that named it says so
    }
    if (!problem.empty()) sink.on_event(i, RunEvent{RunEvent::Kind::Warning, step, problem});
}

// Before profiling, whose extra steps would train the model on: the weights (and the
// predictions) are those of the model the metrics describe.
void RunGroup::save_weights(GroupOutcome& out)
{
    for (int i = 0; i < size(); ++i) {
        TrainingRun* run = m_runs[std::size_t(i)].get();
        if (!run) continue;
        // A run's own file beside the group's (a group of one may name both); none for a
        // run stopped before its first step: nothing trained.
        std::string own;
        if (!m_options.run_outputs.empty() && run->steps_done() > 0)
            own = m_options.run_outputs[std::size_t(i)].weights;
        try {
            for (const std::string* path : {&m_options.save_weights, &own})
                if (!path->empty()) run->save_weights(*path, m_model);
            if (!m_options.save_predictions.empty())
                run->save_predictions(m_options.save_predictions, m_model);
        } catch (...) {
            out.runs[std::size_t(i)].weights_failure = message_of(std::current_exception());
        }
    }
}

// Each run alone, one after the other, so its wall time per step is its own. Only when no
// run was stopped (a failed run leaves the others a group still worth profiling; a stop
// does not). A stop ends the pass between runs (one run's pass is too short to cut); the
// profiles taken are kept. A pass that fails costs the run its profile, not its summary.
// Before profiling, whose extra steps would train the model on: the sample is of the model
// the metrics describe. Also after a stop: a stopped model is still a model to read.
void RunGroup::sample_runs(RunGroupObserver& observer, GroupOutcome& out)
{
    if (m_options.sample_words <= 0 || !m_facts || !m_facts->graph.input.sequence) return;
    for (int i = 0; i < size(); ++i) {
        TrainingRun* run = m_runs[std::size_t(i)].get();
        if (!run) continue;
        RunOutcome& r = out.runs[std::size_t(i)];
        try {
            r.sample = run->sample_text(m_options.sample_words, m_options.sample_temperature,
                                        m_configs[std::size_t(i)].seed);
        } catch (...) {
            r.sample_failure = message_of(std::current_exception());
            continue;
        }
        observer.on_run_sampled(i, r.sample);
    }
}

void RunGroup::profile_runs(RunGroupObserver& observer, const std::stop_token& stop,
                            GroupOutcome& out)
{
    if (m_options.profile_steps <= 0) return;
    for (const RunOutcome& r : out.runs)
        if (r.status == RunOutcome::Status::Stopped) return;
    DiscardSink discard;
    for (int i = 0; i < size(); ++i) {
        TrainingRun* run = m_runs[std::size_t(i)].get();
        if (!run) continue; // failed: nothing left to profile
        RunOutcome& r = out.runs[std::size_t(i)];
        if (stop.stop_requested()) {
            out.profiling_cut = true;
            return;
        }
        observer.on_phase(GroupPhase::Profiling, i);
        try {
            r.profile = run->profile(discard, profile_steps_for(r.summary, m_options));
        } catch (...) {
            r.profile_failure = message_of(std::current_exception());
            observer.on_profile_failed(i, r.profile_failure);
            continue;
        }
        observer.on_run_profiled(i, *r.profile);
    }
}

bool RunGroup::prepare(RunGroupObserver& observer, std::stop_token stop)
{
    require_fresh("prepare()");
    SetupState state;
    try {
        set_up_shared(observer, stop, false, state);
        return true;
    } catch (const StoppedInSetup&) {
        return false;
    }
}

void RunGroup::require_prepared(const char* what) const
{
    if (!m_device_data) throw Error(std::string("run group: ") + what + " before prepare()");
}

BatchTrial RunGroup::try_batch(int run, int batch, const MaxBatchOptions& options)
{
    require_prepared("a max-batch trial");
    return run_batch_trial(m_facts->graph, config(run), *m_device_data, *m_backend, batch, options);
}

MaxBatchSearch RunGroup::search_max_batch(int run, const MaxBatchOptions& options,
                                          RunGroupObserver& observer, std::stop_token stop)
{
    require_prepared("a max-batch search");
    observer.on_phase(GroupPhase::Searching, run);
    const auto trial = [&](int batch) {
        observer.on_trial_started(run, batch);
        BatchTrial t = try_batch(run, batch, options);
        observer.on_trial(run, t);
        return t;
    };
    return mixlab::search_max_batch(trial, options, std::move(stop));
}

} // namespace mixlab
