// How a keyboard shortcut reads in the app: "Ctrl+Shift+R" (the platform's own names), and
// a tooltip with its key after it, so a button says what its menu action's key is.
#pragma once
#include <QKeySequence>
#include <QList>
#include <QString>

QString shortcutText(const QKeySequence &key);
// The platform's keys for a standard action, or `fallback` where the platform has none
// (Save As and Quit have none outside KDE and GNOME).
QList<QKeySequence> standardKeys(QKeySequence::StandardKey key, const QKeySequence &fallback);
// "Start a run (Ctrl+R)"; `tip` alone when there is no key.
QString withShortcut(const QString &tip, const QKeySequence &key);
