// The C entry points of libmixlab_cuda.so that make_backend finds with dlsym: version,
// device probe (with the reason when there is no usable device), construction, plans.
#include "backends/cuda_module_abi.h"

#include "backends/cuda/conv_report.h"
#include "backends/cuda/cuda_factory.h"
#include "backends/cuda/gemm_report.h"
#include "backends/op_names.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <type_traits>

namespace {

// The oldest Linux driver that runs CUDA 13.0 code (NVIDIA's CUDA 13.0 release notes).
constexpr const char* k_min_driver = "580";

std::string no_device_reason(cudaError_t err)
{
    if (err == cudaSuccess || err == cudaErrorNoDevice)
        return "no CUDA device found: the NVIDIA driver sees no GPU (check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES)";
    // cudart_static opens the driver's libcuda.so.1 itself; without it every call fails
    // with "insufficient driver", which would wrongly say the driver is old.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver)
        return "no NVIDIA driver found (libcuda.so.1 is not installed): install NVIDIA's driver " +
               std::string(k_min_driver) + " or newer to train on a GPU";
    dlclose(driver);
    if (err == cudaErrorInsufficientDriver) {
        int version = 0;
        cudaDriverGetVersion(&version);
        return "the NVIDIA driver is too old: it supports CUDA " + std::to_string(version / 1000) +
               "." + std::to_string(version % 1000 / 10) +
               ", MixLab's CUDA backend needs CUDA 13 (driver " + k_min_driver +
               " or newer): update the driver (nvidia-smi shows its version)";
    }
    return std::string("the CUDA driver cannot be used: ") + cudaGetErrorString(err) +
           " (check nvidia-smi)";
}

nlohmann::json gemm_json(const mixlab::cuda::GemmPlanInfo& p)
{
    using mixlab::dtype_name;
    return {{"m", p.m},
            {"n", p.n},
            {"k", p.k},
            {"trans_a", p.trans_a},
            {"trans_b", p.trans_b},
            {"ab", std::string(dtype_name(p.ab))},
            {"b", std::string(dtype_name(p.b))},
            {"c", std::string(dtype_name(p.c))},
            {"aux", std::string(dtype_name(p.aux))},
            {"epilogue", mixlab::epilogue_name(p.epilogue)},
            {"math", mixlab::math_mode_name(p.math)},
            {"fast_accum", p.fast_accum},
            {"staging", p.staging},
            {"fused", p.fused},
            {"tensor_cores", p.tensor_cores},
            {"calls", p.calls},
            {"description", mixlab::cuda::describe(p)}};
}

nlohmann::json conv_json(const mixlab::cuda::ConvPlanRecord& p)
{
    return {{"dtype", std::string(mixlab::dtype_name(p.dtype))},
            {"forward", p.info.forward_algo},
            {"backward_data", p.info.backward_data_algo},
            {"backward_filter", p.info.backward_filter_algo},
            {"tensor_cores", p.info.tensor_cores},
            {"workspace_bytes", p.info.workspace_bytes},
            {"calls", p.calls},
            {"description", mixlab::cuda::describe(p)}};
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) const char* mixlab_cuda_version() { return MIXLAB_VERSION; }

__attribute__((visibility("default"))) int mixlab_cuda_probe(char* why, std::size_t why_size)
{
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) return count;
    cudaGetLastError(); // leave no sticky error for the next caller
    if (why && why_size > 0) std::snprintf(why, why_size, "%s", no_device_reason(err).c_str());
    return 0;
}

// Exceptions cross this C-named function into make_backend: both sides are C++ built
// by the same compiler and share libmixlab_core.so's error classes.
__attribute__((visibility("default"))) mixlab::Backend* mixlab_cuda_make_backend()
{
    return mixlab::cuda::make_cuda_backend().release();
}

__attribute__((visibility("default"))) void
mixlab_cuda_plan_reports(const mixlab::Backend* backend, std::vector<mixlab::PlanReport>* out)
{
    if (!backend || !out) return;
    for (const auto& p : mixlab::cuda::gemm_plans(*backend))
        out->push_back({"gemm", mixlab::cuda::describe(p), gemm_json(p).dump()});
    for (const auto& p : mixlab::cuda::conv_plans(*backend))
        out->push_back({"conv", mixlab::cuda::describe(p), conv_json(p).dump()});
}

} // extern "C"

// The loader checks the four names in cuda_module_abi.h; these asserts keep the
// definitions above and the types there in step.
static_assert(std::is_same_v<decltype(&mixlab_cuda_version), mixlab::cuda_module::VersionFn>);
static_assert(std::is_same_v<decltype(&mixlab_cuda_probe), mixlab::cuda_module::ProbeFn>);
static_assert(
    std::is_same_v<decltype(&mixlab_cuda_make_backend), mixlab::cuda_module::MakeBackendFn>);
static_assert(
    std::is_same_v<decltype(&mixlab_cuda_plan_reports), mixlab::cuda_module::PlanReportsFn>);
