// The dialogs behind showUserError/askUser, and the test recorder that replaces them.
#include "common/usermessages.h"

#include <QFileInfo>
#include <QMessageBox>
#include <QPushButton>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <sys/statvfs.h>
#include <unistd.h>

namespace {

UserMessageRecorder &recorder()
{
    static UserMessageRecorder r;
    return r;
}

} // namespace

void setUserMessageRecorder(UserMessageRecorder r) { recorder() = std::move(r); }

void showUserError(QWidget *parent, const QString &title, const QString &text)
{
    if (recorder()) {
        recorder()(UserMessage{UserMessage::Kind::Error, title, text, {}});
        return;
    }
    QMessageBox::warning(parent, title, text);
}

int askUser(QWidget *parent, const QString &title, const QString &text, const QStringList &choices)
{
    if (recorder())
        return recorder()(UserMessage{UserMessage::Kind::Question, title, text, choices});
    QMessageBox box(QMessageBox::Question, title, text, QMessageBox::NoButton, parent);
    std::vector<QPushButton *> buttons;
    for (int i = 0; i < choices.size(); ++i)
        buttons.push_back(box.addButton(choices[i], i + 1 == choices.size() && i > 0
                                                        ? QMessageBox::RejectRole
                                                        : QMessageBox::AcceptRole));
    if (!buttons.empty()) {
        box.setDefaultButton(buttons.front());
        box.setEscapeButton(buttons.back());
    }
    box.exec();
    for (std::size_t i = 0; i < buttons.size(); ++i)
        if (box.clickedButton() == buttons[i]) return int(i);
    return -1;
}

QString describeWriteProblem(const QString &path)
{
    const QFileInfo info(path);
    const QByteArray dir = QFile::encodeName(info.absolutePath());
    const auto reason = [](int err) { return QString::fromLocal8Bit(std::strerror(err)); };
    if (::access(dir.constData(), W_OK) != 0) return reason(errno);
    if (info.exists() &&
        ::access(QFile::encodeName(info.absoluteFilePath()).constData(), W_OK) != 0)
        return reason(errno);
    struct statvfs fs {};
    if (::statvfs(dir.constData(), &fs) == 0 && fs.f_bavail == 0) return reason(ENOSPC);
    return {};
}
