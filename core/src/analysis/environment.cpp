// describe_environment: device facts from the backend, host facts from uname, /proc and
// the compiler's own macros. Nothing here fails: a fact that cannot be read is "unknown".
#include "mixlab/environment.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <thread>

#include <sys/utsname.h>
#include <unistd.h>

namespace mixlab {
namespace {

std::string trim(const std::string& s)
{
    const auto first = s.find_first_not_of(" \t\r\n\"");
    if (first == std::string::npos) return {};
    const auto last = s.find_last_not_of(" \t\r\n\"");
    return s.substr(first, last - first + 1);
}

// The value after "key:" (cpuinfo) or "key=" (os-release) on the first line that
// starts with key; "" when no line does.
std::string read_keyed_line(const char* path, const std::string& key, char separator)
{
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0) continue;
        const auto sep = line.find(separator, key.size());
        // "model name" must not match "model name2": only spaces may sit before the separator.
        if (sep == std::string::npos || trim(line.substr(key.size(), sep - key.size())) != "")
            continue;
        return trim(line.substr(sep + 1));
    }
    return {};
}

std::string host_os()
{
    utsname u{};
    if (uname(&u) != 0) return "unknown";
    return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string cpu_model()
{
    // x86 names its CPU "model name"; many ARM kernels only give "Hardware" or "Model".
    for (const char* key : {"model name", "Hardware", "Model"}) {
        std::string v = read_keyed_line("/proc/cpuinfo", key, ':');
        if (!v.empty()) return v;
    }
    return "unknown";
}

std::int64_t host_memory()
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    return std::int64_t(pages) * page_size;
}

std::string compiler()
{
#if defined(__clang__)
    return "Clang " __clang_version__;
#elif defined(__GNUC__)
    return "GCC " __VERSION__;
#else
    return "unknown";
#endif
}

std::string or_cpu(const std::string& value, bool is_cpu)
{
    if (is_cpu) return "cpu";
    return value.empty() ? "unknown" : value;
}

} // namespace

Environment describe_environment(const DeviceInfo& device)
{
    Environment e;
    const bool is_cpu = device.backend != BackendKind::Cuda;
    e.backend = device.backend;
    e.device_name = device.name;
    e.compute_capability =
        is_cpu ? "cpu" : std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor);
    e.device_memory_bytes = device.memory_bytes;
    e.tensor_cores = device.tensor_cores;
    e.bf16 = device.bf16;
    e.tf32 = device.tf32;
    e.driver_version = or_cpu(device.driver_version, is_cpu);
    e.runtime_version = or_cpu(device.runtime_version, is_cpu);
    e.cublas_version = or_cpu(device.cublas_version, is_cpu);
    e.cudnn_version = or_cpu(device.cudnn_version, is_cpu);

    e.os = host_os();
    e.os_release = read_keyed_line("/etc/os-release", "PRETTY_NAME", '=');
    e.cpu_model = cpu_model();
    e.cpu_threads = int(std::thread::hardware_concurrency());
    e.host_memory_bytes = host_memory();
    e.compiler = compiler();
    e.mixlab_version = MIXLAB_VERSION;
#if defined(MIXLAB_WITH_CUDA)
    e.built_with_cuda = true;
#endif
    return e;
}

std::string environment_to_json(const Environment& e)
{
    nlohmann::ordered_json j;
    j["backend"] = backend_kind_name(e.backend);
    j["device_name"] = e.device_name;
    j["compute_capability"] = e.compute_capability;
    j["device_memory_bytes"] = e.device_memory_bytes;
    j["tensor_cores"] = e.tensor_cores;
    j["bf16"] = e.bf16;
    j["tf32"] = e.tf32;
    j["driver_version"] = e.driver_version;
    j["runtime_version"] = e.runtime_version;
    j["cublas_version"] = e.cublas_version;
    j["cudnn_version"] = e.cudnn_version;
    j["os"] = e.os;
    j["os_release"] = e.os_release;
    j["cpu_model"] = e.cpu_model;
    j["cpu_threads"] = e.cpu_threads;
    j["host_memory_bytes"] = e.host_memory_bytes;
    j["compiler"] = e.compiler;
    j["mixlab_version"] = e.mixlab_version;
    j["built_with_cuda"] = e.built_with_cuda;
    return j.dump();
}

} // namespace mixlab
