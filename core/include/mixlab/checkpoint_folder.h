// A run's checkpoint folder: the checkpoints a run writes at its epoch ends into a folder
// of its own (RunGroupOptions::RunOutputs::checkpoint_folder), named for the epoch and
// step they hold, of which the run keeps the newest few. A front end lists them to offer
// "continue from here" (the app's runs table) without reading any file whole.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace mixlab {

// "epoch-<E>-step-<S>.safetensors": E the epochs completed, S the steps done.
std::string checkpoint_file_name(std::int64_t epoch, std::int64_t step);

struct CheckpointFile {
    std::string path;
    std::int64_t epoch = 0, step = 0;
    std::int64_t bytes = 0;
};
// The files in `folder` named as checkpoint_file_name names them, oldest step first;
// none when the folder does not exist. Other files are left out (a name alone says
// nothing of what a file holds: read_checkpoint_header checks that).
std::vector<CheckpointFile> list_checkpoints(const std::string& folder);

// A run's own folder, claimed as its name is chosen: `base`, else "<base>-2", "<base>-3" ...,
// the first one this call creates (its parent made when missing). Creating is the test of
// whether a name is free, so of several claimants of one name (two app processes, two
// windows, starting runs of one id in one second) exactly one gets it, and the folder
// exists from the claim on, not from the first checkpoint. A parent removed meanwhile
// (emptied by another claimant's release) is made again. Error naming the folder and why
// when one cannot be made.
std::string claim_checkpoint_folder(const std::string& base);
// The folder a run claimed removed when the run wrote nothing into it (stopped before its
// first step, failed in setup): an empty folder per such run would pile up as clutter.
// Only an empty folder goes (one call that fails when anything is in it, so a file that
// arrives meanwhile is safe); true when it went.
bool release_checkpoint_folder(const std::string& folder);

// A run's checkpoints deleted with the run (the app's Delete run): the files
// list_checkpoints lists, which in a folder of the run's own are the ones it wrote, then
// the folder when that leaves it empty; any other file stays, and so does its folder.
// Returns what could not be deleted, "path: reason" each, "; " between; empty when all went.
std::string delete_checkpoints(const std::string& folder);

// The newest `keep` checkpoints a run wrote into its folder, the older ones deleted as each
// new one is in place: write to path_for(), then written(). Only files this rotation wrote
// are ever deleted, so a folder shared by mistake loses nothing of another run's.
class CheckpointRotation {
public:
    CheckpointRotation(std::string folder, int keep);
    // A rotation of one under one name, each checkpoint replacing the last in place: the
    // file a user names (mixlab-cli train --save-checkpoint). Its folder is not made: one
    // that is missing is a mistake in the name, which the write reports.
    static CheckpointRotation one_file(std::string path);
    // Where the checkpoint at this point goes; makes the folder (Error naming it when it
    // cannot be made), except for one_file's, whose name is the same at every point.
    std::string path_for(std::int64_t epoch, std::int64_t step) const;
    // `path` is written whole (atomically): the checkpoints beyond the newest `keep` go.
    // A file that cannot be deleted is kept (and named in the returned text); the new
    // one stands either way.
    std::string written(const std::string& path);
    const std::string& folder() const { return m_folder; }

private:
    std::string m_folder;
    std::string m_file; // one_file's path; empty for a folder's rotation
    int m_keep = 1;
    std::deque<std::string> m_written; // oldest first
};

} // namespace mixlab
