// RunsTableModel: RunStore rows for the runs table; cells are computed from the store on
// demand, and store signals turn into row-level dataChanged.
#include "runs/runstablemodel.h"

#include "common/durationtext.h"
#include "common/enginetext.h"
#include "common/languagemodel.h"
#include "runs/runstore.h"

#include "mixlab/policy.h"
#include "mixlab/step_time.h"

#include <QColor>
#include <QFont>

#include <algorithm>
#include <cmath>
#include <optional>

namespace {

std::optional<float> finalTestAccuracy(const RunRecord &run)
{
    if (run.summary) return run.summary->final_test_accuracy;
    if (!run.epochs.empty()) return run.epochs.back().test_accuracy;
    return std::nullopt;
}

// A language model's last evaluation: the summary's, else the last epoch's.
std::optional<float> finalValidLoss(const RunRecord &run)
{
    if (run.summary) return run.summary->final_valid_loss;
    if (!run.epochs.empty()) return run.epochs.back().valid_loss;
    return std::nullopt;
}

std::optional<float> finalTestLoss(const RunRecord &run)
{
    if (run.summary) return run.summary->final_test_loss;
    if (!run.epochs.empty()) return run.epochs.back().test_loss;
    return std::nullopt;
}

std::optional<float> finalLr(const RunRecord &run)
{
    if (run.summary && run.summary->final_lr > 0) return run.summary->final_lr;
    if (!run.epochs.empty() && run.epochs.back().lr > 0) return run.epochs.back().lr;
    return std::nullopt;
}

bool ended(const RunRecord &run)
{
    return run.status == RunRecord::Status::Finished || run.status == RunRecord::Status::Stopped ||
           run.status == RunRecord::Status::Failed;
}

// Shown for a value an ended run does not have (it never evaluated, or never timed a step).
const QString k_noValue = QStringLiteral("\u2014");

} // namespace

RunsTableModel::RunsTableModel(RunStore *store, QObject *parent)
    : QAbstractTableModel(parent), m_store(store)
{
    m_ids = m_store->runIds();
    connect(m_store, &RunStore::runAdded, this, &RunsTableModel::onRunAdded);
    connect(m_store, &RunStore::runRemoved, this, &RunsTableModel::onRunRemoved);
    connect(m_store, &RunStore::runChanged, this, &RunsTableModel::onRunChanged);
    connect(m_store, &RunStore::stepsAppended, this, [this](int id, int) { onStepsAppended(id); });
    connect(m_store, &RunStore::epochsAppended, this, [this](int id, int) { onStepsAppended(id); });
}

int RunsTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_ids.size());
}

int RunsTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

int RunsTableModel::runIdAt(int row) const
{
    return row >= 0 && row < int(m_ids.size()) ? m_ids[size_t(row)] : 0;
}

int RunsTableModel::rowOf(int runId) const
{
    auto it = std::find(m_ids.begin(), m_ids.end(), runId);
    return it == m_ids.end() ? -1 : int(it - m_ids.begin());
}

qint64 RunsTableModel::stepsDone(const RunRecord &run)
{
    if (run.summary) return run.summary->steps;
    return run.steps.empty() ? 0 : run.steps.back().step;
}

qint64 RunsTableModel::skippedSteps(const RunRecord &run)
{
    if (run.summary) return run.summary->skipped_steps;
    return std::count_if(run.steps.begin(), run.steps.end(),
                         [](const auto &s) { return s.skipped; });
}

double RunsTableModel::stepMs(const RunRecord &run) const
{
    if (run.summary && run.summary->median_step_ms > 0) return run.summary->median_step_ms;
    LiveStepMs &live = m_liveStepMs[run.id];
    if (live.steps != run.steps.size()) {
        live.steps = run.steps.size();
        live.ms = mixlab::headline_step_ms(run.steps);
    }
    return live.ms;
}

double RunsTableModel::speedup(const RunRecord &run) const
{
    const std::vector<int> group = m_store->groupRuns(run.group);
    if (group.size() < 2) return 0;
    const RunRecord *base = m_store->run(group.front());
    if (!base) return 0;
    return mixlab::speedup(stepMs(*base), stepMs(run));
}

QVariant RunsTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_ids.size())) return {};
    const int id = m_ids[size_t(index.row())];
    const RunRecord *run = m_store->run(id);
    if (!run) return {};
    if (role == k_runIdRole) return id;
    const bool failed = run->status == RunRecord::Status::Failed;
    if (role == Qt::ToolTipRole && failed) return tr("Failed: %1").arg(run->failure);
    if (role == Qt::TextAlignmentRole && index.column() >= Batch)
        return int(Qt::AlignRight | Qt::AlignVCenter);

    switch (index.column()) {
    case Name:
        if (role == Qt::CheckStateRole) return run->visible ? Qt::Checked : Qt::Unchecked;
        if (role == Qt::DisplayRole || role == Qt::EditRole) return run->name;
        if (role == Qt::DecorationRole) return run->color;
        if (role == Qt::ToolTipRole) {
            // The whole name first: a long one (a continued run's) is elided in the cell.
            QString tip = tr("%1: %2 on %3, batch %4, seed %5. Checkbox: show in the charts; "
                             "double-click to rename")
                              .arg(run->name, policyText(run->config.policy),
                                   QString::fromStdString(run->config.dataset.name.empty()
                                                              ? std::string("default dataset")
                                                              : run->config.dataset.name))
                              .arg(run->config.batch_size)
                              .arg(qulonglong(run->config.seed));
            if (!run->checkpointFolder.isEmpty())
                tip += tr("\nCheckpoints: %1 (right-click: Continue training, Show checkpoints)")
                           .arg(run->checkpointFolder);
            if (!run->checkpointFailure.isEmpty())
                tip += tr("\nA checkpoint could not be written: %1").arg(run->checkpointFailure);
            return tip;
        }
        break;
    case Status:
        if (role == Qt::DisplayRole)
            return failed ? tr("failed: %1").arg(run->failure) : runStatusName(run->status);
        if (role == Qt::ForegroundRole && failed) return QColor(0xc6, 0x28, 0x28);
        break;
    case Progress: {
        const qint64 done = stepsDone(*run);
        const qint64 total = std::max<qint64>(run->totalSteps, done);
        if (role == k_fractionRole) return total > 0 ? double(done) / double(total) : 0.0;
        if (role == Qt::DisplayRole)
            return total > 0 ? QStringLiteral("%1 / %2").arg(done).arg(total) : QString();
        break;
    }
    case Eta:
        if (role == Qt::DisplayRole) {
            if (run->status != RunRecord::Status::Running || run->steps.empty()) return QString();
            const auto &last = run->steps.back();
            const qint64 left = run->totalSteps - last.step;
            if (left <= 0 || last.step <= 0) return QString();
            return durationText(last.wall_ms / 1000.0 / double(last.step) * double(left));
        }
        break;
    case Policy:
        if (role == Qt::DisplayRole) return policyText(run->config.policy);
        break;
    case Batch:
        if (role == Qt::DisplayRole) return run->config.batch_size;
        break;
    case StepMs:
        if (role == Qt::DisplayRole) {
            const double ms = stepMs(*run);
            if (!(ms > 0)) return ended(*run) ? k_noValue : QString();
            return QStringLiteral("%1").arg(ms, 0, 'f', ms < 10 ? 3 : 2);
        }
        if (role == Qt::ToolTipRole) return headerData(StepMs, Qt::Horizontal, Qt::ToolTipRole);
        break;
    case Speedup:
        if (role == Qt::DisplayRole) {
            const double s = speedup(*run);
            return s > 0 ? QStringLiteral("%1\u00d7").arg(s, 0, 'f', 2) : QString();
        }
        if (role == Qt::ToolTipRole) {
            const std::vector<int> group = m_store->groupRuns(run->group);
            if (group.size() < 2) return QString();
            const RunRecord *base = m_store->run(group.front());
            return base == run ? tr("Baseline of its compare group")
                               : tr("Step time of %1 divided by this run's: above 1 is faster")
                                     .arg(base ? base->name : QString());
        }
        break;
    case TestAccuracy:
        if (role == Qt::DisplayRole) {
            const auto acc = finalTestAccuracy(*run);
            if (!acc) return ended(*run) ? k_noValue : QString();
            return QStringLiteral("%1 %").arg(double(*acc) * 100.0, 0, 'f', 2);
        }
        if (role == Qt::ToolTipRole && ended(*run) && !finalTestAccuracy(*run))
            return tr("The run ended before it evaluated the test split");
        break;
    case ValidPerplexity:
    case TestPerplexity: {
        if (!run->languageModel) break;
        const bool valid = index.column() == ValidPerplexity;
        const std::optional<float> loss = valid ? finalValidLoss(*run) : finalTestLoss(*run);
        if (role == Qt::DisplayRole) {
            if (!loss) return ended(*run) ? k_noValue : QString();
            return perplexityText(mixlab::perplexity(*loss));
        }
        if (role == Qt::ToolTipRole) {
            if (!loss)
                return ended(*run) ? tr("The run ended before it evaluated this split") : QString();
            QString tip = tr("exp(%1), the %2 split's loss per token at the last evaluation")
                              .arg(double(*loss), 0, 'g', 5)
                              .arg(valid ? tr("validation") : tr("test"));
            // What the number means: how far from what the data allows.
            if (!valid && run->context && run->context->perplexityReferences)
                tip += QStringLiteral("\n") +
                       QString::fromStdString(mixlab::perplexity_references_text(
                           *run->context->perplexityReferences, mixlab::perplexity(*loss)));
            return tip;
        }
        break;
    }
    case FinalLr:
        if (!run->languageModel) break;
        if (role == Qt::DisplayRole) {
            const std::optional<float> lr = finalLr(*run);
            return lr ? QString::number(double(*lr), 'g', 4) : QString();
        }
        if (role == Qt::ToolTipRole) return headerData(FinalLr, Qt::Horizontal, Qt::ToolTipRole);
        break;
    case Skipped:
        if (role == Qt::DisplayRole) return skippedSteps(*run);
        if (role == Qt::ToolTipRole) return headerData(Skipped, Qt::Horizontal, Qt::ToolTipRole);
        break;
    default: break;
    }
    return {};
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole) {
        switch (section) {
        case Progress: return tr("Steps done of the steps planned");
        case Eta: return tr("Time left at the pace so far (wall time)");
        case StepMs:
            return tr("Step time: the %1. A running run's is over its steps so far.")
                .arg(QString::fromStdString(mixlab::step_time_definition()));
        case Speedup:
            return tr("Speedup: %1.").arg(QString::fromStdString(mixlab::speedup_definition()));
        case TestAccuracy:
            return tr(
                "Accuracy on the test split at the last evaluation (\u2014: never evaluated)");
        case ValidPerplexity:
            return tr("Language models: perplexity (exp of the loss per word) on the validation "
                      "split at the last evaluation; lower is better");
        case TestPerplexity:
            return tr("Language models: perplexity on the test split at the last evaluation");
        case FinalLr:
            return tr("Language models: the learning rate at the end (the plateau schedule "
                      "lowers it when the validation loss stops improving)");
        case Skipped: return tr("Steps whose update was skipped because the gradients overflowed");
        default: return {};
        }
    }
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Name: return tr("Run");
    case Status: return tr("Status");
    case Progress: return tr("Progress");
    case Eta: return tr("ETA");
    case Policy: return tr("Policy");
    case Batch: return tr("Batch");
    case StepMs: return tr("Step ms");
    case Speedup: return tr("Speedup");
    case TestAccuracy: return tr("Test acc");
    case ValidPerplexity: return tr("Valid ppl");
    case TestPerplexity: return tr("Test ppl");
    case FinalLr: return tr("LR");
    case Skipped: return tr("Skipped");
    default: return {};
    }
}

Qt::ItemFlags RunsTableModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.column() == Name) f |= Qt::ItemIsUserCheckable | Qt::ItemIsEditable;
    return f;
}

bool RunsTableModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    const int id = runIdAt(index.row());
    if (!index.isValid() || !m_store->run(id)) return false;
    if (index.column() == Name && role == Qt::CheckStateRole) {
        m_store->setVisible(id, value.toInt() == Qt::Checked);
        return true;
    }
    if (index.column() == Name && role == Qt::EditRole) {
        const QString name = value.toString().trimmed();
        if (name.isEmpty()) return false;
        m_store->rename(id, name);
        return true;
    }
    return false;
}

void RunsTableModel::onRunAdded(int id)
{
    if (rowOf(id) >= 0) return;
    const int row = int(m_ids.size());
    beginInsertRows({}, row, row);
    m_ids.push_back(id);
    endInsertRows();
    refreshGroup(id);
}

void RunsTableModel::onRunRemoved(int id)
{
    m_liveStepMs.erase(id);
    const int row = rowOf(id);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    m_ids.erase(m_ids.begin() + row);
    endRemoveRows();
    // The group's baseline may have changed: refresh every speedup.
    if (!m_ids.empty()) emit dataChanged(index(0, Speedup), index(int(m_ids.size()) - 1, Speedup));
}

void RunsTableModel::onRunChanged(int id)
{
    const int row = rowOf(id);
    if (row < 0) {
        resync();
        return;
    }
    emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
    refreshGroup(id);
}

void RunsTableModel::onStepsAppended(int id)
{
    const int row = rowOf(id);
    if (row < 0) return;
    emit dataChanged(index(row, Status), index(row, ColumnCount - 1));
    refreshGroup(id);
}

void RunsTableModel::refreshGroup(int id)
{
    const RunRecord *run = m_store->run(id);
    if (!run) return;
    for (int other : m_store->groupRuns(run->group)) {
        const int row = rowOf(other);
        if (row >= 0 && other != id) emit dataChanged(index(row, Speedup), index(row, Speedup));
    }
}

void RunsTableModel::resync()
{
    beginResetModel();
    m_ids = m_store->runIds();
    endResetModel();
}
