// The CIFAR-10 and CIFAR-100 binary-version loader: fixed-size records of label
// byte(s) + 3072 planar RGB bytes, converted to HWC as the rest of MixLab expects.
#include "mixlab/dataset.h"

#include "data/dataset_files.h"
#include "mixlab/error.h"

#include <algorithm>

namespace mixlab {

namespace {

using data::fs::path;

constexpr int k_side = 32;
constexpr int k_plane = k_side * k_side; // 1024 pixels per colour plane
constexpr int k_pixels = 3 * k_plane;    // 3072 bytes per image

constexpr const char* k_cifar10_subfolder = "cifar-10-batches-bin";
constexpr const char* k_cifar100_subfolder = "cifar-100-binary";
constexpr const char* k_cifar10_train[] = {"data_batch_1.bin", "data_batch_2.bin",
                                           "data_batch_3.bin", "data_batch_4.bin",
                                           "data_batch_5.bin"};
constexpr const char* k_cifar10_test = "test_batch.bin";
constexpr const char* k_cifar100_train = "train.bin";
constexpr const char* k_cifar100_test = "test.bin";
constexpr const char* k_cifar10_needs = "data_batch_1.bin ... data_batch_5.bin and test_batch.bin";
constexpr const char* k_cifar100_needs = "train.bin and test.bin";

// How one variant lays out its records.
struct RecordFormat {
    int label_bytes; // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
    int label_index; // which label byte becomes the class
    int classes[2];  // range of each label byte
    const char* label_names[2];
    int record_size() const { return label_bytes + k_pixels; }
};

constexpr RecordFormat k_cifar10_format{1, 0, {10, 0}, {"label", ""}};
RecordFormat cifar100_format(bool coarse)
{
    return {2, coarse ? 0 : 1, {20, 100}, {"coarse label", "fine label"}};
}

bool has_cifar10_files(const path& folder)
{
    return data::exists_quietly(folder / k_cifar10_test) ||
           std::any_of(std::begin(k_cifar10_train), std::end(k_cifar10_train),
                       [&](const char* name) { return data::exists_quietly(folder / name); });
}

bool has_cifar100_files(const path& folder)
{
    return data::exists_quietly(folder / k_cifar100_train) ||
           data::exists_quietly(folder / k_cifar100_test);
}

// Where the .bin files really are and which variant they are: the folder itself, or
// the subfolder CIFAR's own archives unpack to.
struct CifarLocation {
    path folder;
    bool hundred = false;
};

CifarLocation locate(const path& folder)
{
    data::require_folder(folder, data::cifar_expected_files());
    const bool ten = has_cifar10_files(folder);
    const bool hundred = has_cifar100_files(folder);
    if (ten && hundred)
        throw DataError(
            "dataset folder " + folder.string() +
            " holds both CIFAR-10 files (data_batch_N.bin, test_batch.bin) and CIFAR-100 files "
            "(train.bin, test.bin); keep each set in a folder of its own");
    if (ten) return {folder, false};
    if (hundred) return {folder, true};
    const bool sub10 = data::is_folder_quietly(folder / k_cifar10_subfolder);
    const bool sub100 = data::is_folder_quietly(folder / k_cifar100_subfolder);
    if (sub10 && sub100)
        throw DataError("dataset folder " + folder.string() + " holds both " + k_cifar10_subfolder +
                        " and " + k_cifar100_subfolder + "; give the subfolder you mean");
    if (sub10) return {folder / k_cifar10_subfolder, false};
    if (sub100) return {folder / k_cifar100_subfolder, true};
    throw DataError("dataset folder " + folder.string() + " holds no CIFAR files; expected " +
                    data::cifar_expected_files());
}

// Size of each file in records, checked before any is read so that a truncated last
// batch fails at once rather than after reading 150 MB.
std::int64_t count_records(const path& file, const RecordFormat& format)
{
    data::require_regular_file(file);
    std::error_code ec;
    const std::uintmax_t size = data::fs::file_size(file, ec);
    if (ec)
        throw DataError("cannot read the size of dataset file " + file.string() + ": " +
                        ec.message());
    const std::uintmax_t record = std::uintmax_t(format.record_size());
    const std::string record_text =
        std::to_string(record) + " bytes (one record: " + std::to_string(format.label_bytes) +
        " label byte" + (format.label_bytes > 1 ? "s" : "") + " + 3072 pixel bytes)";
    if (size == 0)
        throw DataError("dataset file " + file.string() + " is empty; expected records of " +
                        record_text);
    if (size % record != 0)
        throw DataError("dataset file " + file.string() + " is truncated: expected a multiple of " +
                        record_text + ", found " + std::to_string(size) + " bytes (" +
                        std::to_string(size / record) + " whole records and " +
                        std::to_string(size % record) +
                        " bytes over); download and unpack it again");
    return std::int64_t(size / record);
}

// Appends every record of `file` to `split`, pixels converted from CIFAR's planar
// R, G, B planes to interleaved HWC.
void append_records(const path& file, std::int64_t n_records, const RecordFormat& format,
                    Split& split)
{
    const std::vector<std::uint8_t> bytes = data::read_plain_file(file);
    const std::size_t record = std::size_t(format.record_size());
    if (bytes.size() != std::size_t(n_records) * record)
        throw DataError("dataset file " + file.string() +
                        " changed size while it was read: expected " +
                        std::to_string(std::size_t(n_records) * record) + " bytes, found " +
                        std::to_string(bytes.size()));
    const std::size_t first_image = split.images.size();
    split.images.resize(first_image + std::size_t(n_records) * k_pixels);
    split.labels.reserve(split.labels.size() + std::size_t(n_records));
    for (std::int64_t r = 0; r < n_records; ++r) {
        const std::uint8_t* rec = bytes.data() + std::size_t(r) * record;
        for (int b = 0; b < format.label_bytes; ++b) {
            if (rec[b] >= format.classes[b])
                throw DataError("dataset file " + file.string() + ": record " + std::to_string(r) +
                                " has " + format.label_names[b] + " " + std::to_string(rec[b]) +
                                ", out of range; expected 0 to " +
                                std::to_string(format.classes[b] - 1));
        }
        split.labels.push_back(rec[format.label_index]);
        const std::uint8_t* planes = rec + format.label_bytes; // (3, 32, 32)
        std::uint8_t* hwc =
            split.images.data() + first_image + std::size_t(r) * k_pixels; // (32, 32, 3)
        for (int p = 0; p < k_plane; ++p) {
            hwc[3 * p + 0] = planes[p];
            hwc[3 * p + 1] = planes[k_plane + p];
            hwc[3 * p + 2] = planes[2 * k_plane + p];
        }
    }
    split.n += n_records;
}

Split load_split(const std::vector<path>& files, const RecordFormat& format)
{
    std::vector<std::int64_t> counts;
    std::int64_t total = 0;
    for (const path& f : files) {
        counts.push_back(count_records(f, format));
        total += counts.back();
    }
    Split split;
    split.images.reserve(std::size_t(total) * k_pixels);
    split.labels.reserve(std::size_t(total));
    for (std::size_t i = 0; i < files.size(); ++i)
        append_records(files[i], counts[i], format, split);
    return split;
}

void require_files(const path& folder, const std::vector<path>& files, const char* variant,
                   const char* needs)
{
    std::string missing;
    for (const path& f : files)
        if (!data::exists_quietly(f))
            missing += (missing.empty() ? "" : ", ") + f.filename().string();
    if (!missing.empty())
        throw DataError("dataset folder " + folder.string() + " lacks " + missing + "; " + variant +
                        " needs " + needs);
}

} // namespace

namespace data {

std::string cifar_expected_files()
{
    return std::string("the CIFAR-10 binary files ") + k_cifar10_needs + " (or their " +
           k_cifar10_subfolder + " folder), or the CIFAR-100 binary files " + k_cifar100_needs +
           " (or their " + k_cifar100_subfolder + " folder)";
}

bool looks_like_cifar_folder(const path& folder)
{
    return has_cifar10_files(folder) || has_cifar100_files(folder) ||
           is_folder_quietly(folder / k_cifar10_subfolder) ||
           is_folder_quietly(folder / k_cifar100_subfolder);
}

} // namespace data

Dataset load_cifar_folder(const std::string& folder, bool cifar100_coarse)
{
    const CifarLocation where = locate(path(folder));
    Dataset d;
    d.source = data::absolute_folder(where.folder);
    d.height = k_side;
    d.width = k_side;
    d.channels = 3;
    if (!where.hundred) {
        std::vector<path> train;
        for (const char* name : k_cifar10_train) train.push_back(where.folder / name);
        const path test = where.folder / k_cifar10_test;
        std::vector<path> all = train;
        all.push_back(test);
        require_files(where.folder, all, "CIFAR-10", k_cifar10_needs);
        d.name = "cifar-10";
        d.classes = 10;
        d.train = load_split(train, k_cifar10_format);
        d.test = load_split({test}, k_cifar10_format);
    } else {
        const path train = where.folder / k_cifar100_train;
        const path test = where.folder / k_cifar100_test;
        require_files(where.folder, {train, test}, "CIFAR-100", k_cifar100_needs);
        const RecordFormat format = cifar100_format(cifar100_coarse);
        d.name = "cifar-100";
        d.classes = format.classes[format.label_index];
        d.train = load_split({train}, format);
        d.test = load_split({test}, format);
    }
    compute_normalization(d);
    return d;
}

} // namespace mixlab
