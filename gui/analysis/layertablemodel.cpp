// LayerTableModel: rows keep their graph position so that "Layer" sorts as the model
// reads (layer 2 before layer 10) and a stable sort on another column breaks ties by it.
#include "analysis/layertablemodel.h"

#include <algorithm>
#include <cmath>

namespace {

double layerMs(const mixlab::LayerTime &l) { return l.forward_ms + l.backward_ms; }

bool timed(const mixlab::LayerTime &l) { return layerMs(l) >= LayerTableModel::k_minTimedMs; }

double tflopsOf(const mixlab::LayerTime &l)
{
    return timed(l) && l.flops > 0 ? l.flops / (layerMs(l) * 1e9) : -1;
}

double gbsOf(const mixlab::LayerTime &l)
{
    return timed(l) && l.bytes > 0 ? l.bytes / (layerMs(l) * 1e6) : -1;
}

QString tensorCoreText(const mixlab::LayerTime &l)
{
    if (!l.is_gemm) return QStringLiteral("-");
    if (l.tensor_cores) return QObject::tr("yes");
    return l.tensor_core_note.empty()
               ? QObject::tr("no")
               : QObject::tr("no: %1").arg(QString::fromStdString(l.tensor_core_note));
}

// Three significant digits without an exponent: a CPU's 0.0123 TFLOP/s and an H200's
// 412 read alike.
QString rateText(double v)
{
    if (v < 0) return QStringLiteral("-");
    if (v == 0) return QStringLiteral("0");
    const int decimals = std::clamp(2 - int(std::floor(std::log10(v))), 0, 6);
    return QString::number(v, 'f', decimals);
}

} // namespace

LayerTableModel::LayerTableModel(QObject *parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setProfile(const mixlab::StepProfile &profile)
{
    beginResetModel();
    m_rows.clear();
    int order = 0;
    for (const mixlab::LayerTime &l : profile.layers) m_rows.push_back(Row{l, order++});
    // The share is of the whole step (sum of phases), so layers plus the phases outside
    // them (input, loss, optimizer...) add up to 100%.
    m_stepMs = profile.device_ms;
    if (!(m_stepMs > 0))
        for (const Row &r : m_rows) m_stepMs += layerMs(r.layer);
    endResetModel();
}

void LayerTableModel::clear()
{
    beginResetModel();
    m_rows.clear();
    m_stepMs = 0;
    endResetModel();
}

int LayerTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int LayerTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

double LayerTableModel::shareOf(const Row &r) const
{
    return m_stepMs > 0 ? 100.0 * layerMs(r.layer) / m_stepMs : 0;
}

QVariant LayerTableModel::sortKey(const Row &r, int column) const
{
    const mixlab::LayerTime &l = r.layer;
    switch (column) {
    case Layer: return r.order;
    case Type: return QString::fromStdString(l.type);
    case ForwardMs: return l.forward_ms;
    case BackwardMs: return l.backward_ms;
    case Share: return shareOf(r);
    case Tflops: return tflopsOf(l);
    case GBs: return gbsOf(l);
    case TensorCores: return l.is_gemm ? (l.tensor_cores ? 2 : 1) : 0;
    default: return {};
    }
}

QVariant LayerTableModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= int(m_rows.size())) return {};
    const Row &r = m_rows[std::size_t(index.row())];
    const mixlab::LayerTime &l = r.layer;
    const int col = index.column();
    if (role == SortRole) return sortKey(r, col);
    if (role == Qt::TextAlignmentRole) {
        const bool number = col != Layer && col != Type && col != TensorCores;
        return QVariant::fromValue(
            Qt::Alignment((number ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
    }
    if (role == Qt::ToolTipRole && col == TensorCores && !l.tensor_core_note.empty())
        return QString::fromStdString(l.tensor_core_note);
    if (role != Qt::DisplayRole) return {};
    switch (col) {
    case Layer: return QString::fromStdString(l.path);
    case Type: return QString::fromStdString(l.type);
    case ForwardMs: return QString::number(l.forward_ms, 'f', 3);
    case BackwardMs: return QString::number(l.backward_ms, 'f', 3);
    case Share: return QString::number(shareOf(r), 'f', 1);
    case Tflops: return rateText(tflopsOf(l));
    case GBs: return rateText(gbsOf(l));
    case TensorCores: return tensorCoreText(l);
    default: return {};
    }
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Layer: return tr("Layer");
        case Type: return tr("Type");
        case ForwardMs: return tr("Fwd ms");
        case BackwardMs: return tr("Bwd ms");
        case Share: return tr("Share %");
        case Tflops: return tr("TFLOP/s");
        case GBs: return tr("GB/s");
        case TensorCores: return tr("Tensor cores");
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Layer:
            return tr(
                "Top-level layer (a residual block counts once), or a dtype cast between layers");
        case ForwardMs: return tr("Device time of the forward pass, mean over the profiling pass");
        case BackwardMs:
            return tr("Device time of the backward pass, mean over the profiling pass");
        case Share:
            return tr("Forward + backward time as a share of the profiled step's device time (sum "
                      "of phases)");
        case Tflops:
            return tr("Achieved: forward + backward FLOPs over forward + backward time ('-' below "
                      "%1 ms)")
                .arg(k_minTimedMs);
        case GBs:
            return tr("Achieved: estimated bytes moved over forward + backward time ('-' below %1 "
                      "ms)")
                .arg(k_minTimedMs);
        case TensorCores:
            return tr("Whether its GEMM or convolution ran on tensor cores, and why not");
        default: return {};
        }
    }
    return {};
}

void LayerTableModel::sort(int column, Qt::SortOrder order)
{
    if (column < 0 || column >= ColumnCount) return;
    emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    std::vector<int> oldOrder;
    for (const Row &r : m_rows) oldOrder.push_back(r.order);
    std::stable_sort(m_rows.begin(), m_rows.end(), [&](const Row &a, const Row &b) {
        const QVariant ka = sortKey(a, column), kb = sortKey(b, column);
        const QPartialOrdering c = QVariant::compare(ka, kb);
        if (c == QPartialOrdering::Equivalent || c == QPartialOrdering::Unordered) return false;
        return order == Qt::AscendingOrder ? c == QPartialOrdering::Less
                                           : c == QPartialOrdering::Greater;
    });
    // Persistent indexes (the view's selection) follow their rows.
    QModelIndexList after;
    for (const QModelIndex &i : before) {
        const int graphPos = oldOrder[std::size_t(i.row())];
        int row = 0;
        while (m_rows[std::size_t(row)].order != graphPos) ++row;
        after << index(row, i.column());
    }
    changePersistentIndexList(before, after);
    emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}
