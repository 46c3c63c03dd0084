// ShortcutsDialog: Help > Keyboard shortcuts, every action that has a key, read from the
// actions themselves so the list cannot fall behind them: the menus' in menu order, then
// the actions of named parts of the window (keys that work while that part has focus),
// then any other.
#pragma once
#include <QDialog>
#include <QList>
#include <QString>
#include <QStringList>

class QAction;
class QMainWindow;
class QTreeWidget;

class ShortcutsDialog : public QDialog {
    Q_OBJECT
public:
    struct Group {
        QString title;
        QList<QAction *> actions;
    };
    struct Part {
        QString title;
        QWidget *widget = nullptr;
    };
    // The groups for `window`: one per menu (submenus' actions included), one per part
    // for the actions inside it that no menu holds, and "Other" for the rest.
    static QList<Group> collect(const QMainWindow *window, const QList<Part> &parts);

    explicit ShortcutsDialog(const QList<Group> &groups, QWidget *parent = nullptr);

    // "Group: action = keys" per listed action, as shown.
    QStringList entries() const;

private:
    QTreeWidget *m_list = nullptr;
};
