// Loads the CUDA backend module with dlopen, so that mixlab and mixlab-cli start (and
// train on the CPU) on a machine without cuDNN, cuBLAS or an NVIDIA driver.
#include "backends/cuda_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace mixlab::cuda_module {
namespace {

constexpr const char* k_file_name = "libmixlab_cuda.so";

struct LoadResult {
    Module module;
    bool loaded = false;
    std::string error;
};

// The folder libmixlab_core.so was loaded from ("" when the engine is linked statically).
std::filesystem::path core_library_dir()
{
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&core_library_dir), &info) == 0 || !info.dli_fname)
        return {};
    std::filesystem::path p(info.dli_fname);
    if (p.filename().string().rfind("libmixlab_core", 0) != 0) return {};
    std::error_code ec;
    const auto abs = std::filesystem::absolute(p, ec);
    return (ec ? p : abs).parent_path();
}

// <folder of the running executable>/../lib/mixlab: where the package installs it.
std::filesystem::path install_dir()
{
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return exe.parent_path().parent_path() / "lib" / "mixlab";
}

// Where to look, in order; env names one file and nothing else is tried then, so a
// test (or a user) can point at a missing file and see the fallback.
std::vector<std::filesystem::path> candidates()
{
    if (const char* env = std::getenv("MIXLAB_CUDA_MODULE"); env && *env)
        return {std::filesystem::path(env)};
    std::vector<std::filesystem::path> out;
    for (const auto& dir : {core_library_dir(), install_dir()})
        if (!dir.empty()) out.push_back(dir / k_file_name);
    return out;
}

std::string install_hint()
{
    return "install NVIDIA's cuDNN 9 and cuBLAS 13 for CUDA 13 (packages libcudnn9-cuda-13 and "
           "libcublas-13-0 from NVIDIA's CUDA repository) to train on the GPU";
}

LoadResult load_now()
{
    LoadResult r;
    const auto paths = candidates();
    std::filesystem::path found;
    std::error_code ec;
    for (const auto& p : paths)
        if (std::filesystem::exists(p, ec)) {
            found = p;
            break;
        }
    if (found.empty()) {
        std::string where;
        for (const auto& p : paths) where += (where.empty() ? "" : ", ") + p.string();
        r.error =
            std::getenv("MIXLAB_CUDA_MODULE") && *std::getenv("MIXLAB_CUDA_MODULE")
                ? "CUDA backend not loaded: MIXLAB_CUDA_MODULE names '" + where +
                      "', which does not exist; unset it or give the path of libmixlab_cuda.so"
                : "CUDA backend not loaded: its module libmixlab_cuda.so is missing (looked for " +
                      (where.empty() ? std::string("it beside libmixlab_core.so") : where) +
                      "); reinstall MixLab or set MIXLAB_CUDA_MODULE to the file";
        return r;
    }
    r.module.path = found.string();
    // RTLD_NOW: a missing cuDNN/cuBLAS symbol shows here, not in the middle of a run.
    void* handle = dlopen(r.module.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* text = dlerror(); // once: the call clears it
        const std::string why = text ? text : "unknown dlopen error";
        // dlerror names the file it could not open: a library the module needs (the usual
        // case, something to install) or the module itself (damaged: reinstall).
        const bool module_itself = why.rfind(r.module.path + ":", 0) == 0;
        r.error = "CUDA backend not loaded (" + why + "): " +
                  (module_itself ? "the module is damaged or not a library; reinstall MixLab"
                                 : install_hint());
        return r;
    }
    const auto version = reinterpret_cast<VersionFn>(dlsym(handle, k_version_symbol));
    r.module.probe = reinterpret_cast<ProbeFn>(dlsym(handle, k_probe_symbol));
    r.module.make_backend = reinterpret_cast<MakeBackendFn>(dlsym(handle, k_make_backend_symbol));
    r.module.plan_reports = reinterpret_cast<PlanReportsFn>(dlsym(handle, k_plan_reports_symbol));
    if (!version || !r.module.probe || !r.module.make_backend || !r.module.plan_reports) {
        r.error = "CUDA backend not loaded: " + r.module.path +
                  " lacks MixLab's entry points (not a MixLab CUDA module?); reinstall MixLab";
        return r; // the handle stays open: harmless, and dlclose could run foreign code
    }
    if (std::string(version()) != MIXLAB_VERSION) {
        r.error = "CUDA backend not loaded: " + r.module.path + " is from MixLab " + version() +
                  ", this is MixLab " + MIXLAB_VERSION + "; install matching versions";
        return r;
    }
    r.loaded = true;
    return r;
}

const LoadResult& result()
{
    static const LoadResult r = load_now(); // thread-safe once-only initialisation
    return r;
}

} // namespace

const Module* load() { return result().loaded ? &result().module : nullptr; }

const std::string& load_error() { return result().error; }

} // namespace mixlab::cuda_module
