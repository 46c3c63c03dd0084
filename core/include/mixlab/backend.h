// The compute backend interface: device buffers, events and the operations a training
// step is made of. Two implementations: cpu (reference, float32 math with fp16/bf16
// storage rounding emulated) and cuda (cuBLASLt + custom kernels, one stream).
//
// Every operation is enqueued in order on the backend's one stream and returns at
// once on CUDA; nothing here synchronizes except the download_* calls, synchronize()
// and Event::synchronize(). All shapes are row-major.
#pragma once
#include "mixlab/device.h"
#include "mixlab/dtype.h"
#include "mixlab/model_spec.h"
#include "mixlab/output_head.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace mixlab {

// What frees the memory a backend allocates. The backend and every Buffer it made share
// it (shared ownership), so a Buffer may outlive the Backend that allocated it: freeing
// never reaches a destroyed backend, whatever order the owners of buffers and backend
// are destroyed in.
class BufferReleaser {
public:
    virtual ~BufferReleaser() = default;
    // Returns what the backend's alloc() gave out; called by ~Buffer, so it must not throw.
    virtual void release(void* data) noexcept = 0;
};

// A device allocation, freed by what its backend gave it (BufferReleaser); move-only.
// Copying the shared owner costs one atomic increment per alloc(), and moves none: steps
// neither allocate nor move buffers. On the CPU backend every floating buffer holds
// floats whose values are already rounded to the buffer's dtype; on CUDA the bytes are
// the dtype's own.
class Buffer {
public:
    Buffer() = default;
    Buffer(std::shared_ptr<BufferReleaser> owner, void* data, std::size_t count, DType dtype)
        : m_owner(std::move(owner)), m_data(data), m_count(count), m_dtype(dtype)
    {}
    Buffer(Buffer&& other) noexcept { *this = std::move(other); }
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();

    void* data() const { return m_data; }
    std::size_t count() const { return m_count; }
    DType dtype() const { return m_dtype; }
    bool empty() const { return m_data == nullptr; }
    template <class T>
    T* as() const
    {
        return static_cast<T*>(m_data);
    }

private:
    std::shared_ptr<BufferReleaser> m_owner;
    void* m_data = nullptr;
    std::size_t m_count = 0;
    DType m_dtype = DType::F32;
};

// A point in the stream; elapsed time between two recorded events is device time.
class Event {
public:
    virtual ~Event() = default;
    virtual void record() = 0;
    virtual bool query() = 0; // true once the stream has passed it
    virtual void synchronize() = 0;
    virtual float elapsed_ms_since(const Event& start) = 0;
};

enum class Epilogue {
    None,
    Bias,      // C[i, j] += bias[j]
    BiasRelu,  // relu(C + bias)
    BiasGelu,  // gelu(C + bias) (tanh approximation)
    BiasGradA, // also bias_grad[i] = sum_k op(A)[i, k] (the dense layer's dB)
};

// C (m x n) = alpha * op(A) (m x k) . op(B) (k x n) + beta * C, with an epilogue.
// op(X) = X^T when trans_x. A and B share a dtype; C may be wider (fp32 gradients
// from 16-bit operands). bias is C's dtype; bias_grad is float32 or C's dtype.
struct GemmCall {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    const Buffer* a = nullptr;
    const Buffer* b = nullptr;
    Buffer* c = nullptr;
    float alpha = 1.0f, beta = 0.0f;
    Epilogue epilogue = Epilogue::None;
    const Buffer* bias = nullptr;
    Buffer* bias_grad = nullptr;
    MathMode math = MathMode::Pedantic;
    // fp8 operands (mixed_fp8): a and b are F8E4M3 / F8E5M2 (not both E5M2), made by
    // fp8_quantize, and op(A) . op(B) is multiplied by the two tensors' scale_inv, read
    // on the device from fp8_meta at the float indices a_scale_inv / b_scale_inv
    // (fp8_scale_inv_index), so a recorded step replays with each step's scales.
    // Epilogue None, Bias or BiasRelu only: the dense layer takes dB apart (bias_grad).
    // c is bfloat16 or float32, or fp8 (below).
    // Hopper's fp8 GEMMs read only the "TN" form (column-major A transposed, B not:
    // here trans_a == false && trans_b == true) with k, and the leading dimensions, a
    // multiple of 16; fp8_quantize writes the transposed copies that makes possible,
    // with k zero-padded to fp8_padded (zeros add nothing to a dot product).
    const Buffer* fp8_meta = nullptr;
    std::size_t a_scale_inv = 0, b_scale_inv = 0;
    // fp8 only: Hopper's fast accumulation (cuBLASLt's FAST_ACCUM), which leaves the
    // tensor cores' partial sums in their narrower accumulator instead of promoting
    // them into fp32 registers every few k-blocks. Faster; less exact over long k.
    // Transformer Engine's recipe takes it for the forward GEMM only (k = the layer's
    // inputs), never for the gradients' sums (k = the batch for dW). The CPU backend
    // accumulates in fp32 either way.
    bool fp8_fast_accum = false;
    // fp8 output (mixed_fp8: a layer's forward GEMM writing the next fp8 layer's E4M3
    // input, where a 16-bit output would be read back by a pass to be quantized): c is
    // F8E4M3 with n a multiple of 16 (cuBLASLt refuses other fp8 outputs; the layer pads
    // its units with zero weights). Each value of the epilogue's result is multiplied by
    // fp8_meta[c_scale]
    // and rounded as fp8_quantize rounds (saturating). With c_amax_on, the largest finite
    // |result| (unscaled) replaces fp8_meta[c_amax]: the tensor's current amax slot, of
    // which this GEMM is the one writer in a step (the last scale update zeroed it).
    std::size_t c_scale = 0, c_amax = 0;
    bool c_amax_on = false;
};

// ---- fp8 scaling state (mixed_fp8's delayed scaling) ----------------------------------
// One F32 buffer per network holds a block per fp8 tensor (a dense layer's input,
// weight and output gradient): the inverse of its scale (the GEMM's descale), the scale
// its values are multiplied by before rounding, the format's largest finite value, the
// amax the last update took the scale from, then the amax history, newest first, padded
// to a multiple of four floats. Slot k_fp8_history is the current step's: fp8_quantize
// folds max|x| into it. Blocks are 16-byte multiples and scale_inv comes first, so the
// descale cuBLASLt reads by pointer is 16-byte aligned. hd_math.h's fp8_update_block
// keeps the same layout (static_assert in backends/backend.cpp).
inline constexpr std::size_t k_fp8_scale_inv = 0, k_fp8_scale = 1, k_fp8_max_finite = 2,
                             k_fp8_last_amax = 3, k_fp8_history = 4;
inline std::size_t fp8_block_floats(int history_len)
{
    return k_fp8_history + (std::size_t(history_len) + 3) / 4 * 4;
}
inline std::size_t fp8_scale_inv_index(std::size_t block, int history_len)
{
    return block * fp8_block_floats(history_len) + k_fp8_scale_inv;
}
// fp8 operands are stored with their k dimension (their row length) rounded up to a
// multiple of this, the extra values zero: Hopper's fp8 GEMMs need k and the leading
// dimensions a multiple of 16, and padding in the quantize pass costs nothing a layer
// of 3000 units would notice, where refusing it would keep the layer out of fp8.
inline constexpr int k_fp8_pad = 16;
inline int fp8_padded(int n) { return (n + k_fp8_pad - 1) / k_fp8_pad * k_fp8_pad; }
// A relu gate stored as bits (fp8_quantize's relu_mask): 32-bit words (an I32 buffer) per
// row of `cols` values.
inline int relu_mask_words(int cols) { return (cols + 31) / 32; }

// Per-channel normalization applied when a batch is gathered: (x/255 - mean) / std.
struct Normalization {
    int channels = 1;
    float mean[4] = {0, 0, 0, 0};
    float inv_std[4] = {1, 1, 1, 1};
};

// Random crop after zero padding (torchvision's RandomCrop(size, padding=pad): padded
// pixels are raw 0 before normalisation) and horizontal flip, drawn per sample from
// hd::augment_draw(seed, step, sample index in the batch): the same on every backend.
struct Augmentation {
    bool random_crop = false;
    int crop_padding = 4;
    bool horizontal_flip = false;
    std::uint64_t seed = 0, step = 0;
    bool enabled() const { return random_crop || horizontal_flip; }
};

// The training step's index as the device sees it: a buffer of two int32 words
// holding a uint64 (low word first), advanced by Backend::advance_step at the end of
// each step. Ops that depend on the step (the batch's position, augmentation, dropout
// masks) read it when they run rather than taking it as an argument, so that one
// recorded step (a CUDA graph, see StepGraph) replays correctly for every step.
// `buffer` null: the ops use the host values they are given.
struct StepCounter {
    const Buffer* buffer = nullptr;
    std::int64_t steps_per_epoch = 1; // gather: the batch's position is step % this
};

// One sample's image layout (NHWC per batch).
struct ImageShape {
    int height = 1, width = 1, channels = 1;
    int size() const { return height * width * channels; }
};

// The batch as mixed_fp8's first layer reads it, when that layer is an fp8 dense layer fed
// by the input itself (gather_batch_fp8): x8 = E4M3(x * scale), batch x
// fp8_padded(sample), scale from block `block` of meta (history_len floats of history
// each); x8_t, when given (training), its transpose, sample x fp8_padded(batch);
// record_amax (training) folds the batch's amax into the block's current slot. As
// fp8_quantize would write them from the 16-bit batch.
struct Fp8Batch {
    Buffer* meta = nullptr;
    std::size_t block = 0;
    int history_len = 0;
    bool record_amax = false;
    Buffer* x8 = nullptr;
    Buffer* x8_t = nullptr;
};

// One byte transpose of Backend::fp8_transposes (the arguments of fp8_transpose).
struct Fp8Transpose {
    const Buffer* y = nullptr;
    int rows = 0, cols = 0;
    Buffer* y_t = nullptr;
    Buffer* relu_mask_out = nullptr;
};

// A 2-D convolution over NHWC tensors: x (batch, in_h, in_w, in_c), weights KRSC
// (out_c, kernel_h, kernel_w, in_c), y (batch, out_h, out_w, out_c). Cross-correlation
// (no kernel flip), symmetric zero padding, no dilation, no groups.
struct ConvGeometry {
    int batch = 0, in_h = 0, in_w = 0, in_c = 0;
    int out_h = 0, out_w = 0, out_c = 0;
    int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    bool operator==(const ConvGeometry&) const = default;

    // Elements of x, of the weights and of y.
    std::size_t x_count() const { return std::size_t(batch) * in_h * in_w * in_c; }
    std::size_t w_count() const { return std::size_t(out_c) * kernel_h * kernel_w * in_c; }
    std::size_t y_count() const { return std::size_t(batch) * out_h * out_w * out_c; }
};

// Window positions along one axis: floor((in + 2*pad - window) / stride) + 1, for
// window <= in + 2*pad.
constexpr int window_positions(int in, int pad, int window, int stride)
{
    return (in + 2 * pad - window) / stride + 1;
}

// A convolution's geometry with out_h and out_w derived from the rest.
inline ConvGeometry conv_geometry_of(int batch, int in_h, int in_w, int in_c, int out_c,
                                     int kernel_h, int kernel_w, int stride_h, int stride_w,
                                     int pad_h, int pad_w)
{
    ConvGeometry g;
    g.batch = batch, g.in_h = in_h, g.in_w = in_w, g.in_c = in_c, g.out_c = out_c;
    g.kernel_h = kernel_h, g.kernel_w = kernel_w, g.stride_h = stride_h, g.stride_w = stride_w;
    g.pad_h = pad_h, g.pad_w = pad_w;
    g.out_h = window_positions(in_h, pad_h, kernel_h, stride_h);
    g.out_w = window_positions(in_w, pad_w, kernel_w, stride_w);
    return g;
}

// What the backend chose for a convolution (once per run, cached): reported per layer.
struct ConvPlanInfo {
    // Each direction as it runs: a legacy cuDNN algorithm's name, "graph engine N [knobs]"
    // for an engine of cuDNN's graph API, either on a route's copies, or the direct kernel.
    std::string forward_algo, backward_data_algo, backward_filter_algo;
    bool tensor_cores = false;        // the chosen algorithms use tensor-core math
    std::int64_t workspace_bytes = 0; // the largest of the three
    // Each direction's time when the plan timed it (its copies included when it runs on a
    // route); 0 where nothing was timed (the CPU backend, cuDNN's heuristics).
    float forward_ms = 0, backward_data_ms = 0, backward_filter_ms = 0;
};

// Max or average pooling over NHWC windows with symmetric padding; padded positions
// never win a max and are not counted in an average (Keras's semantics). Max pooling's
// gradient goes to the first maximum of the window in row-major order.
enum class PoolMode { Max, Average };
struct PoolGeometry {
    int batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
    int window_h = 1, window_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
    bool operator==(const PoolGeometry&) const = default;

    // Elements of x and of y.
    std::size_t x_count() const { return std::size_t(batch) * in_h * in_w * channels; }
    std::size_t y_count() const { return std::size_t(batch) * out_h * out_w * channels; }
};

// A pooling geometry with out_h and out_w derived from the rest.
inline PoolGeometry pool_geometry_of(int batch, int in_h, int in_w, int channels, int window_h,
                                     int window_w, int stride_h, int stride_w, int pad_h, int pad_w)
{
    PoolGeometry g;
    g.batch = batch, g.in_h = in_h, g.in_w = in_w, g.channels = channels;
    g.window_h = window_h, g.window_w = window_w, g.stride_h = stride_h, g.stride_w = stride_w;
    g.pad_h = pad_h, g.pad_w = pad_w;
    g.out_h = window_positions(in_h, pad_h, window_h, stride_h);
    g.out_w = window_positions(in_w, pad_w, window_w, stride_w);
    return g;
}

// One LSTM layer over a whole sequence, time-major: x (steps, batch, input), y (steps,
// batch, hidden), states h and c (batch, hidden). Gates i, f, g, o (PyTorch's order,
// which is cuDNN's linear-layer order 0-3 and 4-7):
//   gates = x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh
//   c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g);  h_t = sigmoid(o) * tanh(c_t) = y_t
// The weights of one layer are one buffer, in PyTorch's flat order (cuDNN's weight space
// for a single-layer unidirectional LSTM with two bias vectors): W_ih (4*hidden, input),
// W_hh (4*hidden, hidden), b_ih (4*hidden), b_hh (4*hidden), row-major.
struct LstmShape {
    int steps = 0, batch = 0, input = 0, hidden = 0;
    bool operator==(const LstmShape&) const = default;

    std::size_t x_count() const { return std::size_t(steps) * batch * input; }
    std::size_t y_count() const { return std::size_t(steps) * batch * hidden; }
    std::size_t state_count() const { return std::size_t(batch) * hidden; }
    std::size_t weight_count() const
    {
        return 4 * std::size_t(hidden) * (std::size_t(input) + hidden + 2);
    }
    // Offsets of the four parts inside the weight buffer, in elements.
    std::size_t w_hh_offset() const { return 4 * std::size_t(hidden) * input; }
    std::size_t b_ih_offset() const { return w_hh_offset() + 4 * std::size_t(hidden) * hidden; }
    std::size_t b_hh_offset() const { return b_ih_offset() + 4 * std::size_t(hidden); }
};

// What one LSTM call site keeps from its forward pass for its backward passes (cuDNN's
// reserve space, the CPU's gate values), and its workspace: made once per run by
// Backend::lstm_prepare, so that no step allocates.
class LstmPlan {
public:
    virtual ~LstmPlan() = default;
    virtual const LstmShape& shape() const = 0;
    virtual std::int64_t device_bytes() const = 0; // reserve + workspace, for the memory total
};

// Loss-scaler state lives on the device: a float32 buffer of k_scaler_fields (counts
// are stored as floats, exact up to 2^24).
enum ScalerSlot : int {
    k_scale = 0,
    k_growth_count = 1,
    k_found_inf = 2,
    k_optimizer_steps = 3,
    k_scaler_fields = 4
};

// What the device writes for each step into a metrics ring (float32 x k_record_fields).
enum RecordField : int {
    k_rec_loss_sum = 0,   // sum of per-sample losses (fp32, unscaled)
    k_rec_correct = 1,    // number of correct predictions
    k_rec_scale = 2,      // loss scale this step used
    k_rec_overflow = 3,   // 1 when gradients held inf/NaN (the step was skipped if scaling)
    k_rec_next_scale = 4, // loss scale after the scaler update
    // L2 norm of all unscaled gradients before clipping (OptimizerConfig::clip_norm); 0
    // when clipping is off (the norm is then not computed), inf when gradients overflowed.
    k_rec_grad_norm = 5,
    k_record_fields = 6,
};

// One trainable tensor and everything the optimizer touches for it.
// A split master (OptimizerConfig's MasterWeights::Bf16Split) is an int16 `master`
// holding the low halves and a bf16 `low` holding the high halves, which the GEMMs read
// as they read a copy: together the exact fp32 master (hd_math.h's split_master), with
// fp32 gradient and state. The optimizer joins, updates in fp32 and splits again.
// mixed_fp8: a dense layer's weights as its fp8 GEMMs read them, rewritten by every
// optimizer step from the copy's new values, so that no training step spends a pass of
// its own quantizing W (optimizer_step). w8 is what fp8_quantize(low, rows, cols, meta,
// block, history_len, record_amax, w8, ...) writes: the padding past col cols is zero
// and the optimizer never writes it. The GEMMs read w8 alone, so the update does not
// store a plain (not split) low copy of such weights: it quantizes the master rounded to
// the copy's dtype, the value the copy would hold, and `low` keeps what the host last
// wrote (the network's refresh quantizes from it right after writing it).
struct Fp8Weights {
    Buffer* w8 = nullptr;   // rows x fp8_padded(cols), F8E4M3; null: not an fp8 weight
    Buffer* meta = nullptr; // the network's fp8 meta buffer
    std::size_t block = 0;  // W's block in it
    int history_len = 0;
    int rows = 0, cols = 0; // rows * cols == the master's count; cols a multiple of 4
};

struct ParamSlot {
    Buffer* master = nullptr; // fp32 master (or the fp16 weights themselves under `fp16`)
    Buffer* grad = nullptr;   // gradient, same count; fp32 except under `fp16`
    Buffer* low = nullptr;    // low-precision copy the GEMMs read; null when none
    Buffer* state1 = nullptr; // momentum / Adam m (state_dtype)
    Buffer* state2 = nullptr; // Adam v (null for SGD)
    Fp8Weights fp8 = {};      // mixed_fp8's quantized copy (needs `low`), or none
};
inline bool is_split_master(const ParamSlot& s)
{
    return s.master && s.master->dtype() == DType::I16;
}
// The optimizer state's dtype: the master's, fp32 for a split master.
inline DType state_dtype(const ParamSlot& s)
{
    return is_split_master(s) ? DType::F32 : s.master->dtype();
}

// Backend-specific preparation of a parameter list (device pointer tables on CUDA).
class ParamTable {
public:
    virtual ~ParamTable() = default;
};

struct ScalerParams {
    LossScaleMode mode = LossScaleMode::None; // resolved: Dynamic, Static or None
    float growth_factor = 2.0f, backoff_factor = 0.5f;
    int growth_interval = 2000;
};

// A training step recorded once and replayed (a CUDA graph). Replay enqueues the
// recorded operations, with the arguments they had, on the backend's stream.
class StepGraph {
public:
    virtual ~StepGraph() = default;
    // False (and nothing enqueued) when the backend moved memory the recording points
    // at (a workspace grown since): record the step again.
    virtual bool replay() = 0;
    virtual int operations() const = 0; // recorded kernels and copies
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual DeviceInfo info() const = 0;

    // ---- memory ------------------------------------------------------------------
    // Throws OutOfMemoryError with the size asked for and what is free.
    virtual Buffer alloc(std::size_t count, DType dtype) = 0;
    // Host floats converted (rounded) to the buffer's dtype.
    virtual void upload_f32(Buffer& dst, const float* src, std::size_t count,
                            std::size_t offset = 0) = 0;
    // Raw bytes for U8/I32 buffers.
    virtual void upload_raw(Buffer& dst, const void* src, std::size_t bytes) = 0;
    // Synchronous: waits for the stream, converts to float.
    virtual void download_f32(const Buffer& src, float* dst, std::size_t count,
                              std::size_t offset = 0) = 0;
    // Asynchronous copy of float32 elements into pinned host memory from host_alloc().
    virtual void copy_to_host_async(const Buffer& src, std::size_t offset, std::size_t count,
                                    float* dst) = 0;
    virtual float* host_alloc(std::size_t count) = 0; // pinned on CUDA
    virtual void host_free(float* p) = 0;
    virtual void fill(Buffer& dst, float value) = 0;
    // y = x converted to y's dtype (same count).
    virtual void cast(const Buffer& x, Buffer& y) = 0;

    // Raw bytes of an I32/I16/U8 buffer, from its start, into pinned host memory from
    // host_alloc() (which holds floats, four bytes each: any 4-byte-aligned use fits);
    // asynchronous like copy_to_host_async. The numerics' counts come back this way.
    virtual void copy_raw_to_host_async(const Buffer& src, std::size_t bytes, void* dst) = 0;

    // ---- time ---------------------------------------------------------------------
    virtual std::unique_ptr<Event> create_event() = 0;
    virtual void synchronize() = 0;
    // ---- step recording -------------------------------------------------------------
    // Between begin_capture() and end_capture() the backend records what is enqueued
    // instead of running it. begin_capture returns false where recording is not
    // possible (the CPU backend: its ops run at once); end_capture returns null with
    // the reason in *why when an operation could not be recorded. The recorded
    // operations have not run: replay() runs them.
    virtual bool begin_capture() { return false; }
    virtual std::unique_ptr<StepGraph> end_capture(std::string* why)
    {
        if (why) *why = "this backend runs each operation at once";
        return nullptr;
    }
    // counter (I32 x 2, a uint64 step) += 1, in stream order.
    virtual void advance_step(Buffer& counter) = 0;

    // Opens/closes the window an external profiler records when started with capture
    // off (ncu --profile-from-start off); TrainingRun opens it around the step named by
    // MIXLAB_PROFILE_STEP. No-op where there is no such profiler.
    virtual void profiler_window(bool open) { (void)open; }

    // ---- data ---------------------------------------------------------------------
    // out (batch, sample) = normalize(augment(images[order[offset + b]])) in out's dtype,
    // and out_labels[b] = labels[order[offset + b]] (int32). One pass, no host work.
    // With a step counter (see StepCounter), the device reads the step s when the
    // gather runs: aug.step is replaced by s and the batch starts at
    // offset + (s % steps_per_epoch) * batch.
    virtual void gather_batch(const Buffer& images_u8, const Buffer& labels_u8,
                              const Buffer& order_i32, std::int64_t offset, int batch,
                              const ImageShape& image, const Normalization& norm,
                              const Augmentation& aug, const StepCounter& counter, Buffer& out,
                              Buffer& out_labels) = 0;
    // The same batch quantized for mixed_fp8's first layer (Fp8Batch): x8 (and x8_t, the
    // amax) hold fp8_quantize of what gather_batch writes to out, whose contents are then
    // unspecified (the one pass that reads the bytes and writes x8 and x8_t leaves the
    // 16-bit batch unwritten; CUDA without augmentation). Here: gather_batch, then
    // fp8_quantize from out - the reference the fused pass is checked against.
    virtual void gather_batch_fp8(const Buffer& images_u8, const Buffer& labels_u8,
                                  const Buffer& order_i32, std::int64_t offset, int batch,
                                  const ImageShape& image, const Normalization& norm,
                                  const Augmentation& aug, const StepCounter& counter,
                                  const Fp8Batch& fp8, Buffer& out, Buffer& out_labels);

    // Language models: one truncated-BPTT window of a token stream read as `batch`
    // columns (text_corpus.h's batchify: column j is stream[j * column_len, (j + 1) *
    // column_len)), starting at row `row`; with a step counter the device reads the step s
    // and the window starts at row + (s % steps_per_epoch) * steps. ids[t * batch + j] =
    // column j at row + t and targets the token after it, for t < steps (time-major, as
    // LstmShape's x). The window must lie inside the columns (row + steps < column_len).
    virtual void gather_tokens(const Buffer& stream_i32, std::int64_t column_len, int batch,
                               int steps, std::int64_t row, const StepCounter& counter,
                               Buffer& ids_i32, Buffer& targets_i32) = 0;

    // ---- layers -------------------------------------------------------------------
    virtual void gemm(const GemmCall& call) = 0;
    // y = act(x + bias) per row of `cols` columns; bias may be null. Same count.
    virtual void bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                                 Buffer& y) = 0;
    // dx = dy * act'(.) given the layer's input x and output y (softmax: per row of cols).
    virtual void activation_backward(Activation act, const Buffer& x, const Buffer& y,
                                     const Buffer& dy, int cols, Buffer& dx) = 0;
    // bias_grad[j] = sum_i dy[i, j] over `rows` rows, into float32 or dy's dtype.
    virtual void bias_grad(const Buffer& dy, int rows, int cols, Buffer& out) = 0;
    // Inverted dropout with a counter-based mask from (seed, step, index): the same on
    // every backend. keep = hash >= rate; y = keep ? x / (1 - rate) : 0.
    // With a step counter, the device's step value replaces `step`.
    virtual void dropout_forward(const Buffer& x, float rate, std::uint64_t seed,
                                 std::uint64_t step, const StepCounter& counter, Buffer& y) = 0;
    virtual void dropout_backward(const Buffer& dy, float rate, std::uint64_t seed,
                                  std::uint64_t step, const StepCounter& counter, Buffer& dx) = 0;

    // y = act(a + b), element-wise over equal counts (the residual sum); y may alias a
    // or b. act is None or Relu.
    virtual void add_activation(Activation act, const Buffer& a, const Buffer& b, Buffer& y) = 0;

    // ---- convolution, batch norm, pooling (NHWC) ------------------------------------
    // Chooses and caches the algorithms and workspace for this geometry, dtype and
    // math; called at run start so that no step allocates. Later conv calls with the
    // same key reuse the plan (and prepare it themselves if it was never prepared).
    virtual ConvPlanInfo conv2d_prepare(const ConvGeometry& g, DType dtype, MathMode math) = 0;
    // x, w, y (and dy, dx, dw) share one floating dtype; accumulation is float32.
    // conv bias and activation are separate ops: bias_activation with cols = out_c.
    virtual void conv2d_forward(const ConvGeometry& g, const Buffer& x, const Buffer& w,
                                MathMode math, Buffer& y) = 0;
    virtual void conv2d_backward_data(const ConvGeometry& g, const Buffer& dy, const Buffer& w,
                                      MathMode math, Buffer& dx) = 0;
    // dw is overwritten (not accumulated).
    virtual void conv2d_backward_filter(const ConvGeometry& g, const Buffer& x, const Buffer& dy,
                                        MathMode math, Buffer& dw) = 0;

    // Batch normalisation over `rows` = batch*H*W rows of `channels` (NHWC). x, y, dy,
    // dx share a dtype; scale, shift, running statistics, saved statistics and the
    // parameter gradients are float32 (channels each). Statistics in float32.
    // Training: y = act((x - mean) * inv_std * scale + shift) with the batch's mean and
    // biased variance; saved_mean/saved_inv_std keep them for backward; running
    // statistics updated with `momentum` (PyTorch's convention, unbiased variance).
    // act is None or Relu (anything else is rejected): the ReLU that so often follows a
    // batch norm runs inside the normalise pass, y = max(bn, 0) rounded once to y's
    // dtype, bit for bit what a separate bias_activation(Relu) of the BN output gives.
    virtual void batchnorm_forward_train(Activation act, const Buffer& x, int rows, int channels,
                                         const Buffer& scale, const Buffer& shift, float momentum,
                                         float epsilon, Buffer& running_mean, Buffer& running_var,
                                         Buffer& saved_mean, Buffer& saved_inv_std, Buffer& y) = 0;
    // Evaluation: the running statistics; act as in training.
    virtual void batchnorm_forward_eval(Activation act, const Buffer& x, int rows, int channels,
                                        const Buffer& scale, const Buffer& shift,
                                        const Buffer& running_mean, const Buffer& running_var,
                                        float epsilon, Buffer& y) = 0;
    // dx, and dscale/dshift overwritten (not accumulated), from the saved statistics.
    // y is the forward output (after act) and dy the gradient of that output. With act
    // Relu the upstream gradient is taken as (y > 0 ? dy : 0) on the fly in every pass
    // that reads dy, so no separate activation_backward pass runs and nothing extra is
    // written; with None y is checked for shape but not read.
    virtual void batchnorm_backward(Activation act, const Buffer& x, const Buffer& y,
                                    const Buffer& dy, int rows, int channels, const Buffer& scale,
                                    const Buffer& saved_mean, const Buffer& saved_inv_std,
                                    Buffer& dx, Buffer& dscale, Buffer& dshift) = 0;

    virtual void pool_forward(PoolMode mode, const PoolGeometry& g, const Buffer& x, Buffer& y) = 0;
    // dx overwritten; max pooling reads x and y to find the winners.
    virtual void pool_backward(PoolMode mode, const PoolGeometry& g, const Buffer& x,
                               const Buffer& y, const Buffer& dy, Buffer& dx) = 0;

    // ---- sequences (language models) ------------------------------------------------
    // Embedding lookup: y (rows, dim) = table[ids[r]] (vocab, dim) per row, in y's dtype
    // (the table's). ids are int32; an id outside [0, vocab) is a bug upstream (the corpus
    // maps unknown words to <unk>) and gives a row of zeros rather than a read outside.
    virtual void embedding_forward(const Buffer& table, const Buffer& ids_i32, int rows, int dim,
                                   int vocab, Buffer& y);
    // dtable (vocab, dim, float32): dtable[v] (+)= sum of dy[r] over the rows r with
    // ids[r] == v, summed in row order on every backend (deterministic: the same bits on
    // every run). `accumulate` adds to dtable (a decoder tied to the table wrote first),
    // else dtable is overwritten, rows of ids that never occur set to zero.
    virtual void embedding_backward(const Buffer& dy, const Buffer& ids_i32, int rows, int dim,
                                    int vocab, bool accumulate, Buffer& dtable);

    // One LSTM layer (LstmShape). x, y, h0, c0, hT, cT, w and dw share the layer's dtype;
    // gate arithmetic and the cell state accumulate in float32 (TF32 or tensor cores as
    // `math` allows) and are rounded to that dtype where they are stored.
    virtual std::unique_ptr<LstmPlan> lstm_prepare(const LstmShape& s, DType dtype, MathMode math);
    // Forward over all steps from (h0, c0); writes y and the final state (hT, cT), which
    // truncated BPTT copies into the next batch's h0/c0. `training` keeps what backward
    // needs in the plan (a later backward reads the latest training forward).
    virtual void lstm_forward(LstmPlan& plan, const Buffer& x, const Buffer& h0, const Buffer& c0,
                              const Buffer& w, bool training, Buffer& y, Buffer& hT, Buffer& cT);
    // Gradients of the inputs: dx (overwritten) from dy (every step's output gradient)
    // and, when not null, the gradients arriving at the final state (dhT, dcT; null is
    // zero, as truncated BPTT cuts the graph there); dh0/dc0 written when not null.
    // Once per training forward: cuDNN's backward data overwrites what that forward kept
    // (both backends refuse a second one).
    virtual void lstm_backward_data(LstmPlan& plan, const Buffer& y, const Buffer& dy,
                                    const Buffer* dhT, const Buffer* dcT, const Buffer& w,
                                    const Buffer& h0, const Buffer& c0, Buffer& dx, Buffer* dh0,
                                    Buffer* dc0);
    // Weight gradients, ADDED into dw (w's dtype; cuDNN's only mode): zero it first for a
    // fresh gradient. Runs after lstm_backward_data of the same forward.
    virtual void lstm_backward_weights(LstmPlan& plan, const Buffer& x, const Buffer& h0,
                                       const Buffer& y, Buffer& dw);

    // ---- fp8 (mixed_fp8) -------------------------------------------------------------
    // y = fp8(x * scale), rounded to nearest even and saturating (hd_math.h's
    // float_to_fp8; y's dtype, F8E4M3 or F8E5M2, says which), for x a rows x cols
    // matrix, stored rows x fp8_padded(cols) with zeros past col cols; y_t, when given,
    // receives the transpose in the same pass, cols x fp8_padded(rows), zeros past row
    // rows. scale is block `block` of meta (history_len floats of history each). With
    // record_amax the largest finite |x| is folded (max) into the block's current amax
    // slot; evaluation passes false so it does not move the training history. col_sums,
    // when given, receives x's column sums (cols values, in its own floating dtype): a
    // dense layer's bias gradient taken in the pass that reads dZ anyway, since fp8
    // GEMMs have no bias-gradient epilogue. relu_gate, when given (x's shape and dtype),
    // makes x read as 0 wherever relu_gate <= 0: relu's backward (dZ = dY where Y > 0)
    // in the same pass, so dZ is never written in 16 bits; amax and sums see the gated x.
    // relu_mask is the same gate as bits (relu_mask_words; bit c % 32 of word
    // r * relu_mask_words(cols) + c / 32 set where the gate is > 0), read instead of a
    // 16-bit relu_gate: a sixteenth of its bytes. relu_mask_out, when given, receives
    // those bits of x itself (x > 0): the pass that quantizes a relu's output for the
    // next layer writes the gate that relu's backward reads. At most one of relu_gate,
    // relu_mask and relu_mask_out.
    virtual void fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                              int history_len, bool record_amax, Buffer* y, Buffer* y_t,
                              Buffer* col_sums, const Buffer* relu_gate,
                              const Buffer* relu_mask = nullptr, Buffer* relu_mask_out = nullptr);
    // Delayed scaling, once a step after its last fp8_quantize, for blocks [0, tensors):
    // amax = the history's max; when finite and > 0, scale = max_finite / amax / 2^margin
    // and scale_inv = 1 / scale (otherwise both stay); last_amax = amax; then every
    // history slot moves one older, the oldest dropped, and the current slot is zeroed.
    virtual void fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin);
    // y_t = y transposed, byte for byte: y as fp8_quantize writes it (rows x
    // fp8_padded(cols)), y_t cols x fp8_padded(rows) with zeros past row rows; both of one
    // fp8 dtype. The transposed weights dX's GEMM reads, from the w8 the optimizer wrote;
    // and an fp8 layer's input written by the layer before's GEMM (GemmCall::c_scale),
    // with relu_mask_out (as fp8_quantize's) its values > 0 as bits: the gate of that
    // layer's relu, read from the values the forward went on with.
    void fp8_transpose(const Buffer& y, int rows, int cols, Buffer& y_t,
                       Buffer* relu_mask_out = nullptr)
    {
        const Fp8Transpose job{&y, rows, cols, &y_t, relu_mask_out};
        fp8_transposes(std::span<const Fp8Transpose>(&job, 1));
    }
    // Several fp8_transpose at once, in one launch where the backend can (a layer's input
    // and weights: the weights' small grid would otherwise run as a wave of its own). No
    // job's y_t or relu_mask_out may be another job's buffer.
    virtual void fp8_transposes(std::span<const Fp8Transpose> jobs);

    // ---- numerics (what a precision does to the values; base/hd_math.h's slots) -------
    // counts is an I32 buffer read as uint32 counters; both ops ADD into
    // counts[offset, offset + slots), so several tensors (a layer's weights and bias) can
    // share one histogram, and never read back to the host: they can be recorded in a
    // step graph. The caller zeroes the counters (fill) before a fresh histogram; a
    // counter wraps past 2^32 - 1 additions.
    // Each element of x (any floating dtype, widened exactly to float32) counted in
    // hd::value_slot's slot: its binade floor(log2|x|) in [-149, 127], zero, +inf, -inf,
    // NaN (k_value_slots).
    virtual void value_histogram(const Buffer& x, Buffer& counts, std::size_t offset) = 0;
    // The optimizer's effect on one parameter, element by element: before (a copy taken
    // before optimizer_step), after (the parameter now) and grad (the gradient it applied,
    // any scale) share a count and may differ in floating dtype; counted in
    // hd::update_slot's slot (k_update_slots).
    virtual void update_histogram(const Buffer& before, const Buffer& after, const Buffer& grad,
                                  Buffer& counts, std::size_t offset) = 0;

    // ---- loss ---------------------------------------------------------------------
    // Cross-entropy over (batch, classes) logits computed in float32. head: Logits and
    // SoftmaxFolded use softmax; SigmoidKeras uses Keras's sigmoid-normalised form.
    // dlogits (logits' dtype) = d(mean loss)/dlogits * scaler[k_scale] (or 1 with no
    // scaler); writes loss sum and correct count into record[k_rec_loss_sum/correct].
    // dlogits may be null (evaluation); then the record fields are accumulated (+=).
    virtual void cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32,
                               int batch, int classes, const Buffer* scaler, Buffer* dlogits,
                               Buffer& record, std::size_t record_offset) = 0;

    // ---- optimizer and loss scaling -------------------------------------------------
    virtual std::unique_ptr<ParamTable> prepare_params(const std::vector<ParamSlot>& slots) = 0;
    // One fused pass: unscale gradients by 1/scale, detect inf/NaN over all of them,
    // and (unless found and scaling is on) update masters, state and low copies.
    // With opt.clip_norm > 0 the global norm of the unscaled gradients is taken in the
    // same pass and every gradient scaled by min(1, clip_norm / (norm + 1e-6)) before the
    // update (PyTorch's unscale_, clip_grad_norm_, step). Then the scaler update, and the
    // record's scale/overflow/next-scale/grad-norm fields.
    // A slot with fp8.w8 also gets w8 rewritten from its low copy's new values (a plain
    // copy's not stored: Fp8Weights) with the block's scale, and their largest finite
    // |value| folded (max) into the block's current amax slot, as fp8_quantize with
    // record_amax would: the W the next step's GEMMs read, quantized with the scale that
    // step uses (mixed_fp8 updates the scales, fp8_update_scales, before this). A skipped
    // step (an overflow under loss scaling) still rewrites w8 from the unchanged weights:
    // the scale may have moved.
    virtual void optimizer_step(ParamTable& table, const OptimizerConfig& opt,
                                const ScalerParams& scaling, Buffer& scaler, Buffer& record,
                                std::size_t record_offset) = 0;
    // Profiling: when set, optimizer_step records this event after its inf/NaN check
    // and before the update, splitting loss-scale bookkeeping from the update.
    void set_inf_check_marker(Event* e) { m_inf_check_marker = e; }

protected:
    Event* m_inf_check_marker = nullptr;
};

// "cpu", "cuda" or auto (cuda when a device is present). Throws DeviceError when cuda
// is asked for and not available. The CUDA backend lives in libmixlab_cuda.so, loaded
// on first use (MIXLAB_CUDA_MODULE, else beside libmixlab_core.so, else
// <executable>/../lib/mixlab), so a machine without NVIDIA's libraries still runs on
// the CPU.
std::unique_ptr<Backend> make_backend(DeviceChoice choice);

// One plan the CUDA backend built (a GEMM call shape or a convolution), for
// `mixlab-cli check --plans` and its JSON report.
struct PlanReport {
    std::string kind;        // "gemm" or "conv"
    std::string description; // one line
    std::string json;        // the plan's fields as one JSON object
};
// GEMM plans, then convolution plans; empty for a backend that is not the CUDA one.
std::vector<PlanReport> backend_plan_reports(const Backend& backend);

} // namespace mixlab
