// The built-in synthetic dataset: ten classes of smooth colour patterns; a sample is its
// class prototype shifted a few pixels, rescaled in brightness and noised. Only integer
// arithmetic after the seed, so a seed gives the same bytes on every compiler and CPU.
#include "mixlab/dataset.h"

#include "base/hd_math.h"
#include "data/split_mix.h"
#include "mixlab/error.h"

#include <algorithm>

namespace mixlab {

namespace {

constexpr int k_side = 32;
constexpr int k_channels = 3;
constexpr int k_classes = 10;
constexpr int k_max_shift = 3;
// Prototypes carry a margin of k_max_shift pixels so a shifted sample never reads
// past their edge.
constexpr int k_grid = k_side + 2 * k_max_shift;
constexpr int k_proto_size = k_grid * k_grid * k_channels;
constexpr std::int64_t k_max_samples = 10'000'000; // 30 GB of pixels: surely a typo

// The difficulty knobs. Every class shares one background pattern and differs by a few
// fainter blobs of its own; shifts, gain, per-sample clutter blobs and pixel noise blur
// the classes into each other. Tuned with a 3072-256-10 MLP (SGD, momentum 0.9, lr
// 0.01, batch 32, 10000 samples): about 15-25% test accuracy after 10 steps, 70-85%
// after one epoch, depending on the seed; a nearest-class-mean classifier gets 40-65%.
constexpr int k_base_blobs = 5, k_base_radius_min = 6, k_base_radius_max = 14;
constexpr int k_base_amp_min = 30, k_base_amp_max = 80;
constexpr int k_class_blobs = 3, k_class_radius_min = 4, k_class_radius_max = 9;
constexpr int k_class_amp_min = 20, k_class_amp_max = 50;
constexpr int k_clutter_blobs = 4, k_clutter_radius_min = 3, k_clutter_radius_max = 8;
constexpr int k_clutter_amp_min = 30, k_clutter_amp_max = 60;
constexpr int k_gain_min = 179, k_gain_max = 333; // brightness x0.7 .. x1.3, in 1/256
constexpr int k_noise_sigma = 60;                 // per-pixel noise, in grey levels

// Stream tags: every random quantity comes from its own stream, so train and test share
// prototypes but no sample.
enum Stream : std::uint64_t {
    PrototypeStream = 1,
    TrainSamples,
    TestSamples,
    TrainOrder,
    TestOrder
};

using data::SplitMix64;

std::uint64_t stream_seed(std::uint64_t seed, Stream stream, std::uint64_t index)
{
    return hd::mix64(hd::mix64(seed) ^
                     hd::mix64(std::uint64_t(stream) * 0x100000001B3ull ^ hd::mix64(index)));
}

// Adds a smooth bump (1 - d²/r²)² with a random colour to a (grid, grid, 3) image.
void add_blob(std::vector<int>& image, int grid, SplitMix64& rng, int radius_min, int radius_max,
              int amp_min, int amp_max)
{
    const int cy = int(rng.between(0, grid - 1));
    const int cx = int(rng.between(0, grid - 1));
    const int radius = int(rng.between(radius_min, radius_max));
    const int r2 = radius * radius;
    int amp[k_channels];
    for (int& a : amp) a = int(rng.between(amp_min, amp_max)) * ((rng.next() >> 63) ? 1 : -1);
    const std::int64_t r4 = std::int64_t(r2) * r2;
    for (int y = std::max(0, cy - radius); y <= std::min(grid - 1, cy + radius); ++y)
        for (int x = std::max(0, cx - radius); x <= std::min(grid - 1, cx + radius); ++x) {
            const int d2 = (y - cy) * (y - cy) + (x - cx) * (x - cx);
            if (d2 >= r2) continue;
            const std::int64_t w = std::int64_t(r2 - d2) * (r2 - d2);
            int* pixel = image.data() + std::ptrdiff_t(y * grid + x) * k_channels;
            for (int c = 0; c < k_channels; ++c) pixel[c] += int(amp[c] * w / r4);
        }
}

// (classes, k_grid, k_grid, 3) prototypes in grey levels 0..255.
std::vector<int> make_prototypes(std::uint64_t seed)
{
    SplitMix64 rng(stream_seed(seed, PrototypeStream, 0));
    std::vector<int> base(k_proto_size);
    int background[k_channels];
    for (int& b : background) b = int(rng.between(90, 165));
    for (int i = 0; i < k_proto_size; ++i) base[std::size_t(i)] = background[i % k_channels];
    for (int b = 0; b < k_base_blobs; ++b)
        add_blob(base, k_grid, rng, k_base_radius_min, k_base_radius_max, k_base_amp_min,
                 k_base_amp_max);

    std::vector<int> prototypes(std::size_t(k_classes) * k_proto_size);
    for (int k = 0; k < k_classes; ++k) {
        std::vector<int> image = base;
        for (int b = 0; b < k_class_blobs; ++b)
            add_blob(image, k_grid, rng, k_class_radius_min, k_class_radius_max, k_class_amp_min,
                     k_class_amp_max);
        for (int& v : image) v = std::clamp(v, 0, 255);
        std::copy(image.begin(), image.end(),
                  prototypes.begin() + std::ptrdiff_t(k) * k_proto_size);
    }
    return prototypes;
}

// One (32, 32, 3) sample from a (k_grid, k_grid, 3) prototype; `clutter` is scratch
// space for the sample's own (32, 32, 3) distractor blobs.
void draw_sample(const int* prototype, std::uint64_t sample_seed, std::vector<int>& clutter,
                 std::uint8_t* out)
{
    SplitMix64 rng(sample_seed);
    const int dy = int(rng.between(-k_max_shift, k_max_shift));
    const int dx = int(rng.between(-k_max_shift, k_max_shift));
    const int gain = int(rng.between(k_gain_min, k_gain_max));
    std::fill(clutter.begin(), clutter.end(), 0);
    for (int b = 0; b < k_clutter_blobs; ++b)
        add_blob(clutter, k_side, rng, k_clutter_radius_min, k_clutter_radius_max,
                 k_clutter_amp_min, k_clutter_amp_max);
    std::uint64_t bits = 0;
    int bits_left = 0;
    for (int y = 0; y < k_side; ++y) {
        const int* row =
            prototype +
            std::ptrdiff_t((y + k_max_shift + dy) * k_grid + k_max_shift + dx) * k_channels;
        const int* clutter_row = clutter.data() + std::ptrdiff_t(y) * k_side * k_channels;
        for (int i = 0; i < k_side * k_channels; ++i) {
            if (bits_left == 0) {
                bits = rng.next();
                bits_left = 2;
            }
            // Sum of four uniform bytes: near-Gaussian, mean 510, standard deviation 147.8.
            const int sum = int(bits & 0xFF) + int((bits >> 8) & 0xFF) + int((bits >> 16) & 0xFF) +
                            int((bits >> 24) & 0xFF);
            bits >>= 32;
            --bits_left;
            const int noise = (sum - 510) * k_noise_sigma / 148;
            const int value = ((row[i] * gain) >> 8) + clutter_row[i] + noise;
            out[std::size_t(y) * k_side * k_channels + std::size_t(i)] =
                std::uint8_t(std::clamp(value, 0, 255));
        }
    }
}

Split make_split(const std::vector<int>& prototypes, std::int64_t n, std::uint64_t seed,
                 Stream samples, Stream order)
{
    Split split;
    split.n = n;
    split.labels.resize(std::size_t(n));
    // Balanced: class counts differ by at most one; then a Fisher-Yates shuffle.
    for (std::int64_t i = 0; i < n; ++i) split.labels[std::size_t(i)] = std::uint8_t(i % k_classes);
    SplitMix64 rng(stream_seed(seed, order, 0));
    for (std::int64_t i = n - 1; i > 0; --i)
        std::swap(split.labels[std::size_t(i)], split.labels[std::size_t(rng.between(0, i))]);

    const std::size_t sample = std::size_t(k_side) * k_side * k_channels;
    split.images.resize(std::size_t(n) * sample);
    std::vector<int> clutter(sample);
    for (std::int64_t i = 0; i < n; ++i)
        draw_sample(prototypes.data() + std::ptrdiff_t(split.labels[std::size_t(i)]) * k_proto_size,
                    stream_seed(seed, samples, std::uint64_t(i)), clutter,
                    split.images.data() + std::size_t(i) * sample);
    return split;
}

} // namespace

Dataset make_synthetic(std::int64_t n_train, std::int64_t n_test, std::uint64_t seed)
{
    if (n_train < 0 || n_test < 0 || n_train > k_max_samples || n_test > k_max_samples)
        throw InputError("synthetic dataset sizes must be 0 to " + std::to_string(k_max_samples) +
                         ", got " + std::to_string(n_train) + " training and " +
                         std::to_string(n_test) + " test samples");
    const std::vector<int> prototypes = make_prototypes(seed);
    Dataset d;
    d.name = "synthetic";
    d.source = "built-in";
    d.height = k_side;
    d.width = k_side;
    d.channels = k_channels;
    d.classes = k_classes;
    d.train = make_split(prototypes, n_train, seed, TrainSamples, TrainOrder);
    d.test = make_split(prototypes, n_test, seed, TestSamples, TestOrder);
    compute_normalization(d);
    return d;
}

} // namespace mixlab
