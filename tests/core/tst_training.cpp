// Training runs end to end on the CPU backend: learning on real data, identical starts
// across policies, lockstep compare (RunGroup), stop, and the loss scaler seen from the
// trainer.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_group.h"
#include "mixlab/step_time.h"
#include "mixlab/trainer.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <stop_token>

using namespace mixlab;

namespace {

// Records everything a run reports.
struct RecordingSink : MetricsSink {
    std::vector<std::vector<StepMetrics>> steps = std::vector<std::vector<StepMetrics>>(4);
    std::vector<std::vector<EpochMetrics>> epochs = std::vector<std::vector<EpochMetrics>>(4);
    std::vector<RunEvent> events;
    std::stop_source* stop = nullptr;
    std::int64_t stop_after = -1;
    void on_step(int run, const StepMetrics& m) override
    {
        steps[std::size_t(run)].push_back(m);
        if (stop && std::int64_t(steps[std::size_t(run)].size()) == stop_after)
            stop->request_stop();
    }
    void on_epoch(int run, const EpochMetrics& m) override
    {
        epochs[std::size_t(run)].push_back(m);
    }
    void on_event(int, const RunEvent& e) override { events.push_back(e); }
    int count(RunEvent::Kind k) const
    {
        return int(std::count_if(events.begin(), events.end(),
                                 [k](const RunEvent& e) { return e.kind == k; }));
    }
};

ModelSpec small_mlp(Activation out = Activation::Softmax)
{
    ModelSpec spec;
    spec.name = "test-mlp";
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    LayerSpec d1;
    d1.units = 64;
    d1.activation = Activation::Relu;
    LayerSpec d2;
    d2.units = 10;
    LayerSpec act;
    act.type = LayerType::Activation;
    act.activation = out;
    act.force_fp32 = true;
    spec.layers = {flatten, d1, d2, act};
    return spec;
}

RunConfig cpu_config(Policy policy, int batch, std::int64_t steps)
{
    RunConfig c;
    c.policy = policy;
    c.batch_size = batch;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.optimizer.lr = 0.01f;
    c.optimizer.momentum = 0.9f;
    return c;
}

Graph graph_for(const ModelSpec& spec, const Dataset& data)
{
    return build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
}

// A synthetic data set on the CPU backend and the small MLP's graph for it: what every
// run below trains on.
struct SyntheticRig {
    Dataset data;
    std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev;
    Graph graph;

    SyntheticRig(std::int64_t n_train, std::int64_t n_test, std::uint64_t seed,
                 Activation out = Activation::Softmax)
        : data(make_synthetic(n_train, n_test, seed)), dev(data, *backend),
          graph(graph_for(small_mlp(out), data))
    {}
    // Returned as a prvalue, so the (immovable) run is built in place.
    TrainingRun run(const RunConfig& config, int run_index = 0)
    {
        return TrainingRun(graph, config, dev, *backend, run_index);
    }
};

// Runs of a group (RunGroup: the engine's one lockstep loop) of the small MLP on a
// synthetic set of n_train + n_test samples drawn with `seed`, which also seeds the weights.
std::vector<RunConfig> group_configs(std::vector<RunConfig> configs, std::int64_t n_train,
                                     std::int64_t n_test, std::uint64_t seed)
{
    for (RunConfig& c : configs) {
        c.dataset.name = "synthetic";
        c.dataset.synthetic_train = n_train;
        c.dataset.synthetic_test = n_test;
        c.seed = seed;
    }
    return configs;
}

} // namespace

class TestTraining : public QObject {
    Q_OBJECT
private slots:
    void learnsFashionMnist();
    void policiesStartFromTheSameWeights();
    void emulatedMixedTracksFp32();
    void lockstepAdvancesEveryRun();
    void stopTokenEndsTheRun();
    void headlineStepTime();
    void hugeLossScaleBacksOffAndSkips();
    void sigmoidHeadWarnsAndTrains();
    void profilePassAddsUp();
    void nonFiniteLossStopsWhenAsked();
    void splitMastersTrainAsFp32Masters();
};

// "bf16_split" under mixed_bf16 on the CPU: the same run as fp32 masters, bit for bit,
// for as long as no weight sits exactly on a bf16 tie whose kept bit is even (there the
// split's GEMM weight is one ulp further from zero than the cast's, hd_math.h, and from
// then on the runs differ by rounding). A weight with a full mantissa lands on one about
// once in 2^17 per step, so the model is tiny (208 weights): this seed's 12 steps are
// tie-free, and a tie would fail the count below instead of passing unchecked. No biases:
// a bias's first update from zero is lr times a sum of a few bf16 products, a short
// mantissa that hits a tie far more often (here bias 0 did at step 1).
void TestTraining::splitMastersTrainAsFp32Masters()
{
    SyntheticRig rig(640, 64, 13);
    ModelSpec spec;
    spec.name = "tiny";
    LayerSpec pool;
    pool.type = LayerType::GlobalAvgPool;
    LayerSpec d1;
    d1.units = 16;
    d1.activation = Activation::Relu;
    d1.use_bias = false;
    LayerSpec d2;
    d2.units = 10;
    d2.use_bias = false;
    LayerSpec act;
    act.type = LayerType::Activation;
    act.activation = Activation::Softmax;
    act.force_fp32 = true;
    spec.layers = {pool, d1, d2, act};
    const Graph graph = graph_for(spec, rig.data);
    QCOMPARE(graph.total_params, std::int64_t(3 * 16 + 16 * 10));
    RunConfig fp32 = cpu_config(Policy::MixedBF16, 32, 12);
    fp32.optimizer.lr = 0.5f; // large steps: the weights' low bits change every step
    RunConfig split = fp32;
    split.optimizer.master_weights = MasterWeights::Bf16Split;
    TrainingRun a(graph, fp32, rig.dev, *rig.backend, 0);
    TrainingRun b(graph, split, rig.dev, *rig.backend, 1);
    auto even_tie = [](const std::vector<float>& p) {
        return std::any_of(p.begin(), p.end(), [](float w) {
            return (std::bit_cast<std::uint32_t>(w) & 0x1FFFFu) == 0x8000u;
        });
    };
    auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
        return x.size() == y.size() &&
               std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
    };
    std::vector<float> pa = a.read_parameters(), pb = b.read_parameters();
    QVERIFY(same(pa, pb));
    bool tie = even_tie(pa);
    int identical = 0;
    RecordingSink sink;
    while (!a.finished() && !tie) {
        a.step(sink);
        b.step(sink);
        pa = a.read_parameters();
        pb = b.read_parameters();
        QVERIFY2(same(pa, pb), qPrintable(QString("step %1").arg(identical + 1)));
        ++identical;
        tie = even_tie(pa);
    }
    QCOMPARE(identical, 12);
    a.finish(sink, false);
    b.finish(sink, false);
    QCOMPARE(sink.steps[0].size(), std::size_t(12));
    QCOMPARE(sink.steps[1].size(), std::size_t(12));
    for (std::size_t i = 0; i < 12; ++i) QCOMPARE(sink.steps[1][i].loss, sink.steps[0][i].loss);
    QVERIFY(sink.steps[0].back().loss < sink.steps[0].front().loss); // it did train
    // The layer text names the scheme.
    const auto lines = b.describe();
    QVERIFY(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
        return l.find("split fp32 master") != std::string::npos;
    }));
}

// A learning rate that blows the weights up within a few steps: by default the run warns
// once and trains to the end; with stop_on_non_finite_loss it ends with the step named.
void TestTraining::nonFiniteLossStopsWhenAsked()
{
    SyntheticRig rig(640, 64, 9);
    RunConfig c = cpu_config(Policy::FP32, 32, 40);
    c.optimizer.lr = 1e30f;
    {
        TrainingRun run = rig.run(c);
        RecordingSink sink;
        const RunSummary s = train(run, sink);
        QCOMPARE(s.steps, std::int64_t(40));
        QVERIFY(s.halted.empty());
        QCOMPARE(sink.count(RunEvent::Kind::Warning), 1);
    }
    c.stop_on_non_finite_loss = true;
    TrainingRun run = rig.run(c);
    RecordingSink sink;
    const RunSummary s = train(run, sink);
    QVERIFY2(!s.halted.empty(), "the run did not stop itself");
    QVERIFY(s.stopped);
    QVERIFY2(s.steps < 40, qPrintable(QString("ran %1 steps").arg(s.steps)));
    QCOMPARE(sink.count(RunEvent::Kind::Error), 1);
    const auto err = std::find_if(sink.events.begin(), sink.events.end(), [](const RunEvent& e) {
        return e.kind == RunEvent::Kind::Error;
    });
    // The first non-finite loss is the step the message names.
    std::int64_t first_bad = 0;
    for (const StepMetrics& m : sink.steps[0])
        if (!std::isfinite(m.loss)) {
            first_bad = m.step;
            break;
        }
    QVERIFY(first_bad > 0);
    QCOMPARE(err->step, first_bad);
    QVERIFY2(err->message.find("at step " + std::to_string(first_bad)) != std::string::npos,
             err->message.c_str());
}

// The profiling pass after a run: every phase and every top-level layer timed, the
// phases adding up to the profiled step, the layers' forward and backward inside the
// forward and backward phases, and its steps counted as extra steps of the run.
void TestTraining::profilePassAddsUp()
{
    SyntheticRig rig(400, 64, 7);
    TrainingRun run = rig.run(cpu_config(Policy::MixedFP16, 32, 12));
    RecordingSink sink;
    train(run, sink);
    QCOMPARE(run.steps_done(), std::int64_t(12));
    const StepProfile p = run.profile(sink, 3);
    QCOMPARE(p.steps, 3);
    QVERIFY(!p.replayed);                                     // the CPU backend runs op by op
    QCOMPARE(run.steps_done(), std::int64_t(12 + 3 * 3 + 3)); // 3 passes + wall warm-up
    double sum = 0;
    for (double ms : p.phase_ms) {
        QVERIFY(ms >= 0);
        sum += ms;
    }
    QVERIFY(p.device_ms > 0);
    // Adjacent events: the phases tile the step (float rounding of each difference only).
    QVERIFY2(std::abs(sum - p.device_ms) <= 1e-3 * p.device_ms + 1e-4,
             qPrintable(QString("phases %1 ms, step %2 ms").arg(sum).arg(p.device_ms)));
    // flatten, dense, dense; the softmax is folded into the loss (no node of its own)
    QCOMPARE(p.layers.size(), std::size_t(3));
    QCOMPARE(QString::fromStdString(p.layers[1].path), QString("layer 1"));
    QCOMPARE(QString::fromStdString(p.layers[1].type), QString("dense"));
    double fwd = 0, bwd = 0;
    for (const LayerTime& l : p.layers) {
        fwd += l.forward_ms;
        bwd += l.backward_ms;
    }
    // Layers and phases are timed in separate passes (events cost time inside a replayed
    // graph), so on a busy CPU they are not comparable to each other: each pass is
    // checked on its own (the phases above, the layers here).
    QVERIFY(fwd > 0 && bwd > 0);
    QVERIFY(p.layers[1].flops > 0 && p.layers[1].bytes > 0);
    QVERIFY(p.layers[1].forward_ms > 0 && p.layers[1].backward_ms > 0);
    QVERIFY(p.wall_ms > 0 && p.step_ms > 0);
    QVERIFY(p.gpu_busy_fraction > 0 && p.gpu_busy_fraction <= 1.0);
}

void TestTraining::learnsFashionMnist()
{
    if (!std::filesystem::exists(std::string(k_debian_fashion_mnist_dir)))
        QSKIP("Debian's dataset-fashion-mnist is not installed");
    DatasetOptions opts;
    opts.name = "fashion-mnist";
    const Dataset data = load_dataset(opts, 1);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    RunConfig config = cpu_config(Policy::FP32, 128, 0);
    config.epochs = 1;
    const Graph graph = graph_for(small_mlp(), data);
    TrainingRun run(graph, config, dev, *backend);
    RecordingSink sink;
    const RunSummary summary = train(run, sink);
    QCOMPARE(summary.steps, std::int64_t(60000 / 128));
    QCOMPARE(int(sink.epochs[0].size()), 1);
    // One epoch of a 64-unit MLP reaches ~84% on Fashion-MNIST; 80% leaves room for
    // seed-to-seed spread while still failing for a model that does not learn.
    QVERIFY(summary.final_test_accuracy.has_value());
    QVERIFY2(*summary.final_test_accuracy >= 0.80f,
             qPrintable(QString("test accuracy %1").arg(*summary.final_test_accuracy)));
    const auto& s = sink.steps[0];
    QVERIFY(s.back().loss < s.front().loss * 0.5f);
}

void TestTraining::policiesStartFromTheSameWeights()
{
    RunGroup group(small_mlp(), group_configs({cpu_config(Policy::FP32, 32, 4),
                                               cpu_config(Policy::MixedFP16, 32, 4),
                                               cpu_config(Policy::MixedBF16, 32, 4)},
                                              512, 128, 3));
    // Read as training begins: every run set up, none stepped.
    struct Weights : RunGroupObserver {
        RunGroup* group = nullptr;
        std::vector<std::vector<float>> params;
        void on_phase(GroupPhase phase, int) override
        {
            if (phase != GroupPhase::Training) return;
            for (int i = 0; i < group->size(); ++i)
                params.push_back(group->training_run(i)->read_parameters());
        }
    } weights;
    weights.group = &group;
    RecordingSink sink;
    group.run(sink, weights);
    QCOMPARE(weights.params.size(), std::size_t(3));
    const auto &pa = weights.params[0], &pb = weights.params[1], &pc = weights.params[2];
    QCOMPARE(pa.size(), pb.size());
    QVERIFY(pa == pb); // fp32 masters are bit-identical
    QVERIFY(pa == pc);
    // And the first step sees the same batch: losses agree to fp16 activation rounding.
    const float la = sink.steps[0][0].loss, lb = sink.steps[1][0].loss, lc = sink.steps[2][0].loss;
    QVERIFY2(std::abs(la - lb) <= 1e-2f * la, qPrintable(QString("%1 vs %2").arg(la).arg(lb)));
    QVERIFY2(std::abs(la - lc) <= 3e-2f * la, qPrintable(QString("%1 vs %2").arg(la).arg(lc)));
}

void TestTraining::emulatedMixedTracksFp32()
{
    RunGroup group(small_mlp(), group_configs({cpu_config(Policy::FP32, 64, 96),
                                               cpu_config(Policy::MixedFP16, 64, 96)},
                                              2048, 512, 5));
    RecordingSink sink;
    RunGroupObserver quiet;
    const GroupOutcome out = group.run(sink, quiet);
    const RunSummary &s32 = out.runs[0].summary, &s16 = out.runs[1].summary;
    QCOMPARE(s32.steps, std::int64_t(96));
    QCOMPARE(s16.steps, std::int64_t(96));
    QVERIFY(s32.final_test_accuracy && s16.final_test_accuracy);
    const float acc32 = *s32.final_test_accuracy, acc16 = *s16.final_test_accuracy;
    QVERIFY(acc32 > 0.3f); // well above chance (0.1)
    QVERIFY2(std::abs(acc32 - acc16) < 0.05f,
             qPrintable(QString("fp32 %1 mixed %2").arg(acc32).arg(acc16)));
    // The dynamic scaler starts at 2^16 under mixed_fp16; no scaling under fp32.
    QCOMPARE(sink.steps[1][0].loss_scale, 65536.0f);
    QCOMPARE(sink.steps[0][0].loss_scale, 1.0f);
}

void TestTraining::lockstepAdvancesEveryRun()
{
    RunConfig two_epochs = cpu_config(Policy::FP32, 32, 0);
    two_epochs.epochs = 2;
    RunGroup group(small_mlp(),
                   group_configs({two_epochs, cpu_config(Policy::FP16, 32, 5)}, 256, 64, 7));
    RecordingSink sink;
    RunGroupObserver quiet;
    group.run(sink, quiet);
    QCOMPARE(int(sink.steps[0].size()), 16);
    QCOMPARE(int(sink.steps[1].size()), 5);
    QCOMPARE(int(sink.epochs[0].size()), 2);
    QCOMPARE(int(sink.epochs[1].size()), 1); // the partial epoch is evaluated at the end
    for (std::size_t i = 0; i < sink.steps[0].size(); ++i)
        QCOMPARE(sink.steps[0][i].step, std::int64_t(i + 1));
    QCOMPARE(sink.steps[0].back().epoch, 2);
}

void TestTraining::stopTokenEndsTheRun()
{
    SyntheticRig rig(1024, 64, 9);
    TrainingRun run = rig.run(cpu_config(Policy::FP32, 16, 1000));
    RecordingSink sink;
    std::stop_source source;
    sink.stop = &source;
    sink.stop_after = 3;
    const RunSummary s = train(run, sink, source.get_token());
    QVERIFY(s.stopped);
    QVERIFY(s.steps < 20); // reported steps trail launched ones by the ring's lag
    QCOMPARE(s.steps, run.steps_done());
    // Stopped inside its first epoch: the test split was never evaluated, and the summary
    // says so instead of reporting 0% accuracy.
    QVERIFY(sink.epochs[0].empty());
    QVERIFY(!s.final_test_accuracy.has_value());
    QVERIFY(!s.final_test_loss.has_value());
    // The headline step time is the median of the steps after the warm-up, as the CLI,
    // the app and the report show it.
    std::vector<float> ms;
    for (const StepMetrics& m : sink.steps[0]) ms.push_back(m.step_ms);
    QCOMPARE(s.median_step_ms, headline_step_ms(ms));
}

void TestTraining::headlineStepTime()
{
    // Warm-up steps 50x slower, then times whose median is known: the headline ignores the
    // first k_warmup_steps, the mean would not.
    std::vector<float> ms(std::size_t(k_warmup_steps), 500.0f);
    const std::vector<float> timed = {3.0f, 9.0f, 1.0f, 4.0f, 2.0f};
    ms.insert(ms.end(), timed.begin(), timed.end());
    QCOMPARE(headline_step_ms(ms), 3.0);
    ms.push_back(100.0f); // six timed steps: the upper of the two middle ones
    QCOMPARE(headline_step_ms(ms), 4.0);
    // No more steps than the warm-up: the median of all of them.
    QCOMPARE(headline_step_ms(std::vector<float>{7.0f, 1.0f, 5.0f}), 5.0);
    QCOMPARE(headline_step_ms(std::vector<float>{}), 0.0);
    QCOMPARE(speedup(10.0, 8.0), 1.25);
    QCOMPARE(speedup(10.0, 12.5), 0.8);
    QCOMPARE(speedup(0.0, 8.0), 0.0);
    QCOMPARE(speedup(10.0, 0.0), 0.0);
}

void TestTraining::hugeLossScaleBacksOffAndSkips()
{
    SyntheticRig rig(512, 64, 11);
    RunConfig config = cpu_config(Policy::MixedFP16, 32, 12);
    // 2^30 times a logit gradient of up to 1/32 is far past fp16's 65504: the first
    // steps must overflow, be skipped, and halve the scale each time.
    config.loss_scale.mode = LossScaleMode::Dynamic;
    config.loss_scale.init = 1073741824.0f;
    TrainingRun run = rig.run(config);
    const auto before = run.read_parameters();
    RecordingSink sink;
    const RunSummary s = train(run, sink);
    const auto& steps = sink.steps[0];
    QVERIFY(steps[0].overflow && steps[0].skipped);
    QCOMPARE(steps[0].next_loss_scale, steps[0].loss_scale * 0.5f);
    QVERIFY(s.skipped_steps >= 1);
    QCOMPARE(sink.count(RunEvent::Kind::SkippedStep), int(s.skipped_steps));
    QVERIFY(sink.count(RunEvent::Kind::ScaleChange) >= 1);
    QVERIFY(!steps.back().overflow); // it backed off far enough to train
    QVERIFY(run.read_parameters() != before);
}

void TestTraining::sigmoidHeadWarnsAndTrains()
{
    SyntheticRig rig(1024, 256, 13, Activation::Sigmoid);
    QCOMPARE(rig.graph.head, OutputHead::SigmoidKeras);
    TrainingRun run = rig.run(cpu_config(Policy::FP32, 32, 96));
    RecordingSink sink;
    const RunSummary s = train(run, sink);
    QVERIFY(sink.count(RunEvent::Kind::Warning) >= 1);
    QVERIFY(s.final_test_loss && std::isfinite(*s.final_test_loss));
    QVERIFY(sink.steps[0].back().loss < sink.steps[0].front().loss);
}

QTEST_APPLESS_MAIN(TestTraining)
#include "tst_training.moc"
