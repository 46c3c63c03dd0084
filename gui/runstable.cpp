// RunsTable: view setup, the progress-bar delegate and the context menu.
#include "runstable.h"

#include "runstablemodel.h"
#include "runstore.h"

#include <QApplication>
#include <QFontMetrics>
#include <QHeaderView>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>
#include <QStyleOptionProgressBar>
#include <QStyledItemDelegate>

#include <algorithm>
#include <cmath>

namespace {

// Draws the Progress column as a progress bar with "done / total" on it.
class ProgressDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        const QString text = index.data(Qt::DisplayRole).toString();
        if (text.isEmpty()) {
            QStyledItemDelegate::paint(painter, option, index);
            return;
        }
        QStyleOptionViewItem cell = option;
        initStyleOption(&cell, index);
        cell.text.clear();
        const QWidget *widget = option.widget;
        QStyle *style = widget ? widget->style() : QApplication::style();
        style->drawControl(QStyle::CE_ItemViewItem, &cell, painter, widget); // selection background

        QStyleOptionProgressBar bar;
        bar.rect = option.rect.adjusted(2, 2, -2, -2);
        bar.minimum = 0;
        bar.maximum = 1000;
        bar.progress = int(std::lround(index.data(RunsTableModel::k_fractionRole).toDouble() * 1000.0));
        bar.text = text;
        bar.textVisible = true;
        bar.textAlignment = Qt::AlignCenter;
        bar.state = option.state | QStyle::State_Horizontal;
        style->drawControl(QStyle::CE_ProgressBar, &bar, painter, widget);
    }
};

} // namespace

RunsTable::RunsTable(RunStore *store, QWidget *parent)
    : QTableView(parent), m_store(store), m_model(new RunsTableModel(store, this))
{
    setModel(m_model);
    setItemDelegateForColumn(RunsTableModel::Progress, new ProgressDelegate(this));
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    setContextMenuPolicy(Qt::CustomContextMenu);
    setAlternatingRowColors(true);
    setWordWrap(false);
    verticalHeader()->hide();
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    QHeaderView *header = horizontalHeader();
    header->setStretchLastSection(false);
    header->setSectionResizeMode(QHeaderView::Interactive);
    // Wide enough for the header and a typical value, no wider: the table shares the
    // bottom row with the log.
    const std::pair<int, const char *> samples[] = {
        {RunsTableModel::Name, "mixed_fp16 b256 #10"}, {RunsTableModel::Status, "Finished"},
        {RunsTableModel::Progress, "1000 / 1000"},      {RunsTableModel::Eta, "59m 59s"},
        {RunsTableModel::Policy, "mixed_fp16"},         {RunsTableModel::Batch, "1024"},
        {RunsTableModel::StepMs, "1234.56"},            {RunsTableModel::Speedup, "1.00\u00d7"},
        {RunsTableModel::TestAccuracy, "100.00 %"},     {RunsTableModel::Skipped, "10000"}};
    const QFontMetrics values(font());
    const QFontMetrics headers(header->font());
    for (const auto &[column, sample] : samples) {
        const QString title = m_model->headerData(column, Qt::Horizontal).toString();
        int width = std::max(values.horizontalAdvance(QString::fromUtf8(sample)), headers.horizontalAdvance(title)) + 14;
        if (column == RunsTableModel::Name)
            width += style()->pixelMetric(QStyle::PM_SmallIconSize) + style()->pixelMetric(QStyle::PM_IndicatorWidth) + 12; // swatch, checkbox
        setColumnWidth(column, width);
    }
    connect(this, &QWidget::customContextMenuRequested, this, &RunsTable::showContextMenu);
}

std::vector<int> RunsTable::selectedRunIds() const
{
    std::vector<int> ids;
    if (!selectionModel())
        return ids;
    QModelIndexList rows = selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(), [](const QModelIndex &a, const QModelIndex &b) { return a.row() < b.row(); });
    for (const QModelIndex &row : rows)
        if (const int id = m_model->runIdAt(row.row()))
            ids.push_back(id);
    return ids;
}

void RunsTable::renameRun(int id)
{
    const int row = m_model->rowOf(id);
    if (row < 0)
        return;
    const QModelIndex cell = m_model->index(row, RunsTableModel::Name);
    setCurrentIndex(cell);
    edit(cell);
}

void RunsTable::setRunsVisible(const std::vector<int> &ids, bool visible)
{
    for (int id : ids)
        m_store->setVisible(id, visible);
}

void RunsTable::deleteRuns(const std::vector<int> &ids)
{
    for (int id : ids) {
        const RunRecord *run = m_store->run(id);
        if (run && run->status != RunRecord::Status::Running && run->status != RunRecord::Status::Queued)
            m_store->removeRun(id);
    }
}

void RunsTable::keyPressEvent(QKeyEvent *event)
{
    if (event->matches(QKeySequence::Delete) && state() != QAbstractItemView::EditingState) {
        deleteRuns(selectedRunIds());
        return;
    }
    QTableView::keyPressEvent(event);
}

void RunsTable::showContextMenu(const QPoint &pos)
{
    const QModelIndex at = indexAt(pos);
    if (at.isValid() && !selectionModel()->isRowSelected(at.row(), {}))
        selectRow(at.row());
    const std::vector<int> ids = selectedRunIds();
    if (ids.empty())
        return;

    bool anyHidden = false, anyActive = false;
    for (int id : ids)
        if (const RunRecord *run = m_store->run(id)) {
            anyHidden = anyHidden || !run->visible;
            anyActive = anyActive || run->status == RunRecord::Status::Running ||
                        run->status == RunRecord::Status::Queued;
        }

    QMenu menu(this);
    QAction *rename = menu.addAction(tr("Rename"));
    rename->setEnabled(ids.size() == 1);
    QAction *toggle = menu.addAction(anyHidden ? tr("Show in charts") : tr("Hide from charts"));
    menu.addSeparator();
    QAction *remove = menu.addAction(ids.size() == 1 ? tr("Delete run") : tr("Delete %1 runs").arg(ids.size()));
    remove->setEnabled(!anyActive);
    if (anyActive)
        remove->setToolTip(tr("Stop the run before deleting it"));

    QAction *chosen = menu.exec(viewport()->mapToGlobal(pos));
    if (chosen == rename)
        renameRun(ids.front());
    else if (chosen == toggle)
        setRunsVisible(ids, anyHidden);
    else if (chosen == remove)
        deleteRuns(ids);
}
