// Numerics: the binade of a value read from its bits, the histogram ops on the CPU
// reference against exact counts at every format's edges, the shares derived from them,
// the JSON form, and a pure fp16 run of the seed MLP whose numerics show the updates its
// fp16 weights lose, named by explain.
#include "base/hd_math.h"

#include "mixlab/backend.h"
#include "check/step_graph_check.h"
#include "mixlab/backend_check.h"
#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/explain.h"
#include "mixlab/graph.h"
#include "mixlab/json_io.h"
#include "mixlab/model_spec.h"
#include "mixlab/numerics.h"
#include "mixlab/numerics_summary.h"
#include "mixlab/run_log.h"
#include "mixlab/trainer.h"
#include "test_util.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace mixlab;
using namespace mixlab::test;

namespace {

// A format's edges with the binade each must land in, written out (not computed by the
// code under test): max normal, min normal, largest subnormal, smallest subnormal, half
// of it, a quarter of it (flushed) and, where fp32 can hold it, twice the top binade
// (overflow).
struct Edges {
    NumberFormat format;
    std::vector<std::pair<float, int>> values;
    int overflow = 0, subnormal = 0, flush = 0;
};

std::vector<Edges> format_edges()
{
    const auto p2 = [](int e) { return std::ldexp(1.0f, e); };
    return {
        {NumberFormat::FP16,
         {{65504.0f, 15},
          {p2(-14), -14},
          {std::ldexp(1023.0f, -24), -15},
          {p2(-24), -24},
          {p2(-25), -25},
          {p2(-26), -26},
          {p2(16), 16}},
         1,
         3,
         1},
        {NumberFormat::BF16,
         {{3.3895313892515355e38f, 127},
          {p2(-126), -126},
          {std::ldexp(127.0f, -133), -127},
          {p2(-133), -133},
          {p2(-134), -134},
          {p2(-135), -135}},
         0,
         3,
         1},
        {NumberFormat::FP8E4M3,
         {{448.0f, 8},
          {p2(-6), -6},
          {std::ldexp(7.0f, -9), -7},
          {p2(-9), -9},
          {p2(-10), -10},
          {p2(-11), -11},
          {p2(9), 9}},
         1,
         3,
         1},
        {NumberFormat::FP8E5M2,
         {{57344.0f, 15},
          {p2(-14), -14},
          {std::ldexp(3.0f, -16), -15},
          {p2(-16), -16},
          {p2(-17), -17},
          {p2(-18), -18},
          {p2(16), 16}},
         1,
         3,
         1},
    };
}

// Zeros of both signs, both infinities and a NaN: counted apart.
const float k_specials[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};

std::vector<std::uint32_t> counters(Backend& be, const Buffer& counts)
{
    float* host = be.host_alloc(counts.count());
    be.copy_raw_to_host_async(counts, counts.count() * 4, host);
    be.synchronize();
    std::vector<std::uint32_t> c(counts.count());
    std::memcpy(c.data(), host, c.size() * 4);
    be.host_free(host);
    return c;
}

ValueHistogram histogram_of(Backend& be, const std::vector<float>& values, DType t)
{
    Buffer x = upload(be, values, t);
    Buffer counts = be.alloc(hd::k_value_slots, DType::I32);
    be.fill(counts, 0.0f);
    be.value_histogram(x, counts, 0);
    ValueHistogram h;
    h.add_slots(counters(be, counts).data());
    return h;
}

// Collects what a run reports.
struct Collect : MetricsSink {
    std::vector<StepMetrics> steps;
    std::vector<NumericsSample> numerics;
    void on_step(int, const StepMetrics& m) override { steps.push_back(m); }
    void on_epoch(int, const EpochMetrics&) override {}
    void on_event(int, const RunEvent&) override {}
    void on_numerics(int, const NumericsSample& s) override { numerics.push_back(s); }
};

} // namespace

class TestNumerics : public QObject {
    Q_OBJECT

private slots:
    void binadeFromBits();
    void valueHistogramCountsEdges();
    void valueHistogramOf16BitStorage();
    void sharesAtEachFormatsEdges();
    void formatLimitsMatchRounding();
    void shiftedShares();
    void updateHistogramAndLostShares();
    void bestShiftForPerTensorScaling();
    void cpuAgreesWithItselfInCheck();
    void jsonRoundTrip();
    void runConfigField();
    void pureFp16SeedMlpLosesUpdates();
    void activationsNearFp16Overflow();
};

void TestNumerics::binadeFromBits()
{
    // Just below a power of two stays in the binade below: a float log2 would round up.
    QCOMPARE(hd::binade_of(std::nextafter(1.0f, 0.0f)), -1);
    QCOMPARE(hd::binade_of(1.0f), 0);
    QCOMPARE(hd::binade_of(-1.5f), 0);
    QCOMPARE(hd::binade_of(std::nextafter(2.0f, 0.0f)), 0);
    QCOMPARE(hd::binade_of(std::numeric_limits<float>::max()), 127);
    QCOMPARE(hd::binade_of(std::numeric_limits<float>::min()), -126);
    QCOMPARE(hd::binade_of(std::nextafter(std::numeric_limits<float>::min(), 0.0f)), -127);
    QCOMPARE(hd::binade_of(std::numeric_limits<float>::denorm_min()), -149);
    QCOMPARE(hd::binade_of(std::ldexp(3.0f, -149)), -148);
    QCOMPARE(hd::value_slot(0.0f), int(hd::k_value_zero));
    QCOMPARE(hd::value_slot(-0.0f), int(hd::k_value_zero));
    QCOMPARE(hd::value_slot(-k_inf), int(hd::k_value_neg_inf));
    QCOMPARE(hd::value_slot(k_inf), int(hd::k_value_pos_inf));
    QCOMPARE(hd::value_slot(-k_nan), int(hd::k_value_nan));
    QCOMPARE(hd::value_slot(std::numeric_limits<float>::denorm_min()), 0);
}

void TestNumerics::valueHistogramCountsEdges()
{
    auto be = make_backend(DeviceChoice::CPU);
    std::vector<float> values(std::begin(k_specials), std::end(k_specials));
    std::map<int, std::uint64_t> expected;
    for (const Edges& e : format_edges())
        for (const auto& [v, binade] : e.values) {
            values.push_back(v);
            values.push_back(-v); // the sign does not matter
            expected[binade] += 2;
        }
    const ValueHistogram h = histogram_of(*be, values, DType::F32);
    for (int b = k_numerics_binade_min; b <= k_numerics_binade_max; ++b)
        QVERIFY2(h.at(b) == expected[b], qPrintable(QString("binade %1: %2 counted, %3 expected")
                                                        .arg(b)
                                                        .arg(h.at(b))
                                                        .arg(expected[b])));
    QCOMPARE(h.zero, std::uint64_t(2));
    QCOMPARE(h.pos_inf, std::uint64_t(1));
    QCOMPARE(h.neg_inf, std::uint64_t(1));
    QCOMPARE(h.nan, std::uint64_t(1));
    QCOMPARE(h.total(), std::uint64_t(values.size()));

    // The op adds: a second tensor into the same counters at an offset.
    Buffer counts = be->alloc(hd::k_value_slots + 5, DType::I32);
    be->fill(counts, 0.0f);
    Buffer a = upload(*be, {1.0f, 2.0f}), b = upload(*be, {1.5f});
    be->value_histogram(a, counts, 5);
    be->value_histogram(b, counts, 5);
    const auto c = counters(*be, counts);
    QCOMPARE(c[5 + 0 - hd::k_binade_min], 2u);
    QCOMPARE(c[5 + 1 - hd::k_binade_min], 1u);
    QCOMPARE(c[0], 0u);
}

void TestNumerics::valueHistogramOf16BitStorage()
{
    // Stored as fp16, the fp16 edges keep their binades, half the smallest subnormal
    // becomes zero (ties to even) and twice the top binade inf.
    auto be = make_backend(DeviceChoice::CPU);
    const Edges fp16 = format_edges().front();
    std::vector<float> values;
    for (const auto& [v, binade] : fp16.values) values.push_back(v);
    const ValueHistogram h = histogram_of(*be, values, DType::F16);
    QCOMPARE(h.at(15), std::uint64_t(1));
    QCOMPARE(h.at(-14), std::uint64_t(1));
    QCOMPARE(h.at(-15), std::uint64_t(1));
    QCOMPARE(h.at(-24), std::uint64_t(1));
    QCOMPARE(h.zero, std::uint64_t(2)); // 2^-25 and 2^-26
    QCOMPARE(h.pos_inf, std::uint64_t(1));
}

void TestNumerics::sharesAtEachFormatsEdges()
{
    auto be = make_backend(DeviceChoice::CPU);
    for (const Edges& e : format_edges()) {
        std::vector<float> values(std::begin(k_specials), std::end(k_specials));
        for (const auto& [v, binade] : e.values) values.push_back(v);
        const ValueHistogram h = histogram_of(*be, values, DType::F32);
        const FormatShares s = format_shares(h, e.format);
        const double n = double(values.size());
        const QString name = QString::fromUtf8(format_limits(e.format).name.data());
        QVERIFY2(s.overflow == e.overflow / n, qPrintable(name));
        QVERIFY2(s.subnormal == e.subnormal / n, qPrintable(name));
        QVERIFY2(s.flush == e.flush / n, qPrintable(name));
        QVERIFY2(s.zero == 2 / n, qPrintable(name));
        QVERIFY2(s.non_finite == 3 / n, qPrintable(name));
    }
}

void TestNumerics::formatLimitsMatchRounding()
{
    // The limits agree with the storage rounding the CPU backend emulates (base/dtype).
    for (auto [f, t] :
         {std::pair{NumberFormat::FP16, DType::F16}, std::pair{NumberFormat::BF16, DType::BF16}}) {
        const FormatLimits& l = format_limits(f);
        QCOMPARE(double(round_to(t, float(l.max_finite))), l.max_finite);
        QCOMPARE(hd::binade_of(float(l.max_finite)), l.max_binade);
        const float smallest = std::ldexp(1.0f, l.min_subnormal_binade());
        QCOMPARE(round_to(t, smallest), smallest);
        QCOMPARE(round_to(t, std::ldexp(1.0f, l.min_subnormal_binade() - 2)), 0.0f);
        QCOMPARE(round_to(t, std::ldexp(1.0f, l.min_normal_binade)),
                 std::ldexp(1.0f, l.min_normal_binade));
        if (l.max_binade < 127)
            QVERIFY(std::isinf(round_to(t, std::ldexp(1.0f, l.max_binade + 1))));
    }
    QCOMPARE(format_limits(NumberFormat::FP8E4M3).min_subnormal_binade(), -9);
    QCOMPARE(format_limits(NumberFormat::FP8E5M2).min_subnormal_binade(), -16);
}

void TestNumerics::shiftedShares()
{
    // Gradients of 2^-30 flush in fp16 at scale 1 and are normal at scale 2^16.
    auto be = make_backend(DeviceChoice::CPU);
    const ValueHistogram h = histogram_of(*be, {std::ldexp(1.0f, -30), 1.0f}, DType::F32);
    QCOMPARE(format_shares(h, NumberFormat::FP16).flush, 0.5);
    QCOMPARE(format_shares(h, NumberFormat::FP16, 16).flush, 0.0);
    QCOMPARE(format_shares(h, NumberFormat::FP16, 16).overflow, 0.5); // 1.0 x 2^16
    QCOMPARE(power_of_two_exponent(65536.0f), std::optional<int>(16));
    QCOMPARE(power_of_two_exponent(0.5f), std::optional<int>(-1));
    QVERIFY(!power_of_two_exponent(1000.0f));
    QVERIFY(!power_of_two_exponent(0.0f));
    const auto r = central_range(h, 1.0);
    QVERIFY(r);
    QCOMPARE(r->lo, -30);
    QCOMPARE(r->hi, 0);
}

void TestNumerics::updateHistogramAndLostShares()
{
    auto be = make_backend(DeviceChoice::CPU);
    const auto p2 = [](int e) { return std::ldexp(1.0f, e); };
    // (before, after, grad) and the slot each must land in.
    struct Case {
        float before, after, grad;
        int slot;
    };
    const int lo = hd::k_update_d_min;
    const Case cases[] = {
        {1.0f, 1.0f + p2(-12), 1.0f, -12 - lo},     // lost in fp16 (d <= -12) and bf16
        {1.0f, 1.0f + p2(-10), 1.0f, -10 - lo},     // kept in fp16, lost in bf16 (d <= -9)
        {-2.0f, -2.0f + p2(-20), 1.0f, -21 - lo},   // binade 1, update binade -20
        {1.0f, 1.0f, 0.5f, hd::k_update_lost},      // unchanged, gradient not zero
        {1.0f, 1.0f, 0.0f, hd::k_update_idle},      // nothing to apply
        {0.0f, 0.5f, 1.0f, hd::k_update_from_zero}, // no size to compare against
        {k_nan, 1.0f, 1.0f, hd::k_update_non_finite}, {1.0f, 1.0f, k_inf, hd::k_update_non_finite},
        {p2(-100), 1.0f, 1.0f, hd::k_update_above}, // d = 100
    };
    std::vector<float> before, after, grad;
    for (const Case& c : cases) {
        before.push_back(c.before);
        after.push_back(c.after);
        grad.push_back(c.grad);
        QCOMPARE(hd::update_slot(c.before, c.after, c.grad), c.slot);
    }
    Buffer b = upload(*be, before), a = upload(*be, after), g = upload(*be, grad);
    Buffer counts = be->alloc(hd::k_update_slots, DType::I32);
    be->fill(counts, 0.0f);
    be->update_histogram(b, a, g, counts, 0);
    UpdateHistogram u;
    u.add_slots(counters(*be, counts).data());
    std::vector<std::uint32_t> expected(hd::k_update_slots, 0);
    for (const Case& c : cases) expected[std::size_t(c.slot)] += 1;
    QCOMPARE(counters(*be, counts), expected);
    // 9 elements, 1 idle and 2 non-finite: 6 updates. fp16 loses d <= -12 (two) and the
    // one already lost; bf16 also d = -10.
    QCOMPARE(*lost_update_share(u, NumberFormat::FP16), 3.0 / 6.0);
    QCOMPARE(*lost_update_share(u, NumberFormat::BF16), 4.0 / 6.0);
    QVERIFY(!lost_update_share(UpdateHistogram{}, NumberFormat::FP16));
}

void TestNumerics::bestShiftForPerTensorScaling()
{
    // 100 values at each of 2^-40..2^0 (41 binades) against E4M3's window of 19 binades
    // that neither flush nor saturate (2^-10..2^8): 22 binades of values stay out; the
    // window starts at the lowest value (shift -10 - (-40) = 30), the 22 above saturate.
    BinadeCounts c;
    for (int e = -40; e <= 0; ++e) c.binades[e] = 100;
    c.zero = 100; // zeros are no tail: they stay zero at any shift
    const std::optional<ShiftFit> e4m3 = best_shift(c, NumberFormat::FP8E4M3);
    QVERIFY(e4m3);
    QCOMPARE(e4m3->binades, 19);
    QCOMPARE(e4m3->shift, 30);
    QCOMPARE(e4m3->flush, 0.0);
    QCOMPARE(e4m3->saturate, 2200.0 / 4200.0);
    // A peak: the window goes where most values are, whatever the order of the bins.
    BinadeCounts peak;
    peak.binades[-60] = 1;
    for (int e = -20; e <= -5; ++e) peak.binades[e] = 10;
    peak.binades[40] = 1;
    const std::optional<ShiftFit> p = best_shift(peak, NumberFormat::FP8E4M3);
    QVERIFY(p);
    QCOMPARE(p->shift, -10 - (-20));
    QCOMPARE(p->flush, 1.0 / 162.0);
    QCOMPARE(p->saturate, 1.0 / 162.0);
    // E5M2's 33 binades (2^-17..2^15) hold the 41 of the first, but for 8.
    const std::optional<ShiftFit> e5m2 = best_shift(c, NumberFormat::FP8E5M2);
    QCOMPARE(e5m2->binades, 33);
    QCOMPARE(e5m2->flush + e5m2->saturate, 800.0 / 4200.0);
    QVERIFY(!best_shift(BinadeCounts{}, NumberFormat::FP8E4M3));
}

void TestNumerics::cpuAgreesWithItselfInCheck()
{
    // The check cases the GPU run uses (mixlab-cli check --filter histogram) run here with
    // the CPU on both sides: they build, run and compare exactly.
    auto a = make_backend(DeviceChoice::CPU), b = make_backend(DeviceChoice::CPU);
    const std::vector<CheckResult> results = run_backend_checks(*a, *b, 1, "histogram");
    QVERIFY(results.size() >= 27);
    for (const CheckResult& r : results)
        QVERIFY2(r.passed, qPrintable(QString::fromStdString(r.name + ": " + r.detail)));
    // The whole-run check of the sampled step's recording (on the CPU both runs go op by
    // op): a sample every 3 steps, losses as without sampling; under mixed_fp16, and under
    // mixed_fp8 with layer 1's GEMM writing layer 2's E4M3 input (the sampled steps also
    // write its 16-bit output).
    const std::vector<CheckResult> runs = run_step_graph_checks(*a, 1, "numerics");
    QCOMPARE(runs.size(), std::size_t(2));
    for (const CheckResult& r : runs)
        QVERIFY2(r.passed && r.detail.find("skipped") == std::string::npos,
                 qPrintable(QString::fromStdString(r.name + ": " + r.detail)));
}

void TestNumerics::jsonRoundTrip()
{
    auto be = make_backend(DeviceChoice::CPU);
    NumericsSample s;
    s.step = 40;
    s.loss_scale = 65536.0f;
    LayerNumerics l;
    l.path = "layer 1";
    l.type = "dense";
    l.weights = histogram_of(*be, {0.5f, -3.0f, 0.0f, k_nan}, DType::F32);
    l.activations = ValueHistogram{}; // empty: "counts": []
    UpdateHistogram u;
    u.ratios[5] = 7;
    u.lost = 2;
    l.updates = u;
    s.layers.push_back(l);
    s.layers.push_back(LayerNumerics{"layer 2", "dropout", std::nullopt,
                                     histogram_of(*be, {1e-30f}, DType::F32), std::nullopt,
                                     std::nullopt});
    const nlohmann::ordered_json j = numerics_sample_to_json(s);
    QCOMPARE(j["layers"][0]["weights"]["binade_min"].get<int>(), -1);
    QCOMPARE(j["layers"][0]["weights"]["counts"].size(), std::size_t(3)); // -1, 0, 1
    QVERIFY(!j["layers"][1].contains("weights"));
    const nlohmann::json plain = nlohmann::json::parse(j.dump());
    QCOMPARE(numerics_sample_from_json(JsonReader(plain)), s);

    RunLog log;
    log.add_run(RunConfig{});
    log.on_numerics(0, s);
    const RunLog back = RunLog::parse(log.to_json());
    QCOMPARE(back.numerics(0).size(), std::size_t(1));
    QCOMPARE(back.numerics(0).front(), s);

    // A count outside the histogram is named.
    nlohmann::json bad = plain;
    bad["layers"][0]["weights"]["binade_min"] = 127;
    QVERIFY_THROWS_EXCEPTION(InputError, numerics_sample_from_json(JsonReader(bad)));
}

void TestNumerics::runConfigField()
{
    // Written only when on, so configs without it read and write as before.
    QVERIFY(run_config_to_json(RunConfig{}).find("numerics_every") == std::string::npos);
    RunConfig c;
    c.numerics_every = 50;
    QCOMPARE(parse_run_config(run_config_to_json(c)).numerics_every, 50);
    try {
        parse_run_config(R"({"format": "mixlab-run/1", "numerics_every": -3})");
        QFAIL("a negative interval was accepted");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("\"numerics_every\" must be 0 (off)") !=
                     std::string::npos,
                 e.what());
    }
}

void TestNumerics::pureFp16SeedMlpLosesUpdates()
{
    const ModelSpec spec =
        load_model_spec(std::string(MIXLAB_SOURCE_DIR) + "/resources/models/seed-mlp.json");
    const Dataset data = make_synthetic(512, 64, 3);
    auto be = make_backend(DeviceChoice::CPU);
    DeviceDataset dev(data, *be);
    const Graph graph =
        build_graph(spec, Shape{{data.height, data.width, data.channels}}, data.classes);
    RunConfig c;
    c.policy = Policy::FP16;
    c.batch_size = 32;
    c.steps = 8;
    c.device = DeviceChoice::CPU;
    c.numerics_every = 4;
    Collect sampled, plain;
    {
        TrainingRun run(graph, c, dev, *be);
        train(run, sampled);
    }
    {
        RunConfig off = c;
        off.numerics_every = 0;
        TrainingRun run(graph, off, dev, *be);
        train(run, plain);
    }
    // Sampling reads the step's tensors and changes nothing the step computes.
    QCOMPARE(sampled.steps.size(), plain.steps.size());
    for (std::size_t i = 0; i < plain.steps.size(); ++i)
        QCOMPARE(sampled.steps[i].loss, plain.steps[i].loss);
    QVERIFY(plain.numerics.empty());

    QCOMPARE(sampled.numerics.size(), std::size_t(2));
    QCOMPARE(sampled.numerics[0].step, std::int64_t(4));
    QCOMPARE(sampled.numerics[1].step, std::int64_t(8));
    const NumericsSample& s = sampled.numerics.back();
    QCOMPARE(s.layers.size(), std::size_t(3)); // the three dense layers (flatten shares)
    const std::uint64_t batch_rows = 32;
    for (const LayerNumerics& l : s.layers) {
        QCOMPARE(QString::fromStdString(l.type), QString("dense"));
        QVERIFY(l.weights && l.activations && l.gradients && l.updates);
        QCOMPARE(l.weights->total(), l.gradients->total());
        QCOMPARE(l.updates->total(), l.weights->total());
        QCOMPARE(l.activations->total() % batch_rows, std::uint64_t(0));
        // fp16 weights: an update below half an ulp leaves the weight as it was.
        QVERIFY2(l.updates->lost > 0, qPrintable(QString::fromStdString(l.path)));
    }
    const NumericsSummary sum = summarize_numerics(sampled.numerics);
    QVERIFY(*sum.layers.front().lost_in(NumberFormat::FP16) > explain_limits::k_lost_updates_share);

    RunFacts f;
    f.policy = Policy::FP16;
    f.graph = graph;
    f.numerics = sampled.numerics;
    const std::vector<Explanation> ex = explain({f});
    const Explanation* lost = nullptr;
    for (const Explanation& e : ex)
        if (e.id == "numerics_lost_updates") lost = &e;
    QVERIFY(lost);
    QCOMPARE(lost->severity, Explanation::Severity::Warning);
    QVERIFY2(lost->sentence.find("Pure fp16 weights lost") == 0, lost->sentence.c_str());
    QVERIFY2(lost->sentence.find("in layer ") != std::string::npos, lost->sentence.c_str());
    QVERIFY2(lost->sentence.find("(from step 4)") != std::string::npos, lost->sentence.c_str());
    QVERIFY(lost->fix && lost->fix->policy == Policy::MixedFP16);
    // The layer it names is the one with the largest share.
    const LayerNumericsSummary* worst = &sum.layers.front();
    for (const LayerNumericsSummary& l : sum.layers)
        if (*l.lost_in(NumberFormat::FP16) > *worst->lost_in(NumberFormat::FP16)) worst = &l;
    QVERIFY2(lost->sentence.find(worst->path + " (dense)") != std::string::npos,
             lost->sentence.c_str());
    bool scaling = false;
    for (const Explanation& e : ex) scaling |= e.id == "numerics_loss_scaling";
    QVERIFY(scaling);

    // Without numerics the rules stay silent.
    f.numerics.clear();
    for (const Explanation& e : explain({f})) QVERIFY(e.id.rfind("numerics_", 0) != 0);
}

void TestNumerics::activationsNearFp16Overflow()
{
    // One sample whose layer 2 output reaches 2^14 (within a factor 4 of 65504) and whose
    // layer 1 output stays small: the rule names layer 2 with the float32 fix, once.
    auto be = make_backend(DeviceChoice::CPU);
    const ModelSpec spec =
        load_model_spec(std::string(MIXLAB_SOURCE_DIR) + "/resources/models/seed-mlp.json");
    const Graph graph = build_graph(spec, Shape{{32, 32, 3}}, 10);
    NumericsSample s;
    s.step = 30;
    s.layers.push_back(LayerNumerics{"layer 1", "dense", std::nullopt,
                                     histogram_of(*be, {1.0f, 300.0f}, DType::F32), std::nullopt,
                                     std::nullopt});
    s.layers.push_back(LayerNumerics{"layer 2", "dense", std::nullopt,
                                     histogram_of(*be, {1.0f, 2.0f, 3.0f, 20000.0f}, DType::F32),
                                     std::nullopt, std::nullopt});
    RunFacts f;
    f.policy = Policy::MixedFP16;
    f.graph = graph;
    f.numerics = {s};
    int found = 0;
    for (const Explanation& e : explain({f})) {
        if (e.id != "numerics_activation_headroom") continue;
        ++found;
        QVERIFY2(e.sentence.find("layer 2 (dense): 25.00% of its outputs reach 2^14 (from step "
                                 "30)") == 0,
                 e.sentence.c_str());
        QCOMPARE(e.severity, Explanation::Severity::Warning);
        QVERIFY(e.fix && e.fix->kind == FixKind::SetDtypeFloat32 && e.fix->path == "layer 2");
    }
    QCOMPARE(found, 1);
}

QTEST_APPLESS_MAIN(TestNumerics)
#include "tst_numerics.moc"
