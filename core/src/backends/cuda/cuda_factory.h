// The only door from plain C++ into the CUDA backend: no CUDA headers here.
#pragma once
#include "mixlab/backend.h"

#include <memory>

namespace mixlab::cuda {

bool device_present();                         // a CUDA device can be used
std::unique_ptr<Backend> make_cuda_backend();  // throws DeviceError without one

} // namespace mixlab::cuda
