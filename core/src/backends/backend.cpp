// Buffer ownership (freed through its backend's shared BufferReleaser) and the backend
// factory (cpu / cuda / auto, the CUDA backend from its run-time loaded module).
#include "mixlab/backend.h"

#include "mixlab/error.h"
#include "backends/backend_validate_fp8.h"
#include "backends/cpu/cpu_backend.h"
#include "base/hd_math.h"
#include "backends/cuda_module.h"

#include <string>
#include <utility>
#include <vector>

namespace mixlab {

// The fp8 meta block's layout, written twice: for the engine (backend.h) and for the
// update both backends share (hd_math.h, below the public headers).
static_assert(k_fp8_scale_inv == std::size_t(hd::k_fp8_block_scale_inv) &&
              k_fp8_scale == std::size_t(hd::k_fp8_block_scale) &&
              k_fp8_max_finite == std::size_t(hd::k_fp8_block_max_finite) &&
              k_fp8_last_amax == std::size_t(hd::k_fp8_block_last_amax) &&
              k_fp8_history == std::size_t(hd::k_fp8_block_history));

Buffer& Buffer::operator=(Buffer&& other) noexcept
{
    if (this != &other) {
        if (m_owner && m_data) m_owner->release(m_data);
        m_owner = std::move(other.m_owner); // leaves other's empty
        m_data = std::exchange(other.m_data, nullptr);
        m_count = std::exchange(other.m_count, 0);
        m_dtype = other.m_dtype;
    }
    return *this;
}

Buffer::~Buffer()
{
    if (m_owner && m_data) m_owner->release(m_data);
}

#ifdef MIXLAB_WITH_CUDA
namespace {

// Whether the CUDA backend can be used, decided once per process: the module loads and
// its probe finds a device. A GPU does not appear or vanish while MixLab runs.
struct CudaState {
    const cuda_module::Module* module = nullptr;
    int devices = 0;
    std::string reason; // "" when usable
};

const CudaState& cuda_state()
{
    static const CudaState state = [] {
        CudaState s;
        s.module = cuda_module::load();
        if (!s.module) {
            s.reason = cuda_module::load_error();
            return s;
        }
        char why[512] = {};
        s.devices = s.module->probe(why, sizeof why);
        if (s.devices <= 0) s.reason = why[0] ? why : "no CUDA device found";
        return s;
    }();
    return state;
}

} // namespace
#endif

bool cuda_backend_available()
{
#ifdef MIXLAB_WITH_CUDA
    return cuda_state().reason.empty();
#else
    return false;
#endif
}

std::string cuda_backend_unavailable_reason()
{
#ifdef MIXLAB_WITH_CUDA
    return cuda_state().reason;
#else
    return "this build of MixLab has no CUDA backend (it was configured with "
           "MIXLAB_WITH_CUDA=OFF or without the CUDA toolkit); rebuild with "
           "-DMIXLAB_WITH_CUDA=ON, or use --device cpu";
#endif
}

std::vector<PlanReport> backend_plan_reports(const Backend& backend)
{
    std::vector<PlanReport> out;
#ifdef MIXLAB_WITH_CUDA
    // Only the module can make a CUDA backend, so without it there is nothing to report.
    if (const cuda_module::Module* m = cuda_module::load()) m->plan_reports(&backend, &out);
#else
    (void)backend;
#endif
    return out;
}

std::unique_ptr<Backend> make_backend(DeviceChoice choice)
{
    switch (choice) {
    case DeviceChoice::CPU: return cpu::make_cpu_backend();
    case DeviceChoice::CUDA:
        if (!cuda_backend_available()) {
            const std::string why = cuda_backend_unavailable_reason();
            throw DeviceError(why.find("--device cpu") == std::string::npos
                                  ? why + "; or use --device cpu to run on the CPU backend"
                                  : why);
        }
        break;
    case DeviceChoice::Auto:
        if (!cuda_backend_available()) return cpu::make_cpu_backend();
        break;
    }
#ifdef MIXLAB_WITH_CUDA
    return std::unique_ptr<Backend>(cuda_state().module->make_backend());
#else
    return cpu::make_cpu_backend(); // unreachable: cuda_backend_available() is false
#endif
}

// The sequence and fp8 ops have these defaults so that a backend built before them (a
// test's fake) still compiles; the CPU and CUDA backends override every one.
namespace {
[[noreturn]] void not_available(const Backend& b, const char* op)
{
    throw DeviceError(std::string(op) + " is not available on the " +
                      std::string(backend_kind_name(b.info().backend)) + " backend");
}
} // namespace

void Backend::embedding_forward(const Buffer&, const Buffer&, int, int, int, Buffer&)
{
    not_available(*this, "embedding");
}
void Backend::embedding_backward(const Buffer&, const Buffer&, int, int, int, bool, Buffer&)
{
    not_available(*this, "embedding backward");
}
std::unique_ptr<LstmPlan> Backend::lstm_prepare(const LstmShape&, DType, MathMode)
{
    not_available(*this, "lstm");
}
void Backend::lstm_forward(LstmPlan&, const Buffer&, const Buffer&, const Buffer&, const Buffer&,
                           bool, Buffer&, Buffer&, Buffer&)
{
    not_available(*this, "lstm");
}
void Backend::lstm_backward_data(LstmPlan&, const Buffer&, const Buffer&, const Buffer*,
                                 const Buffer*, const Buffer&, const Buffer&, const Buffer&,
                                 Buffer&, Buffer*, Buffer*)
{
    not_available(*this, "lstm backward");
}
void Backend::lstm_backward_weights(LstmPlan&, const Buffer&, const Buffer&, const Buffer&, Buffer&)
{
    not_available(*this, "lstm backward");
}
void Backend::fp8_quantize(const Buffer&, int, int, Buffer&, std::size_t, int, bool, Buffer*,
                           Buffer*, Buffer*, const Buffer*, const Buffer*, Buffer*)
{
    not_available(*this, "fp8 quantize");
}
void Backend::fp8_update_scales(Buffer&, int, int, int)
{
    not_available(*this, "fp8 scale update");
}
void Backend::fp8_transposes(std::span<const Fp8Transpose>)
{
    not_available(*this, "fp8 transpose");
}

void Backend::gather_batch_fp8(const Buffer& images_u8, const Buffer& labels_u8,
                               const Buffer& order_i32, std::int64_t offset, int batch,
                               const ImageShape& image, const Normalization& norm,
                               const Augmentation& aug, const StepCounter& counter,
                               const Fp8Batch& fp8, Buffer& out, Buffer& out_labels)
{
    gather_batch(images_u8, labels_u8, order_i32, offset, batch, image, norm, aug, counter, out,
                 out_labels);
    validate::gather_batch_fp8(std::string(backend_kind_name(info().backend)).c_str(), images_u8,
                               labels_u8, order_i32, offset, batch, image, norm, aug, counter, fp8,
                               out, out_labels);
    fp8_quantize(out, batch, image.size(), *fp8.meta, fp8.block, fp8.history_len, fp8.record_amax,
                 fp8.x8, fp8.x8_t, nullptr, nullptr);
}

} // namespace mixlab
