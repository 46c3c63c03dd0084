// The options train, compare, explain and maxbatch share, the checks made before a run
// starts, and a group's setup failure turned into the CLI's errors.
#include "train_options.h"

#include "device_notice.h"

#include "mixlab/error.h"
#include "mixlab/run_log.h"
#include "mixlab/text_corpus.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>

namespace mixlab::cli {
namespace {

// Beyond these no run on one GPU makes sense; the bounds catch typos (an extra zero
// or three) before a dataset is loaded.
constexpr std::int64_t k_max_batch = 1 << 20;
constexpr std::int64_t k_max_epochs = 1000000;
constexpr std::int64_t k_max_steps = std::int64_t(1) << 40;
constexpr std::int64_t k_max_synthetic = 1000000; // 3 GB of 32x32x3 images

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int)
{
    g_interrupted.store(true);
    // A second Ctrl-C ends the program the usual way.
    std::signal(SIGINT, SIG_DFL);
}

OptimizerType parse_optimizer(const std::string& s)
{
    if (s == "sgd") return OptimizerType::SGD;
    if (s == "adam") return OptimizerType::Adam;
    return OptimizerType::AdamW;
}

LossScaleMode parse_loss_scale(const std::string& s)
{
    if (s == "dynamic") return LossScaleMode::Dynamic;
    if (s == "static") return LossScaleMode::Static;
    if (s == "none") return LossScaleMode::None;
    return LossScaleMode::Default;
}

bool looks_like_path(const std::string& name)
{
    return name.find('/') != std::string::npos || name.rfind(".", 0) == 0 ||
           name.rfind("~", 0) == 0;
}

} // namespace

void add_train_options(ArgParser& p, bool compare)
{
    p.add_option("--model", "FILE", "model spec (mixlab-model/1 JSON); required");
    p.add_option("--run", "FILE", "run config (mixlab-run/1 JSON); options below override it");
    p.add_option("--dataset", "NAME|PATH",
                 "fashion-mnist, synthetic, synthetic-text, or a folder of IDX / CIFAR binary "
                 "files or of train.txt/valid.txt/test.txt (a word corpus) (default: "
                 "fashion-mnist when installed, else synthetic; synthetic-text for a language "
                 "model)");
    if (compare) {
        std::string names;
        for (Policy pol : k_all_policies) (names += names.empty() ? "" : ",") += policy_name(pol);
        p.add_option("--policies", "P1,P2,...",
                     "policies to run in lockstep, the first is the baseline (" + names + ")");
    } else {
        std::string names;
        for (Policy pol : k_all_policies) (names += names.empty() ? "" : "|") += policy_name(pol);
        p.add_option("--policy", "P", "precision policy: " + names + " (default fp32)");
    }
    p.add_option("--cifar100-labels", "fine|coarse",
                 "CIFAR-100 labels: 100 fine classes (default) or 20 coarse superclasses");
    p.add_option("--augment", "crop,flip|crop|flip|none",
                 "training augmentation on the device: random crop after 4-pixel zero "
                 "padding, horizontal flip (default none)");
    p.add_option("--batch", "N", "batch size (default 256; 20 columns for a language model)");
    p.add_option("--bptt", "N",
                 "language models: tokens per column per step, the truncated-BPTT "
                 "window (default 35)");
    p.add_option("--epochs", "N", "epochs to train (default 1)");
    p.add_option("--steps", "N", "stop after N steps instead of whole epochs");
    p.add_option("--lr", "X", "learning rate (default 0.01; 20 for a language model)");
    p.add_option("--lr-schedule", "constant|plateau",
                 "plateau: divide the rate by 4 after an epoch whose validation loss did not "
                 "improve (default constant; plateau for a language model)");
    p.add_option("--optimizer", "sgd|adam|adamw", "optimizer (default sgd, momentum 0.9)");
    p.add_option("--master-weights", "fp32|bf16_split",
                 "mixed_bf16's masters: fp32 beside a bf16 copy (default), or split into the "
                 "bf16 weight and an int16 remainder, exactly the same fp32 values in 4 bytes "
                 "a weight instead of 6");
    p.add_option("--clip", "X",
                 "clip gradients to global L2 norm X after unscaling, as PyTorch's "
                 "clip_grad_norm_ (default 0: off)");
    p.add_option("--loss-scale", "dynamic|static|none|default",
                 "loss scaling (default: what the policy uses)");
    p.add_option("--loss-scale-init", "X", "initial (or static) loss scale (default 65536)");
    p.add_option("--seed", "N", "seed for weights, data order and synthetic data (default 42)");
    p.add_option("--device", "auto|cpu|cuda", "backend (default auto: cuda when present)");
    p.add_flag("--stop-on-nan",
               "end the run at the first NaN or infinite training loss (default: warn, go on)");
    p.add_flag("--no-cuda-graph",
               "run each step kernel by kernel instead of replaying it as one CUDA graph");
    p.add_option("--synthetic-size", "N",
                 "training samples of the synthetic dataset (test split: N/5, rounded up), or "
                 "training tokens of synthetic-text (valid and test: N/10 each)");
    p.add_option("--vocab", "N", "synthetic-text: vocabulary size (default 10000)");
    p.add_option("--numerics-every", "N",
                 "every N steps, record per layer where weights, activations, gradients and "
                 "updates sit on the number line (histograms of log2|x|) into the JSON log; "
                 "read them with 'mixlab-cli numerics' (default 0: off)");
    p.add_option("--fp8-history", "N",
                 "mixed_fp8: steps of amax history each fp8 tensor's scale is taken from, "
                 "1 to 1024 (default 16)");
    p.add_option("--fp8-margin", "N",
                 "mixed_fp8: powers of two of headroom below the fp8 maximum, -8 to 8 "
                 "(default 0; a negative one as --fp8-margin=-1)");
    p.add_option("--fp8-fast-forward", "on|off",
                 "mixed_fp8: the forward GEMM with Hopper's fast accumulation, as Transformer "
                 "Engine runs it; the gradients' GEMMs never (default on)");
    if (!compare) {
        p.add_option("--load-weights", "FILE",
                     "start from the weights in FILE (a file --save-weights wrote for this "
                     "model) instead of the seed's initial ones");
        p.add_option("--save-weights", "FILE",
                     "after training, write the model's weights here in the safetensors "
                     "format: every fp32 master weight and bias and batch norm's running "
                     "statistics, named as PyTorch's equivalent nn.Sequential names them "
                     "(docs/WEIGHTS.md), with the model spec, policy and step count in its "
                     "metadata");
        p.add_option("--save-predictions", "FILE",
                     "after training, write the test split's images, labels and the model's "
                     "logits for each (safetensors, docs/WEIGHTS.md): what "
                     "tools/load_weights_torch.py --predictions compares PyTorch against");
        p.add_option("--save-checkpoint", "FILE",
                     "write a checkpoint here at every epoch's end and when the run ends "
                     "(also on Ctrl-C): the weights as --save-weights names them, the "
                     "optimizer state, the loss scaler, fp8 scales and the data position, "
                     "from which --resume continues the run exactly (docs/WEIGHTS.md)");
        p.add_option("--resume", "FILE",
                     "continue the run a checkpoint was written by, with its model and "
                     "settings; --epochs/--steps may extend it; options that would change the "
                     "run (model, policy, batch, optimizer, seed ...) are refused");
    }
    p.add_option("--log-json", "FILE", "write the run log (mixlab-log/1 JSON) here");
    p.add_option("--log-csv", "FILE", "write one CSV row per step here");
    p.add_option("--progress-every", "N", "a progress line every N steps (default: ~20 per run)");
    p.add_option("--sample-words", "N",
                 "language models: after training, print N words generated by the model "
                 "(as the example's generate.py)");
    p.add_option("--temperature", "X", "temperature of --sample-words (default 1.0)");
}

TrainInputs read_train_inputs(const ArgParser& p, bool compare)
{
    if (!compare && p.has("--resume")) return read_resume_inputs(p);
    TrainInputs in;
    RunConfig& c = in.config;
    if (auto run = p.value("--run")) c = load_run_config(*run);

    const auto model = p.value("--model");
    if (!model) throw InputError("--model FILE is required (a mixlab-model/1 JSON file)");
    in.model_path = *model;
    in.spec = load_model_spec(*model);
    const bool language_model = is_language_model(in.spec);
    // A language model without a run file trains with the word-language-model example's
    // settings (batch 20, SGD lr 20 without momentum, clipping 0.25, the plateau schedule);
    // the options below override them like any default.
    if (language_model && !p.has("--run")) c = with_language_model_defaults(c);

    if (auto v = p.value("--dataset")) c.dataset.name = *v;
    // compare declares --policies instead; its runs set their policy one by one.
    if (!compare && p.has("--policy")) c.policy = parse_policy(*p.value("--policy"));
    if (auto v = p.integer("--batch", 1, k_max_batch)) c.batch_size = int(*v);
    if (p.has("--epochs") && p.has("--steps"))
        throw InputError("give --epochs or --steps, not both");
    if (auto v = p.integer("--epochs", 1, k_max_epochs)) {
        c.epochs = int(*v);
        c.steps = 0; // a step count from --run would otherwise cut the epochs short
    }
    if (auto v = p.integer("--steps", 1, k_max_steps)) c.steps = *v;
    if (auto v = p.real("--lr", 0.0, 1e6)) {
        if (*v <= 0) throw InputError("--lr must be greater than 0, got " + *p.value("--lr"));
        c.optimizer.lr = float(*v);
    }
    if (auto v = p.choice("--optimizer", {"sgd", "adam", "adamw"}))
        c.optimizer.type = parse_optimizer(*v);
    // Same bound as --lr: only a typo would ask for a norm beyond 1e6 (0 turns it off).
    if (auto v = p.real("--clip", 0.0, 1e6)) c.optimizer.clip_norm = float(*v);
    if (auto v = p.choice("--master-weights", {"fp32", "bf16_split"}))
        c.optimizer.master_weights =
            *v == "bf16_split" ? MasterWeights::Bf16Split : MasterWeights::FP32;
    if (auto v = p.choice("--loss-scale", {"dynamic", "static", "none", "default"}))
        c.loss_scale.mode = parse_loss_scale(*v);
    // 2^-24 .. 2^32: below, fp16 gradients vanish; above, even fp32 overflows on
    // ordinary losses.
    if (auto v = p.real("--loss-scale-init", std::ldexp(1.0, -24), std::ldexp(1.0, 32)))
        c.loss_scale.init = float(*v);
    if (auto v = p.unsigned_integer("--seed")) c.seed = *v;
    if (auto v = p.value("--device")) c.device = parse_device_choice(*v);
    if (auto v = p.integer("--bptt", 1, 4096)) c.bptt = int(*v);
    if (auto v = p.choice("--lr-schedule", {"constant", "plateau"}))
        c.lr_schedule.type = *v == "plateau" ? LrSchedule::Plateau : LrSchedule::Constant;
    if (p.flag("--no-cuda-graph")) c.cuda_graph = false;
    if (p.flag("--stop-on-nan")) c.stop_on_non_finite_loss = true;
    if (auto v = p.integer("--numerics-every", 0, 1 << 30)) c.numerics_every = int(*v);
    if (auto v = p.integer("--fp8-history", 1, k_max_fp8_history)) c.fp8.amax_history = int(*v);
    if (auto v = p.integer("--fp8-margin", -k_max_fp8_margin, k_max_fp8_margin))
        c.fp8.margin = int(*v);
    if (auto v = p.choice("--fp8-fast-forward", {"on", "off"})) c.fp8.fast_forward = *v == "on";
    if (c.dataset.name.empty())
        c.dataset.name = language_model ? "synthetic-text" : default_dataset_name();
    if (c.dataset.name == "synthetic-text") {
        if (auto v = p.integer("--synthetic-size", k_min_synthetic_tokens, k_max_synthetic_tokens))
            c.dataset.synthetic_text_tokens = *v;
        if (auto v = p.integer("--vocab", k_min_synthetic_vocab, k_max_text_vocabulary))
            c.dataset.synthetic_text_vocab = int(*v);
    } else if (auto v = p.integer("--synthetic-size", 1, k_max_synthetic)) {
        if (c.dataset.name != "synthetic")
            throw InputError("--synthetic-size applies to --dataset synthetic or synthetic-text, "
                             "not to '" +
                             c.dataset.name + "'");
        c.dataset.synthetic_train = *v;
        c.dataset.synthetic_test = synthetic_test_size(*v);
    }
    if (p.has("--vocab") && c.dataset.name != "synthetic-text")
        throw InputError("--vocab applies to --dataset synthetic-text (a corpus folder's "
                         "vocabulary is the words of its train.txt), not to '" +
                         c.dataset.name + "'");
    if (auto v = p.choice("--cifar100-labels", {"fine", "coarse"}))
        c.dataset.cifar100_coarse = *v == "coarse";
    if (auto v = p.choice("--augment", {"none", "crop", "flip", "crop,flip", "flip,crop"})) {
        c.dataset.crop_padding = v->find("crop") != std::string::npos ? 4 : 0;
        c.dataset.horizontal_flip = v->find("flip") != std::string::npos;
    }
    check_train_config(in, compare);
    read_output_options(p, in, compare);
    if (looks_like_path(c.dataset.name) && !std::filesystem::is_directory(c.dataset.name)) {
        // A file given where the folder belongs exists: "does not exist" would mislead.
        std::error_code ec;
        if (std::filesystem::exists(c.dataset.name, ec))
            throw InputError(
                "--dataset: '" + c.dataset.name +
                "' is a file, not a folder; give the folder that holds the dataset files");
        throw InputError("--dataset: the folder '" + c.dataset.name + "' does not exist");
    }
    return in;
}

void read_output_options(const ArgParser& p, TrainInputs& in, bool compare)
{
    const bool language_model = is_language_model(in.spec);
    if (auto v = p.integer("--progress-every", 1, k_max_steps)) in.progress_every = *v;
    if (auto v = p.integer("--sample-words", 1, 100000)) {
        if (!language_model)
            throw InputError("--sample-words applies to language models (a model that starts "
                             "with an embedding); " +
                             in.model_path + " is not one");
        in.sample_words = int(*v);
    }
    if (auto v = p.real("--temperature", 1e-3, 100.0)) in.temperature = float(*v);
    in.log_json = p.value("--log-json");
    in.log_csv = p.value("--log-csv");
    if (in.log_json) check_output_path(*in.log_json, "--log-json");
    if (in.log_csv) check_output_path(*in.log_csv, "--log-csv");
    if (in.log_json && in.log_csv &&
        std::filesystem::absolute(*in.log_json) == std::filesystem::absolute(*in.log_csv))
        throw InputError("--log-json and --log-csv name the same file '" + *in.log_json + "'");

    if (!compare) {
        in.load_weights = p.value("--load-weights");
        in.save_weights = p.value("--save-weights");
        in.save_predictions = p.value("--save-predictions");
        in.save_checkpoint = p.value("--save-checkpoint");
        if (in.load_weights) {
            std::error_code ec;
            if (!std::filesystem::is_regular_file(*in.load_weights, ec))
                throw InputError("--load-weights: '" + *in.load_weights +
                                 "' is not a file that can be read");
        }
        if (in.save_weights) check_output_path(*in.save_weights, "--save-weights");
        if (in.save_predictions) check_output_path(*in.save_predictions, "--save-predictions");
        if (in.save_checkpoint) check_output_path(*in.save_checkpoint, "--save-checkpoint");
        // No two of the files written after training may be one file.
        const std::vector<std::pair<const std::optional<std::string>*, const char*>> outputs = {
            {&in.save_weights, "--save-weights"},
            {&in.save_predictions, "--save-predictions"},
            {&in.save_checkpoint, "--save-checkpoint"}};
        for (std::size_t i = 0; i < outputs.size(); ++i)
            for (std::size_t j = i + 1; j < outputs.size(); ++j)
                if (*outputs[i].first && *outputs[j].first &&
                    std::filesystem::absolute(**outputs[i].first) ==
                        std::filesystem::absolute(**outputs[j].first))
                    throw InputError(std::string(outputs[i].second) + " and " + outputs[j].second +
                                     " name the same file '" + **outputs[i].first + "'");
    }
}

void check_train_config(const TrainInputs& in, bool compare)
{
    const RunConfig& c = in.config;
    // compare's runs take their policies later (configs_for: split masters kept for the
    // mixed_bf16 run, fp32 masters for the others) and are checked one by one there.
    RunConfig checked = c;
    if (compare) checked.optimizer.master_weights = MasterWeights::FP32;
    validate_run_config(checked);
}

std::vector<RunConfig> configs_for(const RunConfig& base, const std::vector<Policy>& policies)
{
    std::vector<RunConfig> out;
    for (Policy pol : policies) {
        RunConfig c = with_policy(base, pol);
        validate_run_config(c);
        out.push_back(c);
    }
    return out;
}

void throw_setup_error(const std::exception_ptr& error, GroupPhase phase, int run,
                       const std::vector<RunConfig>& configs)
{
    try {
        std::rethrow_exception(error);
    } catch (const DeviceError& e) {
        // Only opening the device and checking the runs' policies on it throw DeviceError.
        if (phase != GroupPhase::OpeningDevice) throw;
        if (run < 0)
            throw InputError("--device " + std::string(device_choice_name(configs.front().device)) +
                             ": " + e.what());
        throw InputError("policy " + std::string(policy_name(configs[std::size_t(run)].policy)) +
                         ": " + e.what());
    }
}

void note_device(const RunConfig& config, const GroupFacts& facts)
{
    note_cpu_fallback(config.device, facts.device.backend);
}

InterruptStop::InterruptStop()
{
    g_interrupted.store(false);
    m_previous = std::signal(SIGINT, on_sigint);
    // The handler may only touch the atomic flag; this thread turns it into a stop request.
    m_watcher = std::jthread([this](std::stop_token st) {
        while (!st.stop_requested()) {
            if (g_interrupted.load()) {
                std::fprintf(stderr, "interrupted: stopping after the current step "
                                     "(Ctrl-C again to quit at once)\n");
                m_source.request_stop();
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
}

InterruptStop::~InterruptStop()
{
    m_watcher.request_stop();
    if (m_watcher.joinable()) m_watcher.join();
    std::signal(SIGINT, m_previous == SIG_ERR ? SIG_DFL : m_previous);
}

bool InterruptStop::interrupted() const { return m_source.stop_requested(); }

std::string format_ms(double ms)
{
    if (!(ms > 0) || !std::isfinite(ms)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", ms);
    return buf;
}

std::string format_throughput(int batch, double step_ms)
{
    if (!(step_ms > 0) || !std::isfinite(step_ms)) return "n/a";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", batch * 1000.0 / step_ms);
    return buf;
}

} // namespace mixlab::cli
