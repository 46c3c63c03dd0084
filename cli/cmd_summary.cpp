// `mixlab-cli summary`: a model's layers (residual blocks' layers indented under them) for a
// given input: output shapes, parameters, FLOPs, whether each GEMM or convolution fits
// tensor cores, what the loss absorbs; as a table or JSON.
#include "commands.h"

#include "args.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/text_corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mixlab::cli {
namespace {

// The input used when neither --input nor --dataset says: CIFAR-10's, the seed MLP's.
const Shape k_default_input{{32, 32, 3}};
constexpr int k_default_classes = 10;
// A language model's vocabulary when no corpus says: synthetic-text's default.
const int k_default_vocab = SyntheticTextOptions{}.vocab;

// The vocabulary of --dataset for a language model: synthetic-text's (without generating
// it) or a corpus folder's.
int corpus_vocab(const std::string& name)
{
    if (name == "synthetic-text") return k_default_vocab;
    if (is_text_corpus_folder(name)) return load_text_corpus_folder(name).vocab_size();
    throw InputError("--dataset " + name +
                     " is not a text corpus, and this model is a language model (it starts with "
                     "an embedding): give synthetic-text or a folder of train.txt, valid.txt and "
                     "test.txt");
}

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

// "3x3", or "3" when both sides match, for kernels, strides and padding.
std::string size_text(int h, int w)
{
    return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w);
}

std::string rate_text(float rate)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(rate));
    return buf;
}

std::string layer_label(const GraphLayer& l)
{
    const LayerSpec& s = l.spec;
    std::string t(layer_type_name(s.type));
    std::string args;
    auto add = [&args](const std::string& a) {
        if (!args.empty()) args += ", ";
        args += a;
    };
    auto window = [&] {
        add(std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w));
        if (l.stride_h != 1 || l.stride_w != 1) add("stride " + size_text(l.stride_h, l.stride_w));
        if (l.pad_h != 0 || l.pad_w != 0) add("pad " + size_text(l.pad_h, l.pad_w));
    };
    switch (s.type) {
    case LayerType::Conv2D:
        add(std::to_string(s.filters));
        window();
        if (!s.use_bias) add("no bias");
        break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D: window(); break;
    case LayerType::Dropout: add(rate_text(s.rate)); break;
    case LayerType::Embedding: add(std::to_string(s.vocab) + "x" + std::to_string(s.dim)); break;
    case LayerType::Lstm:
        add(std::to_string(s.hidden));
        if (s.num_layers != 1) add("x" + std::to_string(s.num_layers) + " layers");
        if (s.rate != 0.0f) add("dropout " + rate_text(s.rate));
        break;
    case LayerType::Dense:
        if (s.tie_weights) add("tied");
        break;
    default: break;
    }
    const bool shows_activation = s.type == LayerType::Activation ||
                                  ((s.type == LayerType::Dense || s.type == LayerType::Conv2D ||
                                    s.type == LayerType::Residual) &&
                                   s.activation != Activation::None);
    if (shows_activation) add(std::string(activation_name(s.activation)));
    if (!args.empty()) t += "(" + args + ")";
    if (s.force_fp32) t += " fp32";
    return t;
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

// One table row per layer, residual blocks followed by their body and shortcut layers
// indented under them.
struct Row {
    std::string layer, type;
    const GraphLayer* l;
};

void collect_rows(const std::vector<GraphLayer>& layers, int depth, std::vector<Row>& rows)
{
    // "layer 4 > body 2" shows as "4 > body 2": the column is already called layer.
    constexpr std::string_view prefix = "layer ";
    for (const GraphLayer& l : layers) {
        std::string path = l.path.rfind(prefix, 0) == 0 ? l.path.substr(prefix.size()) : l.path;
        rows.push_back({std::string(2 * std::size_t(depth), ' ') + path, layer_label(l), &l});
        collect_rows(l.body, depth + 1, rows);
        collect_rows(l.shortcut, depth + 1, rows);
    }
}

void print_table(const Graph& g)
{
    const bool lm = g.input.sequence;
    std::printf("model %s, input %s, %d %s\n", g.name.empty() ? "(unnamed)" : g.name.c_str(),
                g.input.to_string().c_str(), g.classes,
                lm ? "words (a language model)" : "classes");
    std::vector<Row> rows;
    collect_rows(g.layers, 0, rows);
    int layer_w = 5, type_w = 26;
    for (const Row& r : rows) {
        layer_w = std::max(layer_w, int(r.layer.size()));
        type_w = std::max(type_w, int(r.type.size()));
    }
    std::printf("%-*s %-*s %-12s %12s %14s  %s\n", layer_w, "layer", type_w, "type", "output",
                "params", lm ? "FLOPs/token" : "FLOPs/sample", "tensor cores");
    for (const Row& r : rows) {
        const GraphLayer& l = *r.l;
        std::string tc = tensor_core_text(l);
        if (l.folded_into_loss) tc = (tc == "-" ? "" : tc + "; ") + "folded into the loss";
        std::printf("%-*s %-*s %-12s %12lld %14lld  %s\n", layer_w, r.layer.c_str(), type_w,
                    r.type.c_str(), l.out.to_string().c_str(), static_cast<long long>(l.params),
                    static_cast<long long>(l.flops), tc.c_str());
    }
    std::printf("total: %lld parameters, %lld forward FLOPs per %s; output: %s\n",
                static_cast<long long>(g.total_params), static_cast<long long>(g.total_flops),
                lm ? "token" : "sample", head_text(g.head).c_str());
    for (const std::string& w : g.warnings) std::printf("warning: %s\n", w.c_str());
}

// Through its shortest decimal, so 0.2f prints 0.2 and not 0.20000000298.
double short_double(float f)
{
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, f);
    return std::stod(std::string(buf, r.ptr));
}

nlohmann::ordered_json layer_json(const GraphLayer& l)
{
    using nlohmann::ordered_json;
    const LayerSpec& s = l.spec;
    ordered_json o;
    o["index"] = l.index;
    o["id"] = l.id;
    o["path"] = l.path;
    o["type"] = std::string(layer_type_name(s.type));
    o["activation"] = std::string(activation_name(s.activation));
    switch (s.type) {
    case LayerType::Dense:
        o["units"] = s.units;
        o["tie_weights"] = s.tie_weights;
        break;
    case LayerType::Embedding:
        o["vocab"] = s.vocab;
        o["dim"] = s.dim;
        break;
    case LayerType::Lstm:
        o["hidden"] = s.hidden;
        o["layers"] = s.num_layers;
        o["dropout"] = short_double(s.rate);
        break;
    case LayerType::Dropout: o["rate"] = short_double(s.rate); break;
    case LayerType::Conv2D:
        o["filters"] = s.filters;
        o["kernel"] = {s.kernel_h, s.kernel_w};
        break;
    case LayerType::MaxPool2D:
    case LayerType::AvgPool2D: o["pool_size"] = {s.kernel_h, s.kernel_w}; break;
    case LayerType::BatchNorm:
        o["momentum"] = short_double(s.momentum);
        o["epsilon"] = short_double(s.epsilon);
        break;
    default: break;
    }
    if (s.type == LayerType::Conv2D || s.type == LayerType::MaxPool2D ||
        s.type == LayerType::AvgPool2D) {
        o["stride"] = {l.stride_h, l.stride_w};
        o["padding"] = {l.pad_h, l.pad_w}; // per side, "same" resolved
    }
    if (s.type == LayerType::Dense || s.type == LayerType::Conv2D) o["use_bias"] = s.use_bias;
    o["force_fp32"] = s.force_fp32;
    o["input_shape"] = l.in.to_string();
    o["output_shape"] = l.out.to_string();
    o["params"] = l.params;
    o["flops"] = l.flops;
    o["is_gemm"] = l.is_gemm;
    o["tensor_core_friendly"] = l.tensor_core_friendly;
    o["tensor_core_note"] = l.tensor_core_note;
    o["folded_into_loss"] = l.folded_into_loss;
    if (s.type == LayerType::Residual) {
        for (const auto& [key, part] :
             {std::pair{"body", &l.body}, std::pair{"shortcut", &l.shortcut}}) {
            ordered_json list = ordered_json::array();
            for (const GraphLayer& sub : *part) list.push_back(layer_json(sub));
            o[key] = std::move(list);
        }
    }
    return o;
}

void print_json(const Graph& g)
{
    nlohmann::ordered_json j;
    j["model"] = g.name;
    j["input"] = g.input.to_string();
    j["classes"] = g.classes;
    j["flops_per"] = g.input.sequence ? "token" : "sample";
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const GraphLayer& l : g.layers) layers.push_back(layer_json(l));
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
                     "Per layer (residual blocks' layers indented under them): type, output "
                     "shape, parameters,\nforward FLOPs per sample, whether its GEMM or "
                     "convolution fits tensor cores (and why\nnot), and what the loss absorbs. "
                     "The input shape and classes come from --input/--classes,\nelse from the "
                     "dataset named, else 32x32x3 and 10 classes. A language model (one that "
                     "starts with\nan embedding) reads one token per step and has as many "
                     "classes as its corpus has words\n(--dataset synthetic-text or a corpus "
                     "folder; else 10000); its FLOPs are per token.");
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
    // A language model reads token ids; its classes are the corpus's words.
    if (is_language_model(spec) && !input) {
        input = Shape::tokens();
        if (!classes && parser.has("--dataset")) classes = corpus_vocab(*parser.value("--dataset"));
        if (!classes) {
            std::fprintf(stderr,
                         "summary: a language model: vocabulary %d assumed (synthetic-text's; give "
                         "--dataset FOLDER|synthetic-text or --classes N)\n",
                         k_default_vocab);
            classes = k_default_vocab;
        }
    }
    if ((!input || !classes) && parser.has("--dataset")) {
        DatasetOptions options;
        options.name = *parser.value("--dataset");
        const Dataset d = load_dataset(options, 42);
        if (!input) input = Shape{{d.height, d.width, d.channels}};
        if (!classes) classes = d.classes;
    }
    if (!input || !classes) {
        std::fprintf(stderr, "summary: %s%s%s (give --input/--classes or --dataset)\n",
                     input ? "" : "input 32x32x3 assumed", !input && !classes ? ", " : "",
                     classes ? "" : "10 classes assumed");
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
