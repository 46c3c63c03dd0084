// AboutDialog: a table of versions built from mixlab::describe_environment, the device's
// capability facts, and its ceilings from the cache, re-measured on a worker thread.
#include "app/aboutdialog.h"

#include "common/enginetext.h"

#include "mixlab/capabilities.h"
#include "mixlab/environment.h"
#include "mixlab/run_config.h"

#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

// What the probe thread hands back; shared so that it outlives a dialog closed mid-probe.
struct AboutDialog::ProbeResult {
    mixlab::Ceilings ceilings;
    QString error; // empty on success
};

namespace {

QString tableRow(const QString &label, const QString &value)
{
    return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
        .arg(label.toHtmlEscaped(), value.toHtmlEscaped());
}

QString tflopsText(double v)
{
    if (v <= 0) return QObject::tr("not supported on this device");
    // The CPU backend reaches GFLOP/s: TFLOP/s would read 0.0.
    return v >= 1 ? QStringLiteral("%1 TFLOP/s").arg(v, 0, 'f', 1)
                  : QStringLiteral("%1 GFLOP/s").arg(v * 1e3, 0, 'f', 1);
}

// "2026-11-29 23:59 UTC" from the cache's ISO 8601 stamp.
QString whenText(const std::string &iso)
{
    const QDateTime t = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODate);
    return t.isValid() ? t.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'"))
                       : QString::fromStdString(iso);
}

} // namespace

AboutDialog::AboutDialog(const mixlab::DeviceInfo &device, QWidget *parent)
    : QDialog(parent), m_device(device),
      m_cachePath(QString::fromStdString(mixlab::default_ceilings_cache_path()))
{
    setWindowTitle(tr("About MixLab"));
    const mixlab::Environment env = mixlab::describe_environment(device);
    const bool cuda = env.backend == mixlab::BackendKind::Cuda;
    const QString na = tr("not available");
    auto deviceFact = [&](const std::string &value) {
        return cuda && !value.empty() ? QString::fromStdString(value) : na;
    };
    QString gpu = na;
    if (cuda)
        gpu = tr("%1, compute capability %2, %3 GiB")
                  .arg(QString::fromStdString(env.device_name),
                       QString::fromStdString(env.compute_capability))
                  .arg(double(env.device_memory_bytes) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1);

    const std::vector<std::pair<QString, QString>> rows = {
        {tr("MixLab"),
         QString::fromStdString(env.mixlab_version) +
             (env.built_with_cuda ? tr(" (with the CUDA backend)") : tr(" (CPU backend only)"))},
        {tr("Qt"), tr("%1 (built with %2)")
                       .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR))},
        {tr("GPU"), gpu},
        {tr("CUDA runtime"), deviceFact(env.runtime_version)},
        {tr("CUDA driver"), deviceFact(env.driver_version)},
        {tr("cuBLAS"), deviceFact(env.cublas_version)},
        {tr("cuDNN"), deviceFact(env.cudnn_version)},
        {tr("Backend"), fromView(mixlab::backend_kind_name(env.backend))},
        {tr("CPU"),
         tr("%1, %2 threads").arg(QString::fromStdString(env.cpu_model)).arg(env.cpu_threads)},
        {tr("System"),
         QString::fromStdString(env.os_release.empty() ? env.os : env.os_release + ", " + env.os)},
        {tr("Compiler"), QString::fromStdString(env.compiler)},
    };

    QString html =
        QStringLiteral("<h2>MixLab</h2><p>%1</p><table cellspacing=\"4\">")
            .arg(tr(
                "Mixed-precision training experiments: fp32, TF32, fp16 and bf16 side by side."));
    for (const auto &[label, value] : rows) {
        html += tableRow(label, value);
        m_text += label + QStringLiteral(": ") + value + QLatin1Char('\n');
    }
    html += QStringLiteral("</table>");

    auto *label = new QLabel(html, this);
    label->setObjectName("versionsLabel");
    label->setTextFormat(Qt::RichText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // Capability facts: what the tensor cores take decides which policies can pay off.
    QString capsHtml = QStringLiteral("<table cellspacing=\"4\">");
    for (const mixlab::CapabilityFact &f : mixlab::capability_facts(device)) {
        const QString name = QString::fromStdString(f.label),
                      value = QString::fromStdString(f.value);
        QString shown = value.toHtmlEscaped();
        if (!f.note.empty())
            shown += QStringLiteral("<br><small>%1</small>")
                         .arg(QString::fromStdString(f.note).toHtmlEscaped());
        capsHtml += QStringLiteral("<tr><td valign=\"top\"><b>%1</b></td><td>%2</td></tr>")
                        .arg(name.toHtmlEscaped(), shown);
        m_capabilitiesText += name + QStringLiteral(": ") + value + QLatin1Char('\n');
    }
    capsHtml += QStringLiteral("</table>");
    auto *capsBox = new QGroupBox(tr("Device capabilities"), this);
    auto *capsLabel = new QLabel(capsHtml, capsBox);
    capsLabel->setObjectName("capabilitiesLabel");
    capsLabel->setTextFormat(Qt::RichText);
    capsLabel->setWordWrap(true);
    capsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    (new QVBoxLayout(capsBox))->addWidget(capsLabel);

    auto *ceilingsBox = new QGroupBox(
        tr("Measured ceilings (the roofline the Why? panel compares layers with)"), this);
    m_ceilingsLabel = new QLabel(ceilingsBox);
    m_ceilingsLabel->setObjectName("ceilingsLabel");
    m_ceilingsLabel->setTextFormat(Qt::RichText);
    m_ceilingsLabel->setWordWrap(true);
    m_ceilingsLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_measureButton = new QPushButton(tr("Measure now"), ceilingsBox);
    m_measureButton->setObjectName("measureButton");
    m_measureButton->setToolTip(
        tr("Time large GEMMs in each precision and a large device copy (a few seconds).\n"
           "A run training at the same time slows both and lowers the numbers."));
    connect(m_measureButton, &QPushButton::clicked, this, &AboutDialog::measureNow);
    auto *ceilingsLayout = new QVBoxLayout(ceilingsBox);
    ceilingsLayout->addWidget(m_ceilingsLabel);
    auto *measureRow = new QHBoxLayout;
    measureRow->addWidget(m_measureButton);
    measureRow->addStretch(1);
    ceilingsLayout->addLayout(measureRow);

    if (const auto cached = mixlab::cached_ceilings(device, m_cachePath.toStdString()))
        showCeilings(&*cached, QString());
    else
        showCeilings(nullptr, QString());

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton *copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    copy->setToolTip(tr("Copy these versions, facts and ceilings for a bug report"));
    connect(copy, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(versionsText()); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    // The facts scroll when the screen is too short for them; the buttons stay in view.
    auto *content = new QWidget(this);
    auto *contentLayout = new QVBoxLayout(content);
    contentLayout->setContentsMargins(0, 0, 0, 0);
    contentLayout->addWidget(label);
    contentLayout->addWidget(capsBox);
    contentLayout->addWidget(ceilingsBox);
    contentLayout->addStretch(1);
    m_scroll = new QScrollArea(this);
    m_scroll->setObjectName("aboutScroll");
    m_scroll->setWidget(content);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_scroll, 1);
    layout->addWidget(buttons);
}

void AboutDialog::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    fitToContents();
}

void AboutDialog::fitToContents()
{
    // Word-wrapped rows are as tall as the width makes them, which a window's minimum size
    // does not follow: measure at the width the facts have, grow up to most of the screen.
    // The versions table does not wrap: its width, and a scroll bar's, is the least.
    QWidget *content = m_scroll->widget();
    const int bar = m_scroll->verticalScrollBar()->sizeHint().width();
    m_scroll->setMinimumWidth(content->minimumSizeHint().width() + bar);
    const int width = std::max(m_scroll->width(), m_scroll->minimumWidth()) - bar;
    const int contentHeight = content->hasHeightForWidth() ? content->heightForWidth(width)
                                                           : content->sizeHint().height();
    int wanted = height() - m_scroll->height() + contentHeight;
    if (const QScreen *s = screen())
        wanted = std::min(wanted, s->availableGeometry().height() * 9 / 10);
    if (wanted > height() || this->width() < minimumSizeHint().width())
        resize(std::max(this->width(), minimumSizeHint().width()), std::max(height(), wanted));
}

AboutDialog::~AboutDialog() = default;

void AboutDialog::showCeilings(const mixlab::Ceilings *c, const QString &problem)
{
    QString html;
    m_ceilingsText.clear();
    if (!c) {
        html = tr("Not measured on this device yet. <b>Measure now</b> times large GEMMs in each "
                  "precision and a "
                  "device copy (a few seconds); the result is kept in %1 until the driver or "
                  "cuBLAS changes.")
                   .arg(m_cachePath.toHtmlEscaped());
        m_ceilingsText = tr("Ceilings: not measured on this device yet") + QLatin1Char('\n');
    } else {
        const std::vector<std::pair<QString, QString>> rows = {
            {tr("fp32 GEMM (no TF32)"), tflopsText(c->fp32_tflops)},
            {tr("TF32 GEMM"), tflopsText(c->tf32_tflops)},
            {tr("fp16 GEMM"), tflopsText(c->fp16_tflops)},
            {tr("bf16 GEMM"), tflopsText(c->bf16_tflops)},
            {tr("fp8 GEMM (E4M3)"), tflopsText(c->fp8_tflops)},
            {tr("Device copy"),
             tr("%1 GB/s (read + write)").arg(c->copy_gbs, 0, 'f', c->copy_gbs >= 10 ? 0 : 2)},
            // The cube sign is passed as an argument: QString::arg reads "%2\u00b3" as %23.
            {tr("Measured"), tr("%1, GEMM %2, copy %3 MiB, median of %4 (%5 s)")
                                 .arg(whenText(c->measured_at))
                                 .arg(QString::number(c->gemm_size) + QChar(0x00b3))
                                 .arg(double(c->copy_bytes) / (1024.0 * 1024.0), 0, 'f', 0)
                                 .arg(c->repetitions)
                                 .arg(c->probe_seconds, 0, 'f', 1)},
        };
        html = QStringLiteral("<table cellspacing=\"4\">");
        for (const auto &[label, value] : rows) {
            html += tableRow(label, value);
            m_ceilingsText += label + QStringLiteral(": ") + value + QLatin1Char('\n');
        }
        html += QStringLiteral("</table>");
        html += QStringLiteral("<small>%1</small>")
                    .arg((c->from_cache ? tr("From the cache %1.")
                                        : tr("Measured just now; kept in %1."))
                             .arg(m_cachePath)
                             .toHtmlEscaped());
        if (!c->cache_error.empty())
            html += QStringLiteral("<br><small>%1</small>")
                        .arg(QString::fromStdString(c->cache_error).toHtmlEscaped());
    }
    if (!problem.isEmpty()) {
        html += QStringLiteral("<p><b>%1</b> %2</p>")
                    .arg(tr("The measurement failed:"), problem.toHtmlEscaped());
        m_ceilingsText += tr("Measurement failed: ") + problem + QLatin1Char('\n');
    }
    m_ceilingsLabel->setText(html);
    // A table of ceilings replaces a one-line note: make room for its rows. The widgets
    // around the label keep their old heights until the next layout pass; drop them now.
    if (isVisible()) {
        for (QWidget *w = m_ceilingsLabel->parentWidget(); w && w != m_scroll->widget();
             w = w->parentWidget())
            w->updateGeometry();
        fitToContents();
    }
}

void AboutDialog::measureNow()
{
    if (m_probe) return;
    auto result = std::make_shared<ProbeResult>();
    m_result = result;
    const mixlab::DeviceChoice choice = m_device.backend == mixlab::BackendKind::Cuda
                                            ? mixlab::DeviceChoice::CUDA
                                            : mixlab::DeviceChoice::CPU;
    const std::string cache = m_cachePath.toStdString();
    // The probe owns its own backend (a CUDA context and stream of its own), so nothing of
    // a training run is touched; only the result value comes back.
    m_probe = QThread::create([result, choice, cache] {
        try {
            auto backend = mixlab::make_backend(choice);
            mixlab::CeilingsRequest request;
            request.refresh = true;
            result->ceilings = mixlab::ceilings_for(*backend, cache, request);
        } catch (const std::exception &e) {
            result->error = QString::fromUtf8(e.what());
        }
    });
    // Deliberately parentless: the thread deletes itself when done, so closing the dialog
    // mid-probe neither blocks the GUI nor destroys a running QThread.
    connect(m_probe, &QThread::finished, this, &AboutDialog::onProbeFinished);
    connect(m_probe, &QThread::finished, m_probe, &QObject::deleteLater);
    m_measureButton->setEnabled(false);
    m_measureButton->setText(tr("Measuring\u2026"));
    m_probe->start();
}

void AboutDialog::onProbeFinished()
{
    m_probe = nullptr;
    m_measureButton->setEnabled(true);
    m_measureButton->setText(tr("Measure now"));
    if (m_result->error.isEmpty()) {
        showCeilings(&m_result->ceilings, QString());
    } else {
        const auto cached = mixlab::cached_ceilings(m_device, m_cachePath.toStdString());
        showCeilings(cached ? &*cached : nullptr, m_result->error);
    }
    m_result.reset();
    emit ceilingsMeasured();
}
