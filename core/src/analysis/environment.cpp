// describe_environment: device facts from the backend, host facts from uname, /proc and
// the compiler's own macros. Nothing here fails: a fact that cannot be read is "unknown".
// Also the way back to a DeviceInfo, and the JSON form.
#include "mixlab/environment.h"

#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <charconv>
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

DeviceInfo device_info_of(const Environment& env)
{
    DeviceInfo d;
    d.backend = env.backend;
    d.name = env.device_name;
    d.memory_bytes = env.device_memory_bytes;
    d.tensor_cores = env.tensor_cores;
    d.bf16 = env.bf16;
    d.tf32 = env.tf32;
    // "8.9"; "cpu" (the CPU backend) leaves 0.0, as the CPU's DeviceInfo has.
    const std::string& cc = env.compute_capability;
    const std::size_t dot = cc.find('.');
    int major = 0, minor = 0;
    if (dot != std::string::npos &&
        std::from_chars(cc.data(), cc.data() + dot, major).ec == std::errc() &&
        std::from_chars(cc.data() + dot + 1, cc.data() + cc.size(), minor).ec == std::errc()) {
        d.cc_major = major;
        d.cc_minor = minor;
    }
    d.driver_version = env.driver_version;
    d.runtime_version = env.runtime_version;
    d.cublas_version = env.cublas_version;
    d.cudnn_version = env.cudnn_version;
    return d;
}

nlohmann::ordered_json environment_to_json(const Environment& e)
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
    return j;
}

Environment environment_from_json(const JsonReader& j)
{
    j.as_object();
    Environment e;
    e.backend = backend_kind_from_json(j.at("backend"));
    e.device_name = j.at("device_name").string();
    e.compute_capability = j.at("compute_capability").string();
    e.device_memory_bytes = j.at("device_memory_bytes").int64();
    e.tensor_cores = j.at("tensor_cores").boolean();
    e.bf16 = j.at("bf16").boolean();
    e.tf32 = j.at("tf32").boolean();
    e.driver_version = j.at("driver_version").string();
    e.runtime_version = j.at("runtime_version").string();
    e.cublas_version = j.at("cublas_version").string();
    e.cudnn_version = j.at("cudnn_version").string();
    e.os = j.at("os").string();
    e.os_release = j.at("os_release").string();
    e.cpu_model = j.at("cpu_model").string();
    e.cpu_threads = j.at("cpu_threads").int32();
    e.host_memory_bytes = j.at("host_memory_bytes").int64();
    e.compiler = j.at("compiler").string();
    e.mixlab_version = j.at("mixlab_version").string();
    e.built_with_cuda = j.at("built_with_cuda").boolean();
    return e;
}

} // namespace mixlab
