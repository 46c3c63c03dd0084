// safetensors encoding and strict decoding, with nlohmann::json for the header.
#include "model/safetensors.h"

#include "base/json_util.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

namespace mixlab {

// The format is little-endian; the bytes are copied as the host holds them.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O copies host bytes: a little-endian host only");

namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t k_length_bytes = 8;

std::string tensor_label(const std::string& name) { return "tensor \"" + name + "\""; }

} // namespace

std::size_t safetensors_dtype_size(std::string_view dtype)
{
    static const std::map<std::string_view, std::size_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
        {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
    const auto it = sizes.find(dtype);
    return it == sizes.end() ? 0 : it->second;
}

std::string shape_text(const std::vector<std::int64_t>& shape)
{
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string encode_safetensors(const std::vector<SafeTensor>& tensors,
                               const std::map<std::string, std::string>& metadata)
{
    Json header = Json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::size_t at = 0;
    for (const SafeTensor& t : tensors) {
        header[t.name] = {
            {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.data.size()}}};
        at += t.data.size();
    }
    std::string text = header.dump();
    text.append((k_length_bytes - text.size() % k_length_bytes) % k_length_bytes, ' ');
    const std::uint64_t n = text.size();
    std::string out(k_length_bytes, '\0');
    std::memcpy(out.data(), &n, k_length_bytes);
    out.reserve(k_length_bytes + text.size() + at);
    out += text;
    for (const SafeTensor& t : tensors) out += t.data;
    return out;
}

const SafeTensor* SafetensorsFile::find(std::string_view name) const
{
    for (const SafeTensor& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& what)
{
    const auto fail = [&](const std::string& message) { throw InputError(what + ": " + message); };
    if (bytes.size() < k_length_bytes)
        fail("truncated at byte offset " + std::to_string(bytes.size()) +
             ": a safetensors file starts with an 8-byte header length");
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data(), k_length_bytes);
    if (n > bytes.size() - k_length_bytes)
        fail("the header length " + std::to_string(n) + " runs past the end of the file (" +
             std::to_string(bytes.size()) + " bytes): truncated, or not a safetensors file");
    Json header;
    try {
        header = Json::parse(bytes.substr(k_length_bytes, std::size_t(n)));
    } catch (const nlohmann::json::exception& e) {
        fail("the header is not JSON: " +
             json_util::json_error_text(e)); // its quote of the bytes made printable
    }
    if (!header.is_object()) fail("the header is not a JSON object");

    const std::size_t data_start = k_length_bytes + std::size_t(n);
    const std::size_t data_size = bytes.size() - data_start;
    SafetensorsFile file;
    struct Range {
        std::uint64_t begin, end;
        std::string name;
    };
    std::vector<Range> ranges;
    for (const auto& [name, entry] : header.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) fail("\"__metadata__\" is not an object");
            for (const auto& [key, value] : entry.items()) {
                if (!value.is_string())
                    fail("\"__metadata__\" \"" + key +
                         "\" is not a string (the format allows "
                         "strings only)");
                file.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        const std::string label = tensor_label(name);
        if (!entry.is_object()) fail(label + " is not an object");
        const auto dtype = entry.find("dtype");
        const auto shape = entry.find("shape");
        const auto offsets = entry.find("data_offsets");
        if (dtype == entry.end() || !dtype->is_string()) fail(label + ": no \"dtype\" string");
        if (shape == entry.end() || !shape->is_array()) fail(label + ": no \"shape\" array");
        if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
            !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
            fail(label + ": \"data_offsets\" must be two byte offsets [begin, end]");
        SafeTensor t;
        t.name = name;
        t.dtype = dtype->get<std::string>();
        const std::size_t element = safetensors_dtype_size(t.dtype);
        if (!element) fail(label + ": unknown dtype \"" + t.dtype + "\"");
        std::uint64_t elements = 1;
        for (const auto& d : *shape) {
            if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40))
                fail(label + ": \"shape\" must hold non-negative integers");
            t.shape.push_back(d.get<std::int64_t>());
            // Checked before multiplying: two dimensions of 2^40 would wrap to 0.
            const std::uint64_t dim = d.get<std::uint64_t>();
            if (dim != 0 && elements > (1ull << 40) / dim)
                fail(label + ": its shape " + shape_text(t.shape) +
                     "... holds more than 2^40 elements");
            elements *= dim;
        }
        const std::uint64_t begin = (*offsets)[0], end = (*offsets)[1];
        if (begin > end)
            fail(label + ": \"data_offsets\" [" + std::to_string(begin) + ", " +
                 std::to_string(end) + "] end before they begin");
        if (end - begin != elements * element)
            fail(label + ": \"data_offsets\" [" + std::to_string(begin) + ", " +
                 std::to_string(end) + "] hold " + std::to_string(end - begin) +
                 " bytes, its shape " + shape_text(t.shape) + " of " + t.dtype + " needs " +
                 std::to_string(elements * element));
        if (end > data_size)
            fail("truncated: " + label + " ends at byte offset " +
                 std::to_string(data_start + end) + " but the file ends at byte offset " +
                 std::to_string(bytes.size()));
        t.data.assign(bytes.substr(data_start + std::size_t(begin), std::size_t(end - begin)));
        ranges.push_back({begin, end, name});
        file.tensors.push_back(std::move(t));
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    for (std::size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].begin < ranges[i - 1].end)
            fail(tensor_label(ranges[i - 1].name) + " and " + tensor_label(ranges[i].name) +
                 " overlap: bytes " + std::to_string(ranges[i].begin) + " to " +
                 std::to_string(std::min(ranges[i].end, ranges[i - 1].end)) +
                 " of the data belong to both");
    return file;
}

} // namespace mixlab
