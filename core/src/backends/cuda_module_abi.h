// The entry points libmixlab_cuda.so exports for make_backend's loader (cuda_module.cpp),
// declared once for both sides. Plain C++: no CUDA headers.
#pragma once
#include "mixlab/backend.h"

#include <cstddef>
#include <vector>

namespace mixlab::cuda_module {

// The module's MIXLAB_VERSION: a module left from another build is refused, since the
// Backend class it implements may have changed.
using VersionFn = const char* (*)();
// Number of usable CUDA devices; when 0, a one-line reason (no driver, driver too old, no
// device) is written to why (NUL-terminated, cut to why_size).
using ProbeFn = int (*)(char* why, std::size_t why_size);
// A new CUDA backend the caller owns; throws DeviceError/CudaError like make_backend.
using MakeBackendFn = Backend* (*)();
// The GEMM plans, then the convolution plans, the backend built so far; nothing is
// appended for a backend that is not the CUDA one.
using PlanReportsFn = void (*)(const Backend* backend, std::vector<PlanReport>* out);

inline constexpr const char* k_version_symbol = "mixlab_cuda_version";
inline constexpr const char* k_probe_symbol = "mixlab_cuda_probe";
inline constexpr const char* k_make_backend_symbol = "mixlab_cuda_make_backend";
inline constexpr const char* k_plan_reports_symbol = "mixlab_cuda_plan_reports";

} // namespace mixlab::cuda_module
