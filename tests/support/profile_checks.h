// A StepProfile read back against the one that was written, field by field (times that
// were not finite come back as NaN): the JSON suites and the experiment-file suites share it.
#pragma once
#include "mixlab/step_profile.h"

#include <QTest>

#include <cmath>

namespace mixlab::test {

inline bool same_time(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// QCOMPARE in a helper returns from the helper only: callers that go on check
// QTest::currentTestFailed().
inline void compare_profiles(const StepProfile& read, const StepProfile& written)
{
    QCOMPARE(read.steps, written.steps);
    QCOMPARE(read.replayed, written.replayed);
    for (std::size_t i = 0; i < written.phase_ms.size(); ++i)
        QVERIFY(same_time(read.phase_ms[i], written.phase_ms[i]));
    QVERIFY(same_time(read.device_ms, written.device_ms));
    QVERIFY(same_time(read.step_ms, written.step_ms));
    QVERIFY(same_time(read.wall_ms, written.wall_ms));
    QVERIFY(same_time(read.overhead_ms, written.overhead_ms));
    QVERIFY(same_time(read.gpu_busy_fraction, written.gpu_busy_fraction));
    QCOMPARE(read.layers.size(), written.layers.size());
    for (std::size_t i = 0; i < written.layers.size(); ++i) {
        const LayerTime &r = read.layers[i], &w = written.layers[i];
        QCOMPARE(r.path, w.path);
        QCOMPARE(r.type, w.type);
        QVERIFY(same_time(r.forward_ms, w.forward_ms));
        QVERIFY(same_time(r.backward_ms, w.backward_ms));
        QVERIFY(same_time(r.flops, w.flops));
        QVERIFY(same_time(r.bytes, w.bytes));
        QCOMPARE(r.is_gemm, w.is_gemm);
        QCOMPARE(r.tensor_cores, w.tensor_cores);
        QCOMPARE(r.tensor_core_note, w.tensor_core_note);
    }
}

} // namespace mixlab::test
