// Datasets held in host memory as uint8 images (N, H, W, C) and labels, ready to be
// uploaded once to the device.
#pragma once
#include "mixlab/run_config.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

struct Split {
    std::vector<std::uint8_t> images; // (n, H, W, C)
    std::vector<std::uint8_t> labels; // (n)
    std::int64_t n = 0;
};

struct TextCorpus;

// Images and labels, or (for a language model) a word-level text corpus: then `text` is
// set, the image fields are empty, `classes` is the vocabulary size and train.n/test.n
// count tokens.
struct Dataset {
    std::string name;   // "fashion-mnist", "mnist", "cifar-10", "cifar-100", "synthetic",
                        // a corpus folder's name, "synthetic-text"
    std::string source; // folder it came from, or "built-in"
    int height = 0, width = 0, channels = 0, classes = 0;
    Split train, test;
    std::shared_ptr<const TextCorpus> text;
    bool is_text() const { return text != nullptr; }
    // Per-channel mean and standard deviation of the training images, in [0, 1] units.
    std::array<float, 4> mean{}, stddev{};
    std::int64_t sample_size() const { return std::int64_t(height) * width * channels; }
};

// Where Debian's dataset-fashion-mnist package puts its files.
inline constexpr const char* k_debian_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

// "fashion-mnist" when Debian's package is installed, otherwise "synthetic".
std::string default_dataset_name();

// A name ("fashion-mnist", "synthetic", "synthetic-text") or a folder recognised by its
// file names (IDX: train-images-idx3-ubyte[.gz] ...; CIFAR-10: data_batch_1.bin ...;
// CIFAR-100: train.bin/test.bin; a word corpus: train.txt, valid.txt, test.txt). Throws
// DataError naming the file, expected and found size.
Dataset load_dataset(const DatasetOptions& options, std::uint64_t seed);

// The built-in learnable set: 32x32x3, 10 classes, deterministic by seed.
Dataset make_synthetic(std::int64_t n_train, std::int64_t n_test, std::uint64_t seed);

// A word-level corpus as a Dataset (text set, classes = vocabulary).
Dataset text_dataset(TextCorpus corpus);

// Loaders for one format each (folder must hold the files).
Dataset load_idx_folder(const std::string& folder);
Dataset load_cifar_folder(const std::string& folder, bool cifar100_coarse);

// Fills mean/stddev from the training images.
void compute_normalization(Dataset& data);

} // namespace mixlab
