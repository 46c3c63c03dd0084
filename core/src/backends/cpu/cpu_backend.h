// The CPU reference backend: float32 math with fp16/bf16/tf32/fp8 rounding emulated.
// Every floating or fp8 buffer stores floats already rounded to its dtype; U8, I16 and
// I32 buffers store their own type. Operations run synchronously, so events are host timestamps.
#pragma once
#include "backends/cpu/cpu_sgemm.h"
#include "backends/backend_validate.h"
#include "backends/buffer_poison.h"
#include "backends/fault_injection.h"
#include "mixlab/backend.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace mixlab::cpu {

std::unique_ptr<Backend> make_cpu_backend();

// What frees the CPU backend's buffers, with the fault hook's count of the bytes they hold:
// shared by the backend and its buffers (BufferReleaser), so a buffer that outlives the
// backend still returns its memory and its bytes to the hook it was counted by.
class CpuMemory final : public BufferReleaser {
public:
    // The out-of-memory test hook (fault_injection.h): off unless its variables are set.
    OomFaults faults = OomFaults::from_environment();
    void release(void* data) noexcept override;
};

class CpuBackend final : public Backend {
public:
    CpuBackend();
    DeviceInfo info() const override;

    Buffer alloc(std::size_t count, DType dtype) override;
    void upload_f32(Buffer& dst, const float* src, std::size_t count, std::size_t offset) override;
    void upload_raw(Buffer& dst, const void* src, std::size_t bytes) override;
    void download_f32(const Buffer& src, float* dst, std::size_t count,
                      std::size_t offset) override;
    void copy_to_host_async(const Buffer& src, std::size_t offset, std::size_t count,
                            float* dst) override;
    float* host_alloc(std::size_t count) override;
    void host_free(float* p) override;
    void fill(Buffer& dst, float value) override;
    void cast(const Buffer& x, Buffer& y) override;

    std::unique_ptr<Event> create_event() override;
    void synchronize() override {}

    void gather_batch(const Buffer& images_u8, const Buffer& labels_u8, const Buffer& order_i32,
                      std::int64_t offset, int batch, const ImageShape& image,
                      const Normalization& norm, const Augmentation& aug,
                      const StepCounter& counter, Buffer& out, Buffer& out_labels) override;

    void gather_tokens(const Buffer& stream_i32, std::int64_t column_len, int batch, int steps,
                       std::int64_t row, const StepCounter& counter, Buffer& ids_i32,
                       Buffer& targets_i32) override;

    void gemm(const GemmCall& call) override;
    void bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                         Buffer& y) override;
    void activation_backward(Activation act, const Buffer& x, const Buffer& y, const Buffer& dy,
                             int cols, Buffer& dx) override;
    void bias_grad(const Buffer& dy, int rows, int cols, Buffer& out) override;
    void value_histogram(const Buffer& x, Buffer& counts, std::size_t offset) override;
    void update_histogram(const Buffer& before, const Buffer& after, const Buffer& grad,
                          Buffer& counts, std::size_t offset) override;
    void copy_raw_to_host_async(const Buffer& src, std::size_t bytes, void* dst) override;
    void dropout_forward(const Buffer& x, float rate, std::uint64_t seed, std::uint64_t step,
                         const StepCounter& counter, Buffer& y) override;
    void dropout_backward(const Buffer& dy, float rate, std::uint64_t seed, std::uint64_t step,
                          const StepCounter& counter, Buffer& dx) override;
    void advance_step(Buffer& counter) override;
    void add_activation(Activation act, const Buffer& a, const Buffer& b, Buffer& y) override;

    ConvPlanInfo conv2d_prepare(const ConvGeometry& g, DType dtype, MathMode math) override;
    void conv2d_forward(const ConvGeometry& g, const Buffer& x, const Buffer& w, MathMode math,
                        Buffer& y) override;
    void conv2d_backward_data(const ConvGeometry& g, const Buffer& dy, const Buffer& w,
                              MathMode math, Buffer& dx) override;
    void conv2d_backward_filter(const ConvGeometry& g, const Buffer& x, const Buffer& dy,
                                MathMode math, Buffer& dw) override;

    void batchnorm_forward_train(Activation act, const Buffer& x, int rows, int channels,
                                 const Buffer& scale, const Buffer& shift, float momentum,
                                 float epsilon, Buffer& running_mean, Buffer& running_var,
                                 Buffer& saved_mean, Buffer& saved_inv_std, Buffer& y) override;
    void batchnorm_forward_eval(Activation act, const Buffer& x, int rows, int channels,
                                const Buffer& scale, const Buffer& shift,
                                const Buffer& running_mean, const Buffer& running_var,
                                float epsilon, Buffer& y) override;
    void batchnorm_backward(Activation act, const Buffer& x, const Buffer& y, const Buffer& dy,
                            int rows, int channels, const Buffer& scale, const Buffer& saved_mean,
                            const Buffer& saved_inv_std, Buffer& dx, Buffer& dscale,
                            Buffer& dshift) override;

    void pool_forward(PoolMode mode, const PoolGeometry& g, const Buffer& x, Buffer& y) override;
    void pool_backward(PoolMode mode, const PoolGeometry& g, const Buffer& x, const Buffer& y,
                       const Buffer& dy, Buffer& dx) override;

    // Caps a convolution's im2col scratch at `floats` per batch chunk (at least one image
    // per chunk). The default, 1 MiB, keeps a chunk's columns in L2 from im2col's write
    // to the GEMM's read (the small CNN's convolutions ran 1.6x faster than with 8 MiB);
    // tests pass 1 to force one image per chunk and so exercise the chunked accumulation.
    void set_conv_chunk_limit(std::size_t floats) { m_conv_chunk_floats = floats; }
    static constexpr std::size_t k_default_conv_chunk_floats = std::size_t(1) << 18;

    // Sequence ops: cpu_embedding.cpp and cpu_lstm.cpp (the plan holds every LSTM scratch).
    void embedding_forward(const Buffer& table, const Buffer& ids_i32, int rows, int dim, int vocab,
                           Buffer& y) override;
    void embedding_backward(const Buffer& dy, const Buffer& ids_i32, int rows, int dim, int vocab,
                            bool accumulate, Buffer& dtable) override;
    std::unique_ptr<LstmPlan> lstm_prepare(const LstmShape& s, DType dtype, MathMode math) override;
    void lstm_forward(LstmPlan& plan, const Buffer& x, const Buffer& h0, const Buffer& c0,
                      const Buffer& w, bool training, Buffer& y, Buffer& hT, Buffer& cT) override;
    void lstm_backward_data(LstmPlan& plan, const Buffer& y, const Buffer& dy, const Buffer* dhT,
                            const Buffer* dcT, const Buffer& w, const Buffer& h0, const Buffer& c0,
                            Buffer& dx, Buffer* dh0, Buffer* dc0) override;
    void lstm_backward_weights(LstmPlan& plan, const Buffer& x, const Buffer& h0, const Buffer& y,
                               Buffer& dw) override;

    // fp8 (mixed_fp8): cpu_fp8.cpp.
    void fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                      int history_len, bool record_amax, Buffer* y, Buffer* y_t, Buffer* col_sums,
                      const Buffer* relu_gate, const Buffer* relu_mask,
                      Buffer* relu_mask_out) override;
    void fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin) override;
    void fp8_transposes(std::span<const Fp8Transpose> jobs) override;

    void cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32, int batch,
                       int classes, const Buffer* scaler, Buffer* dlogits, Buffer& record,
                       std::size_t record_offset) override;

    std::unique_ptr<ParamTable> prepare_params(const std::vector<ParamSlot>& slots) override;
    void optimizer_step(ParamTable& table, const OptimizerConfig& opt, const ScalerParams& scaling,
                        Buffer& scaler, Buffer& record, std::size_t record_offset) override;

private:
    std::shared_ptr<CpuMemory> m_memory = std::make_shared<CpuMemory>();
    // MIXLAB_POISON_BUFFERS (buffer_poison.h): new buffers filled with NaN bytes.
    bool m_poison = poison_buffers_requested();
    // TF32-rounded GEMM operands, grown once and reused so steady-state steps do not
    // allocate (the same rule the CUDA backend keeps).
    std::vector<float> m_tf32_a, m_tf32_b;
    std::vector<float> m_fp8_c; // an fp8 GEMM output's fp32 result before it is quantized
    std::vector<float> m_fp8_w; // fp8 weights as their (unstored) copy holds them
    std::vector<float> m_row;   // one row of logits (cross_entropy may run in place)
    // One worker thread's (or filter-gradient lane's) convolution scratch: a chunk's
    // im2col matrix, its TF32-rounded dy, the GEMM's packing buffer and a partial filter
    // gradient.
    struct ConvScratch {
        std::vector<float> col, dy, dw;
        SgemmScratch gemm;
    };
    // The filter gradient sums over the batch, so how the batch is cut decides its bits.
    // It is cut the same way whatever the thread count: into chunks of
    // conv_filter_chunk_images, dealt in order to this many lanes, each lane summed on
    // one thread into its own partial, the partials added in lane order. Two machines
    // with different core counts then train a CNN to the same bits (the pinned traces of
    // tst_network_trace; a run resumed on another machine).
    static constexpr int k_filter_lanes = 8;
    // Convolution scratch per worker thread (at least one per lane) and the TF32-rounded
    // weights, sized by conv2d_prepare so that steps do not allocate.
    std::vector<ConvScratch> m_conv;
    std::vector<float> m_tf32_w;
    std::size_t m_conv_chunk_floats = k_default_conv_chunk_floats;
    // Images per chunk for g's forward and data gradient: enough chunks to share among
    // the threads, each within the limit, at least one image. (Their outputs are per
    // image, so the chunking does not change their bits.)
    int conv_chunk_images(const ConvGeometry& g) const;
    // Images per chunk for g's filter gradient: two chunks a lane, within the limit, at
    // least one image; independent of the thread count.
    int conv_filter_chunk_images(const ConvGeometry& g) const;
    // Grows every thread's scratch for g (and the weight copy under TF32).
    void reserve_conv(const ConvGeometry& g, MathMode math);
    // Batch-norm statistics in double, per channel (sums of up to rows values).
    std::vector<double> m_bn_sum, m_bn_sq;
    std::vector<float> m_bn_coef; // per-channel fp32 factors of the normalisation
};

// ---- helpers shared by the op files ------------------------------------------------

// The backend's name in validation messages (backend_validate.h).
inline constexpr const char* k_name = "cpu";

// Throws mixlab::Error("cpu backend: <op>: <what>") when ok is false: these are
// engine bugs (wrong sizes, wrong dtypes), not user errors. `what` comes in parts that
// validate::require joins only on failure, since some checks run once per element every
// step (a label, a sample index): require(ok, op, "label ", t, " is outside ...").
template <class... Parts>
void require(bool ok, const char* op, const Parts&... parts)
{
    validate::require(ok, k_name, op, parts...);
}

// The float storage of a floating buffer holding at least `need` elements.
float* floats(Buffer& b, std::size_t need, const char* op, const char* name);
const float* floats(const Buffer& b, std::size_t need, const char* op, const char* name);

// The step a set counter holds (its two int32 words as one uint64, low word first).
inline std::uint64_t read_step(const StepCounter& c)
{
    std::uint64_t v = 0;
    std::memcpy(&v, c.buffer->data(), sizeof v);
    return v;
}

// Rounds n stored floats to dtype t in place: mixlab::round_span (dtype.h).
using mixlab::round_span;

// The value v takes when stored in a buffer of dtype t (skips the call for F32).
inline float stored(DType t, float v) { return t == DType::F32 ? v : round_to(t, v); }

} // namespace mixlab::cpu
