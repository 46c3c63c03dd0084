// CPU max and average pooling over NHWC windows. Padded positions are skipped: they
// never win a max and do not count in an average. Max pooling's gradient goes to the
// first window element (row-major) equal to the output; sums in fp32, rounded once.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "backends/cpu/cpu_parallel.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace mixlab::cpu {

namespace {

// The part of one window inside the image: rows [r_lo, r_hi) and columns [s_lo, s_hi)
// of the window, whose (0, 0) sits at input (h0, w0).
struct Window {
    int h0, w0, r_lo, r_hi, s_lo, s_hi;
    int count() const { return (r_hi - r_lo) * (s_hi - s_lo); }
};

Window window_at(const PoolGeometry& g, int p, int q)
{
    Window w;
    w.h0 = p * g.stride_h - g.pad_h;
    w.w0 = q * g.stride_w - g.pad_w;
    w.r_lo = std::max(0, -w.h0);
    w.r_hi = std::min(g.window_h, g.in_h - w.h0);
    w.s_lo = std::max(0, -w.w0);
    w.s_hi = std::min(g.window_w, g.in_w - w.w0);
    return w;
}

constexpr std::size_t k_channel_block = 64;

// Same value, or both NaN: the max pooling winner test (a NaN input wins and propagates).
bool same_value(float a, float b)
{
    return (a == b) | ((a != a) & (b != b)); // no branches: the callers vectorise
}

} // namespace

void CpuBackend::pool_forward(PoolMode mode, const PoolGeometry& g, const Buffer& x, Buffer& y)
{
    validate::pool(k_name, "pool_forward", g, x, y);
    const std::size_t c = std::size_t(g.channels);
    const float* px = x.as<float>();
    float* py = y.as<float>();
    const int lines = g.batch * g.out_h;
    MIXLAB_OMP_FOR_IF(std::size_t(lines) * g.out_w * c * g.window_h * g.window_w)
    for (int line = 0; line < lines; ++line) {
        const int n = line / g.out_h, p = line % g.out_h;
        const float* image = px + std::size_t(n) * g.in_h * g.in_w * c;
        for (int q = 0; q < g.out_w; ++q) {
            const Window w = window_at(g, p, q);
            float* out = py + ((std::size_t(n) * g.out_h + p) * g.out_w + q) * c;
            std::fill(out, out + c,
                      mode == PoolMode::Max ? -std::numeric_limits<float>::infinity() : 0.0f);
            for (int r = w.r_lo; r < w.r_hi; ++r)
                for (int s = w.s_lo; s < w.s_hi; ++s) {
                    const float* in = image + (std::size_t(w.h0 + r) * g.in_w + (w.w0 + s)) * c;
                    if (mode == PoolMode::Max) {
                        // A select, not a branch: vectorises, and a NaN input (v != v)
                        // takes over so overflow stays visible downstream.
                        for (std::size_t k = 0; k < c; ++k) {
                            const float v = in[k];
                            out[k] = ((v > out[k]) | (v != v)) ? v : out[k];
                        }
                    } else {
                        for (std::size_t k = 0; k < c; ++k) out[k] += in[k];
                    }
                }
            if (mode == PoolMode::Average) {
                const float n_valid = float(w.count());
                for (std::size_t k = 0; k < c; ++k) out[k] /= n_valid;
            }
            round_span(y.dtype(), out, c);
        }
    }
}

void CpuBackend::pool_backward(PoolMode mode, const PoolGeometry& g, const Buffer& x,
                               const Buffer& y, const Buffer& dy, Buffer& dx)
{
    validate::pool_backward(k_name, mode, g, x, y, dy, dx);
    const std::size_t c = std::size_t(g.channels);
    const std::size_t in_image = std::size_t(g.in_h) * g.in_w * c;
    const std::size_t out_image = std::size_t(g.out_h) * g.out_w * c;
    const float* px = mode == PoolMode::Max ? x.as<float>() : nullptr;
    const float* py = mode == PoolMode::Max ? y.as<float>() : nullptr;
    const float* pdy = dy.as<float>();
    float* pdx = dx.as<float>();
    // Parallel over images: overlapping windows add into the same pixel only within one.
    MIXLAB_OMP_FOR_IF(std::size_t(g.batch) * (in_image + out_image * g.window_h * g.window_w))
    for (int n = 0; n < g.batch; ++n) {
        float* grad_in = pdx + std::size_t(n) * in_image;
        std::fill(grad_in, grad_in + in_image, 0.0f);
        for (int p = 0; p < g.out_h; ++p)
            for (int q = 0; q < g.out_w; ++q) {
                const Window w = window_at(g, p, q);
                const std::size_t o =
                    std::size_t(n) * out_image + (std::size_t(p) * g.out_w + q) * c;
                const float* grad_out = pdy + o;
                if (mode == PoolMode::Average) {
                    const float n_valid = float(w.count());
                    for (int r = w.r_lo; r < w.r_hi; ++r)
                        for (int s = w.s_lo; s < w.s_hi; ++s) {
                            float* to = grad_in + (std::size_t(w.h0 + r) * g.in_w + (w.w0 + s)) * c;
                            for (std::size_t k = 0; k < c; ++k) to[k] += grad_out[k] / n_valid;
                        }
                    continue;
                }
                // The winner per channel: walk the window backwards so the last match
                // written is the first in row-major order. Channels go in stack-sized
                // blocks, and the window position is a 32-bit int so that the compare
                // and select vectorise alongside the float loads.
                const float* image = px + std::size_t(n) * in_image;
                for (std::size_t k0 = 0; k0 < c; k0 += k_channel_block) {
                    const std::size_t kb = std::min(k_channel_block, c - k0);
                    const float* best = py + o + k0;
                    std::int32_t winner[k_channel_block];
                    for (std::size_t k = 0; k < kb; ++k) winner[k] = -1;
                    for (int r = w.r_hi - 1; r >= w.r_lo; --r)
                        for (int s = w.s_hi - 1; s >= w.s_lo; --s) {
                            const std::int32_t pos = r * g.window_w + s;
                            const float* in =
                                image + (std::size_t(w.h0 + r) * g.in_w + (w.w0 + s)) * c + k0;
                            for (std::size_t k = 0; k < kb; ++k)
                                winner[k] = same_value(in[k], best[k]) ? pos : winner[k];
                        }
                    // y came from this x, so every channel has a winner; a y that does
                    // not (-1) passes no gradient rather than a wrong one.
                    for (std::size_t k = 0; k < kb; ++k) {
                        if (winner[k] < 0) continue;
                        const int r = winner[k] / g.window_w, s = winner[k] % g.window_w;
                        grad_in[(std::size_t(w.h0 + r) * g.in_w + (w.w0 + s)) * c + k0 + k] +=
                            grad_out[k0 + k];
                    }
                }
            }
        round_span(dx.dtype(), grad_in, in_image);
    }
}

} // namespace mixlab::cpu
