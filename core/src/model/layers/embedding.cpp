// embedding: y (rows x dim) = table[id] per row, the table (vocab x dim) a parameter; a
// language model's first layer, reading one int32 word id per time step. Backward sums
// each row's gradient into its word's row of the table (no input gradient: ids are not
// differentiable). A decoder may share the table (dense "tie_weights": SharedTable).
#include "mixlab/error.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/shared_table.h"

#include <sstream>

namespace mixlab {

namespace {

// The word_language_model example's init: encoder weights uniform(-0.1, 0.1).
constexpr float k_init_range = 0.1f;

class EmbeddingNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        m_vocab = layer->spec.vocab;
        const std::size_t n = std::size_t(m_vocab) * std::size_t(out_features);
        m_table.layer = layer;
        m_table.dtype = dtype;
        m_table.width = out_features;
        // Rows stored padded (out_features past dim, k_feature_alignment) hold zeros there.
        const std::int64_t dim = layer->out.elements();
        PaddedLayout layout;
        if (out_features != dim) layout = {{1, m_vocab, m_vocab, dim, out_features}};
        m_table.weights = allocate_weights(b, dtype, n, 0, false, std::move(layout));
        // embedding_backward sums in float32; the fp16 policy's gradient is 16-bit.
        Buffer* grad = m_table.weights.w_grad;
        m_table.grad32 = grad->dtype() == DType::F32 ? grad : b.own(n, DType::F32);
        b.publish_table(&m_table);
    }

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        init_uniform(backend, m_table.weights, k_init_range, seed,
                     0xE3B0000ull + std::uint64_t(layer->id));
    }

    void forward(const PassContext& c, int rows, bool, std::uint64_t) override
    {
        c.backend.embedding_forward(m_table.weights.w_read(), *in, rows, out_features, m_vocab,
                                    *out);
    }

    void backward(const PassContext& c, int rows, std::uint64_t) override
    {
        // A tied decoder ran first (it comes later in forward) and wrote its dW.
        c.backend.embedding_backward(*out_grad, *in, rows, out_features, m_vocab,
                                     m_table.decoder != nullptr, *m_table.grad32);
        if (m_table.grad32 != m_table.weights.w_grad)
            c.backend.cast(*m_table.grad32, *m_table.weights.w_grad);
    }

    void describe(std::vector<std::string>& out) const override
    {
        std::ostringstream s;
        s << path() << " embedding " << dtype_name(dtype) << ": " << m_vocab << "x"
          << layer->out.elements() << " table, a row lookup per token (a gather, no GEMM)";
        if (out_features != layer->out.elements())
            s << "; rows stored padded to " << out_features << " (zeros)";
        if (m_table.weights.w_master->dtype() == DType::I16)
            s << "; split fp32 master table (bf16 + int16 halves)";
        else if (m_table.weights.w_low)
            s << "; fp32 master table";
        if (m_table.decoder) s << "; shared with " << m_table.decoder->path << " (tied decoder)";
        out.push_back(s.str());
    }

private:
    int m_vocab = 0;
    SharedTable m_table;
};

class EmbeddingUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        // Token ids come only from the model's input: the embedding must come first.
        if (!gl.in.is_tokens() || gl.path != "layer 0")
            throw SpecError(label + ": needs token input (one word id per time step) but " +
                            (gl.path != "layer 0" ? std::string("it is not the first layer")
                                                  : "receives " + gl.in.to_string()) +
                            "; an embedding is the first layer of a language model, trained on "
                            "a text corpus");
        if (l.vocab == k_vocab_dataset) l.vocab = walk.classes();
        if (l.vocab <= 0)
            throw SpecError(label + ": \"vocab\" must be a positive integer or \"dataset\", got " +
                            std::to_string(l.vocab));
        if (l.vocab < walk.classes())
            throw SpecError(label + ": \"vocab\" is " + std::to_string(l.vocab) +
                            " but the corpus has " + std::to_string(walk.classes()) +
                            " words (ids up to " + std::to_string(walk.classes() - 1) +
                            "); use \"vocab\": \"dataset\"");
        if (l.dim <= 0)
            throw SpecError(label + ": \"dim\" must be a positive integer, got " +
                            std::to_string(l.dim));
        const std::int64_t n = std::int64_t(l.vocab) * l.dim;
        if (n > k_max_elements)
            throw SpecError(label + ": a " + std::to_string(l.vocab) + " x " +
                            std::to_string(l.dim) +
                            " table is more weights than one layer may "
                            "hold");
        gl.out = Shape{{l.dim}, true};
        gl.params = n;
        gl.flops = 0; // a copy of one row per token
    }
    bool picks_dtype() const override { return true; }
    bool pads_output() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<EmbeddingNode>(); }

    // Its input is int32 ids: no cast before it, whatever dtype it computes in.
    Flow build(const GraphLayer& layer, Flow flow, NodeBuilder& b, NodeList& out) const override
    {
        auto node = make_node();
        Node& n = *node;
        b.init_node(n, layer, flow, b.layer_dtype(layer.spec));
        n.in_grad = nullptr;
        n.allocate(b);
        const std::size_t count = std::size_t(b.max_batch()) * std::size_t(n.out_features);
        n.out = b.own(count, n.dtype);
        n.out_grad = b.own(count, n.dtype);
        Flow next{n.out, n.out_grad, n.dtype, layer.out, padded_width(n, layer)};
        out.push_back(std::move(node));
        return next;
    }
};

} // namespace

const LayerUnit& embedding_unit()
{
    static const EmbeddingUnit unit;
    return unit;
}

} // namespace mixlab
