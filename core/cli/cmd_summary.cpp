// `mixlab-cli summary`: a model's layers for a given input: output shapes, parameters,
// FLOPs, whether each GEMM fits tensor cores, what the loss absorbs; as a table or JSON.
#include "commands.h"

#include "args.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <optional>
#include <string>

namespace mixlab::cli {
namespace {

// The input used when neither --input nor --dataset says: CIFAR-10's, the seed MLP's.
const Shape k_default_input{{32, 32, 3}};
constexpr int k_default_classes = 10;

Shape parse_input(const std::string& text)
{
    Shape s;
    std::size_t start = 0;
    while (true) {
        const auto x = text.find('x', start);
        const std::string part = text.substr(start, x == std::string::npos ? x : x - start);
        if (part.empty())
            throw InputError("--input expects HxWxC such as 32x32x3, got '" + text + "'");
        s.dims.push_back(int(parse_integer("--input", part, 1, 1 << 16)));
        if (x == std::string::npos) break;
        start = x + 1;
    }
    if (s.dims.size() != 3)
        throw InputError("--input expects three sizes HxWxC such as 32x32x3 or 28x28x1, got '" +
                         text + "'");
    return s;
}

std::string layer_label(const GraphLayer& l)
{
    std::string s(layer_type_name(l.spec.type));
    if (l.spec.type == LayerType::Dense && l.spec.activation != Activation::None)
        ((s += '(') += activation_name(l.spec.activation)) += ')';
    if (l.spec.type == LayerType::Activation)
        ((s += '(') += activation_name(l.spec.activation)) += ')';
    if (l.spec.type == LayerType::Dropout) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "(%g)", double(l.spec.rate));
        s += buf;
    }
    return s;
}

std::string head_text(OutputHead h)
{
    switch (h) {
    case OutputHead::Logits: return "logits, softmax cross-entropy";
    case OutputHead::SoftmaxFolded: return "final softmax folded into the cross-entropy";
    case OutputHead::SigmoidKeras: return "final sigmoid, Keras-style cross-entropy";
    }
    return "unknown";
}

std::string tensor_core_text(const GraphLayer& l)
{
    if (!l.is_gemm) return "-";
    if (l.tensor_core_friendly) return "yes";
    return l.tensor_core_note.empty() ? "no" : "no: " + l.tensor_core_note;
}

void print_table(const Graph& g)
{
    std::printf("model %s, input %s, %d classes\n", g.name.empty() ? "(unnamed)" : g.name.c_str(),
                g.input.to_string().c_str(), g.classes);
    std::printf("%-5s %-26s %-12s %12s %14s  %s\n", "layer", "type", "output", "params",
                "FLOPs/sample", "tensor cores");
    for (const GraphLayer& l : g.layers) {
        std::string type = layer_label(l);
        if (l.spec.force_fp32) type += " fp32";
        std::string tc = tensor_core_text(l);
        if (l.folded_into_loss) tc = (tc == "-" ? "" : tc + "; ") + "folded into the loss";
        std::printf("%-5d %-26s %-12s %12lld %14lld  %s\n", l.index, type.c_str(),
                    l.out.to_string().c_str(), static_cast<long long>(l.params),
                    static_cast<long long>(l.flops), tc.c_str());
    }
    std::printf("total: %lld parameters, %lld forward FLOPs per sample; output: %s\n",
                static_cast<long long>(g.total_params), static_cast<long long>(g.total_flops),
                head_text(g.head).c_str());
    for (const std::string& w : g.warnings) std::printf("warning: %s\n", w.c_str());
}

void print_json(const Graph& g)
{
    nlohmann::ordered_json j;
    j["model"] = g.name;
    j["input"] = g.input.to_string();
    j["classes"] = g.classes;
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const GraphLayer& l : g.layers) {
        nlohmann::ordered_json o;
        o["index"] = l.index;
        o["type"] = std::string(layer_type_name(l.spec.type));
        o["activation"] = std::string(activation_name(l.spec.activation));
        if (l.spec.type == LayerType::Dense) o["units"] = l.spec.units;
        if (l.spec.type == LayerType::Dropout) {
            // Through its shortest decimal, so 0.2f prints 0.2 and not 0.20000000298.
            char buf[32];
            const auto r = std::to_chars(buf, buf + sizeof buf, l.spec.rate);
            o["rate"] = std::stod(std::string(buf, r.ptr));
        }
        o["force_fp32"] = l.spec.force_fp32;
        o["input_shape"] = l.in.to_string();
        o["output_shape"] = l.out.to_string();
        o["params"] = l.params;
        o["flops"] = l.flops;
        o["is_gemm"] = l.is_gemm;
        o["tensor_core_friendly"] = l.tensor_core_friendly;
        o["tensor_core_note"] = l.tensor_core_note;
        o["folded_into_loss"] = l.folded_into_loss;
        layers.push_back(std::move(o));
    }
    j["layers"] = std::move(layers);
    j["total_params"] = g.total_params;
    j["total_flops"] = g.total_flops;
    switch (g.head) {
    case OutputHead::Logits: j["head"] = "logits"; break;
    case OutputHead::SoftmaxFolded: j["head"] = "softmax_folded"; break;
    case OutputHead::SigmoidKeras: j["head"] = "sigmoid_keras"; break;
    }
    j["warnings"] = g.warnings;
    std::printf("%s\n", j.dump(2).c_str());
}

} // namespace

int cmd_summary(int argc, char** argv)
{
    ArgParser parser("mixlab-cli summary --model FILE [--input HxWxC --classes N | --dataset "
                     "NAME|PATH] [--json]",
                     "Per layer: type, output shape, parameters, forward FLOPs per sample, "
                     "whether its GEMM fits\ntensor cores (and why not), and what the loss "
                     "absorbs. The input shape and classes come from\n--input/--classes, else "
                     "from the dataset named, else 32x32x3 and 10 classes.");
    parser.add_option("--model", "FILE", "model spec (mixlab-model/1 JSON); required");
    parser.add_option("--input", "HxWxC", "per-sample input shape, e.g. 32x32x3");
    parser.add_option("--classes", "N", "number of classes");
    parser.add_option("--dataset", "NAME|PATH", "take input shape and classes from this dataset");
    parser.add_flag("--json", "print JSON instead of a table");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::fputs(parser.help_text().c_str(), stdout);
        return 0;
    }

    const auto model = parser.value("--model");
    if (!model) throw InputError("--model FILE is required (a mixlab-model/1 JSON file)");
    const ModelSpec spec = load_model_spec(*model);

    std::optional<Shape> input;
    if (auto v = parser.value("--input")) input = parse_input(*v);
    std::optional<int> classes;
    if (auto v = parser.integer("--classes", 1, 1 << 20)) classes = int(*v);
    if ((!input || !classes) && parser.has("--dataset")) {
        DatasetOptions options;
        options.name = *parser.value("--dataset");
        const Dataset d = load_dataset(options, 42);
        if (!input) input = Shape{{d.height, d.width, d.channels}};
        if (!classes) classes = d.classes;
    }
    if (!input || !classes) {
        std::fprintf(stderr, "summary: %s%s%s (give --input/--classes or --dataset)\n",
                     input ? "" : "input 32x32x3 assumed",
                     !input && !classes ? ", " : "", classes ? "" : "10 classes assumed");
        if (!input) input = k_default_input;
        if (!classes) classes = k_default_classes;
    }

    const Graph graph = build_graph(spec, *input, *classes);
    if (parser.flag("--json"))
        print_json(graph);
    else
        print_table(graph);
    return 0;
}

} // namespace mixlab::cli
