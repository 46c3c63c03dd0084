// WhyPanel: the "Why?" panel for one finished compare group: a table of the runs (policy,
// median step time, speedup, skipped steps, final loss scale) and mixlab::explain()'s
// sentences, each with its suggestion and, for a model or run-config fix, an Apply button.
#pragma once
#include "mixlab/explain.h"

#include <QString>
#include <QWidget>

#include <vector>

class ModelDesigner;
class QLabel;
class QPushButton;
class QTableWidget;
class QVBoxLayout;
class RunPanel;
class RunStore;

class WhyPanel : public QWidget {
    Q_OBJECT
public:
    explicit WhyPanel(RunStore *store, QWidget *parent = nullptr);

    // Where Apply sends its edits; without them the buttons stay disabled.
    void setDesigner(ModelDesigner *designer);
    void setRunPanel(RunPanel *panel);

    // Explains this group; 0 follows the latest finished group as runs come and go.
    void showGroup(int group);
    int group() const { return m_group; } // the group shown, 0 when none
    void refresh();

    const std::vector<mixlab::Explanation> &explanations() const { return m_explanations; }
    // The Apply button of explanation `index`; nullptr when it has no fix we can apply.
    QPushButton *applyButton(int index) const;
    // Applies explanation `index`'s fix as an undoable designer edit or a run-panel change.
    bool apply(int index, QString *error = nullptr);
    QString appliedText() const { return m_appliedText; }
    QTableWidget *runsTable() const { return m_table; }

    // Fixes the panel knows how to apply.
    static bool canApply(const mixlab::Explanation &e);

signals:
    void applied(const QString &what);

private:
    void rebuild();
    void clearCards();
    QWidget *makeCard(int index, const mixlab::Explanation &e);
    void scheduleRefresh(int runId);

    RunStore *m_store;
    ModelDesigner *m_designer = nullptr;
    RunPanel *m_runPanel = nullptr;
    int m_group = 0;
    bool m_followLatest = true;
    bool m_refreshQueued = false;
    std::vector<int> m_runIds; // of the group shown
    std::vector<mixlab::Explanation> m_explanations;
    std::vector<QPushButton *> m_applyButtons; // per explanation, nullptr where none
    QString m_appliedText;

    QLabel *m_title = nullptr;
    QTableWidget *m_table = nullptr;
    QLabel *m_note = nullptr;
    QLabel *m_appliedLabel = nullptr;
    QWidget *m_cards = nullptr;
    QVBoxLayout *m_cardsLayout = nullptr;
};
