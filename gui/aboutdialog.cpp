// AboutDialog: a table of versions built from mixlab::describe_environment.
#include "aboutdialog.h"

#include "mixlab/environment.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <utility>
#include <vector>

AboutDialog::AboutDialog(const mixlab::DeviceInfo &device, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("About MixLab"));
    const mixlab::Environment env = mixlab::describe_environment(device);
    const bool cuda = env.backend == "cuda";
    const QString na = tr("not available");
    auto deviceFact = [&](const std::string &value) {
        return cuda && !value.empty() ? QString::fromStdString(value) : na;
    };
    QString gpu = na;
    if (cuda)
        gpu = tr("%1, compute capability %2, %3 GiB")
                  .arg(QString::fromStdString(env.device_name), QString::fromStdString(env.compute_capability))
                  .arg(double(env.device_memory_bytes) / (1024.0 * 1024.0 * 1024.0), 0, 'f', 1);

    const std::vector<std::pair<QString, QString>> rows = {
        {tr("MixLab"), QString::fromStdString(env.mixlab_version) +
                           (env.built_with_cuda ? tr(" (with the CUDA backend)") : tr(" (CPU backend only)"))},
        {tr("Qt"), tr("%1 (built with %2)").arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR))},
        {tr("GPU"), gpu},
        {tr("CUDA runtime"), deviceFact(env.runtime_version)},
        {tr("CUDA driver"), deviceFact(env.driver_version)},
        {tr("cuBLAS"), deviceFact(env.cublas_version)},
        {tr("cuDNN"), deviceFact(env.cudnn_version)},
        {tr("Backend"), QString::fromStdString(env.backend)},
        {tr("CPU"), tr("%1, %2 threads").arg(QString::fromStdString(env.cpu_model)).arg(env.cpu_threads)},
        {tr("System"), QString::fromStdString(env.os_release.empty() ? env.os : env.os_release + ", " + env.os)},
        {tr("Compiler"), QString::fromStdString(env.compiler)},
    };

    QString html = QStringLiteral("<h2>MixLab</h2><p>%1</p><table cellspacing=\"4\">")
                       .arg(tr("Mixed-precision training experiments: fp32, TF32, fp16 and bf16 side by side."));
    for (const auto &[label, value] : rows) {
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(label.toHtmlEscaped(), value.toHtmlEscaped());
        m_text += label + QStringLiteral(": ") + value + QLatin1Char('\n');
    }
    html += QStringLiteral("</table>");

    auto *label = new QLabel(html, this);
    label->setObjectName("versionsLabel");
    label->setTextFormat(Qt::RichText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton *copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    copy->setToolTip(tr("Copy these versions for a bug report"));
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(m_text); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(label);
    layout->addWidget(buttons);
}
