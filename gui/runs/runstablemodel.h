// RunsTableModel: one row per run of a RunStore (in creation order) with its status,
// progress, step time and speedup (the headline definition of step_time.h, against its
// compare group's first run), and final accuracy, or for a language model its validation
// and test perplexity and the learning rate it ended at. Name and visibility are editable and
// write straight back into the store.
#pragma once
#include <QAbstractTableModel>

#include <map>
#include <vector>

class RunStore;
struct RunRecord;

class RunsTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // Name also carries the colour swatch and the "shown in the charts" checkbox.
    enum Column {
        Name,
        Status,
        Progress,
        Eta,
        Policy,
        Batch,
        StepMs,
        Speedup,
        TestAccuracy,
        ValidPerplexity, // language models: where classifiers show accuracy
        TestPerplexity,
        FinalLr,
        Skipped,
        ColumnCount
    };
    // Progress column: steps done / total as a double in [0, 1] under this role.
    static constexpr int k_fractionRole = Qt::UserRole + 1;
    // Every column: the row's run id under this role.
    static constexpr int k_runIdRole = Qt::UserRole + 2;

    explicit RunsTableModel(RunStore *store, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;

    int runIdAt(int row) const;
    int rowOf(int runId) const; // -1 when absent

    // The headline step time (mixlab::headline_step_ms): the summary's when the run ended,
    // else over the steps recorded so far. 0: none yet.
    double stepMs(const RunRecord &run) const;
    static qint64 stepsDone(const RunRecord &run);
    static qint64 skippedSteps(const RunRecord &run);
    // mixlab::speedup against the first run of the compare group; 0 when the run is alone
    // in its group or a time is still missing.
    double speedup(const RunRecord &run) const;

private:
    void onRunAdded(int id);
    void onRunRemoved(int id);
    void onRunChanged(int id);
    void onStepsAppended(int id);
    void refreshGroup(int id);
    void resync();

    RunStore *m_store;
    std::vector<int> m_ids; // mirror of the store's order, so removals find their row
    // A running run's live step time by id, with the step count it was computed over: a
    // median costs a pass over every step, and a repaint asks for it several times.
    struct LiveStepMs {
        std::size_t steps = 0;
        double ms = 0;
    };
    mutable std::map<int, LiveStepMs> m_liveStepMs;
};
