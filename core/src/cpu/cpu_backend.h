// The CPU reference backend: float32 math with fp16/bf16/tf32 rounding emulated.
// Every floating buffer stores floats already rounded to its dtype; U8 and I32 buffers
// store their own type. Operations run synchronously, so events are host timestamps.
#pragma once
#include "mixlab/backend.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mixlab::cpu {

std::unique_ptr<Backend> make_cpu_backend();

class CpuBackend final : public Backend {
public:
    DeviceInfo info() const override;

    Buffer alloc(std::size_t count, DType dtype) override;
    void upload_f32(Buffer& dst, const float* src, std::size_t count, std::size_t offset) override;
    void upload_raw(Buffer& dst, const void* src, std::size_t bytes) override;
    void download_f32(const Buffer& src, float* dst, std::size_t count, std::size_t offset) override;
    void copy_to_host_async(const Buffer& src, std::size_t offset, std::size_t count,
                            float* dst) override;
    float* host_alloc(std::size_t count) override;
    void host_free(float* p) override;
    void fill(Buffer& dst, float value) override;
    void cast(const Buffer& x, Buffer& y) override;

    std::unique_ptr<Event> create_event() override;
    void synchronize() override {}

    void gather_batch(const Buffer& images_u8, const Buffer& labels_u8, const Buffer& order_i32,
                      std::int64_t offset, int batch, int sample_size, const Normalization& norm,
                      Buffer& out, Buffer& out_labels) override;

    void gemm(const GemmCall& call) override;
    void bias_activation(Activation act, const Buffer& x, const Buffer* bias, int cols,
                         Buffer& y) override;
    void activation_backward(Activation act, const Buffer& x, const Buffer& y, const Buffer& dy,
                             int cols, Buffer& dx) override;
    void bias_grad(const Buffer& dy, int rows, int cols, Buffer& out) override;
    void dropout_forward(const Buffer& x, float rate, std::uint64_t seed, std::uint64_t step,
                         Buffer& y) override;
    void dropout_backward(const Buffer& dy, float rate, std::uint64_t seed, std::uint64_t step,
                          Buffer& dx) override;

    void cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32, int batch,
                       int classes, const Buffer* scaler, Buffer* dlogits, Buffer& record,
                       std::size_t record_offset) override;

    std::unique_ptr<ParamTable> prepare_params(const std::vector<ParamSlot>& slots) override;
    void optimizer_step(ParamTable& table, const OptimizerConfig& opt, const ScalerParams& scaling,
                        Buffer& scaler, Buffer& record, std::size_t record_offset) override;

protected:
    void release(void* data) noexcept override;

private:
    // TF32-rounded GEMM operands, grown once and reused so steady-state steps do not
    // allocate (the same rule the CUDA backend keeps).
    std::vector<float> m_tf32_a, m_tf32_b;
    std::vector<float> m_row; // one row of logits (cross_entropy may run in place)
};

// ---- helpers shared by the op files ------------------------------------------------

// The backend's name in validation messages (backend_validate.h).
inline constexpr const char* k_name = "cpu";

// Throws mixlab::Error("cpu backend: <op>: <what>") when ok is false: these are
// engine bugs (wrong sizes, wrong dtypes), not user errors.
void require(bool ok, const char* op, const std::string& what);

// The float storage of a floating buffer holding at least `need` elements.
float* floats(Buffer& b, std::size_t need, const char* op, const char* name);
const float* floats(const Buffer& b, std::size_t need, const char* op, const char* name);

// Rounds n stored floats to dtype t in place: mixlab::round_span (dtype.h).
using mixlab::round_span;

// The value v takes when stored in a buffer of dtype t (skips the call for F32).
inline float stored(DType t, float v)
{
    return t == DType::F32 ? v : round_to(t, v);
}

} // namespace mixlab::cpu
