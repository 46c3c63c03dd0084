// Small models the test suites build in code: flatten -> dense(hidden) -> [dropout]
// -> dense(10 classes), so each suite states only what it varies.
#pragma once
#include "mixlab/model_spec.h"

namespace mixlab::test {

struct TinyMlpOptions {
    int hidden = 16;
    Activation activation = Activation::Relu;
    float dropout = 0.0f;     // > 0 adds a dropout layer after the hidden one
    bool fp32_output = false; // "dtype": "float32" on the output layer
    int classes = 10;
};

inline ModelSpec tiny_mlp(const TinyMlpOptions& o = {})
{
    ModelSpec spec;
    spec.name = "tiny";
    LayerSpec flatten;
    flatten.type = LayerType::Flatten;
    LayerSpec hidden;
    hidden.units = o.hidden;
    hidden.activation = o.activation;
    LayerSpec out;
    out.units = o.classes;
    out.force_fp32 = o.fp32_output;
    spec.layers = {flatten, hidden};
    if (o.dropout > 0.0f) {
        LayerSpec drop;
        drop.type = LayerType::Dropout;
        drop.rate = o.dropout;
        spec.layers.push_back(drop);
    }
    spec.layers.push_back(out);
    return spec;
}

} // namespace mixlab::test
