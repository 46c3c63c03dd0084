// Host-side split and join of master values (the optimizer does the same on the device).
#include "model/master_io.h"

#include "base/hd_math.h"
#include "mixlab/error.h"

#include <cstdint>
#include <string>

namespace mixlab {

namespace {

bool split(const Buffer& master) { return master.dtype() == DType::I16; }

void check_split(const Buffer& master, const Buffer* low)
{
    if (!low || low->dtype() != DType::BF16 || low->count() != master.count())
        throw Error("a split master of " + std::to_string(master.count()) +
                    " values needs a bfloat16 buffer of its high halves");
}

} // namespace

void upload_master(Backend& backend, Buffer& master, Buffer* low, const float* values,
                   std::size_t count)
{
    if (!split(master)) {
        backend.upload_f32(master, values, count);
        if (low) backend.cast(master, *low);
        return;
    }
    check_split(master, low);
    // Both halves travel as floats the upload stores exactly: the high half is a bf16
    // value (rounding it again changes nothing, inf and NaN included), the low half an
    // integer in int16's range.
    std::vector<float> hi(count), lo(count);
    for (std::size_t i = 0; i < count; ++i) {
        const hd::SplitMaster h = hd::split_master(values[i]);
        hi[i] = hd::bits_float(std::uint32_t(h.hi) << 16);
        lo[i] = float(h.lo);
    }
    backend.upload_f32(*low, hi.data(), count);
    backend.upload_f32(master, lo.data(), count);
}

std::vector<float> download_master(Backend& backend, const Buffer& master, const Buffer* low)
{
    std::vector<float> out(master.count());
    if (!split(master)) {
        backend.download_f32(master, out.data(), out.size());
        return out;
    }
    check_split(master, low);
    std::vector<float> hi(master.count());
    backend.download_f32(*low, hi.data(), hi.size());
    backend.download_f32(master, out.data(), out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = hd::join_master(std::uint16_t(hd::float_bits(hi[i]) >> 16), std::int16_t(out[i]));
    return out;
}

} // namespace mixlab
