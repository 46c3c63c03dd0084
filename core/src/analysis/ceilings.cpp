// The ceilings probe (large GEMMs per precision and a device copy, timed with backend
// events) and its per-device JSON cache.
#include "base/utc_text.h"
#include "mixlab/ceilings.h"

#include "mixlab/environment.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace mixlab {

namespace {

constexpr const char* k_format = "mixlab-ceilings/1";

bool is_cuda(const DeviceInfo& info) { return info.backend == BackendKind::Cuda; }

std::string utc_now_iso8601() { return utc_now_text("%Y-%m-%dT%H:%M:%SZ"); }

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Milliseconds of each of `repetitions` launches of `op` after one untimed warm-up (it
// pays for plan selection, workspace growth and clock ramp-up), each between its own
// pair of events so that one slow launch moves the median little.
template <class Op>
std::vector<double> time_launches(Backend& backend, int repetitions, Op op)
{
    op();
    backend.synchronize();
    std::vector<std::unique_ptr<Event>> marks;
    for (int i = 0; i <= repetitions; ++i) marks.push_back(backend.create_event());
    marks[0]->record();
    for (int i = 0; i < repetitions; ++i) {
        op();
        marks[std::size_t(i) + 1]->record();
    }
    marks.back()->synchronize();
    std::vector<double> ms;
    for (int i = 0; i < repetitions; ++i)
        ms.push_back(marks[std::size_t(i) + 1]->elapsed_ms_since(*marks[std::size_t(i)]));
    return ms;
}

// Values in [-1, 1) from a fixed xorshift: random enough that the GPU's power draw (and
// so its clock) is that of real data, which all-equal operands would flatter.
std::vector<float> probe_values(std::size_t n)
{
    std::vector<float> v(n);
    std::uint64_t s = 0x9E3779B97F4A7C15ull;
    for (float& x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x = float(double(s >> 40) / double(1ull << 24) * 2.0 - 1.0);
    }
    return v;
}

double gemm_tflops(Backend& backend, DType dtype, MathMode math, int n, int repetitions,
                   const std::vector<float>& values)
{
    const std::size_t count = std::size_t(n) * std::size_t(n);
    Buffer a = backend.alloc(count, dtype);
    Buffer b = backend.alloc(count, dtype);
    // C in the operands' dtype, as a mixed-precision layer's forward GEMM writes it; at
    // this size the output is a rounding error of the time either way.
    Buffer c = backend.alloc(count, dtype);
    backend.upload_f32(a, values.data(), count);
    backend.upload_f32(b, values.data(), count); // B = A: the GEMM's speed is blind to it
    GemmCall call;
    call.m = call.n = call.k = n;
    call.a = &a;
    call.b = &b;
    call.c = &c;
    call.math = math;
    const double ms = median(time_launches(backend, repetitions, [&] { backend.gemm(call); }));
    return ms > 0 ? 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12 : 0.0;
}

// The fp8 ceiling: E4M3 operands as mixed_fp8's forward GEMM reads them ("TN": A m x k,
// B stored n x k, both with k contiguous, the only form Hopper's fp8 kernels take), fp32
// accumulation, bf16 C, descales of 1 from a meta block on the device. Timed exactly as
// gemm_tflops times the others.
double fp8_gemm_tflops(Backend& backend, int n, int repetitions, const std::vector<float>& values)
{
    const std::size_t count = std::size_t(n) * std::size_t(n);
    Buffer a = backend.alloc(count, DType::F8E4M3);
    Buffer b = backend.alloc(count, DType::F8E4M3);
    Buffer c = backend.alloc(count, DType::BF16);
    backend.upload_f32(a, values.data(), count); // [-1, 1): rounded to E4M3 on upload
    backend.upload_f32(b, values.data(), count);
    const int history_len = 1;
    std::vector<float> block(fp8_block_floats(history_len), 0.0f);
    block[k_fp8_scale] = block[k_fp8_scale_inv] = 1.0f;
    block[k_fp8_max_finite] = 448.0f;
    Buffer meta = backend.alloc(block.size(), DType::F32);
    backend.upload_f32(meta, block.data(), block.size());
    GemmCall call;
    call.m = call.n = call.k = n;
    call.trans_a = false;
    call.trans_b = true;
    call.a = &a;
    call.b = &b;
    call.c = &c;
    call.math = MathMode::Reduced;
    call.fp8_meta = &meta;
    call.a_scale_inv = call.b_scale_inv = fp8_scale_inv_index(0, history_len);
    const double ms = median(time_launches(backend, repetitions, [&] { backend.gemm(call); }));
    return ms > 0 ? 2.0 * double(n) * double(n) * double(n) / (ms * 1e-3) / 1e12 : 0.0;
}

// fp8 tensor cores: Ada (8.9) and Hopper on. Probed on CUDA only: the CPU backend
// emulates fp8, and its speed is no ceiling anyone trains against.
bool has_fp8_tensor_cores(const DeviceInfo& info)
{
    return is_cuda(info) && info.cc_major * 10 + info.cc_minor >= 89;
}

double copy_gbs(Backend& backend, std::size_t bytes, int repetitions)
{
    const std::size_t count = std::max<std::size_t>(1, bytes / dtype_size(DType::F32));
    Buffer x = backend.alloc(count, DType::F32);
    Buffer y = backend.alloc(count, DType::F32);
    backend.fill(x, 0.5f);
    backend.fill(y, -1.0f);
    const double ms = median(time_launches(backend, repetitions, [&] { backend.cast(x, y); }));
    // A copy reads every byte once and writes it once: both count as traffic, as a
    // layer's "bytes moved" counts its reads and writes.
    const double moved = 2.0 * double(count) * double(dtype_size(DType::F32));
    return ms > 0 ? moved / (ms * 1e-3) / 1e9 : 0.0;
}

bool supports(const DeviceInfo& info, Policy policy)
{
    try {
        check_policy_supported(info, policy);
        return true;
    } catch (const DeviceError&) {
        return false;
    }
}

nlohmann::json entry_json(const Ceilings& c)
{
    return {{"device_key", c.device_key},   {"backend", backend_kind_name(c.backend)},
            {"device_name", c.device_name}, {"fp32_tflops", c.fp32_tflops},
            {"tf32_tflops", c.tf32_tflops}, {"fp16_tflops", c.fp16_tflops},
            {"bf16_tflops", c.bf16_tflops}, {"fp8_tflops", c.fp8_tflops},
            {"copy_gbs", c.copy_gbs},       {"measured_at", c.measured_at},
            {"gemm_size", c.gemm_size},     {"copy_bytes", c.copy_bytes},
            {"repetitions", c.repetitions}, {"probe_seconds", c.probe_seconds}};
}

// An entry as the cache holds it; nullopt when any field is missing or of the wrong
// type (a hand-edited or older file): such an entry is measured again.
std::optional<Ceilings> entry_from_json(const nlohmann::json& j)
{
    try {
        Ceilings c;
        c.device_key = j.at("device_key").get<std::string>();
        const std::optional<BackendKind> kind =
            parse_backend_kind(j.at("backend").get<std::string>());
        if (!kind) return std::nullopt;
        c.backend = *kind;
        c.device_name = j.at("device_name").get<std::string>();
        c.fp32_tflops = j.at("fp32_tflops").get<double>();
        c.tf32_tflops = j.at("tf32_tflops").get<double>();
        c.fp16_tflops = j.at("fp16_tflops").get<double>();
        c.bf16_tflops = j.at("bf16_tflops").get<double>();
        // Required: an entry cached before the fp8 probe existed is measured again.
        c.fp8_tflops = j.at("fp8_tflops").get<double>();
        c.copy_gbs = j.at("copy_gbs").get<double>();
        c.measured_at = j.at("measured_at").get<std::string>();
        c.gemm_size = j.value("gemm_size", 0);
        c.copy_bytes = j.value("copy_bytes", std::size_t(0));
        c.repetitions = j.value("repetitions", 0);
        c.probe_seconds = j.value("probe_seconds", 0.0);
        for (double v :
             {c.fp32_tflops, c.tf32_tflops, c.fp16_tflops, c.bf16_tflops, c.fp8_tflops, c.copy_gbs})
            if (!(v >= 0) || v > 1e9) // negative, NaN or absurd: not a measurement
                return std::nullopt;
        return c;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

// The cache file's "devices" object; empty when the file is missing or is not a
// ceilings cache (its whole content is then replaced on the next write).
nlohmann::json read_devices(const std::string& path)
{
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    std::stringstream text;
    text << in.rdbuf();
    const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != k_format)
        return nlohmann::json::object();
    const auto devices = doc.find("devices");
    if (devices == doc.end() || !devices->is_object()) return nlohmann::json::object();
    return *devices;
}

// Writes beside the target and renames, so that a crash or a second writer never leaves
// half a file. Returns "" or what went wrong.
std::string write_devices(const std::string& path, const nlohmann::json& devices)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path target(path);
    if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
    const fs::path temp = target.string() + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(temp, std::ios::trunc);
        if (!out)
            return "cannot write the ceilings cache '" + path +
                   "' (check that its folder is writable)";
        out << nlohmann::json{{"format", k_format}, {"devices", devices}}.dump(2) << "\n";
        if (!out.flush()) return "cannot write the ceilings cache '" + path + "' (disk full?)";
    }
    fs::rename(temp, target, ec);
    if (ec) {
        fs::remove(temp, ec);
        return "cannot replace the ceilings cache '" + path + "': " + ec.message();
    }
    return "";
}

} // namespace

ProbeSizes default_probe_sizes(const DeviceInfo& info)
{
    ProbeSizes s;
    if (is_cuda(info)) {
        s.gemm_size = 8192;
        // 1 GiB per buffer is ~20x the largest L2 (H100/H200: 50-60 MB); small cards keep
        // both buffers within an eighth of their memory.
        s.copy_bytes = std::size_t(1) << 30;
        if (info.memory_bytes > 0)
            s.copy_bytes = std::min<std::size_t>(s.copy_bytes, std::size_t(info.memory_bytes) / 16);
        s.repetitions = 7;
    } else {
        s.gemm_size = 512;
        s.copy_bytes = std::size_t(64) << 20;
        s.repetitions = 3;
    }
    return s;
}

std::string ceilings_device_key(const DeviceInfo& info)
{
    std::string key = std::string(backend_kind_name(info.backend)) + " | " + info.name;
    if (is_cuda(info))
        key += " | driver " + info.driver_version + " | cuBLAS " + info.cublas_version;
    else // every CPU reads "CPU (no CUDA device)": the model tells one host from another
        key += " | " + describe_environment(info).cpu_model;
    return key;
}

Ceilings probe_ceilings(Backend& backend, const ProbeSizes& asked)
{
    const auto start = std::chrono::steady_clock::now();
    const DeviceInfo info = backend.info();
    const ProbeSizes defaults = default_probe_sizes(info);
    ProbeSizes s = asked;
    if (s.gemm_size <= 0) s.gemm_size = defaults.gemm_size;
    if (s.copy_bytes == 0) s.copy_bytes = defaults.copy_bytes;
    if (s.repetitions <= 0) s.repetitions = defaults.repetitions;

    Ceilings c;
    c.device_key = ceilings_device_key(info);
    c.backend = info.backend;
    c.device_name = info.name;
    c.gemm_size = s.gemm_size;
    c.copy_bytes = s.copy_bytes;
    c.repetitions = s.repetitions;

    const std::vector<float> values =
        probe_values(std::size_t(s.gemm_size) * std::size_t(s.gemm_size));
    c.fp32_tflops =
        gemm_tflops(backend, DType::F32, MathMode::Pedantic, s.gemm_size, s.repetitions, values);
    if (supports(info, Policy::TF32))
        c.tf32_tflops =
            gemm_tflops(backend, DType::F32, MathMode::TF32, s.gemm_size, s.repetitions, values);
    // fp16 GEMMs run on every CUDA GPU (without tensor cores below 7.0, and slowly there:
    // that is the number the user should see).
    c.fp16_tflops =
        gemm_tflops(backend, DType::F16, MathMode::Reduced, s.gemm_size, s.repetitions, values);
    if (supports(info, Policy::MixedBF16))
        c.bf16_tflops = gemm_tflops(backend, DType::BF16, MathMode::Reduced, s.gemm_size,
                                    s.repetitions, values);
    // k must be a multiple of 16 for fp8 (any probe size a user would ask for is).
    if (has_fp8_tensor_cores(info) && s.gemm_size % 16 == 0)
        c.fp8_tflops = fp8_gemm_tflops(backend, s.gemm_size, s.repetitions, values);
    c.copy_gbs = copy_gbs(backend, s.copy_bytes, s.repetitions);

    c.measured_at = utc_now_iso8601();
    c.probe_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return c;
}

std::string default_ceilings_cache_path()
{
    namespace fs = std::filesystem;
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    // The XDG spec: a relative XDG_CACHE_HOME is invalid and ignored.
    if (xdg && *xdg && fs::path(xdg).is_absolute())
        return (fs::path(xdg) / "mixlab" / "ceilings.json").string();
    const char* home = std::getenv("HOME");
    if (home && *home) return (fs::path(home) / ".cache" / "mixlab" / "ceilings.json").string();
    return (fs::temp_directory_path() / "mixlab-ceilings.json").string();
}

std::optional<Ceilings> cached_ceilings(const DeviceInfo& info, const std::string& cache_path)
{
    const std::string key = ceilings_device_key(info);
    const nlohmann::json devices = read_devices(cache_path);
    const auto it = devices.find(key);
    if (it == devices.end()) return std::nullopt;
    std::optional<Ceilings> c = entry_from_json(*it);
    if (!c || c->device_key != key) return std::nullopt;
    c->from_cache = true;
    return c;
}

Ceilings ceilings_for(Backend& backend, const std::string& cache_path,
                      const CeilingsRequest& request)
{
    if (!request.refresh)
        if (std::optional<Ceilings> cached = cached_ceilings(backend.info(), cache_path))
            return *cached;
    Ceilings c = probe_ceilings(backend, request.sizes);
    // Read again just before writing: another process may have cached another device.
    nlohmann::json devices = read_devices(cache_path);
    devices[c.device_key] = entry_json(c);
    c.cache_error = write_devices(cache_path, devices);
    return c;
}

double roofline_floor_ms(double flops, double bytes, double tflops, double gbs)
{
    if (!(flops >= 0) || !(bytes >= 0))
        throw InputError("roofline_floor_ms: flops and bytes must be non-negative, got " +
                         std::to_string(flops) + " and " + std::to_string(bytes));
    double seconds = 0;
    if (tflops > 0) seconds = std::max(seconds, flops / (tflops * 1e12));
    if (gbs > 0) seconds = std::max(seconds, bytes / (gbs * 1e9));
    return seconds * 1e3;
}

double policy_tflops(const Ceilings& c, Policy policy)
{
    switch (policy) {
    case Policy::FP32: return c.fp32_tflops;
    case Policy::TF32: return c.tf32_tflops;
    case Policy::MixedFP16:
    case Policy::FP16: return c.fp16_tflops;
    case Policy::MixedBF16: return c.bf16_tflops;
    // A floor must bound every layer from below: its fp8 layers' GEMMs can run at the fp8
    // rate (the others at bf16's, which this makes a looser floor, never a wrong one).
    // bf16's where the GPU has no fp8 GEMMs, whose mixed_fp8 runs nothing in fp8.
    case Policy::MixedFP8: return c.fp8_tflops > 0 ? c.fp8_tflops : c.bf16_tflops;
    }
    return 0;
}

std::string ceilings_to_json(const Ceilings& c)
{
    nlohmann::json j = entry_json(c);
    j["from_cache"] = c.from_cache;
    if (!c.cache_error.empty()) j["cache_error"] = c.cache_error;
    return j.dump(2);
}

} // namespace mixlab
