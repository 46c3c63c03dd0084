// CPU residual sum: y = act(a + b) in fp32, one rounding to y's dtype. y may alias a or
// b: each element is read before it is written.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"

#include <algorithm>

namespace mixlab::cpu {

void CpuBackend::add_activation(Activation act, const Buffer& a, const Buffer& b, Buffer& y)
{
    validate::add_activation(k_name, act, a, b, y);
    const std::size_t n = y.count();
    const float* pa = a.as<float>();
    const float* pb = b.as<float>();
    float* py = y.as<float>();
    if (act == Activation::Relu)
        for (std::size_t i = 0; i < n; ++i) py[i] = std::max(pa[i] + pb[i], 0.0f);
    else
        for (std::size_t i = 0; i < n; ++i) py[i] = pa[i] + pb[i];
    round_span(y.dtype(), py, n);
}

} // namespace mixlab::cpu
