// Fuzz target: the IDX (MNIST layout) loader. The input is up to four files split by
// k_part_marker (train images, train labels, test images, test labels) after one flags
// byte: bit i names file i "*.gz", bit 4+i makes it a folder instead. A missing part is
// a missing file. The files go into a scratch folder that load_dataset then reads.
#include "fuzz_util.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace {

constexpr const char* k_names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                   "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace mixlab;
    static fuzz::ScratchFolder scratch;
    // Tiny images exercise every check; the size cap keeps each run well under a
    // millisecond of file writing.
    if (size < 1 || size > 256 * 1024) return 0;
    const std::uint8_t flags = data[0];
    const auto parts =
        fuzz::split_parts(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    const auto& folder = scratch.fresh();
    for (std::size_t i = 0; i < 4 && i < parts.size(); ++i) {
        const std::string name = std::string(k_names[i]) + ((flags >> i) & 1 ? ".gz" : "");
        if ((flags >> (4 + i)) & 1)
            std::filesystem::create_directory(folder / name);
        else
            fuzz::ScratchFolder::write(folder / name, parts[i]);
    }

    DatasetOptions options;
    options.name = folder.string();
    Dataset d;
    try {
        d = load_dataset(options, 1);
    } catch (const Error& e) {
        fuzz::check_message(e.what());
        return 0;
    }
    // What the trainer relies on: sizes that agree and labels inside the class range.
    for (const Split* s : {&d.train, &d.test}) {
        if (s->n <= 0 || s->images.size() != std::size_t(s->n * d.sample_size()) ||
            s->labels.size() != std::size_t(s->n))
            fuzz::fail("a loaded IDX split's sizes disagree");
        for (std::uint8_t l : s->labels)
            if (l >= d.classes)
                fuzz::fail("a loaded IDX label is out of range: " + std::to_string(l));
    }
    for (int c = 0; c < d.channels; ++c)
        if (!(d.stddev[std::size_t(c)] > 0.0f)) fuzz::fail("a zero or NaN normalisation stddev");
    return 0;
}
