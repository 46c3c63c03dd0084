// LayerTree: the designer's tree of layers with the engine's live figures beside each
// (output shape, parameters, FLOPs, tensor-core fitness). A residual block is a row with
// two child rows, "body" and "shortcut", holding their layers; blocks can be collapsed.
// Rows can be dragged, and palette entries dropped in; the tree only says where a drop
// landed, and the drop handler (the designer) makes the edit.
#pragma once
#include "designer/layerpath.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QTreeWidget>

#include <functional>
#include <vector>

class LayerTree : public QTreeWidget {
    Q_OBJECT
public:
    enum Column {
        IndexColumn,
        LayerColumn,
        OutputColumn,
        ParamsColumn,
        FlopsColumn,
        TensorCoreColumn,
        ColumnCount
    };
    // The exact number behind a numeric cell (parameters, FLOPs), for sorting and tests.
    static constexpr int k_valueRole = Qt::UserRole;
    // On IndexColumn: what a row is (ItemKind as int).
    static constexpr int k_kindRole = Qt::UserRole + 1;
    enum class ItemKind { Layer, Body, Shortcut };

    explicit LayerTree(QWidget *parent = nullptr);

    // One row per layer of `spec`, nested for residual blocks. `inferred` holds the
    // engine's figures as far as it got (all of them when the model is valid); rows past
    // that show dashes. The row at errorPath (empty: none) is highlighted with `error` as
    // its tooltip, and the blocks around it are opened. Rows are updated in place: a row
    // keeps its item (so its expansion and the selection) while its layer stays, and
    // layers added or removed around it do not move that state to another block.
    void showLayers(const mixlab::ModelSpec &spec, const std::vector<mixlab::GraphLayer> &inferred,
                    const LayerPath &errorPath, const QString &error);

    // The selected layer or body/shortcut group (a group path); empty when none.
    LayerPath currentPath() const;
    void selectPath(const LayerPath &path); // empty clears the selection
    QTreeWidgetItem *itemFor(const LayerPath &path) const;
    LayerPath pathOf(const QTreeWidgetItem *item) const;

    // Closes every residual block but leaves their body and shortcut rows open, so opening
    // a block later shows its layers at once.
    void collapseBlocks();

    // Top-level shorthands: the selected top-level layer (-1 when none or a nested row).
    int currentRow() const;
    void selectRow(int row);

    // Takes a drop (layerdrag's data) at an insertion point; false refuses it.
    using DropHandler = std::function<bool(const QMimeData &data, const LayerPath &at)>;
    void setDropHandler(DropHandler handler) { m_dropHandler = std::move(handler); }
    // The insertion point of a drop onto `parent` (nullptr: the model's own list) at
    // `index`, as the item model reports it: into a body/shortcut row's list; onto a
    // block, at the end of its body; onto another layer, right after it.
    LayerPath dropPoint(QTreeWidgetItem *parent, int index) const;

signals:
    void currentPathChanged(const LayerPath &path);

protected:
    QStringList mimeTypes() const override;
    QMimeData *mimeData(const QList<QTreeWidgetItem *> &items) const override;
    Qt::DropActions supportedDropActions() const override;
    bool dropMimeData(QTreeWidgetItem *parent, int index, const QMimeData *data,
                      Qt::DropAction action) override;
    void startDrag(Qt::DropActions supportedActions) override;
    void dropEvent(QDropEvent *event) override;

private:
    void syncList(QTreeWidgetItem *parent, const std::vector<mixlab::LayerSpec> &shown,
                  const std::vector<mixlab::LayerSpec> &layers,
                  const std::vector<mixlab::GraphLayer> *inferred, const LayerPath &listPath);
    void fillLayerRow(QTreeWidgetItem *item, const LayerPath &path, const mixlab::LayerSpec &layer,
                      const mixlab::GraphLayer *inferred);
    void fillGroupRow(QTreeWidgetItem *item, LayerGroup group, const mixlab::LayerSpec &block,
                      const mixlab::GraphLayer *inferred);
    void markError(QTreeWidgetItem *item, const LayerPath &path);

    mixlab::ModelSpec m_shown; // what the items show now, to match rows to layers
    LayerPath m_errorPath;
    QString m_error;
    DropHandler m_dropHandler;
};

// "18.4M", "950", "1.2G": a count short enough for a narrow column.
QString compactCount(qint64 n);
