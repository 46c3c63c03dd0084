// Fuzz target: the run-config parser (mixlab-run/1) and its validation. Any exception
// but mixlab::Error, any sanitizer report, or an accepted config that does not survive
// writing and reading back is a bug.
#include "fuzz_util.h"

#include "mixlab/error.h"
#include "mixlab/run_config.h"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using namespace mixlab;
    if (size > 64 * 1024) return 0; // real configs are a few hundred bytes
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    RunConfig config;
    try {
        config = parse_run_config(text);
    } catch (const Error& e) {
        fuzz::check_message(e.what());
        return 0;
    }
    try {
        validate_run_config(config); // parse validates; doing it again must agree
    } catch (const Error& e) {
        fuzz::fail(std::string("a parsed config fails validation: ") + e.what());
    }
    // RunConfig has no ==; its written form stands in for it (every field is written).
    const std::string written = run_config_to_json(config);
    try {
        const std::string again = run_config_to_json(parse_run_config(written));
        if (again != written)
            fuzz::fail("config changed on a write/read round trip:\n" + written + "\n" + again);
    } catch (const Error& e) {
        fuzz::fail(std::string("a written config does not read back: ") + e.what() + "\n" +
                   written);
    }
    (void)effective_loss_scale_mode(config);
    return 0;
}
