// RunGroup on the CPU backend: the lockstep order, one run failing alone mid-training
// (the backend's out-of-memory hook, core/src/backends/fault_injection.h) while the others
// train exactly as they would alone, failures while setting up named per run, Stop at every
// setup phase, in training and in the profiling pass, run outputs and the claim of a run's
// checkpoint folder, the synthetic split rule, the profiling step count, and max-batch
// searches on the group's device and data.
#include "mixlab/checkpoint.h"
#include "mixlab/checkpoint_folder.h"
#include "mixlab/error.h"
#include "mixlab/max_batch.h"
#include "mixlab/run_group.h"

#include "one_omp_thread_main.h"

#include <QtTest>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "env_scope.h"
#include "test_models.h"

using namespace mixlab;

Q_DECLARE_METATYPE(mixlab::GroupPhase)

namespace {

// Everything a group reports, in order.
struct Recorder : MetricsSink, RunGroupObserver {
    std::vector<std::pair<int, StepMetrics>> steps; // (run, metrics) as reported
    std::vector<std::pair<int, RunEvent>> events;
    std::vector<std::pair<GroupPhase, int>> phases;
    std::vector<int> started, finished, failed, profiled;
    std::vector<std::string> failures;
    std::optional<GroupFacts> facts;
    // A hook to press Stop at an exact point.
    std::function<void(GroupPhase, int)> at_phase;
    std::function<void(int, const StepMetrics&)> at_step;

    void on_step(int run, const StepMetrics& m) override
    {
        steps.emplace_back(run, m);
        if (at_step) at_step(run, m);
    }
    void on_epoch(int, const EpochMetrics&) override {}
    void on_event(int run, const RunEvent& e) override { events.emplace_back(run, e); }
    void on_phase(GroupPhase phase, int run) override
    {
        phases.emplace_back(phase, run);
        if (at_phase) at_phase(phase, run);
    }
    void on_prepared(const GroupFacts& f) override { facts = f; }
    void on_run_started(int run, const RunStart&) override { started.push_back(run); }
    void on_run_finished(int run, const RunSummary&) override { finished.push_back(run); }
    void on_run_failed(int run, const std::string& message) override
    {
        failed.push_back(run);
        failures.push_back(message);
    }
    void on_run_profiled(int run, const StepProfile&) override { profiled.push_back(run); }

    std::vector<float> losses(int run) const
    {
        std::vector<float> out;
        for (const auto& [r, m] : steps)
            if (r == run) out.push_back(m.loss);
        return out;
    }
    const RunEvent* error_of(int run) const
    {
        for (const auto& [r, e] : events)
            if (r == run && e.kind == RunEvent::Kind::Error) return &e;
        return nullptr;
    }
};

RunConfig cpu_config(Policy policy, int batch, std::int64_t steps)
{
    RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 512;
    c.dataset.synthetic_test = 128;
    c.policy = policy;
    c.batch_size = batch;
    c.steps = steps;
    c.device = DeviceChoice::CPU;
    c.seed = 11;
    return c;
}

ModelSpec tiny() { return test::tiny_mlp({.hidden = 16}); }

QString q(const std::string& s) { return QString::fromStdString(s); }

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

class TestRunGroup : public QObject {
    Q_OBJECT
private slots:
    void init();
    void lockstepOrder();
    void oneRunFailsAloneMidTraining();
    void setupFailureNamesTheRun();
    void dataFailureEndsEveryRun();
    void outOfMemoryWhilePlanning();
    void stopDuringSetup_data();
    void stopDuringSetup();
    void stopDuringTraining();
    void stopDuringProfiling();
    void runOutputsPerRun();
    void checkpointFolderClaims();
    void runCheckpointFailureLetsTheRunGoOn();
    void runOutputsCountChecked();
    void namedCheckpointFileReplacedInPlace();
    void namedCheckpointFailureFailsTheRun();
    void stopBeforeTheFirstStep();
    void syntheticSplitRule();
    void profileStepsFollowStepTime();
    void maxBatchSearchOnTheGroup();
    void maxBatchSearchStops();
    void maxBatchSyntheticSizing();
};

void TestRunGroup::init()
{
    qunsetenv("MIXLAB_FAULT_OOM_AFTER_BYTES");
    qunsetenv("MIXLAB_FAULT_OOM_AT_STEP");
}

// Phases in order, every run started before any trains, and one step of each run in
// turn: with records read k_lag (4) steps behind, the reports alternate run 0, run 1 from
// step 1 on, and each run's last four come as it finishes.
void TestRunGroup::lockstepOrder()
{
    const std::int64_t n = 12;
    RunGroup group(tiny(), {cpu_config(Policy::FP32, 32, n), cpu_config(Policy::MixedFP16, 32, n)});
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QVERIFY(!out.setup_failure);
    const std::vector<std::pair<GroupPhase, int>> phases = {
        {GroupPhase::OpeningDevice, -1}, {GroupPhase::LoadingData, -1},
        {GroupPhase::BuildingGraph, -1}, {GroupPhase::Planning, 0},
        {GroupPhase::Planning, 1},       {GroupPhase::Training, -1}};
    QVERIFY(rec.phases == phases);
    QVERIFY(rec.started == (std::vector<int>{0, 1}));
    QVERIFY(rec.finished == (std::vector<int>{0, 1}));
    QVERIFY(rec.facts.has_value());
    QCOMPARE(rec.facts->graph.input, (Shape{{32, 32, 3}}));
    QCOMPARE(rec.facts->train_samples, std::int64_t(512));
    QCOMPARE(rec.facts->environment.backend, BackendKind::Cpu);

    const std::size_t lag = 4, alternating = 2 * std::size_t(n - std::int64_t(lag));
    QCOMPARE(rec.steps.size(), std::size_t(2 * n));
    for (std::size_t i = 0; i < alternating; ++i) {
        QCOMPARE(rec.steps[i].first, int(i % 2));
        QCOMPARE(rec.steps[i].second.step, std::int64_t(i / 2 + 1));
    }
    for (std::size_t i = alternating; i < rec.steps.size(); ++i) // run 0's tail, then run 1's
        QCOMPARE(rec.steps[i].first, i < alternating + lag ? 0 : 1);
    for (int r = 0; r < 2; ++r) {
        QCOMPARE(out.runs[std::size_t(r)].status, RunOutcome::Status::Finished);
        QCOMPARE(out.runs[std::size_t(r)].summary.steps, n);
    }
    QVERIFY(group.training_run(0) && group.training_run(1)); // the group still owns them
}

// An out-of-memory error at the backend's 29th training step: in lockstep over three runs
// that is the second run's 10th (3 x 9 + 2). That run fails alone, its nine steps reported
// and its error at step 10; the first and third train to their end, over an epoch's
// evaluation, with the losses each gives alone.
void TestRunGroup::oneRunFailsAloneMidTraining()
{
    const std::vector<RunConfig> configs = {cpu_config(Policy::FP32, 32, 20),
                                            cpu_config(Policy::MixedFP16, 32, 20),
                                            cpu_config(Policy::MixedBF16, 32, 20)};
    Recorder rec;
    GroupOutcome out;
    {
        test::EnvScope env("MIXLAB_FAULT_OOM_AT_STEP", 3 * 9 + 2);
        RunGroup group(tiny(), configs);
        out = group.run(rec, rec);
        QVERIFY(group.training_run(1) == nullptr); // destroyed when it failed
        QVERIFY(group.training_run(0) && group.training_run(2));
    }
    QVERIFY(!out.setup_failure);
    QVERIFY(out.any_failed());
    const RunOutcome& failed = out.runs[1];
    QCOMPARE(failed.status, RunOutcome::Status::Failed);
    QVERIFY2(contains(failed.failure, "out of memory at step 10"), failed.failure.c_str());
    QVERIFY2(contains(failed.failure, "mixed_fp16 run at batch size 32"), failed.failure.c_str());
    QVERIFY(failed.error);
    QVERIFY_THROWS_EXCEPTION(OutOfMemoryError, std::rethrow_exception(failed.error));
    QVERIFY(rec.failed == (std::vector<int>{1}));
    QVERIFY(rec.finished == (std::vector<int>{0, 2}));
    const RunEvent* error = rec.error_of(1);
    QVERIFY(error);
    QCOMPARE(error->step, std::int64_t(10));
    QCOMPARE(q(error->message), q(failed.failure));
    QCOMPARE(rec.losses(1).size(), std::size_t(9)); // every step before the fault, in order

    for (int r : {0, 2}) {
        QCOMPARE(out.runs[std::size_t(r)].status, RunOutcome::Status::Finished);
        QCOMPARE(out.runs[std::size_t(r)].summary.steps, std::int64_t(20));
        Recorder alone;
        RunGroup single(tiny(), {configs[std::size_t(r)]});
        single.run(alone, alone);
        // Bit for bit: the same data order, initial weights and ops on one CPU thread;
        // the failed run shares nothing with the others that the math reads.
        QVERIFY2(alone.losses(0) == rec.losses(r), qPrintable(QString("run %1").arg(r)));
    }
}

// Run 1's batch is larger than the data (the one check, in TrainingRun): its setup fails
// while planning; it keeps its own message, run 0 says whose setup failed. Both carry an
// Error event at step 0 and no run started training.
void TestRunGroup::setupFailureNamesTheRun()
{
    RunGroup group(tiny(),
                   {cpu_config(Policy::MixedFP16, 32, 10), cpu_config(Policy::FP32, 4096, 10)});
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QVERIFY(out.setup_failure.has_value());
    QCOMPARE(out.setup_failure->phase, GroupPhase::Planning);
    QCOMPARE(out.setup_failure->run, 1);
    QVERIFY_THROWS_EXCEPTION(InputError, std::rethrow_exception(out.setup_failure->error));
    const std::string own = "batch size 4096 is larger than the training split of synthetic "
                            "(512 samples)";
    QCOMPARE(q(out.runs[1].failure), q(own));
    QCOMPARE(q(out.runs[0].failure),
             q("not run: the fp32 run of this group could not start: " + own));
    QVERIFY(rec.started.empty());
    QVERIFY(rec.steps.empty());
    QVERIFY(rec.failed == (std::vector<int>{0, 1}));
    for (int r = 0; r < 2; ++r) {
        QCOMPARE(out.runs[std::size_t(r)].status, RunOutcome::Status::Failed);
        const RunEvent* e = rec.error_of(r);
        QVERIFY(e);
        QCOMPARE(e->step, std::int64_t(0));
        QCOMPARE(q(e->message), q(out.runs[std::size_t(r)].failure));
    }
    QVERIFY(group.training_run(0) == nullptr); // run 0, set up, was freed
}

// A failure of the group's own parts (the data) is every run's, word for word.
void TestRunGroup::dataFailureEndsEveryRun()
{
    RunConfig c = cpu_config(Policy::FP32, 32, 10);
    c.dataset.name = "/nonexistent/mixlab-data-folder";
    RunGroup group(tiny(), {c, c});
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QVERIFY(out.setup_failure.has_value());
    QCOMPARE(out.setup_failure->phase, GroupPhase::LoadingData);
    QCOMPARE(out.setup_failure->run, -1);
    QVERIFY(!rec.facts.has_value());
    for (const RunOutcome& r : out.runs) {
        QCOMPARE(r.status, RunOutcome::Status::Failed);
        QVERIFY2(contains(r.failure, "/nonexistent/mixlab-data-folder"), r.failure.c_str());
        QCOMPARE(q(r.failure), q(out.runs.front().failure));
    }
}

// A device too small for the second run: both measured without a limit, then a limit
// that holds the data and run 0 but not run 1 as well. Run 1 fails planning with the
// out-of-memory advice, and run 0 says whose setup failed.
void TestRunGroup::outOfMemoryWhilePlanning()
{
    const std::vector<RunConfig> configs = {cpu_config(Policy::MixedFP16, 8, 2),
                                            cpu_config(Policy::FP32, 256, 2)};
    std::vector<std::int64_t> bytes;
    struct Bytes : RunGroupObserver {
        std::vector<std::int64_t>* out = nullptr;
        void on_run_started(int, const RunStart& s) override { out->push_back(s.device_bytes); }
    } measure;
    measure.out = &bytes;
    Recorder quiet;
    RunGroup(tiny(), configs).run(quiet, measure);
    QCOMPARE(bytes.size(), std::size_t(2));
    QVERIFY2(bytes[1] > 1'000'000, qPrintable(QString::number(bytes[1])));
    // The data: 512 + 128 images of 3072 bytes, their labels and the test order (int32).
    const std::int64_t data = 640 * 3072 + 640 + 4 * 128;
    // Half of run 1 on top of both: far more than the few small buffers device_bytes()
    // leaves out (scaler, records, the epoch order: a few KB).
    test::EnvScope env("MIXLAB_FAULT_OOM_AFTER_BYTES", data + bytes[0] + bytes[1] / 2);
    RunGroup group(tiny(), configs);
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QVERIFY(out.setup_failure.has_value());
    QCOMPARE(out.setup_failure->run, 1);
    const std::string& own = out.runs[1].failure;
    for (const char* part : {"out of memory setting up", "fp32 run at batch size 256",
                             "Lower the batch size", "mixed-precision policy"})
        QVERIFY2(contains(own, part), own.c_str());
    QVERIFY2(contains(out.runs[0].failure, "not run: the fp32 run of this group could not start: "
                                           "out of memory setting up"),
             out.runs[0].failure.c_str());
}

void TestRunGroup::stopDuringSetup_data()
{
    QTest::addColumn<bool>("before"); // stop asked before run() begins
    QTest::addColumn<GroupPhase>("phase");
    QTest::addColumn<int>("run");
    QTest::newRow("before anything") << true << GroupPhase::OpeningDevice << -1;
    QTest::newRow("opening the device") << false << GroupPhase::OpeningDevice << -1;
    QTest::newRow("loading the data") << false << GroupPhase::LoadingData << -1;
    QTest::newRow("building the graph") << false << GroupPhase::BuildingGraph << -1;
    QTest::newRow("planning run 0") << false << GroupPhase::Planning << 0;
    QTest::newRow("planning run 1") << false << GroupPhase::Planning << 1;
}

// Stop at each setup phase: the phase in progress completes, nothing after it starts, and
// every run ends stopped with nothing done (none failed, none started).
void TestRunGroup::stopDuringSetup()
{
    QFETCH(bool, before);
    QFETCH(GroupPhase, phase);
    QFETCH(int, run);
    std::stop_source stop;
    if (before) stop.request_stop();
    Recorder rec;
    rec.at_phase = [&](GroupPhase p, int r) {
        if (p == phase && r == run) stop.request_stop();
    };
    RunGroup group(tiny(),
                   {cpu_config(Policy::FP32, 32, 100000), cpu_config(Policy::FP32, 32, 100000)});
    const GroupOutcome out = group.run(rec, rec, stop.get_token());
    QVERIFY(!out.setup_failure);
    if (before) {
        QVERIFY(rec.phases.empty());
    } else {
        QVERIFY(!rec.phases.empty());
        QVERIFY(rec.phases.back() == std::make_pair(phase, run));
    }
    QVERIFY(rec.started.empty());
    QVERIFY(rec.failed.empty());
    QVERIFY(rec.steps.empty());
    QVERIFY(rec.finished == (std::vector<int>{0, 1}));
    for (const RunOutcome& r : out.runs) {
        QCOMPARE(r.status, RunOutcome::Status::Stopped);
        QVERIFY(r.summary.stopped);
        QCOMPARE(r.summary.steps, std::int64_t(0));
    }
    QVERIFY(group.training_run(0) == nullptr);
}

// Stop between steps: both runs end stopped, within a step of each other, with summaries
// that count what was reported, and no profiling pass follows a stopped group.
void TestRunGroup::stopDuringTraining()
{
    std::stop_source stop;
    Recorder rec;
    rec.at_step = [&](int run, const StepMetrics& m) {
        if (run == 0 && m.step == 5) stop.request_stop();
    };
    RunGroupOptions options;
    options.profile_steps = 2;
    RunGroup group(
        tiny(), {cpu_config(Policy::FP32, 32, 100000), cpu_config(Policy::MixedFP16, 32, 100000)},
        options);
    const GroupOutcome out = group.run(rec, rec, stop.get_token());
    std::int64_t steps[2] = {};
    for (int r = 0; r < 2; ++r) {
        const RunOutcome& o = out.runs[std::size_t(r)];
        QCOMPARE(o.status, RunOutcome::Status::Stopped);
        QVERIFY(o.summary.stopped);
        steps[r] = o.summary.steps;
        QCOMPARE(std::int64_t(rec.losses(r).size()), steps[r]);
        QVERIFY(!o.profile);
    }
    QVERIFY(steps[0] >= 5 && steps[0] < 20);
    QVERIFY(std::abs(steps[0] - steps[1]) <= 1);
    QVERIFY(rec.profiled.empty());
}

// Stop as run 0's profiling pass begins: that pass completes (too short to cut), run 1's
// is not taken, and both runs stay finished.
void TestRunGroup::stopDuringProfiling()
{
    std::stop_source stop;
    Recorder rec;
    rec.at_phase = [&](GroupPhase p, int r) {
        if (p == GroupPhase::Profiling && r == 0) stop.request_stop();
    };
    RunGroupOptions options;
    options.profile_steps = 2;
    RunGroup group(tiny(), {cpu_config(Policy::FP32, 32, 8), cpu_config(Policy::MixedFP16, 32, 8)},
                   options);
    const GroupOutcome out = group.run(rec, rec, stop.get_token());
    QVERIFY(out.profiling_cut);
    QVERIFY(rec.profiled == (std::vector<int>{0}));
    QVERIFY(out.runs[0].profile.has_value());
    QCOMPARE(out.runs[0].profile->steps, 2);
    QVERIFY(!out.runs[1].profile.has_value());
    for (const RunOutcome& r : out.runs) QCOMPARE(r.status, RunOutcome::Status::Finished);
    QCOMPARE(rec.losses(0).size(), std::size_t(8)); // the pass's steps reach no sink
}

// A fifth of the training set, rounded up, never empty; the default pair and the CLI's
// help ("N/5") agree on multiples of five.
void TestRunGroup::syntheticSplitRule()
{
    QCOMPARE(synthetic_test_size(10000), std::int64_t(2000));
    QCOMPARE(synthetic_test_size(DatasetOptions{}.synthetic_train),
             DatasetOptions{}.synthetic_test);
    QCOMPARE(synthetic_test_size(1), std::int64_t(1));
    QCOMPARE(synthetic_test_size(4), std::int64_t(1));
    QCOMPARE(synthetic_test_size(5), std::int64_t(1));
    QCOMPARE(synthetic_test_size(6), std::int64_t(2));
    QCOMPARE(synthetic_test_size(512), std::int64_t(103));
    QCOMPARE(synthetic_test_size(1000000), std::int64_t(200000));
    // Always a split validate_run_config accepts.
    RunConfig c;
    for (std::int64_t n : {1, 2, 3, 7, 99}) {
        c.dataset.synthetic_train = n;
        c.dataset.synthetic_test = synthetic_test_size(n);
        validate_run_config(c);
    }
}

// The pass stays near options.profile_seconds for slow steps, never below 2 steps, never
// above profile_steps; without a step time, profile_steps.
void TestRunGroup::profileStepsFollowStepTime()
{
    RunGroupOptions o;
    o.profile_steps = 10;
    RunSummary s;
    QCOMPARE(profile_steps_for(s, o), 10); // no step time, no time budget
    o.profile_seconds = 2.0;
    QCOMPARE(profile_steps_for(s, o), 10); // no step time
    s.median_step_ms = 1.0;
    QCOMPARE(profile_steps_for(s, o), 10);
    s.median_step_ms = 100.0; // 2000 / 300 = 6.7
    QCOMPARE(profile_steps_for(s, o), 6);
    s.median_step_ms = 300.0;
    QCOMPARE(profile_steps_for(s, o), 2);
    s.median_step_ms = 0;
    s.mean_step_ms = 200.0; // the mean stands in for a missing median
    QCOMPARE(profile_steps_for(s, o), 3);
    o.profile_steps = 0;
    QCOMPARE(profile_steps_for(s, o), 0);
}

// prepare() sets up the device, the data and the graph once; every trial runs on them.
// 200 training samples bound the search as they bound TrainingRun.
void TestRunGroup::maxBatchSearchOnTheGroup()
{
    RunConfig c = cpu_config(Policy::MixedFP16, 1, 0);
    c.dataset.synthetic_train = 200;
    c.dataset.synthetic_test = 20;
    RunGroup group(tiny(), {c});
    Recorder rec;
    QVERIFY(group.prepare(rec));
    QVERIFY(rec.facts.has_value());
    QCOMPARE(group.facts().train_samples, std::int64_t(200));
    group.check_run(0);
    MaxBatchOptions o;
    o.start = 32;
    o.limit = 1024;
    o.resolution = 0.0;
    o.warmup_steps = 1;
    o.timed_steps = 1;
    std::vector<int> started, ended;
    struct Trials : RunGroupObserver {
        std::vector<int>*started, *ended;
        void on_trial_started(int, int batch) override { started->push_back(batch); }
        void on_trial(int, const BatchTrial& t) override { ended->push_back(t.batch); }
    } trials;
    trials.started = &started;
    trials.ended = &ended;
    const MaxBatchSearch search = group.search_max_batch(0, o, trials);
    QVERIFY(search.complete);
    QCOMPARE(search.result.largest_fit, 200);
    QCOMPARE(search.result.first_failure, 208);
    QCOMPARE(QString::fromStdString(search.result.failure_reason),
             QString("only 200 training samples"));
    QVERIFY(started == ended);
    QCOMPARE(started.size(), search.result.trials.size());
    // One group, one job: its device and data are not set up twice.
    QVERIFY_THROWS_EXCEPTION(Error, group.run(rec, rec));
}

// Stop between trials: the search ends with what the trials so far found.
void TestRunGroup::maxBatchSearchStops()
{
    RunConfig c = cpu_config(Policy::FP32, 1, 0);
    RunGroup group(tiny(), {c});
    Recorder rec;
    QVERIFY(group.prepare(rec));
    std::stop_source stop;
    struct StopAfterFirst : RunGroupObserver {
        std::stop_source* stop = nullptr;
        void on_trial(int, const BatchTrial&) override { stop->request_stop(); }
    } observer;
    observer.stop = &stop;
    MaxBatchOptions o;
    o.start = 16;
    o.limit = 256;
    o.warmup_steps = 0;
    o.timed_steps = 1;
    const MaxBatchSearch search = group.search_max_batch(0, o, observer, stop.get_token());
    QVERIFY(!search.complete);
    QCOMPARE(search.result.trials.size(), std::size_t(1));
    QCOMPARE(search.result.largest_fit, 16);

    // A stopped prepare() says so and sets nothing up for trials.
    std::stop_source early;
    early.request_stop();
    RunGroup stopped(tiny(), {c});
    QVERIFY(!stopped.prepare(rec, early.get_token()));
    QVERIFY_THROWS_EXCEPTION(Error, stopped.try_batch(0, 8, o));
}

// 4x the limit, capped, with a small test split; other data untouched; an unnamed dataset
// is sized only where the default is the synthetic one.
void TestRunGroup::maxBatchSyntheticSizing()
{
    MaxBatchOptions o;
    o.limit = 1024;
    DatasetOptions ds;
    ds.name = "synthetic";
    QVERIFY(size_synthetic_for_search(ds, o));
    QCOMPARE(ds.synthetic_train, std::int64_t(4096));
    QCOMPARE(ds.synthetic_test, std::int64_t(256));
    o.limit = 1 << 20;
    QVERIFY(size_synthetic_for_search(ds, o));
    QCOMPARE(ds.synthetic_train, k_search_synthetic_cap);
    o.limit = 16;
    QVERIFY(size_synthetic_for_search(ds, o));
    QCOMPARE(ds.synthetic_train, std::int64_t(64));
    QCOMPARE(ds.synthetic_test, std::int64_t(64)); // never more test than training samples
    DatasetOptions folder;
    folder.name = "/some/idx/folder";
    const DatasetOptions before = folder;
    QVERIFY(!size_synthetic_for_search(folder, o));
    QCOMPARE(folder.synthetic_train, before.synthetic_train);
    DatasetOptions unnamed;
    QCOMPARE(size_synthetic_for_search(unnamed, o), default_dataset_name() == "synthetic");
}

// A compare group of two runs, each with its own outputs: both write their weights, and a
// checkpoint at each of their three epoch ends into their own folder (run 0's claimed
// before, so there already and empty), run 0 keeping the
// newest two, run 1 the newest one (the older ones deleted once the new one is in place).
// A file of the same name pattern that the group did not write is never deleted.
void TestRunGroup::runOutputsPerRun()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string root = dir.path().toStdString();
    // Run 0's folder claimed as the app claims one, so it exists, empty, before the group.
    QCOMPARE(claim_checkpoint_folder(root + "/run0"), root + "/run0");
    std::filesystem::create_directories(root + "/run1");
    const std::string foreign = root + "/run1/" + checkpoint_file_name(0, 1);
    std::ofstream(foreign) << "another run's file";

    std::vector<RunConfig> configs = {cpu_config(Policy::FP32, 32, 0),
                                      cpu_config(Policy::MixedFP16, 32, 0)};
    for (RunConfig& c : configs) c.epochs = 3; // 512 samples, batch 32: 16 steps an epoch
    RunGroupOptions options;
    options.run_outputs.resize(2);
    for (int i = 0; i < 2; ++i) {
        RunGroupOptions::RunOutputs& o = options.run_outputs[std::size_t(i)];
        o.weights = root + "/weights-" + std::to_string(i) + ".safetensors";
        o.checkpoint_folder = root + "/run" + std::to_string(i);
        o.keep_checkpoints = 2 - i;
    }
    RunGroup group(tiny(), configs, options);
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QVERIFY(!out.any_failed());

    const auto steps_in = [](const std::string& folder) {
        std::vector<std::int64_t> steps;
        for (const CheckpointFile& f : list_checkpoints(folder)) steps.push_back(f.step);
        return steps;
    };
    QVERIFY(steps_in(root + "/run0") == (std::vector<std::int64_t>{32, 48}));
    QVERIFY(steps_in(root + "/run1") == (std::vector<std::int64_t>{1, 48})); // 1: the foreign file
    QVERIFY(std::filesystem::exists(foreign));
    for (int i = 0; i < 2; ++i) {
        const RunOutcome& r = out.runs[std::size_t(i)];
        QVERIFY2(r.weights_failure.empty(), r.weights_failure.c_str());
        QVERIFY2(r.checkpoint_failure.empty(), r.checkpoint_failure.c_str());
        const std::string newest =
            root + "/run" + std::to_string(i) + "/" + checkpoint_file_name(3, 48);
        const CheckpointHeader h = read_checkpoint_header(newest);
        QCOMPARE(h.step, std::int64_t(48));
        QCOMPARE(h.config.policy, configs[std::size_t(i)].policy);
        QVERIFY(std::filesystem::file_size(options.run_outputs[std::size_t(i)].weights) > 0);
    }
    // Each run's weights are its own: the two policies trained different values.
    std::ifstream a(options.run_outputs[0].weights, std::ios::binary),
        b(options.run_outputs[1].weights, std::ios::binary);
    const std::string wa((std::istreambuf_iterator<char>(a)), {}),
        wb((std::istreambuf_iterator<char>(b)), {});
    QVERIFY(wa != wb);
}

// Claiming a run's folder (claim_checkpoint_folder) makes it: two claims of one name get
// two folders, both there right after their claim; names another process made first (the
// name and its -2) are passed over, so are files of such a name; eight threads claiming
// one name at once get eight folders, and claims among releases that remove the parent get
// theirs; a folder that cannot be made is named with the reason. Releasing one takes it
// only when empty.
void TestRunGroup::checkpointFolderClaims()
{
    namespace fs = std::filesystem;
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string root = dir.path().toStdString();
    const std::string base = root + "/untitled/20261205-003000-run1-fp32";
    const std::string first = claim_checkpoint_folder(base); // its parent made on the way
    QCOMPARE(first, base);
    QVERIFY(fs::is_directory(first));
    const std::string second = claim_checkpoint_folder(base);
    QCOMPARE(second, base + "-2");
    QVERIFY(fs::is_directory(first) && fs::is_directory(second));

    // Another process made the name and its -2 after this one last looked.
    const std::string other = root + "/untitled/20261205-003001-run1-fp32";
    fs::create_directory(other);
    fs::create_directory(other + "-2");
    QCOMPARE(claim_checkpoint_folder(other), other + "-3");
    // A file of the name is no free folder either.
    const std::string file_named = root + "/untitled/20261205-003002-run1-fp32";
    std::ofstream(file_named) << "a file";
    QCOMPARE(claim_checkpoint_folder(file_named), file_named + "-2");
    QVERIFY(fs::is_regular_file(file_named));

    // At once from eight threads: eight folders, none shared.
    const std::string raced = root + "/untitled/20261205-003003-run1-mixed_fp16";
    std::vector<std::string> got(8);
    {
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < got.size(); ++t)
            threads.emplace_back([&got, &raced, t] { got[t] = claim_checkpoint_folder(raced); });
        for (std::thread& t : threads) t.join();
    }
    std::sort(got.begin(), got.end());
    QVERIFY(std::unique(got.begin(), got.end()) == got.end());
    for (const std::string& f : got) QVERIFY2(fs::is_directory(f), f.c_str());

    // Claims while others release theirs and the parent they leave empty (as the app
    // does): every claim gets a folder, there after its claim.
    {
        const std::string busy = root + "/busy/20261205-003004-run2-fp32";
        std::vector<std::thread> threads;
        std::vector<int> failures(4, 0);
        for (std::size_t t = 0; t < failures.size(); ++t)
            threads.emplace_back([&busy, &failures, t] {
                for (int i = 0; i < 50; ++i) {
                    try {
                        const std::string f = claim_checkpoint_folder(busy);
                        if (!fs::is_directory(f)) ++failures[t];
                        release_checkpoint_folder(f);
                        release_checkpoint_folder(fs::path(busy).parent_path().string());
                    } catch (const Error&) {
                        ++failures[t];
                    }
                }
            });
        for (std::thread& t : threads) t.join();
        QVERIFY(failures == std::vector<int>(4, 0));
    }

    // Its parent is a file: the folder that cannot be made is named, and why.
    const std::string blocker = root + "/a-file";
    std::ofstream(blocker) << "not a folder";
    try {
        claim_checkpoint_folder(blocker + "/untitled/run1");
        QFAIL("a folder under a file was claimed");
    } catch (const Error& e) {
        QVERIFY2(contains(e.what(), "cannot make the checkpoint folder '" + blocker) &&
                     contains(e.what(), std::make_error_code(std::errc::not_a_directory).message()),
                 e.what());
    }

    // Release: an empty folder goes; one holding a file (a checkpoint or anything else)
    // stays with the file; a missing folder or a file of the name is left alone.
    QVERIFY(release_checkpoint_folder(first));
    QVERIFY(!fs::exists(first));
    std::ofstream(second + "/notes.txt") << "the user's own file";
    QVERIFY(!release_checkpoint_folder(second));
    QVERIFY(fs::is_regular_file(second + "/notes.txt"));
    QVERIFY(!release_checkpoint_folder(first));
    QVERIFY(!release_checkpoint_folder(file_named));
    QVERIFY(fs::is_regular_file(file_named));
}

// A checkpoint folder that cannot be made (its parent is a file): every epoch's write
// fails, each says so in the run's log as a warning at its step, the outcome keeps the
// last failure, and the run trains to its end all the same.
void TestRunGroup::runCheckpointFailureLetsTheRunGoOn()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string blocker = dir.path().toStdString() + "/a-file";
    std::ofstream(blocker) << "not a folder";
    RunConfig c = cpu_config(Policy::FP32, 32, 0);
    c.epochs = 2;
    RunGroupOptions options;
    options.run_outputs.resize(1);
    options.run_outputs[0].checkpoint_folder = blocker + "/checkpoints";
    RunGroup group(tiny(), {c}, options);
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QCOMPARE(out.runs[0].status, RunOutcome::Status::Finished);
    QCOMPARE(out.runs[0].summary.steps, std::int64_t(32));
    QVERIFY(contains(out.runs[0].checkpoint_failure, "checkpoint at step 32"));
    QVERIFY(contains(out.runs[0].checkpoint_failure, blocker));
    std::vector<std::int64_t> warned;
    for (const auto& [run, e] : rec.events)
        if (e.kind == RunEvent::Kind::Warning && contains(e.message, "could not be written"))
            warned.push_back(e.step);
    QVERIFY(warned == (std::vector<std::int64_t>{16, 32}));
}

void TestRunGroup::runOutputsCountChecked()
{
    RunGroupOptions options;
    options.run_outputs.resize(1);
    try {
        RunGroup group(tiny(), {cpu_config(Policy::FP32, 32, 4), cpu_config(Policy::FP16, 32, 4)},
                       options);
        QFAIL("two runs with one run's outputs were taken");
    } catch (const InputError& e) {
        QVERIFY2(contains(e.what(), "1 given for 2 runs"), e.what());
    }
    options.run_outputs.resize(2);
    options.run_outputs[1].checkpoint_folder = "somewhere";
    options.run_outputs[1].keep_checkpoints = 0;
    QVERIFY_THROWS_EXCEPTION(
        InputError,
        RunGroup(tiny(), {cpu_config(Policy::FP32, 32, 4), cpu_config(Policy::FP16, 32, 4)},
                 options));
}
// RunOutputs::checkpoint_file (mixlab-cli train --save-checkpoint): one file, replaced at
// each epoch's end, so after two epochs it holds step 32 and its folder holds nothing else
// (no epoch-named files, no .tmp left behind).
void TestRunGroup::namedCheckpointFileReplacedInPlace()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string file = dir.path().toStdString() + "/mine.ckpt";
    RunConfig c = cpu_config(Policy::FP32, 32, 0);
    c.epochs = 2;
    RunGroupOptions options;
    options.run_outputs.resize(1);
    options.run_outputs[0].checkpoint_file = file;
    std::vector<std::int64_t> seen; // the file's step as each epoch's first step begins
    Recorder rec;
    rec.at_step = [&](int, const StepMetrics& m) {
        if (m.step == 17) seen.push_back(read_checkpoint_header(file).step);
    };
    RunGroup group(tiny(), {c}, options);
    const GroupOutcome out = group.run(rec, rec);
    QCOMPARE(out.runs[0].status, RunOutcome::Status::Finished);
    QVERIFY2(out.runs[0].checkpoint_failure.empty(), out.runs[0].checkpoint_failure.c_str());
    QVERIFY(seen == (std::vector<std::int64_t>{16}));
    QCOMPARE(read_checkpoint_header(file).step, std::int64_t(32));
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path().toStdString()))
        names.push_back(e.path().filename().string());
    QVERIFY(names == (std::vector<std::string>{"mine.ckpt"}));
}

// A named checkpoint that cannot be written (its folder is missing) fails its run at the
// first epoch's end, naming the file; the other run of the group, whose checkpoint folder
// is the app's safety net, trains to its end and keeps its checkpoint.
void TestRunGroup::namedCheckpointFailureFailsTheRun()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string root = dir.path().toStdString();
    const std::string file = root + "/no-such-folder/mine.ckpt";
    std::vector<RunConfig> configs = {cpu_config(Policy::FP32, 32, 0),
                                      cpu_config(Policy::MixedFP16, 32, 0)};
    for (RunConfig& c : configs) c.epochs = 2;
    RunGroupOptions options;
    options.run_outputs.resize(2);
    options.run_outputs[0].checkpoint_file = file;
    options.run_outputs[1].checkpoint_folder = root + "/run1";
    RunGroup group(tiny(), configs, options);
    Recorder rec;
    const GroupOutcome out = group.run(rec, rec);
    QCOMPARE(out.runs[0].status, RunOutcome::Status::Failed);
    QVERIFY2(contains(out.runs[0].failure, file), out.runs[0].failure.c_str());
    QCOMPARE(std::int64_t(rec.losses(0).size()), std::int64_t(16));
    QVERIFY(rec.failed == (std::vector<int>{0}));
    QVERIFY(!std::filesystem::exists(root + "/no-such-folder"));
    QCOMPARE(out.runs[1].status, RunOutcome::Status::Finished);
    const std::vector<CheckpointFile> kept = list_checkpoints(root + "/run1");
    QCOMPARE(kept.size(), std::size_t(1));
    QCOMPARE(kept[0].step, std::int64_t(32));

    // Both forms for one run: refused, naming both.
    options.run_outputs[1].checkpoint_file = file;
    try {
        RunGroup both(tiny(), configs, options);
        QFAIL("a run with a checkpoint folder and a checkpoint file was taken");
    } catch (const InputError& e) {
        QVERIFY2(contains(e.what(), "run outputs of run 1") && contains(e.what(), "not both"),
                 e.what());
    }
}

// Stopped as training begins: the named file holds step 0 (the user asked for it, and
// --resume continues from it); the safety net writes nothing, as nothing trained.
void TestRunGroup::stopBeforeTheFirstStep()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string root = dir.path().toStdString();
    std::stop_source stop;
    Recorder rec;
    rec.at_phase = [&](GroupPhase phase, int) {
        if (phase == GroupPhase::Training) stop.request_stop();
    };
    RunGroupOptions options;
    options.run_outputs.resize(2);
    options.run_outputs[0].checkpoint_file = root + "/mine.ckpt";
    options.run_outputs[1].checkpoint_folder = root + "/run1";
    RunGroup group(tiny(), {cpu_config(Policy::FP32, 32, 0), cpu_config(Policy::MixedFP16, 32, 0)},
                   options);
    const GroupOutcome out = group.run(rec, rec, stop.get_token());
    for (const RunOutcome& r : out.runs) {
        QCOMPARE(r.status, RunOutcome::Status::Stopped);
        QCOMPARE(r.summary.steps, std::int64_t(0));
        QVERIFY2(r.checkpoint_failure.empty(), r.checkpoint_failure.c_str());
    }
    QCOMPARE(read_checkpoint_header(root + "/mine.ckpt").step, std::int64_t(0));
    QVERIFY(!std::filesystem::exists(root + "/run1"));
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestRunGroup, QCoreApplication)
#include "tst_run_group.moc"
