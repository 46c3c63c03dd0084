// Helpers the engine's test suites share: seeded random inputs, moving data in and out of
// a backend, NaN-poisoned outputs, exact and tolerance comparisons that name the element.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/error.h"

#include <QtTest/QtTest>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

// Exact float equality: QCOMPARE on floats is fuzzy (and against 0 accepts |x| <= 1e-5).
#define EXPECT_EXACT(actual, expected)                                                             \
    do {                                                                                           \
        const double a_ = double(actual), e_ = double(expected);                                   \
        if (!(a_ == e_)) /* formats the message only on failure */                                 \
            QFAIL(qPrintable(QString("%1 is %2, expected exactly %3")                              \
                                 .arg(#actual)                                                     \
                                 .arg(a_, 0, 'g', 9)                                               \
                                 .arg(e_, 0, 'g', 9)));                                            \
    } while (false)

namespace mixlab::test {

using Vec = std::vector<float>;
using DVec = std::vector<double>;

inline const float k_nan = std::numeric_limits<float>::quiet_NaN();
inline const float k_inf = std::numeric_limits<float>::infinity();

// The message of the E that f throws, for checking a refusal's text: empty when f throws
// nothing, so a comparison or a search in it fails. Any other exception is not caught here:
// QtTest reports it as "Caught unhandled exception", a failure, and ends the suite.
template <class E, class F>
std::string thrown_message(F&& f)
{
    try {
        std::forward<F>(f)();
    } catch (const E& e) {
        return e.what();
    }
    return {};
}

// Fails unless `message` (a thrown_message) starts with prefix and contains part.
inline void verify_error_message(const std::string& message, const QString& prefix,
                                 const QString& part)
{
    const QString text = QString::fromStdString(message);
    QVERIFY2(!text.isEmpty(), qPrintable("no error; expected one containing: " + part));
    QVERIFY2(text.startsWith(prefix) && text.contains(part), qPrintable(text));
}

// Fails unless f throws an Error whose message contains part.
template <class F>
void expect_error(F&& f, const QString& part)
{
    verify_error_message(thrown_message<Error>(std::forward<F>(f)), QString(), part);
}

// Fails unless f throws an Error from the CPU backend's argument checks of `op`: the message
// starts "cpu backend: <op>: " and contains part.
template <class F>
void expect_cpu_error(F&& f, const char* op, const QString& part)
{
    verify_error_message(thrown_message<Error>(std::forward<F>(f)),
                         QString("cpu backend: ") + op + ": ", part);
}

// n values uniform in [lo, hi), the same for a given seed on every run.
inline Vec random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    Vec v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// A new buffer of dtype t holding v (rounded to t).
inline Buffer upload(Backend& be, const Vec& v, DType t = DType::F32)
{
    Buffer b = be.alloc(v.size(), t);
    be.upload_f32(b, v.data(), v.size());
    return b;
}

inline Buffer upload_i32(Backend& be, const std::vector<std::int32_t>& v)
{
    Buffer b = be.alloc(v.size(), DType::I32);
    be.upload_raw(b, v.data(), v.size() * sizeof(std::int32_t));
    return b;
}

// A buffer full of NaN: an op that forgets to write an element leaves it visible.
inline Buffer poisoned(Backend& be, std::size_t n, DType t = DType::F32)
{
    Buffer b = be.alloc(n, t);
    be.fill(b, k_nan);
    return b;
}

// Every element of b as floats (waits for the backend).
inline Vec download(Backend& be, const Buffer& b)
{
    Vec v(b.count());
    be.download_f32(b, v.data(), v.size());
    return v;
}

// Fails with the first element outside atol + rtol * |ref|.
inline void expect_close(const Vec& got, const DVec& ref, double atol, double rtol,
                         const char* what)
{
    QCOMPARE(got.size(), ref.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::abs(double(got[i]) - ref[i]);
        if (!(err <= atol + rtol * std::abs(ref[i])))
            QFAIL(qPrintable(QString("%1[%2]: got %3, expected %4 (|err| %5 > %6 + %7*|ref|)")
                                 .arg(what)
                                 .arg(i)
                                 .arg(double(got[i]), 0, 'g', 9)
                                 .arg(ref[i], 0, 'g', 9)
                                 .arg(err, 0, 'g', 3)
                                 .arg(atol)
                                 .arg(rtol)));
    }
}

} // namespace mixlab::test
