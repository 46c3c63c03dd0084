// A .keras archive's weights (its model.weights.h5, read with libhdf5) as a MixLab
// weights file: the same mixlab-weights/1 safetensors file `--save-weights` writes
// (docs/WEIGHTS.md), so `mixlab-cli train --load-weights` continues training the Keras
// model. Keras's layouts become MixLab's, then model_weights' writer gives PyTorch's.
#pragma once
#include "mixlab/keras_import.h"

#include <string>

namespace mixlab {

// The weights file's bytes for the model `imported` came from (load_keras_model of a
// .keras archive). Throws InputError naming the Keras layer and variable when the archive
// has no model.weights.h5, the file is not HDF5, a layer's variables are missing, or one
// has another shape than the model's config gives (expected and found).
std::string keras_weights_file(const KerasImport& imported);
// The same written atomically to `path`.
void save_keras_weights(const KerasImport& imported, const std::string& path);

} // namespace mixlab
