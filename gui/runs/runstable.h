// RunsTable: the table of runs under the charts (RunsTableModel in a QTableView with a
// progress-bar column) and its context menu: rename, hide/show, continue training from the
// run's newest checkpoint, show its checkpoints, delete. The header's menu
// shows or hides columns (Policy and Batch start hidden: the default run name says them;
// the language models' perplexity columns show while one is in the table).
#pragma once
#include <QTableView>

#include <vector>

class RunStore;
class RunsTableModel;

class RunsTable : public QTableView {
    Q_OBJECT
public:
    explicit RunsTable(RunStore *store, QWidget *parent = nullptr);

    std::vector<int> selectedRunIds() const; // in table order
    // As wide as every shown column, the run's name at its shortest: what the table needs
    // to show its numbers without a horizontal scroll bar (the main window makes room for
    // it when the Why? dock opens).
    QSize sizeHint() const override;
    RunsTableModel *tableModel() const { return m_model; }

    // The context menu's actions, callable directly. Runs still training are not
    // deleted (the worker is writing to them): they are left in place. Deleting runs
    // with checkpoints asks first, saying how many and how large, and deletes them too.
    void renameRun(int id);
    void setRunsVisible(const std::vector<int> &ids, bool visible);
    void deleteRuns(const std::vector<int> &ids);
    // The designer's model's kind: an empty table shows that kind's columns, so a
    // language model's preset shows perplexity before its first run.
    void setDesignedLanguageModel(bool languageModel);

signals:
    // The context menu's checkpoint entries (the main window acts on them): offered for
    // one run that is not training and has a checkpoint folder (Continue: a checkpoint in it).
    void continueTrainingRequested(int id);
    void showCheckpointsRequested(int id);

protected:
    void keyPressEvent(QKeyEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

private:
    void showContextMenu(const QPoint &pos);
    void showColumnMenu(const QPoint &pos);
    bool anyRunning() const;
    // Perplexity and LR shown while a language model is in the table, test accuracy while
    // a classifier is (an empty table: the designed model's kind); acted on only when that
    // changes, so the header menu's choices stand otherwise.
    void updateKindColumns();
    // The run's name stretches into the room the other columns leave, but never below
    // m_nameMinimum: short of room (a language model's columns at 1280 px) the table
    // scrolls sideways instead of squeezing every name to "...".
    void keepNameReadable();

    RunStore *m_store;
    RunsTableModel *m_model;
    int m_nameMinimum = 0;
    int m_shownKinds = -1; // bit 0: a classifier, bit 1: a language model
    bool m_designedLanguageModel = false;
};
