// WeightsFolder: the session's folder of run weights, and the atomic copy out of it.
#include "runs/weightsfolder.h"

#include "runs/runstore.h"
#include "runs/workermessages.h"

#include <QCoreApplication>
#include <QDir>
#include <QRegularExpression>
#include <QFile>
#include <QSaveFile>
#include <QStandardPaths>

#include <signal.h>

#include <cerrno>

WeightsFolder::WeightsFolder(RunStore *store, const QString &base, QObject *parent)
    : QObject(parent)
{
    const QString root =
        base.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                             QStringLiteral("/weights")
                       : base;
    if (!QDir().mkpath(root)) {
        m_error = tr("cannot make the folder %1 for the runs' weights").arg(root);
        return;
    }
    removeAbandoned(root);
    m_dir = std::make_unique<QTemporaryDir>(
        root + QStringLiteral("/session-%1-XXXXXX").arg(QCoreApplication::applicationPid()));
    if (!m_dir->isValid()) {
        m_error = tr("cannot make a folder for the runs' weights in %1: %2")
                      .arg(root, m_dir->errorString());
        m_dir.reset();
        return;
    }
    connect(store, &RunStore::runRemoved, this, [this](int id) {
        if (m_dir) QFile::remove(runWeightsPath(m_dir->path(), id));
    });
}

WeightsFolder::~WeightsFolder() = default;

int WeightsFolder::removeAbandoned(const QString &base)
{
    static const QRegularExpression name(QStringLiteral("^session-(\\d+)-.+$"));
    int removed = 0;
    const QStringList folders = QDir(base).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &folder : folders) {
        const QRegularExpressionMatch m = name.match(folder);
        bool ok = false;
        const qint64 pid = m.hasMatch() ? m.captured(1).toLongLong(&ok) : 0;
        if (!ok || pid <= 0 || pid == QCoreApplication::applicationPid()) continue;
        // Signal 0 only asks whether the process exists; EPERM: it does, as another user's.
        if (::kill(pid_t(pid), 0) == 0 || errno == EPERM) continue;
        if (QDir(base + QLatin1Char('/') + folder).removeRecursively()) ++removed;
    }
    return removed;
}

QString WeightsFolder::path() const { return m_dir ? m_dir->path() : QString(); }

bool WeightsFolder::copyWeights(const QString &source, const QString &destination, QString *error)
{
    const auto failWith = [error](const QString &text) {
        if (error) *error = text;
        return false;
    };
    QFile in(source);
    if (!in.open(QIODevice::ReadOnly))
        return failWith(tr("cannot read the run's weights %1: %2").arg(source, in.errorString()));
    QSaveFile out(destination);
    if (!out.open(QIODevice::WriteOnly))
        return failWith(tr("cannot write %1: %2").arg(destination, out.errorString()));
    constexpr qint64 k_chunk = qint64(1) << 22;
    while (!in.atEnd()) {
        const QByteArray chunk = in.read(k_chunk);
        if (chunk.isEmpty() && in.error() != QFileDevice::NoError)
            return failWith(
                tr("cannot read the run's weights %1: %2").arg(source, in.errorString()));
        if (out.write(chunk) != chunk.size())
            return failWith(tr("cannot write %1: %2").arg(destination, out.errorString()));
    }
    if (!out.commit())
        return failWith(tr("cannot write %1: %2").arg(destination, out.errorString()));
    return true;
}
