// Where the app keeps its runs' checkpoints (Run > Checkpoints at epoch ends): a folder per
// experiment and run under the app's data folder, outliving the session (unlike the
// session's weights folder), so that a run stopped, crashed or finished last week can be
// continued (Run > Continue training). The setting is the app's, not the experiment's.
#pragma once
#include "mixlab/policy.h"

#include <QString>

namespace checkpointfolders {

// Keep the newest 1 by default: a checkpoint holds the fp32 masters and the optimizer's
// state, 43 MB for the seed MLP on Fashion-MNIST and 98 MB on 32x32x3 images under SGD
// with momentum (a ResNet-18's 89 MB; measured 2026-12-04), per run, and what continuing needs is the newest; more would cost a compare
// group of three hundreds of megabytes per epoch kept. 0 turns them off.
constexpr int k_defaultKeep = 1;
constexpr int k_maxKeep = 100;
int keepSetting(); // 0: off
void setKeepSetting(int keep);

// AppLocalDataLocation/checkpoints, or `base` where one is set (tests).
QString rootFolder();
void setRootFolderForTesting(const QString &base);
// The folder of an experiment's runs: the experiment file's name without its suffixes
// ("untitled" before it is saved).
QString experimentFolder(const QString &experimentFile);
// A run's own folder in it, made now (mixlab::claim_checkpoint_folder): the time the run
// started, its id and policy ("20261204-181502-run3-mixed_fp16"), with "-2", "-3" ... when
// that one exists already, so runs of several sessions, windows or app processes (each
// numbering its runs from 1) never share one, even when they start in the same second.
// Empty when none can be made, and `error` (when given) says which and why: a name not
// claimed is no run's own, so the run is better without checkpoints than writing there.
QString runFolder(const QString &experimentFolder, int runId, mixlab::Policy policy,
                  QString *error = nullptr);
// Removes a run's folder when the run wrote nothing into it (mixlab::
// release_checkpoint_folder), and its experiment's folder when that leaves it empty (the
// claim made it): true when the run's went; a folder holding any file stays.
bool release(const QString &runFolder);

// One line saying what a run's folder holds: "2 checkpoints (196 MB), newest epoch 4 step
// 32: PATH", or that it holds none yet.
QString describe(const QString &runFolder);
// The newest checkpoint in the folder; empty when there is none.
QString newest(const QString &runFolder);

// What deleting a run takes with it (mixlab::delete_checkpoints): its checkpoints' count
// and bytes, and their deletion (the folder too when left empty). deleteCheckpoints
// returns what could not be deleted and why; empty when all went.
struct Held {
    int count = 0;
    qint64 bytes = 0;
};
Held held(const QString &runFolder);
QString deleteCheckpoints(const QString &runFolder);

} // namespace checkpointfolders
