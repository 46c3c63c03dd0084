// GPU capability facts in plain words: compute capability, memory, and which dtypes the
// tensor cores take (fp16 from 7.0, bf16 and TF32 from 8.0), for About and the CLI.
#pragma once
#include "mixlab/device.h"

#include <string>
#include <vector>

namespace mixlab {

struct CapabilityFact {
    std::string label; // "bf16 tensor cores (8.0+)"
    std::string value; // "yes", "no", "9.0", "139.8 GiB"
    std::string note;  // what it means for the policies, or ""
};

// One row per fact, in display order.
std::vector<CapabilityFact> capability_facts(const DeviceInfo& info);

// The rows as "label: value" lines, each note after " - ".
std::string describe_capabilities(const DeviceInfo& info);

} // namespace mixlab
