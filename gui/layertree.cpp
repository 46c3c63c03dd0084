// LayerTree: rows are updated in place on every edit (not rebuilt), so the selection and
// scroll position survive while the user steps a spin box.
#include "layertree.h"

#include "layercommands.h"

#include <QHeaderView>
#include <QLocale>
#include <QStyle>

using mixlab::GraphLayer;
using mixlab::LayerSpec;

namespace {

// Translucent, so the row reads as "wrong" on light and dark palettes alike.
const QColor k_errorBackground(220, 50, 47, 70);
const QColor k_noColour(200, 110, 0);

QString dash() { return QStringLiteral("\u2013"); }

} // namespace

QString compactCount(qint64 n) {
    const double v = double(n);
    if (n < 10000) return QLocale().toString(n);
    if (v < 1e6) return QLocale().toString(v / 1e3, 'f', v < 1e5 ? 1 : 0) + QLatin1Char('K');
    if (v < 1e9) return QLocale().toString(v / 1e6, 'f', v < 1e8 ? 1 : 0) + QLatin1Char('M');
    return QLocale().toString(v / 1e9, 'f', 1) + QLatin1Char('G');
}

LayerTree::LayerTree(QWidget *parent) : QTreeWidget(parent) {
    setColumnCount(ColumnCount);
    setHeaderLabels({tr("#"), tr("Layer"), tr("Output"), tr("Params"), tr("FLOPs"),
                     tr("Tensor cores")});
    QTreeWidgetItem *h = headerItem();
    h->setToolTip(IndexColumn, tr("Layer index, as the engine's messages name it"));
    h->setToolTip(OutputColumn, tr("Output shape of one sample"));
    h->setToolTip(ParamsColumn, tr("Trainable parameters"));
    h->setToolTip(FlopsColumn, tr("Forward FLOPs per sample (a multiply-add counts 2)"));
    h->setToolTip(TensorCoreColumn,
                  tr("Whether the layer's GEMM can run on tensor cores in fp16/bf16: every "
                     "dimension must be a multiple of 8"));
    for (int c : {ParamsColumn, FlopsColumn})
        h->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);

    setRootIsDecorated(false); // flat until residual blocks bring children
    setUniformRowHeights(true);
    setAlternatingRowColors(true);
    setAllColumnsShowFocus(true);
    setSelectionMode(QAbstractItemView::SingleSelection);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setTextElideMode(Qt::ElideMiddle);

    QHeaderView *hv = header();
    hv->setStretchLastSection(false);
    hv->setMinimumSectionSize(24);
    for (int c = 0; c < ColumnCount; ++c)
        hv->setSectionResizeMode(c, c == LayerColumn ? QHeaderView::Stretch
                                                     : QHeaderView::ResizeToContents);

    connect(this, &QTreeWidget::currentItemChanged, this,
            [this](QTreeWidgetItem *current, QTreeWidgetItem *) {
                emit currentRowChanged(current ? indexOfTopLevelItem(current) : -1);
            });
}

int LayerTree::currentRow() const {
    QTreeWidgetItem *item = currentItem();
    return item ? indexOfTopLevelItem(item) : -1;
}

void LayerTree::selectRow(int row) {
    QTreeWidgetItem *item = row >= 0 ? topLevelItem(row) : nullptr;
    if (!item) {
        setCurrentItem(nullptr);
        clearSelection();
        return;
    }
    setCurrentItem(item);
    scrollToItem(item);
}

void LayerTree::showLayers(const mixlab::ModelSpec &spec, const std::vector<GraphLayer> &inferred,
                           int errorRow, const QString &error) {
    const int n = int(spec.layers.size());
    while (topLevelItemCount() > n) delete takeTopLevelItem(topLevelItemCount() - 1);
    while (topLevelItemCount() < n) new QTreeWidgetItem(this); // appended as a top-level row

    for (int i = 0; i < n; ++i) {
        QTreeWidgetItem *item = topLevelItem(i);
        const GraphLayer *g = std::size_t(i) < inferred.size() ? &inferred[std::size_t(i)] : nullptr;
        fillRow(item, i, spec.layers[std::size_t(i)], g);
        const bool bad = i == errorRow;
        for (int c = 0; c < ColumnCount; ++c)
            item->setData(c, Qt::BackgroundRole, bad ? QVariant(QBrush(k_errorBackground))
                                                     : QVariant());
        item->setIcon(IndexColumn,
                      bad ? style()->standardIcon(QStyle::SP_MessageBoxCritical) : QIcon());
        item->setToolTip(IndexColumn, bad ? error : QString());
        if (bad) item->setToolTip(LayerColumn, error);
    }
}

void LayerTree::fillRow(QTreeWidgetItem *item, int index, const LayerSpec &layer,
                        const GraphLayer *g) {
    const QLocale locale;
    item->setText(IndexColumn, QString::number(index));
    item->setTextAlignment(IndexColumn, Qt::AlignRight | Qt::AlignVCenter);
    item->setText(LayerColumn, layerSummary(layer));
    QString layerTip;
    if (g && g->folded_into_loss)
        layerTip = tr("Computed inside the loss, in float32");
    item->setToolTip(LayerColumn, layerTip);

    for (int c : {ParamsColumn, FlopsColumn, TensorCoreColumn})
        item->setTextAlignment(c, (c == TensorCoreColumn ? Qt::AlignHCenter : Qt::AlignRight) |
                                      Qt::AlignVCenter);
    if (!g) {
        const QString why = tr("Not inferred: an earlier layer stops the model");
        for (int c : {OutputColumn, ParamsColumn, FlopsColumn, TensorCoreColumn}) {
            item->setText(c, dash());
            item->setToolTip(c, why);
            item->setData(c, k_valueRole, QVariant());
            item->setData(c, Qt::ForegroundRole, QVariant());
        }
        return;
    }

    item->setText(OutputColumn, QString::fromStdString(g->out.to_string()));
    item->setToolTip(OutputColumn, tr("in %1, out %2")
                                       .arg(QString::fromStdString(g->in.to_string()),
                                            QString::fromStdString(g->out.to_string())));

    item->setText(ParamsColumn, locale.toString(qint64(g->params)));
    item->setData(ParamsColumn, k_valueRole, qint64(g->params));
    item->setToolTip(ParamsColumn, QString());

    item->setText(FlopsColumn, compactCount(g->flops));
    item->setData(FlopsColumn, k_valueRole, qint64(g->flops));
    item->setToolTip(FlopsColumn,
                     tr("%1 FLOPs per sample, forward").arg(locale.toString(qint64(g->flops))));

    QString tc = dash(), tcTip;
    QVariant tcColour;
    if (g->is_gemm) {
        if (layer.force_fp32) {
            tc = tr("no");
            tcTip = tr("Kept in float32, so its GEMM does not run in fp16/bf16");
            tcColour = QBrush(k_noColour);
        } else if (g->tensor_core_friendly) {
            tc = tr("yes");
            tcTip = tr("Every GEMM dimension is a multiple of 8");
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
