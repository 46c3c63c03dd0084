// RunFacts from the GUI's RunStore: what mixlab::explain() needs about each run of a
// compare group (policy, graph, device, summary, losses, loss-scale changes, fp8 amax
// jumps, profile). The device's ceilings are the caller's to set: it knows where they come
// from.
#pragma once
#include "mixlab/explain.h"

#include <QString>

#include <vector>

class RunStore;

// Whether every run of the group is done (finished or stopped) and has a summary.
bool groupFinished(const RunStore &store, int group);
// The newest group that groupFinished accepts; 0 when there is none.
int latestFinishedGroup(const RunStore &store);
// One RunFacts per run of the group, in creation order; the first run is the speed
// baseline, as in `mixlab-cli explain`. Empty (and *error set) when the group is not
// finished or a run's model no longer builds.
std::vector<mixlab::RunFacts> runFactsFromStore(const RunStore &store, int group,
                                                QString *error = nullptr);
