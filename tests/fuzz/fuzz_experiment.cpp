// Fuzz target: the experiment-file loader (mixlab-experiment/1 and /2, gui/files/experiment.cpp).
// The input is written to a file and loaded; a rejected file must leave the store as it
// was, and an accepted one must save and load again with the same runs.
#include "fuzz_util.h"

#include "files/experiment.h"
#include "runs/runstore.h"

#include <QString>

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using mixlab::fuzz::fail;
    static mixlab::fuzz::ScratchFolder scratch;
    // A real file with a few long runs is a few MB; small inputs reach every field.
    if (size > 1024 * 1024) return 0;
    const auto& folder = scratch.fresh();
    const std::string in_path = (folder / "in.mixlab.json").string();
    const std::string out_path = (folder / "out.mixlab.json").string();
    mixlab::fuzz::ScratchFolder::write(in_path,
                                       std::string_view(reinterpret_cast<const char*>(data), size));

    // A store holding one run already: a failed load must not touch it.
    RunStore store;
    store.addRun(mixlab::RunConfig{}, QStringLiteral("{}"), store.newGroup());
    ExperimentFile file;
    QString error;
    if (!loadExperiment(QString::fromStdString(in_path), &file, &store, &error)) {
        if (error.isEmpty()) fail("loadExperiment failed without a message");
        // No check of the message's encoding here: it is a QString, so bytes quoted from
        // a damaged file are already U+FFFD, which a dialog shows and JSON can hold.
        if (store.runIds().size() != 1) fail("a failed load changed the store");
        return 0;
    }

    const std::size_t n_runs = store.runIds().size();
    if (!saveExperiment(QString::fromStdString(out_path), file, store, &error))
        fail("a loaded experiment cannot be saved again: " + error.toStdString());
    RunStore again;
    ExperimentFile file_again;
    if (!loadExperiment(QString::fromStdString(out_path), &file_again, &again, &error))
        fail("a saved experiment does not load again: " + error.toStdString());
    if (again.runIds().size() != n_runs || !(file_again.model == file.model) ||
        file_again.comparePolicies != file.comparePolicies)
        fail("an experiment changed on a save/load round trip");
    return 0;
}
