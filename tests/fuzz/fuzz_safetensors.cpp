// Fuzz target: the safetensors reader (model/safetensors.h) and the loading of what it
// accepts into a small network (model/model_weights.h: names, shapes, the conv and
// flatten reorderings). Any exception but mixlab::Error, any sanitizer report, or an
// accepted file whose tensors do not survive encoding and decoding again is a bug.
#include "fuzz_util.h"

#include "mixlab/backend.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "model/model_weights.h"
#include "model/network.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace {

using namespace mixlab;

// conv2d 2 filters 1x1, batchnorm, flatten, dense 3 on 2x2x2 samples: the corpus's
// valid file is this network's (tensors "0.weight" ... "3.bias").
struct Target {
    std::unique_ptr<Backend> backend = make_backend(DeviceChoice::CPU);
    Graph graph;
    std::unique_ptr<Network> net;
    Target()
    {
        ModelSpec spec;
        LayerSpec conv;
        conv.type = LayerType::Conv2D;
        conv.filters = 2;
        conv.kernel_h = conv.kernel_w = 1;
        LayerSpec bn, flatten, dense;
        bn.type = LayerType::BatchNorm;
        flatten.type = LayerType::Flatten;
        dense.units = 3;
        spec.name = "fuzz";
        spec.layers = {conv, bn, flatten, dense};
        graph = build_graph(spec, Shape{{2, 2, 2}}, 3);
        net = std::make_unique<Network>(graph, Policy::FP32, OptimizerConfig{}, *backend, 1, 1);
    }
};

void check_round_trip(const SafetensorsFile& file)
{
    const SafetensorsFile again =
        decode_safetensors(encode_safetensors(file.tensors, file.metadata), "re-encoded");
    if (again.metadata != file.metadata) fuzz::fail("metadata changed on a round trip");
    if (again.tensors.size() != file.tensors.size()) fuzz::fail("tensors lost on a round trip");
    for (std::size_t i = 0; i < file.tensors.size(); ++i) {
        const SafeTensor &a = file.tensors[i], &b = again.tensors[i];
        if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.data != b.data)
            fuzz::fail("tensor \"" + a.name + "\" changed on a round trip");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // The corpus's files are a few hundred bytes; larger inputs only cost parse time.
    if (size > 64 * 1024) return 0;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    static Target target;
    try {
        check_round_trip(decode_safetensors(bytes, "fuzz"));
    } catch (const Error& e) {
        fuzz::check_message(e.what());
        return 0;
    }
    try {
        load_weights_bytes(*target.net, bytes, "fuzz");
    } catch (const Error& e) {
        fuzz::check_message(e.what());
    }
    return 0;
}
