// The device a run trains on, as the app, the CLI and the reports see it: which backend,
// what its GPU can do and which library versions it runs; whether the CUDA backend can
// be used on this machine, and whether a precision policy can run on a device. Plain
// C++, apart from the Backend interface (backend.h) that only the engine needs.
#pragma once
#include "mixlab/policy.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mixlab {

enum class BackendKind { Cpu, Cuda };

// "cpu", "cuda": the names logs, experiment files and the CLI use.
std::string_view backend_kind_name(BackendKind kind);
// The kind a name gives, or none for a name that is neither.
std::optional<BackendKind> parse_backend_kind(std::string_view name);

struct DeviceInfo {
    BackendKind backend = BackendKind::Cpu;
    std::string name; // GPU name or "CPU (no CUDA device)"
    int cc_major = 0, cc_minor = 0;
    std::int64_t memory_bytes = 0;
    bool tensor_cores = false; // fp16 tensor cores (7.0+)
    bool bf16 = false;         // bf16 tensor cores (8.0+)
    bool tf32 = false;         // TF32 tensor cores (8.0+)
    std::string driver_version, runtime_version, cublas_version, cudnn_version;

    bool is_gpu() const { return backend == BackendKind::Cuda; }
};

class JsonReader;

// The JSON form, wherever a document holds a device (`mixlab-cli explain --json`,
// `mixlab-cli check --json`):
//   {"backend": "cuda", "name", "compute_capability": "8.9", "memory_bytes",
//    "tensor_cores", "bf16", "tf32", "driver_version", "runtime_version",
//    "cublas_version", "cudnn_version"}
// The compute capability is one "major.minor" string, as NVIDIA and users write it.
nlohmann::ordered_json device_info_to_json(const DeviceInfo& device);
// Every field required; InputError naming the field otherwise.
DeviceInfo device_info_from_json(const JsonReader& json);
// A backend kind's name ("cpu", "cuda") read from a document; InputError for another.
BackendKind backend_kind_from_json(const JsonReader& json);

bool cuda_backend_available(); // built with CUDA, its module loads and a device is present
// Why the CUDA backend cannot be used here, in one line for the user, or "" when it can:
// built without it, its module or a library the module needs (cuDNN, cuBLAS) not found,
// no NVIDIA driver, a driver too old, no device. DeviceChoice::Auto then uses the CPU.
std::string cuda_backend_unavailable_reason();

// Throws DeviceError when the policy needs what the device lacks (bf16/TF32 < sm_80,
// fp8 < sm_89), naming what it needs and what the GPU has.
void check_policy_supported(const DeviceInfo& info, Policy policy);

} // namespace mixlab
