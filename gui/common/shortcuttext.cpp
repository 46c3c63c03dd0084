// Shortcut text: QKeySequence's native text, shared by tooltips and the shortcut list.
#include "common/shortcuttext.h"

QString shortcutText(const QKeySequence &key) { return key.toString(QKeySequence::NativeText); }

QString withShortcut(const QString &tip, const QKeySequence &key)
{
    return key.isEmpty() ? tip : QStringLiteral("%1 (%2)").arg(tip, shortcutText(key));
}

QList<QKeySequence> standardKeys(QKeySequence::StandardKey key, const QKeySequence &fallback)
{
    const QList<QKeySequence> keys = QKeySequence::keyBindings(key);
    return keys.isEmpty() ? QList<QKeySequence>{fallback} : keys;
}
