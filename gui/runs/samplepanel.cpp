// SamplePanel: rebuilt from the store whenever a sample arrives or a run changes; samples
// are a few hundred words, so a rebuild costs nothing worth caching.
#include "runs/samplepanel.h"

#include "common/enginetext.h"
#include "common/languagemodel.h"
#include "runs/runstore.h"

#include "mixlab/trainer.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace {

// "mixed_fp16, 100 words at temperature 1, test perplexity 123.4".
QString sampleFacts(const RunRecord &r)
{
    QString facts = policyText(r.config.policy);
    if (r.sample)
        facts += QObject::tr(", %1 words at temperature %2")
                     .arg(r.sample->words)
                     .arg(double(r.sample->temperature), 0, 'g', 3);
    if (r.summary && r.summary->final_test_loss)
        facts += QObject::tr(", test perplexity %1")
                     .arg(perplexityText(mixlab::perplexity(*r.summary->final_test_loss)));
    // How close the model came to what no model beats (synthetic-text's source floor).
    if (r.summary && r.summary->final_test_loss && r.context && r.context->perplexityReferences &&
        r.context->perplexityReferences->floor) {
        const double ratio = mixlab::perplexity(*r.summary->final_test_loss) /
                             *r.context->perplexityReferences->floor;
        const QString floor = perplexityText(*r.context->perplexityReferences->floor);
        // Far from the floor a multiple reads better than "10742% above".
        if (ratio >= 2.0)
            facts += QObject::tr(" (%1x the source's floor %2)").arg(ratio, 0, 'f', 1).arg(floor);
        else
            facts += (ratio >= 1.0 ? QObject::tr(" (%1% above the source's floor %2)")
                                   : QObject::tr(" (%1% below the source's floor %2: chance)"))
                         .arg(100.0 * std::abs(ratio - 1.0), 0, 'f', 1)
                         .arg(floor);
    }
    if (r.status == RunRecord::Status::Stopped) facts += QObject::tr(", stopped early");
    return facts;
}

} // namespace

SamplePanel::SamplePanel(RunStore *store, QWidget *parent) : QWidget(parent), m_store(store)
{
    m_view = new QTextBrowser(this);
    m_view->setObjectName(QStringLiteral("sampleText"));
    m_view->setOpenLinks(false);
    m_empty = new QLabel(tr("Train a language model (a word-lm preset): when it ends, each run "
                            "writes a sample of text here."),
                         this);
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_copy = new QPushButton(tr("Copy all"), this);
    m_copy->setObjectName(QStringLiteral("copySamples"));
    m_copy->setToolTip(tr("Copy every sample, with its run, as plain text"));

    auto *buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_copy);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_empty);
    layout->addWidget(m_view, 1);
    layout->addLayout(buttons);

    connect(m_copy, &QPushButton::clicked, this, &SamplePanel::copyAll);
    connect(m_store, &RunStore::runSampled, this, [this](int id) {
        refresh();
        emit sampleArrived(id);
    });
    connect(m_store, &RunStore::runChanged, this, &SamplePanel::refresh);
    connect(m_store, &RunStore::runRemoved, this, &SamplePanel::refresh);
    connect(m_store, &RunStore::runAdded, this, &SamplePanel::refresh); // a loaded experiment's
    refresh();
}

QString SamplePanel::plainText() const { return m_plain; }

void SamplePanel::refresh()
{
    std::vector<const RunRecord *> runs;
    for (int id : m_store->runIds())
        if (const RunRecord *r = m_store->run(id); r && r->sample) runs.push_back(r);
    // Newest group first; in a group, the runs in their order (the baseline first).
    std::stable_sort(runs.begin(), runs.end(),
                     [](const RunRecord *a, const RunRecord *b) { return a->group > b->group; });
    QString html, plain;
    int group = -1;
    for (const RunRecord *r : runs) {
        if (r->group != group) {
            group = r->group;
            html += QStringLiteral("<h4 style='margin-bottom:2px'>%1</h4>")
                        .arg(tr("Group %1").arg(group).toHtmlEscaped());
            plain += tr("Group %1").arg(group) + QStringLiteral("\n\n");
        }
        const QString head = QStringLiteral("%1 (%2)").arg(r->name, sampleFacts(*r));
        const QString body = r->sample->failure.isEmpty()
                                 ? r->sample->text
                                 : tr("(no sample: %1)").arg(r->sample->failure);
        html += QStringLiteral("<p style='margin-bottom:2px'><span style='color:%1'>\u25a0</span> "
                               "<b>%2</b></p>")
                    .arg(r->color.name(), head.toHtmlEscaped());
        html += QStringLiteral("<p style='white-space:pre-wrap; margin-top:0'>%1</p>")
                    .arg(body.toHtmlEscaped());
        plain += head + QStringLiteral("\n") + body + QStringLiteral("\n\n");
    }
    m_count = int(runs.size());
    m_plain = plain.trimmed();
    m_view->setHtml(html);
    m_view->setVisible(m_count > 0);
    m_empty->setVisible(m_count == 0);
    m_copy->setEnabled(m_count > 0);
}

void SamplePanel::copyAll() const
{
    if (QClipboard *clipboard = QApplication::clipboard()) clipboard->setText(m_plain);
}
