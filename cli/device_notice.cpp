// note_cpu_fallback: says why a CUDA build trains on the CPU when the reason is
// something to install, not merely a machine without a GPU.
#include "device_notice.h"

#include <atomic>
#include <cstdio>
#include <string>

namespace mixlab::cli {

void note_cpu_fallback(DeviceChoice choice, BackendKind chosen)
{
    if (choice != DeviceChoice::Auto || chosen != BackendKind::Cpu) return;
    const std::string why = cuda_backend_unavailable_reason();
    // A build without CUDA, or no GPU here, is a normal CPU run: the device line on
    // stdout already says "cpu". Only a module that failed to load (a library missing)
    // asks the user to act, and it must not look like an error: one line, at most once.
    if (why.rfind("CUDA backend not loaded", 0) != 0) return;
    static std::atomic<bool> said{false};
    if (said.exchange(true)) return;
    std::fprintf(stderr, "mixlab-cli: %s; using the CPU backend\n", why.c_str());
    std::fflush(stderr);
}

} // namespace mixlab::cli
