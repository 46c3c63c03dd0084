// MainWindow: arranges the parts (ModelDesigner, RunPanel, ChartPanel, RunsTable,
// LogView), the menus and the status bar, persists the layout with QSettings, marks the
// title when the experiment changed since it was saved and asks to save it before New,
// Open or Quit, asks before closing mid-run, autosaves and offers to recover a crashed
// session's experiment. Training and the largest-batch search belong to RunController.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/model_spec.h"
#include "mixlab/trainer.h"

#include <QMainWindow>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <string>

namespace mixlab {
struct CheckpointHeader;
}
class AboutDialog;
class Autosave;
class ChartPanel;
class DeviceProbe;
class GuideDialog;
struct ImportedModel;
class LogView;
class MaxBatchDialog;
class ModelDesigner;
class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QSplitter;
class QToolBar;
class RunController;
class RunPanel;
class RunStore;
class RunsTable;
class SamplePanel;
class QTabWidget;
class ShortcutsDialog;
class WeightsFolder;
class WhyPanel;
class NumericsView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    RunStore *store() const { return m_store; }
    RunController *controller() const { return m_controller; }
    ModelDesigner *designer() const { return m_designer; }
    RunPanel *runPanel() const { return m_runPanel; }
    ChartPanel *chartPanel() const { return m_charts; }
    RunsTable *runsTable() const { return m_runsTable; }
    LogView *logView() const { return m_log; }
    WhyPanel *whyPanel() const { return m_why; }
    // Run > Sample text: what the language-model runs wrote, in a tab beside the log.
    SamplePanel *samplePanel() const { return m_samples; }
    void showSamples();
    QAction *whyAction() const { return m_whyAction; }
    QToolBar *runToolBar() const { return m_runToolBar; }
    // Shows the Why? panel for a finished compare group (0: the latest finished one).
    void showWhy(int group = 0);
    NumericsView *numericsView() const { return m_numerics; }
    QDockWidget *numericsDock() const { return m_numericsDock; }
    // Opens the Numerics dock on the run selected in the runs table (the newest run when
    // none is).
    void openNumerics();
    // The group whose runs are selected in the runs table, when it is one finished group.
    int selectedFinishedGroup() const;

    // Tests and scripted runs close without the questions (mid-run, unsaved changes).
    void setConfirmCloseForTesting(bool confirm) { m_confirmClose = confirm; }
    // The model, settings or runs changed since the last save or open (the title's mark).
    bool isModified() const;
    // The probed device (the probe result arrives shortly after construction).
    bool deviceKnown() const { return m_deviceKnown; }
    // The start-up probe: its probed() signal says when the device is known.
    DeviceProbe *deviceProbe() const { return m_probe; }
    const mixlab::DeviceInfo &deviceInfo() const { return m_device; }
    void setDeviceInfo(const mixlab::DeviceInfo &info);

    // Same as the menu entries, without dialogs; false with *error on failure. An
    // experiment that opens but cannot be used as saved (its dataset folder is gone)
    // says why in *warning.
    bool openExperiment(const QString &path, QString *error, QString *warning = nullptr);
    bool saveExperimentAs(const QString &path, QString *error);
    // A model file into the designer; on failure nothing changes. A MixLab model
    // (mixlab-model/1) replaces the designer's model, checked against the chosen dataset
    // first. A Keras model (JSON or .keras) starts a new, unsaved experiment with it and
    // its policy (refused while a job runs); File > Import model asks to save the current
    // experiment first, this call does not.
    bool importModel(const QString &path, QString *error);
    // `mixlab <file>`: opens the experiment, or says in a dialog why it cannot.
    void openFromCommandLine(const QString &path);
    QString currentFile() const { return m_currentFile; }

    // Autosave into `dir` (Autosave::defaultDirectory() in the app). False with *error
    // when the folder cannot be used: the app goes on without it.
    bool startAutosave(const QString &dir, QString *error);
    Autosave *autosave() const { return m_autosave; }
    // Offers each autosave in `dir` left by a session that ended without closing
    // (newest first) until one is recovered; unreadable ones are reported and moved
    // aside. Returns true when an experiment was recovered.
    bool offerRecovery(const QString &dir);
    QStringList recentFiles() const;

    // File > Save weights: the run whose weights it writes (the first selected run that
    // has some, else the newest that has), 0 when none; why not in *why.
    int weightsRun(QString *why = nullptr) const;
    // The same without the dialog; false with *error.
    bool saveRunWeights(int runId, const QString &path, QString *error);
    WeightsFolder *weightsFolder() const { return m_weights; }

    // Run > Continue training: a new run continuing `checkpoint` to epoch `totalEpochs`,
    // with the checkpoint's model and settings, added to this experiment's runs under a
    // name saying what it continues (`source`: the run it came from, else the file) and
    // from where. The designer and run panel stay as they are, so nothing unsaved is lost.
    // False, nothing started, with *error (the core's message names the file and what is
    // wrong) for a file that is not a whole checkpoint, an epoch not beyond it, or a
    // busy worker. The run itself may still fail at setup (tensors that do not fit).
    bool continueTraining(const QString &checkpoint, int totalEpochs, QString *error,
                          const QString &source = {});
    // The same with the questions: the file (when none is given), then ContinueDialog.
    void continueTrainingDialog(const QString &checkpoint = {}, const QString &source = {});
    // Runs table > Show checkpoints: what the run's checkpoint folder holds, in a message
    // that offers to open it.
    void showCheckpoints(int runId);

    // Run menu actions. While a largest-batch search holds the worker, Start and Compare
    // are disabled (the tooltips say why) and Stop stops the search.
    void startRun();
    void startCompare();
    void stopRuns();
    // Run > Find largest batch: the one non-modal dialog, made on first use, shown and
    // raised (the scripted --max-batch then starts its search).
    MaxBatchDialog *showMaxBatchDialog();
    MaxBatchDialog *maxBatchDialog() const { return m_maxBatchDialog; } // null until shown

    static constexpr int k_maxRecentFiles = 8;

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void buildParts();
    void buildMenus();
    void buildStatusBar();
    void buildRunToolBar();
    void applyFirstStartDefaults();
    void restoreSettings();
    void saveSettings() const;

    void updateStartBlocked();
    void onRunningChanged(bool running);
    void onSearchingChanged(bool searching);
    void updateWhyEnabled();
    void updateSaveWeightsEnabled();
    void saveWeightsDialog();
    void startWeightsDialog();
    // Run > Checkpoints at epoch ends: the app's setting (checkpointfolders).
    void buildCheckpointMenu(QMenu *run);
    // Before a job starts: where its runs' checkpoints go (this experiment's folder) and
    // how many each keeps.
    void armCheckpoints();
    // After a job: each run's checkpoints in the log, a failed one as a warning.
    void reportCheckpoints(int group);
    // continueTraining once the file's header `h` is read (by it, or by the dialog, which
    // reads it to ask its question): the header is read once per continue.
    bool continueFromHeader(const QString &checkpoint, const mixlab::CheckpointHeader &h,
                            int totalEpochs, QString *error, const QString &source);
    // The right-hand docks (Why?, Numerics) take their width from the centre, or the design
    // column's place when the window is too narrow for the three (the column returns when
    // the last of them closes).
    void makeRoomForDock(QDockWidget *dock);
    void restoreAfterDock();
    void showNumerics();
    void updateStatusProgress();
    void updateTitle();
    // What the experiment is now, against what was last saved or opened.
    std::string settingsSnapshot() const;
    void markSaved();
    void updateModified();
    // Asks to save unsaved changes; true when the caller may go on (saved, or discarded).
    bool maybeSaveChanges(const QString &title);
    // A save dialog's proposed file name: the model's name and `suffix` ("-log.json").
    QString suggestedName(const QString &suffix) const;
    void addRecentFile(const QString &path);
    void rebuildRecentMenu();

    bool applyExperiment(const QString &path, QString *error, QString *warning);
    void newExperiment();
    void importModelDialog();
    bool applyImportedModel(const ImportedModel &model, const QString &path, QString *error);
    void openExperimentDialog();
    bool saveExperimentDialog(bool askPath);
    void exportChartsDialog();
    void exportLogsDialog();
    void showAbout();
    // A help window beside the main one, made into `kept` once and raised when asked again.
    template <typename Dialog, typename... Args>
    void showNonModal(QPointer<Dialog> &kept, Args &&...args);
    void warn(const QString &title, const QString &text);

    RunStore *m_store = nullptr;
    Autosave *m_autosave = nullptr;
    RunController *m_controller = nullptr;
    WeightsFolder *m_weights = nullptr;
    DeviceProbe *m_probe = nullptr;
    ModelDesigner *m_designer = nullptr;
    RunPanel *m_runPanel = nullptr;
    ChartPanel *m_charts = nullptr;
    RunsTable *m_runsTable = nullptr;
    LogView *m_log = nullptr;
    SamplePanel *m_samples = nullptr;
    QTabWidget *m_bottomTabs = nullptr; // the log | sample text
    WhyPanel *m_why = nullptr;
    QDockWidget *m_whyDock = nullptr;
    NumericsView *m_numerics = nullptr;
    QDockWidget *m_numericsDock = nullptr;
    MaxBatchDialog *m_maxBatchDialog = nullptr;

    QSplitter *m_mainSplitter = nullptr;   // left column | centre
    QSplitter *m_leftSplitter = nullptr;   // designer over run panel
    QSplitter *m_centreSplitter = nullptr; // charts over the bottom row
    QSplitter *m_bottomSplitter = nullptr; // runs table | log

    QAction *m_startAction = nullptr;
    QAction *m_compareAction = nullptr;
    QAction *m_stopAction = nullptr;
    QAction *m_whyAction = nullptr;
    QAction *m_saveWeightsAction = nullptr;
    QToolBar *m_runToolBar = nullptr; // Start, Compare, Stop, Why?: always in view
    QAction *m_logScaleAction = nullptr;
    QList<QAction *> m_xAxisActions;
    QMenu *m_recentMenu = nullptr;

    QPointer<GuideDialog> m_guide;         // Help > documentation, once opened
    QPointer<ShortcutsDialog> m_shortcuts; // Help > Keyboard shortcuts, once opened

    QLabel *m_deviceLabel = nullptr;
    QLabel *m_memoryLabel = nullptr;
    QProgressBar *m_progress = nullptr;
    QLabel *m_progressText = nullptr; // "done / total steps" beside the bar

    mixlab::DeviceInfo m_device;
    bool m_deviceKnown = false;
    bool m_confirmClose = true;
    bool m_designHiddenForDock = false; // a right-hand dock has the design column's place
    int m_widthBeforeDock = 0;          // while a dock is being opened (makeRoomForDock)
    int m_dockLayoutsPending = 0;       // makeRoomForDock's layout passes still to run
    static constexpr int k_whyDockMinimum = 420, k_whyDockPreferred = 500;
    // Two runs' heatmaps side by side, each wide enough for its binade labels and steps.
    static constexpr int k_numericsDockMinimum = 440, k_numericsDockPreferred = 760;
    int m_currentGroup = 0;
    QString m_currentFile;
    // As last saved or opened (or the first-start defaults).
    mixlab::ModelSpec m_savedModel;
    std::string m_savedSettings;
    bool m_runsChangedSinceSave = false;
};
