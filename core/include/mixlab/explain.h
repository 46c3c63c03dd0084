// Explain: rules that turn the facts of a compare group's runs into plain sentences
// with the runs' own numbers, each with a suggestion and, where it is a model or config
// edit, a typed fix (FixKind) the GUI can apply.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/ceilings.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/numerics.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"
#include "mixlab/step_profile.h"
#include "mixlab/trainer.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixlab {

// What one run of a group did; filled from a finished run (the CLI's recorder) or by
// hand in tests.
struct RunFacts {
    Policy policy = Policy::FP32;
    int batch = 0;
    int bptt = 0; // language models (graph.input.sequence): tokens per column per step
    Graph graph;
    DeviceInfo device;
    RunSummary summary;
    float final_train_accuracy = 0;
    // (step, scale): the scale the run started with at its first step, then one entry
    // at each step whose scale differs from the one before.
    std::vector<std::pair<std::int64_t, float>> scale_history;
    std::vector<float> train_loss;                       // per step, in step order
    LossScaleMode loss_scale_mode = LossScaleMode::None; // resolved (never Default)
    MasterWeights master_weights = MasterWeights::FP32;  // OptimizerConfig's
    std::int64_t device_bytes = 0; // what the run allocated on the device; 0: not known
    // Share of the step's wall time the GPU was busy, from a profiling pass; the
    // launch-bound rule stays silent unless this is set.
    std::optional<double> gpu_busy_fraction;
    // The profiling pass (TrainingRun::profile), when one ran: per-phase and per-layer
    // device times. The input-bound and fixed-cost rules need it.
    std::optional<StepProfile> profile;
    // Index in the group of the run to compare speed against; -1: the group's fp32 run
    // (or the first run when none is fp32).
    int baseline = -1;
    // Numerics samples (RunConfig::numerics_every), in step order; the numerics rules
    // stay silent without them. Not part of the facts' JSON form: the log holds them.
    std::vector<NumericsSample> numerics;
    // mixed_fp8's "fp8 amax jump" warnings, in step order (record_event keeps them); the
    // trainer stops after k_fp8_max_jump_events and says so in one more (its
    // Fp8AmaxJump::reports_stopped; an older log's names no tensor). Not part of the
    // facts' JSON form: the log holds every event.
    std::vector<RunEvent> fp8_amax_jumps;
    // The device's measured ceilings when known (mixlab-cli ceilings' cache), for the
    // fp8 layers' TFLOP/s against them. Not part of the facts' JSON form.
    std::optional<Ceilings> ceilings;
};

// What one reported step adds to its run's facts: its loss to train_loss, its loss scale
// to scale_history when it differs from the last one there, its accuracy as the final
// one. The CLI's recorder and the app's stored runs fill RunFacts through it alike.
void record_step(RunFacts& facts, const StepMetrics& step);
// What one reported event adds: an "fp8 amax jump" warning (one with RunEvent::fp8_amax_jump,
// or from an older log, one whose message starts "fp8 amax jump: ") to fp8_amax_jumps; the other
// events add nothing (the rules read what they need from the steps).
void record_event(RunFacts& facts, const RunEvent& event);

// Whether the run's device was a GPU. "GPU busy" and the launch-bound rule mean something
// only then: on the CPU backend device and host time are the same clock's.
inline bool ran_on_gpu(const RunFacts& f) { return f.device.backend == BackendKind::Cuda; }

// What a machine-readable fix changes. A front end that applies fixes switches over
// every kind without a default, so a new kind is a compiler warning there, not a fix
// silently left alone.
enum class FixKind {
    SetUnits,        // a layer's output width: a dense layer's units, a conv2d's filters
    SetDtypeFloat32, // a layer computes in float32 whatever the policy
    SetActivation,   // a layer's activation
    SetPolicy,       // the run's precision policy
    SetBatch,        // the run's batch size
};

// One fix: its kind and that kind's value; the other values stay at their defaults (the
// named constructors below set exactly those).
struct Fix {
    FixKind kind = FixKind::SetPolicy;
    std::string path;                         // layer fixes: the graph path ("layer 3")
    int units = 0;                            // SetUnits
    Activation activation = Activation::None; // SetActivation
    Policy policy = Policy::FP32;             // SetPolicy
    int batch = 0;                            // SetBatch
    bool operator==(const Fix&) const = default;

    static Fix set_units(std::string path, int units);
    static Fix set_dtype_float32(std::string path);
    static Fix set_activation(std::string path, Activation activation);
    static Fix set_policy(Policy policy);
    static Fix set_batch(int batch);
};

// Whether the fix edits a layer of the model (named by path) rather than the run settings.
bool is_model_fix(FixKind k);
// The string forms, for explain --json only: "set_units", "set_dtype_float32",
// "set_activation", "set_policy", "set_batch"; and the value: "1008", "softmax",
// "mixed_fp16", "256", "" for set_dtype_float32.
std::string_view fix_kind_name(FixKind k);
std::string fix_value_text(const Fix& f);

struct Explanation {
    enum class Severity { Info, Advice, Warning };
    std::string id; // the rule: "speed", "dims_multiple_of_8", ...
    Severity severity = Severity::Info;
    int run = -1;           // index of the run it is about; -1: the whole group
    std::string sentence;   // with this run's numbers
    std::string suggestion; // what to change; may be empty
    std::optional<Fix> fix; // a model or run-config edit the app can apply; none for advice
};

std::string_view severity_name(Explanation::Severity s); // "info", "advice", "warning"

// Whom the suggestions are worded for: the CLI's user edits model files and passes
// options (`"dtype": "float32"`, `--device cuda`); the app's user changes the designer's
// and the run panel's controls (Precision: keep in float32, Device: cuda). The sentences,
// ids and machine-readable fixes are the same for both.
enum class Reader { Cli, App };

// All rules over one group (one run alone is a group of one). Group-wide facts (the
// model's shapes, its output head) are said once; per-run facts once per run.
std::vector<Explanation> explain(const std::vector<RunFacts>& group, Reader reader = Reader::Cli);

class JsonReader;

// The JSON forms, as `mixlab-cli explain --json` writes them (mixlab-explain/2):
// a run's facts
//   {"policy", "batch", "loss_scaling" (resolved), "baseline", "device": {device.h's
//    form}, "summary": {metrics_json.h's form}, "final_train_accuracy",
//    "gpu_busy_fraction" (null: none), "scale_history": [{"step", "loss_scale"}],
//    "profile": {step_profile.h's form} or null}
// (the graph and the per-step losses stay out: the model and the log hold them), and an
// explanation
//   {"id", "severity", "run", "sentence", "suggestion",
//    "apply": {"kind", "path", "value"} only when it carries a fix}.
nlohmann::ordered_json run_facts_to_json(const RunFacts& facts);
RunFacts run_facts_from_json(const JsonReader& json); // InputError naming the field
nlohmann::ordered_json explanation_to_json(const Explanation& explanation);
Explanation explanation_from_json(const JsonReader& json);

inline constexpr std::string_view k_explain_format = "mixlab-explain/2";

// The document: {"format", "runs": [run facts with "speedup" against the first run
// (null when either time is unknown)], "explanations": [...]}.
std::string explain_to_json(const std::vector<RunFacts>& group,
                            const std::vector<Explanation>& explanations);

struct ExplainDocument {
    std::vector<RunFacts> runs;
    std::vector<Explanation> explanations;
};
// Reads mixlab-explain/2 and /1. Version 1 kept a run's summary numbers flat in the run,
// its device as a name and "backend", and the profiles apart in "phase_breakdown"; what
// it did not write (epochs, wall time, the device's capabilities, the scale history)
// stays at its default. InputError for anything else.
ExplainDocument parse_explain_json(std::string_view json_text);

// Thresholds the rules use, named so tests and the help text can cite them.
namespace explain_limits {
inline constexpr int k_tensor_core_multiple = 8;
inline constexpr double k_padding_pays_flops_share = 0.05; // below: padding would not pay
inline constexpr double k_tf32_close_ratio = 1.3;          // tf32 within this of mixed
inline constexpr double k_scale_collapse_factor = 256.0;   // 2^8
inline constexpr double k_skipped_share = 0.01;
inline constexpr double k_stall_ratio = 0.98;       // last-10% loss / first-10% loss
inline constexpr double k_min_flops_per_step = 1e9; // batch x forward FLOPs
inline constexpr double k_min_step_ms = 0.5;
inline constexpr double k_min_gpu_busy = 0.6;
inline constexpr double k_input_share = 0.25; // input phase above: it dominates
// Fixed costs: phases precision does not shrink (input, loss-scale check, optimizer)
// taking at least this share of a mixed run's step, while its layers got faster.
inline constexpr double k_fixed_share = 0.3;
inline constexpr double k_layers_faster = 1.2;
// An LSTM time step's recurrent GEMM below this many FLOPs (2 x batch x 4 hidden x hidden)
// is bound by latency on a modern GPU: 200 MFLOP is about 0.4 us of H200 fp16 tensor-core
// work against several microseconds of per-step overhead.
inline constexpr double k_min_recurrent_flops = 2e8;
// Numerics: a share of gradients fp16 would flush to zero at scale 1 from which loss
// scaling is needed (0.1%: ~one gradient element in a thousand silently zero each step),
// and a share of a layer's updates 16-bit weights lose from which the rule names it.
inline constexpr double k_flush_needs_scaling = 0.001;
inline constexpr double k_lost_updates_share = 0.01;
// Activations within this many binades of fp16's largest (2^14 and up: within a factor 4
// of 65504) are close enough to overflow that the rule names the layer.
inline constexpr int k_fp16_headroom_binades = 2;
// fp8 headroom: the central share of a layer's values whose width in binades is set against
// E4M3's and E5M2's (99.9%: what is left out, 0.05% at each end, is the tail a per-tensor
// scale may let flush or saturate; the rule gives that tail's share apart).
inline constexpr double k_fp8_central_share = 0.999;
} // namespace explain_limits

} // namespace mixlab
