// Log export: the chosen runs of the RunStore written in the CLI's `mixlab-log/1` JSON or
// CSV formats, by replaying their records into a mixlab::RunLog.
#pragma once
#include <QString>

#include <vector>

class RunStore;

// One run gives a "train" log, several a "compare" log (model, graph and environment
// taken from the first). The format follows the suffix (.json or .csv, any case); the
// file is written atomically. Returns false with a message in *error on failure.
bool exportLogs(const RunStore &store, const std::vector<int> &runIds, const QString &path,
                QString *error);
