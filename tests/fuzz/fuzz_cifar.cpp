// Fuzz target: the CIFAR-10/100 binary loader. One flags byte, then the files split by
// k_part_marker: data_batch_1..5.bin and test_batch.bin (CIFAR-10), or train.bin and
// test.bin (CIFAR-100, flags bit 0). Bit 1 puts them in the subfolder CIFAR's archive
// unpacks to, bit 2 asks for CIFAR-100's coarse labels, and bits 4-7 (n > 0) turn
// file n-1 into a folder. A missing part is a missing file.
#include "fuzz_util.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace mixlab;
    static fuzz::ScratchFolder scratch;
    // A record is 3073 or 3074 bytes: six CIFAR-10 files of one record each need ~18 KB.
    if (size < 1 || size > 512 * 1024) return 0;
    const std::uint8_t flags = data[0];
    const bool hundred = flags & 1;
    const auto parts =
        fuzz::split_parts(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
    const std::vector<std::string> names =
        hundred
            ? std::vector<std::string>{"train.bin", "test.bin"}
            : std::vector<std::string>{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                       "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    const std::filesystem::path root = scratch.fresh();
    std::filesystem::path folder = root;
    if (flags & 2) {
        folder /= hundred ? "cifar-100-binary" : "cifar-10-batches-bin";
        std::filesystem::create_directory(folder);
    }
    const std::size_t as_folder = flags >> 4; // 0: none
    for (std::size_t i = 0; i < names.size() && i < parts.size(); ++i) {
        if (as_folder == i + 1)
            std::filesystem::create_directory(folder / names[i]);
        else
            fuzz::ScratchFolder::write(folder / names[i], parts[i]);
    }

    DatasetOptions options;
    options.name = root.string();
    options.cifar100_coarse = flags & 4;
    Dataset d;
    try {
        d = load_dataset(options, 1);
    } catch (const Error& e) {
        fuzz::check_message(e.what());
        return 0;
    }
    if (d.height != 32 || d.width != 32 || d.channels != 3)
        fuzz::fail("CIFAR images are not 32x32x3");
    for (const Split* s : {&d.train, &d.test}) {
        if (s->n <= 0 || s->images.size() != std::size_t(s->n * d.sample_size()) ||
            s->labels.size() != std::size_t(s->n))
            fuzz::fail("a loaded CIFAR split's sizes disagree");
        for (std::uint8_t l : s->labels)
            if (l >= d.classes)
                fuzz::fail("a loaded CIFAR label is out of range: " + std::to_string(l));
    }
    return 0;
}
