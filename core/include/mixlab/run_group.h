// RunGroup: the runs of one job (train: one; compare, explain: one per policy) set up on
// one device and trained in lockstep, or (max batch) the device, data and graph a search's
// trials run on. Every front end (mixlab-cli train/compare/explain/maxbatch, the app's
// worker and max-batch search) configures one and receives what happens.
//
// Design note. A group owns, and declares in this order (so C++ destroys them in reverse):
//   1. the backend (the device),
//   2. the dataset in host memory,
//   3. the graph (the model's shapes for the dataset's input and classes),
//   4. the dataset's device copy (DeviceDataset: buffers on 1, a reference to 2),
//   5. the TrainingRuns, one per config (each refers to 1, 3 and 4).
// Runs go first and the backend last because the later objects hold references to the
// earlier ones; the order is kept here once, not by every front end. (Buffers alone would
// survive any order: each keeps what frees it alive, backend.h's BufferReleaser.) Every
// run shares the device, the data and the initial weights: the device, dataset and seed
// are the first config's; the policy, batch, optimizer and step count are each run's own.
//
// What leaves the group is values only: phases, facts, per-run start and end, profiles
// and trials through a RunGroupObserver, metrics through a MetricsSink, both called on
// the thread that drives the group. A front end with a GUI keeps the group on its worker
// thread and forwards those values; no engine object needs to reach the GUI thread.
//
// Failures. A run that throws while training (OutOfMemoryError, anything) ends alone: its
// steps still in flight are reported, it is destroyed at once (its memory returns to the
// runs that go on), an Error event and on_run_failed name the failure, and the others go
// on. A failure while setting up (the device, the data, the graph, or run i's config,
// policy or plan) ends every run: run i with its own message, the others with "not run:
// the <policy> run of this group could not start: <message>".
#pragma once
#include "mixlab/backend.h"
#include "mixlab/checkpoint_folder.h"
#include "mixlab/dataset.h"
#include "mixlab/environment.h"
#include "mixlab/graph.h"
#include "mixlab/max_batch.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"
#include "mixlab/text_corpus.h"
#include "mixlab/trainer.h"

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

// What a group is doing; each is announced as it begins.
enum class GroupPhase {
    OpeningDevice, // the backend, then every run's config and policy checked against it
    LoadingData,
    BuildingGraph,
    Planning,  // run i: its network, activations, optimizer state (all it allocates)
    Training,  // every run set up: the lockstep loop
    Profiling, // run i's profiling pass, after training
    Searching, // run i's max-batch search
};
std::string_view group_phase_name(GroupPhase phase);

// What every run of the group trains on: known once the device is open, the data loaded
// and the graph built, before any run is set up.
struct GroupFacts {
    Graph graph; // graph.input: one sample's shape; graph.classes
    std::string dataset_name, dataset_source;
    std::int64_t train_samples = 0, test_samples = 0;
    // Language models: the test perplexities a trained model reads against.
    std::optional<PerplexityReferences> perplexity_references;
    DeviceInfo device;
    Environment environment; // the device and the host, for logs and reports
};

// A run set up (every run is, before any trains).
struct RunStart {
    std::int64_t total_steps = 0; // planned
    std::int64_t steps_per_epoch = 0;
    std::int64_t device_bytes = 0; // what the run allocated on the device
};

// How a run of the group ended.
struct RunOutcome {
    enum class Status { Finished, Stopped, Failed };
    Status status = Status::Stopped;
    // Finished and Stopped (stopped by the token, or halted: summary.halted). A run stopped
    // before it was set up has a summary with nothing done.
    RunSummary summary;
    std::string failure;      // Failed: the message (also the run's Error event)
    std::exception_ptr error; // Failed: what was thrown, for a front end that rethrows it
    std::optional<StepProfile> profile;
    std::string profile_failure; // the profiling pass failed; the run's summary stands
    // Language models with RunGroupOptions::sample_words: the text the trained model wrote,
    // or why it could not (sample_failure).
    std::string sample, sample_failure;
    // RunGroupOptions::save_weights / save_predictions: why the weights or predictions
    // could not be written; empty when they were (or none were asked for).
    std::string weights_failure;
    // RunOutputs::checkpoint_folder: why the last checkpoint that failed could not be
    // written (the run went on); RunOutputs::checkpoint_file: why the one at the run's end
    // could not be (one that fails during training fails the run).
    std::string checkpoint_failure;
};

struct GroupOutcome {
    std::vector<RunOutcome> runs; // one per config, in order
    // Setting up failed before training (every run is Failed): the phase it failed in,
    // the run being set up (-1: the group's device, data or graph) and what was thrown.
    struct SetupFailure {
        GroupPhase phase = GroupPhase::OpeningDevice;
        int run = -1;
        std::exception_ptr error;
    };
    std::optional<SetupFailure> setup_failure;
    bool profiling_cut = false; // a stop ended the profiling pass before every run's turn
    bool any_failed() const;
};

// Receives what a group does, on the thread that drives it. Every callback is optional.
class RunGroupObserver {
public:
    virtual ~RunGroupObserver() = default;
    // `run`: the run the phase is about (Planning, Profiling, Searching), -1 otherwise.
    virtual void on_phase(GroupPhase phase, int run) { (void)phase, (void)run; }
    virtual void on_prepared(const GroupFacts& facts) { (void)facts; }
    virtual void on_run_started(int run, const RunStart& start) { (void)run, (void)start; }
    // Ended without failing: trained to its end, or stopped (summary.stopped).
    virtual void on_run_finished(int run, const RunSummary& summary) { (void)run, (void)summary; }
    // After the run's Error event went to the sink (metrics before it all reported).
    virtual void on_run_failed(int run, const std::string& message) { (void)run, (void)message; }
    virtual void on_run_profiled(int run, const StepProfile& profile) { (void)run, (void)profile; }
    virtual void on_profile_failed(int run, const std::string& message)
    {
        (void)run, (void)message;
    }
    // A language model's sample (RunGroupOptions::sample_words), after training.
    virtual void on_run_sampled(int run, const std::string& text) { (void)run, (void)text; }
    virtual void on_trial_started(int run, int batch) { (void)run, (void)batch; }
    virtual void on_trial(int run, const BatchTrial& trial) { (void)run, (void)trial; }
};

struct RunGroupOptions {
    // After training, when no run was stopped: each run's profiling pass alone (not in
    // lockstep, so its wall time per step is its own) with this many marked steps, then
    // as many unmarked; its steps go to no sink. 0: no pass.
    int profile_steps = 0;
    // > 0: fewer steps (at least 2) for a slow run, so that its pass, about 3 x steps + 3
    // steps long, takes about this many seconds (a 300 ms CPU step would otherwise keep
    // a user waiting 10 s per run).
    double profile_seconds = 0;
    // Language models: after training (stopped or not), this many words generated by each
    // run that did not fail (TrainingRun::sample_text) at this temperature; 0: none.
    int sample_words = 0;
    float sample_temperature = 1.0f;
    // Non-empty: each run takes its starting weights from this safetensors file
    // (TrainingRun::load_weights) once set up; a file that does not fit fails the setup.
    std::string load_weights;
    // Non-empty (a group of one run): after training, before any profiling pass, the run's
    // weights are written here (TrainingRun::save_weights), also when it was stopped;
    // not when it failed. A write that fails is RunOutcome::weights_failure.
    std::string save_weights;
    // Non-empty (a group of one run): with the weights, the test split's logits
    // (TrainingRun::save_predictions); a write that fails is RunOutcome::weights_failure.
    std::string save_predictions;
    // Non-empty (a group of one run, whose model and config are the checkpoint's:
    // read_checkpoint_header): the run continues from this checkpoint
    // (TrainingRun::resume) once set up; a file that does not fit fails the setup.
    std::string resume;

    // Where one run of the group leaves its files: what save_weights does for a group of
    // one, for each run of a group of several (the app's compare groups, whose runs each
    // keep their weights and checkpoints); and each run's checkpoints (mixlab/checkpoint.h),
    // written atomically after each epoch's last step and when the run ends, also when
    // stopped, not when it failed, by one path (CheckpointRotation) in one of two forms.
    struct RunOutputs {
        // Non-empty: the run's weights, as save_weights writes them (after training,
        // before profiling, also when stopped; not when failed or stopped before its
        // first step); a write that fails is RunOutcome::weights_failure.
        std::string weights;
        // Non-empty: the app's safety net. A checkpoint at each epoch's end, and at the
        // run's end when that is not one (a stop), none before the first step, into this
        // folder (made when missing; a front end that picks the name claims it first,
        // claim_checkpoint_folder, and releases it when left empty) under checkpoint_file_name
        // (mixlab/checkpoint_folder.h); once one is in place, the run's older ones beyond
        // the newest keep_checkpoints are deleted. A write that fails is a Warning event in
        // the run's log and RunOutcome::checkpoint_failure, and the run goes on.
        std::string checkpoint_folder;
        int keep_checkpoints = 1;
        // Non-empty: the output a user asked for by name (mixlab-cli train
        // --save-checkpoint). One file, replaced at the same points (also at a stop before
        // the first step); its folder must exist. A write that fails during training fails
        // the run; at the run's end it is RunOutcome::checkpoint_failure (no log event:
        // the front end that named the file says so). Not with checkpoint_folder.
        std::string checkpoint_file;
    };
    // Empty, or one per config (InputError otherwise): run i's outputs.
    std::vector<RunOutputs> run_outputs;
};

// The profiling steps for a run that trained with `summary` under `options`.
int profile_steps_for(const RunSummary& summary, const RunGroupOptions& options);

class RunGroup {
public:
    // One run per config (at least one; InputError otherwise), all training `model`.
    RunGroup(ModelSpec model, std::vector<RunConfig> configs, RunGroupOptions options = {});
    ~RunGroup();
    RunGroup(const RunGroup&) = delete;
    RunGroup& operator=(const RunGroup&) = delete;

    // The whole job, once: opens the device and checks every run's config and policy on
    // it, loads the data, builds the graph (on_prepared), uploads the data, sets up each
    // run (on_run_started for all), trains them in lockstep, ends each (on_run_finished or
    // on_run_failed), then profiles each (options.profile_steps). Stop is honoured before
    // and between the setup phases, between two runs' setups, between steps (and inside an
    // evaluation pass) and between two runs' profiling passes; runs stopped in setup end
    // stopped with nothing done. Failures are reported per run (see above) and returned,
    // not thrown; run() throws only when the group was set up before (one group, one job).
    GroupOutcome run(MetricsSink& sink, RunGroupObserver& observer, std::stop_token stop = {});

    // Max batch: opens the device, loads the data, builds the graph and uploads the data
    // (phases and on_prepared announced), for trials to run on. Throws what fails (a
    // DeviceError from opening the device, InputError/DataError from the data or the
    // model); false when stop came first. Call instead of run(), once.
    bool prepare(RunGroupObserver& observer, std::stop_token stop = {});
    // Throws InputError when run's config is invalid, DeviceError when the open device
    // cannot run its policy.
    void check_run(int run) const;
    // After prepare(): one trial (run_batch_trial) of run's config at `batch`.
    BatchTrial try_batch(int run, int batch, const MaxBatchOptions& options);
    // After prepare(): the largest batch run's config trains at (find_max_batch), each
    // trial announced (on_trial_started, on_trial); stop ends it between trials. Errors
    // that are not "does not fit" (a policy the device lacks) propagate.
    MaxBatchSearch search_max_batch(int run, const MaxBatchOptions& options,
                                    RunGroupObserver& observer, std::stop_token stop = {});

    int size() const { return int(m_configs.size()); }
    const RunConfig& config(int run) const;
    // After prepare(), or in run() from on_prepared on; throws Error before.
    const GroupFacts& facts() const;
    // Run i's TrainingRun while it exists (from on_run_started until it fails or the group
    // goes), else null: for the engine's tests, which read parameters; front ends use the
    // observer's values and RunGroupOptions::run_outputs.
    TrainingRun* training_run(int run);

private:
    struct SetupState; // where run() is in setting up, for the failure message
    void set_up_shared(RunGroupObserver& observer, const std::stop_token& stop, bool check_runs,
                       SetupState& state);
    void set_up_runs(RunGroupObserver& observer, const std::stop_token& stop, SetupState& state);
    void fail_setup(std::exception_ptr error, const SetupState& state, MetricsSink& sink,
                    RunGroupObserver& observer, GroupOutcome& out);
    void train_in_lockstep(MetricsSink& sink, RunGroupObserver& observer,
                           const std::stop_token& stop, GroupOutcome& out);
    void fail_run(int run, std::exception_ptr error, MetricsSink& sink, RunGroupObserver& observer,
                  GroupOutcome& out);
    void profile_runs(RunGroupObserver& observer, const std::stop_token& stop, GroupOutcome& out);
    void save_weights(GroupOutcome& out);
    // Run i's checkpoint (RunOutputs), once per step, after an epoch's end or the run's
    // end (at_end). A failure is reported; a named file's during training is thrown.
    void save_checkpoint(int run, bool at_end, MetricsSink& sink, GroupOutcome& out);
    void sample_runs(RunGroupObserver& observer, GroupOutcome& out);
    void require_prepared(const char* what) const;
    void require_fresh(const char* what) const;

    ModelSpec m_model;
    std::vector<RunConfig> m_configs;
    RunGroupOptions m_options;
    // In the order of the design note above: destroyed runs first, backend last.
    std::unique_ptr<Backend> m_backend;
    std::optional<Dataset> m_data;
    std::optional<GroupFacts> m_facts; // holds the graph
    std::unique_ptr<DeviceDataset> m_device_data;
    std::vector<std::unique_ptr<TrainingRun>> m_runs;
    // Per run with a checkpoint output: where its checkpoints go, whether it is a file the
    // user named, and the step of the last one written (-1: none yet).
    struct RunCheckpoints {
        CheckpointRotation rotation;
        bool named = false;
        std::int64_t last_step = -1;
    };
    std::vector<std::optional<RunCheckpoints>> m_checkpoints;
};

} // namespace mixlab
