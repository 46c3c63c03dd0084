// MaxBatchDialog: configures a search, hands it to RunController (MaxBatchWorker runs it on
// the app's worker thread, one policy after another) and redraws the curves, the table
// and the summary as each trial comes back. It sees plain values only, never the engine.
#include "runs/maxbatchdialog.h"

#include "common/enginetext.h"
#include "common/runcolors.h"
#include "runs/runcontroller.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"

#include <QBrush>
#include <QChart>
#include <QChartView>
#include <QCloseEvent>
#include <QCursor>
#include <QElapsedTimer>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace {

// A CPU trial at batch 65536 of even a small model takes minutes; 1024 answers the
// question there (the CPU backend has no device memory to run out of) in seconds.
constexpr int k_cpuLimit = 1024;
constexpr int k_gpuLimit = 1 << 16;

bool onCpu(const MaxBatchJob &job)
{
    switch (job.config.device) {
    case mixlab::DeviceChoice::CPU: return true;
    case mixlab::DeviceChoice::CUDA: return false;
    case mixlab::DeviceChoice::Auto: return job.device.backend == mixlab::BackendKind::Cpu;
    }
    return false;
}

qint64 mebibytes(std::int64_t bytes) { return (bytes + (1 << 20) - 1) >> 20; }

QString throughputText(double samplesPerS) { return QString::number(samplesPerS, 'f', 0); }

// The short form for the table and the summary; the full message goes in a tooltip.
QString failureShort(const mixlab::BatchTrial &t)
{
    return t.out_of_memory ? QObject::tr("out of memory") : QString::fromStdString(t.why_not);
}

} // namespace

MaxBatchDialog::MaxBatchDialog(RunController *controller, QWidget *parent)
    : QDialog(parent), m_controller(controller)
{
    setObjectName("maxBatchDialog");
    setWindowTitle(tr("Find largest batch"));
    setModal(false);
    const mixlab::MaxBatchOptions defaults;
    m_warmup = defaults.warmup_steps;
    m_timed = defaults.timed_steps;

    m_jobLabel = new QLabel(this);
    m_jobLabel->setObjectName("maxBatchJob");
    m_jobLabel->setWordWrap(true);

    m_start = new QSpinBox(this);
    m_start->setObjectName("maxBatchStart");
    m_start->setRange(1, 1 << 20);
    m_start->setValue(defaults.start);
    m_start->setToolTip(tr("The first batch tried; halved while it does not fit"));
    m_limit = new QSpinBox(this);
    m_limit->setObjectName("maxBatchLimit");
    m_limit->setRange(1, 1 << 24);
    m_limit->setValue(defaults.limit);
    m_limit->setToolTip(tr("The largest batch tried: doubling stops here"));
    // Only the user changes it with signals on (applyDefaultLimit blocks them): from then
    // on the limit stays as the user set it.
    connect(m_limit, &QSpinBox::valueChanged, this, [this] { m_limitTouched = true; });
    m_startStop = new QPushButton(tr("Start"), this);
    m_startStop->setObjectName("maxBatchStartStop");
    m_startStop->setDefault(true);
    connect(m_startStop, &QPushButton::clicked, this, &MaxBatchDialog::onStartStop);

    auto *controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Start batch:"), this));
    controls->addWidget(m_start);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Limit:"), this));
    controls->addWidget(m_limit);
    controls->addStretch(1);
    controls->addWidget(m_startStop);

    m_status = new QLabel(this);
    m_status->setObjectName("maxBatchStatus");
    m_errorLabel = new QLabel(this);
    m_errorLabel->setObjectName("maxBatchError");
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_errorLabel->hide();

    m_chart = new QChart;
    m_chart->setTitle(tr("Throughput versus batch"));
    m_chart->legend()->setAlignment(Qt::AlignBottom);
    m_chart->setMargins(QMargins(4, 4, 4, 4));
    m_xAxis = new QLogValueAxis(m_chart);
    m_xAxis->setTitleText(tr("batch (log scale)"));
    m_xAxis->setBase(2);
    m_xAxis->setLabelFormat(QStringLiteral("%.0f"));
    m_xAxis->setMinorTickCount(0);
    m_yAxis = new QValueAxis(m_chart);
    m_yAxis->setTitleText(tr("samples/s"));
    m_yAxis->setLabelFormat(QStringLiteral("%.0f"));
    m_chart->addAxis(m_xAxis, Qt::AlignBottom);
    m_chart->addAxis(m_yAxis, Qt::AlignLeft);
    m_chartView = new QChartView(m_chart, this); // the view owns the chart
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumHeight(260);
    m_markerNote = new QLabel(tr("\u25B2 on the batch axis: a batch that does not fit "
                                 "(hover over it, or see the table, for why)"),
                              this);
    m_markerNote->hide(); // shown once a batch does not fit

    m_table = new QTableWidget(0, 6, this);
    m_table->setObjectName("maxBatchTable");
    m_table->setHorizontalHeaderLabels(
        {tr("Policy"), tr("Batch"), tr("ms/step"), tr("samples/s"), tr("MiB"), tr("Result")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(5, QHeaderView::Stretch);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);

    m_summary = new QLabel(this);
    m_summary->setObjectName("maxBatchSummary");
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setTextFormat(Qt::PlainText);

    auto *chartBox = new QWidget(this);
    auto *chartLayout = new QVBoxLayout(chartBox);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    chartLayout->addWidget(m_chartView, 1);
    chartLayout->addWidget(m_markerNote);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(chartBox);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setChildrenCollapsible(false);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_jobLabel);
    layout->addLayout(controls);
    layout->addWidget(m_status);
    layout->addWidget(m_errorLabel);
    layout->addWidget(split, 1);
    layout->addWidget(m_summary);
    resize(820, 760);

    connect(controller, &RunController::searchPrepared, this, &MaxBatchDialog::onPrepared);
    connect(controller, &RunController::searchPolicyStarted, this,
            &MaxBatchDialog::onPolicyStarted);
    connect(controller, &RunController::searchTrialStarted, this, &MaxBatchDialog::onTrialStarted);
    connect(controller, &RunController::searchTrialDone, this, &MaxBatchDialog::onTrial);
    connect(controller, &RunController::searchPolicyDone, this, &MaxBatchDialog::onPolicyDone);
    connect(controller, &RunController::searchPolicyFailed, this, &MaxBatchDialog::onPolicyError);
    connect(controller, &RunController::searchFailed, this, &MaxBatchDialog::onSearchError);
    connect(controller, &RunController::searchFinished, this, &MaxBatchDialog::onSearchFinished);
    // Training holds the worker: Start waits for it and says so.
    connect(controller, &RunController::runningChanged, this, &MaxBatchDialog::updateControls);
    updateControls();
    updateSummary();
}

MaxBatchDialog::~MaxBatchDialog()
{
    // The search ends on the worker thread after its trial in flight; what it still sends
    // goes to the controller, whose connections to this dialog go with it.
    if (m_running && m_controller) m_controller->stop();
}

void MaxBatchDialog::setJobSource(std::function<MaxBatchJob()> source)
{
    m_source = std::move(source);
    refreshJob();
}

void MaxBatchDialog::setJob(const MaxBatchJob &job)
{
    m_source = nullptr;
    m_job = job;
    refreshJob();
}

void MaxBatchDialog::setSearchRange(int start, int limit)
{
    m_start->setValue(start);
    m_limit->setValue(limit);
    m_limitTouched = true;
}

int MaxBatchDialog::searchStart() const { return m_start->value(); }
int MaxBatchDialog::searchLimit() const { return m_limit->value(); }

void MaxBatchDialog::setTrialSteps(int warmup, int timed)
{
    m_warmup = warmup;
    m_timed = timed;
}

void MaxBatchDialog::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    if (!isRunning()) refreshJob();
}

void MaxBatchDialog::closeEvent(QCloseEvent *event)
{
    // The trial in flight finishes on the worker, then the search ends there; the GUI
    // never blocks on it here.
    stop();
    QDialog::closeEvent(event);
}

void MaxBatchDialog::reject()
{
    // Escape hides the dialog without a close event: stop the search all the same.
    stop();
    QDialog::reject();
}

void MaxBatchDialog::refreshJob()
{
    if (m_source) m_job = m_source();
    // One curve per policy: a policy listed twice would draw over itself.
    std::vector<mixlab::Policy> unique;
    for (mixlab::Policy p : m_job.policies)
        if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
    if (unique.empty()) unique.push_back(m_job.config.policy);
    m_job.policies = unique;

    QStringList names;
    for (mixlab::Policy p : m_job.policies) names << policyText(p);
    const QString model =
        m_job.model.name.empty() ? tr("(unnamed)") : QString::fromStdString(m_job.model.name);
    const std::string &ds = m_job.config.dataset.name;
    const QString dataset = ds.empty() ? QString::fromStdString(mixlab::default_dataset_name())
                                       : QString::fromStdString(ds);
    QString device;
    if (onCpu(m_job))
        device = tr("CPU");
    else if (!m_job.device.name.empty() && m_job.device.backend == mixlab::BackendKind::Cuda)
        device = QString::fromStdString(m_job.device.name);
    else
        device = m_job.config.device == mixlab::DeviceChoice::CUDA ? tr("CUDA") : tr("auto");
    m_jobLabel->setText(tr("Model %1 (%2 layers) on %3, dataset %4; policies in turn: %5")
                            .arg(model)
                            .arg(m_job.model.layers.size())
                            .arg(device, dataset, names.join(QStringLiteral(", "))));
    applyDefaultLimit();
    if (!isRunning()) {
        m_errorLabel->setVisible(!m_job.blocked.isEmpty());
        m_errorLabel->setText(m_job.blocked);
    }
    updateControls();
}

void MaxBatchDialog::applyDefaultLimit()
{
    if (m_limitTouched || isRunning()) return;
    const QSignalBlocker block(m_limit);
    m_limit->setValue(onCpu(m_job) ? k_cpuLimit : k_gpuLimit);
}

void MaxBatchDialog::onStartStop()
{
    if (isRunning())
        stop();
    else
        start();
}

void MaxBatchDialog::stop()
{
    if (!m_running || m_stopRequested) return;
    m_stopRequested = true;
    if (m_controller) m_controller->stop();
    m_progress = tr("Stopping after the trial in flight...");
    m_status->setText(m_progress);
    updateControls();
}

void MaxBatchDialog::start()
{
    if (isRunning()) return;
    refreshJob();
    m_error.clear();
    if (!m_job.blocked.isEmpty()) {
        refuse(m_job.blocked);
        return;
    }
    mixlab::MaxBatchOptions options;
    options.start = m_start->value();
    options.limit = m_limit->value();
    options.warmup_steps = m_warmup;
    options.timed_steps = m_timed;
    try {
        if (options.limit < options.start)
            throw mixlab::InputError(
                "the limit (" + std::to_string(options.limit) + ") is below the start batch (" +
                std::to_string(options.start) + "): raise the limit or lower the start");
        mixlab::validate_max_batch_options(options);
    } catch (const std::exception &e) {
        refuse(QString::fromStdString(e.what()));
        return;
    }

    SearchJob search;
    search.model = m_job.model;
    search.config = m_job.config;
    search.policies = m_job.policies;
    search.options = options;
    // One job at a time on the worker thread: refused while training (or a search) runs.
    if (!m_controller) {
        refuse(tr("the window that runs the search is closing"));
        return;
    }
    if (!m_controller->startSearch(search)) {
        refuse(m_controller->isRunning()
                   ? tr("a training job is running: stop it or let it end, then start the search")
                   : tr("another search is running: stop it or let it end first"));
        return;
    }
    m_states.clear();
    for (mixlab::Policy p : m_job.policies) {
        PolicyState s;
        s.policy = p;
        m_states.push_back(s);
    }
    m_running = true;
    m_stopRequested = false;
    m_stopped = false;
    m_errorLabel->hide();
    resetView();
    m_clock.start();
    m_progress = tr("Preparing the device and the data...");
    m_status->setText(m_progress);
    updateControls();
    updateSummary();
    emit runningChanged(true);
}

void MaxBatchDialog::refuse(const QString &message)
{
    m_error = message;
    m_errorLabel->setText(tr("The search could not run: %1").arg(message));
    m_errorLabel->show();
    emit searchFinished(false);
}

void MaxBatchDialog::onPrepared(const MaxBatchContext &context)
{
    if (!m_running) return;
    const QString what =
        tr("%1 training samples of %2").arg(context.trainSamples).arg(context.datasetName);
    m_jobLabel->setText(m_jobLabel->text() +
                        tr("\nDevice: %1; data: %2.").arg(context.deviceName, what));
}

void MaxBatchDialog::onPolicyStarted(int index)
{
    if (!m_running) return;
    m_progress = tr("Searching under %1...").arg(policyText(m_states[std::size_t(index)].policy));
    m_status->setText(m_progress);
    updateSummary();
}

void MaxBatchDialog::onTrialStarted(int index, int batch)
{
    if (!m_running || m_stopRequested) return; // keep "Stopping..." visible
    const PolicyState &s = m_states[std::size_t(index)];
    m_progress = tr("Trying batch %1 under %2 (policy %3 of %4, trial %5)...")
                     .arg(batch)
                     .arg(policyText(s.policy))
                     .arg(index + 1)
                     .arg(m_states.size())
                     .arg(s.trials.size() + 1);
    m_status->setText(m_progress);
}

void MaxBatchDialog::onTrial(int index, const mixlab::BatchTrial &trial)
{
    if (!m_running) return;
    auto &trials = m_states[std::size_t(index)].trials;
    const auto at =
        std::lower_bound(trials.begin(), trials.end(), trial.batch,
                         [](const mixlab::BatchTrial &t, int b) { return t.batch < b; });
    trials.insert(at, trial);
    updateChart();
    rebuildTable();
    updateSummary();
    emit trialAdded(index, trial.batch);
}

void MaxBatchDialog::onPolicyDone(int index, const mixlab::MaxBatchResult &result)
{
    if (!m_running) return;
    PolicyState &s = m_states[std::size_t(index)];
    s.result = result;
    s.trials = result.trials; // the engine's own list, already sorted
    s.done = true;
    updateChart();
    rebuildTable();
    updateSummary();
}

void MaxBatchDialog::onPolicyError(int index, const QString &message)
{
    if (!m_running) return;
    m_states[std::size_t(index)].error = message;
    m_error = tr("%1: %2").arg(policyText(m_states[std::size_t(index)].policy), message);
    m_errorLabel->setText(m_error);
    m_errorLabel->show();
    updateSummary();
}

void MaxBatchDialog::onSearchError(const QString &message)
{
    if (!m_running) return;
    m_error = message;
    m_errorLabel->setText(tr("The search could not run: %1").arg(message));
    m_errorLabel->show();
}

void MaxBatchDialog::onSearchFinished(bool stopped)
{
    if (!m_running) return;
    m_running = false;
    // Stopped: Stop cut a policy's search short (a Stop after the last trial changed
    // nothing); the worker knows which.
    m_stopped = stopped;
    int trials = 0;
    for (const auto &s : m_states) trials += int(s.trials.size());
    const QString took = (trials == 1 ? tr("1 trial") : tr("%1 trials").arg(trials)) +
                         tr(" in %1 s").arg(m_clock.elapsed() / 1000.0, 0, 'f', 1);
    m_progress = m_stopped           ? tr("Stopped: %1.").arg(took)
                 : m_error.isEmpty() ? tr("Done: %1.").arg(took)
                                     : tr("Ended with an error: %1.").arg(took);
    m_status->setText(m_progress);
    updateControls();
    updateSummary();
    emit runningChanged(false);
    emit searchFinished(m_stopped);
}

void MaxBatchDialog::resetView()
{
    for (QAbstractSeries *s : m_chart->series()) m_chart->removeSeries(s);
    qDeleteAll(m_fitSeries);
    qDeleteAll(m_failSeries);
    m_fitSeries.clear();
    m_failSeries.clear();
    for (std::size_t i = 0; i < m_states.size(); ++i) {
        const mixlab::Policy policy = m_states[i].policy;
        const QColor color = policyColor(policy);
        auto *line = new QLineSeries(m_chart);
        line->setName(policyText(policy));
        QPen pen(color);
        pen.setWidthF(2.0);
        line->setPen(pen);
        line->setPointsVisible(true);
        line->setMarkerSize(5);
        auto *fail = new QScatterSeries(m_chart);
        fail->setName(tr("%1: does not fit").arg(policyText(policy)));
        fail->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
        fail->setMarkerSize(16);
        fail->setColor(color);
        fail->setBorderColor(color.darker(140));
        for (QXYSeries *s : {static_cast<QXYSeries *>(line), static_cast<QXYSeries *>(fail)}) {
            m_chart->addSeries(s);
            s->attachAxis(m_xAxis);
            s->attachAxis(m_yAxis);
        }
        // One legend entry per policy: the failure markers are explained below the chart.
        for (QLegendMarker *m : m_chart->legend()->markers(fail)) m->setVisible(false);
        const int index = int(i);
        const auto hover = [this, index](const QPointF &point, bool state) {
            if (!state) {
                QToolTip::hideText();
                return;
            }
            const PolicyState &s = m_states[std::size_t(index)];
            for (const auto &t : s.trials) {
                if (std::abs(t.batch - point.x()) > 0.5) continue;
                const QString text =
                    t.fits ? tr("%1, batch %2: %3 samples/s, %4 ms/step, %5 MiB")
                                 .arg(policyText(s.policy))
                                 .arg(t.batch)
                                 .arg(throughputText(t.samples_per_s), msText(t.step_ms))
                                 .arg(mebibytes(t.device_bytes))
                           : tr("%1, batch %2 does not fit: %3")
                                 .arg(policyText(s.policy))
                                 .arg(t.batch)
                                 .arg(QString::fromStdString(t.why_not));
                QToolTip::showText(QCursor::pos(), text, m_chartView);
                return;
            }
        };
        connect(line, &QXYSeries::hovered, this, hover);
        connect(fail, &QXYSeries::hovered, this, hover);
        m_fitSeries.push_back(line);
        m_failSeries.push_back(fail);
    }
    updateChart();
    rebuildTable();
}

void MaxBatchDialog::updateChart()
{
    int lo = 0, hi = 0;
    double top = 0;
    for (const auto &s : m_states)
        for (const auto &t : s.trials) {
            lo = lo == 0 ? t.batch : std::min(lo, t.batch);
            hi = std::max(hi, t.batch);
            if (t.fits) top = std::max(top, t.samples_per_s);
        }
    if (lo == 0) {
        lo = m_start->value();
        hi = m_limit->value();
    }
    // Whole powers of two at both ends, so the ticks (at powers of the base) start at
    // the left edge; a base of 4 past ten octaves keeps the labels from crowding.
    const double lo2 = std::floor(std::log2(double(std::max(lo, 1))));
    double hi2 = std::ceil(std::log2(double(std::max(hi, 1))));
    if (hi2 <= lo2) hi2 = lo2 + 1;
    const bool wide = hi2 - lo2 > 10;
    const double octaves = wide ? 2 : 1;
    const double from = std::floor(lo2 / octaves) * octaves,
                 to = std::ceil(hi2 / octaves) * octaves;
    m_xAxis->setBase(wide ? 4 : 2);
    // A quarter octave either side, so the end points are not cut by the frame.
    m_xAxis->setRange(std::exp2(from - 0.25), std::exp2(to + 0.25));

    // GPU throughputs run to millions: plotted in thousands, the labels stay short.
    const double scale = top >= 1e5 ? 1e-3 : 1.0;
    m_yAxis->setTitleText(scale < 1 ? tr("thousand samples/s") : tr("samples/s"));
    // Ticks from 0 at a 1-2-2.5-5 step, about five of them; the axis starts a little
    // below 0 so the does-not-fit marks on the batch axis show whole.
    const double span = top > 0 ? top * scale * 1.05 : 1.0;
    const double magnitude = std::pow(10.0, std::floor(std::log10(span / 5)));
    double tick = magnitude;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (span / (m * magnitude) <= 6) {
            tick = m * magnitude;
            break;
        }
    const double ceiling = std::ceil(span / tick) * tick;
    m_yAxis->setTickType(QValueAxis::TicksDynamic);
    m_yAxis->setTickAnchor(0);
    m_yAxis->setTickInterval(tick);
    m_yAxis->setLabelFormat(tick < 1 ? QStringLiteral("%.1f") : QStringLiteral("%.0f"));
    m_yAxis->setRange(-0.04 * ceiling, ceiling);

    bool anyFailure = false;
    for (std::size_t i = 0; i < m_states.size(); ++i) {
        QList<QPointF> fits, fails;
        for (const auto &t : m_states[i].trials) {
            if (t.fits)
                fits.append(QPointF(t.batch, t.samples_per_s * scale));
            else
                fails.append(QPointF(t.batch, 0.0));
        }
        m_fitSeries[i]->replace(fits);
        m_failSeries[i]->replace(fails);
        anyFailure = anyFailure || !fails.isEmpty();
    }
    m_markerNote->setVisible(anyFailure);
}

void MaxBatchDialog::rebuildTable()
{
    int rows = 0;
    for (const auto &s : m_states) rows += int(s.trials.size());
    m_table->setRowCount(rows);
    int row = 0;
    const auto cell = [this](int r, int c, const QString &text, Qt::Alignment align) {
        auto *item = new QTableWidgetItem(text);
        item->setTextAlignment(align | Qt::AlignVCenter);
        m_table->setItem(r, c, item);
        return item;
    };
    for (const auto &s : m_states)
        for (const auto &t : s.trials) {
            cell(row, 0, policyText(s.policy), Qt::AlignLeft)->setForeground(policyColor(s.policy));
            cell(row, 1, QString::number(t.batch), Qt::AlignRight);
            cell(row, 2, t.fits ? msText(t.step_ms) : QStringLiteral("-"), Qt::AlignRight);
            cell(row, 3, t.fits ? throughputText(t.samples_per_s) : QStringLiteral("-"),
                 Qt::AlignRight);
            // A failed trial allocated nothing that stayed; 0 MiB would read as a measurement.
            cell(row, 4,
                 t.device_bytes > 0 || t.fits ? QString::number(mebibytes(t.device_bytes))
                                              : QStringLiteral("-"),
                 Qt::AlignRight);
            QTableWidgetItem *result =
                cell(row, 5, t.fits ? tr("fits") : tr("does not fit: %1").arg(failureShort(t)),
                     Qt::AlignLeft);
            if (!t.fits) {
                result->setToolTip(QString::fromStdString(t.why_not));
                result->setForeground(QColor(0xb0, 0x00, 0x20));
            }
            ++row;
        }
    if (rows > 0) m_table->scrollToItem(m_table->item(rows - 1, 0));
}

QString MaxBatchDialog::summaryText() const { return m_summary->text(); }
QString MaxBatchDialog::errorText() const { return m_error; }

void MaxBatchDialog::updateSummary()
{
    if (m_states.empty()) {
        m_summary->setText(tr("Press Start: each policy in turn, the batch doubles from the start "
                              "batch until it does not fit or reaches the limit, then bisects."));
        return;
    }
    QStringList lines;
    for (const auto &s : m_states) {
        const QString name = policyText(s.policy);
        const mixlab::MaxBatchResult &r = s.result;
        // Before the policy's search ended (running, stopped, failed): what the engine
        // answers for a search cut short.
        const int best = mixlab::partial_max_batch_result(s.trials).largest_fit;
        if (!s.error.isEmpty()) {
            lines << (best > 0 ? tr("%1: failed (%2); largest batch before that %3")
                                     .arg(name, s.error)
                                     .arg(best)
                               : tr("%1: failed: %2").arg(name, s.error));
        } else if (!s.done) {
            if (s.trials.empty())
                lines << (isRunning() ? tr("%1: waiting").arg(name)
                          : m_stopped ? tr("%1: not run (stopped)").arg(name)
                                      : tr("%1: not run").arg(name));
            else if (isRunning())
                lines << tr("%1: searching, largest batch so far %2").arg(name).arg(best);
            else
                lines << tr("%1: stopped, largest batch so far %2").arg(name).arg(best);
        } else if (r.largest_fit == 0) {
            lines << tr("%1: no batch fits (batch %2: %3)")
                         .arg(name)
                         .arg(r.first_failure)
                         .arg(r.failure_out_of_memory ? tr("out of memory")
                                                      : QString::fromStdString(r.failure_reason));
        } else if (r.reached_limit) {
            lines << tr("%1: largest batch %2, the search limit (raise the limit to look further)")
                         .arg(name)
                         .arg(r.largest_fit);
        } else {
            lines << tr("%1: largest batch %2 (%3: %4)")
                         .arg(name)
                         .arg(r.largest_fit)
                         .arg(r.first_failure)
                         .arg(r.failure_out_of_memory ? tr("out of memory")
                                                      : QString::fromStdString(r.failure_reason));
        }
    }
    // The ratios against the first policy, as mixlab-cli maxbatch words them.
    const PolicyState &base = m_states.front();
    if (base.done && base.result.largest_fit > 0) {
        for (std::size_t i = 1; i < m_states.size(); ++i) {
            const PolicyState &s = m_states[i];
            if (!s.done) continue;
            const QString name = policyText(s.policy), baseName = policyText(base.policy);
            if (s.result.largest_fit == 0) {
                lines << tr("%1 fits no batch at all").arg(name);
                continue;
            }
            if (s.result.reached_limit && base.result.reached_limit) {
                lines << tr("%1 and %2 both fit the search limit %3: raise the limit to compare")
                             .arg(name, baseName)
                             .arg(s.result.largest_fit);
                continue;
            }
            // A largest batch at the search limit is only a lower bound: say which side.
            const QString qual = s.result.reached_limit      ? tr("at least ")
                                 : base.result.reached_limit ? tr("at most ")
                                                             : QString();
            lines << tr("%1 fits %2%3x the batch of %4 (%5 vs %6)")
                         .arg(name, qual)
                         .arg(double(s.result.largest_fit) / double(base.result.largest_fit), 0,
                              'f', 2)
                         .arg(baseName)
                         .arg(s.result.largest_fit)
                         .arg(base.result.largest_fit);
        }
    }
    m_summary->setText(lines.join(QLatin1Char('\n')));
}

void MaxBatchDialog::updateControls()
{
    const bool running = isRunning();
    const bool stopping = running && m_stopRequested;
    // Training and the search take turns on the one worker thread.
    const bool training = m_controller && m_controller->isRunning();
    m_start->setEnabled(!running);
    m_limit->setEnabled(!running);
    m_startStop->setText(stopping ? tr("Stopping...") : running ? tr("Stop") : tr("Start"));
    m_startStop->setEnabled(!stopping && (running || !training));
    m_startStop->setToolTip(!running && training
                                ? tr("A training job is running: the search can start once it ends")
                                : QString());
    if (!running && training)
        m_status->setText(tr(
            "A training job is running: the search can start once it has ended or been stopped."));
    else if (!running && !m_progress.isEmpty())
        m_status->setText(m_progress);
    else if (!running)
        m_status->setText(tr("Each batch is a short training run (%1 warm-up + %2 timed steps); "
                             "running out of device memory means it does not fit.")
                              .arg(m_warmup)
                              .arg(m_timed));
}
