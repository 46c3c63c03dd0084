// Fuzz target: the Keras model importer (model.to_json() of Keras 2 and 3). Any exception
// but mixlab::Error, any sanitizer report, a message that is not one line of UTF-8, or an
// accepted model whose spec does not write and read back unchanged is a bug.
#include "fuzz_util.h"

#include "mixlab/error.h"
#include "mixlab/keras_import.h"
#include "mixlab/model_spec.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

void check_origins(const std::vector<mixlab::LayerSpec>& layers,
                   const std::vector<mixlab::KerasOrigin>& origins)
{
    if (layers.size() != origins.size())
        mixlab::fuzz::fail("the import's origins do not match its layers one to one");
    for (std::size_t i = 0; i < layers.size(); ++i) {
        check_origins(layers[i].body, origins[i].body);
        check_origins(layers[i].shortcut, origins[i].shortcut);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // A ResNet-50's Keras JSON is about 200 KB; past this only the parser's time is measured.
    if (size > 512 * 1024) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    mixlab::KerasImport imported;
    try {
        imported = mixlab::import_keras_model(text);
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::check_message(e.what());
        // The CLI prints it as one line on stderr.
        if (std::string_view(e.what()).find('\n') != std::string_view::npos)
            mixlab::fuzz::fail(std::string("a message of several lines: ") + e.what());
        return 0;
    }
    // What the importer writes is a spec file the user then opens: it must read back as is.
    const std::string written = mixlab::model_spec_to_json(imported.spec);
    try {
        if (!(mixlab::parse_model_spec(written) == imported.spec))
            mixlab::fuzz::fail("imported spec changed on a write/read round trip:\n" + written);
    } catch (const mixlab::Error& e) {
        mixlab::fuzz::fail(std::string("an imported spec does not read back: ") + e.what() + "\n" +
                           written);
    }
    if (imported.spec.layers.empty()) mixlab::fuzz::fail("an import with no layers");
    // The weights of an archive find their layers through the origins: one per layer, at
    // every depth.
    check_origins(imported.spec.layers, imported.origins);
    return 0;
}
