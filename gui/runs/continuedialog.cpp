// ContinueDialog: the checkpoint's facts and the epoch to train to.
#include "runs/continuedialog.h"

#include "common/enginetext.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace {
constexpr int k_maxEpochs = 1000000; // as mixlab-cli train --epochs

ContinueDialog::Answerer &answerer()
{
    static ContinueDialog::Answerer a;
    return a;
}
} // namespace

void ContinueDialog::setAnswererForTesting(Answerer a) { answerer() = std::move(a); }

int ContinueDialog::ask()
{
    if (answerer()) return answerer()(*this);
    return exec() == QDialog::Accepted ? totalEpochs() : 0;
}

std::int64_t ContinueDialog::epochsDone(const mixlab::CheckpointHeader &h)
{
    return h.steps_per_epoch > 0 ? h.step / h.steps_per_epoch : 0;
}

int ContinueDialog::minimumTotal(const mixlab::CheckpointHeader &h)
{
    return int(std::min<std::int64_t>(epochsDone(h) + 1, k_maxEpochs));
}

int ContinueDialog::suggestedTotal(const mixlab::CheckpointHeader &h)
{
    const int planned = std::max(h.config.epochs, 1);
    const int total = planned > epochsDone(h) ? planned : int(epochsDone(h)) + planned;
    return std::clamp(total, minimumTotal(h), k_maxEpochs);
}

ContinueDialog::ContinueDialog(const QString &path, const mixlab::CheckpointHeader &header,
                               QWidget *parent)
    : QDialog(parent), m_header(header)
{
    setObjectName(QStringLiteral("continueDialog"));
    setWindowTitle(tr("Continue training"));
    auto *layout = new QVBoxLayout(this);
    auto *file = new QLabel(tr("Continue the run saved in <b>%1</b>, with its model and "
                               "settings, from where it stood.")
                                .arg(QFileInfo(path).fileName().toHtmlEscaped()),
                            this);
    file->setWordWrap(true);
    file->setToolTip(path);
    layout->addWidget(file);

    auto *form = new QFormLayout;
    const mixlab::RunConfig &c = header.config;
    form->addRow(tr("Folder:"), new QLabel(QFileInfo(path).absolutePath(), this));
    form->addRow(tr("Model:"), new QLabel(QString::fromStdString(header.model.name), this));
    form->addRow(tr("Precision, batch:"),
                 new QLabel(tr("%1, batch %2").arg(policyText(c.policy)).arg(c.batch_size), this));
    form->addRow(tr("Stood at:"), new QLabel(tr("step %1, after epoch %2 (%3 steps per epoch)")
                                                 .arg(header.step)
                                                 .arg(epochsDone(header))
                                                 .arg(header.steps_per_epoch),
                                             this));
    m_epochs = new QSpinBox(this);
    m_epochs->setObjectName(QStringLiteral("continueEpochs"));
    m_epochs->setRange(minimumTotal(header), k_maxEpochs);
    m_epochs->setValue(suggestedTotal(header));
    m_epochs->setToolTip(tr("The run's new total: it trains on from epoch %1 to this one")
                             .arg(epochsDone(header) + 1));
    form->addRow(tr("Train to epoch:"), m_epochs);
    m_more = new QLabel(this);
    form->addRow(QString(), m_more);
    layout->addLayout(form);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Continue"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_epochs, &QSpinBox::valueChanged, this, &ContinueDialog::updateMore);
    updateMore();
}

int ContinueDialog::totalEpochs() const { return m_epochs->value(); }

void ContinueDialog::setTotalEpochs(int epochs) { m_epochs->setValue(epochs); }

void ContinueDialog::updateMore()
{
    const std::int64_t steps = std::int64_t(m_epochs->value()) * m_header.steps_per_epoch;
    m_more->setText(tr("%1 more steps").arg(std::max<std::int64_t>(steps - m_header.step, 0)));
}
