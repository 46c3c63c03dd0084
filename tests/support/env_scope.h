// EnvScope: sets an environment variable (a test hook such as the CPU backend's
// MIXLAB_FAULT_OOM_*, core/src/backends/fault_injection.h) for the life of a scope. The
// hooks are read when a backend is made, so make it inside the scope.
#pragma once
#include <QByteArray>
#include <QtGlobal>

#include <cstdint>

namespace mixlab::test {

struct EnvScope {
    QByteArray name;
    EnvScope(const char* n, std::int64_t value) : name(n)
    {
        qputenv(n, QByteArray::number(qint64(value)));
    }
    ~EnvScope() { qunsetenv(name.constData()); }
    EnvScope(const EnvScope&) = delete;
    EnvScope& operator=(const EnvScope&) = delete;
};

} // namespace mixlab::test
