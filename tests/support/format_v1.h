// The files MixLab 0.1.0 wrote before the engine owned its JSON forms
// (tests/data/format-v1/, README there): their paths and text, for the suites that check
// old files still open.
#pragma once
#include <QFile>
#include <QString>

#include <string>

namespace mixlab::test {

inline QString format_v1_path(const char* name)
{
    return QStringLiteral(MIXLAB_SOURCE_DIR "/tests/data/format-v1/") + QString::fromUtf8(name);
}

// The file's whole text; empty when it cannot be read (the caller's checks then fail).
inline std::string format_v1_text(const char* name)
{
    QFile f(format_v1_path(name));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

} // namespace mixlab::test
