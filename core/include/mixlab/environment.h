// What a run ran on: the device the backend reports plus host facts (OS, CPU, compiler,
// MixLab version), so that a log or bug report says where its numbers come from.
#pragma once
#include "mixlab/device.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace mixlab {

struct Environment {
    // Device, from the backend. Version fields read "cpu" on the CPU backend.
    BackendKind backend = BackendKind::Cpu;
    std::string device_name;
    std::string compute_capability; // "8.9", or "cpu"
    std::int64_t device_memory_bytes = 0;
    bool tensor_cores = false, bf16 = false, tf32 = false;
    std::string driver_version, runtime_version, cublas_version, cudnn_version;

    // Host.
    std::string os;         // uname: "Linux 6.1.0-18-amd64 x86_64"
    std::string os_release; // /etc/os-release PRETTY_NAME, or "" when absent
    std::string cpu_model;  // /proc/cpuinfo "model name", or "unknown"
    int cpu_threads = 0;
    std::int64_t host_memory_bytes = 0;
    std::string compiler; // "GCC 12.2.0", "Clang 16.0.6"
    std::string mixlab_version;
    bool built_with_cuda = false;
};

Environment describe_environment(const DeviceInfo& device);
// The device half of an Environment back as the DeviceInfo it was described from (what
// a run's record keeps of its device): the compute capability parsed from "8.9" (0.0 for
// "cpu"), version strings as they are.
DeviceInfo device_info_of(const Environment& env);

// The JSON form (logs' and experiment files' "environment"): the fields above under their
// own names, "backend" by name ("cpu", "cuda").
nlohmann::ordered_json environment_to_json(const Environment& env);
// Every field required; InputError naming the field otherwise.
Environment environment_from_json(const JsonReader& json);

} // namespace mixlab
