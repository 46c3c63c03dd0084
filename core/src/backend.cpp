// Buffer ownership, the backend factory (cpu / cuda / auto) and the check that a
// precision policy can run on the chosen device.
#include "mixlab/backend.h"

#include "mixlab/error.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_factory.h"

#include <string>
#include <utility>

namespace mixlab {

Buffer& Buffer::operator=(Buffer&& other) noexcept
{
    if (this != &other) {
        if (m_owner && m_data)
            m_owner->release(m_data);
        m_owner = std::exchange(other.m_owner, nullptr);
        m_data = std::exchange(other.m_data, nullptr);
        m_count = std::exchange(other.m_count, 0);
        m_dtype = other.m_dtype;
    }
    return *this;
}

Buffer::~Buffer()
{
    if (m_owner && m_data)
        m_owner->release(m_data);
}

bool cuda_backend_available()
{
#ifdef MIXLAB_WITH_CUDA
    return cuda::device_present();
#else
    return false;
#endif
}

std::unique_ptr<Backend> make_backend(DeviceChoice choice)
{
    switch (choice) {
    case DeviceChoice::CPU:
        return cpu::make_cpu_backend();
    case DeviceChoice::CUDA:
#ifdef MIXLAB_WITH_CUDA
        if (!cuda::device_present())
            throw DeviceError("no CUDA device found: the driver reports no usable NVIDIA GPU "
                              "(check nvidia-smi and CUDA_VISIBLE_DEVICES), or use --device cpu "
                              "to run on the CPU reference backend");
        return cuda::make_cuda_backend();
#else
        throw DeviceError("this build of MixLab has no CUDA backend (it was configured with "
                          "MIXLAB_WITH_CUDA=OFF or without the CUDA toolkit); rebuild with "
                          "-DMIXLAB_WITH_CUDA=ON, or use --device cpu");
#endif
    case DeviceChoice::Auto:
        break;
    }
#ifdef MIXLAB_WITH_CUDA
    if (cuda::device_present())
        return cuda::make_cuda_backend();
#endif
    return cpu::make_cpu_backend();
}

void check_policy_supported(const DeviceInfo& info, Policy policy)
{
    // The CPU backend emulates every format's rounding, so every policy runs there.
    if (info.backend != "cuda")
        return;
    if (!policy_traits(policy).needs_sm80 || info.cc_major >= 8)
        return;
    const std::string what = policy == Policy::TF32 ? "TF32 tensor cores" : "bfloat16 tensor cores";
    throw DeviceError("policy '" + std::string(policy_name(policy)) + "' needs " + what +
                      " (compute capability 8.0 or newer, e.g. an A100 or RTX 30xx), but " +
                      info.name + " has compute capability " + std::to_string(info.cc_major) +
                      "." + std::to_string(info.cc_minor) +
                      "; choose fp32 or mixed_fp16 on this GPU, or --device cpu to emulate it");
}

} // namespace mixlab
