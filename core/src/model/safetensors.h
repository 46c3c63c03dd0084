// The safetensors format (huggingface/safetensors, the field's standard for weights): an
// 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype, shape
// and byte range, then the tensors' raw little-endian bytes. Bytes in and out only; what
// the tensors of a network are called is model_weights.h's.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

struct SafeTensor {
    std::string name;
    std::string dtype; // the format's: "F32", "I64", ...
    std::vector<std::int64_t> shape;
    std::string data; // raw little-endian bytes, as many as shape and dtype say
};

// The tensors in the order given, contiguous; `metadata` as "__metadata__" (the format
// allows strings only). The header is padded with spaces to a multiple of 8 bytes, as the
// reference writer does, so the data starts aligned.
std::string encode_safetensors(const std::vector<SafeTensor>& tensors,
                               const std::map<std::string, std::string>& metadata);

struct SafetensorsFile {
    std::map<std::string, std::string> metadata;
    std::vector<SafeTensor> tensors; // in the header's order
    const SafeTensor* find(std::string_view name) const;
};

// Throws InputError "<what>: <problem>" for a file that is not whole safetensors: fewer
// than 8 bytes, a header length past the end, a header that is not a JSON object of
// tensors, an unknown dtype, a byte range that does not hold its shape, runs past the
// end (the byte offsets given) or overlaps another tensor's.
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& what);

// Bytes per element of a dtype the format names; 0 for a name it does not.
std::size_t safetensors_dtype_size(std::string_view dtype);
// "[10, 784]".
std::string shape_text(const std::vector<std::int64_t>& shape);

} // namespace mixlab
