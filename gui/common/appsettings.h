// The app's one settings store (QSettings "MixLab"/"mixlab"): window layout, recent files,
// the folder each kind of file dialog starts in.
#pragma once
#include <QSettings>

inline QSettings appSettings()
{
    return QSettings(QStringLiteral("MixLab"), QStringLiteral("mixlab"));
}
