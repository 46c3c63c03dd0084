// The chart grid: store signals → coalesced redraw → curves per run → MetricCharts.
#include "charts/chartpanel.h"

#include "charts/axisrange.h"
#include "charts/chartlegend.h"
#include "charts/metricchart.h"
#include "charts/paintexport.h"
#include "common/enginetext.h"
#include "runs/runstore.h"
#include "charts/seriesdecimator.h"

#include "mixlab/trainer.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace {

constexpr int k_redrawDelayMs = 40;
constexpr int k_liveIntervalMs = 200;

// Steps per epoch of a run: exact from the planned totals when the run is epoch-bound,
// else read off the data (the first step of a later epoch), else the synthetic
// dataset's size. 0 when nothing tells yet.
qint64 stepsPerEpoch(const RunRecord &r)
{
    const mixlab::RunConfig &c = r.config;
    if (c.steps <= 0 && r.totalSteps > 0 && c.epochs > 0)
        return std::max<qint64>(1, r.totalSteps / c.epochs);
    const auto &steps = r.steps;
    auto later = std::partition_point(steps.begin(), steps.end(),
                                      [](const mixlab::StepMetrics &m) { return m.epoch < 2; });
    if (later != steps.end() && later->epoch >= 2)
        return std::max<qint64>(1, (later->step - 1) / (later->epoch - 1));
    if (c.dataset.name == "synthetic" && c.batch_size > 0 &&
        c.dataset.synthetic_train >= c.batch_size)
        return c.dataset.synthetic_train / c.batch_size; // the last partial batch is dropped
    return 0;
}

// The x coordinates of a run's steps and epochs under one axis mode.
struct XMapper {
    ChartPanel::XAxis mode;
    const RunRecord &run;
    double spe; // steps per epoch (a still-unknown one counts the steps seen as one epoch)

    XMapper(ChartPanel::XAxis m, const RunRecord &r) : mode(m), run(r)
    {
        qint64 s = stepsPerEpoch(r);
        if (s <= 0) s = r.steps.empty() ? 1 : std::max<qint64>(1, r.steps.back().step);
        spe = double(s);
    }

    double step(const mixlab::StepMetrics &m) const
    {
        switch (mode) {
        case ChartPanel::XAxis::Step: return double(m.step);
        case ChartPanel::XAxis::Epoch: return double(m.step) / spe;
        case ChartPanel::XAxis::WallTime: return m.wall_ms / 1000.0;
        }
        return 0;
    }

    // Where epoch e ends: its last step, or the epoch count itself. NaN when unknown.
    double epochEnd(const mixlab::EpochMetrics &e, double secondsBefore) const
    {
        if (mode == ChartPanel::XAxis::Epoch) return double(e.epoch);
        const auto &steps = run.steps;
        auto after =
            std::partition_point(steps.begin(), steps.end(),
                                 [&](const mixlab::StepMetrics &m) { return m.epoch <= e.epoch; });
        const bool haveLast = after != steps.begin() && std::prev(after)->epoch == e.epoch;
        if (mode == ChartPanel::XAxis::Step)
            return haveLast ? double(std::prev(after)->step) : double(e.epoch) * spe;
        return haveLast ? std::prev(after)->wall_ms / 1000.0 : secondsBefore + e.seconds;
    }
};

// The per-step quantity each chart draws, one definition for its curve and its readout.
enum class Metric { Loss, Accuracy, Perplexity, StepMs, Throughput, LossScale };

double metricValue(const mixlab::StepMetrics &m, Metric metric)
{
    switch (metric) {
    case Metric::Loss: return m.loss;
    case Metric::Accuracy: return 100.0 * m.accuracy;
    case Metric::Perplexity: return mixlab::perplexity(m.loss);
    case Metric::StepMs: return m.step_ms;
    case Metric::Throughput: return m.samples_per_s;
    case Metric::LossScale: // mixed_fp8: the largest tensor's fp8 scale (no loss scaling)
        return m.fp8_log2_scale_max ? std::exp2(double(*m.fp8_log2_scale_max)) : m.loss_scale;
    }
    return 0;
}

std::optional<Metric> metricOf(const QString &chart)
{
    if (chart == QLatin1String("loss")) return Metric::Loss;
    if (chart == QLatin1String("accuracy")) return Metric::Accuracy;
    if (chart == QLatin1String("step_time")) return Metric::StepMs;
    if (chart == QLatin1String("throughput")) return Metric::Throughput;
    if (chart == QLatin1String("loss_scale")) return Metric::LossScale;
    return std::nullopt;
}

// Step time and throughput: the first steps of a GPU run (graph recording, plan timing)
// are a thousand times slower than the rest and would flatten the curves onto zero.
bool steadyScaled(Metric metric)
{
    return metric == Metric::StepMs || metric == Metric::Throughput;
}

QList<QPointF> metricPoints(const RunRecord &r, Metric metric, const XMapper &xm)
{
    QList<QPointF> points;
    points.reserve(qsizetype(r.steps.size()));
    for (const mixlab::StepMetrics &m : r.steps)
        points.append(QPointF(xm.step(m), metricValue(m, metric)));
    return points;
}

// Where smoothing starts: after the warm-up of a steady-scaled curve, else at once.
qsizetype smoothingStart(const std::optional<mixlab::SteadyRange> &steady)
{
    return steady ? steady->warmup : 0;
}

std::vector<MetricChart::Curve> stepCurves(const QList<QPointF> &raw, double alpha, bool inLegend,
                                           bool steady)
{
    std::optional<mixlab::SteadyRange> range;
    if (steady) range = mixlab::steadyRange(raw);
    std::vector<MetricChart::Curve> c(2);
    c[0] = {QObject::tr("per step"), MetricChart::Style::Faint, false, raw, range};
    c[1] = {QObject::tr("smoothed"), MetricChart::Style::Solid, inLegend,
            mixlab::smoothEma(raw.mid(smoothingStart(range)), alpha), range};
    return c;
}

// A reading in the crosshair's box: four significant digits, large ones whole.
QString readoutValue(double v)
{
    if (!std::isfinite(v)) return QObject::tr("n/a");
    return std::abs(v) >= 1000 ? QString::number(std::llround(v)) : QString::number(v, 'g', 4);
}

QString xTitle(ChartPanel::XAxis a)
{
    switch (a) {
    case ChartPanel::XAxis::Step: return QObject::tr("step");
    case ChartPanel::XAxis::Epoch: return QObject::tr("epoch");
    case ChartPanel::XAxis::WallTime: return QObject::tr("wall time (s)");
    }
    return {};
}

} // namespace

// Each redraw builds a chart's curves from every step (lists of n points, their EMA, the
// decimation's input): megabytes that live for a moment. glibc raises its mmap threshold
// to the largest block freed, after which such blocks come from the heap and their pages
// stay resident: a 100k-step run kept ~50 bytes a step of freed lists (110 B/step of RSS
// growth against 20 with the threshold fixed). A fixed 256 KiB threshold hands every
// large temporary back to the system when it is freed. Process-wide, set once.
static void keepLargeTemporariesOutOfTheHeap()
{
#ifdef __GLIBC__
    static const bool done = mallopt(M_MMAP_THRESHOLD, 256 * 1024) != 0;
    (void)done;
#endif
}

ChartPanel::ChartPanel(RunStore *store, QWidget *parent) : QWidget(parent), m_store(store)
{
    keepLargeTemporariesOutOfTheHeap();
    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(4, 2, 4, 2);
    bar->addWidget(new QLabel(tr("X axis:"), this));
    m_xCombo = new QComboBox(this);
    m_xCombo->setObjectName(QStringLiteral("xAxisCombo"));
    m_xCombo->addItems({tr("Step"), tr("Epoch"), tr("Wall time (s)")});
    bar->addWidget(m_xCombo);
    bar->addSpacing(12);
    bar->addWidget(new QLabel(tr("Smoothing:"), this));
    m_smoothSlider = new QSlider(Qt::Horizontal, this);
    m_smoothSlider->setObjectName(QStringLiteral("smoothingSlider"));
    m_smoothSlider->setRange(0, 99);
    m_smoothSlider->setValue(int(std::lround(m_smoothing * 100)));
    m_smoothSlider->setMinimumWidth(70); // a narrow panel (the Why? dock open) keeps it usable
    m_smoothSlider->setMaximumWidth(180);
    m_smoothSlider->setToolTip(tr("Exponential moving average of per-step curves "
                                  "(0 = raw values)"));
    bar->addWidget(m_smoothSlider);
    m_smoothLabel = new QLabel(this);
    m_smoothLabel->setMinimumWidth(32);
    bar->addWidget(m_smoothLabel);
    bar->addSpacing(12);
    m_logCheck = new QCheckBox(tr("Log scale"), this);
    m_logCheck->setObjectName(QStringLiteral("logScaleCheck"));
    m_logCheck->setToolTip(tr("Logarithmic y axis for loss and step time"));
    bar->addWidget(m_logCheck);
    bar->addStretch(1);

    auto *gridHost = new QWidget(this);
    m_grid = new QGridLayout(gridHost);
    m_grid->setContentsMargins(2, 2, 2, 2);
    m_grid->setSpacing(4);
    auto *scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true); // charts stretch with the panel, scroll below their minimum
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(gridHost);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addLayout(bar);
    layout->addWidget(scroll, 1);

    struct Spec {
        const char *name;
        QString title, yTitle, key;
    };
    const QString perStep = tr("faint: per step, solid: smoothed");
    const Spec specs[] = {
        {"loss", tr("Loss"), tr("loss"), perStep + tr("; dashed ●: test, per epoch")},
        {"accuracy", tr("Accuracy"), tr("%"),
         tr("solid: train, smoothed; dotted ●: train, dashed ●: test, per epoch")},
        {"step_time", tr("Step time"), tr("ms"), perStep + tr("; device time")},
        {"throughput", tr("Throughput"), tr("samples/s"), perStep},
        {"loss_scale", tr("Loss scale"), tr("scale"), tr("▲: skipped step (inf/NaN gradients)")},
        {"memory", tr("Device memory"), tr("MB"), tr("allocated by the run")},
    };
    for (const Spec &s : specs) {
        auto *c = new MetricChart(QString::fromLatin1(s.name), s.title, s.yTitle, s.key, gridHost);
        connect(c, &MetricChart::bucketsChanged, this, &ChartPanel::markAllDirty);
        const QString chartName = c->name();
        c->setReadoutSource([this, chartName](double x) { return readout(chartName, x); });
        m_charts.append(c);
    }
    chart(QStringLiteral("loss_scale"))->setLogY(true, true);
    chart(QStringLiteral("memory"))->setIncludeZero(true);
    chart(QStringLiteral("throughput"))->setIncludeZero(true);
    chart(QStringLiteral("accuracy"))->setYCeiling(100.0);
    layoutCharts(3);
    updateModes();
    setSmoothing(m_smoothing);

    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(k_redrawDelayMs);
    connect(&m_redrawTimer, &QTimer::timeout, this, &ChartPanel::startLiveRedraw);
    m_liveStepTimer.setSingleShot(true);
    m_liveStepTimer.setInterval(0);
    connect(&m_liveStepTimer, &QTimer::timeout, this, &ChartPanel::liveStep);

    connect(m_xCombo, &QComboBox::currentIndexChanged, this, [this](int i) { setXAxis(XAxis(i)); });
    connect(m_smoothSlider, &QSlider::valueChanged, this,
            [this](int v) { setSmoothing(v / 100.0); });
    connect(m_logCheck, &QCheckBox::toggled, this, &ChartPanel::setLogScale);

    // A run added, renamed, hidden or removed can change the other runs' legend names
    // (they tell the runs shown apart): every run is redrawn.
    connect(m_store, &RunStore::runAdded, this, &ChartPanel::markAllDirty);
    connect(m_store, &RunStore::runChanged, this, &ChartPanel::markAllDirty);
    connect(m_store, &RunStore::runRemoved, this, &ChartPanel::markAllDirty);
    connect(m_store, &RunStore::stepsAppended, this, [this](int id, int) { markDirty(id); });
    connect(m_store, &RunStore::epochsAppended, this, [this](int id, int) { markDirty(id); });
    markAllDirty();
}

// The setters keep the toolbar in step without its signals calling back in.
void ChartPanel::setXAxis(XAxis axis)
{
    {
        const QSignalBlocker block(m_xCombo);
        m_xCombo->setCurrentIndex(int(axis));
    }
    if (axis == m_xAxis) return;
    m_xAxis = axis;
    for (MetricChart *c : std::as_const(m_charts)) c->setXTitle(xTitle(axis));
    markAllDirty();
    emit xAxisChanged(axis);
}

void ChartPanel::setSmoothing(double alpha)
{
    alpha = std::isfinite(alpha) ? std::clamp(alpha, 0.0, 0.99) : 0.0;
    {
        const QSignalBlocker block(m_smoothSlider);
        m_smoothSlider->setValue(int(std::lround(alpha * 100)));
    }
    m_smoothLabel->setText(QString::number(alpha, 'f', 2));
    if (alpha == m_smoothing) return;
    m_smoothing = alpha;
    markAllDirty();
    emit smoothingChanged(alpha);
}

void ChartPanel::setLogScale(bool on)
{
    {
        const QSignalBlocker block(m_logCheck);
        m_logCheck->setChecked(on);
    }
    if (on == m_logScale) return;
    m_logScale = on;
    chart(QStringLiteral("loss"))->setLogY(on);
    chart(QStringLiteral("step_time"))->setLogY(on);
    markAllDirty();
    emit logScaleChanged(on);
}

QStringList ChartPanel::chartNames() const
{
    QStringList names;
    for (const MetricChart *c : m_charts) names << c->name();
    return names;
}

MetricChart *ChartPanel::chart(const QString &name) const
{
    for (MetricChart *c : m_charts)
        if (c->name() == name) return c;
    return nullptr;
}

void ChartPanel::setDesignedLanguageModel(bool languageModel)
{
    m_designedLanguageModel = languageModel;
    if (updateModes()) markAllDirty();
}

bool ChartPanel::updateModes()
{
    bool classifier = false, lm = false;
    bool fp8 = false;
    for (int id : m_store->runIds())
        if (const RunRecord *r = m_store->run(id); r && r->visible) {
            (r->languageModel ? lm : classifier) = true;
            fp8 = fp8 || r->config.policy == mixlab::Policy::MixedFP8;
        }
    if (!classifier && !lm) (m_designedLanguageModel ? lm : classifier) = true;
    const bool perplexity = lm && !classifier;
    const bool changed = perplexity != m_perplexityMode;
    m_perplexityMode = perplexity;
    MetricChart *acc = chart(QStringLiteral("accuracy"));
    if (changed || acc->title().isEmpty()) {
        if (perplexity) {
            acc->setLabels(tr("Perplexity"), tr("perplexity"),
                           tr("exp(loss per word), log scale; solid: train, smoothed; dotted ●: "
                              "train, dash-dot ●: valid, dashed ●: test, per epoch"));
            acc->setYCeiling(std::numeric_limits<double>::infinity());
            acc->setLogY(true);
        } else {
            acc->setLabels(tr("Accuracy"), tr("%"),
                           tr("solid: train, smoothed; dotted ●: train, dashed ●: test, per "
                              "epoch"));
            acc->setYCeiling(100.0);
            acc->setLogY(false);
        }
    }
    // Tokens when every run shown counts tokens; a mix says both.
    const bool tokens = lm && !classifier;
    if (tokens != m_tokensMode || changed) {
        m_tokensMode = tokens;
        const QString perStep = tr("faint: per step, solid: smoothed");
        chart(QStringLiteral("throughput"))
            ->setLabels(tr("Throughput"), tokens ? tr("tokens/s") : tr("samples/s"),
                        tokens ? perStep + tr("; tokens: batch × bptt a step") : perStep);
        chart(QStringLiteral("loss"))
            ->setLabels(tr("Loss"), tokens ? tr("loss per token") : tr("loss"),
                        perStep + tr("; dashed ●: test, per epoch"));
    }
    // mixed_fp8 scales no loss: its scales are the per-tensor fp8 ones (delayed scaling),
    // which the same chart draws for such runs, the largest and the smallest tensor's.
    MetricChart *scale = chart(QStringLiteral("loss_scale"));
    if (fp8 != m_fp8Mode || scale->title().isEmpty()) {
        m_fp8Mode = fp8;
        if (fp8)
            scale->setLabels(tr("Loss scale · fp8 scales"), tr("scale"),
                             tr("fp8 runs: largest (solid) and smallest (faint) tensor "
                                "scale; ▲: skipped step"));
        else
            scale->setLabels(tr("Loss scale"), tr("scale"),
                             tr("▲: skipped step (inf/NaN gradients)"));
    }
    return changed;
}

void ChartPanel::markDirty(int runId)
{
    m_dirty.insert(runId);
    // During a live cycle the change waits for its end (liveStep restarts the timer).
    if (!m_redrawTimer.isActive() && m_liveNext < 0) m_redrawTimer.start();
}

void ChartPanel::markAllDirty()
{
    m_allDirty = true;
    if (!m_redrawTimer.isActive() && m_liveNext < 0) m_redrawTimer.start();
}

// The coalesced redraw while runs stream in: one chart per event-loop turn (its curves,
// axes, and then its paint before the next chart's turn), so that no turn holds the GUI
// thread for all six charts. Painting six antialiased charts at once took 100-250 ms of
// one turn on a loaded 2-core machine; one chart's share stays well under the 100 ms the
// event loop must answer in.
void ChartPanel::startLiveRedraw()
{
    if (m_charts.isEmpty()) {
        redrawNow();
        return;
    }
    m_liveIds.clear();
    m_liveIds.swap(m_dirty);
    if (updateModes()) m_allDirty = true;
    if (m_allDirty) // a new axis mode, smoothing, scale or plot width: every run
        for (int id : m_store->runIds()) m_liveIds.insert(id);
    m_allDirty = false;
    for (MetricChart *c : std::as_const(m_charts))
        for (int id : c->runIds())
            if (!m_store->run(id)) m_liveIds.insert(id);
    // Last chart first: the loss chart, the one users (and tests) watch, is updated last,
    // so once it shows a change every chart does.
    m_liveNext = m_charts.size() - 1;
    m_liveClock.start();
    liveStep();
}

void ChartPanel::liveStep()
{
    if (m_liveNext < 0 || m_liveNext >= m_charts.size()) return;
    MetricChart *c = m_charts[m_liveNext];
    for (int id : m_liveIds) updateRun(id, c);
    c->fitAxes();
    if (--m_liveNext >= 0) {
        m_liveStepTimer.start(); // the next chart after this one has painted
        return;
    }
    m_liveIds.clear();
    ++m_redraws;
    // Live charts need a few frames a second, not 25: the next cycle comes at least
    // k_liveIntervalMs after this one, and later when a busy machine made this one slow,
    // so the GUI thread idles most of the time (a 20k-step CPU run at 25 cycles a second
    // spent 38% of a core painting charts, and the training thread lost that time).
    m_redrawTimer.setInterval(
        int(std::clamp<qint64>(2 * m_liveClock.elapsed(), k_liveIntervalMs, 1000)));
    if (!m_dirty.empty() || m_allDirty) m_redrawTimer.start();
}

void ChartPanel::redrawNow()
{
    m_redrawTimer.stop();
    // A live cycle in progress is folded into this complete, synchronous redraw.
    m_liveStepTimer.stop();
    m_dirty.insert(m_liveIds.begin(), m_liveIds.end());
    m_liveIds.clear();
    m_liveNext = -1;
    if (updateModes()) m_allDirty = true;
    std::set<int> ids;
    if (m_allDirty) {
        for (int id : m_store->runIds()) ids.insert(id);
    } else {
        ids.swap(m_dirty);
    }
    // Runs the charts still show but the store no longer has (removed, or cleared).
    for (MetricChart *c : std::as_const(m_charts))
        for (int id : c->runIds())
            if (!m_store->run(id)) ids.insert(id);
    m_dirty.clear();
    m_allDirty = false;
    for (int id : ids) updateRun(id);
    for (MetricChart *c : std::as_const(m_charts)) c->fitAxes();
    ++m_redraws;
}

// Rebuilds the run's curves in every chart, or only in `only`: the live redraw does one
// chart per event-loop turn and builds just the lists that chart shows.
void ChartPanel::updateRun(int runId, MetricChart *only)
{
    const RunRecord *r = m_store->run(runId);
    if (!r || !r->visible) {
        for (MetricChart *c : std::as_const(m_charts))
            if (!only || c == only) c->removeRun(runId);
        return;
    }
    auto wants = [&](const char *name) {
        MetricChart *c = chart(QLatin1String(name));
        return c && (!only || c == only);
    };
    const bool wLoss = wants("loss"), wAcc = wants("accuracy"), wStep = wants("step_time"),
               wRate = wants("throughput"), wScale = wants("loss_scale"), wMem = wants("memory");
    const XMapper xm(m_xAxis, *r);
    const auto &steps = r->steps;
    const qsizetype n = qsizetype(steps.size());
    QList<QPointF> loss, acc, stepMs, rate, scale, skipped, fp8Low;
    if (wLoss) loss.reserve(n);
    if (wAcc) acc.reserve(n);
    if (wStep) stepMs.reserve(n);
    if (wRate) rate.reserve(n);
    if (wScale) scale.reserve(n);
    const bool ppl = m_perplexityMode;
    const Metric accMetric = ppl ? Metric::Perplexity : Metric::Accuracy;
    if (wLoss || wAcc || wStep || wRate || wScale)
        for (const mixlab::StepMetrics &m : steps) {
            const double x = xm.step(m);
            if (wLoss) loss.append(QPointF(x, metricValue(m, Metric::Loss)));
            if (wAcc) acc.append(QPointF(x, metricValue(m, accMetric)));
            if (wStep) stepMs.append(QPointF(x, metricValue(m, Metric::StepMs)));
            if (wRate) rate.append(QPointF(x, metricValue(m, Metric::Throughput)));
            if (wScale) {
                scale.append(QPointF(x, metricValue(m, Metric::LossScale)));
                if (m.skipped) skipped.append(scale.back());
                if (m.fp8_log2_scale_min) // mixed_fp8: the tensors' scale range
                    fp8Low.append(QPointF(x, std::exp2(double(*m.fp8_log2_scale_min))));
            }
        }
    // Per epoch: accuracies, or for perplexity the train, valid and test perplexities.
    QList<QPointF> testLoss, trainAcc, testAcc, validPpl;
    double seconds = 0;
    if (wLoss || wAcc)
        for (const mixlab::EpochMetrics &e : r->epochs) {
            const double x = xm.epochEnd(e, seconds);
            seconds += e.seconds;
            testLoss.append(QPointF(x, e.test_loss));
            if (ppl) {
                trainAcc.append(QPointF(x, mixlab::perplexity(e.train_loss)));
                testAcc.append(QPointF(x, mixlab::perplexity(e.test_loss)));
                if (e.valid_loss) validPpl.append(QPointF(x, mixlab::perplexity(*e.valid_loss)));
            } else {
                trainAcc.append(QPointF(x, 100.0 * e.train_accuracy));
                testAcc.append(QPointF(x, 100.0 * e.test_accuracy));
            }
        }
    QList<QPointF> memory;
    if (wMem && n > 0 && r->deviceMemoryMB > 0) {
        memory.append(QPointF(xm.step(steps.front()), r->deviceMemoryMB));
        memory.append(QPointF(xm.step(steps.back()), r->deviceMemoryMB));
    }

    const QColor color = r->color.isValid() ? r->color : QColor(Qt::darkGray);
    const QString label = legendLabel(runId), tip = runToolTip(*r);
    const double a = m_smoothing;
    using Style = MetricChart::Style;

    if (wLoss) {
        auto lossCurves = stepCurves(loss, a, true, false);
        lossCurves.push_back({tr("test, per epoch"), Style::DashedMarkers, false, testLoss, {}});
        chart(QStringLiteral("loss"))->setRun(runId, label, tip, color, lossCurves);
    }
    if (wAcc) {
        auto accCurves = stepCurves(acc, a, true, false);
        accCurves.push_back({tr("train, per epoch"), Style::DottedMarkers, false, trainAcc, {}});
        if (ppl)
            accCurves.push_back(
                {tr("valid, per epoch"), Style::DashDotMarkers, false, validPpl, {}});
        accCurves.push_back({tr("test, per epoch"), Style::DashedMarkers, false, testAcc, {}});
        chart(QStringLiteral("accuracy"))->setRun(runId, label, tip, color, accCurves);
    }
    if (wStep)
        chart(QStringLiteral("step_time"))
            ->setRun(runId, label, tip, color, stepCurves(stepMs, a, true, true));
    if (wRate)
        chart(QStringLiteral("throughput"))
            ->setRun(runId, label, tip, color, stepCurves(rate, a, true, true));
    if (wScale && !fp8Low.isEmpty())
        chart(QStringLiteral("loss_scale"))
            ->setRun(runId, label, tip, color,
                     {{tr("fp8 scale, largest tensor"), Style::Solid, true, scale, {}},
                      {tr("fp8 scale, smallest tensor"), Style::Faint, false, fp8Low, {}},
                      {tr("skipped step"), Style::Scatter, false, skipped, {}}});
    else if (wScale)
        chart(QStringLiteral("loss_scale"))
            ->setRun(runId, label, tip, color,
                     {{tr("loss scale"), Style::Solid, true, scale, {}},
                      {tr("skipped step"), Style::Scatter, false, skipped, {}}});
    if (wMem)
        chart(QStringLiteral("memory"))
            ->setRun(runId, label, tip, color,
                     {{tr("device memory"), Style::Solid, true, memory, {}}});
}

QString ChartPanel::legendLabel(int runId) const
{
    std::vector<QString> names;
    qsizetype at = -1;
    for (int id : m_store->runIds())
        if (const RunRecord *r = m_store->run(id); r && r->visible) {
            if (id == runId) at = qsizetype(names.size());
            names.push_back(r->name);
        }
    if (at < 0) return {};
    return legendLabels(names)[std::size_t(at)];
}

QString ChartPanel::runToolTip(const RunRecord &r) const
{
    const qint64 steps = r.steps.empty() ? 0 : r.steps.back().step;
    return tr("%1\ngroup %2 · %3 · batch %4 · %5 steps · %6")
        .arg(r.name)
        .arg(r.group)
        .arg(policyText(r.config.policy))
        .arg(r.config.batch_size)
        .arg(steps)
        .arg(runStatusName(r.status).toLower());
}

MetricChart::Readout ChartPanel::readout(const QString &chartName, double x) const
{
    MetricChart::Readout out;
    switch (m_xAxis) {
    case XAxis::Step: out.x = tr("step %1").arg(std::max<qint64>(1, std::llround(x))); break;
    case XAxis::Epoch: out.x = tr("epoch %1").arg(x, 0, 'f', 2); break;
    case XAxis::WallTime: out.x = tr("%1 s").arg(x, 0, 'f', 1); break;
    }
    const MetricChart *c = chart(chartName);
    if (!c) return out;
    std::optional<Metric> metric = metricOf(chartName);
    if (metric == Metric::Accuracy && m_perplexityMode) metric = Metric::Perplexity;
    const QString unit = c->yTitle().startsWith(QLatin1String("loss")) ||
                                 c->yTitle() == QLatin1String("scale") ||
                                 c->yTitle() == QLatin1String("perplexity")
                             ? QString()
                         : c->yTitle() == QLatin1String("%") ? c->yTitle()
                                                             : QStringLiteral(" ") + c->yTitle();
    for (int id : m_store->runIds()) {
        const RunRecord *r = m_store->run(id);
        if (!r || !r->visible || r->steps.empty()) continue;
        const XMapper xm(m_xAxis, *r);
        QString value;
        qint64 step = 0;
        if (!metric) { // device memory: one value for the whole run
            if (r->deviceMemoryMB <= 0) continue;
            value = readoutValue(r->deviceMemoryMB) + unit;
        } else {
            const QList<QPointF> raw = metricPoints(*r, *metric, xm);
            std::optional<mixlab::SteadyRange> steady;
            if (steadyScaled(*metric)) steady = mixlab::steadyRange(raw);
            const bool smoothed = *metric != Metric::LossScale;
            const mixlab::CurveReading at =
                mixlab::readCurveAt(raw, x, smoothed ? m_smoothing : 0.0, smoothingStart(steady));
            if (at.index < 0) continue;
            const mixlab::StepMetrics &m = r->steps[std::size_t(at.index)];
            step = m.step;
            if (smoothed && m_smoothing > 0 && std::isfinite(at.smoothed))
                value = tr("%1%2 (raw %3)")
                            .arg(readoutValue(at.smoothed), unit, readoutValue(at.point.y()));
            else
                value = readoutValue(at.point.y()) + unit;
            if (at.index < smoothingStart(steady)) value += tr(", warm-up");
            if (*metric == Metric::LossScale && m.fp8_log2_scale_min)
                value = tr("fp8 scales 2^%1 … 2^%2")
                            .arg(double(*m.fp8_log2_scale_min), 0, 'f', 1)
                            .arg(double(*m.fp8_log2_scale_max), 0, 'f', 1);
            if (*metric == Metric::LossScale && m.skipped) value += tr(", skipped");
            // The latest per-epoch evaluation at or before x.
            if (*metric == Metric::Loss || *metric == Metric::Accuracy ||
                *metric == Metric::Perplexity) {
                double seconds = 0;
                const mixlab::EpochMetrics *last = nullptr;
                for (const mixlab::EpochMetrics &e : r->epochs) {
                    if (xm.epochEnd(e, seconds) > x + 1e-9) break;
                    seconds += e.seconds;
                    last = &e;
                }
                if (last && *metric == Metric::Perplexity)
                    value += tr("; valid %1, test %2 (epoch %3)")
                                 .arg(last->valid_loss
                                          ? readoutValue(mixlab::perplexity(*last->valid_loss))
                                          : tr("n/a"),
                                      readoutValue(mixlab::perplexity(last->test_loss)))
                                 .arg(last->epoch);
                else if (last)
                    value += tr("; test %1%2 (epoch %3)")
                                 .arg(readoutValue(*metric == Metric::Loss
                                                       ? last->test_loss
                                                       : 100.0 * last->test_accuracy),
                                      unit)
                                 .arg(last->epoch);
            }
        }
        if (m_xAxis != XAxis::Step && step > 0) value = tr("step %1: %2").arg(step).arg(value);
        const QColor color = r->color.isValid() ? r->color : QColor(Qt::darkGray);
        out.rows.push_back({legendLabel(id), color, value});
    }
    return out;
}

void ChartPanel::layoutCharts(int columns)
{
    if (columns == m_columns) return;
    m_columns = columns;
    for (MetricChart *c : std::as_const(m_charts)) m_grid->removeWidget(c);
    for (qsizetype i = 0; i < m_charts.size(); ++i)
        m_grid->addWidget(m_charts[i], int(i / columns), int(i % columns));
    for (int col = 0; col < 3; ++col) m_grid->setColumnStretch(col, col < columns ? 1 : 0);
}

void ChartPanel::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    // Three columns once each chart can be ~360 px wide, else two while two fit side by
    // side, else one: a narrow panel (the Why? dock open) scrolls down, never sideways.
    layoutCharts(width() >= 1100 ? 3 : width() >= twoColumnWidth() ? 2 : 1);
}

int ChartPanel::twoColumnWidth() const
{
    return 2 * m_charts.front()->minimumWidth() + 40; // grid spacing, scroll bar
}

void ChartPanel::renderGrid(QPainter *painter, const QList<MetricChart *> &charts,
                            const QSize &size) const
{
    const int columns = charts.size() == 1 ? 1 : std::max(m_columns, 2);
    const int rows = int((charts.size() + columns - 1) / columns);
    const double w = double(size.width()) / columns, h = double(size.height()) / rows;
    for (qsizetype i = 0; i < charts.size(); ++i) {
        const QRectF cell(w * double(i % columns), h * double(i / columns), w, h);
        charts[i]->renderInto(painter, cell);
    }
}

bool ChartPanel::exportChart(const QString &chartName, const QString &path, const QSize &pngSize,
                             QString *error) const
{
    auto fail = [error](const QString &message) {
        if (error) *error = message;
        return false;
    };
    QList<MetricChart *> charts;
    if (chartName == QLatin1String("all")) {
        charts = m_charts;
    } else if (MetricChart *c = chart(chartName)) {
        charts = {c};
    } else {
        return fail(tr("Unknown chart \"%1\": use one of %2, or \"all\".")
                        .arg(chartName, chartNames().join(QStringLiteral(", "))));
    }
    // The file shows what the store holds now, not what the next coalesced redraw
    // would have shown: drawing state changes, the panel's data do not.
    const_cast<ChartPanel *>(this)->redrawNow();
    return exportPainted(
        path, pngSize, tr("MixLab charts"),
        [this, &charts](QPainter *painter, const QSize &size) {
            renderGrid(painter, charts, size);
        },
        error);
}
