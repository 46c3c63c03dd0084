// RunsTable: view setup, the progress-bar delegate and the context menu.
#include "runs/runstable.h"

#include "runs/runstablemodel.h"
#include "runs/checkpointfolders.h"
#include "runs/runstore.h"

#include "common/usermessages.h"

#include <QApplication>
#include <QFontMetrics>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLocale>
#include <QMenu>
#include <QPainter>
#include <QScrollBar>
#include <QStyledItemDelegate>

#include <algorithm>
#include <cmath>

namespace {

// Draws the Progress column as "done / total" above a slim bar along the cell's bottom:
// the text never lies on the fill, so it reads the same at any fill, selected or not, in
// any style (text drawn across a fill's edge splits a number between two colours).
class ProgressDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    static constexpr int k_barHeight = 4;

    void paint(QPainter *painter, const QStyleOptionViewItem &option,
               const QModelIndex &index) const override
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

        const bool selected = option.state & QStyle::State_Selected;
        const QRect area = option.rect.adjusted(4, 1, -4, -2);
        const QRect bar(area.left(), area.bottom() - k_barHeight + 1, area.width(), k_barHeight);
        const QRect textRect(area.left(), area.top(), area.width(), bar.top() - area.top() - 1);
        const double fraction =
            std::clamp(index.data(RunsTableModel::k_fractionRole).toDouble(), 0.0, 1.0);
        const QColor ink =
            option.palette.color(selected ? QPalette::HighlightedText : QPalette::Text);

        painter->save();
        painter->setPen(Qt::NoPen);
        painter->setBrush(option.palette.color(QPalette::Mid));
        painter->drawRect(bar);
        // On a selected row the highlight is the background: the fill takes the text's colour.
        painter->setBrush(selected ? ink : option.palette.color(QPalette::Highlight));
        painter->drawRect(
            QRect(bar.left(), bar.top(), int(std::lround(bar.width() * fraction)), bar.height()));
        painter->setFont(option.font);
        painter->setPen(ink);
        painter->drawText(textRect, Qt::AlignCenter,
                          option.fontMetrics.elidedText(text, Qt::ElideRight, textRect.width()));
        painter->restore();
    }
};

// Columns the view hides until the user asks for them in the header's menu: the default
// run name already says them ("mixed_fp16 b256 #2"), and every other column must fit the
// bottom row beside the log at 1280 px.
constexpr RunsTableModel::Column k_hiddenByDefault[] = {RunsTableModel::Policy,
                                                        RunsTableModel::Batch};

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
    header->setSectionResizeMode(QHeaderView::Interactive);
    // Wide enough for the header and a typical value, no wider: the table shares the
    // bottom row with the log. The run's name takes what is left (elided when short of
    // room), so the numbers on the right are never scrolled out of sight.
    const std::pair<int, const char *> samples[] = {{RunsTableModel::Status, "Finished"},
                                                    {RunsTableModel::Progress, "1000 / 1000"},
                                                    {RunsTableModel::Eta, "59m 59s"},
                                                    {RunsTableModel::Policy, "mixed_fp16"},
                                                    {RunsTableModel::Batch, "1024"},
                                                    {RunsTableModel::StepMs, "1234.56"},
                                                    {RunsTableModel::Speedup, "1.00\u00d7"},
                                                    {RunsTableModel::TestAccuracy, "100.00 %"},
                                                    {RunsTableModel::ValidPerplexity, "1234.5"},
                                                    {RunsTableModel::TestPerplexity, "1234.5"},
                                                    {RunsTableModel::FinalLr, "0.3125"},
                                                    {RunsTableModel::Skipped, "10000"}};
    const QFontMetrics values(font());
    const QFontMetrics headers(header->font());
    for (const auto &[column, sample] : samples) {
        const QString title = m_model->headerData(column, Qt::Horizontal).toString();
        setColumnWidth(column, std::max(values.horizontalAdvance(QString::fromUtf8(sample)),
                                        headers.horizontalAdvance(title)) +
                                   14);
    }
    m_nameMinimum = values.horizontalAdvance(QStringLiteral("fp32 b256 #1")) +
                    style()->pixelMetric(QStyle::PM_SmallIconSize) +
                    style()->pixelMetric(QStyle::PM_IndicatorWidth) + 20; // swatch, checkbox
    header->setMinimumSectionSize(std::min(header->minimumSectionSize(), 30));
    header->setSectionResizeMode(RunsTableModel::Name, QHeaderView::Stretch);
    header->resizeSection(RunsTableModel::Name, m_nameMinimum);
    for (RunsTableModel::Column c : k_hiddenByDefault) setColumnHidden(c, true);
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(header, &QWidget::customContextMenuRequested, this, &RunsTable::showColumnMenu);
    connect(header, &QHeaderView::sectionResized, this, [this](int column) {
        if (column != RunsTableModel::Name) keepNameReadable(); // a column widened by hand
    });
    // ETA means something only while a run trains.
    const auto updateEta = [this] {
        const bool hide = !anyRunning();
        if (hide == isColumnHidden(RunsTableModel::Eta)) return;
        setColumnHidden(RunsTableModel::Eta, hide);
        updateGeometry();
        keepNameReadable();
    };
    connect(m_store, &RunStore::runChanged, this, updateEta);
    connect(m_store, &RunStore::runAdded, this, updateEta);
    connect(m_store, &RunStore::runRemoved, this, updateEta);
    updateEta();
    connect(m_store, &RunStore::runAdded, this, &RunsTable::updateKindColumns);
    connect(m_store, &RunStore::runRemoved, this, &RunsTable::updateKindColumns);
    updateKindColumns();
    connect(this, &QWidget::customContextMenuRequested, this, &RunsTable::showContextMenu);
}

void RunsTable::setDesignedLanguageModel(bool languageModel)
{
    m_designedLanguageModel = languageModel;
    updateKindColumns();
}

void RunsTable::updateKindColumns()
{
    bool classifier = false, lm = false;
    for (int id : m_store->runIds())
        if (const RunRecord *run = m_store->run(id)) (run->languageModel ? lm : classifier) = true;
    if (!classifier && !lm) (m_designedLanguageModel ? lm : classifier) = true;
    const int kinds = (classifier ? 1 : 0) | (lm ? 2 : 0);
    if (kinds == m_shownKinds) return;
    m_shownKinds = kinds;
    setColumnHidden(RunsTableModel::TestAccuracy, !(kinds & 1));
    for (int c :
         {RunsTableModel::ValidPerplexity, RunsTableModel::TestPerplexity, RunsTableModel::FinalLr})
        setColumnHidden(c, !(kinds & 2));
    updateGeometry();
    keepNameReadable();
}

void RunsTable::resizeEvent(QResizeEvent *event)
{
    QTableView::resizeEvent(event);
    keepNameReadable();
}

void RunsTable::keepNameReadable()
{
    int others = 0;
    for (int c = 0; c < RunsTableModel::ColumnCount; ++c)
        if (c != RunsTableModel::Name && !isColumnHidden(c)) others += columnWidth(c);
    const bool roomy = viewport()->width() - others >= m_nameMinimum;
    QHeaderView *header = horizontalHeader();
    const auto mode = roomy ? QHeaderView::Stretch : QHeaderView::Interactive;
    if (header->sectionResizeMode(RunsTableModel::Name) == mode) return;
    header->setSectionResizeMode(RunsTableModel::Name, mode);
    if (!roomy) header->resizeSection(RunsTableModel::Name, m_nameMinimum);
}

QSize RunsTable::sizeHint() const
{
    int width = m_nameMinimum + 2 * frameWidth() + verticalScrollBar()->sizeHint().width();
    for (int c = 0; c < RunsTableModel::ColumnCount; ++c)
        if (c != RunsTableModel::Name && !isColumnHidden(c)) width += columnWidth(c);
    return QSize(width, QTableView::sizeHint().height());
}

bool RunsTable::anyRunning() const
{
    for (int id : m_store->runIds())
        if (const RunRecord *run = m_store->run(id);
            run && run->status == RunRecord::Status::Running)
            return true;
    return false;
}

void RunsTable::showColumnMenu(const QPoint &pos)
{
    QMenu menu(this);
    for (int c = RunsTableModel::Status; c < RunsTableModel::ColumnCount; ++c) {
        if (c == RunsTableModel::Eta) continue; // shown while a run trains
        QAction *a = menu.addAction(m_model->headerData(c, Qt::Horizontal).toString());
        a->setCheckable(true);
        a->setChecked(!isColumnHidden(c));
        connect(a, &QAction::toggled, this, [this, c](bool on) {
            setColumnHidden(c, !on);
            updateGeometry();
        });
    }
    menu.exec(horizontalHeader()->viewport()->mapToGlobal(pos));
}

std::vector<int> RunsTable::selectedRunIds() const
{
    std::vector<int> ids;
    if (!selectionModel()) return ids;
    QModelIndexList rows = selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(),
              [](const QModelIndex &a, const QModelIndex &b) { return a.row() < b.row(); });
    for (const QModelIndex &row : rows)
        if (const int id = m_model->runIdAt(row.row())) ids.push_back(id);
    return ids;
}

void RunsTable::renameRun(int id)
{
    const int row = m_model->rowOf(id);
    if (row < 0) return;
    const QModelIndex cell = m_model->index(row, RunsTableModel::Name);
    setCurrentIndex(cell);
    edit(cell);
}

void RunsTable::setRunsVisible(const std::vector<int> &ids, bool visible)
{
    for (int id : ids) m_store->setVisible(id, visible);
}

// A run's checkpoints go with it (Continue training is what they are for, and they
// outlive the session in the app's data folder, where no one would find them to clean
// up): the question says how many and how large first. Runs without any go unasked, as
// before checkpoints existed.
void RunsTable::deleteRuns(const std::vector<int> &ids)
{
    std::vector<int> gone;
    QStringList folders;
    checkpointfolders::Held held;
    for (int id : ids) {
        const RunRecord *run = m_store->run(id);
        if (!run || run->status == RunRecord::Status::Running ||
            run->status == RunRecord::Status::Queued)
            continue;
        gone.push_back(id);
        const checkpointfolders::Held h = checkpointfolders::held(run->checkpointFolder);
        if (h.count == 0) continue;
        folders << run->checkpointFolder;
        held.count += h.count;
        held.bytes += h.bytes;
    }
    if (gone.empty()) return;
    const QString title = gone.size() == 1 ? tr("Delete run") : tr("Delete runs");
    if (held.count > 0) {
        const QString what = gone.size() == 1 ? tr("Delete %1?").arg(m_store->run(gone[0])->name)
                                              : tr("Delete %1 runs?").arg(gone.size());
        const QString count =
            held.count == 1 ? tr("1 checkpoint") : tr("%1 checkpoints").arg(held.count);
        const QString deleted =
            gone.size() == 1
                ? tr("Its checkpoints are deleted too: %1 (%2) in %3. Without them it cannot "
                     "be continued.")
                : tr("Their checkpoints are deleted too: %1 (%2) in %3. Without them they "
                     "cannot be continued.");
        const QString text = what + QStringLiteral("\n\n") +
                             deleted.arg(count, QLocale().formattedDataSize(held.bytes, 0),
                                         folders.join(QStringLiteral(", ")));
        if (askUser(this, title, text, {tr("Delete"), tr("Cancel")}) != 0) return;
    }
    for (int id : gone) m_store->removeRun(id);
    QStringList problems;
    for (const QString &folder : folders)
        if (const QString p = checkpointfolders::deleteCheckpoints(folder); !p.isEmpty())
            problems << p;
    if (!problems.isEmpty())
        showUserError(this, title,
                      (gone.size() == 1 ? tr("The run is deleted, but some of its checkpoints "
                                             "could not be:\n\n%1")
                                        : tr("The runs are deleted, but some of their "
                                             "checkpoints could not be:\n\n%1"))
                          .arg(problems.join(QLatin1Char('\n'))));
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
    if (at.isValid() && !selectionModel()->isRowSelected(at.row(), {})) selectRow(at.row());
    const std::vector<int> ids = selectedRunIds();
    if (ids.empty()) return;

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
    // A run's checkpoints (Run > Checkpoints at epoch ends): one run at a time.
    const RunRecord *one = ids.size() == 1 ? m_store->run(ids.front()) : nullptr;
    const QString folder = one && !anyActive ? one->checkpointFolder : QString();
    QAction *resume = menu.addAction(tr("Continue training..."));
    resume->setObjectName(QStringLiteral("continueRunAction"));
    resume->setEnabled(!folder.isEmpty() && !checkpointfolders::newest(folder).isEmpty());
    QAction *showFolder = menu.addAction(tr("Show checkpoints"));
    showFolder->setObjectName(QStringLiteral("showCheckpointsAction"));
    showFolder->setEnabled(!folder.isEmpty());
    menu.addSeparator();
    QAction *remove =
        menu.addAction(ids.size() == 1 ? tr("Delete run") : tr("Delete %1 runs").arg(ids.size()));
    remove->setEnabled(!anyActive);
    if (anyActive) remove->setToolTip(tr("Stop the run before deleting it"));

    QAction *chosen = menu.exec(viewport()->mapToGlobal(pos));
    if (chosen == rename)
        renameRun(ids.front());
    else if (chosen == toggle)
        setRunsVisible(ids, anyHidden);
    else if (chosen == resume)
        emit continueTrainingRequested(ids.front());
    else if (chosen == showFolder)
        emit showCheckpointsRequested(ids.front());
    else if (chosen == remove)
        deleteRuns(ids);
}
