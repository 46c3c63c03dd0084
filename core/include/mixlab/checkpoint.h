// Checkpoints: a training run's whole state as a safetensors file (the weights under the
// names a weights file uses, the optimizer's state, the loss scaler, fp8 scaling, a
// language model's carried state, and in "__metadata__" the model, the run config and
// where the run stands), from which `--resume` continues the run bit for bit on the CPU.
// TrainingRun::save_checkpoint and TrainingRun::resume write and read it; the layout is
// docs/WEIGHTS.md's "Checkpoints". The format's name, "mixlab-checkpoint/1", is
// model/model_weights.h's k_checkpoint_format (--load-weights takes a checkpoint's weights).
#pragma once
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"

#include <cstdint>
#include <string>

namespace mixlab {

// What a front end needs before it sets a resumed run up: the model and the run as the
// checkpoint's run trained them, and where it stood.
struct CheckpointHeader {
    ModelSpec model;
    RunConfig config;
    std::int64_t step = 0;            // steps done
    std::int64_t steps_per_epoch = 0; // of the run that wrote it
};

// Reads and checks a whole checkpoint file (every tensor's byte range; the metadata's
// format, model, run config and position). InputError "checkpoint '<path>': ..." for a
// file that is not one: truncated or damaged (the byte offset named), a weights file
// (mixlab-weights/1: no optimizer state or position; give it to --load-weights), or
// metadata missing or malformed (the key named).
CheckpointHeader read_checkpoint_header(const std::string& path);

} // namespace mixlab
