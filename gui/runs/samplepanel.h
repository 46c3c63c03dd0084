// SamplePanel: the text each language-model run wrote when it ended (Run > Sample text),
// newest compare group first, each run under its name, policy and perplexity, with a
// button that copies it all as plain text.
#pragma once
#include <QWidget>

class QLabel;
class QPushButton;
class QTextBrowser;
class RunStore;

class SamplePanel : public QWidget {
    Q_OBJECT
public:
    explicit SamplePanel(RunStore *store, QWidget *parent = nullptr);

    // What the panel shows, as the Copy button copies it.
    QString plainText() const;
    int sampleCount() const { return m_count; }

signals:
    // A run's sample arrived (the window may bring the panel forward).
    void sampleArrived(int runId);

private:
    void refresh();
    void copyAll() const;

    RunStore *m_store;
    QTextBrowser *m_view = nullptr;
    QLabel *m_empty = nullptr;
    QPushButton *m_copy = nullptr;
    QString m_plain;
    int m_count = 0;
};
