// Tests for the host fp16 / bf16 / tf32 rounding: every half bit pattern, ties to even,
// overflow, subnormals and NaN, against references written independently of the code;
// and the split fp32 master (hd_math.h): exact round trips, its tie rule, its specials.
#include "base/hd_math.h"
#include "mixlab/dtype.h"

#include <QtTest/QtTest>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using namespace mixlab;

namespace {

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// The value of a binary16 pattern from its definition, in double.
double half_value(std::uint16_t h)
{
    const int sign = (h & 0x8000) ? -1 : 1;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    if (exp == 0) return sign * std::ldexp(double(mant), -24);
    if (exp == 31) return mant ? std::nan("") : sign * HUGE_VAL;
    return sign * std::ldexp(1.0 + mant / 1024.0, exp - 15);
}

// Brute-force nearest-even rounding onto a sorted grid of non-negative values whose
// index is also the bit pattern (so "even" is the index's low bit).
std::uint32_t nearest_even_index(const std::vector<double>& grid, double a)
{
    auto it = std::lower_bound(grid.begin(), grid.end(), a);
    if (it == grid.end()) return std::uint32_t(grid.size()); // beyond the grid
    const auto hi = std::uint32_t(it - grid.begin());
    if (*it == a || hi == 0) return hi;
    const std::uint32_t lo = hi - 1;
    const double dlo = a - grid[lo], dhi = grid[hi] - a;
    if (dlo < dhi) return lo;
    if (dhi < dlo) return hi;
    return (lo & 1u) ? hi : lo;
}

// Positive half values 0 .. 65504, then 65536 standing in for "the next value up":
// IEEE rounds to it (and so to infinity) exactly when a value reaches 65520.
const std::vector<double>& half_grid()
{
    static const std::vector<double> grid = [] {
        std::vector<double> g;
        for (std::uint32_t h = 0; h < 0x7c00; ++h) g.push_back(half_value(std::uint16_t(h)));
        g.push_back(65536.0);
        return g;
    }();
    return grid;
}

std::uint16_t reference_half(float f)
{
    const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(double(f));
    const std::uint32_t idx = nearest_even_index(half_grid(), a);
    return std::uint16_t(sign | std::min<std::uint32_t>(idx, 0x7c00));
}

// Nearest-even rounding of a finite float to `keep` leading bits of its pattern, by
// comparing the two neighbouring representable values in double.
std::uint32_t reference_truncate_round(float f, int dropped_bits)
{
    const std::uint32_t x = bits(f);
    const std::uint32_t sign = x & 0x80000000u;
    const std::uint32_t mag = x & 0x7fffffffu;
    const std::uint32_t step = 1u << dropped_bits;
    const std::uint32_t lo = mag & ~(step - 1);
    const std::uint32_t hi = lo + step;
    const double a = std::fabs(double(f));
    const double vlo = double(from_bits(lo));
    // hi may be the infinity pattern: its value "as if" the exponent continued is 2^128.
    const double vhi = hi >= 0x7f800000u ? std::ldexp(1.0, 128) : double(from_bits(hi));
    std::uint32_t pick;
    if (a - vlo < vhi - a)
        pick = lo;
    else if (vhi - a < a - vlo)
        pick = hi;
    else
        pick = ((lo >> dropped_bits) & 1u) ? hi : lo;
    if (pick > 0x7f800000u) pick = 0x7f800000u;
    return sign | pick;
}

bool half_is_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(std::uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// Random finite floats concentrated where half precision has its interesting cases
// (subnormals to overflow), plus some over the whole float range.
std::vector<float> random_floats(std::size_t n, std::uint32_t seed, int exp_lo, int exp_hi)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<std::uint32_t> mant(0, 0x7fffff), sign(0, 1);
    std::uniform_int_distribution<int> exp(exp_lo, exp_hi);
    std::vector<float> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(from_bits((sign(rng) << 31) | (std::uint32_t(exp(rng)) << 23) | mant(rng)));
    return out;
}

} // namespace

class TestDType : public QObject {
    Q_OBJECT

private slots:
    void names_and_sizes()
    {
        QCOMPARE(dtype_name(DType::F32), std::string_view("float32"));
        QCOMPARE(dtype_name(DType::F16), std::string_view("float16"));
        QCOMPARE(dtype_name(DType::BF16), std::string_view("bfloat16"));
        QCOMPARE(dtype_name(DType::I32), std::string_view("int32"));
        QCOMPARE(dtype_name(DType::U8), std::string_view("uint8"));
        QCOMPARE(dtype_size(DType::F32), std::size_t(4));
        QCOMPARE(dtype_size(DType::F16), std::size_t(2));
        QCOMPARE(dtype_size(DType::BF16), std::size_t(2));
        QCOMPARE(dtype_size(DType::I32), std::size_t(4));
        QCOMPARE(dtype_size(DType::U8), std::size_t(1));
        QCOMPARE(dtype_name(DType::I16), std::string_view("int16"));
        QCOMPARE(dtype_size(DType::I16), std::size_t(2));
        QVERIFY(!is_floating(DType::I16));
        QVERIFY(is_floating(DType::F32) && is_floating(DType::F16) && is_floating(DType::BF16));
        QVERIFY(!is_floating(DType::I32) && !is_floating(DType::U8));
    }

    // Every one of the 65536 patterns decodes to its defined value and encodes back to
    // itself (NaNs stay NaNs with their sign; -0 stays -0).
    void half_all_patterns_round_trip()
    {
        int failures = 0;
        for (std::uint32_t h = 0; h <= 0xffff; ++h) {
            const auto hb = std::uint16_t(h);
            const float f = half_bits_to_float(hb);
            const double want = half_value(hb);
            const std::uint16_t back = float_to_half_bits(f);
            bool ok;
            if (half_is_nan(hb))
                ok = std::isnan(f) && half_is_nan(back) && (back & 0x8000) == (hb & 0x8000);
            else
                ok = double(f) == want && std::signbit(f) == bool(hb & 0x8000) && back == hb;
            if (!ok && ++failures <= 5)
                qWarning("half 0x%04x -> %.9g -> 0x%04x", unsigned(h), double(f), unsigned(back));
        }
        QCOMPARE(failures, 0);
    }

    void half_rounding_data()
    {
        QTest::addColumn<float>("in");
        QTest::addColumn<int>("expected");
        const float e11 = std::ldexp(1.0f, -11), e25 = std::ldexp(1.0f, -25);
        QTest::addRow("one") << 1.0f << 0x3c00;
        QTest::addRow("tie at 1+2^-11 goes down to even") << 1.0f + e11 << 0x3c00;
        QTest::addRow("tie at 1+3*2^-11 goes up to even") << 1.0f + 3 * e11 << 0x3c02;
        QTest::addRow("just above a tie goes up") << 1.0f + e11 + std::ldexp(1.0f, -20) << 0x3c01;
        QTest::addRow("just below a tie goes down") << 1.0f + e11 - std::ldexp(1.0f, -20) << 0x3c00;
        QTest::addRow("2049 ties to 2048") << 2049.0f << 0x6800;
        QTest::addRow("2051 ties to 2052") << 2051.0f << 0x6802;
        QTest::addRow("negative tie") << -(1.0f + 3 * e11) << 0xbc02;
        QTest::addRow("largest half") << 65504.0f << 0x7bff;
        QTest::addRow("65519.99 stays finite") << 65519.99f << 0x7bff;
        QTest::addRow("65520 overflows") << 65520.0f << 0x7c00;
        QTest::addRow("-65520 overflows") << -65520.0f << 0xfc00;
        QTest::addRow("1e5 overflows") << 1e5f << 0x7c00;
        QTest::addRow("FLT_MAX overflows") << FLT_MAX << 0x7c00;
        QTest::addRow("+inf") << std::numeric_limits<float>::infinity() << 0x7c00;
        QTest::addRow("-inf") << -std::numeric_limits<float>::infinity() << 0xfc00;
        QTest::addRow("-0") << -0.0f << 0x8000;
        QTest::addRow("smallest normal") << std::ldexp(1.0f, -14) << 0x0400;
        QTest::addRow("smallest subnormal") << std::ldexp(1.0f, -24) << 0x0001;
        QTest::addRow("2^-25 ties to zero") << e25 << 0x0000;
        QTest::addRow("-2^-25 ties to -0") << -e25 << 0x8000;
        QTest::addRow("just above 2^-25") << std::nextafter(e25, 1.0f) << 0x0001;
        QTest::addRow("0.75 * 2^-24 rounds up") << 0.75f * std::ldexp(1.0f, -24) << 0x0001;
        QTest::addRow("3*2^-25 ties up to 2") << 3 * e25 << 0x0002;
        QTest::addRow("5*2^-25 ties down to 2") << 5 * e25 << 0x0002;
        QTest::addRow("1022.5*2^-24 ties to 1022") << 1022.5f * std::ldexp(1.0f, -24) << 0x03fe;
        QTest::addRow("1023.5*2^-24 ties up into the normals")
            << 1023.5f * std::ldexp(1.0f, -24) << 0x0400;
        QTest::addRow("1e-10 underflows") << 1e-10f << 0x0000;
        QTest::addRow("float subnormal underflows")
            << std::numeric_limits<float>::denorm_min() << 0x0000;
        QTest::addRow("0.1") << 0.1f << 0x2e66;
        QTest::addRow("pi") << 3.14159265f << 0x4248;
    }
    void half_rounding()
    {
        QFETCH(float, in);
        QFETCH(int, expected);
        const std::uint16_t got = float_to_half_bits(in);
        if (got != std::uint16_t(expected))
            qWarning("%.9g: got 0x%04x, want 0x%04x", double(in), unsigned(got),
                     unsigned(expected));
        QCOMPARE(int(got), expected);
        // The reference agrees with the table (a check on the reference itself).
        QCOMPARE(int(reference_half(in)), expected);
        QCOMPARE(round_to(DType::F16, in), half_bits_to_float(std::uint16_t(expected)));
    }

    // Random floats against the brute-force nearest-even reference.
    void half_random_against_reference()
    {
        // Float exponents 100..145 span 2^-27 (below the half subnormals) to 2^18 (beyond
        // overflow); 0..254 the whole float range.
        auto inputs = random_floats(150000, 1234, 100, 145);
        const auto wide = random_floats(30000, 99, 0, 254);
        inputs.insert(inputs.end(), wide.begin(), wide.end());
        int failures = 0;
        for (float f : inputs) {
            const std::uint16_t got = float_to_half_bits(f), want = reference_half(f);
            if (got != want && ++failures <= 5)
                qWarning("%.9g (0x%08x): got 0x%04x, want 0x%04x", double(f), unsigned(bits(f)),
                         unsigned(got), unsigned(want));
        }
        QCOMPARE(failures, 0);
    }

#if defined(__FLT16_MAX__)
    // The compiler's own float -> _Float16 conversion is a third, independent opinion.
    void half_matches_compiler_float16()
    {
        const auto inputs = random_floats(100000, 777, 100, 145);
        int failures = 0;
        for (float f : inputs) {
            const _Float16 h = static_cast<_Float16>(f);
            const auto want = std::bit_cast<std::uint16_t>(h);
            if (float_to_half_bits(f) != want && ++failures <= 5)
                qWarning("%.9g: got 0x%04x, compiler 0x%04x", double(f),
                         unsigned(float_to_half_bits(f)), unsigned(want));
        }
        QCOMPARE(failures, 0);
    }
#endif

    void nan_stays_nan_data()
    {
        QTest::addColumn<quint32>("pattern");
        QTest::addRow("quiet") << quint32(0x7fc00000u);
        QTest::addRow("negative quiet") << quint32(0xffc00000u);
        QTest::addRow("payload only in low bits") << quint32(0x7f800001u);
        QTest::addRow("negative low payload") << quint32(0xff800001u);
        QTest::addRow("signalling, high payload") << quint32(0x7fa00000u);
        QTest::addRow("all payload bits") << quint32(0x7fffffffu);
    }
    void nan_stays_nan()
    {
        QFETCH(quint32, pattern);
        const float f = from_bits(pattern);
        QVERIFY(std::isnan(f));
        const bool negative = pattern & 0x80000000u;
        const std::uint16_t h = float_to_half_bits(f);
        QVERIFY2(half_is_nan(h), qPrintable(QString::number(h, 16)));
        QCOMPARE(bool(h & 0x8000), negative);
        QVERIFY(std::isnan(half_bits_to_float(h)));
        const std::uint16_t b = float_to_bf16_bits(f);
        QVERIFY2(bf16_is_nan(b), qPrintable(QString::number(b, 16)));
        QCOMPARE(bool(b & 0x8000), negative);
        QVERIFY(std::isnan(bf16_bits_to_float(b)));
        QVERIFY(std::isnan(round_to_tf32(f)));
        QVERIFY(std::isnan(round_to(DType::F16, f)));
        QVERIFY(std::isnan(round_to(DType::BF16, f)));
    }

    void bf16_all_patterns_round_trip()
    {
        int failures = 0;
        for (std::uint32_t b = 0; b <= 0xffff; ++b) {
            const auto bb = std::uint16_t(b);
            const float f = bf16_bits_to_float(bb);
            const std::uint16_t back = float_to_bf16_bits(f);
            const bool ok = bf16_is_nan(bb) ? std::isnan(f) && bf16_is_nan(back)
                                            : bits(f) == (b << 16) && back == bb;
            if (!ok && ++failures <= 5)
                qWarning("bf16 0x%04x -> 0x%04x", unsigned(b), unsigned(back));
        }
        QCOMPARE(failures, 0);
    }

    void bf16_rounding_data()
    {
        QTest::addColumn<float>("in");
        QTest::addColumn<int>("expected");
        const float e8 = std::ldexp(1.0f, -8);
        QTest::addRow("one") << 1.0f << 0x3f80;
        QTest::addRow("tie at 1+2^-8 goes down to even") << 1.0f + e8 << 0x3f80;
        QTest::addRow("tie at 1+3*2^-8 goes up to even") << 1.0f + 3 * e8 << 0x3f82;
        QTest::addRow("just above a tie goes up") << 1.0f + e8 + std::ldexp(1.0f, -20) << 0x3f81;
        QTest::addRow("negative") << -2.5f << 0xc020;
        QTest::addRow("largest bf16") << from_bits(0x7f7f0000u) << 0x7f7f;
        QTest::addRow("FLT_MAX rounds to inf") << FLT_MAX << 0x7f80;
        QTest::addRow("inf") << std::numeric_limits<float>::infinity() << 0x7f80;
        QTest::addRow("-0") << -0.0f << 0x8000;
        QTest::addRow("0.1") << 0.1f << 0x3dcd;
        QTest::addRow("65520 is finite in bf16") << 65520.0f << 0x4780;
    }
    void bf16_rounding()
    {
        QFETCH(float, in);
        QFETCH(int, expected);
        QCOMPARE(int(float_to_bf16_bits(in)), expected);
        QCOMPARE(reference_truncate_round(in, 16) >> 16, std::uint32_t(expected));
        QCOMPARE(round_to(DType::BF16, in), bf16_bits_to_float(std::uint16_t(expected)));
    }

    void bf16_random_against_reference()
    {
        const auto inputs = random_floats(100000, 4321, 0, 254);
        int failures = 0;
        for (float f : inputs) {
            const std::uint32_t want = reference_truncate_round(f, 16) >> 16;
            if (float_to_bf16_bits(f) != want && ++failures <= 5)
                qWarning("%.9g: got 0x%04x, want 0x%04x", double(f),
                         unsigned(float_to_bf16_bits(f)), unsigned(want));
        }
        QCOMPARE(failures, 0);
    }

    void tf32_rounding_data()
    {
        QTest::addColumn<float>("in");
        QTest::addColumn<float>("expected");
        const float e11 = std::ldexp(1.0f, -11);
        QTest::addRow("one") << 1.0f << 1.0f;
        QTest::addRow("tie at 1+2^-11 goes down to even") << 1.0f + e11 << 1.0f;
        QTest::addRow("tie at 1+3*2^-11 goes up to even")
            << 1.0f + 3 * e11 << 1.0f + std::ldexp(1.0f, -9);
        QTest::addRow("above a tie goes up")
            << 1.0f + e11 + std::ldexp(1.0f, -20) << 1.0f + std::ldexp(1.0f, -10);
        QTest::addRow("below half an ulp goes down") << 1.0f + std::ldexp(1.0f, -12) << 1.0f;
        QTest::addRow("representable stays")
            << 1.0f + std::ldexp(1.0f, -10) << 1.0f + std::ldexp(1.0f, -10);
        QTest::addRow("negative") << -(1.0f + 3 * e11) << -(1.0f + std::ldexp(1.0f, -9));
        QTest::addRow("keeps fp32's range")
            << 1e30f << from_bits(reference_truncate_round(1e30f, 13));
        QTest::addRow("FLT_MAX rounds to inf") << FLT_MAX << std::numeric_limits<float>::infinity();
        QTest::addRow("inf") << std::numeric_limits<float>::infinity()
                             << std::numeric_limits<float>::infinity();
        QTest::addRow("-0") << -0.0f << -0.0f;
    }
    void tf32_rounding()
    {
        QFETCH(float, in);
        QFETCH(float, expected);
        const float got = round_to_tf32(in);
        QCOMPARE(bits(got), bits(expected));
    }

    void tf32_random_against_reference()
    {
        const auto inputs = random_floats(100000, 555, 0, 254);
        int failures = 0;
        for (float f : inputs) {
            const float got = round_to_tf32(f);
            const std::uint32_t want = reference_truncate_round(f, 13);
            const bool ok = bits(got) == want && (bits(got) & 0x1fffu) == 0;
            if (!ok && ++failures <= 5)
                qWarning("%.9g: got 0x%08x, want 0x%08x", double(f), unsigned(bits(got)),
                         unsigned(want));
        }
        QCOMPARE(failures, 0);
    }

    void round_to_matches_the_bit_functions()
    {
        const auto inputs = random_floats(20000, 31, 100, 145);
        for (float f : inputs) {
            QCOMPARE(bits(round_to(DType::F32, f)), bits(f));
            const float h = round_to(DType::F16, f);
            QCOMPARE(bits(h), bits(half_bits_to_float(float_to_half_bits(f))));
            QCOMPARE(bits(round_to(DType::F16, h)), bits(h)); // idempotent
            const float b = round_to(DType::BF16, f);
            QCOMPARE(bits(b), bits(bf16_bits_to_float(float_to_bf16_bits(f))));
            QCOMPARE(bits(round_to(DType::BF16, b)), bits(b));
            const float t = round_to_tf32(f);
            QCOMPARE(bits(round_to_tf32(t)), bits(t));
        }
    }

    void round_to_integers()
    {
        QCOMPARE(round_to(DType::I32, 2.5f), 2.0f);
        QCOMPARE(round_to(DType::I32, -3.7f), -4.0f);
        QCOMPARE(round_to(DType::I32, 1e20f), 2147483520.0f);
        QCOMPARE(round_to(DType::I32, -1e20f), -2147483648.0f);
        QCOMPARE(round_to(DType::U8, 300.0f), 255.0f);
        QCOMPARE(round_to(DType::U8, -4.0f), 0.0f);
        QCOMPARE(round_to(DType::U8, 17.4f), 17.0f);
        QCOMPARE(round_to(DType::U8, std::nanf("")), 0.0f);
        QCOMPARE(round_to(DType::I16, -32768.0f), -32768.0f);
        QCOMPARE(round_to(DType::I16, 40000.0f), 32767.0f);
        QCOMPARE(round_to(DType::I16, -1e9f), -32768.0f);
        QCOMPARE(round_to(DType::I16, 12.5f), 12.0f);
    }

    // Crafted values: the expected halves worked out by hand from the bits.
    void split_master_crafted_data()
    {
        QTest::addColumn<quint32>("w");
        QTest::addColumn<quint16>("hi");
        QTest::addColumn<qint16>("lo");
        auto row = [](const char* name, std::uint32_t w, std::uint16_t hi, std::int16_t lo) {
            QTest::newRow(name) << quint32(w) << quint16(hi) << qint16(lo);
        };
        row("+0", 0x00000000, 0x0000, 0);
        row("-0", 0x80000000, 0x8000, 0);
        row("1.0", 0x3F800000, 0x3F80, 0);
        row("below a tie", 0x3F807FFF, 0x3F80, 0x7FFF);
        // Ties go away from zero, even where nearest-even would keep the even 0x3F80:
        // that is what keeps lo = -0x8000 inside int16 (+0x8000 would not be).
        row("tie, even below", 0x3F808000, 0x3F81, -0x8000);
        row("tie, odd below", 0x3F818000, 0x3F82, -0x8000);
        row("above a tie", 0x3F808001, 0x3F81, -0x7FFF);
        row("negative tie", 0xBF808000, 0xBF81, -0x8000);
        row("negative below a tie", 0xBF807FFF, 0xBF80, 0x7FFF);
        row("smallest subnormal", 0x00000001, 0x0000, 1);
        row("subnormal tie", 0x00008000, 0x0001, -0x8000);
        row("-subnormal", 0x80012345, 0x8001, 0x2345);
        row("subnormal to normal", 0x007FFFFF, 0x0080, -1);
        row("bf16 max", 0x7F7F0000, 0x7F7F, 0);
        row("below bf16 max + half ulp", 0x7F7F7FFF, 0x7F7F, 0x7FFF);
        // Past bf16's max plus half an ulp hi is inf (as a cast gives) and lo still exact.
        row("bf16 max + half ulp", 0x7F7F8000, 0x7F80, -0x8000);
        row("fp32 max", 0x7F7FFFFF, 0x7F80, -1);
        row("-fp32 max", 0xFF7FFFFF, 0xFF80, -1);
        row("+inf", 0x7F800000, 0x7F80, 0);
        row("-inf", 0xFF800000, 0xFF80, 0);
    }
    void split_master_crafted()
    {
        QFETCH(quint32, w);
        QFETCH(quint16, hi);
        QFETCH(qint16, lo);
        const hd::SplitMaster s = hd::split_master(from_bits(w));
        QCOMPARE(quint16(s.hi), hi);
        QCOMPARE(qint16(s.lo), lo);
        QCOMPARE(bits(hd::join_master(s.hi, s.lo)), std::uint32_t(w));
    }

    // Every high half with low halves at and around the rounding points, and random
    // patterns: join(split(w)) is w bit for bit, and hi is the nearest-even bf16 (the
    // cast's) except at a tie whose kept bit is even, where it is one ulp further from 0.
    void split_master_round_trip_and_rounding()
    {
        std::vector<std::uint32_t> patterns;
        const std::uint32_t lows[] = {0x0000, 0x0001, 0x7FFF, 0x8000,
                                      0x8001, 0xFFFF, 0x1234, 0xC321};
        for (std::uint32_t h = 0; h < 0x10000; ++h)
            for (std::uint32_t l : lows) patterns.push_back((h << 16) | l);
        std::mt19937 rng(5);
        for (int i = 0; i < 1000000; ++i) patterns.push_back(rng());
        std::size_t ties_away = 0;
        for (std::uint32_t u : patterns) {
            const float w = from_bits(u);
            const hd::SplitMaster s = hd::split_master(w);
            const float j = hd::join_master(s.hi, s.lo);
            if (std::isnan(w)) {
                QVERIFY2(std::isnan(j), qPrintable(QString::number(u, 16)));
                QVERIFY(std::isnan(bf16_bits_to_float(s.hi))); // the GEMMs see NaN too
                QCOMPARE(s.hi & 0x8000, (u >> 16) & 0x8000);   // with its sign
                continue;
            }
            if (bits(j) != u) QFAIL(qPrintable("round trip of 0x" + QString::number(u, 16)));
            const std::uint16_t rne = float_to_bf16_bits(w);
            const bool even_tie = (u & 0x1FFFFu) == 0x8000u;
            if (even_tie) {
                ++ties_away;
                if (s.hi != rne + 1) QFAIL(qPrintable("tie 0x" + QString::number(u, 16)));
            } else if (s.hi != rne) {
                QFAIL(qPrintable("0x" + QString::number(u, 16) + " hi 0x" +
                                 QString::number(s.hi, 16) + " cast 0x" +
                                 QString::number(rne, 16)));
            }
        }
        // The crafted ties: every even high half but the 128 of inf/NaN exponents.
        QVERIFY(ties_away >= 0x8000 - 128);
    }
};

QTEST_APPLESS_MAIN(TestDType)
#include "tst_dtype.moc"
