// WhyPanel: the "Why?" panel for one finished compare group: a table of the runs (policy,
// step time, speedup, skipped steps, final loss scale), then tabs: mixlab::explain()'s
// sentences worded for the app, each with its suggestion and, for a model or run-config
// fix, an Apply button; and the profiling pass (phases as stacked bars per run, one run's
// layer table and roofline).
#pragma once
#include "mixlab/ceilings.h"
#include "mixlab/explain.h"

#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

class LayerTableModel;
class ModelDesigner;
class PhaseBars;
class QComboBox;
class QLabel;
class QPushButton;
class QTabWidget;
class QTableView;
class QTableWidget;
class QVBoxLayout;
class RooflineChart;
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
    // Applies explanation `index`'s fix as an undoable designer edit (ModelDesigner::
    // editLayer) or a run-panel change (RunPanel::setConfig).
    bool apply(int index, QString *error = nullptr);
    QString appliedText() const { return m_appliedText; }
    QTableWidget *runsTable() const { return m_table; }

    // "Explanation", then the profiling pass's views: "Time", "Layers", "Roofline".
    enum Tab { k_explanationTab, k_timeTab, k_layersTab, k_rooflineTab };
    QTabWidget *tabs() const { return m_tabs; }
    PhaseBars *phaseBars() const { return m_phaseBars; }
    QLabel *phaseSummary() const { return m_phaseLine; }
    QComboBox *runCombo() const { return m_runCombo; } // whose layers and roofline
    LayerTableModel *layerModel() const { return m_layerModel; }
    QTableView *layerView() const { return m_layerView; }
    RooflineChart *roofline() const { return m_roofline; }
    // The roofline's and the explanations' ceilings; without a call, the device's cached
    // ones (as About shows). The roofline follows at once, the explanations at the next
    // refresh (set them before showGroup).
    void setCeilings(const std::optional<mixlab::Ceilings> &ceilings);

    // Whether the explanation has a fix; the panel applies every FixKind.
    static bool canApply(const mixlab::Explanation &e);
    // Whether the fix's change is in the designer's model or the run settings now; none
    // when there is no designer (model fixes) or run panel (run-config fixes) to look in.
    std::optional<bool> isApplied(const mixlab::Explanation &e) const;

signals:
    void applied(const QString &what);

private:
    void rebuild();
    void clearCards();
    void updateApplyButtons();
    static bool isModelFix(const mixlab::Explanation &e);
    QWidget *makeCard(int index, const mixlab::Explanation &e);
    void scheduleRefresh(int runId);
    void rebuildProfile(const std::vector<mixlab::RunFacts> &facts);
    void showProfiledRun(int comboIndex);
    static QString phaseLine(const mixlab::RunFacts &f);
    std::optional<mixlab::Ceilings> ceilingsFor(const mixlab::DeviceInfo &device) const;

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
    std::vector<mixlab::RunFacts> m_facts; // of the group shown
    bool m_ceilingsSet = false;
    std::optional<mixlab::Ceilings> m_ceilings; // when set by setCeilings

    QLabel *m_title = nullptr;
    QTableWidget *m_table = nullptr;
    QLabel *m_note = nullptr;
    QLabel *m_appliedLabel = nullptr;
    QLabel *m_noProfile = nullptr; // why the profiling tabs are empty
    QTabWidget *m_tabs = nullptr;
    PhaseBars *m_phaseBars = nullptr;
    QLabel *m_phaseLine = nullptr;
    QComboBox *m_runCombo = nullptr;
    LayerTableModel *m_layerModel = nullptr;
    QTableView *m_layerView = nullptr;
    RooflineChart *m_roofline = nullptr;
    QLabel *m_rooflineNote = nullptr;
    QWidget *m_cards = nullptr;
    QVBoxLayout *m_cardsLayout = nullptr;
};
