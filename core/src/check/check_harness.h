// The harness `mixlab-cli check`'s op checks share (backend_check.cpp, backend_check_fp8.cpp):
// seeded inputs that do not depend on which other checks run, and one check's verdict
// (element-wise comparison with stated tolerances, the first failure kept).
#pragma once
#include "mixlab/backend.h"
#include "mixlab/backend_check.h"
#include "mixlab/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mixlab::check_harness {

struct Tol {
    double atol = 0, rtol = 0;
    bool nan_equal = false; // NaN on both sides passes (an inf gradient applied unscaled)
};

inline std::string num(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.7g", v);
    return buf;
}

// ---- random inputs -------------------------------------------------------------------
// Each check seeds its own generator from (seed, name), so a check's inputs do not
// depend on which other checks the filter kept.
class Rng {
public:
    Rng(std::uint64_t seed, const std::string& name)
    {
        std::uint64_t h = 1469598103934665603ull;
        for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
        m_gen.seed(seed ^ h);
    }
    // Uniform in [lo, hi), the same on every platform (no std distributions).
    float uniform(float lo, float hi)
    {
        const float u = float(m_gen() >> 40) * (1.0f / 16777216.0f);
        return lo + (hi - lo) * u;
    }
    // 32 random bits: read as a float, every binade, subnormals, infinities and NaNs.
    std::uint32_t bits32() { return std::uint32_t(m_gen() >> 32); }
    int integer(int lo, int hi_exclusive)
    {
        return lo + int(m_gen() % std::uint64_t(hi_exclusive - lo));
    }
    // n values in [lo, hi), already rounded to t so the host copy equals what both
    // backends hold.
    std::vector<float> values(std::size_t n, DType t, float lo, float hi)
    {
        std::vector<float> v(n);
        for (float& x : v) x = round_to(t, uniform(lo, hi));
        return v;
    }
    // 0 .. n-1 shuffled: a dataset's sample order.
    std::vector<std::int32_t> permutation(int n)
    {
        std::vector<std::int32_t> order(std::size_t(std::max(n, 0)));
        for (int i = 0; i < n; ++i) order[std::size_t(i)] = i;
        for (int i = n - 1; i > 0; --i)
            std::swap(order[std::size_t(i)], order[std::size_t(integer(0, i + 1))]);
        return order;
    }
    // A per-channel normalisation as a dataset's would be: means in [0.2, 0.6), standard
    // deviations in [0.2, 0.4).
    Normalization normalization(int channels)
    {
        Normalization norm;
        norm.channels = channels;
        for (int c = 0; c < channels; ++c) {
            norm.mean[c] = uniform(0.2f, 0.6f);
            norm.inv_std[c] = 1.0f / uniform(0.2f, 0.4f);
        }
        return norm;
    }
    // n integers in [0, hi_exclusive) as bytes: pixels, or labels of up to 256 classes.
    std::vector<std::uint8_t> bytes(std::size_t n, int hi_exclusive)
    {
        std::vector<std::uint8_t> v(n);
        for (auto& b : v) b = std::uint8_t(integer(0, hi_exclusive));
        return v;
    }

private:
    std::mt19937_64 m_gen;
};

// ---- one check's verdict ---------------------------------------------------------------
class Verdict {
public:
    explicit Verdict(std::string name)
    {
        m_result.name = std::move(name);
        m_result.passed = true;
    }

    // atol_i = tol.atol + scale_factor * scale[i] when a scale is given.
    void compare(const std::string& what, const std::vector<float>& ref,
                 const std::vector<float>& got, Tol tol, const std::vector<double>* scale = nullptr,
                 double scale_factor = 0.0)
    {
        ++m_compared;
        if (ref.size() != got.size()) {
            fail(what + ": sizes differ (" + std::to_string(ref.size()) + " vs " +
                 std::to_string(got.size()) + ")");
            return;
        }
        std::size_t bad = 0, first = 0;
        double first_allowed = 0;
        for (std::size_t i = 0; i < ref.size(); ++i) {
            const double r = ref[i], g = got[i];
            const double allowed =
                tol.atol + (scale ? scale_factor * (*scale)[i] : 0.0) + tol.rtol * std::fabs(r);
            bool ok;
            double diff;
            if (r == g || (tol.nan_equal && std::isnan(r) && std::isnan(g))) {
                ok = true; // also equal infinities
                diff = 0;
            } else if (std::isnan(r) || std::isnan(g) || std::isinf(r) || std::isinf(g)) {
                ok = false; // NaN: unwritten (poisoned) or a real NaN; inf against a number
                diff = std::numeric_limits<double>::infinity();
            } else {
                diff = std::fabs(r - g);
                ok = diff <= allowed;
            }
            m_result.max_abs_err = std::max(m_result.max_abs_err, diff);
            if (std::fabs(r) > allowed && std::fabs(r) > 0)
                m_result.max_rel_err = std::max(m_result.max_rel_err, diff / std::fabs(r));
            if (!ok && bad++ == 0) {
                first = i;
                first_allowed = allowed;
            }
        }
        if (bad)
            fail(what + "[" + std::to_string(first) + "]: ref " + num(ref[first]) + ", got " +
                 num(got[first]) + " (allowed difference " + num(first_allowed) + "); " +
                 std::to_string(bad) + " of " + std::to_string(ref.size()) +
                 " elements out of tolerance");
    }

    void fail(const std::string& why)
    {
        if (m_result.passed) m_result.detail = m_context.empty() ? why : m_context + ": " + why;
        m_result.passed = false;
    }
    // A prefix for failures from here on ("step 3").
    void context(std::string c) { m_context = std::move(c); }
    // Extra facts for the detail of a passing check (a plan the backend chose).
    void note(std::string n) { m_note = std::move(n); }

    CheckResult result()
    {
        if (m_result.passed) {
            m_result.detail = std::to_string(m_compared) + " outputs compared";
            if (!m_note.empty()) m_result.detail += "; " + m_note;
        }
        return m_result;
    }

private:
    CheckResult m_result;
    std::string m_context, m_note;
    int m_compared = 0;
};

// One named check: skipped unless its name holds `filter`; its inputs from its own Rng
// (seed, name); an exception it throws is its failure. The result goes to `out`.
using CheckBody = std::function<void(Verdict&, Rng&)>;
inline void run_check(const std::string& name, const std::string& filter, std::uint64_t seed,
                      const CheckBody& body, std::vector<CheckResult>& out)
{
    if (!filter.empty() && name.find(filter) == std::string::npos) return;
    Verdict v(name);
    Rng rng(seed, name);
    try {
        body(v, rng);
    } catch (const std::exception& e) {
        v.fail(std::string("threw: ") + e.what());
    }
    out.push_back(v.result());
}

} // namespace mixlab::check_harness
