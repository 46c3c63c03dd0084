// The one line mixlab-cli prints on stderr when --device auto falls back to the CPU
// because the CUDA module could not be loaded (NVIDIA's libraries missing).
#pragma once
#include "mixlab/device.h"
#include "mixlab/run_config.h"

namespace mixlab::cli {

// Prints the line at most once per process, only for DeviceChoice::Auto on a CPU backend.
void note_cpu_fallback(DeviceChoice choice, BackendKind chosen);

} // namespace mixlab::cli
