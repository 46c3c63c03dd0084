// Training runs: one run trains one model under one config on one backend; RunGroup
// (run_group.h) sets up a group of them and steps them in lockstep (compare). Metrics
// leave through a MetricsSink.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/numerics.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace mixlab {

struct StepMetrics {
    std::int64_t step = 0;    // 1-based, counted over the whole run
    int epoch = 0;            // 1-based
    float loss = 0;           // mean over the batch
    float accuracy = 0;       // of the batch
    float step_ms = 0;        // device time of this step (events around it)
    double wall_ms = 0;       // host wall time since the run started
    double samples_per_s = 0; // for a language model: tokens (batch x bptt per step)
    float loss_scale = 1;     // the scale this step used
    float next_loss_scale = 1;
    bool overflow = false; // gradients held inf/NaN
    bool skipped = false;  // the optimizer skipped the update
    // mixed_fp8: the range of log2(scale) across the fp8 tensors after this step's update
    // (the scale chart of an fp8 run); unset for every other run.
    std::optional<float> fp8_log2_scale_min, fp8_log2_scale_max;
};

// Losses are per sample, or for a language model per token (natural log: its perplexity
// is exp(loss)); accuracies are of the class, or of the next word.
struct EpochMetrics {
    int epoch = 0;
    float train_loss = 0, train_accuracy = 0;
    float test_loss = 0, test_accuracy = 0;
    double seconds = 0;
    std::int64_t skipped_steps = 0; // in this epoch
    // Language models: the validation split, evaluated like the test split each epoch;
    // the learning rate this epoch trained at (the plateau schedule lowers it).
    bool language_model = false;
    std::optional<float> valid_loss, valid_accuracy;
    float lr = 0;
};

// InputError, naming both, when a language model (token input) meets images or an image
// model meets a text corpus.
void require_matching_data(bool language_model, const std::string& model, const Dataset& data);

// exp(loss), the perplexity of a per-token natural-log cross-entropy.
double perplexity(double loss);

// Which operand of a dense layer's fp8 GEMMs a tensor is: its input, its weights, or the
// gradient of its output.
enum class Fp8Operand { X, W, Dy };

// mixed_fp8's amax jump as data, carried by the trainer's "fp8 amax jump" warning beside
// its message (train/fp8_scales.h), so that explain reads facts rather than a sentence
// whose layer path may hold any words.
struct Fp8AmaxJump {
    // The trainer's last report, after which it reports no more jumps: it names no tensor,
    // and the fields below keep their defaults.
    bool reports_stopped = false;
    std::string layer; // the tensor's layer, by graph path ("layer 3")
    Fp8Operand operand = Fp8Operand::X;
    float amax = 0;        // the tensor's amax this step
    float history_max = 0; // the largest of its history the step before (its scale's source)
    int more_tensors = 0;  // other tensors that jumped at the same step (one report a step)
    bool operator==(const Fp8AmaxJump&) const = default;
};

struct RunEvent {
    enum class Kind { Info, Warning, ScaleChange, SkippedStep, Error };
    Kind kind = Kind::Info;
    std::int64_t step = 0;
    std::string message;
    // Set on the fp8 amax jump warnings of runs that wrote it; events of older logs and
    // app files have the message only.
    std::optional<Fp8AmaxJump> fp8_amax_jump = std::nullopt;
};

std::string_view run_event_kind_name(RunEvent::Kind k);
// "x", "w", "dy": the last word of the tensor's name ("layer 3 dy").
std::string_view fp8_operand_name(Fp8Operand o);

class MetricsSink {
public:
    virtual ~MetricsSink() = default;
    // `run` is the run's index in a compare group (0 for a single run).
    virtual void on_step(int run, const StepMetrics& m) = 0;
    virtual void on_epoch(int run, const EpochMetrics& m) = 0;
    virtual void on_event(int run, const RunEvent& e) = 0;
    // A numerics sample (RunConfig::numerics_every), reported with its step's metrics, a
    // few steps behind like them. Sinks that keep no numerics ignore it.
    virtual void on_numerics(int run, const NumericsSample& sample)
    {
        (void)run;
        (void)sample;
    }
};

// A dataset uploaded once to a backend as uint8; shared by the runs of a compare group.
// A text corpus (language models) is uploaded as its three token streams (int32); each
// run reads them in columns of its own batch (gather_tokens).
struct DeviceDataset {
    DeviceDataset(const Dataset& data, Backend& backend);
    const Dataset& host;
    Buffer train_images, train_labels, test_images, test_labels;
    Buffer test_order; // identity order (int32): evaluation reads the test split in turn
    Normalization norm;
    Buffer train_tokens, valid_tokens, test_tokens;
};

struct RunSummary {
    std::int64_t steps = 0;
    std::int64_t skipped_steps = 0;
    int epochs_done = 0;
    double mean_step_ms = 0;   // device time, warm-up steps excluded
    double median_step_ms = 0; // the headline step time (step_time.h)
    float final_train_loss = 0;
    // At the last evaluation of the test split; none when the run never evaluated (stopped
    // in its first epoch, or a dataset without a test split).
    std::optional<float> final_test_loss, final_test_accuracy;
    // Language models: the last validation loss, and the learning rate at the end.
    bool language_model = false;
    std::optional<float> final_valid_loss;
    float final_lr = 0;
    float final_loss_scale = 1;
    double wall_seconds = 0;
    bool stopped = false; // by the stop token, or halted
    std::string halted;   // why the run ended itself early (a non-finite loss); empty
};

class Network;

class TrainingRun {
public:
    // Builds parameters (same initial weights for every backend and policy given the
    // seed), uploads nothing but what the run owns. Throws DeviceError when the policy
    // is not supported by the backend's device.
    TrainingRun(const Graph& graph, const RunConfig& config, DeviceDataset& data, Backend& backend,
                int run_index = 0);
    ~TrainingRun();
    TrainingRun(const TrainingRun&) = delete;
    TrainingRun& operator=(const TrainingRun&) = delete;

    // Enqueues one training step; reports metrics that have come back (a few steps
    // behind) and, when an epoch ends, drains and evaluates on the test split.
    void step(MetricsSink& sink);
    bool finished() const;
    // Drains what is in flight and reports it; call once at the end (or after stop).
    RunSummary finish(MetricsSink& sink, bool stopped);

    // An evaluation pass (the whole test split, after each epoch) checks this between
    // batches and ends early, reporting no epoch metrics, once stop is requested: a
    // large test split on the CPU would otherwise keep a Stop waiting for seconds.
    // train() and RunGroup set it from their own token.
    void set_stop_token(std::stop_token stop);

    std::int64_t total_steps() const; // planned
    std::int64_t steps_done() const;
    std::int64_t steps_per_epoch() const;
    // Device memory this run allocated (parameters, activations, gradients, state).
    std::int64_t device_bytes() const;
    const RunConfig& config() const { return m_config; }
    const Graph& graph() const { return m_graph; }

    // The profiling pass: `steps` extra training steps with events between phases and
    // top-level layers (run as the timed steps ran: replayed or op by op), then `steps`
    // more unmarked, back to back, timed on the host clock for the wall time per step.
    // Call after the timed steps (those stay unprofiled); the extra steps train the
    // model and are reported to the sink like any other.
    StepProfile profile(MetricsSink& sink, int steps = 10);

    // Language models, after training: `words` words generated from the trained model as
    // the word-language-model example's generate.py does (from a random first word, each
    // next word drawn from softmax(logits / temperature)), deterministic by seed; <eos>
    // becomes a line break. Throws InputError for a model that is not a language model
    // or a temperature that is not positive.
    std::string sample_text(int words, float temperature, std::uint64_t seed);

    // The model's fp32 masters (and batch norm's running statistics) as a safetensors
    // file named for PyTorch's nn.Sequential (docs/WEIGHTS.md), written atomically; `spec`
    // is the model as the run was given it, kept in the file's metadata with the policy
    // and the steps done. load_weights takes such a file's values for this model, before
    // training: InputError naming what does not fit, and nothing loaded.
    void save_weights(const std::string& path, const ModelSpec& spec);
    void load_weights(const std::string& path);
    // The test split as evaluation sees it, after training: a safetensors file holding
    // "images" (U8, N x H x W x C, as the dataset holds them), "labels" (I64) and "logits"
    // (F32, N x classes: the model's outputs before a softmax or sigmoid folded into the
    // loss), the normalisation, model, policy, step and accuracy in "__metadata__"
    // (format "mixlab-predictions/1"); written atomically. InputError for a language
    // model or a dataset without a test split.
    void save_predictions(const std::string& path, const ModelSpec& spec);

    // A checkpoint (mixlab/checkpoint.h) of the run as it stands, written atomically: call
    // when every launched step has been reported (after an epoch's last step, or after
    // finish()). `spec` as for save_weights. Reads the device's state back (synchronizes).
    void save_checkpoint(const std::string& path, const ModelSpec& spec);
    // Before the first step: takes the whole state of the run that wrote `path` and goes
    // on from its step, as that run would have. The run must have been built from the
    // checkpoint's model and config (the epochs or steps may be more). InputError naming
    // the tensor, the metadata key or the byte offset that does not fit; nothing is
    // loaded unless everything fits.
    void resume(const std::string& path);

    // Test helpers: current fp32 master parameters in graph order (synchronizes).
    std::vector<float> read_parameters();
    // What runs, one line per layer (dtypes, GEMM math, master weights).
    std::vector<std::string> describe() const;

private:
    // step() without the out-of-memory context; `evaluating` is set once the epoch's
    // evaluation begins, so the message can say which of the two ran out.
    void step_unchecked(MetricsSink& sink, bool& evaluating);
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    Graph m_graph;
    RunConfig m_config;
};

// Runs one run to the end or until stop is requested; an exception from a step leaves it.
// Front ends train through RunGroup, which also sets the run up and ends a failing run
// alone; this is the bare loop for a run built by hand (tests, the engine's own checks).
RunSummary train(TrainingRun& run, MetricsSink& sink, std::stop_token stop = {});

// Number of warm-up steps left out of mean step times.
inline constexpr int k_warmup_steps = 10;

} // namespace mixlab
