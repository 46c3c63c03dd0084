// dense: Y (batch x units) = act(X (batch x in) . W^T + b), W stored (units x in). One GEMM
// forward (bias, and relu when there is a bias, in its epilogue), two backward. On a
// sequence it applies per time step: its rows are batch x steps. A language model's decoder
// may be tied to the embedding: W is then the embedding's (vocab x dim) table.
// Under mixed_fp8 an eligible layer runs its three GEMMs in fp8 (fp8_ineligibility says
// which are): X and W quantized to E4M3, dZ to E5M2, each with its delayed scale from the
// network's meta buffer, and the transposed copies Hopper's "TN"-only fp8 GEMMs need,
// every copy's k zero-padded to a multiple of 16 (fp8_padded) so any width qualifies.
// W's E4M3 copy is written by the optimizer as it updates W (ParamSlot::fp8), so no step
// spends a pass quantizing it; dX's transposed copy is one byte-for-byte transpose.
// When the next layer is an fp8 dense layer reading this one's output alone, this layer's
// GEMM writes that layer's E4M3 input itself (node.h's Fp8Output): its units then run
// padded to a multiple of 16 (cuBLASLt's rule for an fp8 output) with zero weights and a
// zero-padded bias, and no 16-bit output is written or read back (but for the numerics
// sampler: PassContext::outputs_read).
#include "mixlab/error.h"
#include "model/fp8_eligibility.h"
#include "model/layers/layer_rules.h"
#include "model/layers/layer_unit.h"
#include "model/layers/shared_table.h"
#include "model/layers/weights.h"

#include <array>
#include <memory>
#include <span>
#include <sstream>
#include <string>

namespace mixlab {

namespace {

// mixed_fp8: a dense layer's fp8 operands and their three meta blocks.
struct Fp8Operands {
    Buffer* meta = nullptr; // the network's (allocated after every node is built)
    int history = 0;
    bool fast_forward = false; // the forward GEMM with fast accumulation (Fp8Config)
    std::size_t x_block = 0, w_block = 0, dy_block = 0;
    // Each stored with its row padded (fp8_padded, written "p"): the GEMM's k.
    Buffer *x8 = nullptr, *x8_t = nullptr;   // batch x in_p, in x batch_p (E4M3)
    Buffer *w8 = nullptr, *w8_t = nullptr;   // out x in_p, in x out_p (E4M3)
    Buffer *dy8 = nullptr, *dy8_t = nullptr; // batch x out_p, out x batch_p (E5M2)
    // w8_t and dy8 are null in a layer without dX (allocate_fp8). w8 holds
    // fp8_padded(out) rows when the layer offers its output in E4M3 (the rest zero).
    // Relu's gate as bits: `gate` over this layer's relu output, read by its backward when
    // the next fp8 layer claimed it to write (gate->bits); `in_gate_bits`, the layer
    // before's, written by this layer's x pass (its input is that layer's relu output).
    ReluMask* gate = nullptr;
    Buffer* in_gate_bits = nullptr;
    // This layer's output written in E4M3 by its GEMM for the next fp8 layer (its offer,
    // when its epilogue runs the whole activation), and this layer's input so written by
    // the layer before (the offer it took); each in effect while taken (Fp8Output).
    Fp8Output* output_offer = nullptr;
    const Fp8Output* input_offer = nullptr;
};

class DenseNode final : public Node {
public:
    void allocate(NodeBuilder& b) override
    {
        const LayerSpec& spec = layer->spec;
        act = layer->folded_into_loss ? Activation::None : spec.activation;
        m_fused_relu = act == Activation::Relu && spec.use_bias;
        if (b.fp8()) m_fp8_why = fp8_ineligibility(spec, dtype, in_features, out_features);
        // An fp8 layer whose epilogue runs its activation may write the next fp8 layer's
        // input in E4M3, which cuBLASLt allows with the units a multiple of 16: the bias is
        // stored padded to that (zeros, which no gradient reaches) for the GEMM to read.
        m_fp8_offer = b.fp8() && m_fp8_why.empty() && !spec.tie_weights &&
                      (act == Activation::None || m_fused_relu);
        const int units_p = m_fp8_offer ? fp8_padded(out_features) : out_features;
        PaddedLayout bias_layout;
        if (spec.use_bias && units_p != out_features)
            bias_layout = {{1, 1, 1, out_features, units_p}};
        if (spec.tie_weights) {
            tie(b);
            if (spec.use_bias) m_w = allocate_bias(b, dtype, std::size_t(out_features));
        } else {
            // A padded input (k_feature_alignment): zero weights on its extra columns.
            const std::int64_t in = layer->in.elements();
            PaddedLayout layout;
            if (in != in_features) layout = {{1, out_features, out_features, in, in_features}};
            m_w = allocate_weights(b, dtype, std::size_t(out_features) * in_features,
                                   spec.use_bias ? units_p : 0, false, std::move(layout),
                                   std::move(bias_layout));
            // The optimizer reads the whole bias gradient; its padding is never written.
            if (m_w.b_grad && units_p != out_features) b.backend().fill(*m_w.b_grad, 0.0f);
        }
        if (act != Activation::None && !m_fused_relu)
            m_pre = b.own(std::size_t(b.max_batch()) * out_features, dtype);
        if (const Fp8Config* fp8 = b.fp8(); fp8 && m_fp8_why.empty()) allocate_fp8(b, *fp8);
    }

    void init_parameters(Backend& backend, std::uint64_t seed) override
    {
        // The fans are the layer's own, whatever padding its input is stored with.
        init_weights(backend, m_w, int(layer->in.elements()), out_features, seed, layer->id);
    }

    void forward(const PassContext& c, int batch, bool training, std::uint64_t) override
    {
        if (m_fp8) {
            forward_fp8(c, batch, training);
            return;
        }
        GemmCall g;
        g.trans_b = true; // Y (batch x out) = X (batch x in) . W^T, W stored (out x in)
        g.m = batch;
        g.n = out_features;
        g.k = in_features;
        g.a = in;
        g.b = &w_read();
        g.c = m_pre ? m_pre : out;
        g.bias = m_w.b_read();
        g.epilogue = !g.bias ? Epilogue::None : m_fused_relu ? Epilogue::BiasRelu : Epilogue::Bias;
        g.math = math;
        c.backend.gemm(g);
        if (m_pre) c.backend.bias_activation(act, *m_pre, nullptr, out_features, *out);
    }

    void backward(const PassContext& c, int batch, std::uint64_t) override
    {
        // dZ overwrites dY in place: every activation here is element-wise. An fp8 layer
        // takes relu's in its quantize pass instead (backward_fp8).
        if (overwrites_out_grad()) {
            const Buffer& x = m_pre ? *m_pre : *out;
            c.backend.activation_backward(act, x, *out, *out_grad, out_features, *out_grad);
        }
        if (m_fp8) {
            backward_fp8(c, batch);
            return;
        }
        GemmCall dw; // dW (out x in) = dZ^T . X, and dB = column sums of dZ
        dw.trans_a = true;
        dw.m = out_features;
        dw.n = in_features;
        dw.k = batch;
        dw.a = out_grad;
        dw.b = in;
        dw.c = m_table ? m_table->grad32 : m_w.w_grad; // tied: the embedding adds to it next
        dw.epilogue = m_w.b_grad ? Epilogue::BiasGradA : Epilogue::None;
        dw.bias_grad = m_w.b_grad;
        dw.math = math;
        c.backend.gemm(dw);
        if (in_grad) {
            GemmCall dx; // dX (batch x in) = dZ . W
            dx.m = batch;
            dx.n = in_features;
            dx.k = out_features;
            dx.a = out_grad;
            dx.b = &w_read();
            dx.c = in_grad;
            dx.math = math;
            c.backend.gemm(dx);
        }
    }

    void kernels(std::vector<LayerKernelInfo>& out) const override
    {
        LayerKernelInfo k = kernel_facts();
        std::ostringstream s;
        s << layer->in.elements() << "->" << out_features;
        if (in_features != layer->in.elements())
            s << " (input stored padded to " << in_features << ")";
        k.tensor_cores = math != MathMode::Pedantic && layer->tensor_core_friendly;
        k.detail = s.str() + detail_tail(*layer, math, m_table ? m_table->weights : m_w);
        if (m_table) k.detail += "; W tied to " + m_table->layer->path + " (embedding)'s table";
        if (m_fp8)
            k.detail +=
                "; fp8 GEMMs (E4M3 x and w, E5M2 dy; delayed scaling over " +
                std::to_string(m_fp8->history) + " steps" +
                // The CPU accumulates exactly whatever the setting.
                (m_fp8->fast_forward && !m_fp8_emulated
                     ? "; the forward GEMM with fast accumulation"
                     : "") +
                (m_fp8_emulated ? ", emulated on the CPU)" : ")") +
                (input_gathered_fp8 ? "; x quantized by the batch gather" : "") +
                (m_fp8->gate && m_fp8->gate->bits
                     ? "; relu's backward reads its gate as bits, written by the next "
                       "layer's fp8 pass"
                     : "") +
                (writes_fp8_output() ? "; the GEMM writes the next layer's input in E4M3" +
                                           (fp8_padded(out_features) != out_features
                                                ? " (units run padded to " +
                                                      std::to_string(fp8_padded(out_features)) + ")"
                                                : std::string()) +
                                           ", its 16-bit output only on numerics-sampled steps"
                                     : "") +
                (reads_fp8_input() ? "; x written in E4M3 by the layer before's GEMM" : "");
        else if (!m_fp8_why.empty())
            k.detail += "; fp8: " + m_fp8_why;
        out.push_back(std::move(k));
    }

    bool fp8_batch(Fp8Batch& into, bool training) const override
    {
        if (!m_fp8) return false;
        const Fp8Operands& f = *m_fp8;
        into.meta = f.meta;
        into.block = f.x_block;
        into.history_len = f.history;
        into.record_amax = training;
        into.x8 = f.x8;
        into.x8_t = training ? f.x8_t : nullptr;
        return true;
    }

    // An fp8 relu layer reads dY in its quantize pass and leaves it as it was.
    bool overwrites_out_grad() const override
    {
        return act != Activation::None && !(m_fp8 && act == Activation::Relu);
    }

private:
    const Buffer& w_read() const { return m_table ? m_table->weights.w_read() : m_w.w_read(); }

    bool writes_fp8_output() const
    {
        return m_fp8 && m_fp8->output_offer && m_fp8->output_offer->taken;
    }
    bool reads_fp8_input() const
    {
        return m_fp8 && m_fp8->input_offer && m_fp8->input_offer->taken;
    }

    void allocate_fp8(NodeBuilder& b, const Fp8Config& cfg)
    {
        m_fp8_emulated = b.backend().info().backend == BackendKind::Cpu;
        auto f = std::make_unique<Fp8Operands>();
        f->meta = &b.fp8_meta();
        f->history = cfg.amax_history;
        f->fast_forward = cfg.fast_forward;
        f->x_block = b.fp8_block(DType::F8E4M3, path() + " x");
        f->w_block = b.fp8_block(DType::F8E4M3, path() + " w");
        f->dy_block = b.fp8_block(DType::F8E5M2, path() + " dy");
        const auto padded = [](int n) { return std::size_t(fp8_padded(n)); };
        const std::size_t rows = std::size_t(b.max_batch());
        const std::size_t in = std::size_t(in_features), outf = std::size_t(out_features);
        f->x8 = b.own(rows * padded(in_features), DType::F8E4M3);
        f->x8_t = b.own(in * padded(b.max_batch()), DType::F8E4M3);
        // Padded rows for an offered output: zero, as the optimizer writes the layer's own.
        const std::size_t w8_rows = m_fp8_offer ? padded(out_features) : outf;
        f->w8 = b.own(w8_rows * padded(in_features), DType::F8E4M3);
        if (w8_rows != outf) b.backend().fill(*f->w8, 0.0f);
        // w8_t and dy8 are dX's operands: a layer nothing before needs a gradient from (a
        // network's first) has neither, and its passes write neither (W1's first layer:
        // the W pass then takes the flat kernel, dZ's pass writes a quarter less).
        if (in_grad) {
            f->w8_t = b.own(in * padded(out_features), DType::F8E4M3);
            f->dy8 = b.own(rows * padded(out_features), DType::F8E5M2);
        }
        f->dy8_t = b.own(outf * padded(b.max_batch()), DType::F8E5M2);
        // Relu's backward reads a bit per value when the next fp8 layer can write them in
        // the pass that reads this output anyway (a sixteenth of the 16-bit output's bytes).
        if (act == Activation::Relu)
            f->gate = b.request_relu_mask(this, b.max_batch(), out_features);
        if (ReluMask* m = b.claim_relu_mask(Node::in, in_features)) f->in_gate_bits = m->bits;
        if (m_fp8_offer) f->output_offer = b.offer_fp8_output(this, out_features);
        f->input_offer = b.take_fp8_output(Node::in, in_features, f->x8, f->x_block);
        // w8 is the optimizer's to write (ParamSlot::fp8): each update quantizes the new W.
        Fp8Weights q;
        q.w8 = f->w8;
        q.meta = f->meta;
        q.block = f->w_block;
        q.history_len = f->history;
        q.rows = out_features;
        q.cols = in_features;
        b.quantized_weights(m_w.w_master, q);
        m_fp8 = std::move(f);
    }

    // One fp8 GEMM in the TN form: c (m x n) = a (m x k) . b (n x k)^T, both operands
    // k-contiguous with k = fp8_padded(k_real), descaled by the two tensors' scale_inv.
    GemmCall fp8_gemm(int m, int n, int k_real, Buffer* a, std::size_t a_block, Buffer* b,
                      std::size_t b_block, Buffer* c_out) const
    {
        const Fp8Operands& f = *m_fp8;
        GemmCall g;
        g.trans_b = true;
        g.m = m;
        g.n = n;
        g.k = fp8_padded(k_real);
        g.a = a;
        g.b = b;
        g.c = c_out;
        g.math = math;
        g.fp8_meta = f.meta;
        g.a_scale_inv = fp8_scale_inv_index(a_block, f.history);
        g.b_scale_inv = fp8_scale_inv_index(b_block, f.history);
        return g;
    }

    // Y = x8 . w8^T descaled, the bias/relu epilogue as in bf16, Y stored bf16. w8 is
    // already there: the last optimizer step quantized W with this step's scale (and
    // recorded its amax). Training records x's amax and writes the transposes the
    // backward GEMMs read; evaluation moves no history and needs no transposes.
    void forward_fp8(const PassContext& c, int batch, bool training)
    {
        Fp8Operands& f = *m_fp8;
        // x8 is there already when the gather wrote it (with x8_t and the amax) or the
        // layer before's GEMM did (its amax too); that layer's relu gate and x8_t are then
        // one transpose of the bytes the GEMM wrote.
        // Training's transposed copies (x's when the layer before's GEMM wrote x8, w8's
        // for dX) in one launch.
        std::array<Fp8Transpose, 2> transposes;
        std::size_t n_transposes = 0;
        if (reads_fp8_input()) {
            if (training)
                transposes[n_transposes++] = {f.x8, batch, in_features, f.x8_t, f.in_gate_bits};
        } else if (c.quantized_input != in) {
            c.backend.fp8_quantize(*in, batch, in_features, *f.meta, f.x_block, f.history, training,
                                   f.x8, training ? f.x8_t : nullptr, nullptr, nullptr, nullptr,
                                   training ? f.in_gate_bits : nullptr);
        }
        if (training && f.w8_t)
            transposes[n_transposes++] = {f.w8, out_features, in_features, f.w8_t, nullptr};
        if (n_transposes > 0)
            c.backend.fp8_transposes(
                std::span<const Fp8Transpose>(transposes.data(), n_transposes));
        const bool to_fp8 = writes_fp8_output();
        Buffer* y = to_fp8 ? f.output_offer->x8 : out;
        if (m_pre) y = m_pre; // (never with to_fp8: the epilogue runs the activation)
        GemmCall g = fp8_gemm(batch, to_fp8 ? fp8_padded(out_features) : out_features, in_features,
                              f.x8, f.x_block, f.w8, f.w_block, y);
        g.bias = m_w.b_read();
        g.epilogue = !g.bias ? Epilogue::None : m_fused_relu ? Epilogue::BiasRelu : Epilogue::Bias;
        g.fp8_fast_accum = f.fast_forward; // k = in_features: a short sum (Fp8Config)
        if (to_fp8) {
            // The next layer's scale, and its current amax slot in training (the one
            // writer of it this step); evaluation moves no history.
            const std::size_t at = f.output_offer->block * fp8_block_floats(f.history);
            g.c_scale = at + k_fp8_scale;
            g.c_amax = at + k_fp8_history;
            g.c_amax_on = training;
        }
        c.backend.gemm(g);
        if (m_pre) c.backend.bias_activation(act, *m_pre, nullptr, out_features, *out);
        if (to_fp8 && c.outputs_read) {
            // The 16-bit output the numerics sampler reads (PassContext::outputs_read).
            GemmCall o =
                fp8_gemm(batch, out_features, in_features, f.x8, f.x_block, f.w8, f.w_block, out);
            o.bias = g.bias;
            o.epilogue = g.epilogue;
            o.fp8_fast_accum = g.fp8_fast_accum;
            c.backend.gemm(o);
        }
    }

    // dZ quantized to E5M2 with its transpose, and dB its column sums in the same pass
    // (fp8 GEMMs have no bias-gradient epilogue); dW (fp32) = dy8_t . x8_t^T, dX = dy8 .
    // w8_t^T: all three in the TN form. Under relu dZ is never written in 16 bits: the
    // pass reads dY (out_grad) gated by Y > 0; other activations left dZ in out_grad.
    void backward_fp8(const PassContext& c, int batch)
    {
        Fp8Operands& f = *m_fp8;
        // Relu's gate: the bits the next layer's x pass wrote, else the 16-bit output.
        const bool bits = f.gate && f.gate->bits;
        const Buffer* relu_gate = act == Activation::Relu && !bits ? out : nullptr;
        c.backend.fp8_quantize(*out_grad, batch, out_features, *f.meta, f.dy_block, f.history, true,
                               f.dy8, f.dy8_t, m_w.b_grad, relu_gate,
                               bits ? f.gate->bits : nullptr);
        c.backend.gemm(fp8_gemm(out_features, in_features, batch, f.dy8_t, f.dy_block, f.x8_t,
                                f.x_block, m_w.w_grad));
        if (in_grad)
            c.backend.gemm(fp8_gemm(batch, in_features, out_features, f.dy8, f.dy_block, f.w8_t,
                                    f.w_block, in_grad));
    }

    // Shapes were checked by the graph; what is left is what only the network knows.
    void tie(NodeBuilder& b)
    {
        m_table = b.shared_table();
        if (!m_table)
            throw SpecError(path() + " (dense): \"tie_weights\" needs an embedding before it");
        if (m_table->decoder)
            throw SpecError(path() + " (dense): " + m_table->layer->path +
                            " (embedding) is already tied to " + m_table->decoder->path);
        // One GEMM reads X and the table: they must share a dtype.
        if (m_table->dtype != dtype)
            throw SpecError(path() + " (dense): \"tie_weights\" needs the decoder and " +
                            m_table->layer->path + " (embedding) in one dtype, got " +
                            std::string(dtype_name(dtype)) + " and " +
                            std::string(dtype_name(m_table->dtype)) +
                            "; give both \"dtype\": \"float32\" or neither");
        // build_graph (mark_padded_outputs) pads the decoder's input exactly when it pads
        // the table; this guards that promise.
        if (m_table->width != in_features)
            throw SpecError(path() + " (dense): \"tie_weights\" reads rows of " +
                            std::to_string(in_features) + " values but " + m_table->layer->path +
                            " (embedding)'s table holds rows of " + std::to_string(m_table->width));
        m_table->decoder = layer;
    }

    bool m_fused_relu = false;      // bias + relu in the GEMM's epilogue
    SharedTable* m_table = nullptr; // tied: the embedding's table is W (m_w holds the bias)
    Weights m_w;
    Buffer* m_pre = nullptr;            // the pre-activation, when the activation runs on its own
    std::unique_ptr<Fp8Operands> m_fp8; // mixed_fp8, when the layer is eligible
    std::string m_fp8_why;              // mixed_fp8: why it is not, for kernels()
    bool m_fp8_emulated = false;        // on the CPU backend
    bool m_fp8_offer = false;           // fp8, its activation in the epilogue (Fp8Output)
};

class DenseUnit final : public LayerUnit {
public:
    void infer(GraphLayer& gl, GraphWalk& walk) const override
    {
        LayerSpec& l = gl.spec;
        const std::string label = layer_label(gl);
        if (gl.in.dims.size() != 1)
            throw SpecError(label + ": needs a flat input but receives " + gl.in.to_string() +
                            "; add a {\"type\": \"flatten\"} layer before it");
        const bool vocab = l.units == k_units_vocab;
        if (l.units == k_units_classes || vocab) l.units = walk.classes();
        if (l.units <= 0)
            throw SpecError(label + ": \"units\" must be a positive integer, got " +
                            std::to_string(l.units));
        const std::int64_t in = gl.in.dims[0];
        const std::int64_t units = l.units;
        if (in * units > k_max_elements)
            throw SpecError(label + ": " + std::to_string(in) + " inputs x " +
                            std::to_string(units) +
                            " units is more weights than one layer "
                            "may hold");
        if (l.tie_weights) check_tie(gl, walk);
        gl.out = Shape{{l.units}, gl.in.sequence}; // per time step on a sequence
        gl.params = (l.tie_weights ? 0 : in * units) + (l.use_bias ? units : 0);
        gl.flops =
            2 * in * units + (l.use_bias ? units : 0) + activation_flops(l.activation, units);
        gl.vocab_units = vocab;
        fit(gl, in);
    }
    bool sets_width() const override { return true; }
    void refit(GraphLayer& gl, std::int64_t stored_in) const override { fit(gl, stored_in); }

private:
    // Tensor-core fitness with the input `in` values wide (as stored).
    static void fit(GraphLayer& gl, std::int64_t in)
    {
        const std::int64_t units = gl.spec.units;
        set_gemm_fitness(gl, {{"inputs", in}, {gl.vocab_units ? "vocab" : "units", units}});
        // A vocabulary is what the corpus has, not a size one picks: say what the usual
        // remedy is rather than suggest another count.
        if (gl.vocab_units && units % 8 != 0)
            gl.tensor_core_note += "; padding the decoder (and the embedding) with " +
                                   std::to_string(8 - units % 8) +
                                   " never-used words would make it one (MixLab does not pad "
                                   "the vocabulary)";
    }

    // The embedding's table (vocab x dim) is W (units x in): both must match.
    static void check_tie(const GraphLayer& gl, const GraphWalk& walk)
    {
        const std::string label = layer_label(gl);
        const GraphLayer* e = walk.embedding();
        if (!e)
            throw SpecError(label + ": \"tie_weights\" shares the table of an embedding layer, "
                                    "but there is none before it");
        const std::string shares = label + ": \"tie_weights\" shares " + e->path +
                                   " (embedding)'s " + std::to_string(e->spec.vocab) + " x " +
                                   std::to_string(e->spec.dim) + " table, ";
        if (e->spec.dim != gl.in.dims[0])
            throw SpecError(shares + "but its input is " + std::to_string(gl.in.dims[0]) +
                            " wide: the embedding's \"dim\" (" + std::to_string(e->spec.dim) +
                            ") must equal the decoder's input width (" +
                            std::to_string(gl.in.dims[0]) + "), e.g. the lstm's \"hidden\"");
        if (e->spec.vocab != gl.spec.units)
            throw SpecError(shares + "but it has " + std::to_string(gl.spec.units) +
                            " units: use \"units\": \"vocab\" and \"vocab\": \"dataset\"");
    }

public:
    const char* width_field() const override { return "units"; }
    bool folds_output_activation() const override { return true; }
    bool picks_dtype() const override { return true; }
    bool reads_padding() const override { return true; }
    std::unique_ptr<Node> make_node() const override { return std::make_unique<DenseNode>(); }
};

} // namespace

const LayerUnit& dense_unit()
{
    static const DenseUnit unit;
    return unit;
}

} // namespace mixlab
