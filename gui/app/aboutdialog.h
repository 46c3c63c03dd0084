// AboutDialog: MixLab's version and what it runs on: Qt, CUDA runtime and driver, cuBLAS,
// cuDNN and the GPU, from the probed DeviceInfo ("not available" on the CPU backend), the
// GPU's capability facts, and its measured ceilings (cached; "Measure now" probes again).
#pragma once
#include "mixlab/backend.h"
#include "mixlab/ceilings.h"

#include <QDialog>

#include <memory>

class QLabel;
class QPushButton;
class QScrollArea;
class QThread;

class AboutDialog : public QDialog {
    Q_OBJECT
public:
    explicit AboutDialog(const mixlab::DeviceInfo &device, QWidget *parent = nullptr);
    // Leaves a measurement still running to finish on its own (it writes the cache).
    ~AboutDialog() override;

    // The facts shown, one "Label: value" per line (for bug reports and tests).
    QString versionsText() const { return m_text + m_capabilitiesText + m_ceilingsText; }
    // The ceilings part alone: "Ceilings: not measured ..." or one line per ceiling.
    QString ceilingsText() const { return m_ceilingsText; }
    bool isMeasuring() const { return m_probe != nullptr; }
    // The cache read and written (default: mixlab::default_ceilings_cache_path()).
    QString cachePath() const { return m_cachePath; }

public slots:
    // Probes the device's ceilings on a worker thread (seconds on a GPU); the dialog stays
    // responsive and shows the result when it arrives. Does nothing while one runs.
    void measureNow();

signals:
    void ceilingsMeasured();

protected:
    void showEvent(QShowEvent *event) override;

private:
    // Grows the dialog so every row shows (up to most of the screen; beyond, they scroll).
    void fitToContents();
    struct ProbeResult;
    void showCeilings(const mixlab::Ceilings *ceilings, const QString &problem);
    void onProbeFinished();

    mixlab::DeviceInfo m_device;
    QString m_cachePath;
    QString m_text, m_capabilitiesText, m_ceilingsText;
    QScrollArea *m_scroll = nullptr; // the facts, above the buttons
    QLabel *m_ceilingsLabel = nullptr;
    QPushButton *m_measureButton = nullptr;
    QThread *m_probe = nullptr;
    std::shared_ptr<ProbeResult> m_result;
};
