// WhyPanel: rebuilds its table and explanation cards from RunStore whenever the group it
// shows changes; Apply edits go through the designer's undo stack or RunPanel::setConfig,
// so the user can take them back.
#include "whypanel.h"

#include "layercommands.h"
#include "layerpath.h"
#include "layerpropertyeditor.h"
#include "modeldesigner.h"
#include "runfacts_from_store.h"
#include "runpanel.h"
#include "runstore.h"

#include "mixlab/model_spec.h"
#include "mixlab/policy.h"
#include "mixlab/trainer.h"

#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>

namespace {

using Severity = mixlab::Explanation::Severity;

QString qs(const std::string &s) { return QString::fromStdString(s); }
QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QString severityColor(Severity s)
{
    switch (s) {
    case Severity::Warning: return QStringLiteral("#b35900");
    case Severity::Advice: return QStringLiteral("#1f5fa8");
    case Severity::Info: break;
    }
    return QStringLiteral("#555555");
}

std::optional<mixlab::Activation> activationNamed(const std::string &name)
{
    for (auto a : {mixlab::Activation::None, mixlab::Activation::Relu, mixlab::Activation::Sigmoid,
                   mixlab::Activation::Tanh, mixlab::Activation::Gelu, mixlab::Activation::Softmax})
        if (mixlab::activation_name(a) == name)
            return a;
    return std::nullopt;
}

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

QTableWidgetItem *cell(const QString &text, bool number)
{
    auto *item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    if (number)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
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
    m_table->setHorizontalHeaderLabels({tr("Policy"), tr("Median ms"), tr("Speedup"), tr("Skipped"), tr("Loss scale")});
    m_table->horizontalHeaderItem(1)->setToolTip(tr("Median time per step, the first %1 warm-up steps left out").arg(mixlab::k_warmup_steps));
    m_table->horizontalHeaderItem(2)->setToolTip(tr("Against the group's first run"));
    m_table->horizontalHeaderItem(4)->setToolTip(tr("The loss scale at the end of the run"));
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);

    m_note = new QLabel(this);
    m_note->setObjectName("whyNote");
    m_note->setWordWrap(true);
    m_note->setText(tr("<i>Median ms: time per step, the first %1 warm-up steps left out; speedup "
                       "against the group's first run. Per-phase breakdown (forward, backward, "
                       "optimizer, overhead) and per-layer times: not measured yet.</i>")
                        .arg(mixlab::k_warmup_steps));

    m_appliedLabel = new QLabel(this);
    m_appliedLabel->setObjectName("whyApplied");
    m_appliedLabel->setWordWrap(true);
    m_appliedLabel->setStyleSheet(QStringLiteral("QLabel { background: #e6f4e6; border: 1px solid #9c9; padding: 4px; }"));
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

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_table);
    layout->addWidget(m_note);
    layout->addWidget(m_appliedLabel);
    layout->addWidget(scroll, 1);

    connect(m_store, &RunStore::runChanged, this, &WhyPanel::scheduleRefresh);
    connect(m_store, &RunStore::runRemoved, this, &WhyPanel::scheduleRefresh);
    connect(m_store, &RunStore::runAdded, this, &WhyPanel::scheduleRefresh);
    rebuild();
}

void WhyPanel::setDesigner(ModelDesigner *designer)
{
    m_designer = designer;
    rebuild();
}

void WhyPanel::setRunPanel(RunPanel *panel)
{
    m_runPanel = panel;
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
    showGroup(m_followLatest ? 0 : m_group);
}

// Store signals come in bursts (a compare finishing changes every run); one rebuild
// after the burst is enough.
void WhyPanel::scheduleRefresh(int runId)
{
    const RunRecord *run = m_store->run(runId);
    const bool concerns = m_followLatest || (run && run->group == m_group)
                          || std::find(m_runIds.begin(), m_runIds.end(), runId) != m_runIds.end();
    if (!concerns || m_refreshQueued)
        return;
    m_refreshQueued = true;
    QTimer::singleShot(0, this, [this] {
        m_refreshQueued = false;
        refresh();
    });
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

    QString error;
    const std::vector<mixlab::RunFacts> facts =
        m_group > 0 ? runFactsFromStore(*m_store, m_group, &error) : std::vector<mixlab::RunFacts>{};
    if (facts.empty()) {
        m_title->setText(tr("Why?"));
        auto *empty = new QLabel(m_group > 0 ? error
                                             : tr("No finished compare group yet. Run a comparison "
                                                  "(Run > Compare precisions), select its runs in the "
                                                  "table and press Why?."),
                                 m_cards);
        empty->setWordWrap(true);
        m_cardsLayout->addWidget(empty);
        m_cardsLayout->addStretch(1);
        m_table->hide();
        return;
    }
    m_table->show();
    m_runIds = m_store->groupRuns(m_group);

    const RunRecord *first = m_store->run(m_runIds.front());
    QStringList policies;
    for (const mixlab::RunFacts &f : facts)
        policies << qs(mixlab::policy_name(f.policy));
    const QString device = first->context ? qs(first->context->environment.device_name) : tr("unknown device");
    m_title->setText(tr("Why? Group %1: %2 on %3, batch %4, %5 steps")
                         .arg(m_group)
                         .arg(policies.join(QStringLiteral(" vs ")), device)
                         .arg(first->config.batch_size)
                         .arg(facts.front().summary.steps));

    m_table->setRowCount(int(facts.size()));
    const double baseMs = facts.front().summary.median_step_ms;
    for (std::size_t i = 0; i < facts.size(); ++i) {
        const mixlab::RunFacts &f = facts[i];
        const int row = int(i);
        const RunRecord *run = m_store->run(m_runIds[i]);
        QTableWidgetItem *policy = cell(qs(mixlab::policy_name(f.policy)), false);
        if (run) {
            policy->setToolTip(run->name);
            policy->setData(Qt::DecorationRole, run->color);
        }
        m_table->setItem(row, 0, policy);
        const double ms = f.summary.median_step_ms;
        m_table->setItem(row, 1, cell(ms > 0 ? QString::number(ms, 'f', 3) : tr("n/a"), true));
        m_table->setItem(row, 2, cell(ms > 0 && baseMs > 0 ? QStringLiteral("%1x").arg(baseMs / ms, 0, 'f', 2) : tr("n/a"), true));
        m_table->setItem(row, 3, cell(QString::number(f.summary.skipped_steps), true));
        m_table->setItem(row, 4, cell(QString::number(double(f.summary.final_loss_scale), 'g', 6), true));
    }
    m_table->resizeRowsToContents();
    int height = m_table->horizontalHeader()->height() + 2 * m_table->frameWidth();
    for (int r = 0; r < m_table->rowCount(); ++r)
        height += m_table->rowHeight(r);
    m_table->setFixedHeight(height);

    m_explanations = mixlab::explain(facts);
    if (m_explanations.empty()) {
        auto *none = new QLabel(tr("Nothing to explain: no rule fired."), m_cards);
        m_cardsLayout->addWidget(none);
    }
    for (std::size_t i = 0; i < m_explanations.size(); ++i)
        m_cardsLayout->addWidget(makeCard(int(i), m_explanations[i]));
    m_cardsLayout->addStretch(1);
}

QWidget *WhyPanel::makeCard(int index, const mixlab::Explanation &e)
{
    auto *card = new QFrame(m_cards);
    card->setObjectName(QStringLiteral("whyCard_%1").arg(qs(e.id)));
    card->setFrameShape(QFrame::StyledPanel);
    auto *row = new QHBoxLayout(card);
    row->setContentsMargins(6, 6, 6, 6);

    const QStyle::StandardPixmap pixmap = e.severity == Severity::Warning ? QStyle::SP_MessageBoxWarning
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
                      .arg(severityColor(e.severity), qs(mixlab::severity_name(e.severity)).toUpper(),
                           qs(e.sentence).toHtmlEscaped()));
    text->addWidget(head);
    if (!e.suggestion.empty()) {
        auto *suggestion = new QLabel(card);
        suggestion->setObjectName("whySuggestion");
        suggestion->setWordWrap(true);
        suggestion->setTextFormat(Qt::RichText);
        suggestion->setText(tr("<i>Suggestion:</i> %1").arg(qs(e.suggestion).toHtmlEscaped()));
        text->addWidget(suggestion);
    }
    row->addLayout(text, 1);

    QPushButton *button = nullptr;
    if (canApply(e)) {
        button = new QPushButton(tr("Apply"), card);
        button->setObjectName(QStringLiteral("whyApply_%1").arg(qs(e.id)));
        const bool model = e.apply_kind == "set_dtype_float32" || e.apply_kind == "set_activation";
        button->setEnabled(model ? m_designer != nullptr : m_runPanel != nullptr);
        button->setToolTip(model ? tr("Edit %1 in the designer (undo with Ctrl+Z)").arg(qs(e.apply_path))
                                 : tr("Change the run settings in the run panel"));
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

QPushButton *WhyPanel::applyButton(int index) const
{
    return index >= 0 && std::size_t(index) < m_applyButtons.size() ? m_applyButtons[std::size_t(index)] : nullptr;
}

bool WhyPanel::canApply(const mixlab::Explanation &e)
{
    return e.apply_kind == "set_dtype_float32" || e.apply_kind == "set_activation"
           || e.apply_kind == "set_policy" || e.apply_kind == "set_batch";
}

bool WhyPanel::apply(int index, QString *error)
{
    if (index < 0 || std::size_t(index) >= m_explanations.size()) {
        setError(error, tr("no such explanation"));
        return false;
    }
    const mixlab::Explanation e = m_explanations[std::size_t(index)];
    QString what;
    if (e.apply_kind == "set_dtype_float32" || e.apply_kind == "set_activation") {
        if (!m_designer) {
            setError(error, tr("no model designer to edit"));
            return false;
        }
        const mixlab::ModelSpec spec = m_designer->spec();
        const QString pathText = qs(e.apply_path);
        const LayerPath path = pathNamedIn(pathText, spec);
        const mixlab::LayerSpec *layer = layerAt(spec, path);
        // The designer may hold another model by now: edit only the very layer named.
        if (!layer || path.toString() != pathText) {
            setError(error, tr("the model in the designer has no %1 any more").arg(pathText));
            return false;
        }
        mixlab::LayerSpec after = *layer;
        LayerField field = LayerField::ForceFp32;
        if (e.apply_kind == "set_dtype_float32") {
            after.force_fp32 = true;
            what = tr("%1: dtype float32").arg(pathText);
        } else {
            const std::optional<mixlab::Activation> a = activationNamed(e.apply_value);
            if (!a) {
                setError(error, tr("unknown activation '%1'").arg(qs(e.apply_value)));
                return false;
            }
            after.activation = *a;
            field = LayerField::Activation;
            what = tr("%1: activation %2").arg(pathText, qs(e.apply_value));
        }
        // The property editor's edit signal is the designer's one door for a field edit:
        // it pushes an EditLayerCommand onto the designer's undo stack.
        emit m_designer->propertyEditor()->layerEdited(path, field, *layer, after);
        what += tr("; undo with Ctrl+Z");
    } else if (e.apply_kind == "set_policy" || e.apply_kind == "set_batch") {
        if (!m_runPanel) {
            setError(error, tr("no run panel to change"));
            return false;
        }
        mixlab::RunConfig c = m_runPanel->config();
        try {
            if (e.apply_kind == "set_policy") {
                c.policy = mixlab::parse_policy(e.apply_value);
                what = tr("run settings: policy %1 (was %2)").arg(qs(e.apply_value), qs(mixlab::policy_name(m_runPanel->config().policy)));
            } else {
                c.batch_size = std::stoi(e.apply_value);
                what = tr("run settings: batch %1 (was %2)").arg(qs(e.apply_value)).arg(m_runPanel->config().batch_size);
            }
        } catch (const std::exception &ex) {
            setError(error, QString::fromUtf8(ex.what()));
            return false;
        }
        m_runPanel->setConfig(c);
    } else {
        setError(error, tr("'%1' cannot be applied here").arg(qs(e.apply_kind)));
        return false;
    }
    m_appliedText = what;
    m_appliedLabel->setText(tr("Applied: %1").arg(what));
    m_appliedLabel->show();
    if (QPushButton *b = applyButton(index)) {
        b->setEnabled(false);
        b->setText(tr("Applied"));
    }
    emit applied(what);
    return true;
}
