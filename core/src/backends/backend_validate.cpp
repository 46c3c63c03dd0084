// The argument checks both backends share (see backend_validate.h): each op's contract
// from mixlab/backend.h, with messages that name the buffer and the sizes involved.
#include "backends/backend_validate.h"
#include "backends/backend_validate_fp8.h"

#include "base/hd_math.h"

#include "mixlab/error.h"

#include <algorithm>
#include <string>

namespace mixlab::validate {

namespace {

// The loss-scaler state and the metrics record are float32 on every backend.
void scaler_buffer(const char* backend, const char* op, const Buffer& scaler)
{
    require(scaler.dtype() == DType::F32 && scaler.count() >= k_scaler_fields, backend, op,
            "scaler must be float32 x ", int(k_scaler_fields));
}

void record_buffer(const char* backend, const char* op, const Buffer& record,
                   std::size_t record_offset)
{
    require(record.dtype() == DType::F32 && record.count() >= record_offset + k_record_fields,
            backend, op, "record must be float32 with room for the fields at offset ",
            record_offset);
}

} // namespace

void append_part(std::string& s, const ImageShape& shape)
{
    append_parts(s, shape.height, "x", shape.width, "x", shape.channels);
}

void append_part(std::string& s, const ConvGeometry& g)
{
    append_parts(s, "x ", g.batch, "x", g.in_h, "x", g.in_w, "x", g.in_c, ", y ", g.out_h, "x",
                 g.out_w, "x", g.out_c, ", kernel ", g.kernel_h, "x", g.kernel_w, ", stride ",
                 g.stride_h, "x", g.stride_w, ", pad ", g.pad_h, "x", g.pad_w);
}

void append_part(std::string& s, const PoolGeometry& g)
{
    append_parts(s, "x ", g.batch, "x", g.in_h, "x", g.in_w, "x", g.channels, ", y ", g.out_h, "x",
                 g.out_w, ", window ", g.window_h, "x", g.window_w, ", stride ", g.stride_h, "x",
                 g.stride_w, ", pad ", g.pad_h, "x", g.pad_w);
}

void fail(const char* backend, const char* op, const std::string& what)
{
    throw Error(std::string(backend) + " backend: " + op + ": " + what);
}

namespace {

// floating's checks, the message after `prefix` (nothing, or a SlotName).
template <class... Prefix>
void floating_buffer(const char* backend, const char* op, const Buffer& b, std::size_t need,
                     const char* name, const Prefix&... prefix)
{
    require(is_floating(b.dtype()), backend, op, prefix..., name,
            " must be a floating buffer, got ", b.dtype());
    require(b.count() >= need, backend, op, prefix..., name, " holds ", b.count(),
            " elements, needs ", need);
    require(need == 0 || b.data() != nullptr, backend, op, prefix..., name, " is not allocated");
}

} // namespace

void append_part(std::string& s, SlotName slot) { append_parts(s, "slot ", slot.index, ": "); }

void floating(const char* backend, const char* op, const Buffer& b, std::size_t need,
              const char* name)
{
    floating_buffer(backend, op, b, need, name);
}

void floating(const char* backend, const char* op, const Buffer& b, std::size_t need,
              const char* name, SlotName slot)
{
    floating_buffer(backend, op, b, need, name, slot);
}

std::size_t whole_rows(const char* backend, const char* op, std::size_t count, int cols)
{
    require(cols > 0 && count % std::size_t(cols) == 0, backend, op, count,
            " elements are not whole rows of ", cols);
    return count / std::size_t(cols);
}

void element_range(const char* backend, const char* op, const Buffer& b, std::size_t offset,
                   std::size_t count, bool writing)
{
    require(offset + count <= b.count(), backend, op, writing ? "writing " : "reading ", count,
            " elements at offset ", offset, " past the buffer's ", b.count());
}

void upload_raw(const char* backend, const Buffer& dst, std::size_t bytes)
{
    const char* op = "upload_raw";
    // fp8 too: the CPU stores its values as floats, the GPU as bytes.
    require(!is_floating(dst.dtype()) && !is_fp8(dst.dtype()), backend, op,
            "raw bytes go to uint8/int16/int32 buffers only; use upload_f32 for ", dst.dtype());
    require(bytes <= dst.count() * dtype_size(dst.dtype()), backend, op, bytes,
            " bytes do not fit a buffer of ", dst.count(), " ", dst.dtype());
}

void cast(const char* backend, const Buffer& x, const Buffer& y)
{
    require(x.count() == y.count(), backend, "cast", "x has ", x.count(), " elements, y ",
            y.count());
}

void gather_batch(const char* backend, const Buffer& images_u8, const Buffer& labels_u8,
                  const Buffer& order_i32, std::int64_t offset, int batch, const ImageShape& image,
                  const Normalization& norm, const Augmentation& aug, const StepCounter& counter,
                  const Buffer& out, const Buffer& out_labels)
{
    const char* op = "gather_batch";
    require(images_u8.dtype() == DType::U8 && labels_u8.dtype() == DType::U8, backend, op,
            "images and labels must be uint8");
    require(order_i32.dtype() == DType::I32 && out_labels.dtype() == DType::I32, backend, op,
            "order and out_labels must be int32");
    require(norm.channels >= 1 && norm.channels <= 4, backend, op, "channels must be 1..4");
    require(image.height > 0 && image.width > 0 && image.channels > 0, backend, op,
            "image shape must be positive, got ", image);
    require(image.channels == norm.channels, backend, op, "the normalisation has ", norm.channels,
            " channels, the image ", image.channels);
    require(!aug.random_crop || aug.crop_padding >= 0, backend, op,
            "crop padding must not be negative, got ", aug.crop_padding);
    require(batch >= 0, backend, op, "batch must not be negative");
    step_counter(backend, op, counter);
    // With a counter the batch may start as late as offset + (steps_per_epoch - 1) * batch.
    const std::int64_t last_start =
        offset + (counter.buffer ? (counter.steps_per_epoch - 1) * std::int64_t(batch) : 0);
    require(offset >= 0 && std::size_t(last_start) + std::size_t(batch) <= order_i32.count(),
            backend, op, "batch runs past the end of the order");
    require(out_labels.count() >= std::size_t(batch), backend, op, "out_labels is too small");
    floating(backend, op, out, std::size_t(batch) * std::size_t(image.size()), "out");
}

void gather_tokens(const char* backend, const Buffer& stream_i32, std::int64_t column_len,
                   int batch, int steps, std::int64_t row, const StepCounter& counter,
                   const Buffer& ids_i32, const Buffer& targets_i32)
{
    const char* op = "gather_tokens";
    require(stream_i32.dtype() == DType::I32 && ids_i32.dtype() == DType::I32 &&
                targets_i32.dtype() == DType::I32,
            backend, op, "the stream, ids and targets must be int32");
    require(batch >= 1 && steps >= 1 && column_len >= 2, backend, op,
            "batch and steps must be positive and a column at least 2 tokens, got batch ", batch,
            ", steps ", steps, ", column ", column_len);
    require(std::size_t(column_len) * std::size_t(batch) <= stream_i32.count(), backend, op,
            "the stream holds fewer than batch x column tokens");
    step_counter(backend, op, counter);
    // With a counter the window may start as late as row + (steps_per_epoch - 1) * steps;
    // its targets read one row past its end.
    const std::int64_t last_row =
        row + (counter.buffer ? (counter.steps_per_epoch - 1) * std::int64_t(steps) : 0);
    require(row >= 0 && last_row + steps < column_len, backend, op,
            "the window runs past the end of the columns (row ", last_row, " + ", steps,
            " steps, columns of ", column_len, ")");
    const std::size_t n = std::size_t(steps) * std::size_t(batch);
    require(ids_i32.count() >= n && targets_i32.count() >= n, backend, op,
            "ids and targets must hold steps x batch tokens");
}

void step_counter(const char* backend, const char* op, const StepCounter& counter)
{
    if (!counter.buffer) return;
    require(counter.buffer->dtype() == DType::I32 && counter.buffer->count() >= 2, backend, op,
            "the step counter must be two int32 words");
    require(counter.steps_per_epoch >= 1, backend, op, "steps per epoch must be positive, got ",
            counter.steps_per_epoch);
}

void add_activation(const char* backend, Activation act, const Buffer& a, const Buffer& b,
                    const Buffer& y)
{
    const char* op = "add_activation";
    require(act == Activation::None || act == Activation::Relu, backend, op,
            "the activation after a sum must be linear or relu, got ", activation_name(act));
    const std::size_t n = y.count();
    require(a.count() == n && b.count() == n, backend, op,
            "a, b and y must have equal counts, got ", a.count(), ", ", b.count(), " and ", n);
    floating(backend, op, a, n, "a");
    floating(backend, op, b, n, "b");
    floating(backend, op, y, n, "y");
}

void conv_geometry(const char* backend, const char* op, const ConvGeometry& g)
{
    require(g.batch > 0 && g.in_h > 0 && g.in_w > 0 && g.in_c > 0 && g.out_c > 0, backend, op,
            "sizes must be positive, got ", g);
    require(g.kernel_h > 0 && g.kernel_w > 0 && g.stride_h > 0 && g.stride_w > 0, backend, op,
            "kernel and stride must be positive, got ", g);
    require(g.pad_h >= 0 && g.pad_w >= 0, backend, op, "padding must not be negative, got ", g);
    require(g.in_h + 2 * g.pad_h >= g.kernel_h && g.in_w + 2 * g.pad_w >= g.kernel_w, backend, op,
            "the kernel is larger than the padded input: ", g);
    require(g.out_h == window_positions(g.in_h, g.pad_h, g.kernel_h, g.stride_h) &&
                g.out_w == window_positions(g.in_w, g.pad_w, g.kernel_w, g.stride_w),
            backend, op, "output must be (in + 2*pad - kernel)/stride + 1 = ",
            window_positions(g.in_h, g.pad_h, g.kernel_h, g.stride_h), "x",
            window_positions(g.in_w, g.pad_w, g.kernel_w, g.stride_w), ", got ", g);
}

void conv2d_prepare(const char* backend, const ConvGeometry& g, DType dtype)
{
    const char* op = "conv2d_prepare";
    conv_geometry(backend, op, g);
    require(is_floating(dtype), backend, op, "convolutions need a floating dtype, got ", dtype);
}

void pool_geometry(const char* backend, const char* op, const PoolGeometry& g)
{
    require(g.batch > 0 && g.in_h > 0 && g.in_w > 0 && g.channels > 0, backend, op,
            "sizes must be positive, got ", g);
    require(g.window_h > 0 && g.window_w > 0 && g.stride_h > 0 && g.stride_w > 0, backend, op,
            "window and stride must be positive, got ", g);
    // pad < window keeps at least one real pixel in every window, so a max always has a
    // candidate and an average never divides by zero.
    require(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h < g.window_h && g.pad_w < g.window_w, backend,
            op, "padding must be in [0, window), got ", g);
    require(g.in_h + 2 * g.pad_h >= g.window_h && g.in_w + 2 * g.pad_w >= g.window_w, backend, op,
            "the window is larger than the padded input: ", g);
    require(g.out_h == window_positions(g.in_h, g.pad_h, g.window_h, g.stride_h) &&
                g.out_w == window_positions(g.in_w, g.pad_w, g.window_w, g.stride_w),
            backend, op, "output must be (in + 2*pad - window)/stride + 1 = ",
            window_positions(g.in_h, g.pad_h, g.window_h, g.stride_h), "x",
            window_positions(g.in_w, g.pad_w, g.window_w, g.stride_w), ", got ", g);
}

void conv2d(const char* backend, const char* op, const ConvGeometry& g, const Buffer& in,
            const Buffer& w, const Buffer& out)
{
    conv_geometry(backend, op, g);
    const std::string o(op);
    const bool data = o == "conv2d_backward_data", filter = o == "conv2d_backward_filter";
    floating(backend, op, in, g.x_count(), data ? "dx" : "x");
    floating(backend, op, w, g.w_count(), filter ? "dw" : "w");
    floating(backend, op, out, g.y_count(), data || filter ? "dy" : "y");
    require(in.dtype() == w.dtype() && w.dtype() == out.dtype(), backend, op,
            "activations and weights must share one dtype, got ", in.dtype(), ", ", w.dtype(),
            " and ", out.dtype());
}

void batchnorm(const char* backend, const char* op, const Buffer& x, int rows, int channels,
               const std::vector<const Buffer*>& per_channel, const Buffer& y)
{
    require(rows > 0 && channels > 0, backend, op, "rows and channels must be positive, got ", rows,
            " x ", channels);
    // The running variance takes the unbiased estimate n/(n-1): undefined for one value.
    require(std::string(op) != "batchnorm_forward_train" || rows > 1, backend, op,
            "training needs more than one value per channel (batch*height*width > 1)");
    const std::size_t n = std::size_t(rows) * std::size_t(channels);
    floating(backend, op, x, n, "x");
    floating(backend, op, y, n, "output");
    require(x.dtype() == y.dtype(), backend, op, "input and output must share a dtype, got ",
            x.dtype(), " and ", y.dtype());
    for (std::size_t i = 0; i < per_channel.size(); ++i) {
        const Buffer* b = per_channel[i];
        require(b != nullptr && b->dtype() == DType::F32 && b->count() >= std::size_t(channels) &&
                    b->data() != nullptr,
                backend, op, "per-channel buffer ", i, " must be float32 with ", channels,
                " elements");
    }
}

void pool(const char* backend, const char* op, const PoolGeometry& g, const Buffer& in,
          const Buffer& out)
{
    pool_geometry(backend, op, g);
    floating(backend, op, in, g.x_count(), "x-sized buffer");
    floating(backend, op, out, g.y_count(), "y-sized buffer");
    require(in.dtype() == out.dtype(), backend, op, "input and output must share a dtype, got ",
            in.dtype(), " and ", out.dtype());
}

void pool_backward(const char* backend, PoolMode mode, const PoolGeometry& g, const Buffer& x,
                   const Buffer& y, const Buffer& dy, const Buffer& dx)
{
    const char* op = "pool_backward";
    pool(backend, op, g, dx, dy);
    if (mode != PoolMode::Max) return;
    pool(backend, op, g, x, y);
    require(x.dtype() == dx.dtype(), backend, op, "x and dx must share a dtype, got ", x.dtype(),
            " and ", dx.dtype());
}

void gemm(const char* backend, const GemmCall& g)
{
    const char* op = "gemm";
    require(g.a && g.b && g.c, backend, op, "a, b and c must be set");
    if (is_fp8(g.a->dtype()) || is_fp8(g.b->dtype())) {
        fp8_gemm(backend, g);
        return;
    }
    require(!g.fp8_fast_accum, backend, op,
            "fast accumulation is an fp8 GEMM's option; a and b are ", g.a->dtype());
    require(g.m >= 0 && g.n >= 0 && g.k >= 0, backend, op,
            "dimensions must not be negative, got m=", g.m, " n=", g.n, " k=", g.k);
    const std::size_t m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
    floating(backend, op, *g.a, m * k, "a");
    floating(backend, op, *g.b, k * n, "b");
    floating(backend, op, *g.c, m * n, "c");
    const DType ab = g.a->dtype(), ct = g.c->dtype();
    require(ab == g.b->dtype(), backend, op, "a and b must share a dtype, got ", ab, " and ",
            g.b->dtype());
    require(ct == ab || ct == DType::F32, backend, op,
            "c must be float32 or the operands' dtype, got ", ct);
    if (epilogue_adds_bias(g.epilogue)) {
        require(g.bias != nullptr, backend, op, "this epilogue needs a bias");
        floating(backend, op, *g.bias, n, "bias");
    } else if (g.epilogue == Epilogue::BiasGradA) {
        require(g.bias_grad != nullptr, backend, op, "BiasGradA needs bias_grad");
        floating(backend, op, *g.bias_grad, m, "bias_grad");
    }
}

std::size_t bias_activation(const char* backend, const Buffer& x, const Buffer* bias, int cols,
                            const Buffer& y)
{
    const char* op = "bias_activation";
    const std::size_t n = x.count();
    const std::size_t rows = whole_rows(backend, op, n, cols);
    floating(backend, op, x, n, "x");
    floating(backend, op, y, n, "y");
    if (bias) floating(backend, op, *bias, std::size_t(cols), "bias");
    return rows;
}

std::size_t activation_backward(const char* backend, Activation act, const Buffer& x,
                                const Buffer& y, const Buffer& dy, int cols, const Buffer& dx)
{
    const char* op = "activation_backward";
    const std::size_t n = dy.count();
    const std::size_t rows = whole_rows(backend, op, n, cols);
    floating(backend, op, dy, n, "dy");
    floating(backend, op, dx, n, "dx");
    if (activation_backward_reads_x(act)) floating(backend, op, x, n, "x");
    if (activation_backward_reads_y(act)) floating(backend, op, y, n, "y");
    return rows;
}

void bias_grad(const char* backend, const Buffer& dy, int rows, int cols, const Buffer& out)
{
    const char* op = "bias_grad";
    require(rows >= 0 && cols >= 0, backend, op, "negative shape");
    floating(backend, op, dy, std::size_t(rows) * std::size_t(cols), "dy");
    floating(backend, op, out, std::size_t(cols), "out");
}

namespace {

void counters(const char* backend, const char* op, const Buffer& counts, std::size_t offset,
              int slots)
{
    require(counts.dtype() == DType::I32, backend, op,
            "counts must be int32 (read as uint32), got ", counts.dtype());
    element_range(backend, op, counts, offset, std::size_t(slots), true);
}

} // namespace

void value_histogram(const char* backend, const Buffer& x, const Buffer& counts, std::size_t offset)
{
    const char* op = "value_histogram";
    floating(backend, op, x, x.count(), "x");
    counters(backend, op, counts, offset, hd::k_value_slots);
}

void update_histogram(const char* backend, const Buffer& before, const Buffer& after,
                      const Buffer& grad, const Buffer& counts, std::size_t offset)
{
    const char* op = "update_histogram";
    const std::size_t n = after.count();
    require(before.count() == n && grad.count() == n, backend, op,
            "before, after and grad must have one count, got ", before.count(), ", ", n, " and ",
            grad.count());
    floating(backend, op, before, n, "before");
    floating(backend, op, after, n, "after");
    floating(backend, op, grad, n, "grad");
    counters(backend, op, counts, offset, hd::k_update_slots);
}

void copy_raw_to_host(const char* backend, const Buffer& src, std::size_t bytes)
{
    const char* op = "copy_raw_to_host_async";
    require(!is_floating(src.dtype()) && !is_fp8(src.dtype()), backend, op,
            "copies integer buffers only (a floating one's bytes differ between backends), got ",
            src.dtype());
    require(bytes <= src.count() * dtype_size(src.dtype()), backend, op, "asked for ", bytes,
            " bytes of a buffer of ", src.count() * dtype_size(src.dtype()));
}

void dropout(const char* backend, const char* op, const Buffer& in, float rate, const Buffer& out)
{
    require(rate >= 0.0f && rate <= 1.0f, backend, op, "rate must be in [0, 1], got ", rate);
    floating(backend, op, in, in.count(), "input");
    floating(backend, op, out, in.count(), "output");
}

void cross_entropy(const char* backend, const Buffer& logits, const Buffer& labels_i32, int batch,
                   int classes, const Buffer* scaler, const Buffer* dlogits, const Buffer& record,
                   std::size_t record_offset)
{
    const char* op = "cross_entropy";
    require(batch > 0 && classes > 0, backend, op, "batch and classes must be positive");
    const std::size_t n = std::size_t(batch) * std::size_t(classes);
    floating(backend, op, logits, n, "logits");
    require(labels_i32.dtype() == DType::I32 && labels_i32.count() >= std::size_t(batch), backend,
            op, "labels must be int32 with one per row");
    record_buffer(backend, op, record, record_offset);
    if (scaler) scaler_buffer(backend, op, *scaler);
    if (dlogits) {
        floating(backend, op, *dlogits, n, "dlogits");
        require(dlogits->dtype() == logits.dtype(), backend, op,
                "dlogits must have the logits' dtype");
    }
}

SlotStates param_slots(const char* backend, const std::vector<ParamSlot>& slots)
{
    const char* op = "prepare_params";
    SlotStates states;
    states.slots = slots.size();
    for (std::size_t i = 0; i < slots.size(); ++i) {
        const ParamSlot& s = slots[i];
        const SlotName which{i};
        require(s.master && s.grad, backend, op, which, "master and grad must be set");
        const std::size_t n = s.master->count();
        if (is_split_master(s)) {
            require(s.low && s.low->dtype() == DType::BF16 && s.low->count() == n &&
                        s.grad->dtype() == DType::F32,
                    backend, op, which,
                    "a split master (int16 low halves) needs a bfloat16 `low` of ", n,
                    " high halves and a float32 gradient");
        } else {
            floating(backend, op, *s.master, n, "master", which);
        }
        floating(backend, op, *s.grad, n, "grad", which);
        if (s.low) floating(backend, op, *s.low, n, "low", which);
        if (s.state1) floating(backend, op, *s.state1, n, "state1", which);
        if (s.state2) floating(backend, op, *s.state2, n, "state2", which);
        // The optimizer stores its state in state_dtype and reads it back as such.
        for (const Buffer* st : {s.state1, s.state2})
            require(!st || st->dtype() == state_dtype(s), backend, op, which,
                    "optimizer state must be ", state_dtype(s));
        if (s.fp8.w8) fp8_weights(backend, s, which);
        states.all_state1 = states.all_state1 && s.state1;
        states.all_state2 = states.all_state2 && s.state2;
    }
    return states;
}

void optimizer_step(const char* backend, const OptimizerConfig& opt, const ScalerParams& scaling,
                    const SlotStates& states, const Buffer& scaler, const Buffer& record,
                    std::size_t record_offset)
{
    const char* op = "optimizer_step";
    require(scaling.mode != LossScaleMode::Default, backend, op,
            "the loss-scale mode must be resolved");
    scaler_buffer(backend, op, scaler);
    record_buffer(backend, op, record, record_offset);
    if (states.slots == 0) return;
    if (opt.type != OptimizerType::SGD)
        require(states.all_state1 && states.all_state2, backend, op,
                "Adam needs state1 (m) and state2 (v) per slot");
    else
        require(opt.momentum == 0.0f || states.all_state1, backend, op,
                "SGD with momentum needs state1");
}

} // namespace mixlab::validate
