// Fuzz target: the model-spec parser (mixlab-model/1) and the graph built from what it
// accepts. Any exception but mixlab::Error, any sanitizer report, or an accepted spec
// that does not survive writing and reading back is a bug.
#include "fuzz_util.h"

#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace mixlab;

void check_graph(const Graph& g, const ModelSpec& spec)
{
    if (g.layers.size() != spec.layers.size())
        fuzz::fail("build_graph gave " + std::to_string(g.layers.size()) +
                   " layers for a spec of " + std::to_string(spec.layers.size()));
    if (g.total_params < 0 || g.total_flops < 0) fuzz::fail("negative parameter or FLOP totals");
    for (const GraphLayer& l : g.layers)
        if (l.out.elements() <= 0)
            fuzz::fail(l.path + ": output shape " + l.out.to_string() + " is empty");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // Real specs are a few KB (ResNet-152 is the largest preset); past this the parser's
    // time is all the fuzzer would measure.
    if (size > 256 * 1024) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    ModelSpec spec;
    try {
        spec = parse_model_spec(text);
    } catch (const Error& e) {
        fuzz::check_message(e.what());
        return 0; // rejected with a message: what the parser is for
    }

    // What was accepted must be written and read back unchanged (the GUI saves specs).
    const std::string written = model_spec_to_json(spec);
    try {
        if (!(parse_model_spec(written) == spec))
            fuzz::fail("spec changed on a write/read round trip:\n" + written);
    } catch (const Error& e) {
        fuzz::fail(std::string("a written spec does not read back: ") + e.what() + "\n" + written);
    }

    // The shapes of the bundled datasets: Fashion-MNIST, CIFAR-10, CIFAR-100, plus an
    // odd small one that makes windows and strides meet their edges, and token input.
    const struct {
        Shape input;
        int classes;
    } inputs[] = {{{{28, 28, 1}}, 10},
                  {{{32, 32, 3}}, 10},
                  {{{32, 32, 3}}, 100},
                  {{{5, 3, 2}}, 3},
                  {Shape::tokens(), 50}}; // a language model's input, a small vocabulary
    for (const auto& in : inputs) {
        try {
            check_graph(build_graph(spec, in.input, in.classes), spec);
        } catch (const Error& e) {
            fuzz::check_message(e.what());
        }
    }
    return 0;
}
