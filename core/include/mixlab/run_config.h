// The run format `mixlab-run/1`: dataset, policy, loss scaling, batch, optimizer, seed.
#pragma once
#include "mixlab/policy.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace mixlab {

enum class LossScaleMode { Default, Dynamic, Static, None }; // Default: the policy decides

struct LossScaleConfig {
    LossScaleMode mode = LossScaleMode::Default;
    float init = 65536.0f;
    float growth_factor = 2.0f;
    float backoff_factor = 0.5f;
    int growth_interval = 2000;
};

enum class OptimizerType { SGD, Adam, AdamW };

// How the optimizer holds the fp32 master weights behind bf16 GEMM weights (mixed_bf16).
// FP32: a 4-byte master beside the 2-byte bf16 copy, the copy rewritten every step.
// Bf16Split: the master as two 16-bit halves, the bf16 weight the GEMMs read (rounded to
// nearest, ties away from zero) and an int16 remainder; together the exact fp32 value
// (hd_math.h's split_master), so every update is the fp32 one. 4 bytes a weight instead
// of 6, and an SGD-momentum update moves 20 bytes a weight instead of 22.
enum class MasterWeights { FP32, Bf16Split };

struct OptimizerConfig {
    OptimizerType type = OptimizerType::SGD;
    float lr = 0.01f;
    float momentum = 0.9f;     // SGD
    bool nesterov = false;     // SGD
    float weight_decay = 0.0f; // SGD/Adam: L2 added to the gradient; AdamW: decoupled
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f; // Adam/AdamW
    // Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_ after
    // GradScaler.unscale_): every unscaled gradient times min(1, clip_norm / (norm + 1e-6)),
    // norm the L2 norm over all of them, before weight decay and the update. 0: off.
    float clip_norm = 0.0f;
    MasterWeights master_weights = MasterWeights::FP32; // Bf16Split: mixed_bf16 only
};

// mixed_fp8's delayed scaling ("fp8": {"amax_history": 16, "margin": 0}): each fp8
// tensor's scale is fp8 max / (the largest amax of its last amax_history steps) / 2^margin,
// updated once a step. Other policies ignore it.
struct Fp8Config {
    int amax_history = 16; // 1 .. k_max_fp8_history steps
    int margin = 0;        // -k_max_fp8_margin .. k_max_fp8_margin; > 0 leaves headroom
    // The forward GEMM with Hopper's fast accumulation (GemmCall::fp8_fast_accum); the
    // backward GEMMs never take it.
    bool fast_forward = true;
    bool operator==(const Fp8Config&) const = default;
};
inline constexpr int k_max_fp8_history = 1024;
inline constexpr int k_max_fp8_margin = 8;

enum class DeviceChoice { Auto, CPU, CUDA };

struct DatasetOptions {
    std::string name = ""; // "fashion-mnist", "synthetic", or a folder; empty: default
    bool cifar100_coarse = false;
    std::int64_t synthetic_train = 10000, synthetic_test = 2000; // synthetic_test_size(train)
    // Training-time augmentation on the device ("augment": {"crop_padding": 4,
    // "horizontal_flip": true}); evaluation never augments. crop_padding 0: no crop.
    int crop_padding = 0;
    bool horizontal_flip = false;
    // synthetic-text (language models): training tokens (valid and test a tenth each) and
    // the source's vocabulary; text_corpus.h's SyntheticTextOptions.
    std::int64_t synthetic_text_tokens = 1'000'000;
    int synthetic_text_vocab = 10'000;
};

// How the learning rate changes between epochs. Plateau is the word-language-model
// example's: after an epoch whose validation loss is no better than the best so far, the
// rate is multiplied by `factor` (there 1/4). Without a validation split it never fires.
enum class LrSchedule { Constant, Plateau };
struct LrScheduleConfig {
    LrSchedule type = LrSchedule::Constant;
    float factor = 0.25f;
};

struct RunConfig {
    DatasetOptions dataset;
    Policy policy = Policy::FP32;
    LossScaleConfig loss_scale;
    int batch_size = 256;
    int epochs = 1;
    std::int64_t steps = 0; // > 0: stop after this many steps instead of epochs
    OptimizerConfig optimizer;
    LrScheduleConfig lr_schedule;
    Fp8Config fp8; // mixed_fp8 only
    // Language models: the truncated-BPTT window, in time steps (tokens per column per
    // step); a step trains batch_size x bptt tokens. Classifiers ignore it.
    int bptt = 35;
    std::uint64_t seed = 42;
    DeviceChoice device = DeviceChoice::Auto;
    // Record the training step once as a CUDA graph and replay it (CUDA backend); off
    // runs it kernel by kernel, for comparing what the launches cost.
    bool cuda_graph = true;
    // A non-finite training loss ends the run (with the step named) instead of a warning
    // and going on.
    bool stop_on_non_finite_loss = false;
    // Every this many steps the run samples its numerics (mixlab/numerics.h: per layer,
    // histograms of weights, activations, gradients and updates); 0: never. Sampled steps
    // run a recording of their own, the others are untouched.
    int numerics_every = 0;
};

inline constexpr std::string_view k_run_format = "mixlab-run/1";

RunConfig parse_run_config(std::string_view json_text); // InputError naming the field
RunConfig load_run_config(const std::string& path);
std::string run_config_to_json(const RunConfig& config);
class JsonReader;
// A run config held in another document (a log's, an experiment's): read as
// parse_run_config reads a file, the message placed where the reader is.
RunConfig run_config_from_json(const JsonReader& json);
// Throws InputError for values no run can use (batch 0, lr NaN, epochs 0 ...).
void validate_run_config(const RunConfig& config);

// The synthetic test split that goes with `synthetic_train` training samples, wherever a
// front end sizes the set (mixlab-cli --synthetic-size, the app's --synthetic-size): a
// fifth, rounded up.
std::int64_t synthetic_test_size(std::int64_t synthetic_train);

// `base` with the word-language-model example's training settings (main.py's defaults
// and Apex's run): batch 20 columns, bptt 35, SGD at lr 20 without momentum, gradient
// clipping at 0.25, the learning rate divided by 4 when validation stops improving. The
// app and the CLI start a language model from these.
RunConfig with_language_model_defaults(RunConfig base);

// One run of a comparison: `base` under `policy`. Split masters stay where the policy has
// masters to split (mixed_bf16) and become fp32 masters elsewhere, so one comparison can
// set them for its bf16 run without every other run refusing them.
RunConfig with_policy(RunConfig base, Policy policy);

// The loss-scaling mode a run really uses: Default resolved by the policy.
LossScaleMode effective_loss_scale_mode(const RunConfig& config);

std::string_view loss_scale_mode_name(LossScaleMode m);
std::string_view optimizer_name(OptimizerType t);
std::string_view master_weights_name(MasterWeights m); // "fp32", "bf16_split"
// Whether `policy` has masters the split can hold: fp32 masters behind bf16 weights.
bool master_weights_apply(MasterWeights m, Policy policy);
std::string_view lr_schedule_name(LrSchedule s); // "constant", "plateau"
std::string_view device_choice_name(DeviceChoice d);
DeviceChoice parse_device_choice(std::string_view s);

} // namespace mixlab
