// The table of layer units: one entry per LayerType. A switch without a default, so the
// compiler names a LayerType that has no unit.
#include "model/layers/registry.h"

#include "mixlab/error.h"

namespace mixlab {

// Defined in the units' own files.
const LayerUnit& flatten_unit();
const LayerUnit& dense_unit();
const LayerUnit& activation_unit();
const LayerUnit& dropout_unit();
const LayerUnit& conv2d_unit();
const LayerUnit& batchnorm_unit();
const LayerUnit& maxpool2d_unit();
const LayerUnit& avgpool2d_unit();
const LayerUnit& global_avgpool_unit();
const LayerUnit& residual_unit();
const LayerUnit& embedding_unit();
const LayerUnit& lstm_unit();

const LayerUnit& layer_unit(LayerType type)
{
    switch (type) {
    case LayerType::Flatten: return flatten_unit();
    case LayerType::Dense: return dense_unit();
    case LayerType::Activation: return activation_unit();
    case LayerType::Dropout: return dropout_unit();
    case LayerType::Conv2D: return conv2d_unit();
    case LayerType::BatchNorm: return batchnorm_unit();
    case LayerType::MaxPool2D: return maxpool2d_unit();
    case LayerType::AvgPool2D: return avgpool2d_unit();
    case LayerType::GlobalAvgPool: return global_avgpool_unit();
    case LayerType::Residual: return residual_unit();
    case LayerType::Embedding: return embedding_unit();
    case LayerType::Lstm: return lstm_unit();
    }
    throw Error("no layer unit for layer type " + std::to_string(int(type)));
}

} // namespace mixlab
