// ChartPanel on a RunStore filled by hand: series per visible run, hiding/removing,
// x-axis modes, log scale, legends and axis titles never cut, the loss-scale axis, the
// crosshair readout, a GPU run's step times scaled on their steady state, coalesced live
// redraws, decimation of 100k steps, export.
#include "charts/chartlegend.h"
#include "charts/chartpanel.h"
#include "files/experiment.h"
#include "gpu_shaped_steps.h"
#include "charts/metricchart.h"
#include "charts/plotoverlay.h"
#include "runs/runstore.h"
#include "charts/seriesdecimator.h"

#include <QAbstractAxis>
#include <QCategoryAxis>
#include <QElapsedTimer>
#include <QGraphicsTextItem>
#include <QHelpEvent>
#include <QFile>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>

#include <memory>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QCheckBox>
#include <QComboBox>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QToolTip>
#include <QTest>
#include <QValueAxis>
#include <QXmlStreamReader>

#include <cmath>

using namespace mixlab;

namespace {

constexpr int k_steps = 3000; // per run
constexpr int k_stepsPerEpoch = 1000;
constexpr int k_epochs = 3;

RunConfig config(Policy policy)
{
    RunConfig c;
    c.policy = policy;
    c.batch_size = 64;
    c.epochs = k_epochs;
    return c;
}

// A plausible run: loss falling with noise, accuracy rising, noisy step times; the
// mixed run halves its loss scale at every 700th step and skips that update.
std::vector<StepMetrics> makeSteps(std::int64_t first, int n, double msPerStep, bool mixed,
                                   quint32 seed)
{
    QRandomGenerator rng(seed);
    std::vector<StepMetrics> out;
    float scale = 65536.0f;
    for (int i = 0; i < n; ++i) {
        StepMetrics m;
        m.step = first + i;
        m.epoch = int((m.step - 1) / k_stepsPerEpoch) + 1;
        m.loss = float(2.3 * std::exp(-double(m.step) / 1500.0) + 0.2 + 0.2 * rng.generateDouble());
        m.accuracy =
            float(std::min(1.0, 0.1 + double(m.step) / 4000.0 + 0.1 * rng.generateDouble()));
        m.step_ms = float(msPerStep * (0.9 + 0.2 * rng.generateDouble()));
        m.wall_ms = double(m.step) * msPerStep;
        m.samples_per_s = 64.0 / (m.step_ms / 1000.0);
        m.loss_scale = mixed ? scale : 1.0f;
        m.skipped = mixed && m.step % 700 == 0;
        m.overflow = m.skipped;
        if (m.skipped) scale *= 0.5f;
        m.next_loss_scale = mixed ? scale : 1.0f;
        out.push_back(m);
    }
    return out;
}

std::vector<EpochMetrics> makeEpochs()
{
    std::vector<EpochMetrics> out;
    for (int e = 1; e <= k_epochs; ++e) {
        EpochMetrics m;
        m.epoch = e;
        m.train_loss = 1.5f / float(e);
        m.train_accuracy = 0.5f + 0.1f * float(e);
        m.test_loss = 1.6f / float(e);
        m.test_accuracy = 0.45f + 0.1f * float(e);
        m.seconds = 12.5;
        out.push_back(m);
    }
    return out;
}

int seriesWithPoints(const QList<QXYSeries *> &series)
{
    int n = 0;
    for (const QXYSeries *s : series) n += s->count() > 0;
    return n;
}

QList<QPointF> longestSeriesPoints(MetricChart *chart, int runId)
{
    QList<QPointF> best;
    for (const QXYSeries *s : chart->runSeries(runId))
        if (s->count() > best.size()) best = s->points();
    return best;
}

} // namespace

class TestCharts : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();

    void chartNames();
    void seriesPerVisibleRun();
    void legendNamesRuns();
    void hidingAndRemovingRuns();
    void renameFollows();
    void xAxisModes_data();
    void xAxisModes();
    void epochMarkers();
    void logScaleToggle();
    void lossScaleMarksSkippedSteps();
    void memoryLine();
    void smoothingChangesCurve();
    void legendLabelsShortAndUnique();
    void legendWrapsInsteadOfEliding();
    void axisTitlesNeverCut_data();
    void axisTitlesNeverCut();
    void lossScaleLabelsTheScalesRunsSitAt();
    void fp8ScalesReadAsPowersOfTwo();
    void readout_data();
    void readout();
    void readoutShowsLastEvaluation();
    void crosshairFollowsMouse();
    void legendToolTipNamesRun();
    void gpuShapedStepTime();
    void toolbarDrivesPanel();
    void gridColumnsFollowWidth();
    void liveAppendsCoalesce();
    void hundredThousandSteps();
    void exports_data();
    void exports();
    void exportErrors();
    void exportDrawsWhatTheWindowShows();

private:
    // Runs 3 and 4: a second fp32 / mixed_fp16 compare of 500 steps.
    void addSecondCompare()
    {
        const int g = m_store->newGroup();
        m_store->appendSteps(m_store->addRun(config(Policy::FP32), QStringLiteral("{}"), g),
                             makeSteps(1, 500, 12.5, false, 3));
        m_store->appendSteps(m_store->addRun(config(Policy::MixedFP16), QStringLiteral("{}"), g),
                             makeSteps(1, 500, 10.0, true, 4));
    }
    // Mouse events and grabs need a window that is really there.
    bool showForReal()
    {
        m_panel->hide();
        m_panel->setAttribute(Qt::WA_DontShowOnScreen, false);
        m_panel->show();
        return QTest::qWaitForWindowExposed(m_panel);
    }

    RunStore *m_store = nullptr;
    ChartPanel *m_panel = nullptr;
    int m_fp32 = 0, m_mixed = 0;
};

void TestCharts::init()
{
    m_store = new RunStore;
    const int g = m_store->newGroup();
    m_fp32 = m_store->addRun(config(Policy::FP32), QStringLiteral("{}"), g);
    m_mixed = m_store->addRun(config(Policy::MixedFP16), QStringLiteral("{}"), g);
    m_store->setStarted(m_fp32, k_steps, 812.5);
    m_store->setStarted(m_mixed, k_steps, 455.0);
    m_store->appendSteps(m_fp32, makeSteps(1, k_steps, 12.5, false, 1));
    m_store->appendSteps(m_mixed, makeSteps(1, k_steps, 10.0, true, 2));
    m_store->appendEpochs(m_fp32, makeEpochs());
    m_store->appendEpochs(m_mixed, makeEpochs());
    m_panel = new ChartPanel(m_store);
    m_panel->resize(1200, 800);
    // Laid out at a real size but never painted on screen: the tests read the charts'
    // state, and painting six charts per test would only slow the suite down.
    m_panel->setAttribute(Qt::WA_DontShowOnScreen);
    m_panel->show();
    m_panel->redrawNow();
}

void TestCharts::cleanup()
{
    delete m_panel;
    delete m_store;
    m_panel = nullptr;
    m_store = nullptr;
}

void TestCharts::chartNames()
{
    QCOMPARE(m_panel->chartNames(),
             QStringList({"loss", "accuracy", "step_time", "throughput", "loss_scale", "memory"}));
    for (const QString &name : m_panel->chartNames()) QVERIFY(m_panel->chart(name));
    QVERIFY(!m_panel->chart(QStringLiteral("nope")));
}

void TestCharts::seriesPerVisibleRun()
{
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QCOMPARE(c->runIds(), std::vector<int>({m_fp32, m_mixed}));
        for (int id : {m_fp32, m_mixed}) {
            QVERIFY2(seriesWithPoints(c->runSeries(id)) >= 1, qPrintable(name));
            for (const QXYSeries *s : c->runSeries(id))
                QVERIFY(c->chart()->series().contains(const_cast<QXYSeries *>(s)));
        }
    }
    // Per step: raw + smoothed (+ per-epoch curves) for every run, drawn in its colour.
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    QCOMPARE(loss->runSeries(m_fp32).size(), 3);
    QCOMPARE(loss->runSeries(m_fp32)[1]->pen().color(), m_store->run(m_fp32)->color);
    QCOMPARE(m_panel->chart(QStringLiteral("accuracy"))->runSeries(m_mixed).size(), 4);
}

void TestCharts::legendNamesRuns()
{
    // One legend entry per run, in its colour, under a short name; Qt's legend (which
    // elides to one row) stays hidden.
    const QStringList expected{"fp32 #1", "mixed_fp16 #2"};
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QStringList labels;
        for (const ChartLegend::Entry &e : c->legend()->entries()) labels << e.label;
        QCOMPARE(labels, expected);
        QCOMPARE(c->legend()->entries().front().color, m_store->run(m_fp32)->color);
        QVERIFY(c->legend()->entries().back().toolTip.contains(m_store->run(m_mixed)->name));
        QVERIFY(!c->chart()->legend()->isVisible());
        // Under the plot: below the x axis title.
        QVERIFY(c->legend()->mapRectToScene(c->legend()->boundingRect()).top() >=
                c->chart()->mapRectToScene(c->chart()->plotArea()).bottom());
    }
}

void TestCharts::hidingAndRemovingRuns()
{
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    const int before = int(loss->chart()->series().size());
    m_store->setVisible(m_fp32, false);
    m_panel->redrawNow();
    for (const QString &name : m_panel->chartNames())
        QCOMPARE(m_panel->chart(name)->runIds(), std::vector<int>({m_mixed}));
    QCOMPARE(int(loss->chart()->series().size()), before / 2);

    m_store->setVisible(m_fp32, true);
    m_panel->redrawNow();
    QCOMPARE(loss->runIds(), std::vector<int>({m_fp32, m_mixed}));
    QCOMPARE(int(loss->chart()->series().size()), before);

    m_store->removeRun(m_mixed);
    // Through the coalescing timer this time, as in the app.
    QTRY_COMPARE(loss->runIds(), std::vector<int>({m_fp32}));
    for (const QString &name : m_panel->chartNames())
        QCOMPARE(m_panel->chart(name)->runIds(), std::vector<int>({m_fp32}));
    m_store->clear();
    m_panel->redrawNow();
    for (const QString &name : m_panel->chartNames()) {
        QVERIFY(m_panel->chart(name)->runIds().empty());
        QVERIFY(m_panel->chart(name)->chart()->series().isEmpty());
    }
}

void TestCharts::renameFollows()
{
    m_store->rename(m_mixed, QStringLiteral("fp16 trial"));
    m_panel->redrawNow();
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    QCOMPARE(loss->runSeries(m_mixed)[1]->name(), QStringLiteral("fp16 trial"));
}

void TestCharts::xAxisModes_data()
{
    QTest::addColumn<int>("mode");
    QTest::addColumn<double>("lastX"); // the last step's x of the longer run
    QTest::addColumn<QString>("title");
    QTest::newRow("step") << int(ChartPanel::XAxis::Step) << double(k_steps) << "step";
    QTest::newRow("epoch") << int(ChartPanel::XAxis::Epoch) << double(k_epochs) << "epoch";
    // The fp32 run's last step ends at 3000 * 12.5 ms.
    QTest::newRow("wall time") << int(ChartPanel::XAxis::WallTime) << 37.5 << "wall time (s)";
}

void TestCharts::xAxisModes()
{
    QFETCH(int, mode);
    QFETCH(double, lastX);
    QFETCH(QString, title);
    m_panel->setXAxis(ChartPanel::XAxis(mode));
    QCOMPARE(int(m_panel->xAxis()), mode);
    m_panel->redrawNow();
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        auto *x = qobject_cast<QValueAxis *>(c->xAxis());
        QVERIFY(x);
        QCOMPARE(x->titleText(), title);
        // x stays tight on the data, from 0 to the last point, with half a marker's
        // room at either end (6 px).
        const double pad = (x->max() - x->min()) * 6.5 / c->chart()->plotArea().width();
        QVERIFY2(x->min() < 0 && x->min() >= -pad,
                 qPrintable(QStringLiteral("%1: %2").arg(name).arg(x->min())));
        QVERIFY2(x->max() > lastX && x->max() <= lastX + pad,
                 qPrintable(QStringLiteral("%1: %2").arg(name).arg(x->max())));
    }
    // Epoch x is fractional: step 1500 of 1000 per epoch sits at 1.5.
    const QList<QPointF> pts = longestSeriesPoints(m_panel->chart(QStringLiteral("loss")), m_fp32);
    bool fractional = false;
    for (const QPointF &p : pts) fractional |= p.x() != std::floor(p.x());
    QCOMPARE(fractional, mode != int(ChartPanel::XAxis::Step));
}

void TestCharts::epochMarkers()
{
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    const QXYSeries *test = loss->runSeries(m_fp32)[2];
    QCOMPARE(test->count(), k_epochs);
    QCOMPARE(test->at(0), QPointF(1000, 1.6f));
    QCOMPARE(test->at(2).x(), 3000.0);
    m_panel->setXAxis(ChartPanel::XAxis::Epoch);
    m_panel->redrawNow();
    QCOMPARE(loss->runSeries(m_fp32)[2]->at(1).x(), 2.0);
    m_panel->setXAxis(ChartPanel::XAxis::WallTime);
    m_panel->redrawNow();
    QCOMPARE(loss->runSeries(m_mixed)[2]->at(0).x(), 10.0); // step 1000 * 10 ms
    // Accuracy is drawn in percent.
    const QXYSeries *testAcc = m_panel->chart(QStringLiteral("accuracy"))->runSeries(m_fp32)[3];
    QVERIFY(std::abs(testAcc->at(0).y() - 55.0) < 1e-4);
}

void TestCharts::logScaleToggle()
{
    const QStringList logCharts{"loss", "step_time"};
    auto isLog = [](MetricChart *c) {
        return qobject_cast<QLogValueAxis *>(c->yAxis()) != nullptr;
    };
    auto isPowersOfTwo = [](MetricChart *c) {
        return c->isPowersOfTwo() && qobject_cast<QCategoryAxis *>(c->yAxis()) != nullptr;
    };
    for (const QString &name : m_panel->chartNames())
        QCOMPARE(isLog(m_panel->chart(name)) || isPowersOfTwo(m_panel->chart(name)),
                 name == QLatin1String("loss_scale"));

    m_panel->setLogScale(true);
    m_panel->redrawNow();
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QCOMPARE(isLog(c), logCharts.contains(name));
        // Every series hangs on the current y axis.
        for (QAbstractSeries *s : c->chart()->series())
            QVERIFY(s->attachedAxes().contains(c->yAxis()));
    }
    auto *y = qobject_cast<QLogValueAxis *>(m_panel->chart(QStringLiteral("loss"))->yAxis());
    QVERIFY(y->min() > 0 && y->min() <= 0.2 && y->max() >= 2.3);
    // Labels a power of ten apart while they fit; a range of many decades on a short chart
    // gets a coarser base (one label per k decades) rather than Qt's elided "..." labels.
    {
        // A curve over ten decades (a diverging loss, a perplexity from an untrained start).
        MetricChart::Curve curve;
        curve.points = {QPointF(0, 1e8), QPointF(1, 500.0), QPointF(2, 0.01)};
        const auto axisAt = [&](int height) {
            auto *c = new MetricChart(QStringLiteral("ppl"), QStringLiteral("Perplexity"),
                                      QStringLiteral("perplexity"), QString());
            c->resize(400, height);
            c->show();
            (void)QTest::qWaitForWindowExposed(c);
            c->setLogY(true);
            c->setRun(1, QStringLiteral("a"), QString(), Qt::blue, {curve});
            c->fitAxes();
            return std::unique_ptr<MetricChart>(c);
        };
        const auto tall = axisAt(600);
        QCOMPARE(qobject_cast<QLogValueAxis *>(tall->yAxis())->base(), 10.0);
        const auto low = axisAt(120);
        auto *ly = qobject_cast<QLogValueAxis *>(low->yAxis());
        const double plot = low->chart()->plotArea().height();
        const double labels = std::log10(ly->max() / ly->min()) / std::log10(ly->base()) + 1;
        QVERIFY2(ly->base() >= 100.0 && labels <= std::max(2.0, std::floor(plot / 18.0)) + 0.01,
                 qPrintable(QStringLiteral("base %1, %2 labels on a %3 px plot")
                                .arg(ly->base())
                                .arg(labels)
                                .arg(plot)));
        QVERIFY(ly->min() <= 0.01 && ly->max() >= 1e8);
    }

    m_panel->setLogScale(false);
    m_panel->redrawNow();
    QVERIFY(!isLog(m_panel->chart(QStringLiteral("loss"))));
    QVERIFY(!isLog(m_panel->chart(QStringLiteral("step_time"))));
    QVERIFY(isPowersOfTwo(m_panel->chart(QStringLiteral("loss_scale"))));
}

void TestCharts::lossScaleMarksSkippedSteps()
{
    MetricChart *c = m_panel->chart(QStringLiteral("loss_scale"));
    QXYSeries *skipped = nullptr;
    for (QXYSeries *s : c->runSeries(m_mixed))
        if (qobject_cast<QScatterSeries *>(s)) skipped = s;
    QVERIFY(skipped);
    const int expected = k_steps / 700; // steps 700, 1400, 2100, 2800
    QCOMPARE(skipped->count(), expected);
    // On the exponent axis, at the scale each skipped step used: 2^16, then 2^15.
    QCOMPARE(skipped->at(0), QPointF(700, 16));
    QCOMPARE(skipped->at(1), QPointF(1400, 15));
    QCOMPARE(c->toAxisY(32768), 15.0);
    // The markers sit where the scale line is at that step, not on an axis.
    const QList<QPointF> line = c->runSeries(m_mixed)[0]->points();
    const auto after700 =
        std::find_if(line.begin(), line.end(), [](const QPointF &p) { return p.x() > 700; });
    QVERIFY(after700 != line.begin());
    QCOMPARE(std::prev(after700)->y(), skipped->at(0).y());
    // The fp32 run never skipped.
    for (QXYSeries *s : c->runSeries(m_fp32))
        if (qobject_cast<QScatterSeries *>(s)) QCOMPARE(s->count(), 0);
    // Half a power of two beyond the lowest and highest scale: no line lies on the
    // plot's edge (fp32's 1 sat on the x axis before).
    auto *y = qobject_cast<QCategoryAxis *>(c->yAxis());
    QVERIFY(y);
    QCOMPARE(y->min(), -0.5);
    QCOMPARE(y->max(), 16.5);
}

void TestCharts::memoryLine()
{
    const QXYSeries *s = m_panel->chart(QStringLiteral("memory"))->runSeries(m_mixed)[0];
    QCOMPARE(s->count(), 2);
    QCOMPARE(s->at(0), QPointF(1, 455.0));
    QCOMPARE(s->at(1), QPointF(k_steps, 455.0));
}

void TestCharts::smoothingChangesCurve()
{
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    m_panel->setSmoothing(0.0);
    m_panel->redrawNow();
    QCOMPARE(m_panel->smoothing(), 0.0);
    QCOMPARE(loss->runSeries(m_fp32)[1]->points(), loss->runSeries(m_fp32)[0]->points());
    m_panel->setSmoothing(0.95);
    m_panel->redrawNow();
    const QList<QPointF> raw = loss->runSeries(m_fp32)[0]->points();
    const QList<QPointF> smooth = loss->runSeries(m_fp32)[1]->points();
    QVERIFY(raw != smooth);
    // Smoothing narrows the band the noisy curve spans in its last third.
    auto spread = [](const QList<QPointF> &p) {
        double lo = 1e9, hi = -1e9;
        for (const QPointF &q : p)
            if (q.x() > 2000) {
                lo = std::min(lo, q.y());
                hi = std::max(hi, q.y());
            }
        return hi - lo;
    };
    QVERIFY(spread(smooth) < spread(raw));
    // And above all it calms the step-to-step jitter: far less total variation.
    auto variation = [](const QList<QPointF> &p) {
        double v = 0;
        for (qsizetype i = 1; i < p.size(); ++i) v += std::abs(p[i].y() - p[i - 1].y());
        return v;
    };
    QVERIFY(variation(smooth) < 0.2 * variation(raw));
    m_panel->setSmoothing(7.0); // clamped
    QCOMPARE(m_panel->smoothing(), 0.99);
}

void TestCharts::legendLabelsShortAndUnique()
{
    // Default names drop the shared batch; renamed runs keep their names; clashes fall
    // back to full names, then to numbers.
    QCOMPARE(legendLabels({"fp32 b64 #1", "mixed_fp16 b64 #2", "fp32 b64 #3", "mixed_fp16 b64 #4"}),
             std::vector<QString>({"fp32 #1", "mixed_fp16 #2", "fp32 #3", "mixed_fp16 #4"}));
    QCOMPARE(legendLabels({"fp32 b64 #1", "fp32 b256 #2"}),
             std::vector<QString>({"fp32 b64 #1", "fp32 b256 #2"}));
    QCOMPARE(legendLabels({"fp32 b64 #1", "my baseline", "mixed_fp16 b64 #3"}),
             std::vector<QString>({"fp32 #1", "my baseline", "mixed_fp16 #3"}));
    // A reopened experiment keeps names; the same name twice (two files merged, a rename).
    QCOMPARE(legendLabels({"fp32 b64 #1", "fp32 b128 #1"}),
             std::vector<QString>({"fp32 b64 #1", "fp32 b128 #1"}));
    QCOMPARE(legendLabels({"fp32 #1", "fp32 b64 #1"}),
             std::vector<QString>({"fp32 #1", "fp32 b64 #1"}));
    QCOMPARE(legendLabels({"baseline", "baseline"}),
             std::vector<QString>({"baseline (1)", "baseline (2)"}));
}

void TestCharts::legendWrapsInsteadOfEliding()
{
    // Four runs of two compares in charts at their narrowest: every name in full, the
    // entries in rows inside the chart, none over another.
    addSecondCompare();
    m_panel->resize(640, 500);
    m_panel->redrawNow();
    const QStringList expected{"fp32 #1", "mixed_fp16 #2", "fp32 #3", "mixed_fp16 #4"};
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QTRY_COMPARE(c->width(), c->minimumWidth());
        const ChartLegend *legend = c->legend();
        QCOMPARE(int(legend->entries().size()), 4);
        const QRectF chartRect = c->chart()->mapRectToScene(QRectF(QPointF(), c->chart()->size()));
        for (std::size_t i = 0; i < 4; ++i) {
            QCOMPARE(legend->shownText(i), expected[int(i)]);
            const QRectF r = legend->mapRectToScene(legend->entryRect(i));
            QVERIFY2(chartRect.contains(r), qPrintable(name));
            for (std::size_t j = 0; j < i; ++j)
                QVERIFY(!r.intersects(legend->mapRectToScene(legend->entryRect(j))));
        }
        // The key is there in full too, wrapped under the entries.
        QVERIFY(!legend->key().isEmpty());
        QVERIFY(legend->keyRect().top() >= legend->entryRect(3).bottom());
        QVERIFY(chartRect.contains(legend->mapRectToScene(legend->keyRect())));
    }
}

void TestCharts::axisTitlesNeverCut_data()
{
    // The charts' sizes in the window: at their minimum (1280x800 with Why? open, the
    // grid scrolls), 1280x800 and 1600x1000.
    QTest::addColumn<QSize>("panel");
    QTest::newRow("minimum") << QSize(640, 400);
    QTest::newRow("1280x800") << QSize(820, 560);
    QTest::newRow("1600x1000") << QSize(1100, 740);
}

void TestCharts::axisTitlesNeverCut()
{
    QFETCH(QSize, panel);
    addSecondCompare();
    m_panel->resize(panel);
    m_panel->redrawNow();
    QCoreApplication::processEvents();
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        // Qt truncates an axis title that does not fit with "...": each title is shown whole.
        QStringList texts;
        for (QGraphicsItem *item : c->scene()->items())
            if (auto *t = dynamic_cast<QGraphicsTextItem *>(item); t && t->isVisible())
                texts << t->toPlainText();
        QVERIFY2(texts.contains(c->yTitle()), qPrintable(name + ": " + texts.join(" | ")));
        QVERIFY2(texts.contains(c->xTitle()), qPrintable(name + ": " + texts.join(" | ")));
        for (const QString &t : texts)
            QVERIFY2(!t.endsWith(QStringLiteral("...")), qPrintable(name + ": " + t));
    }
}

void TestCharts::lossScaleLabelsTheScalesRunsSitAt()
{
    // The mixed run ends at 4096 (halved at steps 700...2800), fp32 at 1: both are
    // labels, so the scale can be read off the axis, in a short chart too.
    MetricChart *c = m_panel->chart(QStringLiteral("loss_scale"));
    for (const QSize size : {QSize(1200, 800), QSize(640, 400)}) {
        m_panel->resize(size);
        QTRY_COMPARE(m_panel->size(), size);
        m_panel->redrawNow();
        c->fitAxes();
        const QStringList labels = qobject_cast<QCategoryAxis *>(c->yAxis())->categoriesLabels();
        QVERIFY2(labels.contains("4096") && labels.contains("1"), qPrintable(labels.join(", ")));
        // No more labels than ~18 px each of plot height allow (Qt hides overlapping ones).
        QVERIFY2(labels.size() * 18 <= c->chart()->plotArea().height() + 18,
                 qPrintable(labels.join(", ")));
    }
}

void TestCharts::fp8ScalesReadAsPowersOfTwo()
{
    // A mixed_fp8 run's scale chart: its tensors' scales from 2^9 to 2^25 (delayed scaling
    // of small gradients), every label written one way, 2^e, not "2^25" beside "1048576".
    RunStore store;
    const int run = store.addRun(config(Policy::MixedFP8), QStringLiteral("{}"), store.newGroup());
    std::vector<StepMetrics> steps = makeSteps(1, 200, 5.0, false, 7);
    for (StepMetrics &m : steps) {
        m.fp8_log2_scale_max = 25.0f;
        m.fp8_log2_scale_min = m.step < 20 ? 12.0f : 9.0f;
    }
    store.setStarted(run, 200, 1.0);
    store.appendSteps(run, steps);
    ChartPanel panel(&store);
    panel.resize(1200, 800);
    panel.setAttribute(Qt::WA_DontShowOnScreen);
    panel.show();
    panel.redrawNow();
    MetricChart *c = panel.chart(QStringLiteral("loss_scale"));
    c->fitAxes();
    QCOMPARE(c->chart()->title(), QStringLiteral("Loss scale · fp8 scales"));
    const QStringList labels = qobject_cast<QCategoryAxis *>(c->yAxis())->categoriesLabels();
    QVERIFY2(labels.size() >= 2 && labels.contains(QStringLiteral("2^25")),
             qPrintable(labels.join(", ")));
    for (const QString &label : labels)
        QVERIFY2(label.startsWith(QStringLiteral("2^")), qPrintable(labels.join(", ")));
}

void TestCharts::readout_data()
{
    QTest::addColumn<int>("mode");
    QTest::addColumn<double>("x");
    QTest::addColumn<QString>("header");
    QTest::addColumn<int>("fp32Step");
    QTest::addColumn<int>("mixedStep");
    QTest::newRow("step") << int(ChartPanel::XAxis::Step) << 1990.3 << "step 1990" << 1990 << 1990;
    QTest::newRow("epoch") << int(ChartPanel::XAxis::Epoch) << 1.99 << "epoch 1.99" << 1990 << 1990;
    // 24.876 s: fp32's step 1990 (12.5 ms a step), mixed's step 2488 (10 ms).
    QTest::newRow("wall time") << int(ChartPanel::XAxis::WallTime) << 24.876 << "24.9 s" << 1990
                               << 2488;
}

void TestCharts::readout()
{
    // The crosshair reads the full data at x: every visible run, its smoothed and raw
    // value at the step there, as the curves draw them.
    QFETCH(int, mode);
    QFETCH(double, x);
    QFETCH(QString, header);
    QFETCH(int, fp32Step);
    QFETCH(int, mixedStep);
    m_panel->setXAxis(ChartPanel::XAxis(mode));
    m_panel->setSmoothing(0.6);
    m_panel->redrawNow();
    const MetricChart::Readout r = m_panel->readout(QStringLiteral("loss"), x);
    QCOMPARE(r.x, header);
    QCOMPARE(int(r.rows.size()), 2);
    QCOMPARE(r.rows[0].label, QStringLiteral("fp32 #1"));
    QCOMPARE(r.rows[0].color, m_store->run(m_fp32)->color);
    QCOMPARE(r.rows[1].label, QStringLiteral("mixed_fp16 #2"));
    const int steps[] = {fp32Step, mixedStep};
    const int ids[] = {m_fp32, m_mixed};
    for (int i = 0; i < 2; ++i) {
        const auto &all = m_store->run(ids[i])->steps;
        const double raw = all[std::size_t(steps[i] - 1)].loss;
        QList<QPointF> curve;
        for (const StepMetrics &m : all) curve.append(QPointF(double(m.step), m.loss));
        const double smoothed = mixlab::smoothEma(curve, 0.6)[steps[i] - 1].y();
        const QString value = r.rows[std::size_t(i)].value;
        QVERIFY2(value.contains(QStringLiteral("raw %1").arg(QString::number(raw, 'g', 4))),
                 qPrintable(value));
        QVERIFY2(value.startsWith((mode == int(ChartPanel::XAxis::Step)
                                       ? QString()
                                       : QStringLiteral("step %1: ").arg(steps[i])) +
                                  QString::number(smoothed, 'g', 4)),
                 qPrintable(value));
    }
    // Raw only without smoothing; the memory chart's one value per run, with its unit.
    m_panel->setSmoothing(0.0);
    QVERIFY(!m_panel->readout(QStringLiteral("loss"), x).rows[0].value.contains("raw"));
    QVERIFY(m_panel->readout(QStringLiteral("memory"), x).rows[0].value.endsWith("812.5 MB"));
    // A hidden run is not read.
    m_store->setVisible(m_mixed, false);
    QCOMPARE(int(m_panel->readout(QStringLiteral("loss"), x).rows.size()), 1);
}

void TestCharts::readoutShowsLastEvaluation()
{
    // After epoch 2 (step 2000) the loss readout names its test loss (1.6 / 2).
    const MetricChart::Readout r = m_panel->readout(QStringLiteral("loss"), 2100);
    QVERIFY2(r.rows[0].value.endsWith(QStringLiteral("test 0.8 (epoch 2)")),
             qPrintable(r.rows[0].value));
    // Before the first evaluation there is none to name.
    QVERIFY(!m_panel->readout(QStringLiteral("loss"), 500).rows[0].value.contains("test"));
    // The loss-scale readout says which step was skipped.
    QVERIFY(m_panel->readout(QStringLiteral("loss_scale"), 700).rows[1].value.contains("skipped"));
}

void TestCharts::crosshairFollowsMouse()
{
    QVERIFY(showForReal());
    m_panel->redrawNow();
    MetricChart *c = m_panel->chart(QStringLiteral("step_time"));
    PlotOverlay *overlay = c->overlay();
    QVERIFY(!overlay->crosshairX());
    // Anywhere over the plot, not only on a line: here at step 1500, above the curves.
    const QRectF plot = c->chart()->plotArea();
    const QPointF value(1500, 0);
    const QPointF onPlot(c->chart()->mapToPosition(value, c->chart()->series().front()).x(),
                         plot.top() + 10);
    const QPoint at = c->mapFromScene(c->chart()->mapToScene(onPlot));
    QTest::mouseMove(c->viewport(), at);
    QTRY_VERIFY(overlay->crosshairX().has_value());
    const double perPixel = 3000.0 / plot.width();
    QVERIFY2(std::abs(*overlay->crosshairX() - 1500) <= 2 * perPixel,
             qPrintable(QString::number(*overlay->crosshairX())));
    QCOMPARE(int(overlay->readout().rows.size()), 2);
    QVERIFY(overlay->readout().x.startsWith(QStringLiteral("step 15")));
    QVERIFY(
        overlay->readout().rows[0].value.endsWith(QStringLiteral(")"))); // "... ms (raw ... ms)"
    // Further right: it moves along.
    QTest::mouseMove(c->viewport(), at + QPoint(40, 0));
    QTRY_VERIFY(*overlay->crosshairX() > 1500 + 30 * perPixel);
    // Off the plot (over the title): gone.
    QTest::mouseMove(c->viewport(),
                     c->mapFromScene(c->chart()->mapToScene(QPointF(plot.center().x(), 4))));
    QTRY_VERIFY(!overlay->crosshairX().has_value());
}

void TestCharts::legendToolTipNamesRun()
{
    QVERIFY(showForReal());
    MetricChart *c = m_panel->chart(QStringLiteral("loss"));
    const ChartLegend *legend = c->legend();
    const QPoint at = c->mapFromScene(legend->mapToScene(legend->entryRect(1).center()));
    QTest::mouseMove(c->viewport(), at - QPoint(0, 30));
    QTest::mouseMove(c->viewport(), at);
    QHelpEvent help(QEvent::ToolTip, at, c->viewport()->mapToGlobal(at));
    QCoreApplication::sendEvent(c->viewport(), &help);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(m_store->run(m_mixed)->name), qPrintable(QToolTip::text()));
    QVERIFY2(QToolTip::text().contains(QStringLiteral("batch 64")), qPrintable(QToolTip::text()));
}

void TestCharts::gpuShapedStepTime()
{
    // The H200 compare (W1, batch 256, 3000 steps) through an experiment file, as the app
    // opens it: the first ~380 ms steps must not flatten the 0.21 and 0.51 ms curves.
    const QString model = QStringLiteral(R"({"format": "mixlab-model/1", "name": "seed-mlp",
        "layers": [{"type": "flatten"}, {"type": "dense", "units": 3000, "activation": "relu"},
                   {"type": "dense", "units": 1000, "activation": "relu"}, {"type": "dense", "units": 10}]})");
    RunStore written;
    const int g = written.newGroup();
    for (const auto &[policy, ms] :
         {std::pair{Policy::FP32, 0.51}, std::pair{Policy::MixedFP16, 0.21}}) {
        RunConfig c = config(policy);
        c.batch_size = k_gpuShapedBatch;
        c.steps = 3000;
        const int id = written.addRun(c, model, g);
        written.setStarted(id, 3000, policy == Policy::FP32 ? 84.0 : 61.0);
        written.setStatus(id, RunRecord::Status::Running);
        written.appendSteps(id, gpuShapedSteps(ms, policy == Policy::MixedFP16, 3000, 40 + id));
        written.setStatus(id, RunRecord::Status::Finished);
    }
    QTemporaryDir dir;
    QString path = qEnvironmentVariable("MIXLAB_GPU_SHAPED_EXPERIMENT"); // to screenshot it
    if (path.isEmpty()) path = dir.filePath("gpu-shaped.mixlab.json");
    ExperimentFile file;
    file.model = mixlab::parse_model_spec(model.toStdString());
    file.config = config(Policy::FP32);
    QString error;
    QVERIFY2(saveExperiment(path, file, written, &error), qPrintable(error));
    ExperimentFile loaded;
    QVERIFY2(loadExperiment(path, &loaded, m_store, &error), qPrintable(error));
    m_panel->redrawNow();
    const std::vector<int> ids = m_store->runIds();
    QCOMPARE(int(ids.size()), 2);

    MetricChart *c = m_panel->chart(QStringLiteral("step_time"));
    auto *y = qobject_cast<QValueAxis *>(c->yAxis());
    // Scaled on the steady state: the two curves span half the plot's height, neither
    // lies on the bottom (the axis no longer starts at zero).
    QVERIFY2(y->max() >= 0.51 && y->max() <= 0.75, qPrintable(QString::number(y->max())));
    QVERIFY2(y->min() > 0.05 && y->min() < 0.21, qPrintable(QString::number(y->min())));
    QVERIFY2((0.51 - 0.21) / (y->max() - y->min()) >= 0.45,
             qPrintable(QString("%1..%2").arg(y->min()).arg(y->max())));
    // The warm-up steps are drawn (clipped) and marked at the top, in each run's colour.
    int above = 0;
    for (const PlotOverlay::Mark &m : c->overlay()->marks())
        above += m.value.x() <= 3 && m.value.y() > y->max();
    QCOMPARE(above, 6);
    QVERIFY(c->runSeries(ids[0])[0]->points().front().y() > 300); // the raw curve keeps them
    QVERIFY2(c->keyText().contains(QStringLiteral("warm-up (first 3 steps)")) &&
                 c->keyText().contains("off scale"),
             qPrintable(c->keyText()));
    QVERIFY2(c->keyText().contains(QRegularExpression("3[89]\\d ms")), qPrintable(c->keyText()));
    // Smoothing starts after the warm-up: the smoothed curve never leaves the steady range.
    for (int id : ids)
        for (const QPointF &p : c->runSeries(id)[1]->points()) QVERIFY(p.y() < y->max());
    // Hovering the warm-up still reads its value.
    const MetricChart::Readout warm = m_panel->readout(QStringLiteral("step_time"), 1);
    QVERIFY2(warm.rows[0].value.startsWith("3") && warm.rows[0].value.contains("ms, warm-up"),
             qPrintable(warm.rows[0].value));
    const MetricChart::Readout steady = m_panel->readout(QStringLiteral("step_time"), 2000);
    QVERIFY2(steady.rows[1].value.startsWith("0.2"), qPrintable(steady.rows[1].value));

    // Throughput alike: ~1.2 million samples/s at the top, warm-up marked near zero.
    MetricChart *t = m_panel->chart(QStringLiteral("throughput"));
    auto *ty = qobject_cast<QValueAxis *>(t->yAxis());
    QVERIFY2(ty->max() >= 1.2e6 && ty->max() <= 1.6e6, qPrintable(QString::number(ty->max())));
    QVERIFY2(t->keyText().contains(QStringLiteral("warm-up (first 3 steps)")),
             qPrintable(t->keyText()));
    int warmMarks = 0;
    for (const PlotOverlay::Mark &m : t->overlay()->marks()) warmMarks += m.value.x() <= 3;
    QCOMPARE(warmMarks, 6);

    // Loss scale: mixed_fp16 skipped step 1 at 65536 and sits at 32768, a labelled value.
    MetricChart *ls = m_panel->chart(QStringLiteral("loss_scale"));
    QVERIFY(qobject_cast<QCategoryAxis *>(ls->yAxis())->categoriesLabels().contains("32768"));
    const QXYSeries *skipped = ls->runSeries(ids[1])[1];
    QCOMPARE(skipped->count(), 1);
    QCOMPARE(skipped->at(0), QPointF(1, 16));
}

void TestCharts::toolbarDrivesPanel()
{
    auto *combo = m_panel->findChild<QComboBox *>(QStringLiteral("xAxisCombo"));
    auto *slider = m_panel->findChild<QSlider *>(QStringLiteral("smoothingSlider"));
    auto *log = m_panel->findChild<QCheckBox *>(QStringLiteral("logScaleCheck"));
    QVERIFY(combo && slider && log);
    QSignalSpy axisSpy(m_panel, &ChartPanel::xAxisChanged);
    QSignalSpy smoothSpy(m_panel, &ChartPanel::smoothingChanged);
    QSignalSpy logSpy(m_panel, &ChartPanel::logScaleChanged);

    combo->setCurrentIndex(int(ChartPanel::XAxis::WallTime));
    QCOMPARE(m_panel->xAxis(), ChartPanel::XAxis::WallTime);
    slider->setValue(25);
    QCOMPARE(m_panel->smoothing(), 0.25);
    log->setChecked(true);
    QVERIFY(m_panel->logScale());
    QCOMPARE(axisSpy.count(), 1);
    QCOMPARE(smoothSpy.count(), 1);
    QCOMPARE(logSpy.count(), 1);

    // And the other way: setters move the controls, one signal each.
    m_panel->setXAxis(ChartPanel::XAxis::Epoch);
    m_panel->setSmoothing(0.8);
    m_panel->setLogScale(false);
    QCOMPARE(combo->currentIndex(), int(ChartPanel::XAxis::Epoch));
    QCOMPARE(slider->value(), 80);
    QVERIFY(!log->isChecked());
    QCOMPARE(axisSpy.count(), 2);
    QCOMPARE(smoothSpy.count(), 2);
    QCOMPARE(logSpy.count(), 2);
    m_panel->setSmoothing(0.8); // no change, no signal
    QCOMPARE(smoothSpy.count(), 2);
}

void TestCharts::gridColumnsFollowWidth()
{
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    MetricChart *stepTime = m_panel->chart(QStringLiteral("step_time"));
    // 1200 px: three columns, step time (the third chart) beside loss.
    QTRY_COMPARE(stepTime->y(), loss->y());
    QVERIFY(stepTime->x() > loss->x());
    m_panel->resize(800, 900);
    // Two columns: it wraps under loss.
    QTRY_VERIFY(stepTime->y() > loss->y());
    QCOMPARE(stepTime->x(), loss->x());
    for (const QString &name : m_panel->chartNames())
        QVERIFY(m_panel->chart(name)->width() >= m_panel->chart(name)->minimumWidth());
    // Too narrow for two (the Why? dock open): one column, the whole width, no sideways
    // scrolling.
    m_panel->resize(560, 900);
    MetricChart *accuracy = m_panel->chart(QStringLiteral("accuracy"));
    QTRY_VERIFY(accuracy->y() > loss->y());
    for (const QString &name : m_panel->chartNames()) {
        QCOMPARE(m_panel->chart(name)->x(), loss->x());
        QVERIFY(m_panel->chart(name)->width() <= m_panel->width());
    }
}

void TestCharts::liveAppendsCoalesce()
{
    const int before = m_panel->redrawCount();
    // A burst of worker batches: one redraw follows, not one per batch.
    for (int i = 0; i < 20; ++i)
        m_store->appendSteps(m_fp32, makeSteps(k_steps + 1 + 10 * i, 10, 12.5, false, 100 + i));
    QCOMPARE(m_panel->redrawCount(), before);
    QTRY_COMPARE(m_panel->redrawCount(), before + 1);
    auto *x = qobject_cast<QValueAxis *>(m_panel->chart(QStringLiteral("loss"))->xAxis());
    const double pad = (x->max() - x->min()) * 6.5 /
                       m_panel->chart(QStringLiteral("loss"))->chart()->plotArea().width();
    QVERIFY(x->max() > double(k_steps + 200) && x->max() < double(k_steps + 200) + pad);
}

void TestCharts::hundredThousandSteps()
{
    const int id = m_store->addRun(config(Policy::MixedBF16), QStringLiteral("{}"), 1);
    m_store->setStarted(id, 100000, 300.0);
    for (int batch = 0; batch < 100; ++batch)
        m_store->appendSteps(id, makeSteps(1 + 1000 * batch, 1000, 5.0, true, 300 + batch));
    QElapsedTimer timer;
    timer.start();
    m_panel->redrawNow();
    const qint64 ms = timer.elapsed();
    qInfo("redraw of 3 runs incl. one of 100,000 steps: %lld ms", ms);

    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QVERIFY(c->pixelBuckets() <= c->width());
        for (int run : c->runIds())
            for (const QXYSeries *s : c->runSeries(run))
                QVERIFY2(s->count() <= 2 * c->width(),
                         qPrintable(QStringLiteral("%1: %2 points").arg(name).arg(s->count())));
    }
    // Decimation kept the ends and every skipped step of the long run.
    const QList<QPointF> pts = longestSeriesPoints(m_panel->chart(QStringLiteral("loss")), id);
    QCOMPARE(pts.first().x(), 1.0);
    QCOMPARE(pts.last().x(), 100000.0);
    QVERIFY(m_store->run(id)->steps.size() == 100000u); // all data stays in the store
    // Another live batch on top of 100k steps still coalesces into one redraw.
    const int before = m_panel->redrawCount();
    m_store->appendSteps(id, makeSteps(100001, 50, 5.0, true, 999));
    QTRY_COMPARE(m_panel->redrawCount(), before + 1);
}

void TestCharts::exports_data()
{
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QString>("suffix");
    for (const char *chart : {"loss", "all"})
        for (const char *suffix : {"png", "svg", "pdf"})
            QTest::addRow("%s.%s", chart, suffix) << chart << suffix;
}

void TestCharts::exports()
{
    QFETCH(QString, chart);
    QFETCH(QString, suffix);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(chart + "." + suffix);
    QString error = QStringLiteral("poison");
    const QSize size(1000, 700);
    QCoreApplication::processEvents(); // let pending layouts settle first
    const QRectF plotBefore = m_panel->chart(QStringLiteral("loss"))->chart()->plotArea();
    QVERIFY2(m_panel->exportChart(chart, path, size, &error), qPrintable(error));
    // Laying charts out at the export size left the panel's own charts as they were.
    QCOMPARE(m_panel->chart(QStringLiteral("loss"))->chart()->plotArea(), plotBefore);
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray data = f.readAll();
    QVERIFY(data.size() > 1000);
    if (suffix == QLatin1String("png")) {
        QVERIFY(data.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
        QImage image;
        QVERIFY(image.loadFromData(data, "PNG"));
        QCOMPARE(image.size(), size);
        // Not a blank page: the curves put many colours on it.
        QSet<QRgb> colours;
        for (int y = 0; y < image.height(); y += 7)
            for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
        QVERIFY(colours.size() > 20);
    } else if (suffix == QLatin1String("pdf")) {
        QVERIFY(data.startsWith("%PDF"));
    } else {
        QXmlStreamReader xml(data);
        bool sawSvg = false;
        while (!xml.atEnd()) {
            xml.readNext();
            if (xml.isStartElement() && xml.name() == QLatin1String("svg")) sawSvg = true;
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY(sawSvg);
    }
}

void TestCharts::exportErrors()
{
    QTemporaryDir dir;
    QString error;
    QVERIFY(!m_panel->exportChart(QStringLiteral("loss"), dir.filePath("no/such/dir/a.png"),
                                  QSize(800, 600), &error));
    QVERIFY2(error.contains(QStringLiteral("a.png")), qPrintable(error));

    error.clear();
    QVERIFY(!m_panel->exportChart(QStringLiteral("loss"), dir.filePath("a.bmp"), QSize(800, 600),
                                  &error));
    QVERIFY2(error.contains(QStringLiteral(".bmp")), qPrintable(error));
    QVERIFY(!QFile::exists(dir.filePath("a.bmp")));

    error.clear();
    QVERIFY(!m_panel->exportChart(QStringLiteral("nope"), dir.filePath("a.png"), QSize(800, 600),
                                  &error));
    QVERIFY2(error.contains(QStringLiteral("nope")), qPrintable(error));
    QVERIFY(!QFile::exists(dir.filePath("a.png")));

    error.clear();
    QVERIFY(
        !m_panel->exportChart(QStringLiteral("all"), dir.filePath("a.svg"), QSize(0, 600), &error));
    QVERIFY(!error.isEmpty());
}

void TestCharts::exportDrawsWhatTheWindowShows()
{
    // One path for both: a chart exported at the size it has in the window is the
    // picture the window shows (axis labels, legend, markers alike).
    QVERIFY(showForReal());
    m_panel->redrawNow();
    for (const QString &name : {QStringLiteral("loss_scale"), QStringLiteral("step_time")}) {
        MetricChart *c = m_panel->chart(name);
        QCoreApplication::processEvents(); // the window as the user sees it, laid out
        const QImage window = c->viewport()->grab().toImage();
        const QSize size = c->viewport()->size();
        QTemporaryDir dir;
        const QString path = dir.filePath(name + ".png");
        QString error;
        QVERIFY2(m_panel->exportChart(name, path, size, &error), qPrintable(error));
        QImage exported(path);
        const QImage shown = window.convertToFormat(exported.format());
        QCOMPARE(exported.size(), shown.size());
        // The window paints a frame around the chart's white background; inside it,
        // plot, axes and legend, the pictures agree.
        const QRect inside = c->chart()
                                 ->mapRectToScene(c->chart()->plotArea())
                                 .toRect()
                                 .adjusted(-60, -12, 8, 70)
                                 .intersected(QRect(QPoint(), size).adjusted(3, 3, -3, -3));
        qsizetype differing = 0;
        for (int y = inside.top(); y <= inside.bottom(); ++y)
            for (int x = inside.left(); x <= inside.right(); ++x)
                differing += std::abs(qGray(shown.pixel(x, y)) - qGray(exported.pixel(x, y))) > 40;
        QVERIFY2(differing * 1000 <= qsizetype(inside.width()) * inside.height(),
                 qPrintable(QStringLiteral("%1: %2 pixels differ").arg(name).arg(differing)));
    }
}

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
