// Backend kinds by name, DeviceInfo's JSON form, and whether a precision policy can run
// on a device.
#include "mixlab/device.h"

#include "mixlab/error.h"
#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <string>

namespace mixlab {

std::string_view backend_kind_name(BackendKind kind)
{
    switch (kind) {
    case BackendKind::Cpu: return "cpu";
    case BackendKind::Cuda: return "cuda";
    }
    return "cpu";
}

std::optional<BackendKind> parse_backend_kind(std::string_view name)
{
    for (BackendKind k : {BackendKind::Cpu, BackendKind::Cuda})
        if (backend_kind_name(k) == name) return k;
    return std::nullopt;
}

nlohmann::ordered_json device_info_to_json(const DeviceInfo& d)
{
    nlohmann::ordered_json j;
    j["backend"] = backend_kind_name(d.backend);
    j["name"] = d.name;
    j["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    j["memory_bytes"] = d.memory_bytes;
    j["tensor_cores"] = d.tensor_cores;
    j["bf16"] = d.bf16;
    j["tf32"] = d.tf32;
    j["driver_version"] = d.driver_version;
    j["runtime_version"] = d.runtime_version;
    j["cublas_version"] = d.cublas_version;
    j["cudnn_version"] = d.cudnn_version;
    return j;
}

BackendKind backend_kind_from_json(const JsonReader& j)
{
    const std::string name = j.string();
    const std::optional<BackendKind> kind = parse_backend_kind(name);
    if (!kind) j.fail_type("\"cpu\" or \"cuda\"");
    return *kind;
}

DeviceInfo device_info_from_json(const JsonReader& j)
{
    DeviceInfo d;
    d.backend = backend_kind_from_json(j.at("backend"));
    d.name = j.at("name").string();
    const JsonReader cc = j.at("compute_capability");
    const std::string text = cc.string();
    const auto read = [](std::string_view digits, int& out) {
        const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), out);
        return !digits.empty() && r.ec == std::errc() && r.ptr == digits.data() + digits.size();
    };
    const std::size_t dot = text.find('.');
    const std::string_view whole(text);
    if (dot == std::string::npos || !read(whole.substr(0, dot), d.cc_major) ||
        !read(whole.substr(dot + 1), d.cc_minor) || d.cc_major < 0 || d.cc_minor < 0)
        cc.fail_type("\"major.minor\" like \"8.9\"");
    d.memory_bytes = j.at("memory_bytes").int64();
    d.tensor_cores = j.at("tensor_cores").boolean();
    d.bf16 = j.at("bf16").boolean();
    d.tf32 = j.at("tf32").boolean();
    d.driver_version = j.at("driver_version").string();
    d.runtime_version = j.at("runtime_version").string();
    d.cublas_version = j.at("cublas_version").string();
    d.cudnn_version = j.at("cudnn_version").string();
    return d;
}

void check_policy_supported(const DeviceInfo& info, Policy policy)
{
    // The CPU backend emulates every format's rounding, so every policy runs there.
    if (!info.is_gpu()) return;
    const int need = policy_traits(policy).min_cc;
    if (info.cc_major * 10 + info.cc_minor >= need) return;
    const std::string has = info.name + " has compute capability " + std::to_string(info.cc_major) +
                            "." + std::to_string(info.cc_minor);
    if (policy == Policy::MixedFP8)
        throw DeviceError("policy 'mixed_fp8' needs fp8 tensor cores (compute capability 8.9 or "
                          "newer, e.g. an H100, H200 or RTX 40xx), but " +
                          has + "; choose mixed_bf16 on this GPU, or --device cpu to emulate it");
    const std::string what = policy == Policy::TF32 ? "TF32 tensor cores" : "bfloat16 tensor cores";
    throw DeviceError("policy '" + std::string(policy_name(policy)) + "' needs " + what +
                      " (compute capability 8.0 or newer, e.g. an A100 or RTX 30xx), but " + has +
                      "; choose fp32 or mixed_fp16 on this GPU, or --device cpu to emulate it");
}

} // namespace mixlab
