// RunsTable: the table of runs under the charts (RunsTableModel in a QTableView with a
// progress-bar column) and its context menu: rename, hide/show, delete.
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
    RunsTableModel *tableModel() const { return m_model; }

    // The context menu's actions, callable directly. Runs still training are not
    // deleted (the worker is writing to them): they are left in place.
    void renameRun(int id);
    void setRunsVisible(const std::vector<int> &ids, bool visible);
    void deleteRuns(const std::vector<int> &ids);

protected:
    void keyPressEvent(QKeyEvent *event) override;

private:
    void showContextMenu(const QPoint &pos);

    RunStore *m_store;
    RunsTableModel *m_model;
};
