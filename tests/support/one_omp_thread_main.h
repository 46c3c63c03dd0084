// A Qt Test main that first re-runs the suite with OMP_NUM_THREADS=1 (unless the caller
// chose a value). OpenMP reads the variable once, as its library loads, so setting it
// later does nothing: the suites that train tiny models gain nothing from more threads,
// and on a loaded 2-core machine OpenMP's waiting workers made their steps ~30x slower
// and starved the GUI thread some of them measure. CTest sets it too; this covers
// running a suite by hand.
#pragma once

#include <QtGlobal>
#include <QTest>

#include <unistd.h>

inline void rerunWithOneOmpThread(char* argv[])
{
    if (!qEnvironmentVariableIsSet("OMP_NUM_THREADS")) {
        qputenv("OMP_NUM_THREADS", "1");
        execv("/proc/self/exe", argv); // returns only on failure: then run as we are
    }
}

// AppClass: QApplication for widget suites, QCoreApplication (or none) for engine suites.
#define MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestClass, AppClass)                                       \
    int main(int argc, char* argv[])                                                               \
    {                                                                                              \
        rerunWithOneOmpThread(argv);                                                               \
        AppClass app(argc, argv);                                                                  \
        TestClass test;                                                                            \
        QTEST_SET_MAIN_SOURCE_PATH                                                                 \
        return QTest::qExec(&test, argc, argv);                                                    \
    }
