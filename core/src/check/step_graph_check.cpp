// Whole-run checks of step recording: the same model, data and seed trained with the
// step recorded once and replayed, and op by op, must agree bit for bit in every
// reported loss and every final parameter. The runs cross epoch boundaries (a new data
// order, an evaluation pass between steps) and use dropout and augmentation, the ops
// whose per-step draws a replay must read from the device's step counter. A run sampling
// its numerics replays a second recording on sampled steps: its samples must agree bit for
// bit too, and its losses with those of the same run without sampling.
#include "check/step_graph_check.h"

#include "mixlab/dataset.h"
#include "mixlab/device.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace mixlab {

namespace {

struct CollectingSink : MetricsSink {
    std::vector<float> losses;
    int recorded = 0;    // "recorded as one CUDA graph" events
    std::string refused; // a warning that recording failed
    void on_step(int, const StepMetrics& m) override { losses.push_back(m.loss); }
    void on_epoch(int, const EpochMetrics&) override {}
    std::vector<NumericsSample> numerics;
    void on_numerics(int, const NumericsSample& sample) override { numerics.push_back(sample); }
    void on_event(int, const RunEvent& e) override
    {
        if (e.message.find("recorded as one CUDA graph") != std::string::npos) ++recorded;
        if (e.message.find("not recorded as a CUDA graph") != std::string::npos)
            refused = e.message;
    }
};

struct Case {
    const char* name;
    const char* model; // mixlab-model/1 JSON
    Policy policy;
    int batch;
    bool augment;
    int numerics_every = 0;
};

constexpr const char* k_mlp = R"({"format": "mixlab-model/1", "layers": [
  {"type": "flatten"},
  {"type": "dense", "units": 48, "activation": "relu"},
  {"type": "dropout", "rate": 0.25},
  {"type": "dense", "units": "classes"}]})";

constexpr const char* k_cnn = R"({"format": "mixlab-model/1", "layers": [
  {"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same", "use_bias": false},
  {"type": "batchnorm"},
  {"type": "activation", "activation": "relu"},
  {"type": "maxpool2d", "pool_size": 2},
  {"type": "residual", "activation": "relu", "body": [
    {"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same"}]},
  {"type": "global_avgpool"},
  {"type": "dropout", "rate": 0.1},
  {"type": "dense", "units": "classes"}]})";

// mixed_fp8: layer 1's GEMM writes layer 2's E4M3 input (40 units run as 48), and on
// sampled steps its 16-bit output too, for the numerics sampler alone.
constexpr const char* k_fp8_mlp = R"({"format": "mixlab-model/1", "layers": [
  {"type": "flatten"},
  {"type": "dense", "units": 40, "activation": "relu"},
  {"type": "dense", "units": 24, "activation": "relu"},
  {"type": "dense", "units": "classes"}]})";

struct Outcome {
    std::vector<float> losses, params;
    int recorded = 0;
    std::string refused;
    std::vector<NumericsSample> numerics;
};

Outcome train_once(Backend& backend, DeviceDataset& data, const Graph& graph, const Case& c,
                   std::uint64_t seed, bool record, int numerics_every)
{
    RunConfig config;
    config.policy = c.policy;
    config.batch_size = c.batch;
    config.steps = 14; // 6 steps per epoch below: two epoch ends, two evaluations
    config.seed = seed;
    config.cuda_graph = record;
    config.numerics_every = numerics_every;
    if (c.augment) {
        config.dataset.crop_padding = 2;
        config.dataset.horizontal_flip = true;
    }
    TrainingRun run(graph, config, data, backend);
    CollectingSink sink;
    while (!run.finished()) run.step(sink);
    run.finish(sink, false);
    return {sink.losses, run.read_parameters(), sink.recorded, sink.refused, sink.numerics};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b)
{
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

} // namespace

std::vector<CheckResult> run_step_graph_checks(Backend& backend, std::uint64_t seed,
                                               const std::string& filter)
{
    const Case cases[] = {
        {"mlp_dropout/fp32", k_mlp, Policy::FP32, 32, false},
        {"mlp_dropout/mixed_fp16", k_mlp, Policy::MixedFP16, 32, false},
        {"cnn_bn_residual_augment/mixed_bf16", k_cnn, Policy::MixedBF16, 32, true},
        // Sampled at steps 3, 6, 9, 12: the second recording replays on those.
        {"mlp_dropout_numerics/mixed_fp16", k_mlp, Policy::MixedFP16, 32, false, 3},
        {"mlp_fp8_output_numerics/mixed_fp8", k_fp8_mlp, Policy::MixedFP8, 32, false, 3}};
    std::vector<CheckResult> out;
    const Dataset data = make_synthetic(6 * 32 + 5, 40, seed); // 6 steps, a partial batch
    for (const Case& c : cases) {
        CheckResult r;
        r.name = std::string("step_graph/") + c.name;
        if (!filter.empty() && r.name.find(filter) == std::string::npos) continue;
        try {
            if (c.policy == Policy::MixedBF16 && !backend.info().bf16) {
                r.passed = true;
                r.detail = "skipped: no bf16 on this device";
                out.push_back(r);
                continue;
            }
            try {
                check_policy_supported(backend.info(), c.policy);
            } catch (const std::exception& e) {
                r.passed = true;
                r.detail = std::string("skipped: ") + e.what();
                out.push_back(r);
                continue;
            }
            DeviceDataset on_device(data, backend);
            const Graph graph =
                build_graph(parse_model_spec(c.model),
                            Shape{{data.height, data.width, data.channels}}, data.classes);
            const Outcome ops =
                train_once(backend, on_device, graph, c, seed, false, c.numerics_every);
            const Outcome replayed =
                train_once(backend, on_device, graph, c, seed, true, c.numerics_every);
            std::ostringstream d;
            if (c.numerics_every > 0) {
                const Outcome unsampled = train_once(backend, on_device, graph, c, seed, true, 0);
                if (!same_bits(unsampled.losses, replayed.losses))
                    d << "sampling numerics changed the per-step losses; ";
                if (replayed.numerics.size() != ops.losses.size() / std::size_t(c.numerics_every))
                    d << "expected a numerics sample every " << c.numerics_every << " steps, got "
                      << replayed.numerics.size() << "; ";
                if (ops.numerics != replayed.numerics)
                    d << "numerics samples differ between replay and op by op; ";
            }
            const bool can_record = backend.info().backend == BackendKind::Cuda;
            if (!same_bits(ops.losses, replayed.losses))
                d << "per-step losses differ between replay and op by op; ";
            if (!same_bits(ops.params, replayed.params))
                d << "final parameters differ between replay and op by op; ";
            if (can_record && replayed.recorded == 0)
                d << "the step was never recorded (" << replayed.refused << "); ";
            if (ops.recorded != 0) d << "a run with cuda_graph off recorded its step; ";
            r.passed = d.str().empty();
            r.detail = r.passed ? std::to_string(ops.losses.size()) + " steps, " +
                                      std::to_string(ops.params.size()) +
                                      " parameters identical; recorded " +
                                      std::to_string(replayed.recorded) + " time(s)"
                                : d.str();
        } catch (const std::exception& e) {
            r.passed = false;
            r.detail = std::string("threw: ") + e.what();
        }
        out.push_back(r);
    }
    return out;
}

} // namespace mixlab
