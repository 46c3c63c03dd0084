// The group choice of the report export: a list of reportable groups and OK/Cancel.
#include "files/reportgroupdialog.h"

#include "files/reportexport.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

ReportGroupDialog::ReportGroupDialog(const RunStore &store, int preferred, QWidget *parent)
    : QDialog(parent), m_groups(reportableGroups(store))
{
    setWindowTitle(tr("Export report"));
    auto *layout = new QVBoxLayout(this);
    auto *label = new QLabel(tr("The report covers one compare group. Which one?"), this);
    layout->addWidget(label);
    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("reportGroups"));
    for (int g : m_groups) {
        auto *item = new QListWidgetItem(groupDescription(store, g), m_list);
        item->setData(Qt::UserRole, g);
        item->setToolTip(reportTitle(store, g));
    }
    // Wide enough for a line per group without scrolling sideways.
    m_list->setMinimumWidth(std::min(900, m_list->sizeHintForColumn(0) + 40));
    layout->addWidget(m_list, 1);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export..."));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_list, &QListWidget::itemDoubleClicked, this, &QDialog::accept);
    connect(m_list, &QListWidget::currentRowChanged, this,
            [buttons](int row) { buttons->button(QDialogButtonBox::Ok)->setEnabled(row >= 0); });
    const bool preferredListed =
        std::find(m_groups.begin(), m_groups.end(), preferred) != m_groups.end();
    setGroup(preferredListed ? preferred : m_groups.empty() ? 0 : m_groups.front());
}

int ReportGroupDialog::group() const
{
    const QListWidgetItem *item = m_list->currentItem();
    return item ? item->data(Qt::UserRole).toInt() : 0;
}

void ReportGroupDialog::setGroup(int group)
{
    const auto at = std::find(m_groups.begin(), m_groups.end(), group);
    m_list->setCurrentRow(at == m_groups.end() ? -1 : int(at - m_groups.begin()));
}
