// Debug hook shared by both backends: MIXLAB_POISON_BUFFERS=1 (read when a backend is
// made) fills every buffer the backend allocates with all-one bytes, NaN in float32,
// float16 and bfloat16, before anything uses it. An op that reads memory no op wrote then
// turns the run's numbers NaN or different, instead of reading whatever the allocator left
// there (often zeros on a fresh GPU, which hides the read). A run that gives the same
// losses with and without it read only written memory: the check for what
// compute-sanitizer's initcheck cannot see (stores it does not track, such as the bulk
// tensor stores of cuBLASLt's Hopper kernels).
#pragma once
#include <cstdlib>
#include <string_view>

namespace mixlab {

constexpr unsigned char k_poison_byte = 0xFF;

inline bool poison_buffers_requested()
{
    const char* v = std::getenv("MIXLAB_POISON_BUFFERS");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

} // namespace mixlab
