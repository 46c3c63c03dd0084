// TrainingRun's state, shared by trainer.cpp (the steps, metrics and evaluation) and
// trainer_profile.cpp (the profiling pass). Private to the engine.
#pragma once
#include "mixlab/trainer.h"
#include "mixlab/step_profile.h"
#include "model/network.h"
#include "train/fp8_scales.h"
#include "train/numerics_sampler.h"

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <vector>

namespace mixlab {

// Ring of per-step records: long enough that the host reads a slot well after the
// device wrote it, short enough that the numbers arrive while they still matter.
inline constexpr int k_ring = 32;
inline constexpr int k_lag = 4;

using Clock = std::chrono::steady_clock;

// Events at the phase boundaries of a profiled step: at[0] before the input, at[p + 1]
// after phase p (at[k_step_phases] ends the step).
struct PhaseMarks {
    std::array<std::unique_ptr<Event>, k_step_phases + 1> at;
    Network::LayerMarks layers;
    bool phases_on = true, layers_on = true; // which of the two a profiled step records
};

// The training split's order in epoch `epoch` (1-based): a permutation of 0..n-1 drawn
// from the seed and the epoch alone, so a resumed run draws it again.
std::vector<std::int32_t> epoch_order(std::int64_t n, std::uint64_t seed, int epoch);

struct TrainingRun::Impl {
    Backend& backend;
    DeviceDataset& data;
    int run_index;
    int batch;
    ScalerParams scaling;
    std::unique_ptr<Network> net;
    Buffer scaler;                    // F32 x k_scaler_fields
    Buffer record;                    // F32 x k_record_fields: the step being run
    Buffer step_counter;              // I32 x 2: the step's index as the device reads it
    std::unique_ptr<StepGraph> graph; // the recorded step, once there is one
    bool graph_wanted = true;         // config and backend allow recording
    int recordings = 0;
    Buffer eval_record; // F32 x k_record_fields
    Buffer order;       // I32 x n_train, this epoch's permutation
    float* host_records = nullptr;
    std::unique_ptr<Fp8ScaleWatch> fp8; // mixed_fp8 with fp8 layers: scales read back
    std::vector<std::unique_ptr<Event>> start_events, end_events;
    std::vector<double> launch_wall_ms;

    std::int64_t steps_per_epoch = 0, total_steps = 0;
    std::int64_t launched = 0; // steps enqueued
    // The step this run started from: 0, or a checkpoint's (TrainingRun::resume), and the
    // file it came from.
    std::int64_t first_step = 0;
    std::string resumed_from;
    std::int64_t reported = 0; // steps whose records were read
    int epoch = 0;             // 1-based epoch of the last launched step
    int last_evaluated_epoch = 0;
    std::int64_t last_evaluated_step = -1;
    Clock::time_point started = Clock::now();
    Clock::time_point epoch_started = Clock::now();

    // Running sums for the epoch being reported.
    double epoch_loss = 0, epoch_correct = 0;
    std::int64_t epoch_steps = 0, epoch_skipped = 0;
    std::vector<float> step_ms; // every reported step's device time
    std::int64_t skipped_total = 0;
    float last_scale = 0;
    float last_train_loss = 0;
    std::optional<float> last_test_loss,
        last_test_accuracy; // none until a test split was evaluated
    bool warned_nan = false;
    bool stop_on_non_finite = false; // RunConfig::stop_on_non_finite_loss
    std::string halted;              // set when the run ends itself (RunSummary::halted)
    OutputHead graph_head = OutputHead::Logits;
    int classes = 0;
    std::int64_t profile_step = -1; // MIXLAB_PROFILE_STEP: the 0-based step a profiler sees
    // The profiling pass (trainer_profile.cpp): events between phases and layers, and
    // the step recorded with them (the timed steps' graph has none).
    PhaseMarks* marks = nullptr;
    std::unique_ptr<StepGraph> profile_graph;
    // Numerics (RunConfig::numerics_every): the sampler, the sampled step's own recording,
    // whether the step being enqueued samples, and which ring slots hold a sample.
    std::unique_ptr<NumericsSampler> numerics;
    std::unique_ptr<StepGraph> numerics_graph;
    bool sampling = false;
    std::array<bool, k_ring> sampled{};
    double eval_wall_ms = 0; // host time spent evaluating, in total
    std::stop_token stop;    // ends an evaluation pass early (set_stop_token)
    ImageShape image;        // one sample's (H, W, C)
    Augmentation augment;    // training batches only; step filled in per step

    // Language models (graph input is a token sequence): a step reads a window of bptt
    // rows of the training stream laid out in `batch` columns of train_column rows; the
    // loss is over batch x bptt tokens.
    bool lm = false;
    int bptt = 1;
    std::int64_t train_column = 0;
    int rows_per_step = 0; // batch, or batch x bptt tokens for a language model
    // The optimizer as this epoch runs it: the config's, with the learning rate the
    // plateau schedule left (a change records the step again: the rate is a launch value).
    OptimizerConfig opt;
    LrScheduleConfig schedule;
    std::optional<float> best_valid_loss, last_valid_loss;

    void enqueue_step(const RunConfig& config, OutputHead head, int classes);
    bool record_step(MetricsSink& sink, const RunConfig& config, OutputHead head, int classes,
                     std::unique_ptr<StepGraph>& into);
    void run_step(MetricsSink& sink, const RunConfig& config, OutputHead head, int classes);
    void report(MetricsSink& sink, std::int64_t step_index);
    void drain(MetricsSink& sink, std::int64_t up_to);
    void evaluate(MetricsSink& sink, int epoch_number);
    // The test split through the network in evaluation mode, batch by batch: the gather
    // without augmentation, the forward, then each(at, b) with batch [at, at + b)'s logits
    // in net->logits(). What evaluate and save_predictions both read; false when `until`
    // ended the pass early.
    bool forward_test_split(const std::stop_token& until,
                            const std::function<void(std::int64_t at, int b)>& each);
    // A language model's loss and next-word accuracy over one split's full windows (the
    // state reset first), in the record; false when stopped.
    bool evaluate_text(const Buffer& tokens, std::int64_t split_tokens, float& loss,
                       float& accuracy);
    // The plateau schedule after an epoch's validation loss.
    void schedule_lr(MetricsSink& sink, int epoch_number);

    Impl(Backend& b, DeviceDataset& d, int index) : backend(b), data(d), run_index(index) {}
    ~Impl()
    {
        if (host_records) backend.host_free(host_records);
    }
};

} // namespace mixlab
