// DeviceProbe: one DeviceInfo query on a short-lived thread, delivered by a queued call.
#include "common/deviceprobe.h"

#include "mixlab/error.h"

#include <QMetaObject>

DeviceProbe::DeviceProbe(QObject *parent) : QObject(parent) {}

DeviceProbe::~DeviceProbe()
{
    // The queued delivery dies with this object; only the thread needs joining.
    if (m_thread.joinable()) m_thread.join();
}

void DeviceProbe::start()
{
    if (m_started) return;
    m_started = true;
    m_thread = std::thread([this] {
        mixlab::DeviceInfo info = probeNow();
        QMetaObject::invokeMethod(
            this,
            [this, info] {
                m_info = info;
                m_done = true;
                if (m_thread.joinable())
                    m_thread.join(); // it has returned from invokeMethod by now or soon
                emit probed(m_info);
            },
            Qt::QueuedConnection);
    });
}

mixlab::DeviceInfo DeviceProbe::probeNow()
{
    try {
        return mixlab::make_backend(mixlab::DeviceChoice::Auto)->info();
    } catch (const std::exception &) {
        // A broken driver must not keep the app from starting: the CPU always works.
    }
    try {
        return mixlab::make_backend(mixlab::DeviceChoice::CPU)->info();
    } catch (const std::exception &) {}
    mixlab::DeviceInfo info;
    info.backend = mixlab::BackendKind::Cpu;
    info.name = "CPU (no CUDA device)";
    return info;
}

QString DeviceProbe::describe(const mixlab::DeviceInfo &info)
{
    if (info.backend != mixlab::BackendKind::Cuda)
        return QString::fromStdString(info.name.empty() ? std::string("CPU (no CUDA device)")
                                                        : info.name);
    const double gib = double(info.memory_bytes) / (1024.0 * 1024.0 * 1024.0);
    return QStringLiteral("%1 (compute capability %2.%3, %4 GiB)")
        .arg(QString::fromStdString(info.name))
        .arg(info.cc_major)
        .arg(info.cc_minor)
        .arg(gib, 0, 'f', 1);
}
