// CUDA backend: device, stream, memory, host transfers, fill/cast and events.
#include "backends/cuda/cuda_backend.h"

#include "backends/backend_validate.h"
#include "backends/buffer_poison.h"
#include "backends/cuda/cast_fill.cuh"
#include "backends/cuda/conv_cudnn.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cudnn_check.h"
#include "backends/cuda/cuda_event.h"
#include "backends/cuda/loss.cuh"
#include "backends/cuda/step_graph.h"
#include "base/hd_math.h"
#include "mixlab/error.h"

#include <cuda_profiler_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace mixlab::cuda {

namespace {

std::string version_string(int v) // 13000 -> "13.0"
{
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// Host value -> the dtype's bytes, rounded as the device would.
void encode(DType t, const float* src, std::size_t n, unsigned char* dst)
{
    switch (t) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); break;
    case DType::F16:
    case DType::BF16: {
        auto* out = reinterpret_cast<std::uint16_t*>(dst);
        for (std::size_t i = 0; i < n; ++i)
            out[i] = t == DType::F16 ? float_to_half_bits(src[i]) : float_to_bf16_bits(src[i]);
        break;
    }
    case DType::I32: {
        auto* out = reinterpret_cast<std::int32_t*>(dst);
        for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int32_t>(std::lrintf(src[i]));
        break;
    }
    case DType::U8:
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(std::lrintf(src[i]));
        break;
    case DType::I16: {
        auto* out = reinterpret_cast<std::int16_t*>(dst);
        for (std::size_t i = 0; i < n; ++i)
            out[i] = static_cast<std::int16_t>(round_to(DType::I16, src[i]));
        break;
    }
    // Unscaled, saturating (hd_math.h): what fp8_quantize stores with a scale of 1.
    case DType::F8E4M3:
        for (std::size_t i = 0; i < n; ++i) dst[i] = hd::float_to_fp8(src[i], hd::k_e4m3);
        break;
    case DType::F8E5M2:
        for (std::size_t i = 0; i < n; ++i) dst[i] = hd::float_to_fp8(src[i], hd::k_e5m2);
        break;
    }
}

void decode(DType t, const unsigned char* src, std::size_t n, float* dst)
{
    switch (t) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); break;
    case DType::F16:
    case DType::BF16: {
        const auto* in = reinterpret_cast<const std::uint16_t*>(src);
        for (std::size_t i = 0; i < n; ++i)
            dst[i] = t == DType::F16 ? half_bits_to_float(in[i]) : bf16_bits_to_float(in[i]);
        break;
    }
    case DType::I32: {
        const auto* in = reinterpret_cast<const std::int32_t*>(src);
        for (std::size_t i = 0; i < n; ++i) dst[i] = float(in[i]);
        break;
    }
    case DType::U8:
        for (std::size_t i = 0; i < n; ++i) dst[i] = float(src[i]);
        break;
    case DType::I16: {
        const auto* in = reinterpret_cast<const std::int16_t*>(src);
        for (std::size_t i = 0; i < n; ++i) dst[i] = float(in[i]);
        break;
    }
    // The values as stored (unscaled): byte for byte what the CPU reference holds.
    case DType::F8E4M3:
        for (std::size_t i = 0; i < n; ++i) dst[i] = hd::fp8_to_float(src[i], hd::k_e4m3);
        break;
    case DType::F8E5M2:
        for (std::size_t i = 0; i < n; ++i) dst[i] = hd::fp8_to_float(src[i], hd::k_e5m2);
        break;
    }
}

unsigned char* bytes_at(const Buffer& b, std::size_t offset)
{
    return static_cast<unsigned char*>(b.data()) + offset * dtype_size(b.dtype());
}

} // namespace

Stream::Stream() { MIXLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&m_s, cudaStreamNonBlocking)); }

Stream::~Stream()
{
    if (m_s) MIXLAB_CUDA_LOG(cudaStreamDestroy(m_s));
}

CudaBackend::CudaBackend() : m_reduce(m_stream.get())
{
    MIXLAB_CUDA_CHECK(cudaGetDevice(&m_device));
    cudaDeviceProp prop{};
    MIXLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, m_device));
    m_info.backend = BackendKind::Cuda;
    m_info.name = prop.name;
    m_info.cc_major = prop.major;
    m_info.cc_minor = prop.minor;
    m_info.memory_bytes = std::int64_t(prop.totalGlobalMem);
    m_info.tensor_cores = prop.major >= 7;
    m_info.bf16 = prop.major >= 8;
    m_info.tf32 = prop.major >= 8;
    int driver = 0, runtime = 0;
    MIXLAB_CUDA_CHECK(cudaDriverGetVersion(&driver));
    MIXLAB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    m_info.driver_version = version_string(driver);
    m_info.runtime_version = version_string(runtime);
    const std::size_t lt = cublasLtGetVersion(); // major * 10000 + minor * 100 + patch
    m_info.cublas_version = std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) +
                            "." + std::to_string(lt % 100);
    m_info.cudnn_version = cudnn_runtime_version(); // the library loaded, not the header

    GemmDevice gd;
    gd.tensor_cores = m_info.tensor_cores;
    gd.bf16 = m_info.bf16;
    gd.tf32 = m_info.tf32;
    gd.fp8 = prop.major * 10 + prop.minor >= 89; // Ada and Hopper on
    m_gemm = std::make_unique<LtGemm>(gd, m_reduce);
    m_conv = std::make_unique<CudnnConv>(stream());

    m_poison = poison_buffers_requested();
    m_loss_scratch = DeviceMemory(sizeof(LossScratch), "the loss reduction scratch");
    MIXLAB_CUDA_CHECK(cudaMemsetAsync(m_loss_scratch.get(), 0, sizeof(LossScratch), stream()));
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

CudaBackend::~CudaBackend()
{
    // Work still in flight may use the workspace and scratch freed below.
    MIXLAB_CUDA_LOG(cudaStreamSynchronize(stream()));
}

Buffer CudaBackend::alloc(std::size_t count, DType dtype)
{
    if (count == 0) return Buffer(m_memory, nullptr, 0, dtype);
    const std::size_t elem = dtype_size(dtype);
    require(count <= SIZE_MAX / elem, "alloc", count, " elements overflow size_t");
    const std::string what =
        "a buffer of " + std::to_string(count) + " " + std::string(dtype_name(dtype));
    void* p = device_malloc(count * elem, what.c_str());
    if (m_poison) {
        // Synchronous: allocation is setup, and whatever fills the buffer next (an
        // upload, a kernel) must come after the poison.
        MIXLAB_CUDA_CHECK(cudaMemsetAsync(p, k_poison_byte, count * elem, stream()));
        MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
    }
    return Buffer(m_memory, p, count, dtype);
}

std::vector<unsigned char>& CudaBackend::staging(std::size_t bytes)
{
    if (m_staging.size() < bytes) m_staging.resize(bytes);
    return m_staging;
}

void CudaBackend::upload_f32(Buffer& dst, const float* src, std::size_t count, std::size_t offset)
{
    validate::element_range(k_name, "upload_f32", dst, offset, count, true);
    if (count == 0) return;
    const std::size_t bytes = count * dtype_size(dst.dtype());
    const void* from = src;
    if (dst.dtype() != DType::F32) {
        auto& buf = staging(bytes);
        encode(dst.dtype(), src, count, buf.data());
        from = buf.data();
    }
    MIXLAB_CUDA_CHECK(
        cudaMemcpyAsync(bytes_at(dst, offset), from, bytes, cudaMemcpyHostToDevice, stream()));
    // The source (caller's or staging) must outlive the copy: uploads are setup, not steps.
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void CudaBackend::upload_raw(Buffer& dst, const void* src, std::size_t bytes)
{
    validate::upload_raw(k_name, dst, bytes);
    if (bytes == 0) return;
    MIXLAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src, bytes, cudaMemcpyHostToDevice, stream()));
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void CudaBackend::download_f32(const Buffer& src, float* dst, std::size_t count, std::size_t offset)
{
    validate::element_range(k_name, "download_f32", src, offset, count, false);
    if (count == 0) {
        synchronize();
        return;
    }
    const std::size_t bytes = count * dtype_size(src.dtype());
    void* to = dst;
    if (src.dtype() != DType::F32) to = staging(bytes).data();
    MIXLAB_CUDA_CHECK(
        cudaMemcpyAsync(to, bytes_at(src, offset), bytes, cudaMemcpyDeviceToHost, stream()));
    MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream()));
    if (src.dtype() != DType::F32) decode(src.dtype(), m_staging.data(), count, dst);
}

void CudaBackend::copy_to_host_async(const Buffer& src, std::size_t offset, std::size_t count,
                                     float* dst)
{
    require(src.dtype() == DType::F32, "copy_to_host_async", "copies float32 buffers only, got ",
            src.dtype());
    validate::element_range(k_name, "copy_to_host_async", src, offset, count, false);
    if (count == 0) return;
    MIXLAB_CUDA_CHECK(cudaMemcpyAsync(dst, src.as<float>() + offset, count * sizeof(float),
                                      cudaMemcpyDeviceToHost, stream()));
}

float* CudaBackend::host_alloc(std::size_t count)
{
    void* p = nullptr;
    const std::size_t bytes = (count ? count : 1) * sizeof(float);
    const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw OutOfMemoryError("out of pinned host memory: asked for " + std::to_string(bytes) +
                               " bytes of staging memory");
    }
    MIXLAB_CUDA_CHECK(err);
    return static_cast<float*>(p);
}

void CudaBackend::host_free(float* p)
{
    if (p) MIXLAB_CUDA_CHECK(cudaFreeHost(p));
}

void CudaBackend::fill(Buffer& dst, float value)
{
    launch_fill(dst.data(), dst.dtype(), dst.count(), value, stream());
}

void CudaBackend::cast(const Buffer& x, Buffer& y)
{
    validate::cast(k_name, x, y);
    copy_or_cast(x.data(), x.dtype(), y.data(), y.dtype(), x.count());
}

void CudaBackend::copy_or_cast(const void* x, DType tx, void* y, DType ty, std::size_t n)
{
    // Same dtype: a plain device copy, which runs at the copy engine's full bandwidth
    // (our element-wise kernel reached ~70% of it).
    if (tx == ty) {
        if (n && x != y)
            MIXLAB_CUDA_CHECK(
                cudaMemcpyAsync(y, x, n * dtype_size(tx), cudaMemcpyDeviceToDevice, stream()));
        return;
    }
    launch_cast(x, tx, y, ty, n, stream());
}

std::unique_ptr<Event> CudaBackend::create_event() { return std::make_unique<CudaEvent>(stream()); }

void CudaBackend::synchronize() { MIXLAB_CUDA_CHECK(cudaStreamSynchronize(stream())); }

bool CudaBackend::begin_capture()
{
    begin_step_capture(stream());
    return true;
}

std::unique_ptr<StepGraph> CudaBackend::end_capture(std::string* why)
{
    return end_step_capture(stream(), why);
}

void CudaBackend::profiler_window(bool open)
{
    MIXLAB_CUDA_CHECK(open ? cudaProfilerStart() : cudaProfilerStop());
}

std::vector<GemmPlanInfo> gemm_plans(const Backend& backend)
{
    const auto* cuda = dynamic_cast<const CudaBackend*>(&backend);
    return cuda ? cuda->gemm_plans() : std::vector<GemmPlanInfo>{};
}

} // namespace mixlab::cuda
