// ContinueDialog: Run > Continue training's question, once the checkpoint's header is read:
// what the file holds (model, policy, batch, where the run stood) and the epoch to train
// to, which must lie beyond it. The new run's model and settings are the checkpoint's.
#pragma once
#include "mixlab/checkpoint.h"

#include <QDialog>
#include <QString>

#include <functional>

class QLabel;
class QSpinBox;

class ContinueDialog : public QDialog {
    Q_OBJECT
public:
    ContinueDialog(const QString &path, const mixlab::CheckpointHeader &header,
                   QWidget *parent = nullptr);
    int totalEpochs() const;
    void setTotalEpochs(int epochs);
    // Shows the dialog modally: the total chosen, 0 when cancelled. With an answerer set
    // (tests), the answerer gets the dialog instead and its return is the answer.
    int ask();
    using Answerer = std::function<int(ContinueDialog &dialog)>;
    static void setAnswererForTesting(Answerer answerer);

    // The epochs the run had completed, and the least total that trains on from there.
    static std::int64_t epochsDone(const mixlab::CheckpointHeader &header);
    static int minimumTotal(const mixlab::CheckpointHeader &header);
    // A stopped run's plan when it lies ahead, else as many epochs again.
    static int suggestedTotal(const mixlab::CheckpointHeader &header);

private:
    void updateMore();

    mixlab::CheckpointHeader m_header;
    QSpinBox *m_epochs = nullptr;
    QLabel *m_more = nullptr;
};
