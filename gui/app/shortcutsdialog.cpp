// ShortcutsDialog: a two-column tree, a group per menu or part, an action and its keys per
// row; the texts are the actions' own, without their mnemonics.
#include "app/shortcutsdialog.h"

#include "common/shortcuttext.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace {

QString plainText(const QString &text)
{
    QString t = text;
    t.replace(QLatin1String("&&"), QStringLiteral("\u0001"));
    t.remove(QLatin1Char('&'));
    t.replace(QStringLiteral("\u0001"), QStringLiteral("&"));
    return t;
}

QString keysText(const QAction *a)
{
    QStringList keys;
    for (const QKeySequence &k : a->shortcuts()) keys << shortcutText(k);
    return keys.join(QStringLiteral(", "));
}

void addMenuActions(const QMenu *menu, QList<QAction *> &out)
{
    for (QAction *a : menu->actions()) {
        if (a->menu())
            addMenuActions(a->menu(), out);
        else if (!a->shortcuts().isEmpty())
            out << a;
    }
}

} // namespace

QList<ShortcutsDialog::Group> ShortcutsDialog::collect(const QMainWindow *window,
                                                       const QList<Part> &parts)
{
    QList<Group> groups;
    QList<QAction *> listed;
    for (QAction *top : window->menuBar()->actions()) {
        if (!top->menu()) continue;
        Group g{plainText(top->text()), {}};
        addMenuActions(top->menu(), g.actions);
        listed += g.actions;
        if (!g.actions.isEmpty()) groups << g;
    }
    QList<Group> partGroups;
    for (const Part &p : parts) partGroups << Group{p.title, {}};
    Group other{tr("Other"), {}};
    for (QAction *a : window->findChildren<QAction *>()) {
        if (a->shortcuts().isEmpty() || listed.contains(a)) continue;
        Group *into = &other;
        for (int i = 0; i < parts.size(); ++i) {
            auto *owner = qobject_cast<QWidget *>(a->parent());
            if (owner && (owner == parts[i].widget || parts[i].widget->isAncestorOf(owner))) {
                into = &partGroups[i];
                break;
            }
        }
        into->actions << a;
    }
    for (const Group &g : partGroups)
        if (!g.actions.isEmpty()) groups << g;
    if (!other.actions.isEmpty()) groups << other;
    return groups;
}

ShortcutsDialog::ShortcutsDialog(const QList<Group> &groups, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Keyboard shortcuts"));
    m_list = new QTreeWidget(this);
    m_list->setObjectName("shortcutList");
    m_list->setColumnCount(2);
    m_list->setHeaderLabels({tr("Action"), tr("Keys")});
    m_list->setRootIsDecorated(false);
    m_list->setSelectionMode(QAbstractItemView::NoSelection);
    QFont bold = m_list->font();
    bold.setBold(true);
    for (const Group &g : groups) {
        auto *header = new QTreeWidgetItem(m_list, {g.title});
        header->setFont(0, bold);
        header->setFirstColumnSpanned(true);
        for (const QAction *a : g.actions) {
            auto *row = new QTreeWidgetItem(header, {plainText(a->text()), keysText(a)});
            row->setToolTip(0, a->toolTip());
        }
    }
    m_list->expandAll();
    m_list->header()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_list->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_list->header()->setStretchLastSection(false);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_list);
    layout->addWidget(buttons);
    resize(520, 560);
}

QStringList ShortcutsDialog::entries() const
{
    QStringList out;
    for (int i = 0; i < m_list->topLevelItemCount(); ++i) {
        const QTreeWidgetItem *group = m_list->topLevelItem(i);
        for (int j = 0; j < group->childCount(); ++j)
            out << QStringLiteral("%1: %2 = %3")
                       .arg(group->text(0), group->child(j)->text(0), group->child(j)->text(1));
    }
    return out;
}
