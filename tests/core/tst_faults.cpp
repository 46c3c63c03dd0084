// Faults during a run, on the CPU backend through its out-of-memory test hook
// (core/src/fault_injection.h): out of memory while a run is set up and in the middle
// of it, each with a message naming memory, the batch and what to change, the backend
// usable afterwards; and a Stop that lands in the evaluation pass ends it there.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"

#include "one_omp_thread_main.h"

#include <QtTest>

#include <stop_token>

#include <unistd.h>

#include "test_models.h"

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

// Sets one of the hook's variables for the lifetime of a backend made inside the scope.
struct EnvScope {
    QByteArray name;
    EnvScope(const char* n, std::int64_t value) : name(n) { qputenv(n, QByteArray::number(qint64(value))); }
    ~EnvScope() { qunsetenv(name.constData()); }
};

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
    const Graph graph = build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);

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

    EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", limit);
    auto backend = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *backend);
    std::string message;
    try {
        TrainingRun run(graph, cpu_config(policy, 256, 4), dev, *backend);
        QFAIL("batch 256 was set up within a limit it does not fit");
    } catch (const OutOfMemoryError& e) {
        message = e.what();
    }
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
    const Graph graph = build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
    EnvScope env("MIXLAB_FAULT_OOM_AT_STEP", 7);
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

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestFaults, QCoreApplication)
#include "tst_faults.moc"
