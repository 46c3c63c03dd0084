// The MNIST-layout IDX loader (MNIST, Fashion-MNIST): train/t10k image (idx3) and
// label (idx1) files, plain or gzip-compressed, read through zlib.
#include "mixlab/dataset.h"

#include "data/dataset_files.h"
#include "mixlab/error.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace mixlab {

namespace {

using data::fs::path;

constexpr std::uint32_t k_images_magic = 0x00000803; // unsigned byte, 3 dimensions
constexpr std::uint32_t k_labels_magic = 0x00000801; // unsigned byte, 1 dimension
constexpr int k_classes = 10;
// An image larger than this is a damaged header, not a dataset MixLab could train on.
constexpr std::uint64_t k_max_image_pixels = 1u << 24;

constexpr const char* k_train_images = "train-images-idx3-ubyte";
constexpr const char* k_train_labels = "train-labels-idx1-ubyte";
constexpr const char* k_test_images = "t10k-images-idx3-ubyte";
constexpr const char* k_test_labels = "t10k-labels-idx1-ubyte";
constexpr const char* k_all_names[] = {k_train_images, k_train_labels, k_test_images,
                                       k_test_labels};

std::uint32_t read_be32(const std::uint8_t* p)
{
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
           p[3];
}

// A file opened through zlib: gzread decompresses .gz files and passes plain files
// through unchanged, so one reader serves both.
class GzReader {
public:
    explicit GzReader(const path& file) : m_path(file)
    {
        data::require_regular_file(file);
        m_file = gzopen(file.c_str(), "rb");
        if (!m_file)
            throw DataError("cannot open dataset file " + file.string() + ": " +
                            std::generic_category().message(errno));
        // A larger buffer than zlib's 8 KiB default roughly halves the time spent in
        // read() calls on the 26 MB Fashion-MNIST training images.
        gzbuffer(m_file, 1 << 18);
    }
    ~GzReader()
    {
        if (m_file) gzclose(m_file);
    }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;

    // Reads up to n bytes; fewer only at the end of the data. A damaged compressed
    // stream throws; one that ends early just reads short (the caller reports the
    // truncation with the byte counts it expected).
    std::size_t read(std::uint8_t* dst, std::size_t n)
    {
        std::size_t got = 0;
        while (got < n) {
            const unsigned chunk = unsigned(std::min<std::size_t>(n - got, 1u << 30));
            const int r = gzread(m_file, dst + got, chunk);
            if (r < 0) {
                int code = Z_OK;
                const char* message = gzerror(m_file, &code);
                throw DataError("cannot decompress dataset file " + m_path.string() + ": " +
                                (message ? message : "unknown zlib error") +
                                " (the file is damaged; download or install it again)");
            }
            if (r == 0) break;
            got += std::size_t(r);
        }
        return got;
    }

    // Set once data has been read: a gzip stream that stopped before its end marker.
    bool cut_short() const
    {
        int code = Z_OK;
        gzerror(m_file, &code);
        return code == Z_BUF_ERROR;
    }

    bool compressed() const { return gzdirect(m_file) == 0; }

private:
    path m_path;
    gzFile m_file = nullptr;
};

struct IdxImages {
    path file;
    std::int64_t n = 0;
    int rows = 0, cols = 0;
    std::vector<std::uint8_t> pixels; // (n, rows, cols)
};

struct IdxLabels {
    path file;
    std::int64_t n = 0;
    std::vector<std::uint8_t> labels; // (n)
};

[[noreturn]] void throw_truncated(const path& file, const GzReader& reader, std::uint64_t expected,
                                  std::uint64_t found, const std::string& layout)
{
    std::string message = "dataset file " + file.string() + " is truncated: expected " +
                          std::to_string(expected) + " bytes (" + layout + "), found " +
                          std::to_string(found);
    if (reader.compressed()) message += " after decompression";
    if (reader.cut_short()) message += "; its compressed data ends early";
    throw DataError(message + " (download or install it again)");
}

void check_magic(const path& file, std::uint32_t found, std::uint32_t expected, const char* kind)
{
    if (found == expected) return;
    std::string message = "dataset file " + file.string() + " is not an IDX " + kind +
                          " file: expected magic " + data::hex32(expected) + ", found " +
                          data::hex32(found);
    if (found == k_labels_magic)
        message += " (an IDX label file: are the file names swapped?)";
    else if (found == k_images_magic)
        message += " (an IDX image file: are the file names swapped?)";
    throw DataError(message);
}

// After the bytes the header announces, the file must end: more data means the
// header's count is wrong, and trusting it would silently drop samples.
void check_no_trailing_data(const path& file, GzReader& reader, const std::string& layout)
{
    std::uint8_t extra = 0;
    if (reader.read(&extra, 1) != 0)
        throw DataError("dataset file " + file.string() +
                        " holds more data than its header announces (" + layout +
                        "); the header or the file is damaged");
}

// Reads the announced payload in chunks rather than allocating it up front, so a
// damaged header claiming billions of images fails as a truncation, not an allocation.
std::uint64_t read_payload(GzReader& reader, std::vector<std::uint8_t>& out, std::uint64_t expected)
{
    constexpr std::uint64_t k_chunk = 8u << 20;
    out.clear();
    out.reserve(std::size_t(std::min<std::uint64_t>(expected, 256u << 20)));
    while (out.size() < expected) {
        const std::size_t old = out.size();
        const std::size_t want = std::size_t(std::min<std::uint64_t>(expected - old, k_chunk));
        out.resize(old + want);
        const std::size_t got = reader.read(out.data() + old, want);
        if (got < want) {
            out.resize(old + got);
            break;
        }
    }
    return out.size();
}

// What differs between the two IDX files this loader reads.
struct IdxFormat {
    std::uint32_t magic;
    std::size_t header_bytes; // the magic, then one big-endian uint32 per dimension
    const char* kind;         // "not an IDX image file"
    const char* header_text;  // "expected 16 bytes (a 16-byte IDX image header)"
    const char* items;        // "holds no images"
};
constexpr IdxFormat k_image_format{k_images_magic, 16, "image", "a 16-byte IDX image header",
                                   "images"};
constexpr IdxFormat k_label_format{k_labels_magic, 8, "label", "an 8-byte IDX label header",
                                   "labels"};

// Reads and checks the header (the right magic, complete, at least one item) and returns
// its dimensions: the item count first. The magic is checked before completeness so a
// short file of the wrong kind is reported as the wrong kind.
std::vector<std::uint32_t> read_header(GzReader& reader, const path& file, const IdxFormat& f)
{
    std::uint8_t header[16];
    const std::size_t got = reader.read(header, f.header_bytes);
    if (got < 4) throw_truncated(file, reader, f.header_bytes, got, f.header_text);
    check_magic(file, read_be32(header), f.magic, f.kind);
    if (got < f.header_bytes) throw_truncated(file, reader, f.header_bytes, got, f.header_text);
    std::vector<std::uint32_t> dims;
    for (std::size_t at = 4; at < f.header_bytes; at += 4) dims.push_back(read_be32(header + at));
    if (dims[0] == 0)
        throw DataError("dataset file " + file.string() + " holds no " + f.items +
                        " (its header says 0)");
    return dims;
}

// Reads the `expected` bytes after the header into out; the file must hold exactly those.
void read_body(GzReader& reader, const path& file, const IdxFormat& f, std::uint64_t expected,
               const std::string& layout, std::vector<std::uint8_t>& out)
{
    const std::uint64_t found = read_payload(reader, out, expected);
    if (found < expected)
        throw_truncated(file, reader, f.header_bytes + expected, f.header_bytes + found, layout);
    check_no_trailing_data(file, reader, layout);
}

IdxImages read_images(const path& file)
{
    GzReader reader(file);
    IdxImages result;
    result.file = file;
    const auto dims = read_header(reader, file, k_image_format);
    const std::uint32_t n = dims[0], rows = dims[1], cols = dims[2];
    if (rows == 0 || cols == 0 || std::uint64_t(rows) * cols > k_max_image_pixels)
        throw DataError("dataset file " + file.string() + " has a damaged header: images of " +
                        std::to_string(rows) + "x" + std::to_string(cols) + " pixels");
    const std::string layout = "16-byte header + " + std::to_string(n) + " images of " +
                               std::to_string(rows) + "x" + std::to_string(cols);
    read_body(reader, file, k_image_format, std::uint64_t(n) * rows * cols, layout, result.pixels);
    result.n = n;
    result.rows = int(rows);
    result.cols = int(cols);
    return result;
}

IdxLabels read_labels(const path& file)
{
    GzReader reader(file);
    IdxLabels result;
    result.file = file;
    const std::uint32_t n = read_header(reader, file, k_label_format)[0];
    const std::string layout = "8-byte header + " + std::to_string(n) + " labels";
    read_body(reader, file, k_label_format, n, layout, result.labels);
    result.n = n;
    return result;
}

// The file for one IDX name: the plain file when present (no decompression needed),
// else the .gz. Empty when neither exists.
path resolve(const path& folder, const char* name)
{
    const path plain = folder / name;
    if (data::exists_quietly(plain)) return plain;
    const path gz = folder / (std::string(name) + ".gz");
    if (data::exists_quietly(gz)) return gz;
    return {};
}

Split make_split(IdxImages&& images, IdxLabels&& labels)
{
    if (images.n != labels.n)
        throw DataError("dataset files disagree: " + images.file.string() + " holds " +
                        std::to_string(images.n) + " images but " + labels.file.string() +
                        " holds " + std::to_string(labels.n) + " labels");
    const auto bad = std::find_if(labels.labels.begin(), labels.labels.end(),
                                  [](std::uint8_t l) { return l >= k_classes; });
    if (bad != labels.labels.end())
        throw DataError("dataset file " + labels.file.string() + ": label " + std::to_string(*bad) +
                        " at index " + std::to_string(bad - labels.labels.begin()) +
                        " is out of range; expected 0 to " + std::to_string(k_classes - 1));
    Split split;
    split.n = images.n;
    split.images = std::move(images.pixels);
    split.labels = std::move(labels.labels);
    return split;
}

bool mentions_fashion(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return text.find("fashion") != std::string::npos;
}

} // namespace

namespace data {

std::string idx_expected_files()
{
    return "the MNIST-layout IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, "
           "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each may end in .gz)";
}

bool looks_like_idx_folder(const path& folder)
{
    return std::any_of(std::begin(k_all_names), std::end(k_all_names),
                       [&](const char* name) { return !resolve(folder, name).empty(); });
}

} // namespace data

Dataset load_idx_folder(const std::string& folder)
{
    const path dir(folder);
    data::require_folder(dir, data::idx_expected_files());

    path files[4];
    std::string missing;
    for (int i = 0; i < 4; ++i) {
        files[i] = resolve(dir, k_all_names[i]);
        if (files[i].empty())
            missing += std::string(missing.empty() ? "" : ", ") + k_all_names[i] + "[.gz]";
    }
    if (!missing.empty())
        throw DataError("dataset folder " + dir.string() + " lacks " + missing +
                        "; an IDX dataset needs " + data::idx_expected_files());

    IdxImages train_images = read_images(files[0]);
    IdxLabels train_labels = read_labels(files[1]);
    IdxImages test_images = read_images(files[2]);
    IdxLabels test_labels = read_labels(files[3]);
    if (test_images.rows != train_images.rows || test_images.cols != train_images.cols)
        throw DataError("dataset files disagree: " + train_images.file.string() + " holds " +
                        std::to_string(train_images.rows) + "x" +
                        std::to_string(train_images.cols) + " images but " +
                        test_images.file.string() + " holds " + std::to_string(test_images.rows) +
                        "x" + std::to_string(test_images.cols));

    Dataset d;
    d.source = data::absolute_folder(dir);
    d.name = mentions_fashion(d.source) ? "fashion-mnist" : "mnist";
    d.height = train_images.rows;
    d.width = train_images.cols;
    d.channels = 1;
    d.classes = k_classes;
    d.train = make_split(std::move(train_images), std::move(train_labels));
    d.test = make_split(std::move(test_images), std::move(test_labels));
    compute_normalization(d);
    return d;
}

} // namespace mixlab
