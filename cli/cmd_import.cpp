// `mixlab-cli import FILE -o model.json`: a Keras model's JSON (model.to_json(), or a .keras
// archive's config.json) written as a mixlab-model/1 spec, with the policy and input its
// Keras layers ran under printed as the run's suggestion (a spec holds neither).
#include "commands.h"

#include "args.h"

#include "mixlab/error.h"
#include "mixlab/keras_import.h"
#include "mixlab/keras_weights.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_log.h"

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace mixlab::cli {

namespace {

std::string shape_text(const std::vector<int>& dims)
{
    std::string s;
    for (int d : dims) {
        if (!s.empty()) s += 'x';
        s += std::to_string(d);
    }
    return s;
}

} // namespace

int cmd_import(int argc, char** argv)
{
    ArgParser parser(
        "mixlab-cli import FILE -o MODEL.json [--weights-out WEIGHTS.safetensors]",
        "Reads a Keras model: the output of model.to_json() (Keras 2 or 3), or a "
        ".keras archive (model.save()), Sequential or Functional, and writes it as a "
        "MixLab model spec; with --weights-out, an archive's model.weights.h5 as a "
        "MixLab weights file for mixlab-cli train --load-weights. Layers: InputLayer, Flatten, "
        "Dense, "
        "Activation, ReLU, Softmax, Dropout, Conv2D, ZeroPadding2D (folded into the next "
        "layer), BatchNormalization, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, "
        "Add (residual blocks), Embedding, LSTM. A "
        "mixed_float16 or mixed_bfloat16 model is printed as the policy to train "
        "with; its float32 layers keep \"dtype\": \"float32\". Anything else is "
        "refused (exit 2) and nothing is written.");
    parser.add_option("--output", "FILE", "the model spec to write (also -o FILE)");
    parser.add_option("--weights-out", "FILE",
                      "write the archive's weights as a mixlab-weights/1 safetensors file");
    parser.add_short('o', "--output");
    parser.accept_positional("FILE");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::printf("%s", parser.help_text().c_str());
        return 0;
    }
    const std::string keras_path = parser.positional().value_or("");
    if (keras_path.empty())
        throw InputError("name a Keras model: mixlab-cli import FILE -o MODEL.json (FILE: the "
                         "JSON of model.to_json() or a .keras archive's config.json)");
    const std::optional<std::string> output = parser.value("--output");
    if (!output) throw InputError("say where to write the model: -o MODEL.json");
    check_output_path(*output, "-o");
    const std::optional<std::string> weights_out = parser.value("--weights-out");
    if (weights_out) check_output_path(*weights_out, "--weights-out");

    const KerasImport imported = load_keras_model(keras_path);
    // Both files are made before either is written: refused weights leave no spec behind.
    const std::string weights = weights_out ? keras_weights_file(imported) : std::string();
    // Written only whole: a refused model above leaves no file, a failed write no half one.
    write_file_atomically(*output, model_spec_to_json(imported.spec));
    if (weights_out) write_file_atomically(*weights_out, weights);

    const ModelSpec& spec = imported.spec;
    std::printf("wrote %s: %s, %zu layers, from a Keras %d %s model\n", output->c_str(),
                spec.name.empty() ? "(unnamed)" : spec.name.c_str(), spec.layers.size(),
                imported.keras_major, imported.model_class.c_str());
    std::printf("policy: %s (Keras's %s): mixlab-cli train --model %s --policy %s\n",
                std::string(policy_name(imported.policy)).c_str(), imported.keras_policy.c_str(),
                output->c_str(), std::string(policy_name(imported.policy)).c_str());
    if (weights_out)
        std::printf("wrote %s: the Keras model's weights: mixlab-cli train --model %s "
                    "--load-weights %s\n",
                    weights_out->c_str(), output->c_str(), weights_out->c_str());
    else if (!imported.weights_h5.empty())
        std::printf("the archive holds weights: add --weights-out FILE to keep them\n");
    if (!imported.input_shape.empty())
        std::printf("input: %s (Keras's input layer): mixlab-cli summary --model %s --input %s\n",
                    shape_text(imported.input_shape).c_str(), output->c_str(),
                    shape_text(imported.input_shape).c_str());
    return 0;
}

} // namespace mixlab::cli
