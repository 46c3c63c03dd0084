// The max-batch finder: the search against fake trials (where the largest batch is
// known), its bounds and robustness, a stop between trials, and real trials of a small
// MLP on the CPU backend.
#include "mixlab/backend.h"
#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/max_batch.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <functional>
#include <set>
#include <stop_token>
#include <stdexcept>

using namespace mixlab;

namespace {

// A fake trial that fits exactly the batches `fits_at` accepts and records every call.
struct FakeTrials {
    std::function<bool(int)> fits_at;
    std::vector<int> calls;
    BatchTrial operator()(int batch)
    {
        calls.push_back(batch);
        BatchTrial t;
        t.batch = batch;
        t.fits = fits_at(batch);
        if (t.fits) {
            t.step_ms = 1.0 + batch / 100.0; // anything positive that grows with the batch
            t.samples_per_s = batch * 1000.0 / t.step_ms;
        } else {
            t.why_not = "fake out of memory at " + std::to_string(batch);
            t.out_of_memory = true;
        }
        return t;
    }
};

// What every search must give, whatever the trials said: sorted unique trials matching
// the calls made, a largest fit that was seen to fit, and a first failure seen to fail
// above it, carrying its reason.
void check_consistent(const MaxBatchResult& r, const FakeTrials& fake)
{
    QCOMPARE(r.trials.size(), fake.calls.size());
    const std::set<int> unique(fake.calls.begin(), fake.calls.end());
    QCOMPARE(unique.size(), fake.calls.size()); // no batch tried twice
    for (std::size_t i = 1; i < r.trials.size(); ++i)
        QVERIFY2(r.trials[i - 1].batch < r.trials[i].batch, "the curve is sorted by batch");
    for (const BatchTrial& t : r.trials) {
        QVERIFY(unique.count(t.batch));
        QCOMPARE(t.fits, fake.fits_at(t.batch));
    }
    if (r.largest_fit > 0) {
        QVERIFY(r.largest() != nullptr);
        QVERIFY(r.largest()->fits);
    }
    if (r.first_failure > 0) {
        QVERIFY(r.first_failure > r.largest_fit);
        QVERIFY(!fake.fits_at(r.first_failure));
        QCOMPARE(QString::fromStdString(r.failure_reason),
                 QString("fake out of memory at %1").arg(r.first_failure));
        QVERIFY(r.failure_out_of_memory);
        // Nothing between them was tried: the bracket is as tight as the search got.
        for (const BatchTrial& t : r.trials)
            QVERIFY(t.batch <= r.largest_fit || t.batch >= r.first_failure);
    }
}

ModelSpec tiny_mlp()
{
    ModelSpec spec;
    spec.name = "tiny-mlp";
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    LayerSpec hidden;
    hidden.units = 16;
    hidden.activation = Activation::Relu;
    LayerSpec out;
    out.units = 10;
    spec.layers = {flatten, hidden, out};
    return spec;
}

} // namespace

class TestMaxBatch : public QObject {
    Q_OBJECT

private slots:
    void search_finds_the_limit_data();
    void search_finds_the_limit();
    void search_handles_glitches_data();
    void search_handles_glitches();
    void search_rejects_bad_options_data();
    void search_rejects_bad_options();
    void search_passes_other_errors_on();
    void stopped_search_keeps_what_it_found();
    void json_holds_the_curve();
    void real_trial_on_cpu();
    void real_search_on_cpu_is_bounded_by_the_dataset();
};

void TestMaxBatch::search_finds_the_limit_data()
{
    QTest::addColumn<int>("largest"); // the fake fits every batch up to this one
    QTest::addColumn<double>("resolution");
    // start 32, limit 65536 throughout.
    QTest::newRow("nothing fits") << 0 << 0.0;
    QTest::newRow("only batch 1") << 1 << 0.0;
    QTest::newRow("5, below start and below 8") << 5 << 0.0;
    QTest::newRow("20, below start") << 20 << 0.0;
    QTest::newRow("31, just below start") << 31 << 0.0;
    QTest::newRow("32, start itself") << 32 << 0.0;
    QTest::newRow("100") << 100 << 0.0;
    QTest::newRow("1000") << 1000 << 0.0;
    QTest::newRow("4097, just past a power of two") << 4097 << 0.0;
    QTest::newRow("30001") << 30001 << 0.0;
    QTest::newRow("65535, just below the limit") << 65535 << 0.0;
    QTest::newRow("65536, the limit") << 65536 << 0.0;
    QTest::newRow("100000, above the limit") << 100000 << 0.0;
    QTest::newRow("1000 at 2%") << 1000 << 0.02;
    QTest::newRow("30001 at 2%") << 30001 << 0.02;
    QTest::newRow("12345 at 10%") << 12345 << 0.10;
}

void TestMaxBatch::search_finds_the_limit()
{
    QFETCH(int, largest);
    QFETCH(double, resolution);
    MaxBatchOptions o;
    o.start = 32;
    o.limit = 65536;
    o.multiple = 8;
    o.resolution = resolution;
    FakeTrials fake{[largest](int b) { return b <= largest; }, {}};
    const MaxBatchResult r = find_max_batch(std::ref(fake), o);
    check_consistent(r, fake);

    if (largest >= o.limit) {
        QCOMPARE(r.largest_fit, o.limit);
        QVERIFY(r.reached_limit);
        QCOMPARE(r.first_failure, 0);
    } else if (largest == 0) {
        QCOMPARE(r.largest_fit, 0);
        QCOMPARE(r.first_failure, 1);
    } else {
        QVERIFY(!r.reached_limit);
        QVERIFY(r.largest_fit <= largest);
        QVERIFY(r.first_failure > largest);
        // Below 8 the answer is exact; above, exact to a multiple of 8 with resolution 0,
        // else within the resolution (never coarser than 8).
        if (largest < o.multiple)
            QCOMPARE(r.largest_fit, largest);
        else if (resolution == 0.0)
            QCOMPARE(r.largest_fit, largest / 8 * 8);
        else
            QVERIFY2(largest - r.largest_fit <=
                         std::max(8.0, std::floor(resolution * r.largest_fit)) + 8,
                     qPrintable(QString("found %1 for %2").arg(r.largest_fit).arg(largest)));
        if (r.largest_fit >= o.start) QCOMPARE(r.largest_fit % 8, 0);
    }
    // Logarithmic: doubling from 32 to 65536 is 12 trials, halving to 1 is 6, bisecting
    // a gap of 32768 down to 8 is 12; a linear scan would be thousands.
    QVERIFY2(fake.calls.size() <= 26, qPrintable(QString("%1 trials").arg(fake.calls.size())));
}

void TestMaxBatch::search_handles_glitches_data()
{
    QTest::addColumn<int>("kind");
    QTest::newRow("one batch on the doubling path fails") << 0;
    QTest::newRow("larger batches fit again past a failure") << 1;
    QTest::newRow("pseudo-random outcomes") << 2;
    QTest::newRow("start fails, a larger batch would fit") << 3;
}

void TestMaxBatch::search_handles_glitches()
{
    QFETCH(int, kind);
    std::function<bool(int)> fits;
    switch (kind) {
    case 0: fits = [](int b) { return b <= 1000 && b != 64; }; break;
    case 1: fits = [](int b) { return b <= 100 || (b >= 200 && b <= 5000); }; break;
    case 2:
        fits = [](int b) {
            const std::uint64_t h = std::uint64_t(b) * 0x9E3779B97F4A7C15ull;
            return b <= 20000 && (h >> 61) != 0; // about one batch in eight "fails"
        };
        break;
    default: fits = [](int b) { return b != 32 && b <= 3000; }; break;
    }
    MaxBatchOptions o;
    o.start = 32;
    o.limit = 65536;
    o.resolution = 0.0;
    FakeTrials fake{fits, {}};
    const MaxBatchResult r = find_max_batch(std::ref(fake), o);
    check_consistent(r, fake);
    QVERIFY(fake.calls.size() <= 26);
    if (kind == 0) {
        // It believes the failure at 64 and resolves below it; it does not go looking past.
        QCOMPARE(r.largest_fit, 56);
        QCOMPARE(r.first_failure, 64);
    }
    if (kind == 3) {
        QVERIFY(r.largest_fit >= 16);
        QCOMPARE(r.first_failure, 32);
    }
}

void TestMaxBatch::search_rejects_bad_options_data()
{
    QTest::addColumn<int>("start");
    QTest::addColumn<int>("limit");
    QTest::addColumn<int>("multiple");
    QTest::addColumn<double>("resolution");
    QTest::addColumn<int>("timed");
    QTest::newRow("start 0") << 0 << 64 << 8 << 0.02 << 5;
    QTest::newRow("limit below start") << 64 << 32 << 8 << 0.02 << 5;
    QTest::newRow("multiple 0") << 32 << 64 << 0 << 0.02 << 5;
    QTest::newRow("resolution 1") << 32 << 64 << 8 << 1.0 << 5;
    QTest::newRow("resolution NaN") << 32 << 64 << 8 << std::nan("") << 5;
    QTest::newRow("no timed steps") << 32 << 64 << 8 << 0.02 << 0;
}

void TestMaxBatch::search_rejects_bad_options()
{
    QFETCH(int, start);
    QFETCH(int, limit);
    QFETCH(int, multiple);
    QFETCH(double, resolution);
    QFETCH(int, timed);
    MaxBatchOptions o;
    o.start = start;
    o.limit = limit;
    o.multiple = multiple;
    o.resolution = resolution;
    o.timed_steps = timed;
    FakeTrials fake{[](int) { return true; }, {}};
    QVERIFY_THROWS_EXCEPTION(InputError, find_max_batch(std::ref(fake), o));
    QVERIFY(fake.calls.empty());
}

void TestMaxBatch::search_passes_other_errors_on()
{
    MaxBatchOptions o;
    const auto trial = [](int b) -> BatchTrial {
        if (b >= 128) throw std::runtime_error("the device fell off the bus");
        BatchTrial t;
        t.fits = true;
        t.step_ms = 1;
        return t;
    };
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, find_max_batch(trial, o));
}

// search_max_batch: unstopped it is find_max_batch; a stop requested during the trial at
// batch 64 lets that trial finish and count, runs no other, and answers from the trials
// seen (sorted by batch, the largest that fitted), as partial_max_batch_result does.
void TestMaxBatch::stopped_search_keeps_what_it_found()
{
    MaxBatchOptions o;
    o.start = 16;
    o.limit = 4096;
    FakeTrials whole{[](int b) { return b <= 1000; }, {}};
    const MaxBatchSearch complete = search_max_batch(std::ref(whole), o, {});
    QVERIFY(complete.complete);
    FakeTrials again{[](int b) { return b <= 1000; }, {}};
    const MaxBatchResult direct = find_max_batch(std::ref(again), o);
    QCOMPARE(complete.result.largest_fit, direct.largest_fit);
    QCOMPARE(complete.result.trials.size(), direct.trials.size());

    std::stop_source stop;
    FakeTrials fake{[](int b) { return b <= 1000; }, {}};
    const auto trial = [&](int batch) {
        if (batch == 64) stop.request_stop();
        return fake(batch);
    };
    const MaxBatchSearch cut = search_max_batch(trial, o, stop.get_token());
    QVERIFY(!cut.complete);
    QCOMPARE(fake.calls, (std::vector<int>{16, 32, 64}));
    QCOMPARE(cut.result.trials.size(), std::size_t(3));
    QCOMPARE(cut.result.trials.back().batch, 64);
    QCOMPARE(cut.result.largest_fit, 64);
    QCOMPARE(cut.result.first_failure, 0);

    // Stopped before it began: no trial at all.
    FakeTrials none{[](int) { return true; }, {}};
    const MaxBatchSearch early = search_max_batch(std::ref(none), o, stop.get_token());
    QVERIFY(!early.complete);
    QVERIFY(none.calls.empty());
    QCOMPARE(early.result.largest_fit, 0);
}

void TestMaxBatch::json_holds_the_curve()
{
    MaxBatchOptions o;
    o.start = 16;
    o.limit = 256;
    FakeTrials fake{[](int b) { return b <= 40; }, {}};
    const MaxBatchResult r = find_max_batch(std::ref(fake), o);
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray::fromStdString(max_batch_result_to_json(r)));
    QVERIFY(doc.isObject());
    const QJsonObject j = doc.object();
    QCOMPARE(j["largest_fit"].toInt(), r.largest_fit);
    QCOMPARE(j["first_failure"].toInt(), r.first_failure);
    QCOMPARE(j["curve"].toArray().size(), qsizetype(r.trials.size()));
    const QJsonObject first = j["curve"].toArray().first().toObject();
    QCOMPARE(first["batch"].toInt(), 16);
    QVERIFY(first["fits"].toBool());
    QVERIFY(first["samples_per_s"].toDouble() > 0);
    const QJsonObject last = j["curve"].toArray().last().toObject();
    QVERIFY(!last["fits"].toBool());
    QVERIFY(last["why_not"].toString().startsWith("fake out of memory"));
}

void TestMaxBatch::real_trial_on_cpu()
{
    const Dataset data = make_synthetic(256, 64, 7);
    const Graph graph =
        build_graph(tiny_mlp(), Shape{{data.height, data.width, data.channels}}, data.classes);
    const std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    DeviceDataset device_data(data, *backend);
    RunConfig c;
    c.device = DeviceChoice::CPU;
    c.batch_size = 999; // replaced by the trial's batch
    MaxBatchOptions o;
    o.warmup_steps = 1;
    o.timed_steps = 2;

    BatchTrial t = run_batch_trial(graph, c, device_data, *backend, 32, o);
    QCOMPARE(t.batch, 32);
    QVERIFY2(t.fits, t.why_not.c_str());
    QVERIFY(t.why_not.empty());
    QVERIFY(t.step_ms > 0 && std::isfinite(t.step_ms));
    // samples/s is the batch over the step time, to rounding.
    QVERIFY(std::abs(t.samples_per_s - 32 * 1000.0 / t.step_ms) <= 1e-9 * t.samples_per_s);
    // The run owned at least its weights: 3072x16 + 16 + 16x10 + 10 floats.
    QVERIFY(t.device_bytes >= std::int64_t(sizeof(float)) * (3072 * 16 + 16 + 16 * 10 + 10));
    QVERIFY(t.seconds > 0);

    t = run_batch_trial(graph, c, device_data, *backend, 257, o);
    QVERIFY(!t.fits);
    QVERIFY(!t.out_of_memory);
    QCOMPARE(QString::fromStdString(t.why_not), QString("only 256 training samples"));
    QCOMPARE(t.step_ms, 0.0);
}

void TestMaxBatch::real_search_on_cpu_is_bounded_by_the_dataset()
{
    const Dataset data = make_synthetic(200, 20, 11);
    const Graph graph =
        build_graph(tiny_mlp(), Shape{{data.height, data.width, data.channels}}, data.classes);
    const std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    DeviceDataset device_data(data, *backend);
    RunConfig c;
    c.device = DeviceChoice::CPU;
    c.policy = Policy::MixedFP16;
    MaxBatchOptions o;
    o.start = 32;
    o.limit = 1024;
    o.resolution = 0.0;
    o.warmup_steps = 1;
    o.timed_steps = 1;
    const MaxBatchResult r = find_max_batch(
        [&](int b) { return run_batch_trial(graph, c, device_data, *backend, b, o); }, o);
    // 200 samples: batches up to 200 train, the search resolves to the multiple of 8.
    QCOMPARE(r.largest_fit, 200);
    QCOMPARE(r.first_failure, 208);
    QVERIFY(!r.failure_out_of_memory);
    QCOMPARE(QString::fromStdString(r.failure_reason), QString("only 200 training samples"));
    for (const BatchTrial& t : r.trials) QCOMPARE(t.fits, t.batch <= 200);
    QVERIFY(r.largest()->step_ms > 0);
}

QTEST_APPLESS_MAIN(TestMaxBatch)
#include "tst_max_batch.moc"
