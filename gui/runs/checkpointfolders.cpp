// Where the app keeps its runs' checkpoints: the setting, the folders' names, and what a
// folder holds, read through the core's listing (mixlab/checkpoint_folder.h).
#include "runs/checkpointfolders.h"

#include "common/appsettings.h"

#include "mixlab/checkpoint_folder.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QObject>
#include <QStandardPaths>

#include <algorithm>

namespace checkpointfolders {
namespace {

const QString k_keepKey = QStringLiteral("checkpoints/keep");

QString &testRoot()
{
    static QString root;
    return root;
}

std::vector<mixlab::CheckpointFile> listed(const QString &folder)
{
    return folder.isEmpty() ? std::vector<mixlab::CheckpointFile>{}
                            : mixlab::list_checkpoints(QFile::encodeName(folder).toStdString());
}

} // namespace

int keepSetting()
{
    bool ok = false;
    const int keep = appSettings().value(k_keepKey, k_defaultKeep).toInt(&ok);
    return ok ? std::clamp(keep, 0, k_maxKeep) : k_defaultKeep;
}

void setKeepSetting(int keep) { appSettings().setValue(k_keepKey, std::clamp(keep, 0, k_maxKeep)); }

QString rootFolder()
{
    if (!testRoot().isEmpty()) return testRoot();
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
           QStringLiteral("/checkpoints");
}

void setRootFolderForTesting(const QString &base) { testRoot() = base; }

QString experimentFolder(const QString &experimentFile)
{
    QString name = QFileInfo(experimentFile).fileName();
    if (name.endsWith(QLatin1String(".mixlab.json"))) name.chop(12);
    const QString stem = name.isEmpty() ? QStringLiteral("untitled") : QFileInfo(name).baseName();
    return rootFolder() + QLatin1Char('/') + (stem.isEmpty() ? QStringLiteral("untitled") : stem);
}

QString runFolder(const QString &experimentFolder, int runId, mixlab::Policy policy, QString *error)
{
    const QString name =
        experimentFolder +
        QStringLiteral("/%1-run%2-%3")
            .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")))
            .arg(runId)
            .arg(QString::fromLatin1(mixlab::policy_name(policy).data(),
                                     qsizetype(mixlab::policy_name(policy).size())));
    // Run ids start again in each session, window and process: a run numbered as one that
    // started in the same second must not share its folder, whose checkpoints Continue
    // training would offer and Delete run would delete. Only making the folder tells a free
    // name from a taken one without a gap another claimant could fall into.
    try {
        return QFile::decodeName(
            mixlab::claim_checkpoint_folder(QFile::encodeName(name).toStdString()).c_str());
    } catch (const std::exception &e) {
        if (error) *error = QString::fromUtf8(e.what());
        return {};
    }
}

bool release(const QString &runFolder)
{
    if (runFolder.isEmpty() ||
        !mixlab::release_checkpoint_folder(QFile::encodeName(runFolder).toStdString()))
        return false;
    // Another process claiming a run folder in it as it goes makes it again (the claim).
    mixlab::release_checkpoint_folder(
        QFile::encodeName(QFileInfo(runFolder).absolutePath()).toStdString());
    return true;
}

QString describe(const QString &runFolder)
{
    const std::vector<mixlab::CheckpointFile> files = listed(runFolder);
    if (files.empty()) return QObject::tr("no checkpoint yet in %1").arg(runFolder);
    qint64 bytes = 0;
    for (const mixlab::CheckpointFile &f : files) bytes += f.bytes;
    const mixlab::CheckpointFile &last = files.back();
    const QString count = files.size() == 1
                              ? QObject::tr("1 checkpoint")
                              : QObject::tr("%1 checkpoints").arg(qsizetype(files.size()));
    // The file's epoch is the epochs completed: "epoch 0" read as a first epoch numbered
    // from zero, where every other place numbers them from one.
    const QString done = last.epoch == 0   ? QObject::tr("within the first epoch")
                         : last.epoch == 1 ? QObject::tr("1 epoch done")
                                           : QObject::tr("%1 epochs done").arg(last.epoch);
    return QObject::tr("%1 (%2), newest at step %3 (%4): %5")
        .arg(count, QLocale().formattedDataSize(bytes, 0))
        .arg(last.step)
        .arg(done, runFolder);
}

QString newest(const QString &runFolder)
{
    const std::vector<mixlab::CheckpointFile> files = listed(runFolder);
    return files.empty() ? QString() : QFile::decodeName(files.back().path.c_str());
}

Held held(const QString &runFolder)
{
    Held h;
    for (const mixlab::CheckpointFile &f : listed(runFolder)) {
        ++h.count;
        h.bytes += f.bytes;
    }
    return h;
}

QString deleteCheckpoints(const QString &runFolder)
{
    if (runFolder.isEmpty()) return {};
    return QString::fromStdString(
        mixlab::delete_checkpoints(QFile::encodeName(runFolder).toStdString()));
}

} // namespace checkpointfolders
