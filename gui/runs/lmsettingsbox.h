// LmSettingsBox: the run panel's language-model settings: the truncated-BPTT window, the
// learning-rate schedule, and the text each run writes when it ends (words, temperature).
// The run panel shows it for language models only.
#pragma once
#include "runs/lmdefaults.h"
#include "runs/workermessages.h"

#include "mixlab/run_config.h"

#include <QGroupBox>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

class LmSettingsBox : public QGroupBox {
    Q_OBJECT
public:
    explicit LmSettingsBox(QWidget *parent = nullptr);

    // Shows bptt and the schedule of `c`; emits nothing.
    void showConfig(const mixlab::RunConfig &c);
    // Writes bptt and the schedule into `c`.
    void readInto(mixlab::RunConfig &c) const;
    TextSampling sampling() const;
    void setSampling(const TextSampling &s); // emits nothing

signals:
    void edited(RunField field); // by the user: Bptt or LrSchedule
    void samplingEdited();

private:
    void updateFactor();

    QSpinBox *m_bptt = nullptr;
    QComboBox *m_schedule = nullptr;
    QDoubleSpinBox *m_factor = nullptr;
    QSpinBox *m_words = nullptr;
    QDoubleSpinBox *m_temperature = nullptr;
};
