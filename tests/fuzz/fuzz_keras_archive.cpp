// Fuzz target: a .keras archive (a zip, read with libzip) through load_keras_model, as the
// CLI and the app's File > Import model open it. Any exception but mixlab::Error, any
// sanitizer report, a message that is not one line of UTF-8, or an accepted model whose
// spec does not write and read back unchanged is a bug. The archive's model.weights.h5 is
// kept, not converted: libhdf5 is Debian's, not this project's code to fuzz.
#include "fuzz_util.h"

#include "mixlab/error.h"
#include "mixlab/keras_import.h"
#include "mixlab/model_spec.h"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static mixlab::fuzz::ScratchFolder scratch;
    if (size > 256 * 1024) return 0;
    const auto file = scratch.fresh() / "model.keras";
    mixlab::fuzz::ScratchFolder::write(file,
                                       std::string_view(reinterpret_cast<const char*>(data), size));
    mixlab::KerasImport imported;
    try {
        imported = mixlab::load_keras_model(file.string());
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::check_message(e.what());
        if (std::string_view(e.what()).find('\n') != std::string_view::npos)
            mixlab::fuzz::fail(std::string("a message of several lines: ") + e.what());
        return 0;
    }
    const std::string written = mixlab::model_spec_to_json(imported.spec);
    try {
        if (!(mixlab::parse_model_spec(written) == imported.spec))
            mixlab::fuzz::fail("imported spec changed on a write/read round trip:\n" + written);
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::fail(std::string("an imported spec does not read back: ") + e.what() + "\n" +
                           written);
    }
    if (imported.origins.size() != imported.spec.layers.size())
        mixlab::fuzz::fail("the import's origins do not match its layers one to one");
    return 0;
}
