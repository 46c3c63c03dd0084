// Scalar math shared by the CPU reference and the CUDA kernels, so that both backends
// compute the same function (dropout masks bit for bit, activations to rounding).
#pragma once
#include <cstdint>
#include <cmath>

#if defined(__CUDACC__)
#define MIXLAB_HD __host__ __device__ __forceinline__
#else
#define MIXLAB_HD inline
#endif

namespace mixlab::hd {

// splitmix64 finaliser: a counter-based hash, the same on host and device.
MIXLAB_HD std::uint64_t mix64(std::uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) from (seed, step, element index); 24 bits, exact in float.
MIXLAB_HD float uniform01(std::uint64_t seed, std::uint64_t step, std::uint64_t index)
{
    std::uint64_t h = mix64(seed ^ mix64(step * 0x100000001B3ull + 0x51ED27ull) ^ mix64(index));
    return float(h >> 40) * (1.0f / 16777216.0f);
}

// Dropout keeps an element when its uniform draw is at least the rate.
MIXLAB_HD bool dropout_keep(std::uint64_t seed, std::uint64_t step, std::uint64_t index, float rate)
{
    return uniform01(seed, step, index) >= rate;
}

// One sample's augmentation draw: a crop offset in [-pad, pad] per axis and a flip bit,
// from (seed, step, sample index within the batch).
struct AugmentDraw {
    int dy = 0, dx = 0;
    bool flip = false;
};
MIXLAB_HD AugmentDraw augment_draw(std::uint64_t seed, std::uint64_t step, std::uint64_t sample,
                                   int pad, bool crop, bool flip)
{
    const std::uint64_t h =
        mix64(seed ^ mix64(step * 0x100000001B3ull + 0xA06A06ull) ^ mix64(sample + 0xC0FFEEull));
    AugmentDraw d;
    if (crop && pad > 0) {
        const std::uint64_t span = std::uint64_t(2 * pad + 1);
        d.dy = int((h & 0xFFFFull) % span) - pad;
        d.dx = int(((h >> 16) & 0xFFFFull) % span) - pad;
    }
    d.flip = flip && ((h >> 40) & 1ull) != 0;
    return d;
}
// Where output pixel (r, c) of an augmented (height x width) image reads from: crop
// then flip, as torchvision's RandomCrop(padding) followed by RandomHorizontalFlip.
// Returns false when it falls in the zero padding.
MIXLAB_HD bool augment_source(const AugmentDraw& d, int r, int c, int height, int width, int* src_r,
                              int* src_c)
{
    const int cc = d.flip ? width - 1 - c : c;
    *src_r = r + d.dy;
    *src_c = cc + d.dx;
    return *src_r >= 0 && *src_r < height && *src_c >= 0 && *src_c < width;
}

MIXLAB_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// GELU, tanh approximation (Keras's approximate=True / PyTorch's approximate='tanh'),
// chosen because cuBLASLt's GELU epilogue computes this form.
MIXLAB_HD float gelu(float x)
{
    const float k = 0.7978845608028654f; // sqrt(2/pi)
    float u = k * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}
MIXLAB_HD float gelu_grad(float x)
{
    const float k = 0.7978845608028654f;
    float u = k * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    float du = k * (1.0f + 3.0f * 0.044715f * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

// Keras clips normalised sigmoid outputs to [eps, 1 - eps] before the log.
inline constexpr float k_keras_epsilon = 1e-7f;

} // namespace mixlab::hd
