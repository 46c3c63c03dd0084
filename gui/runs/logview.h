// LogView: the timestamped event log under the charts. Lines come from RunStore events
// (run start/end, loss-scale changes, skipped steps, warnings, errors), prefixed with
// "[run name]" and coloured by kind, plus the app's own messages.
#pragma once
#include "mixlab/trainer.h"

#include <QDateTime>
#include <QPlainTextEdit>

#include <map>

#include "runs/runstore.h"

class LogView : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit LogView(RunStore *store, QWidget *parent = nullptr);

    QString plainText() const { return toPlainText(); }
    void appendMessage(const QString &text, mixlab::RunEvent::Kind kind);

    // Keeps the widget bounded when a diverging fp16 run skips every step.
    static constexpr int k_maxLines = 20000;

private:
    void appendLine(const QDateTime &time, const QString &runName, const QString &text,
                    mixlab::RunEvent::Kind kind);
    void onEventsAppended(int id, int firstNewIndex);
    void onRunChanged(int id);
    void logTransition(int id, RunRecord::Status status);

    RunStore *m_store;
    std::map<int, RunRecord::Status> m_lastStatus; // to log transitions once
};
