// WhyPanel: rebuilds its table, profiling views and explanation cards from RunStore
// whenever the group it shows changes; Apply edits go through the designer's undo stack
// or RunPanel::setConfig, so the user can take them back.
#include "analysis/whypanel.h"

#include "common/enginetext.h"
#include "designer/layercommands.h"
#include "analysis/layertablemodel.h"
#include "designer/layerpath.h"
#include "designer/modeldesigner.h"
#include "analysis/phasebars.h"
#include "analysis/rooflinechart.h"
#include "analysis/runfacts_from_store.h"
#include "runs/runpanel.h"
#include "runs/runstore.h"

#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "mixlab/step_time.h"
#include "mixlab/trainer.h"

#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>

namespace {

using Severity = mixlab::Explanation::Severity;

QString severityColor(Severity s)
{
    switch (s) {
    case Severity::Warning: return QStringLiteral("#b35900");
    case Severity::Advice: return QStringLiteral("#1f5fa8");
    case Severity::Info: break;
    }
    return QStringLiteral("#555555");
}

// The layer a model fix names, in `spec`; null when the model has no layer of that name
// (the designer holds another model by now: edit only the very layer named).
const mixlab::LayerSpec *namedLayer(const mixlab::ModelSpec &spec, const std::string &name,
                                    LayerPath *path)
{
    const QString text = QString::fromStdString(name);
    *path = pathNamedIn(text, spec);
    const mixlab::LayerSpec *layer = layerAt(spec, *path);
    return layer && path->toString() == text ? layer : nullptr;
}

// What a model fix does to its layer: the field it sets and the layer as the fix leaves
// it. None for a run-setting fix, and for set_units on a layer with no units or filters
// (the model changed since the runs).
struct LayerEdit {
    LayerField field;
    mixlab::LayerSpec after;
};

std::optional<LayerEdit> layerEditFor(const mixlab::Fix &fix, const mixlab::LayerSpec &layer)
{
    LayerEdit edit{LayerField::ForceFp32, layer};
    switch (fix.kind) {
    case mixlab::FixKind::SetUnits:
        // The output width: a dense layer's units, a convolution's filters.
        if (layer.type == mixlab::LayerType::Dense) {
            edit.field = LayerField::Units;
            edit.after.units = fix.units;
        } else if (layer.type == mixlab::LayerType::Conv2D) {
            edit.field = LayerField::Filters;
            edit.after.filters = fix.units;
        } else {
            return std::nullopt;
        }
        return edit;
    case mixlab::FixKind::SetDtypeFloat32: edit.after.force_fp32 = true; return edit;
    case mixlab::FixKind::SetActivation:
        edit.field = LayerField::Activation;
        edit.after.activation = fix.activation;
        return edit;
    case mixlab::FixKind::SetPolicy:
    case mixlab::FixKind::SetBatch: break;
    }
    return std::nullopt;
}

// What a run-setting fix does to the run panel's settings `c`; none for a model fix.
struct SettingsEdit {
    mixlab::RunConfig after;
    bool changes = false; // false: the settings have it already
    QString what;         // "policy mixed_fp16 (was fp32)"
};

std::optional<SettingsEdit> settingsEditFor(const mixlab::Fix &fix, const mixlab::RunConfig &c)
{
    SettingsEdit edit;
    edit.after = c;
    switch (fix.kind) {
    case mixlab::FixKind::SetPolicy:
        edit.after.policy = fix.policy;
        edit.changes = fix.policy != c.policy;
        edit.what =
            WhyPanel::tr("policy %1 (was %2)").arg(policyText(fix.policy), policyText(c.policy));
        return edit;
    case mixlab::FixKind::SetBatch:
        edit.after.batch_size = fix.batch;
        edit.changes = fix.batch != c.batch_size;
        edit.what = WhyPanel::tr("batch %1 (was %2)").arg(fix.batch).arg(c.batch_size);
        return edit;
    case mixlab::FixKind::SetUnits:
    case mixlab::FixKind::SetDtypeFloat32:
    case mixlab::FixKind::SetActivation: break;
    }
    return std::nullopt;
}

void setError(QString *error, const QString &text)
{
    if (error) *error = text;
}

QTableWidgetItem *cell(const QString &text, bool number)
{
    auto *item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

WhyPanel::WhyPanel(RunStore *store, QWidget *parent) : QWidget(parent), m_store(store)
{
    m_title = new QLabel(this);
    m_title->setObjectName("whyTitle");
    m_title->setWordWrap(true);
    QFont titleFont = m_title->font();
    titleFont.setBold(true);
    m_title->setFont(titleFont);

    m_table = new QTableWidget(0, 5, this);
    m_table->setObjectName("whyRunsTable");
    m_table->setHorizontalHeaderLabels(
        {tr("Policy"), tr("Step ms"), tr("Speedup"), tr("Skipped"), tr("Scale")});
    m_table->horizontalHeaderItem(1)->setToolTip(
        tr("Step time: the %1").arg(fromView(mixlab::step_time_definition())));
    m_table->horizontalHeaderItem(2)->setToolTip(
        tr("Speedup: %1").arg(fromView(mixlab::speedup_definition())));
    m_table->horizontalHeaderItem(3)->setToolTip(
        tr("Steps whose update was skipped because the gradients overflowed"));
    m_table->horizontalHeaderItem(4)->setToolTip(
        tr("The loss scale at the end of the run (1: no loss scaling)"));
    m_table->verticalHeader()->hide();
    // Every header whole at any dock width: columns as wide as their text, the policy
    // column taking what is left (a stretched header too narrow for its title is cut at
    // both ends: "edian m").
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);

    m_note = new QLabel(this);
    m_note->setObjectName("whyNote");
    m_note->setWordWrap(true);

    m_appliedLabel = new QLabel(this);
    m_appliedLabel->setObjectName("whyApplied");
    m_appliedLabel->setWordWrap(true);
    m_appliedLabel->setStyleSheet(
        QStringLiteral("QLabel { background: #e6f4e6; border: 1px solid #9c9; padding: 4px; }"));
    m_appliedLabel->hide();

    m_cards = new QWidget(this);
    m_cardsLayout = new QVBoxLayout(m_cards);
    m_cardsLayout->setContentsMargins(0, 0, 0, 0);
    m_cardsLayout->setSpacing(6);
    auto *scroll = new QScrollArea(this);
    scroll->setObjectName("whyScroll");
    scroll->setWidget(m_cards);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    // The profiling pass: phases of every run, then one run's layers and roofline.
    m_phaseBars = new PhaseBars(this);
    m_phaseBars->setObjectName("whyPhaseBars");
    m_phaseLine = new QLabel(this);
    m_phaseLine->setObjectName("whyPhaseSummary");
    m_phaseLine->setWordWrap(true);
    m_phaseLine->setTextFormat(Qt::RichText);
    auto *timePage = new QWidget(this);
    timePage->setObjectName("whyTimePage");
    auto *timeLayout = new QVBoxLayout(timePage);
    timeLayout->setContentsMargins(2, 2, 2, 2);
    timeLayout->addWidget(m_phaseBars, 1);
    timeLayout->addWidget(m_phaseLine);

    m_layerModel = new LayerTableModel(this);
    m_layerView = new QTableView(this);
    m_layerView->setObjectName("whyLayerTable");
    m_layerView->setModel(m_layerModel);
    m_layerView->setSortingEnabled(true);
    m_layerView->sortByColumn(-1, Qt::AscendingOrder); // graph order until a header is clicked
    m_layerView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_layerView->verticalHeader()->hide();
    m_layerView->horizontalHeader()->setStretchLastSection(true);
    m_layerView->setWordWrap(false);
    m_layerView->verticalHeader()->setDefaultSectionSize(m_layerView->fontMetrics().height() + 6);

    m_roofline = new RooflineChart(this);
    m_roofline->setObjectName("whyRoofline");
    m_rooflineNote = new QLabel(this);
    m_rooflineNote->setObjectName("whyRooflineNote");
    m_rooflineNote->setWordWrap(true);
    auto *roofPage = new QWidget(this);
    auto *roofLayout = new QVBoxLayout(roofPage);
    roofLayout->setContentsMargins(2, 2, 2, 2);
    roofLayout->addWidget(m_roofline, 1);
    roofLayout->addWidget(m_rooflineNote);

    // The sentences first, with the panel's whole height (a dock beside the charts is
    // narrow, and each card wraps to several lines); the measurements they cite one tab away.
    m_noProfile = new QLabel(this);
    m_noProfile->setObjectName("whyNoProfile");
    m_noProfile->setWordWrap(true);
    m_noProfile->setStyleSheet(QStringLiteral("QLabel { color: #555555; }"));
    auto *explanation = new QWidget(this);
    explanation->setObjectName("whyExplanationPage");
    auto *explanationLayout = new QVBoxLayout(explanation);
    explanationLayout->setContentsMargins(2, 2, 2, 2);
    explanationLayout->addWidget(m_appliedLabel);
    explanationLayout->addWidget(scroll, 1);
    explanationLayout->addWidget(m_noProfile);

    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName("whyTabs");
    m_tabs->addTab(explanation, tr("Explanation"));
    m_tabs->addTab(timePage, tr("Time"));
    m_tabs->addTab(m_layerView, tr("Layers"));
    m_tabs->addTab(roofPage, tr("Roofline"));
    m_runCombo = new QComboBox(this);
    m_runCombo->setObjectName("whyRunCombo");
    m_runCombo->setToolTip(tr("The run whose layers and roofline are shown"));
    m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_tabs->setCornerWidget(m_runCombo, Qt::TopRightCorner);
    connect(m_runCombo, &QComboBox::currentIndexChanged, this, &WhyPanel::showProfiledRun);
    // The combo picks the run of the Layers and Roofline tabs; Time shows every run.
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int tab) {
        m_runCombo->setEnabled(tab == k_layersTab || tab == k_rooflineTab);
    });
    m_runCombo->setEnabled(false);

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_table);
    layout->addWidget(m_note);
    layout->addWidget(m_tabs, 1);

    connect(m_store, &RunStore::runChanged, this, &WhyPanel::scheduleRefresh);
    connect(m_store, &RunStore::runRemoved, this, &WhyPanel::scheduleRefresh);
    connect(m_store, &RunStore::runAdded, this, &WhyPanel::scheduleRefresh);
    rebuild();
}

void WhyPanel::setDesigner(ModelDesigner *designer)
{
    m_designer = designer;
    // An undo (or any edit) can take an applied fix back out: its button comes back.
    if (m_designer)
        connect(m_designer, &ModelDesigner::specChanged, this, &WhyPanel::updateApplyButtons);
    rebuild();
}

void WhyPanel::setRunPanel(RunPanel *panel)
{
    m_runPanel = panel;
    if (m_runPanel)
        connect(m_runPanel, &RunPanel::configChanged, this, &WhyPanel::updateApplyButtons);
    rebuild();
}

void WhyPanel::showGroup(int group)
{
    m_followLatest = group <= 0;
    const int shown = m_followLatest ? latestFinishedGroup(*m_store) : group;
    if (shown != m_group) {
        m_appliedText.clear();
        m_appliedLabel->hide();
    }
    m_group = shown;
    rebuild();
}

void WhyPanel::refresh()
{
    // The group shown is gone (deleted, New, another experiment opened): follow the latest
    // again rather than keep explaining runs that are no longer there.
    if (!m_followLatest && m_store->groupRuns(m_group).empty()) m_followLatest = true;
    showGroup(m_followLatest ? 0 : m_group);
}

// Store signals come in bursts (a compare finishing changes every run); one rebuild
// after the burst is enough.
void WhyPanel::scheduleRefresh(int runId)
{
    const RunRecord *run = m_store->run(runId);
    const bool concerns = m_followLatest || (run && run->group == m_group) ||
                          std::find(m_runIds.begin(), m_runIds.end(), runId) != m_runIds.end();
    if (!concerns || m_refreshQueued) return;
    m_refreshQueued = true;
    QTimer::singleShot(0, this, [this] {
        m_refreshQueued = false;
        refresh();
    });
}

void WhyPanel::setCeilings(const std::optional<mixlab::Ceilings> &ceilings)
{
    m_ceilingsSet = true;
    m_ceilings = ceilings;
    showProfiledRun(m_runCombo->currentIndex());
}

std::optional<mixlab::Ceilings> WhyPanel::ceilingsFor(const mixlab::DeviceInfo &device) const
{
    if (m_ceilingsSet) return m_ceilings;
    // The cache the About dialog measures into; reading it never throws.
    return mixlab::cached_ceilings(device, mixlab::default_ceilings_cache_path());
}

QString WhyPanel::phaseLine(const mixlab::RunFacts &f)
{
    const mixlab::StepProfile &p = *f.profile;
    const double off = p.step_ms > 0 ? 100.0 * (p.device_ms - p.step_ms) / p.step_ms : 0;
    QString line =
        tr("<b>%1</b>: sum of phases (each timed alone) %2 ms vs profiled step %3 ms "
           "(%4%5%) · wall %6 ms per step, overhead %7 ms")
            .arg(policyText(f.policy), QString::number(p.device_ms, 'f', 3),
                 QString::number(p.step_ms, 'f', 3), off >= 0 ? QStringLiteral("+") : QString(),
                 QString::number(off, 'f', 0), QString::number(p.wall_ms, 'f', 3),
                 QString::number(p.overhead_ms, 'f', 3));
    if (mixlab::ran_on_gpu(f))
        line += tr(" · GPU busy %1%").arg(QString::number(100.0 * p.gpu_busy_fraction, 'f', 0));
    return line;
}

void WhyPanel::rebuildProfile(const std::vector<mixlab::RunFacts> &facts)
{
    m_facts = facts;
    std::vector<PhaseBars::Bar> bars;
    QStringList lines;
    const QSignalBlocker block(m_runCombo);
    m_runCombo->clear();
    for (std::size_t i = 0; i < facts.size(); ++i) {
        const mixlab::RunFacts &f = facts[i];
        if (!f.profile) continue;
        bars.push_back({policyText(f.policy), *f.profile});
        lines << phaseLine(f);
        const RunRecord *run = i < m_runIds.size() ? m_store->run(m_runIds[i]) : nullptr;
        m_runCombo->addItem(run ? run->name : policyText(f.policy), int(i));
        if (run) m_runCombo->setItemData(m_runCombo->count() - 1, run->color, Qt::DecorationRole);
    }
    m_phaseBars->setBars(bars);
    const bool profiled = !bars.empty();
    for (int tab : {k_timeTab, k_layersTab, k_rooflineTab}) m_tabs->setTabEnabled(tab, profiled);
    m_noProfile->setVisible(!profiled && !facts.empty());
    if (!profiled) {
        m_noProfile->setText(
            tr("No profiling pass for this group: it runs after a comparison "
               "that ends without Stop (and files saved before it existed have "
               "none). Without it the Time, Layers and Roofline tabs stay empty "
               "and the input-bound, fixed-cost and launch-bound rules stay silent."));
        m_tabs->setCurrentIndex(k_explanationTab);
        m_phaseLine->clear();
        m_layerModel->clear();
        m_roofline->clear();
        return;
    }
    const mixlab::StepProfile &first = bars.front().profile;
    m_phaseLine->setText(lines.join(QStringLiteral("<br>")));
    // What the numbers are, for whoever asks (the line itself stays short).
    m_phaseLine->setToolTip(
        tr("Device time per phase: mean of a %1-step profiling pass after the "
           "timed steps, run %2, each phase timed alone between events. "
           "Profiled step: the median device time of %1 unmarked steps run "
           "back to back, whose host wall time gives the overhead (wall minus "
           "device time). Neither is the step time in the table above (the %3).")
            .arg(first.steps)
            .arg(first.replayed ? tr("as the timed steps ran (one CUDA graph)")
                                : tr("op by op, as the timed steps ran"))
            .arg(fromView(mixlab::step_time_definition())));
    m_runCombo->setCurrentIndex(0);
    showProfiledRun(0);
}

void WhyPanel::showProfiledRun(int comboIndex)
{
    const int factIndex = comboIndex >= 0 ? m_runCombo->itemData(comboIndex).toInt() : -1;
    if (factIndex < 0 || std::size_t(factIndex) >= m_facts.size() ||
        !m_facts[std::size_t(factIndex)].profile) {
        m_layerModel->clear();
        m_roofline->clear();
        m_rooflineNote->clear();
        return;
    }
    const mixlab::RunFacts &f = m_facts[std::size_t(factIndex)];
    m_layerModel->setProfile(*f.profile);
    // Keep the order the user asked for when switching runs.
    const int column = m_layerView->horizontalHeader()->sortIndicatorSection();
    if (column >= 0 && column < LayerTableModel::ColumnCount)
        m_layerModel->sort(column, m_layerView->horizontalHeader()->sortIndicatorOrder());
    m_layerView->resizeColumnsToContents();

    const std::optional<mixlab::Ceilings> ceilings = ceilingsFor(f.device);
    m_roofline->setRun(*f.profile, f.policy, ceilings);
    const int gemms = int(m_roofline->points().size());
    QString note =
        tr("%n GEMM layer(s) of %1; intensity uses estimated bytes moved.", nullptr, gemms)
            .arg(policyText(f.policy));
    if (!ceilings)
        note += QLatin1Char(' ') + tr("No ceilings measured for this device yet (Help > About > "
                                      "Measure now, or mixlab-cli ceilings): no roof lines.");
    else {
        note += QLatin1Char(' ') +
                tr("Ceilings measured %1 (%2).")
                    .arg(fromView(ceilings->measured_at), fromView(ceilings->device_name));
        // A layer cannot beat a true roof: one above it means the probe ran slower than
        // this layer's kernel (a busy machine, or a kernel the GEMM probe does not use).
        const double roof = mixlab::policy_tflops(*ceilings, f.policy);
        const int above = int(std::count_if(
            m_roofline->points().begin(), m_roofline->points().end(),
            [roof](const RooflineChart::Point &p) { return roof > 0 && p.tflops > 1.1 * roof; }));
        if (above > 0)
            note += QLatin1Char(' ') +
                    tr("%n layer(s) above the GEMM roof: the probe measured less than "
                       "these kernels reach (a busy machine, or kernels faster than "
                       "the probe's); measure again in Help > About.",
                       nullptr, above);
    }
    m_rooflineNote->setText(note);
}

void WhyPanel::clearCards()
{
    while (QLayoutItem *item = m_cardsLayout->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_applyButtons.clear();
}

void WhyPanel::rebuild()
{
    clearCards();
    m_table->setRowCount(0);
    m_explanations.clear();
    m_runIds.clear();
    m_facts.clear();

    QString error;
    std::vector<mixlab::RunFacts> facts = m_group > 0 ? runFactsFromStore(*m_store, m_group, &error)
                                                      : std::vector<mixlab::RunFacts>{};
    // The fp8 rule's ceilings: one device per group, so the cache is read once.
    if (!facts.empty()) {
        const std::optional<mixlab::Ceilings> ceilings = ceilingsFor(facts.front().device);
        for (mixlab::RunFacts &f : facts) f.ceilings = ceilings;
    }
    if (facts.empty()) {
        m_title->setText(tr("Why?"));
        auto *empty =
            new QLabel(m_group > 0 ? error
                                   : tr("No finished compare group yet. Run a comparison "
                                        "(Run > Compare precisions): this dock then explains "
                                        "the newest one, or the one whose runs you select in "
                                        "the table before pressing Why?."),
                       m_cards);
        empty->setWordWrap(true);
        m_cardsLayout->addWidget(empty);
        m_cardsLayout->addStretch(1);
        m_table->hide();
        m_note->hide();
        rebuildProfile({});
        return;
    }
    m_note->show();
    m_table->show();
    m_runIds = m_store->groupRuns(m_group);

    const RunRecord *first = m_store->run(m_runIds.front());
    QStringList policies;
    for (const mixlab::RunFacts &f : facts) policies << policyText(f.policy);
    const QString device =
        first->context ? fromView(first->context->environment.device_name) : tr("unknown device");
    m_title->setText(tr("Why? Group %1: %2 on %3, batch %4, %5 steps")
                         .arg(m_group)
                         .arg(policies.join(QStringLiteral(" vs ")), device)
                         .arg(first->config.batch_size)
                         .arg(facts.front().summary.steps));

    m_table->setRowCount(int(facts.size()));
    const double baseMs =
        facts[std::size_t(std::max(0, facts.front().baseline))].summary.median_step_ms;
    for (std::size_t i = 0; i < facts.size(); ++i) {
        const mixlab::RunFacts &f = facts[i];
        const int row = int(i);
        const RunRecord *run = m_store->run(m_runIds[i]);
        QTableWidgetItem *policy = cell(policyText(f.policy), false);
        if (run) {
            policy->setToolTip(run->name);
            policy->setData(Qt::DecorationRole, run->color);
        }
        m_table->setItem(row, 0, policy);
        const double ms = f.summary.median_step_ms;
        m_table->setItem(row, 1, cell(ms > 0 ? QString::number(ms, 'f', 3) : tr("n/a"), true));
        const double speedup = mixlab::speedup(baseMs, ms);
        m_table->setItem(
            row, 2,
            cell(speedup > 0 ? QStringLiteral("%1x").arg(speedup, 0, 'f', 2) : tr("n/a"), true));
        m_table->setItem(row, 3, cell(QString::number(f.summary.skipped_steps), true));
        m_table->setItem(row, 4,
                         cell(QString::number(double(f.summary.final_loss_scale), 'g', 6), true));
    }
    m_table->resizeRowsToContents();
    int height = m_table->horizontalHeader()->height() + 2 * m_table->frameWidth();
    for (int r = 0; r < m_table->rowCount(); ++r) height += m_table->rowHeight(r);
    m_table->setFixedHeight(height);
    m_note->setText(
        tr("<i>Step ms: the %1; speedup: %2.</i>")
            .arg(fromView(mixlab::step_time_definition()), fromView(mixlab::speedup_definition())));

    rebuildProfile(facts);
    m_explanations = mixlab::explain(facts, mixlab::Reader::App);
    if (m_explanations.empty()) {
        auto *none = new QLabel(tr("Nothing to explain: no rule fired."), m_cards);
        m_cardsLayout->addWidget(none);
    }
    for (std::size_t i = 0; i < m_explanations.size(); ++i)
        m_cardsLayout->addWidget(makeCard(int(i), m_explanations[i]));
    m_cardsLayout->addStretch(1);
    updateApplyButtons();
}

QWidget *WhyPanel::makeCard(int index, const mixlab::Explanation &e)
{
    auto *card = new QFrame(m_cards);
    card->setObjectName(QStringLiteral("whyCard_%1").arg(fromView(e.id)));
    card->setFrameShape(QFrame::StyledPanel);
    auto *row = new QHBoxLayout(card);
    row->setContentsMargins(6, 6, 6, 6);

    const QStyle::StandardPixmap pixmap = e.severity == Severity::Warning
                                              ? QStyle::SP_MessageBoxWarning
                                              : QStyle::SP_MessageBoxInformation;
    auto *icon = new QLabel(card);
    icon->setPixmap(style()->standardIcon(pixmap).pixmap(20, 20));
    icon->setAlignment(Qt::AlignTop);
    row->addWidget(icon);

    auto *text = new QVBoxLayout;
    auto *head = new QLabel(card);
    head->setObjectName("whySentence");
    head->setWordWrap(true);
    head->setTextFormat(Qt::RichText);
    head->setText(QStringLiteral("<b style=\"color:%1\">%2</b> &nbsp;%3")
                      .arg(severityColor(e.severity),
                           fromView(mixlab::severity_name(e.severity)).toUpper(),
                           fromView(e.sentence).toHtmlEscaped()));
    text->addWidget(head);
    if (!e.suggestion.empty()) {
        auto *suggestion = new QLabel(card);
        suggestion->setObjectName("whySuggestion");
        suggestion->setWordWrap(true);
        suggestion->setTextFormat(Qt::RichText);
        suggestion->setText(
            tr("<i>Suggestion:</i> %1").arg(fromView(e.suggestion).toHtmlEscaped()));
        text->addWidget(suggestion);
    }
    row->addLayout(text, 1);

    QPushButton *button = nullptr;
    if (canApply(e)) {
        button = new QPushButton(tr("Apply"), card);
        button->setObjectName(QStringLiteral("whyApply_%1").arg(fromView(e.id)));
        connect(button, &QPushButton::clicked, this, [this, index] {
            QString error;
            if (!apply(index, &error)) {
                m_appliedLabel->setText(tr("Could not apply: %1").arg(error));
                m_appliedLabel->show();
            }
        });
        row->addWidget(button, 0, Qt::AlignTop);
    }
    m_applyButtons.push_back(button);
    return card;
}

bool WhyPanel::isModelFix(const mixlab::Explanation &e)
{
    return e.fix && mixlab::is_model_fix(e.fix->kind);
}

std::optional<bool> WhyPanel::isApplied(const mixlab::Explanation &e) const
{
    if (!e.fix) return std::nullopt;
    if (isModelFix(e)) {
        if (!m_designer) return std::nullopt;
        const mixlab::ModelSpec spec = m_designer->spec();
        LayerPath path;
        const mixlab::LayerSpec *layer = namedLayer(spec, e.fix->path, &path);
        const std::optional<LayerEdit> edit = layer ? layerEditFor(*e.fix, *layer) : std::nullopt;
        // Another model by now: not applied, and apply() says why it cannot be.
        return edit && sameField(edit->field, *layer, edit->after);
    }
    if (!m_runPanel) return std::nullopt;
    const std::optional<SettingsEdit> edit = settingsEditFor(*e.fix, m_runPanel->config());
    return edit && !edit->changes;
}

// Each Apply says whether its change is in the model or settings now: disabled and
// "Applied" once it is (a second click would add an edit that changes nothing), enabled
// again when the user undoes it.
void WhyPanel::updateApplyButtons()
{
    for (std::size_t i = 0; i < m_applyButtons.size() && i < m_explanations.size(); ++i) {
        QPushButton *b = m_applyButtons[i];
        if (!b) continue;
        const mixlab::Explanation &e = m_explanations[i];
        const std::optional<bool> applied = isApplied(e);
        b->setEnabled(applied.has_value() && !*applied);
        b->setText(applied.value_or(false) ? tr("Applied") : tr("Apply"));
        if (!applied)
            b->setToolTip(isModelFix(e) ? tr("No model designer to edit")
                                        : tr("No run panel to change"));
        else if (*applied)
            b->setToolTip(isModelFix(e) ? tr("%1 has this change already; undo it with Ctrl+Z")
                                              .arg(QString::fromStdString(e.fix->path))
                                        : tr("The run settings have this change already"));
        else
            b->setToolTip(isModelFix(e) ? tr("Edit %1 in the designer (undo with Ctrl+Z)")
                                              .arg(QString::fromStdString(e.fix->path))
                                        : tr("Change the run settings in the run panel"));
    }
}

QPushButton *WhyPanel::applyButton(int index) const
{
    return index >= 0 && std::size_t(index) < m_applyButtons.size()
               ? m_applyButtons[std::size_t(index)]
               : nullptr;
}

bool WhyPanel::canApply(const mixlab::Explanation &e)
{
    // Every kind: layerEditFor and settingsEditFor switch over them all.
    return e.fix.has_value();
}

bool WhyPanel::apply(int index, QString *error)
{
    if (index < 0 || std::size_t(index) >= m_explanations.size()) {
        setError(error, tr("no such explanation"));
        return false;
    }
    const mixlab::Explanation e = m_explanations[std::size_t(index)];
    if (!e.fix) {
        setError(error, tr("this explanation has no change to apply"));
        return false;
    }
    const mixlab::Fix &fix = *e.fix;
    if (isApplied(e).value_or(false)) {
        setError(error, tr("the change is in the %1 already")
                            .arg(isModelFix(e) ? tr("model") : tr("run settings")));
        return false;
    }
    QString what;
    if (isModelFix(e)) {
        if (!m_designer) {
            setError(error, tr("no model designer to edit"));
            return false;
        }
        const mixlab::ModelSpec spec = m_designer->spec();
        const QString pathText = QString::fromStdString(fix.path);
        LayerPath path;
        const mixlab::LayerSpec *layer = namedLayer(spec, fix.path, &path);
        if (!layer) {
            setError(error, tr("the model in the designer has no %1 any more").arg(pathText));
            return false;
        }
        const std::optional<LayerEdit> edit = layerEditFor(fix, *layer);
        if (!edit) {
            // Only set_units can miss: a model whose layer at that path is no longer dense
            // or conv2d.
            setError(error, tr("%1 is of type %2 now: it has no units or filters to set")
                                .arg(pathText, fromView(mixlab::layer_type_name(layer->type))));
            return false;
        }
        // The designer's own door for an edit from outside its property editor: one
        // EditLayerCommand on its undo stack, a step of its own.
        m_designer->editLayer(path, edit->field, edit->after);
        what = tr("%1: %2 %3; undo with Ctrl+Z")
                   .arg(pathText, layerFieldName(edit->field, layer->type),
                        fieldValueText(edit->field, edit->after));
    } else {
        if (!m_runPanel) {
            setError(error, tr("no run panel to change"));
            return false;
        }
        const std::optional<SettingsEdit> edit = settingsEditFor(fix, m_runPanel->config());
        if (!edit) {
            setError(error, tr("'%1' cannot be applied to the run settings")
                                .arg(fromView(mixlab::fix_kind_name(fix.kind))));
            return false;
        }
        m_runPanel->setConfig(edit->after);
        what = tr("run settings: %1").arg(edit->what);
    }
    m_appliedText = what;
    m_appliedLabel->setText(tr("Applied: %1").arg(what));
    m_appliedLabel->show();
    updateApplyButtons();
    emit applied(what);
    return true;
}
