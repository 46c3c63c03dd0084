// Picking a dataset: names to loaders, folders to formats by their file names, and the
// per-channel normalisation every loader finishes with.
#include "mixlab/dataset.h"

#include "data/dataset_files.h"
#include "mixlab/error.h"
#include "mixlab/text_corpus.h"

#include <algorithm>
#include <cmath>

namespace mixlab {

namespace {

using data::fs::path;

std::string all_expected_files()
{
    return data::idx_expected_files() + "; or " + data::cifar_expected_files() +
           "; or (a word-level text corpus) train.txt, valid.txt and test.txt";
}

} // namespace

std::string default_dataset_name()
{
    return data::looks_like_idx_folder(path(k_debian_fashion_mnist_dir)) ? "fashion-mnist"
                                                                         : "synthetic";
}

Dataset load_dataset(const DatasetOptions& options, std::uint64_t seed)
{
    const std::string name = options.name.empty() ? default_dataset_name() : options.name;
    if (name == "synthetic")
        return make_synthetic(options.synthetic_train, options.synthetic_test, seed);
    if (name == "synthetic-text") {
        SyntheticTextOptions text;
        text.train_tokens = options.synthetic_text_tokens;
        text.vocab = options.synthetic_text_vocab;
        text.seed = seed;
        return text_dataset(make_synthetic_text(text));
    }
    if (name == "fashion-mnist") {
        // A folder holding some of the files goes on to the loader, whose message names
        // exactly what is missing or damaged.
        if (!data::looks_like_idx_folder(path(k_debian_fashion_mnist_dir)))
            throw DataError(std::string("Fashion-MNIST is not installed: ") +
                            k_debian_fashion_mnist_dir +
                            " does not hold it. Install Debian's package (sudo apt-get install "
                            "dataset-fashion-mnist), or give the folder that holds " +
                            data::idx_expected_files() + " as the dataset");
        Dataset d = load_idx_folder(k_debian_fashion_mnist_dir);
        d.name = "fashion-mnist";
        return d;
    }

    const path folder(name);
    if (!data::exists_quietly(folder))
        throw DataError(
            "dataset \"" + name +
            "\" is neither a known name (fashion-mnist, synthetic, synthetic-text) nor an existing "
            "folder; give a folder "
            "holding " +
            all_expected_files());
    data::require_folder(folder, all_expected_files());
    const bool idx = data::looks_like_idx_folder(folder);
    const bool cifar = data::looks_like_cifar_folder(folder);
    if (idx && cifar)
        throw DataError(
            "dataset folder " + folder.string() +
            " holds both IDX (MNIST) and CIFAR files; keep each dataset in a folder of its own");
    if (idx) return load_idx_folder(name);
    if (cifar) return load_cifar_folder(name, options.cifar100_coarse);
    if (is_text_corpus_folder(name)) return text_dataset(load_text_corpus_folder(name));
    throw DataError("dataset folder " + folder.string() +
                    " holds no dataset files MixLab recognises; expected " + all_expected_files());
}

Dataset text_dataset(TextCorpus corpus)
{
    Dataset d;
    d.name = corpus.name;
    d.source = corpus.source;
    d.classes = corpus.vocab_size();
    d.train.n = std::int64_t(corpus.train.size());
    d.test.n = std::int64_t(corpus.test.size());
    d.text = std::make_shared<const TextCorpus>(std::move(corpus));
    return d;
}

void compute_normalization(Dataset& data)
{
    data.mean.fill(0.0f);
    data.stddev.fill(1.0f);
    const int channels = data.channels;
    if (channels < 1 || channels > int(data.mean.size()))
        throw DataError("dataset " + data.name + " has " + std::to_string(channels) +
                        " channels; MixLab handles 1 to 4");
    const std::vector<std::uint8_t>& images = data.train.images;
    if (images.size() != std::size_t(data.train.n * data.sample_size()))
        throw DataError("dataset " + data.name + ": the training split holds " +
                        std::to_string(images.size()) + " bytes, expected " +
                        std::to_string(data.train.n) + " images of " +
                        std::to_string(data.sample_size()));
    if (images.empty()) return; // nothing to measure: leave the identity transform

    // A histogram per channel: exact counting in one cheap pass over the bytes, then a
    // two-pass mean/variance over 256 bins in double, with no cancellation to fear.
    std::vector<std::uint64_t> histogram(std::size_t(channels) * 256, 0);
    const std::size_t n_pixels = images.size() / std::size_t(channels);
    const std::uint8_t* p = images.data();
    for (std::size_t i = 0; i < n_pixels; ++i)
        for (int c = 0; c < channels; ++c) ++histogram[std::size_t(c) * 256 + *p++];

    for (int c = 0; c < channels; ++c) {
        const std::uint64_t* h = histogram.data() + std::size_t(c) * 256;
        double sum = 0.0;
        for (int v = 0; v < 256; ++v) sum += double(h[v]) * v;
        const double mean = sum / double(n_pixels);
        double squares = 0.0;
        for (int v = 0; v < 256; ++v) squares += double(h[v]) * (v - mean) * (v - mean);
        const double stddev = std::sqrt(squares / double(n_pixels));
        data.mean[std::size_t(c)] = float(mean / 255.0);
        // The floor keeps a constant channel (a blank test set, a synthetic flat colour)
        // from dividing by zero when batches are normalised.
        data.stddev[std::size_t(c)] = float(std::max(stddev / 255.0, 1e-3));
    }
}

} // namespace mixlab
