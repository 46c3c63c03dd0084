// Error dialogs and questions for the user, through one door: normally a modal
// QMessageBox; when a test has installed a recorder, the message is recorded (and the
// recorder answers the question) so nothing blocks.
#pragma once
#include <QString>
#include <QStringList>

#include <functional>

class QWidget;

struct UserMessage {
    enum class Kind { Error, Question };
    Kind kind = Kind::Error;
    QString title;
    QString text;
    QStringList choices; // a question's buttons, in order
};

// Returns the index of the chosen entry of message.choices for a question (-1: none, as
// when the dialog is closed); ignored for errors. An empty function restores dialogs.
using UserMessageRecorder = std::function<int(const UserMessage &message)>;
void setUserMessageRecorder(UserMessageRecorder recorder);

// Why writing `path` fails, as the system says it ("Read-only file system", "No space
// left on device"), found by asking the file system after the fact; empty when nothing
// is visibly wrong. Lets a message from a writer that lost errno name the reason.
QString describeWriteProblem(const QString &path);

// A warning dialog with `text`, which should name what failed and why.
void showUserError(QWidget *parent, const QString &title, const QString &text);

// A question with one button per choice (the first is the default; the last is what
// Escape picks). Returns the chosen index, or -1 when the dialog was closed otherwise.
int askUser(QWidget *parent, const QString &title, const QString &text, const QStringList &choices);
