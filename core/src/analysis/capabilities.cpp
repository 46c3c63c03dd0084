// Capability facts: DeviceInfo turned into rows and sentences a user can read.
#include "mixlab/capabilities.h"

#include <cstdio>

namespace mixlab {

namespace {

std::string gib(std::int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

} // namespace

std::vector<CapabilityFact> capability_facts(const DeviceInfo& info)
{
    std::vector<CapabilityFact> rows;
    if (info.backend != BackendKind::Cuda) {
        const std::string emulated =
            "the CPU backend emulates fp16, bf16, TF32 and fp8 (E4M3/E5M2) rounding in float32 "
            "math: every policy runs, none runs faster";
        rows.push_back({"device", info.name.empty() ? "CPU" : info.name, ""});
        rows.push_back({"compute capability", "none (CPU backend)", ""});
        rows.push_back(
            {"memory", info.memory_bytes > 0 ? gib(info.memory_bytes) + " (host)" : "unknown", ""});
        rows.push_back({"tensor cores", "no", emulated});
        return rows;
    }
    const std::string cc = std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor);
    rows.push_back({"device", info.name, ""});
    rows.push_back({"compute capability", cc, ""});
    rows.push_back({"memory", gib(info.memory_bytes), ""});
    rows.push_back({"fp16 tensor cores (7.0+)", yes_no(info.tensor_cores),
                    info.tensor_cores
                        ? "mixed_fp16 GEMMs and convolutions can run on tensor cores when "
                          "their dimensions are multiples of 8"
                        : "mixed_fp16 saves memory here but its GEMMs run on ordinary cores, "
                          "so expect little or no speed-up"});
    rows.push_back(
        {"bf16 tensor cores (8.0+)", yes_no(info.bf16),
         info.bf16 ? "" : "mixed_bf16 is refused on this GPU (compute capability " + cc + ")"});
    rows.push_back(
        {"TF32 tensor cores (8.0+)", yes_no(info.tf32),
         info.tf32 ? "the tf32 policy runs fp32 storage on tensor cores"
                   : "the tf32 policy is refused on this GPU (compute capability " + cc + ")"});
    return rows;
}

std::string describe_capabilities(const DeviceInfo& info)
{
    std::string text;
    for (const CapabilityFact& f : capability_facts(info)) {
        text += f.label + ": " + f.value;
        if (!f.note.empty()) text += " - " + f.note;
        text += "\n";
    }
    return text;
}

} // namespace mixlab
