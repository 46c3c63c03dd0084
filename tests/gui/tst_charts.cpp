// ChartPanel on a RunStore filled by hand: series per visible run, hiding/removing,
// x-axis modes, log scale, coalesced live redraws, decimation of 100k steps, export.
#include "chartpanel.h"
#include "metricchart.h"
#include "runstore.h"

#include <QAbstractAxis>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QRandomGenerator>
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

constexpr int k_steps = 3000;        // per run
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
        m.accuracy = float(std::min(1.0, 0.1 + double(m.step) / 4000.0 + 0.1 * rng.generateDouble()));
        m.step_ms = float(msPerStep * (0.9 + 0.2 * rng.generateDouble()));
        m.wall_ms = double(m.step) * msPerStep;
        m.samples_per_s = 64.0 / (m.step_ms / 1000.0);
        m.loss_scale = mixed ? scale : 1.0f;
        m.skipped = mixed && m.step % 700 == 0;
        m.overflow = m.skipped;
        if (m.skipped)
            scale *= 0.5f;
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
    for (const QXYSeries *s : series)
        n += s->count() > 0;
    return n;
}

QList<QPointF> longestSeriesPoints(MetricChart *chart, int runId)
{
    QList<QPointF> best;
    for (const QXYSeries *s : chart->runSeries(runId))
        if (s->count() > best.size())
            best = s->points();
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
    void hoverText();
    void hoverShowsToolTip();
    void toolbarDrivesPanel();
    void gridColumnsFollowWidth();
    void liveAppendsCoalesce();
    void hundredThousandSteps();
    void exports_data();
    void exports();
    void exportErrors();

private:
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
    QCOMPARE(m_panel->chartNames(), QStringList({"loss", "accuracy", "step_time", "throughput",
                                                 "loss_scale", "memory"}));
    for (const QString &name : m_panel->chartNames())
        QVERIFY(m_panel->chart(name));
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
    // One legend entry per run, named after it; the other curves stay out of the legend.
    // Marker visibility settles when the legend lays out, hence QTRY.
    const QStringList expected{m_store->run(m_fp32)->name, m_store->run(m_mixed)->name};
    for (const QString &name : m_panel->chartNames()) {
        QChart *c = m_panel->chart(name)->chart();
        auto shown = [c] {
            QStringList labels;
            for (QLegendMarker *m : c->legend()->markers())
                if (m->isVisible())
                    labels << m->label();
            return labels;
        };
        QTRY_COMPARE(shown(), expected);
        QCOMPARE(c->legend()->alignment(), Qt::AlignBottom);
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
    QTest::addColumn<double>("lastX");     // the last step's x of the longer run
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
        QCOMPARE(x->min(), 0.0);
        // x stays tight on the data: the right edge is the last point.
        QVERIFY2(std::abs(x->max() - lastX) <= 1e-9 * lastX,
                 qPrintable(QStringLiteral("%1: %2").arg(name).arg(x->max())));
    }
    // Epoch x is fractional: step 1500 of 1000 per epoch sits at 1.5.
    const QList<QPointF> pts = longestSeriesPoints(m_panel->chart(QStringLiteral("loss")), m_fp32);
    bool fractional = false;
    for (const QPointF &p : pts)
        fractional |= p.x() != std::floor(p.x());
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
    auto isLog = [](MetricChart *c) { return qobject_cast<QLogValueAxis *>(c->yAxis()) != nullptr; };
    for (const QString &name : m_panel->chartNames())
        QCOMPARE(isLog(m_panel->chart(name)), name == QLatin1String("loss_scale"));

    m_panel->setLogScale(true);
    m_panel->redrawNow();
    for (const QString &name : m_panel->chartNames()) {
        MetricChart *c = m_panel->chart(name);
        QCOMPARE(isLog(c), logCharts.contains(name) || name == QLatin1String("loss_scale"));
        // Every series hangs on the current y axis.
        for (QAbstractSeries *s : c->chart()->series())
            QVERIFY(s->attachedAxes().contains(c->yAxis()));
    }
    auto *y = qobject_cast<QLogValueAxis *>(m_panel->chart(QStringLiteral("loss"))->yAxis());
    QVERIFY(y->min() > 0 && y->min() <= 0.2 && y->max() >= 2.3);

    m_panel->setLogScale(false);
    m_panel->redrawNow();
    QVERIFY(!isLog(m_panel->chart(QStringLiteral("loss"))));
    QVERIFY(!isLog(m_panel->chart(QStringLiteral("step_time"))));
    QVERIFY(isLog(m_panel->chart(QStringLiteral("loss_scale"))));
}

void TestCharts::lossScaleMarksSkippedSteps()
{
    MetricChart *c = m_panel->chart(QStringLiteral("loss_scale"));
    QXYSeries *skipped = nullptr;
    for (QXYSeries *s : c->runSeries(m_mixed))
        if (qobject_cast<QScatterSeries *>(s))
            skipped = s;
    QVERIFY(skipped);
    const int expected = k_steps / 700; // steps 700, 1400, 2100, 2800
    QCOMPARE(skipped->count(), expected);
    QCOMPARE(skipped->at(0), QPointF(700, 65536));
    QCOMPARE(skipped->at(1), QPointF(1400, 32768));
    // The fp32 run never skipped.
    for (QXYSeries *s : c->runSeries(m_fp32))
        if (qobject_cast<QScatterSeries *>(s))
            QCOMPARE(s->count(), 0);
    auto *y = qobject_cast<QLogValueAxis *>(c->yAxis());
    QVERIFY(y->min() <= 1.0 && y->max() >= 65536.0);
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
        for (qsizetype i = 1; i < p.size(); ++i)
            v += std::abs(p[i].y() - p[i - 1].y());
        return v;
    };
    QVERIFY(variation(smooth) < 0.2 * variation(raw));
    m_panel->setSmoothing(7.0); // clamped
    QCOMPARE(m_panel->smoothing(), 0.99);
}

void TestCharts::hoverText()
{
    MetricChart *loss = m_panel->chart(QStringLiteral("loss"));
    m_panel->setSmoothing(0.0);
    m_panel->redrawNow();
    const QXYSeries *s = loss->runSeries(m_mixed)[2]; // test loss, per epoch
    const QString text = loss->hoverText(s, QPointF(1990, 0.5));
    QVERIFY2(text.contains(m_store->run(m_mixed)->name), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("step: 2000")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("loss: 0.8")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("test")), qPrintable(text));
}

void TestCharts::hoverShowsToolTip()
{
    // Mouse events need a window that is really there.
    m_panel->hide();
    m_panel->setAttribute(Qt::WA_DontShowOnScreen, false);
    m_panel->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_panel));
    m_panel->redrawNow();
    MetricChart *c = m_panel->chart(QStringLiteral("memory"));
    const QXYSeries *s = c->runSeries(m_fp32)[0]; // a flat line at 812.5 MB
    const QPointF onLine = c->chart()->mapToPosition(QPointF(1500, 812.5),
                                                     const_cast<QXYSeries *>(s));
    const QPoint at = c->mapFromScene(onLine);
    QTest::mouseMove(c->viewport(), at - QPoint(0, 40));
    QTest::mouseMove(c->viewport(), at);
    QTRY_VERIFY(QToolTip::isVisible());
    QVERIFY2(QToolTip::text().contains(m_store->run(m_fp32)->name), qPrintable(QToolTip::text()));
    QVERIFY2(QToolTip::text().contains(QStringLiteral("MB: 812.5")),
             qPrintable(QToolTip::text()));
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
    QCOMPARE(x->max(), double(k_steps + 200));
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
            for (int x = 0; x < image.width(); x += 7)
                colours.insert(image.pixel(x, y));
        QVERIFY(colours.size() > 20);
    } else if (suffix == QLatin1String("pdf")) {
        QVERIFY(data.startsWith("%PDF"));
    } else {
        QXmlStreamReader xml(data);
        bool sawSvg = false;
        while (!xml.atEnd()) {
            xml.readNext();
            if (xml.isStartElement() && xml.name() == QLatin1String("svg"))
                sawSvg = true;
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
    QVERIFY(!m_panel->exportChart(QStringLiteral("all"), dir.filePath("a.svg"), QSize(0, 600),
                                  &error));
    QVERIFY(!error.isEmpty());
}

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
