// Fuzz target: a .keras archive (a zip, read with libzip) through load_keras_model, as the
// CLI and the app's File > Import model open it. Any exception but mixlab::Error, any
// sanitizer report, a message that is not one line of UTF-8, or an accepted model whose
// spec does not write and read back unchanged is a bug. The archive's model.weights.h5 is
// kept, not converted: libhdf5 is Debian's, not this project's code to fuzz.
#include "fuzz_util.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static mixlab::fuzz::ScratchFolder scratch;
    if (size > 256 * 1024) return 0;
    const auto file = scratch.fresh() / "model.keras";
    mixlab::fuzz::ScratchFolder::write(file,
                                       std::string_view(reinterpret_cast<const char*>(data), size));
    try {
        mixlab::fuzz::check_import(mixlab::load_keras_model(file.string()));
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::check_refusal(e);
    }
    return 0;
}
