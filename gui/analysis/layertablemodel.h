// LayerTableModel: the top-level layers of one run's profiling pass as table rows (time,
// share of the step, achieved rates, tensor cores), sortable by any column.
#pragma once
#include "mixlab/step_profile.h"

#include <QAbstractTableModel>

#include <vector>

class LayerTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Layer,
        Type,
        ForwardMs,
        BackwardMs,
        Share,
        Tflops,
        GBs,
        TensorCores,
        ColumnCount
    };
    // The value a column sorts by (numbers as numbers, "-" cells as -1).
    static constexpr int SortRole = Qt::UserRole;

    explicit LayerTableModel(QObject *parent = nullptr);

    // The rows of `profile`, in graph order until sorted.
    void setProfile(const mixlab::StepProfile &profile);
    void clear();
    const mixlab::LayerTime &layer(int row) const { return m_rows[std::size_t(row)].layer; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    // Rates over a few microseconds measure event granularity, not the layer: below this
    // device time the TFLOP/s and GB/s cells read "-" (as `mixlab-cli explain` prints).
    static constexpr double k_minTimedMs = 0.005;

private:
    struct Row {
        mixlab::LayerTime layer;
        int order = 0; // position in the graph
    };
    QVariant sortKey(const Row &r, int column) const;
    double shareOf(const Row &r) const;

    std::vector<Row> m_rows;
    double m_stepMs = 0; // what the share is of: the profiled step's device time
};
