// LayerTree: the designer's list of layers with the engine's live figures beside each
// (output shape, parameters, FLOPs, tensor-core fitness). A tree, so residual blocks can
// nest their body and shortcut under one row; flat while the engine has none.
#pragma once
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <QTreeWidget>

#include <vector>

class LayerTree : public QTreeWidget {
    Q_OBJECT
public:
    enum Column { IndexColumn, LayerColumn, OutputColumn, ParamsColumn, FlopsColumn,
                  TensorCoreColumn, ColumnCount };
    // The exact number behind a numeric cell (parameters, FLOPs), for sorting and tests.
    static constexpr int k_valueRole = Qt::UserRole;

    explicit LayerTree(QWidget *parent = nullptr);

    // One row per layer of `spec`. `inferred` holds the engine's figures for the first
    // layers (all of them when the model is valid; fewer when an earlier layer stops
    // inference); rows past it show dashes. errorRow (-1: none) is highlighted with
    // `error` as its tooltip.
    void showLayers(const mixlab::ModelSpec &spec, const std::vector<mixlab::GraphLayer> &inferred,
                    int errorRow, const QString &error);

    int currentRow() const; // -1 when none
    void selectRow(int row); // -1 clears the selection

signals:
    void currentRowChanged(int row);

private:
    void fillRow(QTreeWidgetItem *item, int index, const mixlab::LayerSpec &layer,
                 const mixlab::GraphLayer *inferred);
};

// "18.4M", "950", "1.2G": a count short enough for a narrow column.
QString compactCount(qint64 n);
