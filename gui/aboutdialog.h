// AboutDialog: MixLab's version and what it runs on: Qt, CUDA runtime and driver, cuBLAS,
// cuDNN and the GPU, from the probed DeviceInfo ("not available" on the CPU backend).
#pragma once
#include "mixlab/backend.h"

#include <QDialog>

class AboutDialog : public QDialog {
    Q_OBJECT
public:
    explicit AboutDialog(const mixlab::DeviceInfo &device, QWidget *parent = nullptr);

    // The facts shown, one "Label: value" per line (for bug reports and tests).
    QString versionsText() const { return m_text; }

private:
    QString m_text;
};
