// Keras model JSON into mixlab-model/1: every supported layer in both JSON generations
// (Keras 2's tf.keras form and Keras 3's), the seed model's round trip, Functional graphs
// with residual blocks, dtype policies, and the refusals with the messages a user sees.
// The files under tests/data/keras are written as Keras writes them (make_keras_json.py).
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/keras_import.h"
#include "mixlab/model_spec.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace mixlab;
using nlohmann::json;

namespace {

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string source(const std::string& relative)
{
    return std::string(MIXLAB_SOURCE_DIR) + "/" + relative;
}

// A layer's dtype as each generation writes it: Keras 2 a dtype name for float32 and a
// Policy object otherwise, Keras 3 always a DTypePolicy object.
json policy(int gen, const std::string& name)
{
    if (gen == 2)
        return name == "float32" ? json(name)
                                 : json{{"class_name", "Policy"},
                                        {"config", {{"name", name}}},
                                        {"__passive_serialization__", true}};
    return {{"module", "keras"},
            {"class_name", "DTypePolicy"},
            {"config", {{"name", name}}},
            {"registered_name", nullptr}};
}

// One layer entry of a model's "layers" list.
json layer(int gen, const std::string& cls, const std::string& name, json config,
           const std::string& dtype)
{
    config["name"] = name;
    config["trainable"] = true;
    if (!dtype.empty()) config["dtype"] = policy(gen, dtype);
    if (gen == 2) return {{"class_name", cls}, {"config", config}};
    return {{"module", "keras.layers"},
            {"class_name", cls},
            {"config", config},
            {"registered_name", nullptr},
            {"build_config", {{"input_shape", {nullptr, 8, 8, 4}}}}};
}

json input_layer(int gen, const std::string& name)
{
    if (gen == 2)
        return {{"class_name", "InputLayer"},
                {"config",
                 {{"batch_input_shape", {nullptr, 8, 8, 4}},
                  {"dtype", "float32"},
                  {"sparse", false},
                  {"ragged", false},
                  {"name", name}}}};
    return {{"module", "keras.layers"},
            {"class_name", "InputLayer"},
            {"config",
             {{"batch_shape", {nullptr, 8, 8, 4}},
              {"dtype", "float32"},
              {"sparse", false},
              {"name", name}}},
            {"registered_name", nullptr}};
}

std::string sequential(int gen, std::vector<json> layers)
{
    layers.insert(layers.begin(), input_layer(gen, "input"));
    json config = {{"name", "m"}, {"layers", layers}};
    if (gen == 2)
        return json{{"class_name", "Sequential"},
                    {"config", config},
                    {"keras_version", "2.13.1"},
                    {"backend", "tensorflow"}}
            .dump();
    return json{{"module", "keras"},
                {"class_name", "Sequential"},
                {"config", config},
                {"registered_name", nullptr}}
        .dump();
}

// A Functional model: each node {class, name, inputs, config}; the first is the input.
struct Node {
    std::string cls, name;
    std::vector<std::string> inputs;
    json config = json::object();
    std::string dtype = "float32";
};

json inbound(int gen, const Node& n)
{
    if (n.inputs.empty()) return json::array();
    if (gen == 2) {
        json node = json::array();
        for (const auto& i : n.inputs) node.push_back({i, 0, 0, json::object()});
        return json::array({node});
    }
    json tensors = json::array();
    for (const auto& i : n.inputs)
        tensors.push_back({{"class_name", "__keras_tensor__"},
                           {"config",
                            {{"shape", {nullptr, 8, 8, 4}},
                             {"dtype", "float32"},
                             {"keras_history", {i, 0, 0}}}}});
    const json args = n.cls == "Add" ? json::array({tensors}) : tensors;
    return json::array({{{"args", args}, {"kwargs", json::object()}}});
}

std::string functional(int gen, const std::vector<Node>& nodes, const std::string& output,
                       json inputs = nullptr)
{
    json layers = json::array();
    for (const Node& n : nodes) {
        json l = n.cls == "InputLayer" ? input_layer(gen, n.name)
                                       : layer(gen, n.cls, n.name, n.config, n.dtype);
        l["name"] = n.name;
        l["inbound_nodes"] = inbound(gen, n);
        layers.push_back(l);
    }
    if (inputs.is_null()) inputs = json::array({{nodes.front().name, 0, 0}});
    json config = {{"name", "f"},
                   {"trainable", true},
                   {"layers", layers},
                   {"input_layers", inputs},
                   {"output_layers", json::array({{output, 0, 0}})}};
    json doc = {{"class_name", "Functional"}, {"config", config}};
    if (gen == 2) {
        doc["keras_version"] = "2.13.1";
        doc["backend"] = "tensorflow";
    } else {
        doc["module"] = "keras.src.models.functional";
        doc["registered_name"] = "Functional";
    }
    return doc.dump();
}

// The layers of a spec as mixlab-model/1 writes them, for readable comparisons.
std::string layers_text(const std::vector<LayerSpec>& layers)
{
    ModelSpec s;
    s.layers = layers;
    return model_spec_to_json(s);
}

std::string expected_text(const std::string& layers_json)
{
    return layers_text(
        parse_model_spec(R"({"format": "mixlab-model/1", "layers": [)" + layers_json + "]}")
            .layers);
}

// The message of the SpecError an import throws ("" when it does not).
QString refusal(const std::string& text)
{
    try {
        import_keras_model(text);
    } catch (const SpecError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

const json k_dense10 = {{"units", 10}, {"activation", "linear"}, {"use_bias", true}};

} // namespace

class TestKerasImport : public QObject {
    Q_OBJECT

private slots:
    // THE acceptance case: the first user's Keras MLP under mixed_float16, as Keras 2 and
    // Keras 3 write it, imports to seed-mlp.json byte for byte.
    void seedRoundTrip_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("gen");
        QTest::newRow("keras 2") << "tests/data/keras/seed-mlp.keras2.json" << 2;
        QTest::newRow("keras 3") << "tests/data/keras/seed-mlp.keras3.json" << 3;
    }
    void seedRoundTrip()
    {
        QFETCH(QString, file);
        QFETCH(int, gen);
        const KerasImport k = load_keras_model(source(file.toStdString()));
        const std::string seed = read_file(source("resources/models/seed-mlp.json"));
        QCOMPARE(model_spec_to_json(k.spec), seed);
        QVERIFY(k.spec == parse_model_spec(seed));
        QCOMPARE(k.policy, Policy::MixedFP16);
        QCOMPARE(k.keras_policy, std::string("mixed_float16"));
        QCOMPARE(k.input_shape, (std::vector<int>{32, 32, 3}));
        QCOMPARE(k.keras_major, gen);
        QCOMPARE(k.model_class, std::string("Sequential"));
    }

    // A Functional ResNet under mixed_bfloat16: an identity block (its Add lists the
    // shortcut first in the Keras 3 file), a projection block, every pooling layer.
    void functionalResnet_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("gen");
        QTest::newRow("keras 2") << "tests/data/keras/small-resnet.keras2.json" << 2;
        QTest::newRow("keras 3") << "tests/data/keras/small-resnet.keras3.json" << 3;
    }
    void functionalResnet()
    {
        QFETCH(QString, file);
        QFETCH(int, gen);
        const KerasImport k = load_keras_model(source(file.toStdString()));
        const std::string conv = R"({"type": "conv2d", "filters": 16, "kernel": 3,
                                     "padding": "same", "use_bias": false})";
        const std::string bn = R"({"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001})";
        const std::string relu = R"({"type": "activation", "activation": "relu"})";
        const std::string expected =
            expected_text(conv + "," + bn + "," + relu + "," +
                          R"({"type": "residual", "activation": "relu", "body": [)" + conv + "," +
                          bn + "," + relu + "," + conv + "," + bn + "]}," +
                          R"({"type": "residual", "activation": "relu", "body": [
                {"type": "conv2d", "filters": 32, "kernel": 3, "stride": 2, "padding": "same",
                 "use_bias": false}, )" +
                          bn + "," + relu + "," +
                          R"({"type": "conv2d", "filters": 32, "kernel": 3, "padding": "same",
                "use_bias": false}, )" +
                          bn + R"(], "shortcut": [
                {"type": "conv2d", "filters": 32, "kernel": 1, "stride": 2, "use_bias": false},
                )" + bn + R"(]},
            {"type": "maxpool2d", "pool_size": 2},
            {"type": "avgpool2d", "pool_size": 2, "stride": 1},
            {"type": "global_avgpool"},
            {"type": "dropout", "rate": 0.2},
            {"type": "dense", "units": 10},
            {"type": "activation", "activation": "softmax", "dtype": "float32"})");
        QCOMPARE(layers_text(k.spec.layers), expected);
        QCOMPARE(k.spec.name, std::string("small-resnet"));
        QCOMPARE(k.policy, Policy::MixedBF16);
        QCOMPARE(k.model_class, std::string("Functional"));
        QCOMPARE(k.keras_major, gen);
        QCOMPARE(k.input_shape, (std::vector<int>{32, 32, 3}));
        // The shapes Keras gave every layer hold in MixLab's graph too: 16x16x32 after
        // the strided block, 7x7x32 after the pooling.
        const Graph g = build_graph(k.spec, Shape{{32, 32, 3}}, 10);
        QCOMPARE(g.layers[4].out.to_string(), std::string("16x16x32"));
        QCOMPARE(g.layers[6].out.to_string(), std::string("7x7x32"));
    }

    // Each supported layer alone after an InputLayer, with its options, in both
    // generations' forms, under float32 (no dtype written back).
    void layers_data()
    {
        QTest::addColumn<QString>("cls");
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("expected"); // the MixLab layers, "" for none
        auto row = [](const char* tag, const char* cls, const char* config, const char* expected) {
            QTest::newRow(tag) << cls << config << expected;
        };
        row("Flatten", "Flatten", R"({"data_format": "channels_last"})", R"({"type": "flatten"})");
        row("Dense", "Dense", R"({"units": 3000, "activation": "relu", "use_bias": true,
             "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.01}}})",
            R"({"type": "dense", "units": 3000, "activation": "relu"})");
        row("Dense no bias, linear", "Dense",
            R"({"units": 7, "activation": "linear", "use_bias": false})",
            R"({"type": "dense", "units": 7, "use_bias": false})");
        row("Dense softmax", "Dense", R"({"units": 10, "activation": "softmax"})",
            R"({"type": "dense", "units": 10, "activation": "softmax"})");
        row("Activation tanh", "Activation", R"({"activation": "tanh"})",
            R"({"type": "activation", "activation": "tanh"})");
        row("Activation gelu", "Activation", R"({"activation": "gelu"})",
            R"({"type": "activation", "activation": "gelu"})");
        row("Activation linear (the identity)", "Activation", R"({"activation": "linear"})", "");
        row("ReLU", "ReLU", R"({"max_value": null, "negative_slope": 0.0, "threshold": 0.0})",
            R"({"type": "activation", "activation": "relu"})");
        row("Softmax", "Softmax", R"({"axis": -1})",
            R"({"type": "activation", "activation": "softmax"})");
        row("Dropout", "Dropout", R"({"rate": 0.5, "noise_shape": null, "seed": null})",
            R"({"type": "dropout", "rate": 0.5})");
        row("Conv2D", "Conv2D", R"({"filters": 8, "kernel_size": [3, 3], "strides": [1, 1],
             "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1],
             "groups": 1, "activation": "relu", "use_bias": true})",
            R"({"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same",
                "activation": "relu"})");
        row("Conv2D strided, non-square", "Conv2D", R"({"filters": 4, "kernel_size": [3, 5],
             "strides": [2, 1], "padding": "valid", "use_bias": false})",
            R"({"type": "conv2d", "filters": 4, "kernel": [3, 5], "stride": [2, 1],
                "use_bias": false})");
        row("Conv2D softmax (split)", "Conv2D",
            R"({"filters": 4, "kernel_size": [1, 1], "activation": "softmax"})",
            R"({"type": "conv2d", "filters": 4, "kernel": 1},
               {"type": "activation", "activation": "softmax"})");
        row("BatchNormalization", "BatchNormalization",
            R"({"axis": -1, "momentum": 0.9, "epsilon": 1e-05, "center": true, "scale": true})",
            R"({"type": "batchnorm", "momentum": 0.1})");
        row("BatchNormalization defaults", "BatchNormalization", R"({"axis": [3]})",
            R"({"type": "batchnorm", "momentum": 0.01, "epsilon": 0.001})");
        row("MaxPooling2D", "MaxPooling2D",
            R"({"pool_size": [2, 2], "padding": "valid", "strides": [2, 2]})",
            R"({"type": "maxpool2d", "pool_size": 2})");
        row("MaxPooling2D 3/2 same", "MaxPooling2D",
            R"({"pool_size": [3, 3], "padding": "same", "strides": [2, 2]})",
            R"({"type": "maxpool2d", "pool_size": 3, "stride": 2, "padding": "same"})");
        row("AveragePooling2D", "AveragePooling2D",
            R"({"pool_size": [2, 2], "padding": "valid", "strides": null})",
            R"({"type": "avgpool2d", "pool_size": 2})");
        row("GlobalAveragePooling2D", "GlobalAveragePooling2D",
            R"({"data_format": "channels_last", "keepdims": false})",
            R"({"type": "global_avgpool"})");
    }
    void layers()
    {
        QFETCH(QString, cls);
        QFETCH(QString, config);
        QFETCH(QString, expected);
        for (int gen : {2, 3}) {
            const std::string text = sequential(
                gen,
                {layer(gen, cls.toStdString(), "x", json::parse(config.toStdString()), "float32"),
                 layer(gen, "Dense", "out", k_dense10, "float32")});
            const KerasImport k = import_keras_model(text);
            const std::string want =
                expected_text((expected.isEmpty() ? std::string() : expected.toStdString() + ",") +
                              R"({"type": "dense", "units": 10})");
            QCOMPARE(layers_text(k.spec.layers), want);
            QCOMPARE(k.keras_major, gen);
            QCOMPARE(k.policy, Policy::FP32);
            QCOMPARE(k.input_shape, (std::vector<int>{8, 8, 4}));
        }
    }

    // The model-wide policy and per-layer float32 overrides, in both forms.
    void dtypePolicies_data()
    {
        QTest::addColumn<QString>("hidden");   // the Dense and Dropout layers' policy
        QTest::addColumn<QString>("last");     // the final Activation's
        QTest::addColumn<int>("policy");       // Policy, or -1: refused
        QTest::addColumn<QString>("expected"); // layers, or the message's fragment
        const char* fp32_model =
            R"({"type": "dense", "units": 10}, {"type": "dropout", "rate": 0.5},
                                    {"type": "activation", "activation": "softmax"})";
        QTest::newRow("float32") << "float32"
                                 << "float32" << int(Policy::FP32) << fp32_model;
        QTest::newRow("mixed_float16, float32 softmax")
            << "mixed_float16"
            << "float32" << int(Policy::MixedFP16)
            << R"({"type": "dense", "units": 10}, {"type": "dropout", "rate": 0.5},
                  {"type": "activation", "activation": "softmax", "dtype": "float32"})";
        QTest::newRow("mixed_bfloat16, float32 softmax")
            << "mixed_bfloat16"
            << "float32" << int(Policy::MixedBF16)
            << R"({"type": "dense", "units": 10}, {"type": "dropout", "rate": 0.5},
                  {"type": "activation", "activation": "softmax", "dtype": "float32"})";
        QTest::newRow("mixed_float16 throughout")
            << "mixed_float16"
            << "mixed_float16" << int(Policy::MixedFP16) << fp32_model;
        QTest::newRow("two mixed policies")
            << "mixed_float16"
            << "mixed_bfloat16" << -1 << "MixLab runs a model under one policy";
        QTest::newRow("float16") << "float16"
                                 << "float32" << -1 << "dtype policy \"float16\"";
        QTest::newRow("quantized policy")
            << "int8_from_mixed_bfloat16"
            << "float32" << -1 << "float32, mixed_float16 and mixed_bfloat16";
    }
    void dtypePolicies()
    {
        QFETCH(QString, hidden);
        QFETCH(QString, last);
        QFETCH(int, policy);
        QFETCH(QString, expected);
        for (int gen : {2, 3}) {
            const std::string text = sequential(
                gen,
                {layer(gen, "Dense", "d", k_dense10, hidden.toStdString()),
                 layer(gen, "Dropout", "drop", {{"rate", 0.5}}, hidden.toStdString()),
                 layer(gen, "Activation", "act", {{"activation", "softmax"}}, last.toStdString())});
            if (policy < 0) {
                const QString message = refusal(text);
                QVERIFY2(message.contains(expected), qPrintable(message));
                QVERIFY2(message.startsWith("layer \""), qPrintable(message));
                continue;
            }
            const KerasImport k = import_keras_model(text);
            QCOMPARE(int(k.policy), policy);
            QCOMPARE(layers_text(k.spec.layers), expected_text(expected.toStdString()));
        }
    }

    // Keras 3.0-3.3 wrote a layer's policy as its name; a model whose layers say nothing
    // follows the model's own policy (Keras 3 records it).
    void dtypeForms()
    {
        json doc = json::parse(read_file(source("tests/data/keras/seed-mlp.keras3.json")));
        for (json& l : doc["config"]["layers"])
            if (l["config"].contains("dtype") && l["class_name"] != "InputLayer")
                l["config"]["dtype"] = l["config"]["dtype"]["config"]["name"];
        const KerasImport named = import_keras_model(doc.dump());
        QCOMPARE(model_spec_to_json(named.spec),
                 read_file(source("resources/models/seed-mlp.json")));
        for (json& l : doc["config"]["layers"]) l["config"].erase("dtype");
        const KerasImport model_wide = import_keras_model(doc.dump());
        QCOMPARE(model_wide.policy, Policy::MixedFP16);
        QVERIFY(!model_wide.spec.layers.back().force_fp32);
    }

    // A Functional chain reads as the same Sequential would.
    void functionalChain()
    {
        for (int gen : {2, 3}) {
            const std::string text = functional(
                gen,
                {{"InputLayer", "in", {}},
                 {"Flatten", "flat", {"in"}, json::object(), "mixed_float16"},
                 {"Dense",
                  "hidden",
                  {"flat"},
                  {{"units", 32}, {"activation", "relu"}},
                  "mixed_float16"},
                 {"Dropout", "drop", {"hidden"}, {{"rate", 0.25}}, "mixed_float16"},
                 {"Dense", "logits", {"drop"}, k_dense10, "mixed_float16"},
                 {"Activation", "probs", {"logits"}, {{"activation", "sigmoid"}}, "float32"}},
                "probs");
            const KerasImport k = import_keras_model(text);
            QCOMPARE(layers_text(k.spec.layers), expected_text(R"({"type": "flatten"},
                                      {"type": "dense", "units": 32, "activation": "relu"},
                                      {"type": "dropout", "rate": 0.25}, {"type": "dense", "units": 10},
                                      {"type": "activation", "activation": "sigmoid", "dtype": "float32"})"));
            QCOMPARE(k.policy, Policy::MixedFP16);
            QCOMPARE(k.model_class, std::string("Functional"));
        }
    }

    // Residual blocks nested in a body (the inner one's relu a ReLU layer, folded into the
    // block as an Activation would be), an Add followed by something other than relu (kept
    // as a layer), and an Add straight after the input (the identity shortcut of the input
    // itself).
    void functionalResidualShapes()
    {
        const json conv = {{"filters", 4}, {"kernel_size", {3, 3}}, {"padding", "same"}};
        for (int gen : {2, 3}) {
            const std::string text =
                functional(gen,
                           {{"InputLayer", "in", {}},
                            {"Conv2D", "outer_a", {"in"}, conv},
                            {"Conv2D", "inner", {"outer_a"}, conv},
                            {"Add", "inner_add", {"inner", "outer_a"}},
                            {"ReLU", "inner_relu", {"inner_add"}},
                            {"Add", "outer_add", {"in", "inner_relu"}},
                            {"Activation", "tanh", {"outer_add"}, {{"activation", "tanh"}}},
                            {"Flatten", "flat", {"tanh"}},
                            {"Dense", "out", {"flat"}, k_dense10}},
                           "out");
            const KerasImport k = import_keras_model(text);
            const std::string c =
                R"({"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same"})";
            QCOMPARE(layers_text(k.spec.layers),
                     expected_text(R"({"type": "residual", "body": [)" + c +
                                   R"(, {"type": "residual", "activation": "relu", "body": [)" + c +
                                   R"(]}]}, {"type": "activation", "activation": "tanh"},
                                   {"type": "flatten"}, {"type": "dense", "units": 10})"));
        }
    }

    // What MixLab cannot hold is refused by the layer's name and class, saying what MixLab
    // supports.
    void refusals_data()
    {
        QTest::addColumn<QString>("cls");
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("fragment");
        auto row = [](const char* tag, const char* cls, const char* config, const char* fragment) {
            QTest::newRow(tag) << cls << config << fragment;
        };
        row("unknown class", "GRU", R"({"units": 8})",
            "layer \"x\" (GRU): MixLab has no equivalent of this layer; it imports InputLayer, "
            "Flatten, Dense");
        row("Conv2D dilation", "Conv2D",
            R"({"filters": 4, "kernel_size": [3, 3], "dilation_rate": [2, 2]})",
            "layer \"x\" (Conv2D): \"dilation_rate\" [2,2] is not supported: MixLab's conv2d is "
            "not dilated");
        row("Conv2D channels_first", "Conv2D",
            R"({"filters": 4, "kernel_size": [3, 3], "data_format": "channels_first"})",
            "layer \"x\" (Conv2D): \"data_format\": \"channels_first\" is not supported: MixLab's "
            "images are channels_last");
        row("Flatten channels_first", "Flatten", R"({"data_format": "channels_first"})",
            "(Flatten): \"data_format\": \"channels_first\"");
        row("Conv2D same, even kernel", "Conv2D",
            R"({"filters": 4, "kernel_size": [2, 2], "padding": "same"})",
            "(Conv2D): \"padding\": \"same\" with an even \"kernel_size\"");
        row("Conv2D groups", "Conv2D", R"({"filters": 4, "kernel_size": [3, 3], "groups": 2})",
            "(Conv2D): \"groups\" 2 is not supported");
        row("Conv2D causal padding", "Conv2D",
            R"({"filters": 4, "kernel_size": [3, 3], "padding": "causal"})",
            "MixLab supports valid and same");
        row("Conv2D stride 100", "Conv2D",
            R"({"filters": 4, "kernel_size": [3, 3], "strides": [100, 100]})",
            "\"strides\" must be an integer from 1 to 64, got 100");
        row("Dense elu", "Dense", R"({"units": 4, "activation": "elu"})",
            "layer \"x\" (Dense): activation \"elu\" has no MixLab equivalent; MixLab supports "
            "linear, relu");
        row("ReLU6", "ReLU", R"({"max_value": 6.0})",
            "layer \"x\" (ReLU): \"max_value\" 6.0 is not supported");
        row("Softmax over axis 1", "Softmax", R"({"axis": 1})",
            "(Softmax): \"axis\" 1 is not supported");
        row("Dense no units", "Dense", R"({"activation": "relu"})", "(Dense): has no \"units\"");
        row("Dense units 0", "Dense", R"({"units": 0})", "\"units\" must be an integer from 1");
        row("Dense custom activation", "Dense",
            R"({"units": 4, "activation": {"class_name": "MyAct", "config": {}}})",
            "is not a built-in activation");
        row("Dropout rate 1", "Dropout", R"({"rate": 1.0})", "(Dropout): \"rate\" must be");
        row("Dropout noise_shape", "Dropout", R"({"rate": 0.5, "noise_shape": [null, 1, 1, 4]})",
            "\"noise_shape\" is not supported");
        row("BatchNormalization axis 1", "BatchNormalization", R"({"axis": 1})",
            "(BatchNormalization): \"axis\" 1 is not supported");
        row("BatchNormalization scale off", "BatchNormalization", R"({"scale": false})",
            "\"scale\": false are not supported");
        row("GlobalAveragePooling2D keepdims", "GlobalAveragePooling2D", R"({"keepdims": true})",
            "\"keepdims\": true is not supported");
        row("MaxPooling2D same, even window", "MaxPooling2D",
            R"({"pool_size": [2, 2], "padding": "same"})", "(MaxPooling2D): \"padding\": \"same\"");
        row("Add in a Sequential model", "Add", "{}", "(Add): adds several tensors");
        row("InputLayer in the middle", "InputLayer", "{}",
            "(InputLayer): an InputLayer can only start");
        row("not an object dtype", "Dense", R"({"units": 4, "dtype": 5})",
            "\"dtype\" must be a dtype name or a dtype policy");
        row("ZeroPadding2D before a Dense", "ZeroPadding2D", R"({"padding": [[1, 1], [1, 1]]})",
            "layer \"x\" (ZeroPadding2D): is followed by layer \"out\" (Dense); MixLab folds");
        row("ZeroPadding2D uneven", "ZeroPadding2D", R"({"padding": [[0, 1], [0, 1]]})",
            "(ZeroPadding2D): \"padding\" [[0,1],[0,1]] pads one side more than the other");
        row("LSTM last output only", "LSTM", R"({"units": 8})",
            "layer \"x\" (LSTM): \"return_sequences\": false is not supported");
        row("LSTM backwards", "LSTM",
            R"({"units": 8, "return_sequences": true, "go_backwards": true})",
            "(LSTM): \"go_backwards\": true is not supported");
        row("LSTM stateful", "LSTM", R"({"units": 8, "return_sequences": true, "stateful": true})",
            "(LSTM): \"stateful\": true is not supported");
        row("LSTM relu", "LSTM", R"({"units": 8, "return_sequences": true, "activation": "relu"})",
            "(LSTM): \"activation\" \"relu\" is not supported: MixLab's lstm runs tanh");
        row("LSTM hard_sigmoid gates", "LSTM",
            R"({"units": 8, "return_sequences": true, "recurrent_activation": "hard_sigmoid"})",
            "(LSTM): \"recurrent_activation\" \"hard_sigmoid\" is not supported");
        row("LSTM recurrent dropout", "LSTM",
            R"({"units": 8, "return_sequences": true, "recurrent_dropout": 0.1})",
            "(LSTM): \"recurrent_dropout\" 0.1 is not supported");
        row("Embedding mask_zero", "Embedding",
            R"({"input_dim": 100, "output_dim": 8, "mask_zero": true})",
            "(Embedding): \"mask_zero\": true is not supported");
    }

    // ZeroPadding2D folded into the Conv2D after it, and into a MaxPooling2D after a relu
    // (ResNet-50's stem: conv, batch norm, relu, pad 1, max pool 3/2), in both generations
    // and both model classes; refused before an average pooling or a max pooling of values
    // that may be negative.
    void zeroPadding()
    {
        for (int gen : {2, 3}) {
            const KerasImport seq = import_keras_model(sequential(
                gen, {layer(gen, "ZeroPadding2D", "pad", {{"padding", {{1, 1}, {2, 2}}}}, ""),
                      layer(gen, "Conv2D", "conv",
                            {{"filters", 4}, {"kernel_size", {3, 3}}, {"padding", "valid"}}, ""),
                      layer(gen, "Flatten", "flat", json::object(), ""),
                      layer(gen, "Dense", "out", k_dense10, "")}));
            QCOMPARE(layers_text(seq.spec.layers),
                     expected_text(R"({"type": "conv2d", "filters": 4, "kernel": 3,
                                       "padding": [1, 2]}, {"type": "flatten"},
                                      {"type": "dense", "units": 10})"));
            const auto stem = [&](const char* act, const char* pool) {
                return functional(
                    gen,
                    {{"InputLayer", "in", {}},
                     {"Conv2D",
                      "conv1",
                      {"in"},
                      {{"filters", 8}, {"kernel_size", {3, 3}}, {"padding", "same"}}},
                     {"BatchNormalization", "bn1", {"conv1"}},
                     {"Activation", "act1", {"bn1"}, {{"activation", act}}},
                     {"ZeroPadding2D", "pool1_pad", {"act1"}, {{"padding", {{1, 1}, {1, 1}}}}},
                     {pool, "pool1", {"pool1_pad"}, {{"pool_size", {3, 3}}, {"strides", {2, 2}}}},
                     {"GlobalAveragePooling2D", "gap", {"pool1"}},
                     {"Dense", "out", {"gap"}, k_dense10}},
                    "out");
            };
            const KerasImport fn = import_keras_model(stem("relu", "MaxPooling2D"));
            QCOMPARE(layers_text(fn.spec.layers),
                     expected_text(R"({"type": "conv2d", "filters": 8, "kernel": 3,
                                       "padding": "same"}, {"type": "batchnorm", "momentum": 0.01,
                                       "epsilon": 0.001}, {"type": "activation", "activation": "relu"},
                                      {"type": "maxpool2d", "pool_size": 3, "stride": 2,
                                       "padding": 1}, {"type": "global_avgpool"},
                                      {"type": "dense", "units": 10})"));
            QVERIFY2(refusal(stem("relu", "AveragePooling2D"))
                         .contains("layer \"pool1_pad\" (ZeroPadding2D): is followed by layer "
                                   "\"pool1\" (AveragePooling2D)"),
                     qPrintable(refusal(stem("relu", "AveragePooling2D"))));
            QVERIFY(
                refusal(stem("tanh", "MaxPooling2D")).contains("whose input comes from a relu"));
        }
    }

    // Embedding and LSTM: consecutive LSTMs of the same units, a Dropout of one rate
    // between them, are one lstm of several layers; other units stay apart. The Keras
    // layers each MixLab layer came from are its origins, an lstm's in stacking order.
    void sequenceLayers()
    {
        const json lstm32 = {{"units", 32},
                             {"return_sequences", true},
                             {"activation", "tanh"},
                             {"recurrent_activation", "sigmoid"},
                             {"unroll", false}};
        for (int gen : {2, 3}) {
            json lstm16 = lstm32;
            lstm16["units"] = 16;
            const KerasImport k = import_keras_model(sequential(
                gen, {layer(gen, "Embedding", "emb", {{"input_dim", 100}, {"output_dim", 24}}, ""),
                      layer(gen, "LSTM", "l1", lstm32, ""),
                      layer(gen, "Dropout", "d1", {{"rate", 0.2}}, ""),
                      layer(gen, "LSTM", "l2", lstm32, ""),
                      layer(gen, "Dropout", "d2", {{"rate", 0.2}}, ""),
                      layer(gen, "LSTM", "l3", lstm32, ""),
                      layer(gen, "Dropout", "d3", {{"rate", 0.5}}, ""),
                      layer(gen, "LSTM", "l4", lstm16, ""),
                      layer(gen, "Dense", "out", {{"units", 100}}, "")}));
            QCOMPARE(layers_text(k.spec.layers),
                     expected_text(R"({"type": "embedding", "vocab": 100, "dim": 24},
                                      {"type": "lstm", "hidden": 32, "layers": 3, "dropout": 0.2},
                                      {"type": "dropout", "rate": 0.5},
                                      {"type": "lstm", "hidden": 16},
                                      {"type": "dense", "units": 100})"));
            QCOMPARE(k.origins.size(), std::size_t(5));
            QCOMPARE(k.origins[1].keras_layers, (std::vector<std::string>{"l1", "l2", "l3"}));
            QCOMPARE(k.origins[3].keras_layers, (std::vector<std::string>{"l4"}));
            QCOMPARE(k.origins[2].keras_layers, (std::vector<std::string>{"d3"}));
            // Keras's model.weights.h5 names them by class and position, not by name.
            QCOMPARE(k.origins[1].h5_groups,
                     (std::vector<std::string>{"layers/lstm", "layers/lstm_1", "layers/lstm_2"}));
            QCOMPARE(k.origins[2].h5_groups, (std::vector<std::string>{"layers/dropout_2"}));
            QCOMPARE(k.origins[4].h5_groups, (std::vector<std::string>{"layers/dense"}));
        }
    }

    // Models used as layers (a Functional backbone, a Sequential block) are flattened into
    // the model using them: their layers in their place, named by their path, their
    // variables' groups under the nested model's own. Keras 2 numbers the call of a nested
    // Functional model 1 (after its own built-in call), Keras 3 0 in a layer's inputs.
    void nestedModelsFlatten()
    {
        const json conv = {
            {"filters", 4}, {"kernel_size", {3, 3}}, {"padding", "same"}, {"activation", "relu"}};
        for (int gen : {2, 3}) {
            const std::string backbone = functional(gen,
                                                    {{"InputLayer", "bin", {}},
                                                     {"Conv2D", "conv", {"bin"}, conv},
                                                     {"Flatten", "flat", {"conv"}}},
                                                    "flat");
            const std::string block = sequential(
                gen,
                {layer(gen, "Dense", "hidden", {{"units", 32}, {"activation", "relu"}}, "float32"),
                 layer(gen, "Dropout", "drop", {{"rate", 0.25}}, "float32")});
            json doc = json::parse(functional(gen,
                                              {{"InputLayer", "in", {}},
                                               {"Dense", "backbone", {"in"}},
                                               {"Dense", "block", {"backbone"}},
                                               {"Dense", "logits", {"block"}, k_dense10}},
                                              "logits"));
            const auto nest = [&](std::size_t at, const std::string& model) {
                const json m = json::parse(model);
                json& entry = doc["config"]["layers"][at];
                entry["class_name"] = m["class_name"];
                entry["config"] = m["config"];
                entry["config"]["name"] = entry["name"];
            };
            nest(1, backbone);
            nest(2, block);
            if (gen == 2) doc["config"]["layers"][2]["inbound_nodes"][0][0][1] = 1;
            const KerasImport k = import_keras_model(doc.dump());
            QCOMPARE(layers_text(k.spec.layers), expected_text(R"(
                {"type": "conv2d", "filters": 4, "kernel": 3, "padding": "same", "activation": "relu"},
                {"type": "flatten"}, {"type": "dense", "units": 32, "activation": "relu"},
                {"type": "dropout", "rate": 0.25}, {"type": "dense", "units": 10})"));
            QCOMPARE(k.input_shape, (std::vector<int>{8, 8, 4}));
            QCOMPARE(k.origins.size(), std::size_t(5));
            QCOMPARE(k.origins[0].keras_layers, (std::vector<std::string>{"backbone/conv"}));
            QCOMPARE(k.origins[0].h5_groups,
                     (std::vector<std::string>{"layers/functional/layers/conv2d"}));
            QCOMPARE(k.origins[2].keras_layers, (std::vector<std::string>{"block/hidden"}));
            QCOMPARE(k.origins[2].h5_groups,
                     (std::vector<std::string>{"layers/sequential/layers/dense"}));
            QCOMPARE(k.origins[4].keras_layers, (std::vector<std::string>{"logits"}));
            // The outer Dense is the model's first: the nested ones count in their own lists.
            QCOMPARE(k.origins[4].h5_groups, (std::vector<std::string>{"layers/dense"}));

            // A nested model's refusal names the layer by its path.
            json bad = doc;
            bad["config"]["layers"][2]["config"]["layers"][2]["config"]["rate"] = 2;
            QVERIFY2(refusal(bad.dump()).contains("layer \"block/drop\" (Dropout)"),
                     qPrintable(refusal(bad.dump())));
        }
        // A Sequential model whose input is its first layer's, a nested model's.
        json outer = json::parse(sequential(3, {layer(3, "Dense", "d", k_dense10, "")}));
        json& list = outer["config"]["layers"];
        list[0] = json::parse(sequential(3, {layer(3, "Flatten", "f", json::object(), "")}));
        list[0]["config"]["name"] = "stem";
        const KerasImport k = import_keras_model(outer.dump());
        QCOMPARE(k.input_shape, (std::vector<int>{8, 8, 4}));
        QCOMPARE(layers_text(k.spec.layers),
                 expected_text(R"({"type": "flatten"}, {"type": "dense", "units": 10})"));
        QCOMPARE(k.origins[0].keras_layers, (std::vector<std::string>{"stem/f"}));
    }
    void refusals()
    {
        QFETCH(QString, cls);
        QFETCH(QString, config);
        QFETCH(QString, fragment);
        for (int gen : {2, 3}) {
            json c = json::parse(config.toStdString());
            const std::string text = sequential(
                gen, {layer(gen, cls.toStdString(), "x", c, c.contains("dtype") ? "" : "float32"),
                      layer(gen, "Dense", "out", k_dense10, "float32")});
            const QString message = refusal(text);
            QVERIFY2(message.contains(fragment), qPrintable(message));
            QVERIFY2(!message.contains('\n'), qPrintable(message));
        }
    }

    // Graphs that are not a chain of layers and residual blocks.
    void graphRefusals_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("two inputs") << 0 << "2 inputs and 1 outputs";
        QTest::newRow("Add of three") << 1 << "layer \"sum\" (Add): adds 3 tensors";
        QTest::newRow("Add of two inputs") << 2 << "share no input";
        QTest::newRow("shared layer") << 3 << "layer \"d\" (Dense): is called 2 times";
        QTest::newRow("dead branch") << 4 << "layer \"side\" (Dense): is not on the path";
        QTest::newRow("Add of a tensor to itself") << 5 << "(Add): adds a tensor to itself";
        QTest::newRow("unknown inbound layer") << 6 << "reads from \"ghost\"";
        QTest::newRow("cycle") << 7 << "reached twice";
        QTest::newRow("second output of a layer") << 8 << "a second output";
        QTest::newRow("second call of a layer") << 9 << "a shared layer's second call";
    }
    void graphRefusals()
    {
        QFETCH(int, which);
        QFETCH(QString, fragment);
        const json conv = {{"filters", 4}, {"kernel_size", {3, 3}}, {"padding", "same"}};
        for (int gen : {2, 3}) {
            std::string text;
            switch (which) {
            case 0:
                text = functional(gen,
                                  {{"InputLayer", "a", {}},
                                   {"InputLayer", "b", {}},
                                   {"Add", "sum", {"a", "b"}},
                                   {"Flatten", "flat", {"sum"}}},
                                  "flat", json::array({{"a", 0, 0}, {"b", 0, 0}}));
                break;
            case 1:
                text = functional(gen,
                                  {{"InputLayer", "in", {}},
                                   {"Conv2D", "c1", {"in"}, conv},
                                   {"Conv2D", "c2", {"in"}, conv},
                                   {"Add", "sum", {"c1", "c2", "in"}},
                                   {"Flatten", "flat", {"sum"}}},
                                  "flat");
                break;
            case 2:
                text = functional(gen,
                                  {{"InputLayer", "a", {}},
                                   {"InputLayer", "b", {}},
                                   {"Add", "sum", {"a", "b"}},
                                   {"Flatten", "flat", {"sum"}}},
                                  "flat");
                break;
            case 3: {
                json doc = json::parse(functional(gen,
                                                  {{"InputLayer", "in", {}},
                                                   {"Flatten", "f", {"in"}},
                                                   {"Dense", "d", {"f"}, k_dense10}},
                                                  "d"));
                json& nodes = doc["config"]["layers"][2]["inbound_nodes"];
                nodes.push_back(nodes[0]);
                text = doc.dump();
                break;
            }
            case 4:
                text = functional(gen,
                                  {{"InputLayer", "in", {}},
                                   {"Flatten", "f", {"in"}},
                                   {"Dense", "side", {"f"}, k_dense10},
                                   {"Dense", "d", {"f"}, k_dense10}},
                                  "d");
                break;
            case 5:
                text = functional(gen,
                                  {{"InputLayer", "in", {}},
                                   {"Conv2D", "c", {"in"}, conv},
                                   {"Add", "sum", {"c", "c"}},
                                   {"Flatten", "flat", {"sum"}}},
                                  "flat");
                break;
            case 6:
                text = functional(gen, {{"InputLayer", "in", {}}, {"Flatten", "flat", {"ghost"}}},
                                  "flat");
                break;
            case 7:
                text = functional(gen,
                                  {{"InputLayer", "in", {}},
                                   {"Dense", "a", {"b"}, k_dense10},
                                   {"Dense", "b", {"a"}, k_dense10}},
                                  "b");
                break;
            case 8: {
                json doc = json::parse(
                    functional(gen, {{"InputLayer", "in", {}}, {"Flatten", "f", {"in"}}}, "f"));
                json& node = doc["config"]["layers"][1]["inbound_nodes"][0];
                if (gen == 2)
                    node[0][2] = 1;
                else
                    node["args"][0]["config"]["keras_history"][2] = 1;
                text = doc.dump();
                break;
            }
            case 9: { // call 1 of a layer that is not a nested model
                json doc = json::parse(
                    functional(gen, {{"InputLayer", "in", {}}, {"Flatten", "f", {"in"}}}, "f"));
                json& node = doc["config"]["layers"][1]["inbound_nodes"][0];
                if (gen == 2)
                    node[0][1] = 1;
                else
                    node["args"][0]["config"]["keras_history"][1] = 1;
                text = doc.dump();
                break;
            }
            }
            const QString message = refusal(text);
            QVERIFY2(message.contains(fragment),
                     qPrintable(QString("gen %1: %2").arg(gen).arg(message)));
        }
    }

    // Documents that are not Keras models at all.
    void notKeras_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("malformed JSON") << R"({"class_name": "Sequential", "config": )"
                                        << "the Keras model is not valid JSON";
        QTest::newRow("an array") << "[1, 2]"
                                  << "not a Keras model";
        QTest::newRow("no class_name") << R"({"config": {"layers": []}})"
                                       << "not a Keras model";
        QTest::newRow("layers not a list")
            << R"({"class_name": "Sequential", "config": {"layers": 3}})"
            << "not a Keras model";
        QTest::newRow("a layer, not a model")
            << R"({"class_name": "Dense", "config": {"layers": []}})"
            << "MixLab imports Sequential and Functional models";
        QTest::newRow("a MixLab spec") << R"({"format": "mixlab-model/1", "layers": []})"
                                       << "this is a MixLab document";
        QTest::newRow("no layers") << R"({"class_name": "Sequential", "config": {"layers": []}})"
                                   << "has no layers";
        QTest::newRow("layer without config")
            << R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense"}]}})"
            << "layer 0 of the Keras model (Dense) has no \"config\"";
        QTest::newRow("functional without outputs")
            << R"({"class_name": "Functional", "config": {"layers": [], "input_layers": []}})"
            << "has no layers";
    }
    void notKeras()
    {
        QFETCH(QString, text);
        QFETCH(QString, fragment);
        const QString message = refusal(text.toStdString());
        QVERIFY2(message.contains(fragment), qPrintable(message));
        QVERIFY2(!message.contains("exception"), qPrintable(message));
    }

    void missingFile()
    {
        try {
            load_keras_model("/nonexistent/model.json");
            QFAIL("no error");
        } catch (const InputError& e) {
            QVERIFY2(QString(e.what()).contains("/nonexistent/model.json"), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestKerasImport)
#include "tst_keras_import.moc"
