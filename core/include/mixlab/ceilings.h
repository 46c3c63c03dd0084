// The device's ceilings: the GEMM TFLOP/s per precision and the copy bandwidth this
// backend reaches, measured once per device by a short probe and cached in a JSON file,
// and the roofline arithmetic that compares a layer or a step with them.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/policy.h"

#include <cstddef>
#include <optional>
#include <string>

namespace mixlab {

struct Ceilings {
    std::string device_key; // what the cache is keyed by (see ceilings_device_key)
    BackendKind backend = BackendKind::Cpu;
    std::string device_name;
    // Large-GEMM throughput (2*m*n*k per second, median over repetitions); 0 where the
    // device lacks the dtype or math (bf16 and TF32 below compute capability 8.0).
    double fp32_tflops = 0;  // fp32 operands, pedantic math (no TF32)
    double tf32_tflops = 0;  // fp32 operands, TF32 tensor-core math
    double fp16_tflops = 0;  // fp16 operands, fp32 accumulate
    double bf16_tflops = 0;  // bf16 operands, fp32 accumulate
    double fp8_tflops = 0;   // E4M3 operands (TN), fp32 accumulate, bf16 out; CUDA 8.9+ only
    double copy_gbs = 0;     // device copy, bytes read plus bytes written per second
    std::string measured_at; // UTC, ISO 8601: "2026-11-29T23:59:01Z"
    // How it was measured (shown so the numbers can be judged).
    int gemm_size = 0;          // m = n = k
    std::size_t copy_bytes = 0; // size of each of the two copy buffers
    int repetitions = 0;        // timed launches per measurement (after a warm-up)
    double probe_seconds = 0;   // wall time the whole probe took
    // Not stored: where this value came from.
    bool from_cache = false;
    std::string cache_error; // non-empty when the cache could not be written
};

// Probe sizes; zero fields take the backend's defaults (CUDA: GEMM 8192^3 and 1 GiB
// copy buffers, well past launch overhead and many times the L2; CPU: 512^3 and 64 MB,
// so the probe stays well under a second there).
struct ProbeSizes {
    int gemm_size = 0;
    std::size_t copy_bytes = 0;
    int repetitions = 0;
};
ProbeSizes default_probe_sizes(const DeviceInfo& info);

// "cuda | NVIDIA H200 | driver 13.0 | cuBLAS 13.1.0" (the CPU backend adds the host's
// CPU model): a new driver or library measures again.
std::string ceilings_device_key(const DeviceInfo& info);

// Measures through the Backend API alone: one warm-up, then `repetitions` timed GEMMs
// per precision and copies, each timed with backend events; the median of each.
Ceilings probe_ceilings(Backend& backend, const ProbeSizes& sizes = {});

// $XDG_CACHE_HOME/mixlab/ceilings.json, else ~/.cache/mixlab/ceilings.json.
std::string default_ceilings_cache_path();

// The cached ceilings of this device, if the cache file holds them. A missing, corrupt or
// foreign file reads as "not cached" (never an exception).
std::optional<Ceilings> cached_ceilings(const DeviceInfo& info, const std::string& cache_path);

struct CeilingsRequest {
    bool refresh = false; // probe even when cached
    ProbeSizes sizes;     // for a probe
};
// The cached ceilings of backend's device, or a probe whose result is written to the
// cache (other devices' entries are kept; a corrupt file is replaced). A cache that
// cannot be written is reported in cache_error, not thrown: the numbers still hold.
Ceilings ceilings_for(Backend& backend, const std::string& cache_path,
                      const CeilingsRequest& request = {});

// The time a piece of work cannot beat on this device: the larger of its compute time at
// `tflops` and its memory time at `gbs`, in milliseconds. A ceiling <= 0 (unknown)
// leaves its term out.
double roofline_floor_ms(double flops, double bytes, double tflops, double gbs);

// The GEMM ceiling a policy's math runs at: fp32 -> fp32, tf32 -> tf32,
// mixed_fp16 and fp16 -> fp16, mixed_bf16 -> bf16.
double policy_tflops(const Ceilings& ceilings, Policy policy);

// One entry as a JSON object: the fields the cache stores under its key plus from_cache
// (the cache file is {"format": "mixlab-ceilings/1", "devices": {key: entry, ...}}).
std::string ceilings_to_json(const Ceilings& ceilings);

} // namespace mixlab
