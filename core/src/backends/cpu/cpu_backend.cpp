// CPU backend: memory, host transfers, events, fill/cast and the batch gather (with
// the crop/flip augmentation of hd_math.h).
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"
#include "mixlab/error.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>

namespace mixlab::cpu {

namespace {

// Bytes one element takes in CPU storage: every floating and fp8 dtype is held as a float.
std::size_t stored_size(DType t)
{
    switch (t) {
    case DType::U8: return 1;
    case DType::I16: return 2;
    case DType::I32: return 4;
    default: return sizeof(float);
    }
}

std::int64_t physical_bytes(long pages_name)
{
    const long pages = sysconf(pages_name);
    const long page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? std::int64_t(pages) * page : 0;
}

std::string mib(double bytes)
{
    return std::to_string(static_cast<long long>(bytes / (1024.0 * 1024.0))) + " MiB";
}

// Element i of any buffer as a float (U8/I32 converted, floats as stored).
float element(const Buffer& b, std::size_t i)
{
    switch (b.dtype()) {
    case DType::U8: return float(b.as<std::uint8_t>()[i]);
    case DType::I32: return float(b.as<std::int32_t>()[i]);
    case DType::I16: return float(b.as<std::int16_t>()[i]);
    default: return b.as<float>()[i];
    }
}

// Stores v into element i of any buffer, rounded to the buffer's dtype.
void store(Buffer& b, std::size_t i, float v)
{
    switch (b.dtype()) {
    case DType::U8: b.as<std::uint8_t>()[i] = static_cast<std::uint8_t>(std::lrintf(v)); break;
    case DType::I32: b.as<std::int32_t>()[i] = static_cast<std::int32_t>(std::lrintf(v)); break;
    case DType::I16:
        b.as<std::int16_t>()[i] = static_cast<std::int16_t>(round_to(DType::I16, v));
        break;
    default: b.as<float>()[i] = round_to(b.dtype(), v); break;
    }
}

class CpuEvent final : public Event {
public:
    void record() override { m_time = std::chrono::steady_clock::now(); }
    bool query() override { return true; }
    void synchronize() override {}
    float elapsed_ms_since(const Event& start) override
    {
        const auto* s = dynamic_cast<const CpuEvent*>(&start);
        require(s != nullptr, "elapsed_ms_since", "the start event belongs to another backend");
        return std::chrono::duration<float, std::milli>(m_time - s->m_time).count();
    }

private:
    std::chrono::steady_clock::time_point m_time = std::chrono::steady_clock::now();
};

} // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

float* floats(Buffer& b, std::size_t need, const char* op, const char* name)
{
    validate::floating(k_name, op, b, need, name);
    return b.as<float>();
}

const float* floats(const Buffer& b, std::size_t need, const char* op, const char* name)
{
    return floats(const_cast<Buffer&>(b), need, op, name);
}

DeviceInfo CpuBackend::info() const
{
    DeviceInfo d;
    d.backend = BackendKind::Cpu;
    d.name = "CPU (no CUDA device)";
    d.memory_bytes = physical_bytes(_SC_PHYS_PAGES);
    return d;
}

Buffer CpuBackend::alloc(std::size_t count, DType dtype)
{
    if (count == 0) return Buffer(m_memory, nullptr, 0, dtype);
    const std::size_t elem = stored_size(dtype);
    const bool overflows = count > std::numeric_limits<std::size_t>::max() / elem;
    const double bytes = double(count) * double(elem);
    OomFaults& faults = m_memory->faults;
    if (faults.active() && !overflows)
        faults.before_alloc(count * elem,
                            std::to_string(count) + " x " + std::string(dtype_name(dtype)));
    void* p = nullptr;
    if (!overflows) {
        try {
            // 64-byte alignment lets Eigen and the compiler use aligned vector loads.
            p = ::operator new(count* elem, std::align_val_t(64));
        } catch (const std::bad_alloc&) {
            p = nullptr;
        }
    }
    if (!p) {
        const std::string exact = overflows ? std::string("more than 2^64 bytes")
                                            : std::to_string(count * elem) + " bytes";
        throw OutOfMemoryError("out of host memory: asked for " + mib(bytes) + " (" +
                               std::to_string(count) + " x " + std::string(dtype_name(dtype)) +
                               ", " + exact + ") with " +
                               mib(double(physical_bytes(_SC_AVPHYS_PAGES))) +
                               " free; use a smaller batch size or model");
    }
    faults.allocated(p, count * elem);
    if (m_poison) std::memset(p, k_poison_byte, count * elem);
    return Buffer(m_memory, p, count, dtype);
}

void CpuMemory::release(void* data) noexcept
{
    faults.released(data);
    ::operator delete(data, std::align_val_t(64));
}

void CpuBackend::upload_f32(Buffer& dst, const float* src, std::size_t count, std::size_t offset)
{
    validate::element_range(k_name, "upload_f32", dst, offset, count, true);
    if (dst.dtype() == DType::F32) {
        if (count) std::memcpy(dst.as<float>() + offset, src, count * sizeof(float));
        return;
    }
    for (std::size_t i = 0; i < count; ++i) store(dst, offset + i, src[i]);
}

void CpuBackend::upload_raw(Buffer& dst, const void* src, std::size_t bytes)
{
    validate::upload_raw(k_name, dst, bytes);
    if (bytes) std::memcpy(dst.data(), src, bytes);
}

void CpuBackend::download_f32(const Buffer& src, float* dst, std::size_t count, std::size_t offset)
{
    validate::element_range(k_name, "download_f32", src, offset, count, false);
    if (is_floating(src.dtype()) || is_fp8(src.dtype())) {
        if (count) std::memcpy(dst, src.as<float>() + offset, count * sizeof(float));
        return;
    }
    for (std::size_t i = 0; i < count; ++i) dst[i] = element(src, offset + i);
}

void CpuBackend::copy_to_host_async(const Buffer& src, std::size_t offset, std::size_t count,
                                    float* dst)
{
    download_f32(src, dst, count, offset);
}

float* CpuBackend::host_alloc(std::size_t count)
{
    try {
        return new float[count];
    } catch (const std::bad_alloc&) {
        throw OutOfMemoryError("out of host memory: asked for " +
                               mib(double(count) * sizeof(float)) + " of host staging memory");
    }
}

void CpuBackend::host_free(float* p) { delete[] p; }

void CpuBackend::fill(Buffer& dst, float value)
{
    if (is_floating(dst.dtype())) {
        const float v = round_to(dst.dtype(), value);
        float* p = dst.as<float>();
        for (std::size_t i = 0; i < dst.count(); ++i) p[i] = v;
        return;
    }
    for (std::size_t i = 0; i < dst.count(); ++i) store(dst, i, value);
}

void CpuBackend::cast(const Buffer& x, Buffer& y)
{
    validate::cast(k_name, x, y);
    for (std::size_t i = 0; i < x.count(); ++i) store(y, i, element(x, i));
}

std::unique_ptr<Event> CpuBackend::create_event() { return std::make_unique<CpuEvent>(); }

void CpuBackend::gather_tokens(const Buffer& stream_i32, std::int64_t column_len, int batch,
                               int steps, std::int64_t row, const StepCounter& counter,
                               Buffer& ids_i32, Buffer& targets_i32)
{
    validate::gather_tokens(k_name, stream_i32, column_len, batch, steps, row, counter, ids_i32,
                            targets_i32);
    // A training step's gather (evaluation passes no counter) starts each step.
    if (counter.buffer) {
        m_memory->faults.before_step();
        row += std::int64_t(read_step(counter) % std::uint64_t(counter.steps_per_epoch)) * steps;
    }
    const auto* stream = stream_i32.as<std::int32_t>();
    auto* ids = ids_i32.as<std::int32_t>();
    auto* targets = targets_i32.as<std::int32_t>();
    for (int t = 0; t < steps; ++t)
        for (int j = 0; j < batch; ++j) {
            const std::int32_t* column = stream + std::size_t(j) * std::size_t(column_len);
            const std::size_t out = std::size_t(t) * std::size_t(batch) + std::size_t(j);
            ids[out] = column[row + t];
            targets[out] = column[row + t + 1];
        }
}

void CpuBackend::gather_batch(const Buffer& images_u8, const Buffer& labels_u8,
                              const Buffer& order_i32, std::int64_t offset, int batch,
                              const ImageShape& image, const Normalization& norm,
                              const Augmentation& aug_in, const StepCounter& counter, Buffer& out,
                              Buffer& out_labels)
{
    const char* op = "gather_batch";
    validate::gather_batch(k_name, images_u8, labels_u8, order_i32, offset, batch, image, norm,
                           aug_in, counter, out, out_labels);
    // A training step's gather (evaluation passes no counter) starts each step.
    if (counter.buffer) m_memory->faults.before_step();
    Augmentation aug = aug_in;
    if (counter.buffer) { // as the CUDA kernel does with the value it reads
        aug.step = read_step(counter);
        offset += std::int64_t(aug.step % std::uint64_t(counter.steps_per_epoch)) * batch;
    }
    float* o = out.as<float>();
    const int height = image.height, width = image.width, channels = image.channels;
    const std::size_t sample_size = std::size_t(image.size());

    const auto* images = images_u8.as<std::uint8_t>();
    const auto* labels = labels_u8.as<std::uint8_t>();
    const auto* order = order_i32.as<std::int32_t>();
    auto* out_lab = out_labels.as<std::int32_t>();
    const std::size_t n_samples = labels_u8.count();
    for (int b = 0; b < batch; ++b) {
        const std::int32_t idx = order[offset + b];
        require(idx >= 0 && std::size_t(idx) < n_samples &&
                    (std::size_t(idx) + 1) * sample_size <= images_u8.count(),
                op, "sample index ", idx, " is out of range");
        const std::uint8_t* src = images + std::size_t(idx) * sample_size;
        float* dst = o + std::size_t(b) * sample_size;
        if (!aug.enabled()) {
            for (std::size_t i = 0; i < sample_size; ++i) {
                const std::size_t c = i % std::size_t(channels);
                dst[i] = (float(src[i]) / 255.0f - norm.mean[c]) * norm.inv_std[c];
            }
        } else {
            // The draw depends on the position in the batch, not on the sample's index,
            // exactly as the CUDA kernel's thread for output sample b draws it.
            const hd::AugmentDraw d =
                hd::augment_draw(aug.seed, aug.step, std::uint64_t(b), aug.crop_padding,
                                 aug.random_crop, aug.horizontal_flip);
            for (int r = 0; r < height; ++r)
                for (int col = 0; col < width; ++col) {
                    int sr = 0, sc = 0;
                    const bool inside = hd::augment_source(d, r, col, height, width, &sr, &sc);
                    const std::uint8_t* px =
                        inside ? src + (std::size_t(sr) * width + sc) * channels : nullptr;
                    float* out_px = dst + (std::size_t(r) * width + col) * channels;
                    for (int c = 0; c < channels; ++c) {
                        // Zero padding is a raw 0 pixel, normalised like any other.
                        const float raw = px ? float(px[c]) : 0.0f;
                        out_px[c] = (raw / 255.0f - norm.mean[c]) * norm.inv_std[c];
                    }
                }
        }
        round_span(out.dtype(), dst, sample_size);
        out_lab[b] = labels[idx];
    }
}

} // namespace mixlab::cpu
