// The CUDA backend: one stream, cuBLASLt GEMMs with fused epilogues, cuDNN convolutions,
// custom kernels for everything else, and no host synchronisation inside any operation
// of a step.
#pragma once
#include "backends/backend_validate.h"
#include "backends/cuda/conv_report.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/gemm_lt.h"
#include "backends/cuda/reduce_scratch.h"
#include "mixlab/backend.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace mixlab::cuda {

class CudnnConv;

// The backend's name in validation messages (backend_validate.h).
inline constexpr const char* k_name = "cuda";

// Throws mixlab::Error("cuda backend: <op>: <what>") when ok is false: wrong sizes or
// dtypes are engine bugs, reported before anything is enqueued. `what` comes in parts
// that validate::require joins only on failure, so a check that passes builds no string.
template <class... Parts>
void require(bool ok, const char* op, const Parts&... parts)
{
    validate::require(ok, k_name, op, parts...);
}

// The backend's stream, created non-blocking so it never waits on the legacy default stream.
class Stream {
public:
    Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();
    cudaStream_t get() const { return m_s; }

private:
    cudaStream_t m_s = nullptr;
};

// What frees the CUDA backend's buffers (cudaFree, which needs no backend: the device's
// primary context outlives it), shared by the backend and its buffers (BufferReleaser).
class CudaMemory final : public BufferReleaser {
public:
    void release(void* data) noexcept override { device_free(data); }
};

class CudaBackend final : public Backend {
public:
    CudaBackend(); // the current device (0 unless the caller chose another)
    ~CudaBackend() override;

    DeviceInfo info() const override { return m_info; }

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
    void synchronize() override;
    void profiler_window(bool open) override;
    bool begin_capture() override;
    std::unique_ptr<StepGraph> end_capture(std::string* why) override;

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

    void fp8_quantize(const Buffer& x, int rows, int cols, Buffer& meta, std::size_t block,
                      int history_len, bool record_amax, Buffer* y, Buffer* y_t, Buffer* col_sums,
                      const Buffer* relu_gate, const Buffer* relu_mask,
                      Buffer* relu_mask_out) override;
    void fp8_update_scales(Buffer& meta, int tensors, int history_len, int margin) override;
    void fp8_transposes(std::span<const Fp8Transpose> jobs) override;
    void gather_batch_fp8(const Buffer& images_u8, const Buffer& labels_u8, const Buffer& order_i32,
                          std::int64_t offset, int batch, const ImageShape& image,
                          const Normalization& norm, const Augmentation& aug,
                          const StepCounter& counter, const Fp8Batch& fp8, Buffer& out,
                          Buffer& out_labels) override;

    void cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32, int batch,
                       int classes, const Buffer* scaler, Buffer* dlogits, Buffer& record,
                       std::size_t record_offset) override;

    std::unique_ptr<ParamTable> prepare_params(const std::vector<ParamSlot>& slots) override;
    void optimizer_step(ParamTable& table, const OptimizerConfig& opt, const ScalerParams& scaling,
                        Buffer& scaler, Buffer& record, std::size_t record_offset) override;

    cudaStream_t stream() const { return m_stream.get(); }
    // One entry per distinct GEMM shape run so far: fused or not, tensor cores or not.
    std::vector<GemmPlanInfo> gemm_plans() const { return m_gemm->plans(); }
    // One entry per convolution plan built so far.
    std::vector<ConvPlanRecord> conv_plans() const;

private:
    // y[0..n) = x[0..n) converted to y's dtype: a device copy where the dtypes match
    // (nothing where x is y), else the cast kernel. Arguments checked by the caller.
    void copy_or_cast(const void* x, DType tx, void* y, DType ty, std::size_t n);
    void dropout(const Buffer& x, float rate, std::uint64_t seed, std::uint64_t step,
                 const StepCounter& counter, Buffer& y, const char* op);
    // Host bytes for upload/download conversions, grown once (those calls sync anyway).
    std::vector<unsigned char>& staging(std::size_t bytes);

    int m_device = 0;
    Stream m_stream;
    DeviceInfo m_info;
    ReduceScratch m_reduce; // before m_gemm, which borrows it
    std::unique_ptr<LtGemm> m_gemm;
    std::unique_ptr<CudnnConv> m_conv; // owns the cuDNN handle, created on first use
    DeviceMemory m_loss_scratch;
    std::shared_ptr<CudaMemory> m_memory = std::make_shared<CudaMemory>();
    bool m_poison =
        false; // MIXLAB_POISON_BUFFERS (buffer_poison.h): new buffers filled with NaN bytes
    std::vector<unsigned char> m_staging;
    // MIXLAB_SEPARATE_INF_CHECK=1: the inf/NaN pass runs even where the update could
    // flag non-finite gradients itself (cuda_optimizer.cpp), for A/B runs.
    bool m_separate_inf_check = std::getenv("MIXLAB_SEPARATE_INF_CHECK") != nullptr;
};

} // namespace mixlab::cuda
