// LayerTree: rows are updated in place on every edit (not rebuilt), so the selection,
// the open/closed state of each block and the scroll position survive while the user
// steps a spin box. Rows are matched to layers by the common prefix and suffix of each
// list, which covers every single edit the designer makes.
#include "designer/layertree.h"

#include "designer/layerdrag.h"
#include "designer/layertemplates.h"

#include <QDrag>
#include <QDropEvent>
#include <QHeaderView>
#include <QLocale>
#include <QSignalBlocker>
#include <QStyle>

using mixlab::GraphLayer;
using mixlab::LayerSpec;
using mixlab::LayerType;

namespace {

// Translucent, so the row reads as "wrong" on light and dark palettes alike.
const QColor k_errorBackground(220, 50, 47, 70);
const QColor k_noColour(200, 110, 0);

QString dash() { return QStringLiteral("\u2013"); }

// The top-level items or one item's children, behind one interface.
struct Rows {
    QTreeWidget *tree;
    QTreeWidgetItem *parent;
    int count() const { return parent ? parent->childCount() : tree->topLevelItemCount(); }
    QTreeWidgetItem *at(int i) const { return parent ? parent->child(i) : tree->topLevelItem(i); }
    QTreeWidgetItem *take(int i) const
    {
        return parent ? parent->takeChild(i) : tree->takeTopLevelItem(i);
    }
    void insert(int i, QTreeWidgetItem *item) const
    {
        if (parent)
            parent->insertChild(i, item);
        else
            tree->insertTopLevelItem(i, item);
    }
};

// Which rows of a subtree are open, in pre-order: taking an item out of the tree and
// putting it back forgets this.
void saveExpansion(const QTreeWidgetItem *item, std::vector<bool> &out)
{
    out.push_back(item->isExpanded());
    for (int i = 0; i < item->childCount(); ++i) saveExpansion(item->child(i), out);
}

void restoreExpansion(QTreeWidgetItem *item, const std::vector<bool> &in, std::size_t &at)
{
    if (at < in.size()) item->setExpanded(in[at]);
    ++at;
    for (int i = 0; i < item->childCount(); ++i) restoreExpansion(item->child(i), in, at);
}

// Every GEMM (dense, conv2d) inside a layer, a block's included.
void collectGemms(const GraphLayer &g, std::vector<const GraphLayer *> &out)
{
    if (g.is_gemm) out.push_back(&g);
    for (const GraphLayer &b : g.body) collectGemms(b, out);
    for (const GraphLayer &s : g.shortcut) collectGemms(s, out);
}

bool inferredFully(const GraphLayer *g) { return g && !g->out.dims.empty(); }

void setNumber(QTreeWidgetItem *item, int column, qint64 value, const QString &text)
{
    item->setText(column, text);
    item->setData(column, LayerTree::k_valueRole, value);
}

void clearFigures(QTreeWidgetItem *item, const QString &why)
{
    for (int c : {LayerTree::OutputColumn, LayerTree::ParamsColumn, LayerTree::FlopsColumn,
                  LayerTree::TensorCoreColumn}) {
        item->setText(c, dash());
        item->setToolTip(c, why);
        item->setData(c, LayerTree::k_valueRole, QVariant());
        item->setData(c, Qt::ForegroundRole, QVariant());
    }
}

} // namespace

QString compactCount(qint64 n)
{
    const double v = double(n);
    if (n < 10000) return QLocale().toString(n);
    if (v < 1e6) return QLocale().toString(v / 1e3, 'f', v < 1e5 ? 1 : 0) + QLatin1Char('K');
    if (v < 1e9) return QLocale().toString(v / 1e6, 'f', v < 1e8 ? 1 : 0) + QLatin1Char('M');
    return QLocale().toString(v / 1e9, 'f', 1) + QLatin1Char('G');
}

LayerTree::LayerTree(QWidget *parent) : QTreeWidget(parent)
{
    setColumnCount(ColumnCount);
    // "TC" keeps the column as narrow as its yes/no; the tooltip spells it out.
    setHeaderLabels({tr("#"), tr("Layer"), tr("Output"), tr("Params"), tr("FLOPs"), tr("TC")});
    QTreeWidgetItem *h = headerItem();
    h->setToolTip(IndexColumn, tr("Position in its list (the model, a block's body or "
                                  "shortcut), as the engine's messages name it"));
    h->setToolTip(OutputColumn, tr("Output shape of one sample"));
    h->setToolTip(ParamsColumn, tr("Trainable parameters (a block: all of its layers)"));
    h->setToolTip(FlopsColumn, tr("Forward FLOPs per sample (a multiply-add counts 2)"));
    h->setToolTip(TensorCoreColumn,
                  tr("Tensor cores: whether the layer's GEMM or convolution can run on them in "
                     "fp16/bf16 (every GEMM dimension, or channel count, a multiple of 8)"));
    for (int c : {ParamsColumn, FlopsColumn})
        h->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);

    setRootIsDecorated(true);
    setIndentation(14);
    setUniformRowHeights(true);
    setAlternatingRowColors(true);
    setAllColumnsShowFocus(true);
    setSelectionMode(QAbstractItemView::SingleSelection);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setTextElideMode(Qt::ElideRight); // a summary's start says the most
    // The arrows and the indentation go with the layer names, so a block's layers read as
    // nested; the # column stays a plain column of positions.
    setTreePosition(LayerColumn);
    setExpandsOnDoubleClick(true);
    setDragEnabled(true);
    setAcceptDrops(true);
    setDropIndicatorShown(true);
    setDragDropMode(QAbstractItemView::DragDrop);

    QHeaderView *hv = header();
    hv->setStretchLastSection(false);
    hv->setMinimumSectionSize(24);
    for (int c = 0; c < ColumnCount; ++c)
        hv->setSectionResizeMode(c, c == LayerColumn ? QHeaderView::Stretch
                                                     : QHeaderView::ResizeToContents);

    connect(this, &QTreeWidget::currentItemChanged, this,
            [this](QTreeWidgetItem *current, QTreeWidgetItem *) {
                emit currentPathChanged(pathOf(current));
            });
}

LayerPath LayerTree::pathOf(const QTreeWidgetItem *item) const
{
    if (!item) return {};
    const auto kind = ItemKind(item->data(IndexColumn, k_kindRole).toInt());
    QTreeWidgetItem *parent = item->parent();
    if (kind != ItemKind::Layer) {
        const LayerGroup group = kind == ItemKind::Body ? LayerGroup::Body : LayerGroup::Shortcut;
        return pathOf(parent).child(group, LayerPath::k_group);
    }
    if (!parent) return LayerPath::top(indexOfTopLevelItem(const_cast<QTreeWidgetItem *>(item)));
    const auto groupKind = ItemKind(parent->data(IndexColumn, k_kindRole).toInt());
    const LayerGroup group = groupKind == ItemKind::Body ? LayerGroup::Body : LayerGroup::Shortcut;
    return pathOf(parent->parent())
        .child(group, parent->indexOfChild(const_cast<QTreeWidgetItem *>(item)));
}

QTreeWidgetItem *LayerTree::itemFor(const LayerPath &path) const
{
    QTreeWidgetItem *item = nullptr;
    for (const LayerStep &step : path.steps) {
        if (step.group == LayerGroup::Top) {
            if (item) return nullptr;
            item = topLevelItem(step.index);
        } else {
            if (!item) return nullptr;
            QTreeWidgetItem *group = item->child(step.group == LayerGroup::Body ? 0 : 1);
            if (!group) return nullptr;
            item = step.index == LayerPath::k_group ? group : group->child(step.index);
        }
        if (!item) return nullptr;
    }
    return item;
}

LayerPath LayerTree::currentPath() const { return pathOf(currentItem()); }

void LayerTree::selectPath(const LayerPath &path)
{
    QTreeWidgetItem *item = itemFor(path);
    if (!item) {
        setCurrentItem(nullptr);
        clearSelection();
        return;
    }
    for (QTreeWidgetItem *p = item->parent(); p; p = p->parent()) p->setExpanded(true);
    setCurrentItem(item);
    scrollToItem(item);
}

void LayerTree::collapseBlocks()
{
    std::vector<QTreeWidgetItem *> todo;
    for (int i = 0; i < topLevelItemCount(); ++i) todo.push_back(topLevelItem(i));
    while (!todo.empty()) {
        QTreeWidgetItem *item = todo.back();
        todo.pop_back();
        const bool group = ItemKind(item->data(IndexColumn, k_kindRole).toInt()) != ItemKind::Layer;
        if (item->childCount() > 0) item->setExpanded(group);
        for (int i = 0; i < item->childCount(); ++i) todo.push_back(item->child(i));
    }
}

LayerPath LayerTree::dropPoint(QTreeWidgetItem *parent, int index) const
{
    if (!parent) return LayerPath::top(index);
    const LayerPath at = pathOf(parent);
    if (at.isGroup()) return at.sibling(index);
    const LayerSpec *layer = layerAt(m_shown, at);
    if (layer && layer->type == LayerType::Residual)
        return at.child(LayerGroup::Body, int(layer->body.size()));
    return at.sibling(at.index() + 1);
}

QStringList LayerTree::mimeTypes() const { return layerdrag::mimeTypes(); }

QMimeData *LayerTree::mimeData(const QList<QTreeWidgetItem *> &items) const
{
    const LayerPath path = items.size() == 1 ? pathOf(items.front()) : LayerPath{};
    return path.isEmpty() || path.isGroup() ? nullptr : layerdrag::forLayer(path);
}

Qt::DropActions LayerTree::supportedDropActions() const { return Qt::CopyAction | Qt::MoveAction; }

bool LayerTree::dropMimeData(QTreeWidgetItem *parent, int index, const QMimeData *data,
                             Qt::DropAction)
{
    return data && m_dropHandler && m_dropHandler(*data, dropPoint(parent, index));
}

void LayerTree::startDrag(Qt::DropActions)
{
    // The base class would remove the dragged rows after a move; here the designer's
    // command moves the layer and the rows follow the spec.
    QMimeData *data = mimeData(selectedItems());
    if (!data) return;
    auto *drag = new QDrag(this);
    drag->setMimeData(data);
    drag->exec(Qt::MoveAction);
}

void LayerTree::dropEvent(QDropEvent *event)
{
    // QTreeWidget moves its own items on a drop from itself; skip that, so every drop
    // goes through dropMimeData and the handler.
    QTreeView::dropEvent(event);
}

int LayerTree::currentRow() const
{
    const LayerPath p = currentPath();
    return p.isTopLevel() ? p.index() : -1;
}

void LayerTree::selectRow(int row) { selectPath(row >= 0 ? LayerPath::top(row) : LayerPath{}); }

void LayerTree::showLayers(const mixlab::ModelSpec &spec, const std::vector<GraphLayer> &inferred,
                           const LayerPath &errorPath, const QString &error)
{
    // Rows appear and vanish below; the designer selects what it wants afterwards.
    const QSignalBlocker block(this);
    m_errorPath = errorPath;
    m_error = error;
    syncList(nullptr, m_shown.layers, spec.layers, &inferred, LayerPath::top(0));
    m_shown = spec;
    if (QTreeWidgetItem *bad = itemFor(errorPath))
        for (QTreeWidgetItem *p = bad->parent(); p; p = p->parent()) p->setExpanded(true);
}

void LayerTree::syncList(QTreeWidgetItem *parent, const std::vector<LayerSpec> &shown,
                         const std::vector<LayerSpec> &layers,
                         const std::vector<GraphLayer> *inferred, const LayerPath &listPath)
{
    const Rows rows{this, parent};
    const int n0 = int(shown.size()), n1 = int(layers.size());
    // What each row showed before (nullptr: a new row).
    std::vector<const LayerSpec *> before(std::size_t(n1), nullptr);
    if (rows.count() != n0) {
        while (rows.count() > 0) delete rows.take(0);
        for (int i = 0; i < n1; ++i) rows.insert(i, new QTreeWidgetItem);
    } else {
        int p = 0;
        while (p < n0 && p < n1 && shown[std::size_t(p)] == layers[std::size_t(p)]) ++p;
        int s = 0;
        while (s < n0 - p && s < n1 - p &&
               shown[std::size_t(n0 - 1 - s)] == layers[std::size_t(n1 - 1 - s)])
            ++s;
        for (int i = 0; i < p; ++i) before[std::size_t(i)] = &shown[std::size_t(i)];
        for (int j = 0; j < s; ++j)
            before[std::size_t(n1 - 1 - j)] = &shown[std::size_t(n0 - 1 - j)];
        const int m0 = n0 - p - s, m1 = n1 - p - s;
        const auto P = std::size_t(p);
        if (m0 == 2 && m1 == 2 && shown[P] == layers[P + 1] && shown[P + 1] == layers[P]) {
            // A move: the row goes with its layer, open or closed.
            std::vector<bool> open;
            saveExpansion(rows.at(p + 1), open);
            QTreeWidgetItem *moved = rows.take(p + 1);
            rows.insert(p, moved);
            std::size_t at = 0;
            restoreExpansion(moved, open, at);
            before[P] = &shown[P + 1];
            before[P + 1] = &shown[P];
        } else if (m0 == m1) {
            for (int k = 0; k < m0; ++k) before[P + std::size_t(k)] = &shown[P + std::size_t(k)];
        } else {
            for (int k = 0; k < m0; ++k) delete rows.take(p);
            for (int k = 0; k < m1; ++k) rows.insert(p + k, new QTreeWidgetItem);
        }
    }

    static const std::vector<LayerSpec> k_none;
    for (int i = 0; i < n1; ++i) {
        QTreeWidgetItem *item = rows.at(i);
        const LayerSpec &layer = layers[std::size_t(i)];
        const LayerPath path = listPath.sibling(i);
        const GraphLayer *g =
            inferred && std::size_t(i) < inferred->size() ? &(*inferred)[std::size_t(i)] : nullptr;
        fillLayerRow(item, path, layer, g);
        if (layer.type != LayerType::Residual) {
            while (item->childCount() > 0) delete item->takeChild(0);
            continue;
        }
        const LayerSpec *old = before[std::size_t(i)];
        const bool hadGroups = old && old->type == LayerType::Residual && item->childCount() == 2;
        if (!hadGroups) {
            while (item->childCount() > 0) delete item->takeChild(0);
            for (int k = 0; k < 2; ++k) {
                auto *group = new QTreeWidgetItem(item);
                group->setExpanded(true); // opening a block shows its layers at once
            }
        }
        const LayerGroup groups[] = {LayerGroup::Body, LayerGroup::Shortcut};
        for (int k = 0; k < 2; ++k) {
            QTreeWidgetItem *groupItem = item->child(k);
            const bool body = k == 0;
            fillGroupRow(groupItem, groups[k], layer, g);
            syncList(groupItem, hadGroups ? (body ? old->body : old->shortcut) : k_none,
                     body ? layer.body : layer.shortcut,
                     g ? (body ? &g->body : &g->shortcut) : nullptr, path.child(groups[k], 0));
        }
    }
}

void LayerTree::markError(QTreeWidgetItem *item, const LayerPath &path)
{
    const bool bad = !m_errorPath.isEmpty() && path == m_errorPath;
    for (int c = 0; c < ColumnCount; ++c)
        item->setData(c, Qt::BackgroundRole,
                      bad ? QVariant(QBrush(k_errorBackground)) : QVariant());
    item->setIcon(IndexColumn,
                  bad ? style()->standardIcon(QStyle::SP_MessageBoxCritical) : QIcon());
    item->setToolTip(IndexColumn, bad ? m_error : QString());
    if (bad) item->setToolTip(LayerColumn, m_error);
}

void LayerTree::fillLayerRow(QTreeWidgetItem *item, const LayerPath &path, const LayerSpec &layer,
                             const GraphLayer *g)
{
    const QLocale locale;
    item->setData(IndexColumn, k_kindRole, int(ItemKind::Layer));
    item->setText(IndexColumn, QString::number(path.index()));
    item->setTextAlignment(IndexColumn, Qt::AlignRight | Qt::AlignVCenter);
    item->setText(LayerColumn, layerSummary(layer));
    QString layerTip = path.toString();
    if (layer.type == LayerType::Residual)
        layerTip +=
            QLatin1Char('\n') +
            tr("Residual block: output = %1(body + shortcut); body of %2 layers, %3")
                .arg(layer.activation == mixlab::Activation::Relu ? QStringLiteral("relu")
                                                                  : QString())
                .arg(layer.body.size())
                .arg(layer.shortcut.empty()
                         ? tr("identity shortcut")
                         : tr("projection shortcut of %1 layers").arg(layer.shortcut.size()));
    if (g && g->folded_into_loss)
        layerTip += QLatin1Char('\n') + tr("Computed inside the loss, in float32");
    item->setToolTip(LayerColumn, layerTip);
    markError(item, path);

    for (int c : {ParamsColumn, FlopsColumn, TensorCoreColumn})
        item->setTextAlignment(c, (c == TensorCoreColumn ? Qt::AlignHCenter : Qt::AlignRight) |
                                      Qt::AlignVCenter);
    if (!inferredFully(g)) {
        clearFigures(item, tr("Not inferred: an earlier layer stops the model"));
        return;
    }

    item->setText(OutputColumn, QString::fromStdString(g->out.to_string()));
    item->setToolTip(OutputColumn, tr("in %1, out %2")
                                       .arg(QString::fromStdString(g->in.to_string()),
                                            QString::fromStdString(g->out.to_string())));
    setNumber(item, ParamsColumn, g->params, locale.toString(qint64(g->params)));
    item->setToolTip(ParamsColumn, QString());
    setNumber(item, FlopsColumn, g->flops, compactCount(g->flops));
    item->setToolTip(FlopsColumn,
                     tr("%1 FLOPs per sample, forward").arg(locale.toString(qint64(g->flops))));

    QString tc = dash(), tcTip;
    QVariant tcColour;
    if (layer.type == LayerType::Residual) {
        std::vector<const GraphLayer *> gemms;
        collectGemms(*g, gemms);
        QStringList notes;
        for (const GraphLayer *x : gemms) {
            if (x->spec.force_fp32)
                notes << tr("%1 is kept in float32").arg(QString::fromStdString(x->path));
            else if (!x->tensor_core_friendly)
                notes << QString::fromStdString(x->path) + QStringLiteral(": ") +
                             QString::fromStdString(x->tensor_core_note);
        }
        if (gemms.empty()) {
            tcTip = tr("No GEMM or convolution in this block");
        } else if (notes.isEmpty()) {
            tc = tr("yes");
            tcTip = tr("Every convolution and GEMM of the block fits tensor cores");
        } else {
            tc = tr("%1 of %2").arg(qsizetype(gemms.size()) - notes.size()).arg(gemms.size());
            tcTip = notes.join(QLatin1Char('\n'));
            tcColour = QBrush(k_noColour);
        }
    } else if (g->is_gemm) {
        if (layer.force_fp32) {
            tc = tr("no");
            tcTip = tr("Kept in float32, so it does not run in fp16/bf16");
            tcColour = QBrush(k_noColour);
        } else if (g->tensor_core_friendly) {
            tc = tr("yes");
            tcTip = layer.type == LayerType::Conv2D
                        ? tr("Input and output channels are multiples of 8")
                        : tr("Every GEMM dimension is a multiple of 8");
        } else {
            tc = tr("no");
            tcTip = QString::fromStdString(g->tensor_core_note);
            tcColour = QBrush(k_noColour);
        }
    } else {
        tcTip = tr("Not a GEMM");
    }
    item->setText(TensorCoreColumn, tc);
    item->setToolTip(TensorCoreColumn, tcTip);
    item->setData(TensorCoreColumn, Qt::ForegroundRole, tcColour);
}

void LayerTree::fillGroupRow(QTreeWidgetItem *item, LayerGroup group, const LayerSpec &block,
                             const GraphLayer *g)
{
    const bool body = group == LayerGroup::Body;
    const std::vector<LayerSpec> &layers = body ? block.body : block.shortcut;
    item->setData(IndexColumn, k_kindRole, int(body ? ItemKind::Body : ItemKind::Shortcut));
    item->setFlags(item->flags() & ~Qt::ItemIsDragEnabled); // a place to drop into, not a layer
    item->setText(IndexColumn, QString());
    item->setIcon(IndexColumn, QIcon());
    for (int c = 0; c < ColumnCount; ++c) item->setData(c, Qt::BackgroundRole, QVariant());
    QString text = layerGroupName(group);
    if (layers.empty()) text += body ? tr(" (empty)") : tr(" (identity)");
    item->setText(LayerColumn, text);
    QFont italic = font();
    italic.setItalic(true);
    item->setFont(LayerColumn, italic);
    item->setToolTip(LayerColumn,
                     body ? tr("The block's main path. Select this row to add layers to it.")
                          : tr("Added to the body's output, which must have the same shape; "
                               "empty means the identity. Select this row to add a projection."));
    item->setToolTip(IndexColumn, QString());

    const std::vector<GraphLayer> *figures = g ? (body ? &g->body : &g->shortcut) : nullptr;
    const bool complete = figures && figures->size() == layers.size() && g && !g->in.dims.empty() &&
                          (layers.empty() || inferredFully(&figures->back()));
    if (!complete) {
        clearFigures(item, tr("Not inferred: an earlier layer stops the model"));
        return;
    }
    const mixlab::Shape out = layers.empty() ? g->in : figures->back().out;
    std::int64_t params = 0, flops = 0;
    for (const GraphLayer &x : *figures) {
        params += x.params;
        flops += x.flops;
    }
    item->setText(OutputColumn, QString::fromStdString(out.to_string()));
    item->setToolTip(OutputColumn, tr("What the %1 gives").arg(layerGroupName(group)));
    setNumber(item, ParamsColumn, params, QLocale().toString(qint64(params)));
    item->setToolTip(ParamsColumn, QString());
    setNumber(item, FlopsColumn, flops, compactCount(flops));
    item->setToolTip(FlopsColumn, QString());
    item->setText(TensorCoreColumn, QString());
    item->setToolTip(TensorCoreColumn, QString());
    item->setData(TensorCoreColumn, Qt::ForegroundRole, QVariant());
    for (int c : {ParamsColumn, FlopsColumn})
        item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
}
