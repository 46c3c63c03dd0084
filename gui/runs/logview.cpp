// LogView: formats RunStore events and status transitions as coloured HTML lines.
#include "runs/logview.h"

#include "common/enginetext.h"

#include "mixlab/policy.h"

#include <QFontDatabase>
#include <QScrollBar>
#include <QTimer>

#include <algorithm>

namespace {

QString colourOf(mixlab::RunEvent::Kind kind)
{
    using K = mixlab::RunEvent::Kind;
    switch (kind) {
    case K::Warning: return QStringLiteral("#b36200");
    case K::ScaleChange: return QStringLiteral("#1f5fbf");
    case K::SkippedStep: return QStringLiteral("#8a3ab9");
    case K::Error: return QStringLiteral("#c62828");
    case K::Info: break;
    }
    return {};
}

} // namespace

LogView::LogView(RunStore *store, QWidget *parent) : QPlainTextEdit(parent), m_store(store)
{
    setReadOnly(true);
    setMaximumBlockCount(k_maxLines);
    // Wrapped: the log shares the bottom row with the runs table and is often narrow.
    setLineWrapMode(QPlainTextEdit::WidgetWidth);
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setPlaceholderText(tr("Run events appear here: start and end, loss-scale changes, skipped "
                          "steps, warnings, errors."));
    connect(m_store, &RunStore::eventsAppended, this, &LogView::onEventsAppended);
    connect(m_store, &RunStore::runChanged, this, &LogView::onRunChanged);
    connect(m_store, &RunStore::runRemoved, this, [this](int id) { m_lastStatus.erase(id); });
    // Runs restored from an experiment file start with their final status: no transition.
    connect(m_store, &RunStore::runAdded, this, [this](int id) {
        if (const RunRecord *run = m_store->run(id)) m_lastStatus[id] = run->status;
    });
}

void LogView::appendMessage(const QString &text, mixlab::RunEvent::Kind kind)
{
    appendLine(QDateTime::currentDateTime(), QString(), text, kind);
}

void LogView::appendLine(const QDateTime &time, const QString &runName, const QString &text,
                         mixlab::RunEvent::Kind kind)
{
    QString line = QStringLiteral("<span style=\"color:#777777\">%1</span> ")
                       .arg(time.toString(QStringLiteral("HH:mm:ss")));
    if (!runName.isEmpty()) line += QStringLiteral("<b>[%1]</b> ").arg(runName.toHtmlEscaped());
    const QString colour = colourOf(kind);
    const QString body = text.toHtmlEscaped();
    line += colour.isEmpty()
                ? body
                : QStringLiteral("<span style=\"color:%1\">%2</span>").arg(colour, body);

    // Follow the end only when the user has not scrolled up to read.
    QScrollBar *bar = verticalScrollBar();
    const bool atEnd = bar->value() >= bar->maximum() - 2;
    appendHtml(line);
    if (atEnd) bar->setValue(bar->maximum());
}

void LogView::onEventsAppended(int id, int firstNewIndex)
{
    const RunRecord *run = m_store->run(id);
    if (!run) return;
    for (size_t i = size_t(std::max(0, firstNewIndex)); i < run->events.size(); ++i) {
        const TimedEvent &e = run->events[i];
        QString text = QString::fromStdString(e.event.message);
        if (e.event.step > 0) text = tr("step %1: %2").arg(e.event.step).arg(text);
        appendLine(e.time.isValid() ? e.time : QDateTime::currentDateTime(), run->name, text,
                   e.event.kind);
    }
}

void LogView::onRunChanged(int id)
{
    const RunRecord *run = m_store->run(id);
    if (!run) return;
    auto [it, inserted] = m_lastStatus.try_emplace(id, RunRecord::Status::Queued);
    if (!inserted && it->second == run->status) return;
    it->second = run->status;
    if (run->status == RunRecord::Status::Queued) return;
    // The controller sets status, step count and summary one after another from one
    // slot: write the line once they are all in.
    const RunRecord::Status status = run->status;
    QTimer::singleShot(0, this, [this, id, status] { logTransition(id, status); });
}

void LogView::logTransition(int id, RunRecord::Status status)
{
    const RunRecord *run = m_store->run(id);
    if (!run) return;
    using S = RunRecord::Status;
    using K = mixlab::RunEvent::Kind;
    const QDateTime now = QDateTime::currentDateTime();
    switch (status) {
    case S::Queued: break;
    case S::Running:
        appendLine(now, run->name,
                   tr("started: %1, batch %2, %3 steps, seed %4")
                       .arg(policyText(run->config.policy))
                       .arg(run->config.batch_size)
                       .arg(run->totalSteps)
                       .arg(qulonglong(run->config.seed)),
                   K::Info);
        break;
    case S::Finished:
    case S::Stopped: {
        QString text = status == S::Finished ? tr("finished") : tr("stopped");
        if (run->summary) {
            const auto &s = *run->summary;
            text += tr(" after %1 steps in %2 s; step time %3 ms (median after warm-up)")
                        .arg(s.steps)
                        .arg(s.wall_seconds, 0, 'f', 1)
                        .arg(s.median_step_ms, 0, 'f', 3);
            if (s.final_test_accuracy)
                text += tr("; test accuracy %1 %")
                            .arg(double(*s.final_test_accuracy) * 100.0, 0, 'f', 2);
            if (s.skipped_steps > 0) text += tr("; %1 skipped steps").arg(s.skipped_steps);
        }
        appendLine(now, run->name, text, K::Info);
        break;
    }
    case S::Failed: appendLine(now, run->name, tr("failed: %1").arg(run->failure), K::Error); break;
    }
}
