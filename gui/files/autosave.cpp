// Autosave files: one per running session, written through saveExperiment (QSaveFile,
// so a crash mid-write leaves the previous autosave), found again after a crash by their
// stale QLockFile.
#include "files/autosave.h"

#include "runs/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLockFile>
#include <QStandardPaths>

#include <algorithm>

namespace {

const QString k_suffix = QStringLiteral(".mixlab");
QString lockPathOf(const QString &path) { return path + QStringLiteral(".lock"); }

} // namespace

Autosave::Autosave(const RunStore *store, std::function<ExperimentFile()> source, QObject *parent)
    : QObject(parent), m_store(store), m_source(std::move(source))
{
    m_timer.setInterval(k_defaultIntervalMs);
    connect(&m_timer, &QTimer::timeout, this, &Autosave::onTimer);
}

Autosave::~Autosave() = default;

QString Autosave::defaultDirectory()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) +
           QStringLiteral("/autosave");
}

bool Autosave::start(const QString &dir, QString *error)
{
    if (m_lock) return true;
    if (!QDir().mkpath(dir)) {
        if (error) *error = tr("cannot create the autosave folder %1").arg(dir);
        return false;
    }
    // The pid and the start time make the name unique on this machine.
    const QString session =
        QStringLiteral("session-%1-%2")
            .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss-zzz")))
            .arg(QCoreApplication::applicationPid());
    const QString path = QDir(dir).filePath(session + k_suffix);
    auto lock = std::make_unique<QLockFile>(lockPathOf(path));
    lock->setStaleLockTime(0); // stale only when the process is gone, never by age
    if (!lock->tryLock(0)) {
        if (error)
            *error = tr("cannot lock %1 (error %2)").arg(lockPathOf(path)).arg(int(lock->error()));
        return false;
    }
    m_lock = std::move(lock);
    m_path = path;
    m_changed = true; // the first tick writes the session's starting point
    m_timer.start();
    return true;
}

void Autosave::setInterval(int ms) { m_timer.setInterval(std::max(1, ms)); }

void Autosave::onTimer()
{
    if (m_changed) saveNow();
}

void Autosave::epochEnded()
{
    m_changed = true;
    if (!m_sinceSave.isValid() || m_sinceSave.elapsed() >= k_minEpochSaveGapMs) saveNow();
}

bool Autosave::saveNow(QString *error)
{
    if (!m_lock) return false;
    QString message;
    m_sinceSave.start();
    if (!saveExperiment(m_path, m_source(), *m_store, &message)) {
        if (error) *error = message;
        if (!m_failureReported) {
            m_failureReported = true;
            emit saveFailed(message);
        }
        return false;
    }
    m_changed = false;
    m_failureReported = false;
    emit saved(m_path);
    return true;
}

void Autosave::finish()
{
    m_timer.stop();
    if (!m_lock) return;
    QFile::remove(m_path);
    m_lock->unlock(); // removes the lock file
    m_lock.reset();
}

std::vector<Autosave::Orphan> Autosave::findOrphans(const QString &dir)
{
    std::vector<Orphan> found;
    const QFileInfoList files =
        QDir(dir).entryInfoList({QStringLiteral("*") + k_suffix}, QDir::Files, QDir::Time);
    for (const QFileInfo &info : files) {
        QLockFile lock(lockPathOf(info.absoluteFilePath()));
        lock.setStaleLockTime(0);
        // Taking the lock succeeds when there is none or its process is gone (Qt removes a
        // lock whose pid no longer runs on this host); a live session keeps it.
        if (!lock.tryLock(0)) continue;
        lock.unlock();
        found.push_back({info.absoluteFilePath(), info.lastModified()});
    }
    return found;
}

void Autosave::removeOrphan(const QString &path)
{
    QFile::remove(path);
    QFile::remove(lockPathOf(path));
}

QString Autosave::moveAside(const QString &path)
{
    const QString target = path + QStringLiteral(".corrupt-") +
                           QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QFile::remove(lockPathOf(path));
    return QFile::rename(path, target) ? target : QString();
}
