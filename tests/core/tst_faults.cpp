// Faults during a run, on the CPU backend through its out-of-memory test hook
// (core/src/backends/fault_injection.h): out of memory while a run is set up and in the middle
// of it, each with a message naming memory, the batch and what to change, the backend
// usable afterwards; a Stop that lands in the evaluation pass ends it there; and new
// buffers poisoned with NaN bytes (core/src/backends/buffer_poison.h) change no number a run gives.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"

#include "one_omp_thread_main.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <stop_token>

#include <unistd.h>

#include "env_scope.h"
#include "test_models.h"
#include "test_util.h"

using namespace mixlab;

Q_DECLARE_METATYPE(mixlab::Policy)

namespace {

struct CountingSink : MetricsSink {
    std::vector<StepMetrics> steps;
    std::vector<EpochMetrics> epochs;
    std::vector<RunEvent> events;
    std::stop_source* stop = nullptr;
    std::int64_t stop_at_step = -1;
    void on_step(int, const StepMetrics& m) override
    {
        steps.push_back(m);
        if (stop && m.step == stop_at_step) stop->request_stop();
    }
    void on_epoch(int, const EpochMetrics& m) override { epochs.push_back(m); }
    void on_event(int, const RunEvent& e) override { events.push_back(e); }
};

RunConfig cpu_config(Policy policy, int batch, std::int64_t steps)
{
    RunConfig c;
    c.policy = policy;
    c.batch_size = batch;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.seed = 5;
    return c;
}

// The bytes DeviceDataset allocates for `d` (images and labels as uint8, the test order
// as int32): what a memory limit must leave room for before any run is set up.
std::int64_t dataset_bytes(const Dataset& d)
{
    return std::int64_t(d.train.images.size() + d.train.labels.size() + d.test.images.size() +
                        d.test.labels.size()) +
           4 * std::max<std::int64_t>(d.test.n, 1);
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

class TestFaults : public QObject {
    Q_OBJECT
private slots:
    void init();
    void outOfMemoryAtSetup_data();
    void outOfMemoryAtSetup();
    void outOfMemoryMidRun();
    void hookIsOffByDefault();
    void stopDuringEvaluationEndsIt();
    void poisonedBuffersChangeNothing_data();
    void poisonedBuffersChangeNothing();
};

void TestFaults::init()
{
    qunsetenv("MIXLAB_FAULT_OOM_AFTER_BYTES");
    qunsetenv("MIXLAB_FAULT_OOM_AT_STEP");
}

void TestFaults::outOfMemoryAtSetup_data()
{
    QTest::addColumn<Policy>("policy");
    QTest::addColumn<bool>("adviseMixed"); // fp32-wide policies are told about mixed precision
    QTest::newRow("fp32") << Policy::FP32 << true;
    QTest::newRow("mixed_fp16") << Policy::MixedFP16 << false;
}

// A limit between what batch 8 and batch 256 need: 256 fails while it is set up with the
// message the user needs, everything it had allocated is given back (batch 8 then fits on
// the same backend), and the run at batch 8 trains.
void TestFaults::outOfMemoryAtSetup()
{
    QFETCH(Policy, policy);
    QFETCH(bool, adviseMixed);
    const ModelSpec spec = test::tiny_mlp({.hidden = 16});
    const Dataset data = make_synthetic(512, 64, 3);
    const Graph graph =
        build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);

    // What each batch needs, measured without a limit.
    std::int64_t small_bytes = 0, large_bytes = 0;
    {
        auto backend = make_backend(DeviceChoice::CPU);
        DeviceDataset dev(data, *backend);
        small_bytes = TrainingRun(graph, cpu_config(policy, 8, 4), dev, *backend).device_bytes();
        large_bytes = TrainingRun(graph, cpu_config(policy, 256, 4), dev, *backend).device_bytes();
    }
    // Batch 256's input and activations alone are ~3 MB more than batch 8's: a limit
    // halfway leaves 1.5 MB either side, far more than the run's few small buffers that
    // device_bytes() leaves out (scaler, records, the epoch order: ~2 KB here).
    QVERIFY2(large_bytes - small_bytes > 1'000'000,
             qPrintable(QString("%1 vs %2").arg(large_bytes).arg(small_bytes)));
    const std::int64_t limit = dataset_bytes(data) + (small_bytes + large_bytes) / 2;

    test::EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", limit);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    const std::string message = test::thrown_message<OutOfMemoryError>(
        [&] { TrainingRun run(graph, cpu_config(policy, 256, 4), dev, *backend); });
    QVERIFY2(!message.empty(), "batch 256 was set up within a limit it does not fit");
    QVERIFY2(contains(message, "out of memory setting up"), message.c_str());
    QVERIFY2(contains(message, "out of device memory"), message.c_str()); // the backend's words
    QVERIFY2(contains(message, "batch size 256"), message.c_str());
    QVERIFY2(contains(message, "Lower the batch size"), message.c_str());
    QCOMPARE(contains(message, "mixed-precision policy"), adviseMixed);

    // Nothing of the failed run is still held: the smaller batch fits and trains.
    TrainingRun run(graph, cpu_config(policy, 8, 6), dev, *backend);
    CountingSink sink;
    const RunSummary s = train(run, sink);
    QCOMPARE(s.steps, std::int64_t(6));
    QVERIFY(std::isfinite(s.final_train_loss));
}

// A workspace that cannot grow at step 7 (as cuBLAS's or cuDNN's would on a full GPU):
// the error names the step and the batch, the six steps before it were reported, and the
// backend trains the next run to its end (the fault is one-shot, like a transient peak).
void TestFaults::outOfMemoryMidRun()
{
    const ModelSpec spec = test::tiny_mlp({.hidden = 16});
    const Dataset data = make_synthetic(512, 64, 3);
    const Graph graph =
        build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
    test::EnvScope env("MIXLAB_FAULT_OOM_AT_STEP", 7);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    CountingSink sink;
    std::string message;
    {
        TrainingRun run(graph, cpu_config(Policy::FP32, 32, 12), dev, *backend);
        try {
            train(run, sink);
            QFAIL("the injected fault at step 7 did not surface");
        } catch (const OutOfMemoryError& e) {
            message = e.what();
        }
        QCOMPARE(run.steps_done(), std::int64_t(6));
        // What was reported before the fault is consistent: steps 1.. in order.
        for (std::size_t i = 0; i < sink.steps.size(); ++i)
            QCOMPARE(sink.steps[i].step, std::int64_t(i + 1));
        QVERIFY(sink.steps.size() <= 6);
    }
    QVERIFY2(contains(message, "out of memory at step 7"), message.c_str());
    QVERIFY2(contains(message, "batch size 32"), message.c_str());
    QVERIFY2(contains(message, "mixed-precision policy"), message.c_str());

    TrainingRun next(graph, cpu_config(Policy::FP32, 32, 10), dev, *backend);
    CountingSink after;
    const RunSummary s = train(next, after);
    QCOMPARE(s.steps, std::int64_t(10));
    QCOMPARE(after.steps.size(), std::size_t(10));
}

// Unset, or set to something that is not a count, the hook never fires: a large run at a
// tiny "limit" written wrongly trains normally.
void TestFaults::hookIsOffByDefault()
{
    qputenv("MIXLAB_FAULT_OOM_AFTER_BYTES", "12kB"); // not a plain count: ignored
    qputenv("MIXLAB_FAULT_OOM_AT_STEP", "-3");
    const Dataset data = make_synthetic(256, 32, 3);
    const Graph graph = build_graph(test::tiny_mlp({.hidden = 16}),
                                    Shape{{data.height, data.width, data.channels}}, data.classes);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    TrainingRun run(graph, cpu_config(Policy::FP32, 32, 4), dev, *backend);
    CountingSink sink;
    QCOMPARE(train(run, sink).steps, std::int64_t(4));
}

// Stop requested as the last step of epoch 1 is reported (the drain just before the
// evaluation): the evaluation sees it at its first batch and ends, so no epoch is
// reported and the run ends stopped after that step. Without the check the evaluation
// would run through and report epoch 1.
void TestFaults::stopDuringEvaluationEndsIt()
{
    const Dataset data = make_synthetic(256, 64, 3);
    const Graph graph = build_graph(test::tiny_mlp({.hidden = 16}),
                                    Shape{{data.height, data.width, data.channels}}, data.classes);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    TrainingRun run(graph, cpu_config(Policy::FP32, 32, 20), dev, *backend);
    QCOMPARE(run.steps_per_epoch(), std::int64_t(8));
    std::stop_source stop;
    CountingSink sink;
    sink.stop = &stop;
    sink.stop_at_step = 8;
    const RunSummary s = train(run, sink, stop.get_token());
    QVERIFY(s.stopped);
    QCOMPARE(s.steps, std::int64_t(8));
    QVERIFY2(sink.epochs.empty(), "the evaluation ran through a stop");
}

void TestFaults::poisonedBuffersChangeNothing_data()
{
    QTest::addColumn<Policy>("policy");
    QTest::newRow("fp32") << Policy::FP32;
    QTest::newRow("mixed_fp16") << Policy::MixedFP16;
    QTest::newRow("mixed_bf16") << Policy::MixedBF16;
    QTest::newRow("fp16") << Policy::FP16;
}

// Every layer type, augmentation, dropout and an epoch's evaluation, trained with new
// buffers filled with NaN bytes and without: an op that read memory no op wrote (a
// gradient accumulated into an unzeroed buffer, a padded tail, a statistic read before
// its pass) would turn the losses NaN or different. They must match to the bit.
void TestFaults::poisonedBuffersChangeNothing()
{
    QFETCH(Policy, policy);
    const ModelSpec spec = parse_model_spec(R"({"format": "mixlab-model/1", "name": "every-layer",
      "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same", "use_bias": false},
        {"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
        {"type": "residual", "body": [
           {"type": "conv2d", "filters": 16, "kernel": 3, "stride": 2, "padding": "same"},
           {"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
           {"type": "conv2d", "filters": 16, "kernel": 3, "padding": "same"}],
         "shortcut": [{"type": "conv2d", "filters": 16, "kernel": 1, "stride": 2}],
         "activation": "relu"},
        {"type": "maxpool2d", "pool_size": 2}, {"type": "avgpool2d", "pool_size": 2},
        {"type": "conv2d", "filters": 8, "kernel": 1, "activation": "gelu"},
        {"type": "global_avgpool"},
        {"type": "dense", "units": 24, "use_bias": false}, {"type": "batchnorm"},
        {"type": "activation", "activation": "tanh"}, {"type": "dropout", "rate": 0.25},
        {"type": "dense", "units": "classes"},
        {"type": "activation", "activation": "softmax", "dtype": "float32"}]})");
    const Dataset data = make_synthetic(96, 32, 3);
    const Graph graph =
        build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
    RunConfig config = cpu_config(policy, 16, 8); // 6 steps an epoch: one evaluation
    config.dataset.crop_padding = 2;
    config.dataset.horizontal_flip = true;
    auto losses = [&](bool poison) {
        if (poison) qputenv("MIXLAB_POISON_BUFFERS", "1");
        auto backend = make_backend(DeviceChoice::CPU);
        qunsetenv("MIXLAB_POISON_BUFFERS");
        DeviceDataset dev(data, *backend);
        TrainingRun run(graph, config, dev, *backend);
        CountingSink sink;
        train(run, sink);
        std::vector<double> out;
        for (const StepMetrics& m : sink.steps) out.push_back(m.loss);
        for (const EpochMetrics& e : sink.epochs) out.push_back(e.test_loss);
        return out;
    };
    {
        // The hook is live: a new buffer reads back as NaN.
        qputenv("MIXLAB_POISON_BUFFERS", "1");
        auto backend = make_backend(DeviceChoice::CPU);
        qunsetenv("MIXLAB_POISON_BUFFERS");
        Buffer probe = backend->alloc(3, DType::F16);
        float back[3] = {};
        backend->download_f32(probe, back, 3, 0);
        for (float v : back)
            QVERIFY2(std::isnan(v),
                     "MIXLAB_POISON_BUFFERS=1 left a new buffer readable as a number");
    }
    const std::vector<double> clean = losses(false), poisoned = losses(true);
    QCOMPARE(poisoned.size(), clean.size());
    QVERIFY(clean.size() >= std::size_t(8 + 1)); // every step and at least one evaluation
    for (double l : clean) QVERIFY2(std::isfinite(l), "the clean run's loss is not finite");
    for (std::size_t i = 0; i < clean.size(); ++i)
        QVERIFY2(std::memcmp(&clean[i], &poisoned[i], sizeof(double)) == 0,
                 qPrintable(QString("loss %1: %2 clean, %3 with poisoned buffers")
                                .arg(i)
                                .arg(clean[i], 0, 'g', 17)
                                .arg(poisoned[i], 0, 'g', 17)));
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestFaults, QCoreApplication)
#include "tst_faults.moc"
