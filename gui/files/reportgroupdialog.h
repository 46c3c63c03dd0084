// ReportGroupDialog: File > Export report's first question, which compare group the
// report covers. Lists every group that can be reported, newest first, with its
// policies, batch, steps, time and how its runs ended; the one preselected is the
// runs-table selection's group when it has one, else the newest.
#pragma once
#include <QDialog>

#include <vector>

class QListWidget;
class RunStore;

class ReportGroupDialog : public QDialog {
    Q_OBJECT
public:
    // `preferred`: the group to preselect when it can be reported (0: none).
    ReportGroupDialog(const RunStore &store, int preferred, QWidget *parent = nullptr);

    bool hasGroups() const { return !m_groups.empty(); }
    const std::vector<int> &groups() const { return m_groups; }
    int group() const; // the chosen group; 0 when there is none
    void setGroup(int group);

private:
    std::vector<int> m_groups;
    QListWidget *m_list = nullptr;
};
