// File dialogs: QFileDialog's static functions started in the kind's last folder, which
// each accepted answer updates ("folders/<kind>" in the app's settings).
#include "common/filedialogs.h"

#include "common/appsettings.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QRegularExpression>

#include <utility>

namespace {

FileDialogAnswerer &answerer()
{
    static FileDialogAnswerer a;
    return a;
}

QString settingsKey(FileKind kind)
{
    switch (kind) {
    case FileKind::Experiment: return QStringLiteral("folders/experiment");
    case FileKind::Model: return QStringLiteral("folders/model");
    case FileKind::Log: return QStringLiteral("folders/log");
    case FileKind::Chart: return QStringLiteral("folders/chart");
    case FileKind::Report: return QStringLiteral("folders/report");
    case FileKind::DatasetFolder: return QStringLiteral("folders/dataset");
    case FileKind::Weights: return QStringLiteral("folders/weights");
    }
    return QStringLiteral("folders/other");
}

QString ask(QWidget *parent, const FileRequest &request, QString *selectedFilter)
{
    QString chosen;
    if (answerer()) {
        chosen = answerer()(request, selectedFilter);
    } else {
        switch (request.mode) {
        case FileRequest::Mode::Open:
            chosen = QFileDialog::getOpenFileName(parent, request.title, request.start,
                                                  request.filters, selectedFilter);
            break;
        case FileRequest::Mode::Save:
            chosen = QFileDialog::getSaveFileName(parent, request.title, request.start,
                                                  request.filters, selectedFilter);
            break;
        case FileRequest::Mode::Folder:
            chosen = QFileDialog::getExistingDirectory(parent, request.title, request.start,
                                                       QFileDialog::ShowDirsOnly);
            break;
        }
    }
    if (!chosen.isEmpty()) {
        const QFileInfo info(chosen);
        appSettings().setValue(settingsKey(request.kind), request.mode == FileRequest::Mode::Folder
                                                              ? info.absoluteFilePath()
                                                              : info.absolutePath());
    }
    return chosen;
}

} // namespace

void setFileDialogAnswerer(FileDialogAnswerer a) { answerer() = std::move(a); }

QString lastFolder(FileKind kind)
{
    const QString folder = appSettings().value(settingsKey(kind)).toString();
    // A folder deleted since is no place to start.
    return !folder.isEmpty() && QFileInfo(folder).isDir() ? folder : QDir::currentPath();
}

QString fileStem(const QString &modelName)
{
    QString stem = modelName.trimmed();
    stem.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    stem.remove(QRegularExpression(QStringLiteral("^[-.]+|-+$")));
    return stem.isEmpty() ? QStringLiteral("mixlab") : stem;
}

QString askOpenFile(QWidget *parent, FileKind kind, const QString &title, const QString &filters)
{
    return ask(parent, {FileRequest::Mode::Open, kind, title, lastFolder(kind), filters}, nullptr);
}

QString askSaveFile(QWidget *parent, FileKind kind, const QString &title, const QString &name,
                    const QString &filters, QString *selectedFilter)
{
    const QString start =
        QFileInfo(name).isAbsolute() ? name : QDir(lastFolder(kind)).filePath(name);
    return ask(parent, {FileRequest::Mode::Save, kind, title, start, filters}, selectedFilter);
}

QString askFolder(QWidget *parent, FileKind kind, const QString &title)
{
    return ask(parent, {FileRequest::Mode::Folder, kind, title, lastFolder(kind), QString()},
               nullptr);
}
