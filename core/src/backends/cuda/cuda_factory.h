// How the module's entry points (module_entry.cpp, the C ABI that make_backend reaches with
// dlopen and dlsym) make the CUDA backend, in plain C++: no CUDA headers here. Nothing
// outside libmixlab_cuda.so includes this; the rest of MixLab knows only the ABI.
#pragma once
#include "mixlab/backend.h"

#include <memory>

namespace mixlab::cuda {

bool device_present();                        // a CUDA device can be used
std::unique_ptr<Backend> make_cuda_backend(); // throws DeviceError without one

} // namespace mixlab::cuda
