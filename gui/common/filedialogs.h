// File dialogs through one door: each kind of file starts in the folder last used for that
// kind (kept in the app's settings), a save dialog proposes a name made from the model's
// ("small-cnn.mixlab.json", "small-cnn-log.json"), and a test can answer in place of the
// dialog, as it can for messages (usermessages.h).
#pragma once
#include <QString>

#include <functional>

class QWidget;

enum class FileKind { Experiment, Model, Log, Chart, Report, DatasetFolder, Weights };

struct FileRequest {
    enum class Mode { Open, Save, Folder };
    Mode mode = Mode::Open;
    FileKind kind = FileKind::Experiment;
    QString title;
    QString start;   // where the dialog opens: a folder, or folder and proposed file name
    QString filters; // ";;"-separated, as QFileDialog takes them
};

// Returns the chosen path ("" for cancelled) and may set *selectedFilter. An empty
// function restores the dialogs.
using FileDialogAnswerer =
    std::function<QString(const FileRequest &request, QString *selectedFilter)>;
void setFileDialogAnswerer(FileDialogAnswerer answerer);

// The folder the last dialog of this kind chose (or the one its file lies in); the
// current folder before any.
QString lastFolder(FileKind kind);
// A file-name stem from a model's name: "small-cnn" stays, "ResNet 18 (CIFAR)" becomes
// "ResNet-18-CIFAR"; "mixlab" for a model without a name.
QString fileStem(const QString &modelName);

QString askOpenFile(QWidget *parent, FileKind kind, const QString &title, const QString &filters);
// `name` is a file name to put in the last folder, or a path kept as it is (the file
// being saved again under another name starts where it is).
QString askSaveFile(QWidget *parent, FileKind kind, const QString &title, const QString &name,
                    const QString &filters, QString *selectedFilter = nullptr);
QString askFolder(QWidget *parent, FileKind kind, const QString &title);
