// Fuzz target: the Keras model importer (model.to_json() of Keras 2 and 3). Any exception
// but mixlab::Error, any sanitizer report, a message that is not one line of UTF-8, or an
// accepted model whose spec does not write and read back unchanged is a bug.
#include "fuzz_util.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // A ResNet-50's Keras JSON is about 200 KB; past this only the parser's time is measured.
    if (size > 512 * 1024) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        mixlab::fuzz::check_import(mixlab::import_keras_model(text));
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::check_refusal(e);
    }
    return 0;
}
