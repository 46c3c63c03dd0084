// WeightsFolder: where this session's runs leave their trained weights (one safetensors
// file per run, written by the worker as the run ends) until File > Save weights copies
// one out. A fresh folder per session under the app's data folder (a second window or
// instance never shares one), removed with the session; a run's file goes when the run
// leaves the store (File > New, Open, Delete). A session that crashed cannot remove its
// folder: its name carries the owner's process id, and the next session removes the
// folders whose owner is gone.
#pragma once
#include <QObject>
#include <QString>
#include <QTemporaryDir>

#include <memory>

class RunStore;

class WeightsFolder : public QObject {
    Q_OBJECT
public:
    // `base`: the folder to make the session's folder in (empty: the app's data folder's
    // "weights"). The folder may be unusable (read-only home): path() is then empty and
    // *error says why.
    explicit WeightsFolder(RunStore *store, const QString &base = {}, QObject *parent = nullptr);
    ~WeightsFolder() override;
    QString path() const;
    QString error() const { return m_error; }

    // Removes the session folders in `base` whose owning process no longer runs
    // ("session-<pid>-XXXXXX"); returns how many. Folders of a live process, or named
    // otherwise, stay.
    static int removeAbandoned(const QString &base);

    // Copies the run's weights to `destination` atomically (a crash leaves the old file or
    // the new one). False with *error naming what failed.
    static bool copyWeights(const QString &source, const QString &destination, QString *error);

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_error;
};
