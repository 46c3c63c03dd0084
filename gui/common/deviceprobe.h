// DeviceProbe: asks the engine once, at start-up, which device an "auto" run would use,
// off the GUI thread (creating a CUDA context can take a second). Widgets only ever see
// the DeviceInfo value it hands back, never a Backend.
#pragma once
#include "mixlab/backend.h"

#include <QObject>
#include <QString>

#include <thread>

class DeviceProbe : public QObject {
    Q_OBJECT
public:
    explicit DeviceProbe(QObject *parent = nullptr);
    ~DeviceProbe() override; // joins the probing thread

    // Starts the one probe; probed() follows on this object's thread. Later calls do nothing.
    void start();
    bool isDone() const { return m_done; }
    const mixlab::DeviceInfo &info() const { return m_info; }

    // The probe itself, synchronous and never throwing: the auto backend's info, or the
    // CPU's when no CUDA device can be opened.
    static mixlab::DeviceInfo probeNow();
    // "NVIDIA H200 (compute capability 9.0, 139.8 GiB)" or "CPU (no CUDA device)".
    static QString describe(const mixlab::DeviceInfo &info);

signals:
    void probed(const mixlab::DeviceInfo &info);

private:
    std::thread m_thread;
    mixlab::DeviceInfo m_info;
    bool m_started = false;
    bool m_done = false;
};
