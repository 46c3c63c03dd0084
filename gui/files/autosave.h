// Autosave: the current experiment written every few seconds when it changed (and at
// epoch ends) to <AppDataLocation>/autosave/<session>.mixlab, locked for the session by
// a QLockFile, so a later start can tell a crashed session's file from a live one.
#pragma once
#include "files/experiment.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <functional>
#include <memory>
#include <vector>

class QLockFile;
class RunStore;

class Autosave : public QObject {
    Q_OBJECT
public:
    // `source` gives the experiment's model, config and compare policies at save time.
    Autosave(const RunStore *store, std::function<ExperimentFile()> source,
             QObject *parent = nullptr);
    ~Autosave() override; // leaves the file (a clean exit calls finish() first)

    static QString defaultDirectory(); // <AppDataLocation>/autosave
    static constexpr int k_defaultIntervalMs = 60000;
    // Epoch ends save at once, but at most this often (a long run's file is large).
    static constexpr int k_minEpochSaveGapMs = 5000;

    // Takes a new session file in `dir` and its lock. False with *error when the folder
    // cannot be made or locked: the app then runs without autosave.
    bool start(const QString &dir, QString *error);
    bool isActive() const { return m_lock != nullptr; }
    QString filePath() const { return m_path; }
    void setInterval(int ms);
    int interval() const { return m_timer.interval(); }

    void markChanged() { m_changed = true; }
    bool isChanged() const { return m_changed; }
    // An epoch ended: save now unless the last save was very recent.
    void epochEnded();
    // Writes the file now (whether or not it changed). False with *error on failure.
    bool saveNow(QString *error = nullptr);
    // Clean exit: removes the file and releases the lock.
    void finish();

    // Autosaves in `dir` whose session is gone (lock stale or missing), newest first.
    // Files held by a running MixLab are left alone.
    struct Orphan {
        QString path;
        QDateTime saved;
    };
    static std::vector<Orphan> findOrphans(const QString &dir);
    // Removes an orphan (recovered or discarded) with its lock file.
    static void removeOrphan(const QString &path);
    // Renames an orphan that cannot be read to <name>.corrupt-<time> next to it, so it is
    // neither offered again nor lost. Returns the new path (empty if it could not move).
    static QString moveAside(const QString &path);

signals:
    void saved(const QString &path);
    // A save failed (disk full, folder gone): reported once until a save succeeds again.
    void saveFailed(const QString &message);

private:
    void onTimer();

    const RunStore *m_store;
    std::function<ExperimentFile()> m_source;
    std::unique_ptr<QLockFile> m_lock;
    QString m_path;
    QTimer m_timer;
    QElapsedTimer m_sinceSave;
    bool m_changed = false;
    bool m_failureReported = false;
};
