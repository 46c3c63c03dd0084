// The explain report's HTML: every run and sentence in it, text escaped, one inline SVG
// per chart (the phase chart only with profiles), balanced tags, the layer table cut at
// 20, the loss decimation, the numerics heatmaps' cells and band lines; and `mixlab-cli
// explain --report` end to end on the CPU.
#include "mixlab/report.h"
#include "mixlab/step_time.h"

#include "report/report_heatmap.h"
#include "report/report_svg.h"

#include "crafted_numerics.h"

#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <utility>
#include <vector>

using namespace mixlab;
using test::updates_at;
using test::values_at;

namespace {

const char* k_odd_name = "net <v2> & \"fast\"";
const char* k_odd_name_escaped = "net &lt;v2&gt; &amp; &quot;fast&quot;";

// A profile with random phase and layer times (seeded): never all zeros, so a chart that
// drops a value shows.
StepProfile random_profile(std::mt19937& rng, int n_layers)
{
    std::uniform_real_distribution<double> ms(0.05, 3.0);
    StepProfile p;
    p.steps = 10;
    for (double& v : p.phase_ms) v = ms(rng);
    for (double v : p.phase_ms) p.device_ms += v;
    p.step_ms = p.device_ms * 1.02;
    p.overhead_ms = ms(rng);
    p.wall_ms = p.device_ms + p.overhead_ms;
    p.gpu_busy_fraction = p.device_ms / p.wall_ms;
    for (int i = 0; i < n_layers; ++i) {
        LayerTime l;
        l.path = "layer " + std::to_string(i);
        l.type = i % 2 ? "dense" : "activation";
        // Distinct times, the largest first-but-one, so the ordering is visible.
        l.forward_ms = 0.01 * double((i * 7) % n_layers + 1);
        l.backward_ms = 2 * l.forward_ms;
        l.flops = 1e6 * double(i + 1);
        l.bytes = 1e5 * double(i + 1);
        l.is_gemm = i % 2 == 1;
        l.tensor_cores = i % 4 == 1;
        l.tensor_core_note = l.is_gemm && !l.tensor_cores ? "units 1001 not a multiple of 8" : "";
        p.layers.push_back(l);
    }
    return p;
}

ReportInput make_input(bool profiles, unsigned seed, int n_layers = 6)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> noise(0.0f, 0.2f);
    ReportInput in;
    in.created_at = "2026-11-30 00:00 UTC";
    in.dataset = "synthetic";
    in.environment.backend = BackendKind::Cpu;
    in.environment.device_name = "CPU <test> device";
    in.environment.mixlab_version = "0.1.0";
    const Policy policies[] = {Policy::FP32, Policy::MixedFP16, Policy::MixedBF16};
    for (int r = 0; r < 3; ++r) {
        RunFacts f;
        f.policy = policies[r];
        f.batch = 64;
        f.graph.name = k_odd_name;
        f.graph.input = Shape{{8, 8, 3}};
        f.graph.classes = 10;
        f.graph.total_params = 123456;
        f.graph.total_flops = 2500000;
        f.summary.steps = 800;
        f.summary.median_step_ms = 4.0 / (1 + r) + double(noise(rng));
        f.summary.mean_step_ms = f.summary.median_step_ms * 1.05;
        f.summary.skipped_steps = r;
        f.summary.final_loss_scale = r == 1 ? 32768.0f : 1.0f;
        f.loss_scale_mode = r == 1 ? LossScaleMode::Dynamic : LossScaleMode::None;
        for (int s = 0; s < 800; ++s)
            f.train_loss.push_back(2.3f * std::exp(-0.003f * float(s)) + noise(rng));
        f.summary.final_train_loss = f.train_loss.back();
        if (profiles) f.profile = random_profile(rng, n_layers);
        in.runs.push_back(f);
        RunConfig c;
        c.policy = f.policy;
        c.batch_size = f.batch;
        c.steps = 800;
        in.configs.push_back(c);
    }
    in.run_names = {"fp32 <base>", "mixed_fp16", "mixed_bf16"};
    Explanation e;
    e.id = "speed";
    e.run = 1;
    e.sentence = "mixed_fp16 ran 1.8x faster & used < half the time";
    e.suggestion = "keep \"mixed_fp16\"";
    in.explanations.push_back(e);
    e.id = "dims";
    e.run = -1;
    e.severity = Explanation::Severity::Advice;
    e.sentence = "layer 3 has 1001 units";
    e.suggestion = "";
    in.explanations.push_back(e);
    return in;
}

int count(const QString& text, const QString& what) { return int(text.count(what)); }

// Element nesting as a stack: every start tag closed in order, void and self-closed
// elements aside. Returns "" when the page is well formed, else what broke.
QString nesting_error(const QString& html)
{
    static const QStringList k_void = {"meta", "br", "hr", "img", "link", "!doctype"};
    static const QRegularExpression tag("<(/?)([A-Za-z!][A-Za-z0-9]*)[^>]*?(/?)>");
    QStringList stack;
    bool in_style = false;
    auto it = tag.globalMatch(html);
    while (it.hasNext()) {
        const auto m = it.next();
        const QString name = m.captured(2).toLower();
        if (in_style && !(m.captured(1) == "/" && name == "style")) continue;
        if (k_void.contains(name) || m.captured(3) == "/") continue;
        if (m.captured(1).isEmpty()) {
            stack.push_back(name);
            in_style = name == "style";
        } else {
            if (stack.isEmpty() || stack.back() != name)
                return QString("</%1> at %2 closes <%3>")
                    .arg(name)
                    .arg(m.capturedStart())
                    .arg(stack.isEmpty() ? QString("nothing") : stack.back());
            stack.pop_back();
            in_style = false;
        }
    }
    return stack.isEmpty() ? QString() : "unclosed: " + stack.join(",");
}

// The parts of a heatmap SVG the tests read: cells (rectangles inside a <g fill>) and
// lines, each with the panel it lies in (report::k_heatmap_panel wide, left to right:
// weights, activations, gradients, updates).
struct Box {
    double x, y, w, h;
    int panel;
};
struct Stroke {
    double x1, x2, y;
    QString color;
    int panel;
};

int panel_of(double x) { return int(x / report::k_heatmap_panel); }

std::vector<Box> cells_of(const QString& svg, const std::string& fill)
{
    std::vector<Box> out;
    static const QRegularExpression group("<g fill=\"([^\"]+)\">\n(.*?)</g>",
                                          QRegularExpression::DotMatchesEverythingOption);
    static const QRegularExpression box(
        "<rect x=\"([-0-9.]+)\" y=\"([-0-9.]+)\" width=\"([0-9.]+)\" height=\"([0-9.]+)\"/>");
    for (auto g = group.globalMatch(svg); g.hasNext();) {
        const auto gm = g.next();
        if (gm.captured(1) != QString::fromStdString(fill)) continue;
        for (auto b = box.globalMatch(gm.captured(2)); b.hasNext();) {
            const auto bm = b.next();
            const double x = bm.captured(1).toDouble();
            out.push_back({x, bm.captured(2).toDouble(), bm.captured(3).toDouble(),
                           bm.captured(4).toDouble(), panel_of(x)});
        }
    }
    return out;
}

std::vector<Stroke> lines_of(const QString& svg, const std::string& color, int panel)
{
    std::vector<Stroke> out;
    static const QRegularExpression line("<line x1=\"([-0-9.]+)\" y1=\"([-0-9.]+)\" "
                                         "x2=\"([-0-9.]+)\" y2=\"[-0-9.]+\" stroke=\"([^\"]+)\"");
    for (auto it = line.globalMatch(svg); it.hasNext();) {
        const auto m = it.next();
        const double x1 = m.captured(1).toDouble();
        if (m.captured(4) != QString::fromStdString(color) || panel_of(x1) != panel) continue;
        out.push_back(
            {x1, m.captured(3).toDouble(), m.captured(2).toDouble(), m.captured(4), panel});
    }
    std::sort(out.begin(), out.end(), [](const Stroke& a, const Stroke& b) {
        return a.y < b.y || (a.y == b.y && a.x1 < b.x1);
    });
    return out;
}

NumericsSample heatmap_sample(std::int64_t step, float scale)
{
    NumericsSample s;
    s.step = step;
    s.loss_scale = scale;
    // Weights: 3 of 4 at binade -3, 1 at binade 0. Gradients (as computed, times the scale):
    // 2 at binade -5. Updates: 4 at d = -12 (lost by fp16 weights), 4 at d = -5.
    s.layers.push_back(LayerNumerics{"layer 1", "dense", values_at({{-3, 3}, {0, 1}}), std::nullopt,
                                     values_at({{-5, 2}}), updates_at({{-12, 4}, {-5, 4}})});
    return s;
}
} // namespace

class TestReport : public QObject {
    Q_OBJECT

private slots:
    void holdsRunsSentencesAndEscapes()
    {
        const ReportInput in = make_input(true, 11);
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.startsWith("<!DOCTYPE html>"));
        for (const char* policy : {"fp32", "mixed_fp16", "mixed_bf16"})
            QVERIFY2(html.contains(policy), policy);
        // Names, sentences and suggestions, escaped, never raw.
        QVERIFY(html.contains(k_odd_name_escaped));
        QVERIFY(!html.contains(k_odd_name));
        QVERIFY(html.contains("fp32 &lt;base&gt;"));
        QVERIFY(html.contains("CPU &lt;test&gt; device"));
        QVERIFY(html.contains("mixed_fp16 ran 1.8x faster &amp; used &lt; half the time"));
        QVERIFY(html.contains("keep &quot;mixed_fp16&quot;"));
        QVERIFY(html.contains("layer 3 has 1001 units"));
        QVERIFY(html.contains("123,456"));    // parameters
        QVERIFY(html.contains("2.50 MFLOP")); // forward FLOPs per sample
        QVERIFY(html.contains("2026-11-30 00:00 UTC"));
        // The speedups against the fp32 baseline, from the runs' own medians.
        const double s1 = in.runs[0].summary.median_step_ms / in.runs[1].summary.median_step_ms;
        QVERIFY2(html.contains(QString::number(s1, 'f', 2) + "x"), qPrintable(QString::number(s1)));
    }

    // One step time in the results (the headline, said in the note), the profiling
    // pass's times under their own names, "GPU busy" only where a GPU ran, and no test
    // accuracy for a run that never evaluated.
    void stepTimeNamesAndGpuBusy_data()
    {
        QTest::addColumn<QString>("backend");
        QTest::newRow("cpu") << "cpu";
        QTest::newRow("cuda") << "cuda";
    }

    void stepTimeNamesAndGpuBusy()
    {
        QFETCH(QString, backend);
        ReportInput in = make_input(true, 14);
        for (RunFacts& f : in.runs)
            f.device.backend = *mixlab::parse_backend_kind(backend.toStdString());
        in.runs[1].summary.final_test_accuracy = 0.8125f;
        in.runs[2].summary.final_test_accuracy.reset();
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("<th>Step ms</th>"));
        QVERIFY(!html.contains("Median ms"));
        QVERIFY(html.contains(
            QString::fromStdString("Step ms: " + report::escape_html(step_time_definition()))));
        QVERIFY(html.contains(QString::fromStdString(report::escape_html(speedup_definition()))));
        QVERIFY(html.contains("sum of phases"));
        QVERIFY(html.contains("profiled step"));
        QVERIFY(!html.contains("measured step"));
        QCOMPARE(html.contains("GPU busy"), backend == QStringLiteral("cuda"));
        QVERIFY(html.contains("81.2%"));
        // Samples/s from the headline step time.
        const RunFacts& f = in.runs[0];
        QVERIFY(
            html.contains(QString::number(1000.0 * f.batch / f.summary.median_step_ms, 'f', 0)));
        const QRegularExpression lastRow(
            QStringLiteral("<td class=\"name\">mixed_bf16</td>.*?</tr>"),
            QRegularExpression::DotMatchesEverythingOption);
        const QString row =
            lastRow.match(html, html.indexOf(QStringLiteral("<h2>Results</h2>"))).captured(0);
        QVERIFY2(row.endsWith(QStringLiteral("\u2014</td></tr>")), qPrintable(row));
    }

    void oneSvgPerChart_data()
    {
        QTest::addColumn<bool>("profiles");
        QTest::addColumn<int>("charts");
        QTest::newRow("profiled") << true << 3;      // loss, step time, phases
        QTest::newRow("not profiled") << false << 2; // no phase chart without profiles
    }

    void oneSvgPerChart()
    {
        QFETCH(bool, profiles);
        QFETCH(int, charts);
        const QString html = QString::fromStdString(explain_report_html(make_input(profiles, 12)));
        QCOMPARE(count(html, "<svg "), charts);
        QCOMPARE(count(html, "</svg>"), charts);
        QCOMPARE(count(html, "<figure class=\"chart\">"), charts);
        QCOMPARE(count(html, "xmlns=\"http://www.w3.org/2000/svg\""), charts);
        QCOMPARE(html.contains("Device time per phase and host overhead"), profiles);
        QCOMPARE(html.contains("host/launch overhead"), profiles);
        QCOMPARE(html.contains("Layers by device time"), profiles);
        QCOMPARE(count(html, "<table"), count(html, "</table>"));
        const QString broken = nesting_error(html);
        QVERIFY2(broken.isEmpty(), qPrintable(broken));
    }

    // The per-layer table: top 20 by forward + backward time, the rest counted.
    void layerTableTop20()
    {
        const ReportInput in = make_input(true, 13, 30);
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("10 more layers not shown"));
        const StepProfile& p = *in.runs.front().profile;
        auto total = [](const LayerTime& l) { return l.forward_ms + l.backward_ms; };
        const auto slowest = std::max_element(
            p.layers.begin(), p.layers.end(),
            [&](const LayerTime& a, const LayerTime& b) { return total(a) < total(b); });
        const auto fastest = std::min_element(
            p.layers.begin(), p.layers.end(),
            [&](const LayerTime& a, const LayerTime& b) { return total(a) < total(b); });
        QVERIFY(html.contains(
            QString("<td class=\"name\">%1</td>").arg(QString::fromStdString(slowest->path))));
        QVERIFY(!html.contains(
            QString("<td class=\"name\">%1</td>").arg(QString::fromStdString(fastest->path))));
        QVERIFY(html.contains("units 1001 not a multiple of 8"));
    }

    // Roofline floors appear only with ceilings; fp16 GEMMs against the fp16 ceiling.
    void ceilingsAddFloors()
    {
        ReportInput in = make_input(true, 14);
        QVERIFY(!QString::fromStdString(explain_report_html(in)).contains("Roofline floor ms"));
        Ceilings c;
        c.fp32_tflops = 1.5;
        c.fp16_tflops = 6.0;
        c.copy_gbs = 50;
        c.measured_at = "2026-11-29T23:59:01Z";
        in.ceilings = c;
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("Roofline floor ms"));
        QVERIFY(html.contains("fp16 6.0"));
        QVERIFY(html.contains("2026-11-29T23:59:01Z"));
    }

    void emptyGroupStillAPage()
    {
        ReportInput in;
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("</html>"));
        QVERIFY(nesting_error(html).isEmpty());
        // The checker itself must catch what it is there for.
        QVERIFY(!nesting_error("<table><tr><td>x</td></table>").isEmpty());
        QVERIFY(!nesting_error("<svg><rect/>").isEmpty());
    }

    void decimation()
    {
        std::mt19937 rng(15);
        std::uniform_real_distribution<float> u(1.0f, 2.0f);
        std::vector<float> v(10000);
        for (float& x : v) x = u(rng);
        v[4321] = 50.0f; // a spike must survive
        v[777] = std::numeric_limits<float>::quiet_NaN();
        const auto pts = report::decimate_min_max(v, 500);
        QVERIFY(pts.size() <= 500 && pts.size() >= 400);
        bool spike = false;
        for (std::size_t i = 0; i < pts.size(); ++i) {
            QVERIFY(std::isfinite(pts[i].second));
            if (i > 0) QVERIFY(pts[i].first > pts[i - 1].first); // step order
            spike = spike || (pts[i].first == 4322 && pts[i].second == 50.0);
        }
        QVERIFY(spike);
        // Short series pass through, non-finite values left out.
        const auto few =
            report::decimate_min_max({1.0f, std::numeric_limits<float>::infinity(), 3.0f}, 500);
        QCOMPARE(few.size(), std::size_t(2));
        QCOMPARE(few[1].first, 3.0);
        QCOMPARE(few[1].second, 3.0);
    }

    // A loss curve through NaN steps (a skipped fp16 step) draws no "nan" coordinates.
    void lossChartSkipsNonFinite()
    {
        ReportInput in = make_input(false, 16);
        in.runs[1].train_loss[5] = std::numeric_limits<float>::quiet_NaN();
        in.runs[1].train_loss[6] = std::numeric_limits<float>::infinity();
        const std::string svg = report::loss_curves_svg(in.runs, in.run_names);
        QVERIFY(svg.find("nan") == std::string::npos);
        QVERIFY(svg.find("inf") == std::string::npos);
        QCOMPARE(int(QString::fromStdString(svg).count("<polyline")), 3);
    }

    void cliWritesReport()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString model = dir.filePath("tiny.json");
        const QString out = dir.filePath("report.html");
        {
            QFile f(model);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"format": "mixlab-model/1", "name": "tiny<&>", "layers": [
                {"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
                {"type": "dense", "units": 10}]})");
        }
        QProcess p;
        p.start(QStringLiteral(MIXLAB_CLI_PATH),
                {"explain", "--model", model, "--dataset", "synthetic", "--synthetic-size", "256",
                 "--steps", "12", "--batch", "32", "--device", "cpu", "--report", out});
        QVERIFY(p.waitForStarted(10000));
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
                 qPrintable(QString::fromUtf8(p.readAllStandardError())));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString html = QString::fromUtf8(f.readAll());
        QCOMPARE(count(html, "<svg "), 3); // the CPU run is profiled too: phases drawn
        QVERIFY(html.contains("tiny&lt;&amp;&gt;"));
        QVERIFY(html.contains("mixed_fp16"));
        QVERIFY(nesting_error(html).isEmpty());
    }

    // A heatmap's cells hold their column's shares (as colour levels) at their binades, and
    // the band lines sit at the formats' limits on the same axis: fp16's overflow line at
    // log2(65504), its smallest normal at 2^-14 and its flush line at 2^-25 (half the
    // smallest subnormal's binade top); the gradients' band moved down by the loss scale
    // (2^10); the updates' lines at d = -11 (fp16 loses d <= -12) and -8 (bf16: <= -9).
    void numericsHeatmapCellsAndBands()
    {
        const QString svg = QString::fromStdString(
            report::numerics_heatmap_svg({heatmap_sample(10, 1024.0f)}, "layer 1", "t"));
        QVERIFY(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        const std::string fp16 = report::band_color(NumberFormat::FP16);
        const std::vector<Stroke> w = lines_of(svg, fp16, 0);
        QCOMPARE(w.size(), std::size_t(3)); // overflow, smallest normal, flush: top to bottom
        const double row = (w[2].y - w[1].y) / 11.0; // -14 down to -25
        QVERIFY(row > 1);
        auto near = [](double a, double b) { return std::abs(a - b) < 0.2; };
        QVERIFY2(near(w[1].y - w[0].y, (std::log2(65504.0) + 14) * row),
                 qPrintable(QString::number(w[1].y - w[0].y)));
        // Weights: binade 0 holds 25%, binade -3 75%; each one row tall, where the axis says.
        const auto quarter = cells_of(svg, report::heatmap_color(0.25));
        const auto three = cells_of(svg, report::heatmap_color(0.75));
        QVERIFY(report::heatmap_color(0.25) != report::heatmap_color(0.75));
        QCOMPARE(quarter.size(), std::size_t(1));
        QCOMPARE(quarter[0].panel, 0);
        QVERIFY(near(quarter[0].y, w[1].y - 15 * row) && near(quarter[0].h, row));
        std::vector<Box> weights_cells, grad_cells, update_cells;
        for (const Box& b : three)
            (b.panel == 0 ? weights_cells : b.panel == 2 ? grad_cells : update_cells).push_back(b);
        QCOMPARE(weights_cells.size(), std::size_t(1));
        QVERIFY(near(weights_cells[0].y, w[1].y - 12 * row) && near(weights_cells[0].h, row));
        // Gradients unscaled: 2^-5 / 2^10 = 2^-15, 100%, the row just below 2^-14; the fp16
        // band of the scaled values ten binades lower than the weights' band.
        QCOMPARE(grad_cells.size(), std::size_t(1));
        QVERIFY(near(grad_cells[0].y, w[1].y) && near(grad_cells[0].h, row));
        const std::vector<Stroke> g = lines_of(svg, fp16, 2);
        QCOMPARE(g.size(), std::size_t(3));
        for (int i = 0; i < 3; ++i)
            QVERIFY2(near(g[std::size_t(i)].y - w[std::size_t(i)].y, 10 * row),
                     qPrintable(QString::number(g[std::size_t(i)].y - w[std::size_t(i)].y)));
        // bf16's limits (2^128, 2^-126, 2^-134) lie off this axis.
        QVERIFY(lines_of(svg, report::band_color(NumberFormat::BF16), 0).empty());
        // Updates: 50% at d = -12 and at d = -5; fp16's line on top of the -12 row, bf16's
        // three rows higher, dashed.
        QCOMPARE(update_cells.size(), std::size_t(2));
        const std::vector<Stroke> u16 = lines_of(svg, fp16, 3);
        const std::vector<Stroke> ub16 = lines_of(svg, report::band_color(NumberFormat::BF16), 3);
        QCOMPARE(u16.size(), std::size_t(1));
        QCOMPARE(ub16.size(), std::size_t(1));
        const double urow = (u16[0].y - ub16[0].y) / 3.0;
        std::sort(update_cells.begin(), update_cells.end(),
                  [](const Box& a, const Box& b) { return a.y > b.y; });
        QVERIFY(near(update_cells[0].y, u16[0].y) && near(update_cells[0].h, urow));
        QVERIFY(near(update_cells[1].y, u16[0].y - 7 * urow));
        QVERIFY(svg.contains("stroke-dasharray"));
        // No activations: the panel says so.
        QVERIFY(svg.contains(">none</text>"));
    }

    // Two samples at scales 2^10 and 2^11: the gradients' band is two segments per line, the
    // second a row lower (a larger scale moves the band of the scaled values down).
    void numericsHeatmapBandFollowsTheScale()
    {
        const QString svg = QString::fromStdString(report::numerics_heatmap_svg(
            {heatmap_sample(10, 1024.0f), heatmap_sample(20, 2048.0f)}, "layer 1", "t"));
        const std::string fp16 = report::band_color(NumberFormat::FP16);
        const std::vector<Stroke> w = lines_of(svg, fp16, 0);
        QCOMPARE(w.size(), std::size_t(3));
        const double row = (w[2].y - w[1].y) / 11.0;
        std::vector<Stroke> g = lines_of(svg, fp16, 2);
        QCOMPARE(g.size(), std::size_t(6));
        // The overflow line: step 10's segment 10 rows below the weights' line, step 20's 11.
        std::sort(g.begin(), g.end(), [](const Stroke& a, const Stroke& b) { return a.y < b.y; });
        QVERIFY(std::abs(g[0].y - w[0].y - 10 * row) < 0.2);
        QVERIFY(std::abs(g[1].y - w[0].y - 11 * row) < 0.2);
        QVERIFY(g[0].x2 <= g[1].x1 + 0.01); // step 10 left of step 20
        QVERIFY(svg.contains(">step 10</text>") && svg.contains(">20</text>"));
        // A layer no sample holds: no chart.
        QVERIFY(report::numerics_heatmap_svg({heatmap_sample(10, 1.0f)}, "layer 9", "t").empty());
    }

    // A mixed_fp8 run's heatmaps also carry fp8's band, scaled per tensor: E4M3 over the
    // weights with its top binade at their largest value (2^0: lines at log2(448) - 8, 2^-14
    // and 2^-18), E5M2 over the unscaled gradients (largest 2^-15: its overflow line at
    // log2(57344) - 30, the other two off the axis), none over updates; none without fp8.
    void numericsHeatmapFp8BandIsScaledPerTensor()
    {
        const std::vector<NumericsSample> samples{heatmap_sample(10, 1024.0f)};
        const std::string e4m3 = report::band_color(NumberFormat::FP8E4M3);
        const std::string e5m2 = report::band_color(NumberFormat::FP8E5M2);
        const QString plain =
            QString::fromStdString(report::numerics_heatmap_svg(samples, "layer 1", "t"));
        for (int panel = 0; panel < 4; ++panel)
            QVERIFY(lines_of(plain, e4m3, panel).empty() && lines_of(plain, e5m2, panel).empty());
        const QString svg =
            QString::fromStdString(report::numerics_heatmap_svg(samples, "layer 1", "t", true));
        const std::vector<Stroke> w = lines_of(svg, report::band_color(NumberFormat::FP16), 0);
        QCOMPARE(w.size(), std::size_t(3));
        const double row = (w[2].y - w[1].y) / 11.0; // fp16's 2^-14 down to 2^-25
        auto near = [](double a, double b) { return std::abs(a - b) < 0.2; };
        const std::vector<Stroke> e4 = lines_of(svg, e4m3, 0);
        QCOMPARE(e4.size(), std::size_t(3));
        QVERIFY2(near(e4[0].y, w[1].y - (std::log2(448.0) - 8 + 14) * row),
                 qPrintable(QString::number(e4[0].y - w[1].y)));
        QVERIFY(near(e4[1].y, w[1].y));           // E4M3's 2^-6 moved 8 binades: 2^-14
        QVERIFY(near(e4[2].y, w[1].y + 4 * row)); // its flush line 2^-10, moved: 2^-18
        QVERIFY(svg.contains("stroke-dasharray"));
        const std::vector<Stroke> e5 = lines_of(svg, e5m2, 2);
        QCOMPARE(e5.size(), std::size_t(1));
        QVERIFY2(near(e5[0].y, w[1].y - (std::log2(57344.0) - 30 + 14) * row),
                 qPrintable(QString::number(e5[0].y - w[1].y)));
        QVERIFY(lines_of(svg, e4m3, 2).empty() && lines_of(svg, e5m2, 0).empty());
        QVERIFY(lines_of(svg, e4m3, 3).empty() && lines_of(svg, e5m2, 3).empty());
        // The report: the key's second row and the note only where a run is mixed_fp8.
        ReportInput in = make_input(false, 21);
        in.runs[1].numerics = samples;
        const QString without = QString::fromStdString(explain_report_html(in));
        QVERIFY(without.contains("<h2>Numerics</h2>") && !without.contains("fp8_e4m3"));
        in.runs[1].policy = Policy::MixedFP8;
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("scaled per tensor:") && html.contains("fp8_e5m2"));
        QVERIFY(html.contains("A mixed_fp8 run also has fp8's band"));
        QVERIFY(html.contains(QString::fromStdString(e4m3)));
        QVERIFY(nesting_error(html).isEmpty());
    }

    // The report's numerics section: the key once, one figure per run and layer, and a
    // size that stays small for many samples (columns capped, equal cells merged).
    void numericsSection()
    {
        ReportInput in = make_input(false, 21);
        std::mt19937 rng(7);
        std::normal_distribution<double> spread(0.0, 1.0);
        for (int r = 0; r < 2; ++r)
            for (int step = 1; step <= 200; ++step) {
                NumericsSample s;
                s.step = 10 * step;
                s.loss_scale = r == 1 ? 65536.0f : 1.0f;
                for (int l = 1; l <= 3; ++l) {
                    // Bell-shaped histograms around a layer's own centre, a little noise.
                    auto bell = [&](int centre, int width) {
                        ValueHistogram h;
                        for (int e = centre - width; e <= centre + width; ++e) {
                            const double z = double(e - centre) / (width / 3.0);
                            h.binades[std::size_t(e - k_numerics_binade_min)] = std::uint64_t(
                                10000 * std::exp(-z * z / 2) * (1 + 0.05 * spread(rng)));
                        }
                        h.zero = 500;
                        return h;
                    };
                    UpdateHistogram u;
                    for (int d = -30; d <= -2; ++d)
                        u.ratios[std::size_t(d - k_numerics_d_min)] = std::uint64_t(100 + d + 30);
                    s.layers.push_back(LayerNumerics{"layer " + std::to_string(l), "dense",
                                                     bell(-6, 8), bell(-2, 12),
                                                     bell(-20 + (r ? 16 : 0), 14), u});
                }
                in.runs[std::size_t(r)].numerics.push_back(s);
            }
        const QString html = QString::fromStdString(explain_report_html(in));
        QVERIFY(html.contains("<h2>Numerics</h2>"));
        QCOMPARE(count(html, "<svg "), 2 + 1 + 2 * 3); // loss, step time, key, 2 runs x 3 layers
        QCOMPARE(count(html, "<figure class=\"chart\">"), 2 + 1 + 2 * 3);
        QVERIFY(html.contains("fp32 &lt;base&gt;: 200 samples, steps 10-2000"));
        QVERIFY(html.contains("mixed_fp16: layer 3 (dense)"));
        const QString broken = nesting_error(html);
        QVERIFY2(broken.isEmpty(), qPrintable(broken));
        // Six layer charts of 200 samples each: well under 50 KB a chart.
        QVERIFY2(html.size() < 6 * 50000, qPrintable(QString::number(html.size())));
        // Without numerics, no section.
        QVERIFY(!QString::fromStdString(explain_report_html(make_input(false, 21)))
                     .contains("<h2>Numerics</h2>"));
    }

    // An unwritable --report is bad input (exit 2), found before any training.
    void cliRefusesUnwritableReport()
    {
        QProcess p;
        p.start(QStringLiteral(MIXLAB_CLI_PATH),
                {"explain", "--model",
                 QStringLiteral(MIXLAB_SOURCE_DIR) + "/resources/models/mnist-mlp.json",
                 "--dataset", "synthetic", "--steps", "5", "--device", "cpu", "--report",
                 "/nonexistent-folder-mixlab/r.html"});
        QVERIFY(p.waitForStarted(10000));
        QVERIFY(p.waitForFinished(30000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(err.contains("--report"), qPrintable(err));
    }
};

QTEST_APPLESS_MAIN(TestReport)
#include "tst_report.moc"
