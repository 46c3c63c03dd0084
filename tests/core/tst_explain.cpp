// The explain rules, one by one: for each, a group built by hand where it must fire
// (with the run's numbers in its sentence) and one where it must stay silent; then
// `mixlab-cli explain` end to end on the CPU.
#include "mixlab/explain.h"
#include "mixlab/json_io.h"
#include "mixlab/run_log.h"
#include "train/fp8_scales.h" // fp8_amax_jump_text: the trainer's words
#include "crafted_numerics.h"
#include "format_v1.h"
#include "test_models.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <utility>

using namespace mixlab;
using test::updates_at;
using test::values_at;

namespace {

// The synthetic dataset's sample is 32x32x3 of 10 classes; the rules only read shapes.
const Shape k_input{{32, 32, 3}};

DeviceInfo cpu_device()
{
    DeviceInfo d;
    d.backend = BackendKind::Cpu;
    d.name = "CPU (no CUDA device)";
    return d;
}

DeviceInfo gpu_device(int cc_major, int cc_minor)
{
    DeviceInfo d;
    d.backend = BackendKind::Cuda;
    d.name = "Test GPU";
    d.cc_major = cc_major;
    d.cc_minor = cc_minor;
    d.tensor_cores = cc_major >= 7;
    d.bf16 = d.tf32 = cc_major >= 8;
    return d;
}

RunFacts facts(Policy policy, const ModelSpec& spec, double median_ms,
               const DeviceInfo& device = cpu_device(), int classes = 10,
               const Shape& input = k_input)
{
    RunFacts f;
    f.policy = policy;
    f.batch = 64;
    f.graph = build_graph(spec, input, classes);
    f.device = device;
    f.summary.steps = 200;
    f.summary.median_step_ms = median_ms;
    f.summary.mean_step_ms = median_ms;
    f.loss_scale_mode =
        policy_traits(policy).default_loss_scaling ? LossScaleMode::Dynamic : LossScaleMode::None;
    return f;
}

std::vector<Explanation> with_id(const std::vector<Explanation>& all, const std::string& id)
{
    std::vector<Explanation> out;
    for (const Explanation& e : all)
        if (e.id == id) out.push_back(e);
    return out;
}

// A loss curve of `n` steps from `start` to `end`, with seeded noise so no two steps
// are equal (a flat constant curve would test the rule on a curve no run produces).
std::vector<float> loss_curve(int n, float start, float end, unsigned seed)
{
    QRandomGenerator rng(seed);
    std::vector<float> out;
    for (int i = 0; i < n; ++i) {
        const float t = float(i) / float(n - 1);
        out.push_back(start + (end - start) * t + 0.01f * float(rng.generateDouble() - 0.5));
    }
    return out;
}

const test::TinyMlpOptions k_small{.hidden = 16};

NumericsSample sample_at(std::int64_t step, float scale, std::vector<LayerNumerics> layers)
{
    NumericsSample s;
    s.step = step;
    s.loss_scale = scale;
    s.layers = std::move(layers);
    return s;
}

LayerNumerics dense(std::string path, std::optional<ValueHistogram> activations,
                    std::optional<ValueHistogram> gradients = std::nullopt,
                    std::optional<UpdateHistogram> updates = std::nullopt)
{
    return LayerNumerics{std::move(path),       "dense",
                         values_at({{-4, 10}}), std::move(activations),
                         std::move(gradients),  std::move(updates)};
}

} // namespace

class TestExplain : public QObject {
    Q_OBJECT

private slots:
    void speedVerdict()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        const auto ex = with_id(
            explain({facts(Policy::FP32, spec, 0.532), facts(Policy::MixedFP16, spec, 0.227)}),
            "speed");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1);
        QVERIFY2(ex[0].sentence.find("mixed_fp16 ran 0.227 ms per step against fp32's "
                                     "0.532 ms: 2.34x faster") != std::string::npos,
                 ex[0].sentence.c_str());

        const auto slower =
            with_id(explain({facts(Policy::FP32, spec, 0.2), facts(Policy::MixedFP16, spec, 0.5)}),
                    "speed");
        QCOMPARE(slower.size(), std::size_t(1));
        QVERIFY2(slower[0].sentence.find("2.50x slower") != std::string::npos,
                 slower[0].sentence.c_str());

        // A run alone has nothing to be compared with.
        QVERIFY(with_id(explain({facts(Policy::MixedFP16, spec, 0.2)}), "speed").empty());
    }

    // The word-lm-medium shape on WikiText-2's vocabulary: the decoder pads to 33,280 with
    // masked logits, the 20-column batch is off cuDNN's multiple of 8, and at batch 20 the
    // recurrence is bound by latency on the GPU; at batch 80 with hidden 656 those go quiet.
    void languageModelRules()
    {
        auto lm = [](int hidden) {
            return parse_model_spec(
                R"({"format": "mixlab-model/1", "name": "lm", "layers": [
                    {"type": "embedding", "vocab": "dataset", "dim": )" +
                std::to_string(hidden) + R"(},
                    {"type": "lstm", "hidden": )" +
                std::to_string(hidden) + R"(, "layers": 2},
                    {"type": "dense", "units": "vocab", "tie_weights": true}]})");
        };
        auto lm_facts = [&](Policy p, int hidden, int batch) {
            RunFacts f = facts(p, lm(hidden), 10.0, gpu_device(9, 0), 33278, Shape::tokens());
            f.batch = batch;
            f.bptt = 35;
            f.summary.language_model = true;
            return f;
        };
        const auto ex =
            explain({lm_facts(Policy::FP32, 650, 20), lm_facts(Policy::MixedFP16, 650, 20)});
        const auto decoder = with_id(ex, "dims_multiple_of_8");
        QCOMPARE(decoder.size(), std::size_t(1));
        QVERIFY2(decoder[0].suggestion.find("33280 logits") != std::string::npos,
                 decoder[0].suggestion.c_str());
        const auto dims = with_id(ex, "rnn_dims");
        QCOMPARE(dims.size(), std::size_t(1));
        QVERIFY2(dims[0].sentence.find("hidden 650 (pad to 656)") != std::string::npos,
                 dims[0].sentence.c_str());
        // The network stores 650 as 656 (zeros): said, and nothing for the user to change.
        QCOMPARE(dims[0].severity, Explanation::Severity::Info);
        QVERIFY2(dims[0].sentence.find("MixLab stores them padded") != std::string::npos,
                 dims[0].sentence.c_str());
        // The decoder's fault left is the vocabulary alone: its input runs at 656.
        QVERIFY2(decoder[0].sentence.find("inputs 650") == std::string::npos,
                 decoder[0].sentence.c_str());
        const auto batch = with_id(ex, "rnn_batch");
        QCOMPARE(batch.size(), std::size_t(1));
        QCOMPARE(batch[0].fix, std::optional(Fix::set_batch(24)));
        const auto share = with_id(ex, "decoder_share");
        QCOMPARE(share.size(), std::size_t(1));
        QVERIFY2(share[0].sentence.find("33278 words, tied to the embedding") != std::string::npos,
                 share[0].sentence.c_str());
        const auto latency = with_id(ex, "rnn_latency");
        QCOMPARE(latency.size(), std::size_t(2)); // both runs
        QVERIFY2(latency[0].sentence.find("35 sequential time steps") != std::string::npos,
                 latency[0].sentence.c_str());
        QCOMPARE(latency[0].fix, std::optional(Fix::set_batch(80)));

        const auto aligned =
            explain({lm_facts(Policy::FP32, 656, 80), lm_facts(Policy::MixedFP16, 656, 80)});
        QVERIFY(with_id(aligned, "rnn_dims").empty());
        QVERIFY(with_id(aligned, "rnn_batch").empty());
        QVERIFY(with_id(aligned, "rnn_latency").empty());
        // A classifier hears none of it.
        const ModelSpec mlp = test::tiny_mlp(k_small);
        const auto plain =
            explain({facts(Policy::FP32, mlp, 1.0), facts(Policy::MixedFP16, mlp, 0.5)});
        QVERIFY(with_id(plain, "decoder_share").empty());
        QVERIFY(with_id(plain, "rnn_latency").empty());
    }

    void dimsNotMultipleOf8()
    {
        // 3072 inputs -> 1001 -> 10: the hidden layer is almost all the work.
        const ModelSpec odd = test::tiny_mlp({.hidden = 1001});
        const auto ex =
            with_id(explain({facts(Policy::FP32, odd, 1.0), facts(Policy::MixedFP16, odd, 0.5)}),
                    "dims_multiple_of_8");
        const Graph g = build_graph(odd, k_input, 10);
        const std::string hidden = g.layers[1].path, output = g.layers[2].path;
        QCOMPARE(ex.size(), std::size_t(2));
        QCOMPARE(ex[0].fix, std::optional(Fix::set_units(hidden, 1008)));
        QCOMPARE(ex[0].severity, Explanation::Severity::Advice);
        // The 10-class output here is ~0.3% of the FLOPs: padding it would not pay.
        QVERIFY(!ex[1].fix);
        QCOMPARE(ex[1].severity, Explanation::Severity::Info);
        QVERIFY2(ex[1].sentence.find(output) == 0, ex[1].sentence.c_str());
        QVERIFY2(ex[1].sentence.find("would not pay") != std::string::npos, ex[1].sentence.c_str());

        // 4x4x2 inputs -> 16 -> 10: the output is a third of the work, so pad and mask.
        const Shape small_in{{4, 4, 2}};
        const auto pays = with_id(explain({facts(Policy::MixedFP16, test::tiny_mlp(k_small), 0.5,
                                                 cpu_device(), 10, small_in)}),
                                  "dims_multiple_of_8");
        QCOMPARE(pays.size(), std::size_t(1));
        QVERIFY2(pays[0].suggestion.find("16 logits") != std::string::npos &&
                     pays[0].suggestion.find("mask the extra 6") != std::string::npos,
                 pays[0].suggestion.c_str());

        // Measured time outranks FLOPs on a GPU: a profile where the 10-class output takes
        // 19% of the layers' time (a misaligned weight gradient) makes padding worth it,
        // and the sentence says both shares.
        RunFacts timed = facts(Policy::MixedFP16, odd, 0.5, gpu_device(9, 0));
        StepProfile p;
        for (const GraphLayer& gl : g.layers) {
            LayerTime l;
            l.path = gl.path;
            l.forward_ms = gl.path == output ? 0.01 : 0.05;
            l.backward_ms = gl.path == output ? 0.2 : 0.4;
            p.layers.push_back(l);
        }
        timed.profile = p;
        const auto measured = with_id(explain({timed}), "dims_multiple_of_8");
        QCOMPARE(measured.size(), std::size_t(2));
        QCOMPARE(measured[1].severity, Explanation::Severity::Advice);
        QVERIFY2(measured[1].sentence.find("took 18.9% of the layers' device time") !=
                     std::string::npos,
                 measured[1].sentence.c_str());
        QVERIFY2(measured[1].suggestion.find("16 logits") != std::string::npos,
                 measured[1].suggestion.c_str());
        // The CPU backend's layer times are emulation's: the same profile there leaves the
        // FLOP share to decide, and the sentence names no time.
        timed.device = cpu_device();
        const auto emulated = with_id(explain({timed}), "dims_multiple_of_8");
        QCOMPARE(emulated.size(), std::size_t(2));
        QCOMPARE(emulated[1].severity, Explanation::Severity::Info);
        QVERIFY2(emulated[1].sentence.find("device time") == std::string::npos &&
                     emulated[1].sentence.find("would not pay: the layer is under 5% of the "
                                               "work") != std::string::npos,
                 emulated[1].sentence.c_str());

        // fp32 alone does not use 16-bit tensor cores; multiples of 8 need nothing.
        QVERIFY(with_id(explain({facts(Policy::FP32, odd, 1.0)}), "dims_multiple_of_8").empty());
        const ModelSpec even = test::tiny_mlp({.hidden = 64, .classes = 16});
        QVERIFY(with_id(explain({facts(Policy::MixedFP16, even, 0.5, cpu_device(), 16)}),
                        "dims_multiple_of_8")
                    .empty());
    }

    void device()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        const auto cpu = with_id(explain({facts(Policy::MixedFP16, spec, 0.5)}), "cpu_backend");
        QCOMPARE(cpu.size(), std::size_t(1));
        QVERIFY2(cpu[0].sentence.find("fp8") == std::string::npos, cpu[0].sentence.c_str());
        // A group with a mixed_fp8 run says fp8 is emulated too.
        const auto cpu8 = with_id(
            explain({facts(Policy::MixedBF16, spec, 0.5), facts(Policy::MixedFP8, spec, 0.5)}),
            "cpu_backend");
        QCOMPARE(cpu8.size(), std::size_t(1));
        QVERIFY2(cpu8[0].sentence.find("fp8 (E4M3/E5M2)") != std::string::npos,
                 cpu8[0].sentence.c_str());

        // Pascal (6.1): no tensor cores for mixed_fp16; Turing (7.5): none for bf16.
        const auto pascal = with_id(
            explain({facts(Policy::MixedFP16, spec, 0.5, gpu_device(6, 1))}), "device_lacks");
        QCOMPARE(pascal.size(), std::size_t(1));
        QVERIFY2(pascal[0].sentence.find("6.1") != std::string::npos, pascal[0].sentence.c_str());
        QCOMPARE(with_id(explain({facts(Policy::MixedBF16, spec, 0.5, gpu_device(7, 5))}),
                         "device_lacks")
                     .size(),
                 std::size_t(1));

        const auto hopper = explain({facts(Policy::MixedBF16, spec, 0.5, gpu_device(9, 0)),
                                     facts(Policy::TF32, spec, 0.5, gpu_device(9, 0))});
        QVERIFY(with_id(hopper, "device_lacks").empty());
        QVERIFY(with_id(hopper, "cpu_backend").empty());
    }

    void tf32Close()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        const auto close =
            with_id(explain({facts(Policy::FP32, spec, 3.0), facts(Policy::TF32, spec, 1.2),
                             facts(Policy::MixedFP16, spec, 1.0)}),
                    "tf32_close");
        QCOMPARE(close.size(), std::size_t(1));
        QVERIFY2(close[0].sentence.find("1.20x") != std::string::npos, close[0].sentence.c_str());

        QVERIFY(
            with_id(explain({facts(Policy::TF32, spec, 2.0), facts(Policy::MixedFP16, spec, 1.0)}),
                    "tf32_close")
                .empty());
    }

    void lossScale()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts collapsed = facts(Policy::MixedFP16, spec, 0.5);
        collapsed.scale_history = {{1, 65536.f}, {5, 32768.f}, {40, 128.f}}; // fell 2^9
        const auto ex = with_id(explain({collapsed}), "loss_scale");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("from 65536 to 128") != std::string::npos,
                 ex[0].sentence.c_str());

        RunFacts skipping = facts(Policy::MixedFP16, spec, 0.5);
        skipping.summary.skipped_steps = 5; // 2.5% of 200
        QCOMPARE(with_id(explain({skipping}), "loss_scale").size(), std::size_t(1));

        // The usual start: a few halvings (2^6) and one skipped step in 200.
        RunFacts healthy = facts(Policy::MixedFP16, spec, 0.5);
        healthy.scale_history = {{1, 65536.f}, {2, 32768.f}, {9, 1024.f}};
        healthy.summary.skipped_steps = 2;
        QVERIFY(with_id(explain({healthy}), "loss_scale").empty());

        // The scaler's search at the start (one halving per step from step 1) is not
        // trouble even in a short run: 1 skip in 12 steps is 8%.
        RunFacts searching = facts(Policy::MixedFP16, spec, 0.5);
        searching.summary.steps = 12;
        searching.summary.skipped_steps = 1;
        searching.scale_history = {{1, 65536.f}, {2, 32768.f}};
        QVERIFY(with_id(explain({searching}), "loss_scale").empty());
        // ResNet-152's start: 8 halvings in a row, then one more overflow later on.
        RunFacts deep = facts(Policy::MixedFP16, spec, 0.5);
        deep.summary.steps = 100;
        deep.summary.skipped_steps = 9;
        deep.scale_history = {{1, 65536.f}, {2, 32768.f}, {3, 16384.f}, {4, 8192.f}, {5, 4096.f},
                              {6, 2048.f},  {7, 1024.f},  {8, 512.f},   {9, 256.f},  {60, 128.f}};
        const auto late = with_id(explain({deep}), "loss_scale");
        QCOMPARE(late.size(), std::size_t(0)); // 1 of 100 after the search: within 1%
        deep.summary.skipped_steps = 11;       // 3 of 100 after the search: a warning
        const auto warn = with_id(explain({deep}), "loss_scale");
        QCOMPARE(warn.size(), std::size_t(1));
        QVERIFY2(warn[0].sentence.find("skipped 3 of 100") != std::string::npos &&
                     warn[0].sentence.find("after the 8 skipped") != std::string::npos,
                 warn[0].sentence.c_str());
    }

    // Split masters under mixed_bf16: suggested for an fp32-master bf16 run (the other
    // policies have no bf16 masters to split), explained with the memory when in use, and
    // carried through the facts' JSON.
    void masterWeights()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts fp32 = facts(Policy::FP32, spec, 1.0);
        RunFacts bf16 = facts(Policy::MixedBF16, spec, 0.5);
        bf16.device_bytes = 3 << 20;
        std::int64_t copied = 0;
        for (const GraphLayer& l : bf16.graph.layers)
            if (!l.spec.force_fp32) copied += l.params;
        QVERIFY(copied > 0);
        auto ex = with_id(explain({fp32, bf16}), "master_weights");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1);
        QVERIFY2(ex[0].sentence.find(std::to_string(copied) + " bf16 parameters") !=
                     std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY(ex[0].sentence.find("3.0 MiB on the device") != std::string::npos);
        QVERIFY(ex[0].suggestion.find("--master-weights bf16_split") != std::string::npos);
        QVERIFY(with_id(explain({fp32, bf16}, Reader::App), "master_weights")[0].suggestion.find(
                    "run panel") != std::string::npos);

        RunFacts split = bf16;
        split.master_weights = MasterWeights::Bf16Split;
        split.device_bytes = 2 << 20;
        ex = with_id(explain({bf16, split}), "master_weights");
        QCOMPARE(ex.size(), std::size_t(1)); // the split run says it; no suggestion beside it
        QCOMPARE(ex[0].run, 1);
        for (const char* part : {"bit for bit", "4 bytes a parameter instead of 6",
                                 "2.0 MiB on the device (with fp32 masters: 3.0 MiB)"})
            QVERIFY2(ex[0].sentence.find(part) != std::string::npos, ex[0].sentence.c_str());
        QVERIFY(ex[0].suggestion.empty());
        QVERIFY(with_id(explain({facts(Policy::MixedFP16, spec, 0.5)}), "master_weights").empty());

        const RunFacts back = run_facts_from_json(JsonReader(run_facts_to_json(split)));
        QCOMPARE(back.master_weights, MasterWeights::Bf16Split);
        QCOMPARE(back.device_bytes, split.device_bytes);
        const RunFacts plain = run_facts_from_json(JsonReader(run_facts_to_json(fp32)));
        QCOMPARE(plain.master_weights, MasterWeights::FP32);
        QCOMPARE(plain.device_bytes, std::int64_t(0));
    }

    void fp16Stall()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts stalled = facts(Policy::FP16, spec, 0.5);
        stalled.train_loss = loss_curve(200, 2.30f, 2.29f, 1);
        const auto ex = with_id(explain({stalled}), "fp16_stall");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].fix, std::optional(Fix::set_policy(Policy::MixedFP16)));

        RunFacts learning = facts(Policy::FP16, spec, 0.5);
        learning.train_loss = loss_curve(200, 2.30f, 1.20f, 2);
        QVERIFY(with_id(explain({learning}), "fp16_stall").empty());
        // Master weights: a flat loss under mixed_fp16 is not this rule's business.
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.5);
        mixed.train_loss = stalled.train_loss;
        QVERIFY(with_id(explain({mixed}), "fp16_stall").empty());
    }

    void sigmoidOutput()
    {
        ModelSpec spec = test::tiny_mlp(k_small);
        spec.layers.back().activation = Activation::Sigmoid;
        const Graph g = build_graph(spec, k_input, 10);
        const auto ex = with_id(explain({facts(Policy::FP32, spec, 1.0)}), "sigmoid_output");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].fix,
                 std::optional(Fix::set_activation(g.layers.back().path, Activation::Softmax)));

        spec.layers.back().activation = Activation::Softmax;
        QVERIFY(with_id(explain({facts(Policy::FP32, spec, 1.0)}), "sigmoid_output").empty());
    }

    void outputFloat32()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        const Graph g = build_graph(spec, k_input, 10);
        const auto ex =
            with_id(explain({facts(Policy::FP32, spec, 1.0), facts(Policy::MixedFP16, spec, 0.5)}),
                    "output_float32");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].fix, std::optional(Fix::set_dtype_float32(g.layers.back().path)));

        const ModelSpec kept = test::tiny_mlp({.hidden = 16, .fp32_output = true});
        QVERIFY(with_id(explain({facts(Policy::MixedFP16, kept, 0.5)}), "output_float32").empty());
        QVERIFY(with_id(explain({facts(Policy::FP32, spec, 0.5)}), "output_float32").empty());
    }

    // The same rules, ids and fixes for both readers; the suggestions name the CLI's
    // options and file fields for the CLI and the app's controls for the app.
    void suggestionsWordedForTheReader_data()
    {
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("cli");
        QTest::addColumn<QString>("app");
        QTest::newRow("cpu backend") << "cpu_backend"
                                     << "--device cuda"
                                     << "Device: cuda";
        QTest::newRow("output float32") << "output_float32"
                                        << "\"dtype\": \"float32\""
                                        << "Precision: keep in float32";
        QTest::newRow("sigmoid output") << "sigmoid_output"
                                        << "softmax output"
                                        << "Activation of layer";
        QTest::newRow("small batch") << "small_batch"
                                     << "try batch"
                                     << "Batch size to";
    }

    void suggestionsWordedForTheReader()
    {
        QFETCH(QString, id);
        QFETCH(QString, cli);
        QFETCH(QString, app);
        ModelSpec spec = test::tiny_mlp(k_small);
        spec.layers.back().activation = Activation::Sigmoid;
        const DeviceInfo device = id == "small_batch" ? gpu_device(9, 0) : cpu_device();
        const std::vector<RunFacts> group = {facts(Policy::FP32, spec, 0.3, device),
                                             facts(Policy::MixedFP16, spec, 0.2, device)};
        const auto for_cli = with_id(explain(group, Reader::Cli), id.toStdString());
        const auto for_app = with_id(explain(group, Reader::App), id.toStdString());
        QCOMPARE(for_cli.size(), std::size_t(1));
        QCOMPARE(for_app.size(), std::size_t(1));
        const QString c = QString::fromStdString(for_cli[0].suggestion);
        const QString a = QString::fromStdString(for_app[0].suggestion);
        QVERIFY2(c.contains(cli), qPrintable(c));
        QVERIFY2(a.contains(app), qPrintable(a));
        // No CLI option or file field in the app's words.
        QVERIFY2(!a.contains("--") && !a.contains("\"dtype\""), qPrintable(a));
        QCOMPARE(for_app[0].sentence, for_cli[0].sentence);
        QCOMPARE(for_app[0].fix, for_cli[0].fix);
    }

    // The fixes' string forms are explain --json's only: one name per kind, and the
    // value as the JSON has always written it (a number, an activation, a policy, or
    // nothing for set_dtype_float32).
    void fixStringForms_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("value");
        QTest::addColumn<bool>("model");
        QTest::newRow("units") << int(FixKind::SetUnits) << "set_units"
                               << "1008" << true;
        QTest::newRow("dtype") << int(FixKind::SetDtypeFloat32) << "set_dtype_float32"
                               << "" << true;
        QTest::newRow("activation") << int(FixKind::SetActivation) << "set_activation"
                                    << "softmax" << true;
        QTest::newRow("policy") << int(FixKind::SetPolicy) << "set_policy"
                                << "mixed_bf16" << false;
        QTest::newRow("batch") << int(FixKind::SetBatch) << "set_batch"
                               << "256" << false;
    }

    void fixStringForms()
    {
        QFETCH(int, kind);
        QFETCH(QString, name);
        QFETCH(QString, value);
        QFETCH(bool, model);
        // Every field set, so the value text shows it reads only its own kind's.
        const Fix f{.kind = FixKind(kind),
                    .path = "layer 1",
                    .units = 1008,
                    .activation = Activation::Softmax,
                    .policy = Policy::MixedBF16,
                    .batch = 256};
        QCOMPARE(QString::fromUtf8(fix_kind_name(f.kind)), name);
        QCOMPARE(QString::fromStdString(fix_value_text(f)), value);
        QCOMPARE(is_model_fix(f.kind), model);
    }

    void smallBatch()
    {
        const ModelSpec tiny = test::tiny_mlp(k_small); // ~1e5 FLOPs per sample
        const auto ex = with_id(explain({facts(Policy::FP32, tiny, 0.3, gpu_device(9, 0)),
                                         facts(Policy::MixedFP16, tiny, 0.2, gpu_device(9, 0))}),
                                "small_batch");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1); // the fastest run
        QVERIFY(ex[0].fix && ex[0].fix->kind == FixKind::SetBatch);
        QCOMPARE(ex[0].fix->path, std::string()); // a run setting, no layer
        const double per_sample = double(build_graph(tiny, k_input, 10).total_flops);
        const double suggested = ex[0].fix->batch;
        QVERIFY(suggested * per_sample >= 1e9);
        QVERIFY(suggested / 2 * per_sample < 1e9 || suggested == 128);

        // 3072 -> 1024 -> 10 at batch 4096 is ~2.6e10 FLOPs and 2 ms a step.
        RunFacts big =
            facts(Policy::MixedFP16, test::tiny_mlp({.hidden = 1024}), 2.0, gpu_device(9, 0));
        big.batch = 4096;
        QVERIFY(with_id(explain({big}), "small_batch").empty());
        // The CPU backend's timings are no evidence about a GPU.
        QVERIFY(with_id(explain({facts(Policy::FP32, tiny, 0.1)}), "small_batch").empty());
    }

    void launchBound()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts idle = facts(Policy::MixedFP16, spec, 0.5, gpu_device(9, 0));
        idle.gpu_busy_fraction = 0.4;
        const auto ex = with_id(explain({idle}), "launch_bound");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("40%") != std::string::npos, ex[0].sentence.c_str());

        RunFacts busy = idle;
        busy.gpu_busy_fraction = 0.9;
        QVERIFY(with_id(explain({busy}), "launch_bound").empty());
        RunFacts unknown = idle;
        unknown.gpu_busy_fraction.reset();
        QVERIFY(with_id(explain({unknown}), "launch_bound").empty());
        // On the CPU backend device and host time are one clock's: no GPU to call idle.
        RunFacts cpu = idle;
        cpu.device = cpu_device();
        QVERIFY(with_id(explain({cpu}), "launch_bound").empty());
    }

    static StepProfile profile_of(double input, double fwd, double loss, double bwd, double scaling,
                                  double opt)
    {
        StepProfile p;
        p.steps = 10;
        const double v[] = {input, fwd, loss, bwd, scaling, opt};
        for (int i = 0; i < k_step_phases; ++i) {
            p.phase_ms[std::size_t(i)] = v[i];
            p.device_ms += v[i];
        }
        p.step_ms = p.device_ms;
        p.wall_ms = p.device_ms;
        p.gpu_busy_fraction = 1.0;
        return p;
    }

    void inputBound()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts slow_input = facts(Policy::MixedFP16, spec, 1.0, gpu_device(9, 0));
        slow_input.profile = profile_of(0.40, 0.2, 0.01, 0.3, 0.04, 0.05); // input 40%
        const auto ex = with_id(explain({slow_input}), "input_bound");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("0.400 ms") != std::string::npos, ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("40%") != std::string::npos, ex[0].sentence.c_str());

        RunFacts fast_input = slow_input;
        fast_input.profile = profile_of(0.05, 0.4, 0.01, 0.45, 0.04, 0.05); // input 5%
        QVERIFY(with_id(explain({fast_input}), "input_bound").empty());
        RunFacts unprofiled = slow_input;
        unprofiled.profile.reset();
        QVERIFY(with_id(explain({unprofiled}), "input_bound").empty());
    }

    // The seed's story: mixed precision makes the GEMMs 4x faster, but the optimizer's
    // per-parameter pass is the same in both, so the step gains little.
    void fixedCosts()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts fp32 = facts(Policy::FP32, spec, 0.50, gpu_device(9, 0));
        fp32.profile = profile_of(0.01, 0.15, 0.01, 0.25, 0.02, 0.06); // layers 0.41
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.20, gpu_device(9, 0));
        mixed.profile = profile_of(0.01, 0.04, 0.01, 0.06, 0.02, 0.06); // layers 0.11, fixed 0.09
        const auto ex = with_id(explain({fp32, mixed}), "fixed_costs");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1);
        QVERIFY2(ex[0].sentence.find("3.7x faster") != std::string::npos, ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("0.090 ms") != std::string::npos, ex[0].sentence.c_str());

        // Layers dominating the mixed step: the fixed costs are no story.
        RunFacts big = mixed;
        big.profile = profile_of(0.01, 0.3, 0.01, 0.5, 0.02, 0.06);
        RunFacts big_fp32 = fp32;
        big_fp32.profile = profile_of(0.01, 1.2, 0.01, 2.0, 0.02, 0.06);
        QVERIFY(with_id(explain({big_fp32, big}), "fixed_costs").empty());
        // Precision did not speed the layers up: not this rule's story either.
        RunFacts same = mixed;
        same.profile = profile_of(0.01, 0.15, 0.01, 0.25, 0.02, 0.06);
        QVERIFY(with_id(explain({fp32, same}), "fixed_costs").empty());
        // No baseline profile: silent.
        RunFacts no_base = fp32;
        no_base.profile.reset();
        QVERIFY(with_id(explain({no_base, mixed}), "fixed_costs").empty());
    }

    // mixed_fp8: which dense layers ran in fp8 and why the others did not (the layer
    // whose units are off 16 gets a fix with the units that put it in; the 10-class output
    // is named as the usual one to keep out), the CPU's emulation, and a group with no fp8
    // run or no dense layer.
    void fp8Coverage()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1001}); // 3072 -> 1001 -> 10
        RunFacts fp8 = facts(Policy::MixedFP8, spec, 1.0);
        const auto all = explain({fp8});
        const auto cov = with_id(all, "fp8_coverage");
        QCOMPARE(cov.size(), std::size_t(1));
        QCOMPARE(cov[0].severity, Explanation::Severity::Warning); // none ran in fp8
        QVERIFY2(cov[0].sentence.find("0 of the model's 2 dense layers") != std::string::npos,
                 cov[0].sentence.c_str());
        QVERIFY2(cov[0].sentence.find("emulated") != std::string::npos, cov[0].sentence.c_str());
        const auto out = with_id(all, "fp8_layer_out");
        QCOMPARE(out.size(), std::size_t(2));
        QVERIFY2(out[0].sentence.find("layer 1") != std::string::npos, out[0].sentence.c_str());
        QVERIFY2(out[0].sentence.find("out 1001 is not a multiple of 8") != std::string::npos,
                 out[0].sentence.c_str());
        QVERIFY(out[0].fix);
        QCOMPARE(out[0].fix->kind, FixKind::SetUnits);
        QCOMPARE(out[0].fix->units, 1008);
        QCOMPARE(out[0].fix->path, std::string("layer 1"));
        // The output layer: no fix, but why it is the usual one to keep out.
        QVERIFY(!out[1].fix);
        QVERIFY2(out[1].sentence.find("out 10 is not a multiple of 8") != std::string::npos,
                 out[1].sentence.c_str());
        QVERIFY2(out[1].sentence.find("usual one to keep out") != std::string::npos,
                 out[1].sentence.c_str());

        // With the fix applied the hidden layer runs in fp8: only the output stays out.
        const ModelSpec fixed = test::tiny_mlp({.hidden = 1008});
        const auto after = explain({facts(Policy::MixedFP8, fixed, 1.0)});
        QCOMPARE(with_id(after, "fp8_coverage")[0].severity, Explanation::Severity::Info);
        QVERIFY(with_id(after, "fp8_coverage")[0].sentence.find("1 of the model's 2") !=
                std::string::npos);
        // 3072 x 1008 of the 3072 x 1008 + 1008 x 10 forward FLOPs: 99.7%, not a rounded
        // "100%" beside a layer that stayed out.
        QVERIFY2(with_id(after, "fp8_coverage")[0].sentence.find("in fp8 (E4M3") !=
                     std::string::npos,
                 with_id(after, "fp8_coverage")[0].sentence.c_str());
        QVERIFY2(with_id(after, "fp8_coverage")[0].sentence.find(": 99.7% of its forward") !=
                     std::string::npos,
                 with_id(after, "fp8_coverage")[0].sentence.c_str());
        QCOMPARE(with_id(after, "fp8_layer_out").size(), std::size_t(1));
        // A batch off 16 keeps nothing out: the operands' rows are padded.
        RunFacts odd_batch = facts(Policy::MixedFP8, fixed, 1.0);
        odd_batch.batch = 20;
        QCOMPARE(with_id(explain({odd_batch}), "fp8_layer_out").size(), std::size_t(1));
        // "dtype": "bfloat16" keeps a layer out by the user's choice: no fix offered.
        ModelSpec kept = fixed;
        kept.layers[1].no_fp8 = true;
        const auto k = with_id(explain({facts(Policy::MixedFP8, kept, 1.0)}), "fp8_layer_out");
        QVERIFY2(k[0].sentence.find("kept in bfloat16 by the layer's dtype") != std::string::npos,
                 k[0].sentence.c_str());
        QVERIFY(!k[0].fix);
        // Other policies: silent.
        QVERIFY(with_id(explain({facts(Policy::MixedBF16, spec, 1.0)}), "fp8_coverage").empty());
    }

    // mixed_fp8 against mixed_bf16 on the GPU: the step, the fp8 layers' own time from both
    // profiles and what fp8 does not shrink; the test accuracy against bf16's.
    void fp8SpeedAndAccuracy()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1008});
        RunFacts bf16 = facts(Policy::MixedBF16, spec, 0.60, gpu_device(9, 0));
        RunFacts fp8 = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        bf16.summary.final_test_accuracy = 0.885f;
        fp8.summary.final_test_accuracy = 0.861f;
        auto with_layers = [](double hidden_ms, double out_ms, double rest_ms) {
            StepProfile p;
            p.steps = 10;
            p.device_ms = hidden_ms + out_ms + rest_ms;
            p.layers = {
                {"layer 1", "dense", hidden_ms / 3, 2 * hidden_ms / 3, 0, 0, true, true, ""},
                {"layer 2", "dense", out_ms / 3, 2 * out_ms / 3, 0, 0, true, true, ""}};
            return p;
        };
        bf16.profile = with_layers(0.40, 0.02, 0.18);
        fp8.profile = with_layers(0.25, 0.02, 0.18);
        const auto all = explain({bf16, fp8});
        const auto speed = with_id(all, "fp8_speed");
        QCOMPARE(speed.size(), std::size_t(1));
        QCOMPARE(speed[0].run, 1);
        QVERIFY2(speed[0].sentence.find("0.450 ms a step against mixed_bf16's 0.600 ms (1.33x)") !=
                     std::string::npos,
                 speed[0].sentence.c_str());
        QVERIFY2(speed[0].sentence.find("0.250 ms against 0.400 ms in bfloat16 (1.60x)") !=
                     std::string::npos,
                 speed[0].sentence.c_str());
        const auto acc = with_id(all, "fp8_accuracy");
        QCOMPARE(acc.size(), std::size_t(1));
        QCOMPARE(acc[0].severity, Explanation::Severity::Warning); // 2.4 points lower
        QVERIFY2(acc[0].sentence.find("86.10% test accuracy against mixed_bf16's 88.50%: 2.40 "
                                      "points lower") != std::string::npos,
                 acc[0].sentence.c_str());
        QVERIFY(!acc[0].suggestion.empty());
        // Within half a point: the spread between seeds, said as such.
        fp8.summary.final_test_accuracy = 0.883f;
        const auto close = with_id(explain({bf16, fp8}), "fp8_accuracy");
        QCOMPARE(close[0].severity, Explanation::Severity::Info);
        QVERIFY(close[0].sentence.find("within the spread between seeds") != std::string::npos);
        // No mixed_bf16 run in the group: neither rule has a reference.
        const auto alone = explain({fp8});
        QVERIFY(with_id(alone, "fp8_speed").empty());
        QVERIFY(with_id(alone, "fp8_accuracy").empty());
    }

    // The fp8 layers' achieved TFLOP/s against the device's measured fp8 ceiling, and the
    // bf16 run's same layers against the bf16 ceiling; without ceilings, how to measure them.
    void fp8AgainstCeilings()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1008}); // layer 1 in fp8, layer 2 out
        RunFacts bf16 = facts(Policy::MixedBF16, spec, 0.60, gpu_device(9, 0));
        RunFacts fp8 = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        // Layer 1's FLOPs per step as the profile counts them (analysis/layer_costs.cpp):
        // forward plus the weight gradient, the first layer having no input gradient.
        const auto hidden =
            std::find_if(fp8.graph.layers.begin(), fp8.graph.layers.end(),
                         [](const GraphLayer& l) { return l.spec.type == LayerType::Dense; });
        QCOMPARE(hidden->path, std::string("layer 1"));
        const double flops = 2.0 * 64 * double(hidden->flops);
        auto with_layers = [flops](double hidden_ms) {
            StepProfile p;
            p.steps = 10;
            p.device_ms = hidden_ms + 0.2;
            p.layers = {
                {"layer 1", "dense", hidden_ms / 3, 2 * hidden_ms / 3, flops, 0, true, true, ""},
                {"layer 2", "dense", 0.01, 0.01, 1e6, 0, true, true, ""}};
            return p;
        };
        bf16.profile = with_layers(0.40);
        fp8.profile = with_layers(0.25);
        Ceilings c;
        c.fp8_tflops = 8.0;
        c.bf16_tflops = 4.0;
        bf16.ceilings = fp8.ceilings = c;
        // By hand: TFLOP/s = FLOPs / (ms * 1e9).
        const double fp8_tflops = flops / (0.25 * 1e9), bf16_tflops = flops / (0.40 * 1e9);
        char expected[200];
        std::snprintf(expected, sizeof expected,
                      " The fp8 layers ran at %.1f TFLOP/s, %.0f%% of this GPU's measured fp8 "
                      "ceiling (8 TFLOP/s); in bfloat16 they ran at %.1f TFLOP/s, %.0f%% of its "
                      "bf16 ceiling (4 TFLOP/s).",
                      fp8_tflops, 100.0 * fp8_tflops / 8.0, bf16_tflops, 100.0 * bf16_tflops / 4.0);
        const auto speed = with_id(explain({bf16, fp8}), "fp8_speed");
        QCOMPARE(speed.size(), std::size_t(1));
        QVERIFY2(speed[0].sentence.find(expected) != std::string::npos, speed[0].sentence.c_str());
        QVERIFY(speed[0].sentence.find("mixlab-cli ceilings") == std::string::npos);
        // A device without a bf16 ceiling: the fp8 half alone.
        bf16.ceilings->bf16_tflops = 0;
        const std::string fp8_only = with_id(explain({bf16, fp8}), "fp8_speed")[0].sentence;
        QVERIFY2(fp8_only.find("fp8 ceiling (8 TFLOP/s).") != std::string::npos, fp8_only.c_str());
        QVERIFY(fp8_only.find("bf16 ceiling") == std::string::npos);
        // Ceilings measured, but no fp8 one: nothing to compare with, nothing said.
        fp8.ceilings->fp8_tflops = 0;
        QVERIFY(with_id(explain({bf16, fp8}), "fp8_speed")[0].sentence.find("TFLOP/s") ==
                std::string::npos);
        // No ceilings: how to measure them, in the reader's words.
        fp8.ceilings.reset();
        bf16.ceilings.reset();
        const std::string cli = with_id(explain({bf16, fp8}), "fp8_speed")[0].sentence;
        QVERIFY2(cli.find("Run `mixlab-cli ceilings` to compare the fp8 layers' TFLOP/s with "
                          "this GPU's fp8 ceiling.") != std::string::npos,
                 cli.c_str());
        const std::string app = with_id(explain({bf16, fp8}, Reader::App), "fp8_speed")[0].sentence;
        QVERIFY2(app.find("Help > About > Measure now") != std::string::npos, app.c_str());
        // Without profiles there are no layer times to rate: the ceilings go unmentioned.
        fp8.profile.reset();
        QVERIFY(with_id(explain({bf16, fp8}), "fp8_speed")[0].sentence.find("ceilings") ==
                std::string::npos);
    }

    // The trainer's "fp8 amax jump" warnings, kept by record_event: the first one's tensor
    // and step, how many steps jumped, and what absorbs it; silent without jumps.
    void fp8AmaxJumps()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1008});
        RunFacts fp8 = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        QVERIFY(with_id(explain({fp8}), "fp8_amax").empty());
        const std::string jump = "fp8 amax jump: layer 1 x reached |x| 500, 31.25x the largest "
                                 "of its history (16): its values saturate until the scale "
                                 "follows";
        // Only the jump warnings are kept.
        record_event(fp8, {RunEvent::Kind::Info, 0, "fp8 amax jump: not a warning"});
        record_event(fp8, {RunEvent::Kind::Warning, 3, "gradient overflow"});
        record_event(fp8, {RunEvent::Kind::Warning, 42, jump});
        record_event(fp8, {RunEvent::Kind::Warning, 90, jump});
        QCOMPARE(fp8.fp8_amax_jumps.size(), std::size_t(2));
        const auto ex = with_id(explain({fp8}), "fp8_amax");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].severity, Explanation::Severity::Warning);
        QCOMPARE(ex[0].run, 0);
        QVERIFY2(ex[0].sentence.find("At step 42 an fp8 amax jumped: layer 1 x reached |x| 500, "
                                     "31.25x") == 0,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("In all 2 steps had one.") != std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].suggestion.find("--fp8-history") != std::string::npos &&
                     ex[0].suggestion.find("--fp8-margin 1") != std::string::npos &&
                     ex[0].suggestion.find("keep layer 1 out of fp8") != std::string::npos,
                 ex[0].suggestion.c_str());
        const auto app = with_id(explain({fp8}, Reader::App), "fp8_amax");
        QVERIFY2(app[0].suggestion.find("\"keep out of fp8\" for layer 1") != std::string::npos,
                 app[0].suggestion.c_str());
        // One jump; then the trainer's cap, after which it reports no more.
        RunFacts once = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        record_event(once, {RunEvent::Kind::Warning, 7, jump});
        QVERIFY(with_id(explain({once}), "fp8_amax")[0].sentence.find(
                    "It was the run's only step with a jump.") != std::string::npos);
        RunFacts capped = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        for (int i = 0; i < 20; ++i) record_event(capped, {RunEvent::Kind::Warning, 10 + i, jump});
        record_event(capped, {RunEvent::Kind::Warning, 30,
                              "fp8 amax jump: 20 jumps reported; later ones are not"});
        const std::string s = with_id(explain({capped}), "fp8_amax")[0].sentence;
        QVERIFY2(s.find("More than 20 steps had one; the trainer reported the first 20.") !=
                     std::string::npos,
                 s.c_str());
    }

    // Jumps that carry their facts (RunEvent::fp8_amax_jump, what the trainer reports now):
    // the rule reads the layer and the cap from them, not from the message, so a layer
    // path holding " reached " is named whole and a message worded otherwise changes nothing.
    void fp8AmaxJumpFacts()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1008});
        Fp8AmaxJump jump;
        jump.layer = "layer 1 reached 2";
        jump.operand = Fp8Operand::W;
        jump.amax = 500;
        jump.history_max = 16;
        jump.more_tensors = 2;
        RunFacts fp8 = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        // Kept by their facts whatever the message says; an info event is still no jump.
        record_event(fp8, {RunEvent::Kind::Info, 1, "an info with data", jump});
        record_event(fp8, {RunEvent::Kind::Warning, 42, "the tensor's values leapt", jump});
        record_event(fp8, {RunEvent::Kind::Warning, 90, "", jump});
        QCOMPARE(fp8.fp8_amax_jumps.size(), std::size_t(2));
        const auto ex = with_id(explain({fp8}), "fp8_amax");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].sentence,
                 std::string("At step 42 an fp8 amax jumped: layer 1 reached 2 w reached |x| 500, "
                             "31.25x the largest of its history (16): its values saturate until "
                             "the scale follows (2 more tensors jumped this step). In all 2 "
                             "steps had one."));
        QVERIFY2(ex[0].suggestion.find("keep layer 1 reached 2 out of fp8") != std::string::npos,
                 ex[0].suggestion.c_str());
        const auto app = with_id(explain({fp8}, Reader::App), "fp8_amax");
        QVERIFY2(app[0].suggestion.find("\"keep out of fp8\" for layer 1 reached 2 in") !=
                     std::string::npos,
                 app[0].suggestion.c_str());

        // The cap is its flag, though its message says " reached " and names no jump.
        Fp8AmaxJump stop;
        stop.reports_stopped = true;
        RunFacts capped = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        for (int i = 0; i < 20; ++i)
            record_event(capped, {RunEvent::Kind::Warning, 10 + i, "a jump", jump});
        record_event(capped, {RunEvent::Kind::Warning, 30, "the count reached 20: no more", stop});
        const std::string s = with_id(explain({capped}), "fp8_amax")[0].sentence;
        QVERIFY2(s.find("At step 10 an fp8 amax jumped: layer 1 reached 2 w reached |x| 500") ==
                         0 &&
                     s.find("More than 20 steps had one; the trainer reported the first 20.") !=
                         std::string::npos,
                 s.c_str());
        // A cap alone (a log cut short) names no tensor: nothing to say.
        RunFacts only_cap = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
        record_event(only_cap, {RunEvent::Kind::Warning, 30, "", stop});
        QVERIFY(with_id(explain({only_cap}), "fp8_amax").empty());
    }

    // A log written before the jumps carried their facts: its events hold the message
    // alone. Read back through RunLog::parse, it is explained as the same log with the
    // facts is; and the message's own words, read from their end, name a layer whose
    // path holds " reached " whole.
    void fp8AmaxJumpsOfAnOldLog()
    {
        const ModelSpec spec = test::tiny_mlp({.hidden = 1008});
        RunConfig config;
        config.policy = Policy::MixedFP8;
        config.dataset.name = "synthetic";
        RunLog log;
        log.add_run(config);
        Fp8AmaxJump jump;
        jump.layer = "layer 1 reached 2";
        jump.operand = Fp8Operand::X;
        jump.amax = 500;
        jump.history_max = 16;
        Fp8AmaxJump stop;
        stop.reports_stopped = true;
        // As the trainer reports them: the prefix and the facts' words.
        const auto report = [](std::int64_t step, const Fp8AmaxJump& j) {
            return RunEvent{RunEvent::Kind::Warning, step,
                            "fp8 amax jump: " + fp8_amax_jump_text(j), j};
        };
        log.on_event(0, {RunEvent::Kind::Info, 0, "training under mixed_fp8"});
        log.on_event(0, report(42, jump));
        log.on_event(0, report(90, jump));
        log.on_event(0, report(95, stop));
        nlohmann::json now = nlohmann::json::parse(log.to_json());
        nlohmann::json old = now;
        for (nlohmann::json& e : old["events"]) e.erase("fp8_amax_jump");
        QVERIFY(old != now);

        const auto explained = [&](const nlohmann::json& doc) {
            const RunLog back = RunLog::parse(doc.dump());
            RunFacts f = facts(Policy::MixedFP8, spec, 0.45, gpu_device(9, 0));
            for (const RunEvent& e : back.events(0)) record_event(f, e);
            const auto ex = with_id(explain({f}), "fp8_amax");
            return ex.size() == 1 ? ex[0] : Explanation{};
        };
        const Explanation from_facts = explained(now), from_text = explained(old);
        QCOMPARE(from_text.sentence,
                 std::string("At step 42 an fp8 amax jumped: layer 1 reached 2 x reached |x| 500, "
                             "31.25x the largest of its history (16): its values saturate until "
                             "the scale follows. More than 2 steps had one; the trainer reported "
                             "the first 2."));
        QCOMPARE(from_text.sentence, from_facts.sentence);
        QCOMPARE(from_text.suggestion, from_facts.suggestion);
        QVERIFY2(from_text.suggestion.find("keep layer 1 reached 2 out of fp8") !=
                     std::string::npos,
                 from_text.suggestion.c_str());
    }

    // bf16 safe or not, said once for the group from its fp32 run (no mixed_bf16 run): the
    // layers whose updates bf16 weights lose (d <= -9: below half a bf16 ulp), with shares,
    // and bf16's range; from a mixed_bf16 run when the group has one.
    void numericsBf16()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts fp32 = facts(Policy::FP32, spec, 1.0);
        // layer 1: 30 of 100 updates at d = -9 (lost in bf16, kept in fp16: d > -12);
        // layer 2: 1 of 1000; layer 3: 12 of 100.
        fp32.numerics = {sample_at(10, 1,
                                   {dense("layer 1", values_at({{0, 4}}), values_at({{-10, 4}}),
                                          updates_at({{-9, 30}, {-5, 70}})),
                                    dense("layer 2", values_at({{0, 4}}), values_at({{-10, 4}}),
                                          updates_at({{-9, 1}, {-3, 999}})),
                                    dense("layer 3", values_at({{0, 4}}), values_at({{-10, 4}}),
                                          updates_at({{-9, 12}, {-3, 88}}))})};
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.5);
        mixed.numerics = fp32.numerics;
        auto ex = with_id(explain({fp32, mixed}), "numerics_bf16");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 0);
        QCOMPARE(ex[0].severity, Explanation::Severity::Info);
        QVERIFY2(ex[0].sentence.find("bf16 weights would lose 30.00% of the updates in layer 1 "
                                     "(dense), 12.00% in layer 3 (dense) and under 1.00% in 1 "
                                     "other layer: ") == 0,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("\"master_weights\": \"bf16_split\"") != std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("Without such masters bf16 weights are not safe for this "
                                     "model.") != std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("bf16's range (fp32's exponent) holds this run's activations "
                                     "and gradients: none would overflow or flush to zero.") !=
                     std::string::npos,
                 ex[0].sentence.c_str());
        // The fp16 lost-updates rule does not repeat bf16's share.
        for (const Explanation& e : with_id(explain({fp32}), "numerics_lost_updates"))
            QVERIFY2(e.sentence.find("bf16") == std::string::npos, e.sentence.c_str());

        // A mixed_bf16 run is the one asked; activations at 2^-140 flush in bf16 (<= 2^-135):
        // 1 of 4, and gradients at 2^-136: 2 of 4.
        RunFacts bf16 = facts(Policy::MixedBF16, spec, 0.5);
        bf16.numerics = {
            sample_at(10, 1,
                      {dense("layer 1", values_at({{0, 3}, {-140, 1}}),
                             values_at({{-10, 2}, {-136, 2}}), updates_at({{-9, 1}, {-5, 199}}))})};
        ex = with_id(explain({fp32, bf16}), "numerics_bf16");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1);
        QCOMPARE(ex[0].severity, Explanation::Severity::Advice);
        QVERIFY2(ex[0].sentence.find("bf16 weights would lose at most 0.50% of the updates in a "
                                     "layer (layer 1)") == 0,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("For the updates, bf16 is safe for this model.") !=
                     std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("bf16's range would flush 25.00% and overflow 0 of this run's "
                                     "activations, and flush 50.00% and overflow 0 of its "
                                     "unscaled gradients.") != std::string::npos,
                 ex[0].sentence.c_str());
        QVERIFY(!ex[0].suggestion.empty());
        // Only a pure fp16 run (its weights lost updates already): not asked.
        RunFacts fp16 = facts(Policy::FP16, spec, 0.5);
        fp16.numerics = fp32.numerics;
        QVERIFY(with_id(explain({fp16}), "numerics_bf16").empty());
        QVERIFY(with_id(explain({facts(Policy::FP32, spec, 1.0)}), "numerics_bf16").empty());
    }

    // An fp32 run answers "what would fp16 do": at scale 1, and with the scale the group's
    // mixed_fp16 run used at the same steps (2^16, then 2^15 from step 15).
    void numericsFp32AgainstMixedScale()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts fp32 = facts(Policy::FP32, spec, 1.0);
        // Gradients: two at 2^-30 (flushed at scale 1: <= 2^-26), one at 2^-10, one at 2^0
        // (overflows at 2^16, not at 2^15).
        const ValueHistogram g = values_at({{-30, 2}, {-10, 1}, {0, 1}});
        fp32.numerics = {sample_at(10, 1, {dense("layer 1", values_at({{0, 1}}), g)})};
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.5);
        mixed.scale_history = {{1, 65536.0f}, {15, 32768.0f}};
        auto ex = with_id(explain({fp32, mixed}), "numerics_loss_scaling");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 0);
        QVERIFY2(ex[0].sentence.find("At loss scale 1, fp16 would flush 50.00% of this run's "
                                     "gradients to zero and hold 0 as subnormals (1 samples, "
                                     "steps 10-10); with the scale run 1 (mixed_fp16) used at the "
                                     "same steps (65536) 0 would flush and 25.00% overflow. Loss "
                                     "scaling is needed for fp16 here.") == 0,
                 ex[0].sentence.c_str());
        // Two samples, one under each scale: 2^0 overflows only at step 10's 2^16.
        fp32.numerics.push_back(sample_at(20, 1, {dense("layer 1", values_at({{0, 1}}), g)}));
        ex = with_id(explain({fp32, mixed}), "numerics_loss_scaling");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("with the scale run 1 (mixed_fp16) used at the same steps "
                                     "(32768 to 65536) 0 would flush and 12.50% overflow.") !=
                     std::string::npos,
                 ex[0].sentence.c_str());
        // Alone, the fp32 run says scale 1 only.
        ex = with_id(explain({fp32}), "numerics_loss_scaling");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("with the scale run") == std::string::npos,
                 ex[0].sentence.c_str());
    }

    // Pure fp16: the layer losing the most and the first sampled step at which its share
    // reached the limit (1%): 0.5% at step 10, 5% at step 20.
    void numericsLostUpdatesFromStep()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts fp16 = facts(Policy::FP16, spec, 1.0);
        fp16.numerics = {sample_at(10, 1,
                                   {dense("layer 1", values_at({{0, 1}}), values_at({{-10, 1}}),
                                          updates_at({{-5, 1000}})),
                                    dense("layer 2", values_at({{0, 1}}), values_at({{-10, 1}}),
                                          updates_at({{-5, 995}}, 5))}),
                         sample_at(20, 1,
                                   {dense("layer 1", values_at({{0, 1}}), values_at({{-10, 1}}),
                                          updates_at({{-5, 1000}})),
                                    dense("layer 2", values_at({{0, 1}}), values_at({{-10, 1}}),
                                          updates_at({{-5, 950}, {-12, 20}}, 30))})};
        const auto ex = with_id(explain({fp16}), "numerics_lost_updates");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].severity, Explanation::Severity::Warning);
        QVERIFY2(ex[0].sentence.find("Pure fp16 weights lost 2.75% of the updates in layer 2 "
                                     "(dense) (from step 20)") == 0,
                 ex[0].sentence.c_str());
        // Runs with master weights say what fp16 weights would do once for the group (its
        // fp32 run); the pure fp16 run says what its weights did.
        RunFacts fp32 = facts(Policy::FP32, spec, 1.0);
        fp32.numerics = fp16.numerics;
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.5);
        mixed.numerics = fp16.numerics;
        const auto group = with_id(explain({mixed, fp32, fp16}), "numerics_lost_updates");
        QCOMPARE(group.size(), std::size_t(2));
        QCOMPARE(group[0].run, 1);
        QCOMPARE(group[0].severity, Explanation::Severity::Info);
        QVERIFY2(group[0].sentence.find("Pure fp16 weights would lose 2.75% of the updates in "
                                        "layer 2 (dense)") == 0,
                 group[0].sentence.c_str());
        QCOMPARE(group[1].run, 2);
    }

    // fp8 headroom per layer: layer 1's gradients span 41 binades (2^-40..2^0, 100 values
    // each), wider than E5M2's 33 and E4M3's 19; layer 2's 21 fit E5M2. Activations 10
    // binades fit both. Losses at the best shift: 22 of 41 binades out of E4M3's window,
    // 8 out of E5M2's; layer 2: 2 of 21 out of E4M3's.
    void numericsFp8Headroom()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        auto uniform = [](int lo, int hi) {
            ValueHistogram h;
            for (int e = lo; e <= hi; ++e) h.binades[std::size_t(e - k_numerics_binade_min)] = 100;
            return h;
        };
        RunFacts fp32 = facts(Policy::FP32, spec, 1.0);
        fp32.numerics = {sample_at(10, 1,
                                   {dense("layer 1", uniform(0, 9), uniform(-40, 0)),
                                    dense("layer 2", uniform(0, 9), uniform(-20, 0))})};
        RunFacts mixed = facts(Policy::MixedFP16, spec, 0.5);
        mixed.numerics = fp32.numerics;
        const auto ex = with_id(explain({mixed, fp32}), "numerics_fp8_headroom");
        QCOMPARE(ex.size(), std::size_t(1));
        QCOMPARE(ex[0].run, 1); // the fp32 run's values
        const std::string& s = ex[0].sentence;
        QVERIFY2(s.find("E4M3's 19 and E5M2's 33") != std::string::npos, s.c_str());
        QVERIFY2(s.find("layer 1 (dense): activations 10 binades (E4M3 fits, 0 lost; E5M2 fits, "
                        "0 lost), gradients 41 binades (E4M3 does not fit, 53.66% lost; E5M2 "
                        "does not fit, 19.51% lost); layer 2 (dense): activations 10 binades "
                        "(E4M3 fits, 0 lost; E5M2 fits, 0 lost), gradients 21 binades (E4M3 "
                        "does not fit, 9.52% lost; E5M2 fits, 0 lost).") != std::string::npos,
                 s.c_str());
        QVERIFY2(s.find("With E4M3 activations and E5M2 gradients layer 2 fits; layer 1 does "
                        "not.") != std::string::npos,
                 s.c_str());
    }

    // tf32: the mantissa note, only for a tf32 run with numerics, with fp16's shares of its
    // values: one of four activations at 2^20 (overflows fp16), one of two gradients at
    // 2^-30 (flushes).
    void numericsTf32()
    {
        const ModelSpec spec = test::tiny_mlp(k_small);
        RunFacts tf32 = facts(Policy::TF32, spec, 1.0);
        tf32.numerics = {sample_at(
            10, 1,
            {dense("layer 1", values_at({{0, 3}, {20, 1}}), values_at({{-30, 1}, {-5, 1}}))})};
        auto ex = with_id(explain({tf32}), "numerics_tf32");
        QCOMPARE(ex.size(), std::size_t(1));
        QVERIFY2(ex[0].sentence.find("tf32 rounds the GEMM inputs (activations and weights) to 10 "
                                     "fraction bits, fp16's precision") == 0,
                 ex[0].sentence.c_str());
        QVERIFY2(ex[0].sentence.find("in fp16's range 25.00% of this run's activations would "
                                     "overflow or flush and 50.00% of its gradients flush at "
                                     "scale 1; in tf32 none do.") != std::string::npos,
                 ex[0].sentence.c_str());
        RunFacts fp32 = tf32;
        fp32.policy = Policy::FP32;
        QVERIFY(with_id(explain({fp32}), "numerics_tf32").empty());
        tf32.numerics.clear();
        QVERIFY(with_id(explain({tf32}), "numerics_tf32").empty());
    }

    // The real binary on the CPU: a sigmoid output left in fp16 under mixed_fp16.
    void cliEndToEnd()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString model = dir.filePath("sigmoid.json");
        const QString out = dir.filePath("out.json");
        {
            QFile f(model);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"format": "mixlab-model/1", "name": "sig", "layers": [
                {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
                {"type": "dense", "units": 10, "activation": "sigmoid"}]})");
        }
        QProcess p;
        p.start(QStringLiteral(MIXLAB_CLI_PATH),
                {"explain", "--model", model, "--dataset", "synthetic", "--synthetic-size", "256",
                 "--steps", "20", "--batch", "32", "--device", "cpu", "--json", out});
        QVERIFY(p.waitForStarted(10000));
        QVERIFY(p.waitForFinished(60000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        const QString stdout_text = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(err));
        QVERIFY2(stdout_text.contains("mixed_fp16") && stdout_text.contains("[advice]"),
                 qPrintable(stdout_text));

        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray runs = doc["runs"].toArray();
        QCOMPARE(runs.size(), 2);
        QCOMPARE(runs[0].toObject()["policy"].toString(), QString("fp32"));
        QCOMPARE(doc["format"].toString(), QString::fromStdString(std::string(k_explain_format)));
        QCOMPARE(runs[1].toObject()["summary"].toObject()["steps"].toInt(), 20);
        QCOMPARE(runs[0].toObject()["device"].toObject()["backend"].toString(), QString("cpu"));
        QStringList ids;
        for (const auto& e : doc["explanations"].toArray()) ids << e.toObject()["id"].toString();
        QVERIFY2(ids.contains("sigmoid_output"), qPrintable(ids.join(",")));
        QVERIFY2(ids.contains("output_float32"), qPrintable(ids.join(",")));
        QVERIFY2(ids.contains("cpu_backend"), qPrintable(ids.join(",")));
        // The fixes as the JSON has always written them: kind, the layer's path (empty for
        // a run setting) and the value as a string.
        for (const auto& v : doc["explanations"].toArray()) {
            const QJsonObject e = v.toObject();
            const QString id = e["id"].toString();
            if (id == "sigmoid_output")
                QCOMPARE(e["apply"].toObject(), QJsonObject({{"kind", "set_activation"},
                                                             {"path", "layer 2"},
                                                             {"value", "softmax"}}));
            else if (id == "output_float32")
                QCOMPARE(e["apply"].toObject(),
                         QJsonObject(
                             {{"kind", "set_dtype_float32"}, {"path", "layer 2"}, {"value", ""}}));
            else if (id == "cpu_backend")
                QVERIFY(!e.contains("apply"));
        }
        // The profiling pass: every phase per run, summing to the profiled step, and the
        // top-level layers (flatten, dense, dense).
        for (const auto& v : runs) {
            const QJsonObject p = v.toObject()["profile"].toObject();
            const QJsonObject ms = p["phases_ms"].toObject();
            QCOMPARE(ms.size(), k_step_phases);
            double sum = 0;
            for (const auto& m : ms) {
                QVERIFY(m.toDouble() >= 0);
                sum += m.toDouble();
            }
            const double span = p["sum_of_phases_ms"].toDouble();
            QVERIFY2(span > 0 && std::abs(sum - span) <= 1e-6 + 1e-3 * span,
                     qPrintable(QString("phases %1 vs span %2").arg(sum).arg(span)));
            QVERIFY(p["wall_ms_per_step"].toDouble() > 0);
            const double busy = p["gpu_busy_fraction"].toDouble();
            QVERIFY(busy > 0 && busy <= 1.0);
            QCOMPARE(p["layers"].toArray().size(), 3);
        }
        // The file reads back through the engine's readers, and each run's profile is
        // step_profile.h's form key for key, value for value.
        f.seek(0);
        const std::string text = f.readAll().toStdString();
        const ExplainDocument read = parse_explain_json(text);
        QCOMPARE(read.runs.size(), std::size_t(2));
        QCOMPARE(read.runs[1].policy, Policy::MixedFP16);
        QCOMPARE(read.runs[0].device.backend, BackendKind::Cpu);
        QCOMPARE(read.explanations.size(), std::size_t(doc["explanations"].toArray().size()));
        const nlohmann::json written = nlohmann::json::parse(text);
        for (std::size_t i = 0; i < read.runs.size(); ++i) {
            QVERIFY(read.runs[i].profile.has_value());
            const nlohmann::json profile =
                nlohmann::json::parse(step_profile_to_json(*read.runs[i].profile).dump());
            QVERIFY2(profile == written["runs"][i]["profile"],
                     nlohmann::json::diff(written["runs"][i]["profile"], profile).dump().c_str());
            // The scale history is the recorder's: the first step's scale at least.
            QVERIFY(!read.runs[i].scale_history.empty());
            QCOMPARE(read.runs[i].scale_history.front().first, std::int64_t(1));
        }
    }

    // `mixlab-cli explain --json` as MixLab 0.1.0 wrote it (mixlab-explain/1: summary numbers
    // flat in each run, profiles apart in phase_breakdown) reads into the same facts.
    void oldExplainReads()
    {
        const std::string text = test::format_v1_text("cli-explain.json");
        QVERIFY(!text.empty());
        const nlohmann::json file = nlohmann::json::parse(text);
        const ExplainDocument read = parse_explain_json(text);
        QCOMPARE(read.runs.size(), std::size_t(2));
        QCOMPARE(read.runs[0].policy, Policy::FP32);
        QCOMPARE(read.runs[1].policy, Policy::MixedFP16);
        QCOMPARE(read.runs[1].loss_scale_mode, LossScaleMode::Dynamic);
        for (std::size_t i = 0; i < 2; ++i) {
            const RunFacts& f = read.runs[i];
            const nlohmann::json& run = file["runs"][i];
            const nlohmann::json& phases = file["phase_breakdown"][i];
            QCOMPARE(f.device.backend, BackendKind::Cpu); // written as the enum's number, 0
            QCOMPARE(f.device.name, run["device"].get<std::string>());
            QCOMPARE(f.batch, 32);
            QCOMPARE(f.summary.steps, std::int64_t(10));
            QCOMPARE(f.summary.median_step_ms, run["median_step_ms"].get<double>());
            QCOMPARE(f.summary.final_loss_scale, float(run["final_loss_scale"].get<double>()));
            QVERIFY(f.summary.final_test_accuracy.has_value());
            QVERIFY(f.profile.has_value());
            QCOMPARE(f.profile->steps, phases["profiled_steps"].get<int>());
            QCOMPARE(f.profile->device_ms, phases["sum_of_phases_ms"].get<double>());
            QCOMPARE(f.profile->layers.size(), phases["layers"].size());
            QCOMPARE(f.profile->layers[1].bytes,
                     phases["layers"][1]["bytes_estimate"].get<double>());
            // The profile is the same keys now: what it wrote, less the run's policy.
            nlohmann::json expected = phases;
            expected.erase("policy");
            const nlohmann::json now =
                nlohmann::json::parse(step_profile_to_json(*f.profile).dump());
            QVERIFY2(now == expected, nlohmann::json::diff(expected, now).dump().c_str());
        }
        QCOMPARE(read.explanations.size(), file["explanations"].size());
        for (std::size_t i = 0; i < read.explanations.size(); ++i) {
            QCOMPARE(read.explanations[i].id, file["explanations"][i]["id"].get<std::string>());
            QCOMPARE(read.explanations[i].sentence,
                     file["explanations"][i]["sentence"].get<std::string>());
        }
        QVERIFY(read.explanations[2].fix);
        QCOMPARE(read.explanations[2].fix->kind, FixKind::SetDtypeFloat32);
        // Written again as version 2, it reads back the same.
        const std::string again = explain_to_json(read.runs, read.explanations);
        const ExplainDocument reread = parse_explain_json(again);
        QCOMPARE(explain_to_json(reread.runs, reread.explanations), again);
    }
};

QTEST_APPLESS_MAIN(TestExplain)
#include "tst_explain.moc"
