// CPU inverted dropout. The mask is a pure function of (seed, step, element index)
// (hd::dropout_keep), so backward regenerates it instead of storing it, and the CUDA
// backend draws the very same mask.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"

namespace mixlab::cpu {

namespace {

void dropout(const Buffer& in, float rate, std::uint64_t seed, std::uint64_t step, Buffer& out,
             const char* op)
{
    validate::dropout(k_name, op, in, rate, out);
    const std::size_t n = in.count();
    const float* x = in.as<float>();
    float* y = out.as<float>();
    const float keep_scale = 1.0f - rate; // a kept element is never seen when rate == 1
    for (std::size_t i = 0; i < n; ++i)
        y[i] = hd::dropout_keep(seed, step, i, rate) ? x[i] / keep_scale : 0.0f;
    round_span(out.dtype(), y, n);
}

} // namespace

void CpuBackend::dropout_forward(const Buffer& x, float rate, std::uint64_t seed,
                                 std::uint64_t step, const StepCounter& counter, Buffer& y)
{
    validate::step_counter(k_name, "dropout_forward", counter);
    dropout(x, rate, seed, counter.buffer ? read_step(counter) : step, y, "dropout_forward");
}

void CpuBackend::dropout_backward(const Buffer& dy, float rate, std::uint64_t seed,
                                  std::uint64_t step, const StepCounter& counter, Buffer& dx)
{
    validate::step_counter(k_name, "dropout_backward", counter);
    dropout(dy, rate, seed, counter.buffer ? read_step(counter) : step, dx, "dropout_backward");
}

// The step counter lives beside dropout because dropout is its main reader.
void CpuBackend::advance_step(Buffer& counter)
{
    const StepCounter c{&counter, 1};
    validate::step_counter(k_name, "advance_step", c);
    const std::uint64_t next = read_step(c) + 1;
    std::memcpy(counter.data(), &next, sizeof next);
}

} // namespace mixlab::cpu
