// The app's window-level suites run under QStandardPaths' test mode, their checkpoints
// in a folder of their own process.
#pragma once

#include "runs/checkpointfolders.h"

#include <QStandardPaths>
#include <QTemporaryDir>

// QStandardPaths' test mode for a window-level suite (its settings and data under
// ~/.qttest, not the user's), with the app's checkpoints in a folder of the suite's own
// process, deleted when it exits: in ~/.qttest every run of the suites left tens of MB
// of checkpoints behind, and a suite could meet an earlier run's files there (or another
// copy of itself running at the same time). A suite that needs a root of its own sets it
// again (checkpointfolders::setRootFolderForTesting).
inline void enterAppTestMode()
{
    QStandardPaths::setTestModeEnabled(true);
    static QTemporaryDir checkpoints;
    checkpointfolders::setRootFolderForTesting(checkpoints.path());
}
