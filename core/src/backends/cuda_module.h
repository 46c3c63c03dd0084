// Finding and loading libmixlab_cuda.so once per process: its entry points, or why it
// could not be loaded (dlerror's text with what to install).
#pragma once
#include "backends/cuda_module_abi.h"

#include <string>

namespace mixlab::cuda_module {

struct Module {
    ProbeFn probe = nullptr;
    MakeBackendFn make_backend = nullptr;
    PlanReportsFn plan_reports = nullptr;
    std::string path; // the file loaded
};

// The module, loaded on the first call (thread-safe); null when it could not be, with
// the reason in load_error(). Never unloaded: backends it made may live to exit.
const Module* load();
const std::string& load_error();

} // namespace mixlab::cuda_module
