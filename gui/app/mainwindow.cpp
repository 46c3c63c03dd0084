// MainWindow: builds the window from its parts and wires them: RunPanel's buttons start
// jobs on the RunController, the designer's validity blocks Start, RunStore changes feed
// the status bar. Menus call the parts' own functions; nothing here touches the engine.
#include "app/mainwindow.h"

#include "app/aboutdialog.h"
#include "common/appsettings.h"
#include "files/autosave.h"
#include "charts/chartpanel.h"
#include "common/deviceprobe.h"
#include "common/enginetext.h"
#include "files/experiment.h"
#include "common/filedialogs.h"
#include "app/guidedialog.h"
#include "files/logexport.h"
#include "files/modelimport.h"
#include "runs/logview.h"
#include "runs/maxbatchdialog.h"
#include "designer/modeldesigner.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstablemodel.h"
#include "runs/runstore.h"
#include "runs/samplepanel.h"
#include "runs/weightsfolder.h"
#include "runs/checkpointfolders.h"
#include "runs/continuedialog.h"
#include "common/usermessages.h"
#include "common/wheelguard.h"
#include "analysis/runfacts_from_store.h"
#include "files/reportexport.h"
#include "files/reportgroupdialog.h"
#include "app/shortcutsdialog.h"
#include "common/shortcuttext.h"
#include "analysis/whypanel.h"
#include "numerics/numericsview.h"

#include "mixlab/checkpoint.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QTabWidget>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QItemSelectionModel>
#include <QLocale>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QUrl>

#include <algorithm>
#include <optional>

namespace {

// A writer's message plus the system's reason when the message lacks it (QSaveFile says
// "not writable", an image writer only that encoding failed).
QString withWriteReason(const QString &path, const QString &error)
{
    const QString reason = describeWriteProblem(path);
    return reason.isEmpty() || error.contains(reason)
               ? error
               : QStringLiteral("%1 (%2)").arg(error, reason);
}

// The tail of a `bool f(..., QString *error)` that fails: says why when the caller asked.
bool failWith(QString *error, const QString &text)
{
    if (error) *error = text;
    return false;
}

const QString k_seedPreset = QStringLiteral("seed-mlp");

// Designer over run panel. "splitters/left" held the split of the layout before the run
// panel kept its buttons in view, which left the property editor a few rows tall: that
// state is not restored.
constexpr const char *k_leftSplitterKey = "splitters/left2";

using Kind = mixlab::RunEvent::Kind;

} // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    setObjectName("mainWindow");
    WheelGuard::install();
    m_store = new RunStore(this);
    m_controller = new RunController(m_store, this);
    m_weights = new WeightsFolder(m_store, {}, this);
    m_controller->setWeightsFolder(m_weights->path());
    m_probe = new DeviceProbe(this);
    m_autosave = new Autosave(
        m_store,
        [this] {
            ExperimentFile file;
            file.model = m_designer->spec();
            file.config = m_runPanel->config();
            file.comparePolicies = m_runPanel->comparePolicies();
            return file;
        },
        this);

    buildParts();
    if (!m_weights->error().isEmpty())
        m_log->appendMessage(
            tr("File > Save weights is off this session: %1").arg(m_weights->error()),
            Kind::Warning);
    buildMenus();
    m_runPanel->setShortcuts(m_startAction->shortcut(), m_compareAction->shortcut(),
                             m_stopAction->shortcut());
    buildStatusBar();
    applyFirstStartDefaults();
    restoreSettings();
    markSaved();
    updateTitle();

    connect(m_probe, &DeviceProbe::probed, this, &MainWindow::setDeviceInfo);
    m_probe->start();
}

MainWindow::~MainWindow()
{
    // Join the worker before the widgets and the store it reports into go away.
    m_controller->stopAndWait();
    // Destroyed without a crash: this session's autosave has done its job.
    m_autosave->finish();
    // ~QWidget hides the children after this destructor has run, and the dock then says it
    // was hidden: its handler must not reach a MainWindow that is no longer one.
    m_whyDock->disconnect(this);
    m_numericsDock->disconnect(this);
}

void MainWindow::buildParts()
{
    m_designer = new ModelDesigner(this);
    m_designer->setObjectName("modelDesigner");
    m_runPanel = new RunPanel(this);
    m_runPanel->setObjectName("runPanel");
    m_charts = new ChartPanel(m_store, this);
    m_charts->setObjectName("chartPanel");
    m_runsTable = new RunsTable(m_store, this);
    m_runsTable->setObjectName("runsTable");
    m_log = new LogView(m_store, this);
    m_log->setObjectName("logView");
    m_samples = new SamplePanel(m_store, this);
    m_samples->setObjectName("samplePanel");
    // The log and the language models' text share the bottom right, one tab in view.
    m_bottomTabs = new QTabWidget(this);
    m_bottomTabs->setObjectName("bottomTabs");
    m_bottomTabs->setDocumentMode(true);
    m_bottomTabs->addTab(m_log, tr("Log"));
    m_bottomTabs->addTab(m_samples, tr("Sample text"));
    m_bottomTabs->setTabToolTip(1, tr("The text each language-model run wrote when it ended"));

    // The run panel scrolls its own settings on a small screen, with Start / Compare /
    // Stop and the reason they are blocked always in view below them.
    m_leftSplitter = new QSplitter(Qt::Vertical, this);
    m_leftSplitter->setObjectName("leftSplitter");
    m_leftSplitter->addWidget(m_designer);
    m_leftSplitter->addWidget(m_runPanel);
    // A smaller window takes height from both, two parts from the designer to one from
    // the run panel, whose settings scroll.
    m_leftSplitter->setStretchFactor(0, 2);
    m_leftSplitter->setStretchFactor(1, 1);

    m_bottomSplitter = new QSplitter(Qt::Horizontal, this);
    m_bottomSplitter->setObjectName("bottomSplitter");
    m_bottomSplitter->addWidget(m_runsTable);
    m_bottomSplitter->addWidget(m_bottomTabs);
    m_bottomSplitter->setStretchFactor(0, 3);
    m_bottomSplitter->setStretchFactor(1, 1);

    m_centreSplitter = new QSplitter(Qt::Vertical, this);
    m_centreSplitter->setObjectName("centreSplitter");
    m_centreSplitter->addWidget(m_charts);
    m_centreSplitter->addWidget(m_bottomSplitter);
    m_centreSplitter->setStretchFactor(0, 1);

    m_mainSplitter = new QSplitter(Qt::Horizontal, this);
    m_mainSplitter->setObjectName("mainSplitter");
    m_mainSplitter->addWidget(m_leftSplitter);
    m_mainSplitter->addWidget(m_centreSplitter);
    m_mainSplitter->setStretchFactor(1, 1);
    for (QSplitter *s : {m_leftSplitter, m_bottomSplitter, m_centreSplitter, m_mainSplitter})
        s->setChildrenCollapsible(false);
    setCentralWidget(m_mainSplitter);

    m_mainSplitter->setSizes({430, 1170});
    m_leftSplitter->setSizes(
        {640, 300}); // room for a ResNet tree and its editor; the run settings scroll
    m_centreSplitter->setSizes({690, 210});
    m_bottomSplitter->setSizes({740, 260}); // the table's ten columns need the room

    // The Why? panel docks on the right, hidden until asked for: it needs the width of a
    // sentence, which the bottom row next to the log does not have.
    m_why = new WhyPanel(m_store, this);
    m_why->setObjectName("whyPanel");
    m_why->setDesigner(m_designer);
    m_why->setRunPanel(m_runPanel);
    m_whyDock = new QDockWidget(tr("Why?"), this);
    m_whyDock->setObjectName("whyDock");
    m_whyDock->setWidget(m_why);
    m_whyDock->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea |
                               Qt::BottomDockWidgetArea);
    addDockWidget(Qt::RightDockWidgetArea, m_whyDock);
    m_whyDock->hide();
    connect(m_why, &WhyPanel::applied, this, [this](const QString &what) {
        m_log->appendMessage(tr("Why? applied %1").arg(what), Kind::Info);
    });
    // However it opens (Run > Why?, View > Why?).
    connect(m_whyDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible)
            makeRoomForDock(m_whyDock);
        else if (!m_whyDock->isVisible())
            restoreAfterDock();
    });

    // Numerics docks on the right too, hidden until asked for (View > Numerics); it follows
    // the run chosen in the runs table, and a new job's first run.
    m_numerics = new NumericsView(m_store, this);
    m_numerics->setObjectName("numericsView");
    m_numericsDock = new QDockWidget(tr("Numerics"), this);
    m_numericsDock->setObjectName("numericsDock");
    m_numericsDock->setWidget(m_numerics);
    m_numericsDock->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea |
                                    Qt::BottomDockWidgetArea);
    addDockWidget(Qt::RightDockWidgetArea, m_numericsDock);
    m_numericsDock->hide();
    connect(m_numerics, &NumericsView::message, this,
            [this](const QString &text) { m_log->appendMessage(text, Kind::Info); });
    connect(m_numericsDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible)
            makeRoomForDock(m_numericsDock);
        else if (!m_numericsDock->isVisible())
            restoreAfterDock();
    });
    connect(m_controller, &RunController::jobStarted, this, [this](int group) {
        const std::vector<int> ids = m_store->groupRuns(group);
        if (!ids.empty()) m_numerics->setRun(ids.front());
    });

    connect(m_runPanel, &RunPanel::datasetChanged, m_designer, &ModelDesigner::setInput);
    // A language model's run settings differ from an image model's (the example's
    // defaults, bptt, sampling): the run panel follows the designer's model.
    connect(m_designer, &ModelDesigner::specChanged, this, [this] {
        const bool lm = m_designer->isLanguageModel();
        m_runPanel->setLanguageModel(lm);
        m_charts->setDesignedLanguageModel(lm);
        m_runsTable->setDesignedLanguageModel(lm);
    });
    connect(m_samples, &SamplePanel::sampleArrived, this, [this] {
        showSamples();
        statusBar()->showMessage(tr("Sample text: what each language-model run wrote"), 5000);
    });
    connect(m_runPanel, &RunPanel::configChanged, this, &MainWindow::updateStartBlocked);
    connect(m_runPanel, &RunPanel::message, this,
            [this](const QString &text) { m_log->appendMessage(text, Kind::Warning); });
    connect(m_designer, &ModelDesigner::validityChanged, this, &MainWindow::updateStartBlocked);
    connect(m_designer, &ModelDesigner::specChanged, this, &MainWindow::updateStartBlocked);
    connect(m_runPanel, &RunPanel::startRequested, this, &MainWindow::startRun);
    connect(m_runPanel, &RunPanel::compareRequested, this, &MainWindow::startCompare);
    connect(m_runPanel, &RunPanel::stopRequested, this, &MainWindow::stopRuns);

    connect(m_controller, &RunController::runningChanged, this, &MainWindow::onRunningChanged);
    connect(m_controller, &RunController::jobFinished, this, &MainWindow::reportCheckpoints);
    connect(m_runsTable, &RunsTable::continueTrainingRequested, this, [this](int id) {
        if (const RunRecord *r = m_store->run(id))
            continueTrainingDialog(checkpointfolders::newest(r->checkpointFolder), r->name);
    });
    connect(m_runsTable, &RunsTable::showCheckpointsRequested, this, &MainWindow::showCheckpoints);
    connect(m_controller, &RunController::searchingChanged, this, &MainWindow::onSearchingChanged);
    connect(m_controller, &RunController::jobStarted, this, [this](int group) {
        m_currentGroup = group;
        updateStatusProgress();
    });
    connect(m_store, &RunStore::stepsAppended, this, [this](int id, int) {
        if (const RunRecord *run = m_store->run(id); run && run->group == m_currentGroup)
            updateStatusProgress();
    });
    connect(m_store, &RunStore::runChanged, this, [this](int id) {
        if (const RunRecord *run = m_store->run(id); run && run->group == m_currentGroup)
            updateStatusProgress();
        updateWhyEnabled();
    });
    connect(m_store, &RunStore::runRemoved, this, &MainWindow::updateWhyEnabled);
    connect(m_store, &RunStore::runChanged, this, [this] { updateSaveWeightsEnabled(); });
    connect(m_store, &RunStore::runRemoved, this, [this] { updateSaveWeightsEnabled(); });

    // Anything the experiment file holds marks the autosave as due; an epoch's end
    // saves at once, so a crash loses at most the epoch in flight.
    const auto changed = [this] { m_autosave->markChanged(); };
    connect(m_store, &RunStore::runAdded, this, changed);
    connect(m_store, &RunStore::runChanged, this, changed);
    connect(m_store, &RunStore::runRemoved, this, changed);
    connect(m_store, &RunStore::stepsAppended, this, changed);
    connect(m_store, &RunStore::eventsAppended, this, changed);
    connect(m_store, &RunStore::epochsAppended, this, [this] { m_autosave->epochEnded(); });
    connect(m_designer, &ModelDesigner::specChanged, this, changed);
    connect(m_runPanel, &RunPanel::configChanged, this, changed);
    connect(m_autosave, &Autosave::saveFailed, this, [this](const QString &message) {
        m_log->appendMessage(tr("Autosave failed: %1").arg(message), Kind::Warning);
    });

    // The title's modified mark: runs that changed since the last save or open, or a
    // model or settings that differ from the saved ones (undoing back clears it).
    const auto runsChanged = [this] {
        m_runsChangedSinceSave = true;
        if (!isWindowModified()) // each call retitles the window: not at every metrics batch
            setWindowModified(true);
    };
    connect(m_store, &RunStore::runAdded, this, runsChanged);
    connect(m_store, &RunStore::runChanged, this, runsChanged);
    connect(m_store, &RunStore::runRemoved, this, runsChanged);
    connect(m_store, &RunStore::stepsAppended, this, runsChanged);
    connect(m_designer, &ModelDesigner::specChanged, this, &MainWindow::updateModified);
    connect(m_runPanel, &RunPanel::configChanged, this, &MainWindow::updateModified);
    if (QItemSelectionModel *selection = m_runsTable->selectionModel()) {
        connect(selection, &QItemSelectionModel::selectionChanged, this,
                &MainWindow::updateWhyEnabled);
        connect(selection, &QItemSelectionModel::selectionChanged, this,
                [this] { updateSaveWeightsEnabled(); });
        connect(selection, &QItemSelectionModel::selectionChanged, this, [this] {
            const std::vector<int> ids = m_runsTable->selectedRunIds();
            if (!ids.empty()) m_numerics->setRun(ids.front());
        });
    }
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->setToolTipsVisible(true); // Save weights says why it is greyed out
    QAction *newAction = file->addAction(tr("&New"), this, &MainWindow::newExperiment);
    newAction->setShortcut(QKeySequence::New);
    QAction *open = file->addAction(tr("&Open..."), this, &MainWindow::openExperimentDialog);
    open->setShortcut(QKeySequence::Open);
    QAction *importModel =
        file->addAction(tr("&Import model..."), this, &MainWindow::importModelDialog);
    importModel->setObjectName("importModelAction");
    importModel->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName("recentMenu");
    rebuildRecentMenu();
    file->addSeparator();
    QAction *save = file->addAction(tr("&Save"), this, [this] { saveExperimentDialog(false); });
    save->setShortcut(QKeySequence::Save);
    QAction *saveAs =
        file->addAction(tr("Save &As..."), this, [this] { saveExperimentDialog(true); });
    saveAs->setShortcuts(
        standardKeys(QKeySequence::SaveAs, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)));
    file->addSeparator();
    // What a run leaves besides its curves: its trained tensors (docs/WEIGHTS.md).
    m_saveWeightsAction =
        file->addAction(tr("Save &weights..."), this, &MainWindow::saveWeightsDialog);
    m_saveWeightsAction->setObjectName("saveWeightsAction");
    m_saveWeightsAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W));
    updateSaveWeightsEnabled();
    file->addAction(tr("Export &chart(s)..."), this, &MainWindow::exportChartsDialog);
    file->addAction(tr("Export &logs..."), this, &MainWindow::exportLogsDialog);
    // The explain report of a group the user picks: the selected one, else the newest.
    QAction *report = file->addAction(tr("Export &report..."), this, [this] {
        ReportGroupDialog choose(*m_store, selectedFinishedGroup(), this);
        if (!choose.hasGroups()) {
            warn(tr("Export report"),
                 tr("There is no finished run or comparison to report on yet."));
            return;
        }
        if (choose.exec() != QDialog::Accepted || choose.group() == 0) return;
        const int group = choose.group();
        QString filter;
        const QString htmlFilter = tr("HTML page (*.html)");
        QString path =
            askSaveFile(this, FileKind::Report, tr("Export report of group %1").arg(group),
                        reportBaseName(*m_store, group) + QStringLiteral(".html"),
                        htmlFilter + QStringLiteral(";;") + tr("PDF document (*.pdf)"), &filter);
        if (path.isEmpty()) return;
        const QString suffix = QFileInfo(path).suffix().toLower();
        if (suffix != QLatin1String("html") && suffix != QLatin1String("htm") &&
            suffix != QLatin1String("pdf"))
            path += filter == htmlFilter ? QStringLiteral(".html") : QStringLiteral(".pdf");
        QString error;
        if (!exportReport(*m_store, group, path, &error)) {
            warn(tr("Export report"), tr("Could not export the report to %1:\n%2")
                                          .arg(path, withWriteReason(path, error)));
            return;
        }
        m_log->appendMessage(tr("Report written to %1").arg(path), Kind::Info);
    });
    report->setObjectName("exportReportAction");
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcuts(standardKeys(QKeySequence::Quit, QKeySequence(Qt::CTRL | Qt::Key_Q)));

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    // The designer's own undo/redo actions (QUndoStack::createUndoAction, standard
    // shortcuts): one action each, so the shortcut is never ambiguous.
    edit->addAction(m_designer->undoAction());
    edit->addAction(m_designer->redoAction());

    QMenu *run = menuBar()->addMenu(tr("&Run"));
    run->setToolTipsVisible(true);
    m_startAction = run->addAction(tr("&Start"), this, &MainWindow::startRun);
    m_startAction->setObjectName(QStringLiteral("startAction"));
    m_startAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_compareAction = run->addAction(tr("&Compare precisions"), this, &MainWindow::startCompare);
    m_compareAction->setObjectName(QStringLiteral("compareAction"));
    m_compareAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    m_stopAction = run->addAction(tr("S&top"), this, &MainWindow::stopRuns);
    m_stopAction->setObjectName(QStringLiteral("stopAction"));
    m_stopAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    m_stopAction->setEnabled(false);
    QAction *startWeights =
        run->addAction(tr("Start from &weights..."), this, &MainWindow::startWeightsDialog);
    startWeights->setObjectName(QStringLiteral("startWeightsAction"));
    startWeights->setToolTip(
        tr("The next run starts from a safetensors file of this model's weights"));
    startWeights->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
    QAction *resume = run->addAction(tr("C&ontinue training from checkpoint..."), this,
                                     [this] { continueTrainingDialog(); });
    resume->setObjectName(QStringLiteral("continueTrainingAction"));
    resume->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K));
    resume->setToolTip(tr("A new run that goes on from a checkpoint, with its model and "
                          "settings (the runs table's menu offers a run's own)"));
    buildCheckpointMenu(run);
    run->addSeparator();
    // With no run selected it explains the newest finished group and follows the next (as
    // --why does): a first comparison's Why? works without knowing about the selection.
    m_whyAction =
        run->addAction(tr("&Why? (explain the selected or newest comparison)"), this, [this] {
            showWhy(m_runsTable->selectedRunIds().empty() ? 0 : selectedFinishedGroup());
        });
    m_whyAction->setObjectName("whyAction");
    m_whyAction->setToolTip(tr("Explain the comparison whose runs are selected in the runs "
                               "table, or the newest finished one when none is"));
    m_whyAction->setEnabled(false);
    QAction *samples = run->addAction(tr("Sample &text"), this, &MainWindow::showSamples);
    samples->setObjectName(QStringLiteral("sampleTextAction"));
    samples->setToolTip(tr("The text each language-model run wrote when it ended"));
    buildRunToolBar();
    // One non-modal dialog, kept: it takes the designer's model and the compare settings
    // each time it is shown and started, and its last curves stay until the next search.
    QAction *maxBatch =
        run->addAction(tr("Find &largest batch..."), this, &MainWindow::showMaxBatchDialog);
    maxBatch->setObjectName("maxBatchAction");

    QMenu *view = menuBar()->addMenu(tr("&View"));
    QMenu *xAxis = view->addMenu(tr("&X axis"));
    auto *axisGroup = new QActionGroup(this);
    const std::pair<QString, ChartPanel::XAxis> axes[] = {
        {tr("&Step"), ChartPanel::XAxis::Step},
        {tr("&Epoch"), ChartPanel::XAxis::Epoch},
        {tr("&Wall time"), ChartPanel::XAxis::WallTime}};
    for (const auto &[text, axis] : axes) {
        QAction *a = xAxis->addAction(text);
        a->setCheckable(true);
        a->setData(int(axis));
        axisGroup->addAction(a);
        m_xAxisActions.append(a);
        connect(a, &QAction::triggered, this, [this, axis = axis] { m_charts->setXAxis(axis); });
    }
    m_xAxisActions.front()->setChecked(true);
    m_logScaleAction = view->addAction(tr("&Log scale"));
    m_logScaleAction->setCheckable(true);
    connect(m_logScaleAction, &QAction::toggled, m_charts, &ChartPanel::setLogScale);
    view->addSeparator();
    view->addAction(m_whyDock->toggleViewAction());
    QAction *numerics = view->addAction(tr("&Numerics"), this, [this] {
        if (m_numericsDock->isVisible())
            m_numericsDock->hide();
        else
            openNumerics();
    });
    numerics->setObjectName("numericsAction");
    numerics->setToolTip(tr("Where each layer's values sit by binade against fp16, bf16 and "
                            "fp8, for the chosen run and its compare group"));

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *guide =
        help->addAction(tr("MixLab &documentation"), this, [this] { showNonModal(m_guide); });
    guide->setObjectName("guideAction");
    guide->setShortcut(QKeySequence::HelpContents);
    // Built when opened, from the actions as they are then.
    QAction *keys = help->addAction(tr("&Keyboard shortcuts"), this, [this] {
        delete m_shortcuts;
        showNonModal(m_shortcuts,
                     ShortcutsDialog::collect(
                         this, {{tr("Layer tree (while it has the focus)"), m_designer}}));
    });
    keys->setObjectName("shortcutsAction");
    help->addSeparator();
    help->addAction(tr("&About MixLab"), this, &MainWindow::showAbout);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::buildStatusBar()
{
    m_deviceLabel = new QLabel(tr("Probing the device..."), this);
    m_deviceLabel->setObjectName("deviceStatus");
    m_memoryLabel = new QLabel(this);
    m_memoryLabel->setObjectName("memoryStatus");
    // The steps in words beside a slim bar, not on it: text on a fill is cut in two colours
    // at the fill's edge, and unreadable in styles that draw it in one.
    m_progressText = new QLabel(tr("idle"), this);
    m_progressText->setObjectName("overallProgressText");
    m_progress = new QProgressBar(this);
    m_progress->setObjectName("overallProgress");
    m_progress->setRange(0, 1000);
    m_progress->setValue(0);
    m_progress->setFixedWidth(160);
    m_progress->setFixedHeight(8);
    m_progress->setTextVisible(false);
    statusBar()->addPermanentWidget(m_deviceLabel);
    statusBar()->addPermanentWidget(m_memoryLabel);
    statusBar()->addPermanentWidget(m_progressText);
    statusBar()->addPermanentWidget(m_progress);
}

void MainWindow::applyFirstStartDefaults()
{
    // The seed MLP on a dataset that exists here, so Start works at once.
    m_designer->loadPreset(k_seedPreset);
    m_designer->setSpec(m_designer->spec()); // the preset is the starting point, not an undo step
    mixlab::RunConfig config;
    config.dataset.name =
        ""; // the run panel resolves it: Fashion-MNIST if installed, else synthetic
    // Numerics on at a cheap interval, so the Numerics dock has something to show for the
    // first run; the run settings turn it off (0) or change it.
    config.numerics_every = RunPanel::k_defaultNumericsEvery;
    m_runPanel->setConfig(config);
    m_designer->setInput(m_runPanel->datasetShape(), m_runPanel->datasetClasses());
    updateStartBlocked();
}

void MainWindow::restoreSettings()
{
    QSettings s = appSettings();
    const QByteArray geometry = s.value("window/geometry").toByteArray();
    if (geometry.isEmpty() || !restoreGeometry(geometry)) {
        // First start: large enough for the charts, small enough for the screen.
        QSize size(1600, 1000);
        if (const QScreen *screen = QGuiApplication::primaryScreen()) {
            const QSize available = screen->availableSize();
            size =
                size.boundedTo(QSize(available.width() * 95 / 100, available.height() * 92 / 100));
        }
        resize(size);
    }
    restoreState(s.value("window/state").toByteArray());
    // Why? explains a finished group, and a new session has none: restored open, it showed
    // an empty panel and (in a window too narrow for both) took the designer's place.
    m_whyDock->hide();
    m_numericsDock->hide(); // as Why?: opened on a run, and a new session has none chosen
    const std::pair<const char *, QSplitter *> splitters[] = {
        {"splitters/main", m_mainSplitter},
        {k_leftSplitterKey, m_leftSplitter},
        {"splitters/centre", m_centreSplitter},
        {"splitters/bottom", m_bottomSplitter}};
    for (const auto &[key, splitter] : splitters)
        splitter->restoreState(s.value(key).toByteArray());
    const int axis = s.value("view/xAxis", int(ChartPanel::XAxis::Step)).toInt();
    for (QAction *a : m_xAxisActions)
        if (a->data().toInt() == axis) {
            a->setChecked(true);
            m_charts->setXAxis(ChartPanel::XAxis(axis));
        }
    m_logScaleAction->setChecked(s.value("view/logScale", false).toBool());
}

void MainWindow::saveSettings() const
{
    QSettings s = appSettings();
    s.setValue("window/geometry", saveGeometry());
    s.setValue("window/state", saveState());
    s.setValue("splitters/main", m_mainSplitter->saveState());
    s.setValue(k_leftSplitterKey, m_leftSplitter->saveState());
    s.setValue("splitters/centre", m_centreSplitter->saveState());
    s.setValue("splitters/bottom", m_bottomSplitter->saveState());
    // The chart panel's own toolbar may have changed these since the menu did.
    s.setValue("view/xAxis", int(m_charts->xAxis()));
    s.setValue("view/logScale", m_charts->logScale());
}

void MainWindow::setDeviceInfo(const mixlab::DeviceInfo &info)
{
    m_device = info;
    m_deviceKnown = true;
    // The device decides defaults (the policies compared): not an edit of the user's.
    const bool wasSaved = !isModified();
    m_runPanel->setDeviceInfo(info);
    if (wasSaved) markSaved();
    const QString text = DeviceProbe::describe(info);
    m_deviceLabel->setText(text);
    m_deviceLabel->setToolTip(
        info.backend == mixlab::BackendKind::Cuda
            ? tr("fp16 tensor cores: %1; bf16: %2; TF32: %3")
                  .arg(info.tensor_cores ? tr("yes") : tr("no"), info.bf16 ? tr("yes") : tr("no"),
                       info.tf32 ? tr("yes") : tr("no"))
            : tr("Runs use the CPU reference backend (fp16, bf16 and fp8 rounding emulated)"));
    m_log->appendMessage(tr("Device: %1").arg(text), Kind::Info);
    updateStartBlocked();
}

void MainWindow::updateStartBlocked()
{
    QString reason;
    if (!m_designer->isValid()) {
        reason = tr("The model is not valid: %1").arg(m_designer->validationMessage());
    } else if (const QString mismatch = m_designer->dataMismatch(); !mismatch.isEmpty()) {
        reason = mismatch;
    } else {
        try {
            mixlab::validate_run_config(m_runPanel->config());
        } catch (const mixlab::Error &e) {
            reason = tr("The run settings are not valid: %1").arg(QString::fromStdString(e.what()));
        }
    }
    m_runPanel->setStartBlocked(reason);
    // One job at a time on the worker: a largest-batch search holds Start and Compare too.
    const bool idle = !m_controller->isBusy();
    const bool searching = m_controller->isSearching();
    m_startAction->setEnabled(idle && reason.isEmpty());
    m_compareAction->setEnabled(idle && reason.isEmpty() &&
                                m_runPanel->comparePolicies().size() >= 2);
    m_stopAction->setEnabled(!idle);
    // The toolbar's buttons say why they are greyed out, as the run panel's line does
    // (which Why? can cover when it takes the design column's place).
    const QString searchTip = tr("Find largest batch is searching: stop it or let it end first");
    const QString startTip = !reason.isEmpty() ? reason
                             : searching       ? searchTip
                                               : tr("Train one run with the run panel's settings");
    const QString compareTip = !reason.isEmpty() ? reason
                               : searching
                                   ? searchTip
                                   : tr("Train the checked policies side by side, in lockstep");
    m_startAction->setToolTip(withShortcut(startTip, m_startAction->shortcut()));
    m_compareAction->setToolTip(withShortcut(compareTip, m_compareAction->shortcut()));
    m_stopAction->setToolTip(withShortcut(searching ? tr("Stop the largest-batch search")
                                                    : tr("Stop the runs in progress"),
                                          m_stopAction->shortcut()));
}

// Start, Compare, Stop and Why? above everything else, so they stay in view whatever the
// docks and splitters hide (the run panel's own buttons sit in its column).
void MainWindow::buildRunToolBar()
{
    QToolBar *bar = addToolBar(tr("Run"));
    bar->setObjectName(QStringLiteral("runToolBar"));
    bar->setMovable(false);
    bar->setFloatable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    bar->addAction(m_startAction);
    bar->addAction(m_compareAction);
    bar->addAction(m_stopAction);
    bar->addSeparator();
    bar->addAction(m_whyAction);
    m_whyAction->setIconText(tr("Why?"));
    m_runToolBar = bar;
}

void MainWindow::startRun()
{
    if (m_controller->isBusy() || m_runPanel->isStartBlocked()) return;
    armCheckpoints();
    if (m_controller->start(m_designer->spec(), {m_runPanel->config()}, m_runPanel->textSampling(),
                            m_runPanel->startWeights()) != 0)
        m_runPanel->setStartWeights({}); // the next run's, once: the log keeps which file
}

void MainWindow::startCompare()
{
    if (m_controller->isBusy() || m_runPanel->isStartBlocked()) return;
    const std::vector<mixlab::Policy> policies = m_runPanel->comparePolicies();
    if (policies.size() < 2) return;
    armCheckpoints();
    mixlab::RunConfig base = m_runPanel->config();
    // with_policy keeps it for the mixed_bf16 run only.
    if (m_runPanel->splitMastersChosen())
        base.optimizer.master_weights = mixlab::MasterWeights::Bf16Split;
    std::vector<mixlab::RunConfig> runs;
    for (mixlab::Policy p : policies) runs.push_back(mixlab::with_policy(base, p));
    if (m_controller->start(m_designer->spec(), runs, m_runPanel->textSampling(),
                            m_runPanel->startWeights()) != 0)
        m_runPanel->setStartWeights({});
}

void MainWindow::showSamples() { m_bottomTabs->setCurrentWidget(m_samples); }

void MainWindow::stopRuns()
{
    if (m_controller->isRunning()) {
        m_controller->stop();
        statusBar()->showMessage(tr("Stopping after the step in flight..."), 3000);
    } else if (m_controller->isSearching() && m_maxBatchDialog) {
        m_maxBatchDialog->stop(); // through the dialog, which shows that it is stopping
        statusBar()->showMessage(tr("Stopping the search after the trial in flight..."), 3000);
    }
}

MaxBatchDialog *MainWindow::showMaxBatchDialog()
{
    if (!m_maxBatchDialog) {
        m_maxBatchDialog = new MaxBatchDialog(m_controller, this);
        m_maxBatchDialog->setJobSource([this] {
            MaxBatchJob job;
            job.model = m_designer->spec();
            job.config = m_runPanel->config();
            job.policies = m_runPanel->comparePolicies();
            job.device = m_device;
            job.blocked = m_runPanel->startBlockReason();
            return job;
        });
    }
    m_maxBatchDialog->show();
    m_maxBatchDialog->raise();
    m_maxBatchDialog->activateWindow();
    return m_maxBatchDialog;
}

void MainWindow::onSearchingChanged(bool searching)
{
    // The run panel's Start and Compare wait for the search; its Stop stops it.
    m_runPanel->setRunning(searching);
    updateStartBlocked();
}

void MainWindow::onRunningChanged(bool running)
{
    m_runPanel->setRunning(running);
    updateStartBlocked();
    updateStatusProgress();
    if (!running) statusBar()->showMessage(tr("Job finished"), 5000);
}

int MainWindow::selectedFinishedGroup() const
{
    int group = 0;
    for (int id : m_runsTable->selectedRunIds()) {
        const RunRecord *run = m_store->run(id);
        if (!run || (group != 0 && run->group != group)) return 0;
        group = run->group;
    }
    return groupFinished(*m_store, group) ? group : 0;
}

void MainWindow::updateWhyEnabled()
{
    if (!m_whyAction) return;
    m_whyAction->setEnabled(m_runsTable->selectedRunIds().empty()
                                ? latestFinishedGroup(*m_store) != 0
                                : selectedFinishedGroup() != 0);
}

int MainWindow::weightsRun(QString *why) const
{
    const auto none = [why](const QString &text) {
        if (why) *why = text;
        return 0;
    };
    const std::vector<int> selected = m_runsTable->selectedRunIds();
    for (int id : selected)
        if (const RunRecord *r = m_store->run(id); r && !r->weightsPath.isEmpty()) return id;
    if (!selected.empty()) {
        const RunRecord *r = m_store->run(selected.front());
        if (r && !r->weightsFailure.isEmpty())
            return none(
                tr("The weights of %1 could not be kept: %2").arg(r->name, r->weightsFailure));
        return none(tr("The selected run has no weights: only runs trained in this session "
                       "that finished or were stopped keep theirs (not failed runs, nor those "
                       "of an opened experiment)"));
    }
    const std::vector<int> all = m_store->runIds();
    for (auto it = all.rbegin(); it != all.rend(); ++it)
        if (const RunRecord *r = m_store->run(*it); r && !r->weightsPath.isEmpty()) return *it;
    return none(m_weights->path().isEmpty()
                    ? tr("Weights cannot be kept this session: %1").arg(m_weights->error())
                    : tr("No run has trained weights yet: train a run; when it finishes or is "
                         "stopped, its weights can be saved"));
}

void MainWindow::updateSaveWeightsEnabled()
{
    if (!m_saveWeightsAction) return;
    QString why;
    const int id = weightsRun(&why);
    m_saveWeightsAction->setEnabled(id != 0);
    const RunRecord *r = m_store->run(id);
    m_saveWeightsAction->setToolTip(
        r ? tr("Write the trained weights of %1 as a safetensors file (PyTorch's state_dict "
               "names; docs/WEIGHTS.md)")
                .arg(r->name)
          : why);
}

bool MainWindow::saveRunWeights(int runId, const QString &path, QString *error)
{
    const RunRecord *r = m_store->run(runId);
    if (!r || r->weightsPath.isEmpty()) {
        if (error) *error = tr("run #%1 has no weights to save").arg(runId);
        return false;
    }
    if (!WeightsFolder::copyWeights(r->weightsPath, path, error)) return false;
    m_log->appendMessage(tr("Weights of %1 written to %2").arg(r->name, path), Kind::Info);
    return true;
}

void MainWindow::saveWeightsDialog()
{
    QString why;
    const int id = weightsRun(&why);
    if (id == 0) {
        warn(tr("Save weights"), why);
        return;
    }
    const RunRecord *r = m_store->run(id);
    QString path = askSaveFile(this, FileKind::Weights, tr("Save the weights of %1").arg(r->name),
                               fileStem(r->name) + QStringLiteral(".safetensors"),
                               tr("safetensors (*.safetensors);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!saveRunWeights(id, path, &error))
        warn(tr("Save weights"),
             tr("Could not save the weights to %1:\n%2").arg(path, withWriteReason(path, error)));
}

void MainWindow::startWeightsDialog()
{
    const QString path = askOpenFile(this, FileKind::Weights, tr("Start from weights"),
                                     tr("safetensors (*.safetensors);;All files (*)"));
    if (path.isEmpty()) return;
    if (!QFileInfo(path).isFile()) {
        warn(tr("Start from weights"), tr("Could not use %1:\nit is not a file").arg(path));
        return;
    }
    // Checked against the model by the engine when the run is set up (before its first
    // step): the designer's model may still change until Start.
    m_runPanel->setStartWeights(path);
    m_log->appendMessage(tr("The next run starts from the weights in %1").arg(path), Kind::Info);
}

void MainWindow::buildCheckpointMenu(QMenu *run)
{
    QMenu *menu = run->addMenu(tr("Chec&kpoints at epoch ends"));
    menu->setObjectName(QStringLiteral("checkpointMenu"));
    menu->setToolTipsVisible(true);
    auto *group = new QActionGroup(menu);
    const int current = checkpointfolders::keepSetting();
    std::vector<int> choices{0, 1, 2, 5, 10};
    if (std::find(choices.begin(), choices.end(), current) == choices.end())
        choices.push_back(current); // a value set elsewhere stays choosable
    for (int keep : choices) {
        QAction *a = menu->addAction(
            keep == 0 ? tr("Off") : tr("Save one at each epoch end, keep the last %1").arg(keep));
        a->setObjectName(QStringLiteral("checkpointKeep%1").arg(keep));
        a->setCheckable(true);
        a->setChecked(keep == current);
        a->setToolTip(keep == 0 ? tr("Runs write no checkpoints: they cannot be continued")
                                : tr("Each run writes a checkpoint into its own folder under "
                                     "%1 (the seed MLP's on Fashion-MNIST: about 43 MB each)")
                                      .arg(checkpointfolders::rootFolder()));
        group->addAction(a);
        connect(a, &QAction::triggered, this, [keep] { checkpointfolders::setKeepSetting(keep); });
    }
}

void MainWindow::armCheckpoints()
{
    m_controller->setCheckpoints(checkpointfolders::experimentFolder(m_currentFile),
                                 checkpointfolders::keepSetting());
}

void MainWindow::reportCheckpoints(int group)
{
    for (int id : m_store->groupRuns(group)) {
        const RunRecord *r = m_store->run(id);
        if (!r) continue;
        // Also for a run left without a folder (none could be made, or the one it wrote
        // nothing into was removed at the job's end).
        if (!r->checkpointFailure.isEmpty()) {
            const QString text = tr("A checkpoint of %1 could not be written (the run went on): "
                                    "%2")
                                     .arg(r->name, r->checkpointFailure);
            m_log->appendMessage(text, Kind::Warning);
            statusBar()->showMessage(text, 15000);
        }
        if (!r->checkpointFolder.isEmpty() && r->status != RunRecord::Status::Failed)
            m_log->appendMessage(
                tr("Checkpoints of %1: %2")
                    .arg(r->name, checkpointfolders::describe(r->checkpointFolder)),
                Kind::Info);
    }
}

bool MainWindow::continueTraining(const QString &checkpoint, int totalEpochs, QString *error,
                                  const QString &source)
{
    if (m_controller->isBusy())
        return failWith(error, tr("a run or a largest-batch search is in progress; stop it first"));
    mixlab::CheckpointHeader h;
    try {
        h = mixlab::read_checkpoint_header(QFile::encodeName(checkpoint).toStdString());
    } catch (const std::exception &e) {
        return failWith(error, QString::fromUtf8(e.what()));
    }
    return continueFromHeader(checkpoint, h, totalEpochs, error, source);
}

bool MainWindow::continueFromHeader(const QString &checkpoint, const mixlab::CheckpointHeader &h,
                                    int totalEpochs, QString *error, const QString &source)
{
    const std::int64_t done = ContinueDialog::epochsDone(h);
    if (totalEpochs < ContinueDialog::minimumTotal(h))
        return failWith(error, tr("the checkpoint is at step %1, after epoch %2: train to a later "
                                  "epoch than %2, not %3")
                                   .arg(h.step)
                                   .arg(done)
                                   .arg(totalEpochs));
    mixlab::RunConfig config = h.config;
    config.epochs = totalEpochs;
    config.steps = 0; // the new end is an epoch's
    const bool atEpochEnd = h.steps_per_epoch > 0 && h.step % h.steps_per_epoch == 0;
    const QString from = atEpochEnd
                             ? tr("continued after epoch %1").arg(done)
                             : tr("continued from step %1 (epoch %2)").arg(h.step).arg(done + 1);
    const QString what =
        !source.isEmpty() ? source
                          : tr("%1 %2 (%3)")
                                .arg(QString::fromStdString(h.model.name),
                                     policyText(config.policy), QFileInfo(checkpoint).fileName());
    armCheckpoints();
    // The controller refuses when busy (the callers asked before reading the file; a dialog
    // in between cannot start a job, but the controller's word is the last).
    if (m_controller->continueFrom(checkpoint, h.model, config, tr("%1, %2").arg(what, from)) == 0)
        return failWith(error, tr("a run or a largest-batch search is in progress; stop it first"));
    m_log->appendMessage(tr("Continuing %1 from %2 (step %3) to epoch %4")
                             .arg(what, checkpoint)
                             .arg(h.step)
                             .arg(totalEpochs),
                         Kind::Info);
    return true;
}

void MainWindow::continueTrainingDialog(const QString &given, const QString &source)
{
    const QString title = tr("Continue training");
    const QString path =
        !given.isEmpty()
            ? given
            : askOpenFile(this, FileKind::Weights, tr("Continue training from checkpoint"),
                          tr("MixLab checkpoints (*.safetensors);;All files (*)"));
    if (path.isEmpty()) return;
    const auto refuse = [&](const QString &why) {
        warn(title, tr("Could not continue training from %1:\n\n%2").arg(path, why));
    };
    if (m_controller->isBusy()) {
        refuse(tr("a run or a largest-batch search is in progress; stop it first"));
        return;
    }
    mixlab::CheckpointHeader h;
    try {
        h = mixlab::read_checkpoint_header(QFile::encodeName(path).toStdString());
    } catch (const std::exception &e) {
        refuse(QString::fromUtf8(e.what()));
        return;
    }
    ContinueDialog ask(path, h, this);
    const int total = ask.ask();
    if (total <= 0) return;
    QString error;
    if (!continueFromHeader(path, h, total, &error, source)) refuse(error);
}

void MainWindow::showCheckpoints(int runId)
{
    const RunRecord *r = m_store->run(runId);
    if (!r || r->checkpointFolder.isEmpty()) return;
    QString text = checkpointfolders::describe(r->checkpointFolder);
    if (!r->checkpointFailure.isEmpty())
        text += tr("\n\nThe last checkpoint that failed: %1").arg(r->checkpointFailure);
    statusBar()->showMessage(checkpointfolders::describe(r->checkpointFolder), 15000);
    if (askUser(this, tr("Checkpoints of %1").arg(r->name), text,
                {tr("Open folder"), tr("Close")}) == 0)
        QDesktopServices::openUrl(QUrl::fromLocalFile(r->checkpointFolder));
}

void MainWindow::showWhy(int group)
{
    m_why->showGroup(group);
    // Before the dock shows: a window too narrow for the dock and the design column would
    // otherwise grow past the screen to hold both.
    makeRoomForDock(m_whyDock);
    m_whyDock->show();
    m_whyDock->raise();
}

void MainWindow::openNumerics()
{
    const std::vector<int> selected = m_runsTable->selectedRunIds();
    const std::vector<int> all = m_store->runIds();
    if (!selected.empty())
        m_numerics->setRun(selected.front());
    else if (m_numerics->currentRun() == 0 && !all.empty())
        m_numerics->setRun(m_store->groupRuns(m_store->run(all.back())->group).front());
    makeRoomForDock(m_numericsDock);
    m_numericsDock->show();
    m_numericsDock->raise();
}

// The dock's width comes out of the centre, whose charts need two columns and whose
// bottom row needs the runs table's every column and a log wide enough to read. When the
// window holds the design column, that centre and the dock, all three stay; otherwise the
// dock takes the design column's place until it closes (a squeezed centre would scroll
// sideways, and a squeezed log wraps a word a line).
void MainWindow::makeRoomForDock(QDockWidget *which)
{
    const bool numerics = which == m_numericsDock;
    const int minimum = numerics ? k_numericsDockMinimum : k_whyDockMinimum;
    const int preferred = numerics ? k_numericsDockPreferred : k_whyDockPreferred;
    constexpr int k_readableLog = 240;
    const int handle = m_mainSplitter->handleWidth();
    const int charts = m_charts->twoColumnWidth();
    const int bottom = m_runsTable->sizeHint().width() + handle + k_readableLog;
    const int centre = std::max(charts, bottom);
    // The window's width before the dock opened (a dock opened twice, by the menu and by
    // its visibility, keeps the first).
    if (m_widthBeforeDock == 0) m_widthBeforeDock = width();
    if (!m_designHiddenForDock && !m_leftSplitter->isHidden()) {
        const int design = m_leftSplitter->minimumSizeHint().width();
        if (std::min(width() - design - centre - 2 * handle, preferred) < minimum) {
            m_leftSplitter->hide();
            m_designHiddenForDock = true;
            statusBar()->showMessage(tr("%1 has the designer's place while it is open; close it "
                                        "to bring the designer back")
                                         .arg(which->windowTitle()),
                                     10000);
        }
    }
    // Once the layout has taken in the hidden column: until then the centre's minimum
    // still counts it, and showing the dock grows the window to that stale minimum (1280
    // -> 1331 pixels with Numerics), so the window first goes back to its width. Then the
    // dock gets what the window leaves beside the centre (and the design column where it
    // shows), at most preferred: more would push the window past the screen.
    ++m_dockLayoutsPending;
    QTimer::singleShot(0, this, [this, which, minimum, preferred, centre, handle] {
        // The layout's minimum must drop before the window can shrink back to it (the
        // window keeps its layout's last minimum as its own).
        layout()->activate();
        int target = width();
        if (m_widthBeforeDock > 0 && target > m_widthBeforeDock) {
            target = std::max(m_widthBeforeDock, minimumSizeHint().width());
            resize(target, height());
        }
        if (--m_dockLayoutsPending == 0) m_widthBeforeDock = 0;
        const int design =
            m_leftSplitter->isHidden() ? 0 : m_leftSplitter->minimumSizeHint().width();
        const int dock = std::clamp(target - design - centre - 2 * handle, minimum, preferred);
        resizeDocks({which}, {dock}, Qt::Horizontal);
    });
}

void MainWindow::restoreAfterDock()
{
    // The column comes back when no right-hand dock is open any more.
    if (!m_designHiddenForDock || m_whyDock->isVisible() || m_numericsDock->isVisible()) return;
    m_designHiddenForDock = false;
    m_leftSplitter->show();
}

void MainWindow::updateStatusProgress()
{
    const std::vector<int> ids = m_store->groupRuns(m_currentGroup);
    if (m_currentGroup == 0 || ids.empty()) {
        m_memoryLabel->clear();
        return;
    }
    qint64 done = 0, total = 0;
    double memoryMB = 0;
    for (int id : ids) {
        const RunRecord *run = m_store->run(id);
        if (!run) continue;
        const qint64 runDone = RunsTableModel::stepsDone(*run);
        done += runDone;
        total += std::max<qint64>(run->totalSteps, runDone);
        memoryMB += run->deviceMemoryMB;
    }
    m_memoryLabel->setText(memoryMB > 0 ? tr("Run memory: %1 MB").arg(memoryMB, 0, 'f', 1)
                                        : QString());
    m_memoryLabel->setToolTip(
        tr("Device memory the running job allocated (parameters, activations, "
           "gradients, optimizer state)"));
    const bool running = m_controller->isRunning();
    m_progress->setValue(total > 0 ? int(1000 * done / total) : 0);
    m_progressText->setText(running || total > 0 ? tr("%1 / %2 steps").arg(done).arg(total)
                                                 : tr("idle"));
}

void MainWindow::updateTitle()
{
    const QString name =
        m_currentFile.isEmpty() ? tr("untitled") : QFileInfo(m_currentFile).fileName();
    // "[*]" is where Qt shows the modified mark (setWindowModified).
    setWindowTitle(tr("%1[*] \u2014 MixLab").arg(name));
}

std::string MainWindow::settingsSnapshot() const
{
    std::string text = mixlab::run_config_to_json(m_runPanel->config());
    for (mixlab::Policy p : m_runPanel->comparePolicies())
        text += ' ' + std::string(mixlab::policy_name(p));
    return text;
}

bool MainWindow::isModified() const
{
    return m_runsChangedSinceSave || m_designer->spec() != m_savedModel ||
           settingsSnapshot() != m_savedSettings;
}

void MainWindow::markSaved()
{
    m_savedModel = m_designer->spec();
    m_savedSettings = settingsSnapshot();
    m_runsChangedSinceSave = false;
    m_designer->undoStack()->setClean();
    updateModified();
}

void MainWindow::updateModified()
{
    if (const bool modified = isModified(); modified != isWindowModified())
        setWindowModified(modified);
}

bool MainWindow::maybeSaveChanges(const QString &title)
{
    if (!isModified()) return true;
    const QString name = m_currentFile.isEmpty() ? tr("the untitled experiment")
                                                 : QFileInfo(m_currentFile).fileName();
    const int choice =
        askUser(this, title,
                tr("Save the changes to %1?\n\nThe model, the settings or the runs changed "
                   "since it was last saved; without saving, the changes are lost.")
                    .arg(name),
                {tr("Save"), tr("Discard"), tr("Cancel")});
    if (choice == 0)
        return saveExperimentDialog(false); // a failed or cancelled save keeps everything
    return choice == 1;
}

QString MainWindow::suggestedName(const QString &suffix) const
{
    return fileStem(QString::fromStdString(m_designer->spec().name)) + suffix;
}

QStringList MainWindow::recentFiles() const
{
    return appSettings().value("recentFiles").toStringList();
}

void MainWindow::addRecentFile(const QString &path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    QStringList files = recentFiles();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > k_maxRecentFiles) files.removeLast();
    appSettings().setValue("recentFiles", files);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList files = recentFiles();
    for (const QString &path : files) {
        QAction *a = m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] {
            if (!maybeSaveChanges(tr("Open experiment"))) return;
            QString error, warning;
            if (openExperiment(path, &error, &warning)) {
                if (!warning.isEmpty()) warn(tr("Open experiment"), warning);
                return;
            }
            if (!QFileInfo::exists(path)) { // moved or deleted: drop it from the list
                QStringList files = recentFiles();
                files.removeAll(path);
                appSettings().setValue("recentFiles", files);
                rebuildRecentMenu();
            }
            warn(tr("Open experiment"), tr("Could not open %1:\n%2").arg(path, error));
        });
        a->setToolTip(path);
        a->setStatusTip(path);
    }
    if (files.isEmpty()) {
        m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
        return;
    }
    m_recentMenu->addSeparator();
    m_recentMenu->addAction(tr("Clear list"), this, [this] {
        appSettings().remove("recentFiles");
        rebuildRecentMenu();
    });
}

void MainWindow::newExperiment()
{
    if (m_controller->isRunning()) {
        warn(tr("New experiment"),
             tr("A run is in progress. Stop it before starting a new experiment."));
        return;
    }
    if (!maybeSaveChanges(tr("New experiment"))) return;
    m_store->clear();
    m_currentGroup = 0;
    m_currentFile.clear();
    applyFirstStartDefaults();
    m_runPanel->setDeviceInfo(m_device);
    updateStatusProgress();
    markSaved();
    updateTitle();
}

bool MainWindow::openExperiment(const QString &path, QString *error, QString *warning)
{
    if (!applyExperiment(path, error, warning)) return false;
    m_currentFile = path;
    addRecentFile(path);
    markSaved();
    updateTitle();
    m_log->appendMessage(tr("Opened %1 (%2 runs)").arg(path).arg(m_store->runIds().size()),
                         Kind::Info);
    return true;
}

bool MainWindow::applyExperiment(const QString &path, QString *error, QString *warning)
{
    if (m_controller->isRunning()) {
        if (error) *error = tr("A run is in progress. Stop it before opening %1.").arg(path);
        return false;
    }
    if (QFileInfo(path).isDir()) {
        // QFile opens a folder without complaint and reads nothing from it.
        if (error) *error = tr("'%1' is a folder, not an experiment file").arg(path);
        return false;
    }
    ExperimentFile file;
    if (!loadExperiment(path, &file, m_store, error)) return false;
    m_designer->setSpec(file.model);
    // The run panel says (through `message`) when the saved dataset cannot be used here.
    QStringList notes;
    const QMetaObject::Connection note = connect(m_runPanel, &RunPanel::message, this,
                                                 [&notes](const QString &text) { notes << text; });
    m_runPanel->setConfig(file.config);
    disconnect(note);
    m_runPanel->setComparePolicies(file.comparePolicies);
    m_currentGroup = 0;
    updateStatusProgress();
    if (warning)
        *warning = notes.isEmpty()
                       ? QString()
                       : tr("%1 was opened, but:\n%2").arg(path, notes.join(QLatin1Char('\n')));
    return true;
}

bool MainWindow::importModel(const QString &path, QString *error)
{
    const std::optional<ImportedModel> model = readModelFile(path, error);
    return model && applyImportedModel(*model, path, error);
}

bool MainWindow::applyImportedModel(const ImportedModel &model, const QString &path, QString *error)
{
    if (model.keras) {
        // A Keras model is a new experiment (File > New with this model and its policy):
        // the runs of the current one trained another model. The run settings stay (the
        // data the user chose, `mixlab --dataset ... --model`'s options), the policy
        // becomes the model's.
        if (m_controller->isBusy())
            return failWith(error, tr("a run or a largest-batch search is in progress; stop it "
                                      "first (importing a Keras model starts a new experiment)"));
        m_store->clear();
        m_currentGroup = 0;
        m_currentFile.clear();
        updateStatusProgress();
        markSaved(); // the new experiment starts from what is shown...
        // ...and the imported model and policy are its first, unsaved, changes. No dataset
        // check here: the designer says when the chosen data does not fit the model (its
        // input shape is in the notice), and Start waits for the right one.
        m_designer->setSpec(model.spec);
        mixlab::RunConfig config = m_runPanel->config();
        config.policy = model.policy;
        m_runPanel->setConfig(config);
        updateStartBlocked();
        updateModified();
        updateTitle();
    } else {
        try {
            // The designer would take it and only block Start; checking here keeps the
            // current model when the file does not build. A language model with images
            // chosen (or the reverse) is checked on the data it needs: the designer says
            // what to choose.
            const ModelDesigner::GraphData data = ModelDesigner::graphDataFor(
                model.spec, m_runPanel->datasetShape(), m_runPanel->datasetClasses());
            mixlab::build_graph(model.spec, data.input, data.classes);
        } catch (const std::exception &e) {
            return failWith(error, tr("the model in %1 does not build for the chosen dataset: %2")
                                       .arg(path, QString::fromUtf8(e.what())));
        }
        m_designer->setSpec(model.spec);
    }
    const QString summary = importSummary(model, path);
    QString hint;
    if (model.keras && !model.inputShape.empty() &&
        mixlab::Shape{model.inputShape} != m_runPanel->datasetShape())
        hint = tr("; the chosen data has %1 samples, Keras trained it on %2: choose such data "
                  "to train it as in Keras")
                   .arg(QString::fromStdString(m_runPanel->datasetShape().to_string()),
                        QString::fromStdString(mixlab::Shape{model.inputShape}.to_string()));
    m_log->appendMessage(summary + hint, Kind::Info);
    statusBar()->showMessage(summary, 15000);
    return true;
}

void MainWindow::importModelDialog()
{
    const QString path = askOpenFile(
        this, FileKind::Model, tr("Import model"),
        tr("Models: MixLab, Keras JSON or .keras (*.json *.keras);;MixLab models (*.json);;Keras "
           "models (*.json *.keras);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    // Read and converted whole before anything is asked or changed: a refused file leaves
    // the experiment as it was.
    const std::optional<ImportedModel> model = readModelFile(path, &error);
    if (!model) {
        warn(tr("Import model"), tr("Could not import the model %1:\n\n%2").arg(path, error));
        return;
    }
    if (model->keras && m_controller->isBusy()) {
        warn(tr("Import model"), tr("Could not import the model %1:\na run or a largest-batch "
                                    "search is in progress; stop it first (importing a Keras "
                                    "model starts a new experiment)")
                                     .arg(path));
        return;
    }
    if (model->keras && !maybeSaveChanges(tr("Import model"))) return;
    if (!applyImportedModel(*model, path, &error))
        warn(tr("Import model"), tr("Could not import the model %1:\n%2").arg(path, error));
}

void MainWindow::openFromCommandLine(const QString &path)
{
    QString error, warning;
    if (!openExperiment(path, &error, &warning))
        warn(tr("Open experiment"), tr("Could not open %1:\n%2").arg(path, error));
    else if (!warning.isEmpty())
        warn(tr("Open experiment"), warning);
}

bool MainWindow::startAutosave(const QString &dir, QString *error)
{
    return m_autosave->start(dir, error);
}

bool MainWindow::offerRecovery(const QString &dir)
{
    for (const Autosave::Orphan &orphan : Autosave::findOrphans(dir)) {
        // Read it whole first: a damaged file is reported, not offered.
        RunStore probe;
        ExperimentFile file;
        QString error;
        if (!loadExperiment(orphan.path, &file, &probe, &error)) {
            const QString moved = Autosave::moveAside(orphan.path);
            warn(tr("Recover experiment"),
                 tr("An autosaved experiment could not be read and was not recovered:\n%1\n\n%2")
                     .arg(error, moved.isEmpty() ? tr("It could not be moved aside either.")
                                                 : tr("It was moved to %1.").arg(moved)));
            continue;
        }
        const QString when = QLocale().toString(orphan.saved, QLocale::ShortFormat);
        const int runs = int(probe.runIds().size());
        const int choice =
            askUser(this, tr("Recover experiment"),
                    tr("Recover the experiment MixLab was working on when it stopped "
                       "unexpectedly (%1)?\n\nIt holds %n run(s).",
                       nullptr, runs)
                        .arg(when),
                    {tr("Recover"), tr("Discard")});
        if (choice != 0) {
            Autosave::removeOrphan(orphan.path);
            continue;
        }
        QString warning;
        if (!applyExperiment(orphan.path, &error, &warning)) {
            warn(tr("Recover experiment"), tr("Could not recover %1:\n%2").arg(orphan.path, error));
            return false;
        }
        m_currentFile.clear(); // the user saves it where they choose
        updateTitle();
        m_log->appendMessage(
            tr("Recovered the experiment autosaved %1 (%2 runs)").arg(when).arg(runs), Kind::Info);
        if (!warning.isEmpty()) warn(tr("Recover experiment"), warning);
        // Ours before theirs is removed: a second crash now still leaves a copy.
        if (!m_autosave->isActive() || m_autosave->saveNow()) Autosave::removeOrphan(orphan.path);
        return true;
    }
    return false;
}

bool MainWindow::saveExperimentAs(const QString &path, QString *error)
{
    ExperimentFile file;
    file.model = m_designer->spec();
    file.config = m_runPanel->config();
    file.comparePolicies = m_runPanel->comparePolicies();
    if (!saveExperiment(path, file, *m_store, error)) return false;
    m_currentFile = path;
    addRecentFile(path);
    markSaved();
    updateTitle();
    m_log->appendMessage(tr("Saved %1").arg(path), Kind::Info);
    return true;
}

void MainWindow::openExperimentDialog()
{
    if (!maybeSaveChanges(tr("Open experiment"))) return;
    const QString path =
        askOpenFile(this, FileKind::Experiment, tr("Open experiment"),
                    tr("MixLab experiments (*.mixlab.json *.json);;All files (*)"));
    if (path.isEmpty()) return;
    QString error, warning;
    if (!openExperiment(path, &error, &warning))
        warn(tr("Open experiment"), tr("Could not open %1:\n%2").arg(path, error));
    else if (!warning.isEmpty())
        warn(tr("Open experiment"), warning);
}

bool MainWindow::saveExperimentDialog(bool askPath)
{
    QString path = m_currentFile;
    if (askPath || path.isEmpty()) {
        path = askSaveFile(this, FileKind::Experiment, tr("Save experiment"),
                           m_currentFile.isEmpty() ? suggestedName(QStringLiteral(".mixlab.json"))
                                                   : m_currentFile,
                           tr("MixLab experiments (*.mixlab.json)"));
        if (path.isEmpty()) return false;
        if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive))
            path += QStringLiteral(".mixlab.json");
    }
    QString error;
    if (!saveExperimentAs(path, &error)) {
        warn(tr("Save experiment"),
             tr("Could not save %1:\n%2").arg(path, withWriteReason(path, error)));
        return false;
    }
    return true;
}

void MainWindow::exportChartsDialog()
{
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Export chart(s)"));
    auto *chart = new QComboBox(&dialog);
    chart->addItem(tr("All charts"), QStringLiteral("all"));
    for (const QString &name : m_charts->chartNames()) chart->addItem(name, name);
    auto *format = new QComboBox(&dialog);
    format->addItem(tr("PNG image"), QStringLiteral("png"));
    format->addItem(tr("SVG drawing"), QStringLiteral("svg"));
    format->addItem(tr("PDF document"), QStringLiteral("pdf"));
    auto *width = new QSpinBox(&dialog);
    width->setRange(200, 10000);
    width->setValue(1600);
    width->setSuffix(tr(" px"));
    auto *height = new QSpinBox(&dialog);
    height->setRange(150, 10000);
    height->setValue(1000);
    height->setSuffix(tr(" px"));
    connect(format, &QComboBox::currentIndexChanged, &dialog, [format, width, height] {
        const bool png = format->currentData().toString() == QLatin1String("png");
        width->setEnabled(png);
        height->setEnabled(png);
    });
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto *form = new QFormLayout(&dialog);
    form->addRow(tr("Chart"), chart);
    form->addRow(tr("Format"), format);
    form->addRow(tr("PNG width"), width);
    form->addRow(tr("PNG height"), height);
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) return;

    const QString suffix = format->currentData().toString();
    const QString name = chart->currentData().toString();
    QString path = askSaveFile(this, FileKind::Chart, tr("Export chart(s)"),
                               suggestedName(QStringLiteral("-%1.%2").arg(fileStem(name), suffix)),
                               tr("%1 (*.%2)").arg(format->currentText(), suffix));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().compare(suffix, Qt::CaseInsensitive) != 0)
        path += QLatin1Char('.') + suffix;
    QString error;
    if (!m_charts->exportChart(name, path, QSize(width->value(), height->value()), &error)) {
        warn(tr("Export chart(s)"),
             tr("Could not export to %1:\n%2").arg(path, withWriteReason(path, error)));
        return;
    }
    m_log->appendMessage(tr("Exported %1 to %2").arg(chart->currentText(), path), Kind::Info);
}

void MainWindow::exportLogsDialog()
{
    std::vector<int> ids = m_runsTable->selectedRunIds();
    const std::vector<int> all = m_store->runIds();
    if (all.empty()) {
        warn(tr("Export logs"), tr("There are no runs to export yet."));
        return;
    }
    if (!ids.empty() && ids.size() < all.size()) {
        QMessageBox box(QMessageBox::Question, tr("Export logs"),
                        tr("Which runs should the log hold?"), QMessageBox::Cancel, this);
        QPushButton *selected =
            box.addButton(tr("Selected runs (%1)").arg(ids.size()), QMessageBox::AcceptRole);
        QPushButton *everything =
            box.addButton(tr("All runs (%1)").arg(all.size()), QMessageBox::AcceptRole);
        box.setDefaultButton(selected);
        box.exec();
        if (box.clickedButton() == everything)
            ids = all;
        else if (box.clickedButton() != selected)
            return;
    } else {
        ids = all;
    }
    QString filter;
    QString path = askSaveFile(this, FileKind::Log, tr("Export logs"),
                               suggestedName(QStringLiteral("-log.json")),
                               tr("JSON log (*.json);;CSV, one row per step (*.csv)"), &filter);
    if (path.isEmpty()) return;
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("json") && suffix != QLatin1String("csv"))
        path += filter.contains(QLatin1String("csv")) ? QStringLiteral(".csv")
                                                      : QStringLiteral(".json");
    QString error;
    if (!exportLogs(*m_store, ids, path, &error)) {
        warn(tr("Export logs"),
             tr("Could not export to %1:\n%2").arg(path, withWriteReason(path, error)));
        return;
    }
    m_log->appendMessage(tr("Exported the log of %1 run(s) to %2").arg(ids.size()).arg(path),
                         Kind::Info);
}

template <typename Dialog, typename... Args>
void MainWindow::showNonModal(QPointer<Dialog> &kept, Args &&...args)
{
    if (!kept) kept = new Dialog(std::forward<Args>(args)..., this);
    kept->show();
    kept->raise();
    kept->activateWindow();
}

void MainWindow::showAbout()
{
    AboutDialog dialog(m_deviceKnown ? m_device : DeviceProbe::probeNow(), this);
    dialog.exec();
}

void MainWindow::warn(const QString &title, const QString &text)
{
    m_log->appendMessage(text, Kind::Error);
    showUserError(this, title, text);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_controller->isRunning()) {
        if (m_confirmClose && askUser(this, tr("Quit MixLab"),
                                      tr("A run is in progress. Stop it and quit?\n"
                                         "Runs not saved in an experiment file are lost."),
                                      {tr("Stop and quit"), tr("Cancel")}) != 0) {
            event->ignore();
            return;
        }
        m_controller->stopAndWait();
    } else if (m_controller->isSearching()) {
        m_controller->stopAndWait(); // a search keeps nothing worth a question
    }
    if (m_confirmClose && !maybeSaveChanges(tr("Quit MixLab"))) {
        event->ignore();
        return;
    }
    // The saved layout is the user's, not the one a right-hand dock borrowed.
    if (m_designHiddenForDock) {
        m_designHiddenForDock = false;
        m_leftSplitter->show();
    }
    saveSettings();
    m_autosave->finish(); // a clean exit: nothing to recover next time
    event->accept();
}
