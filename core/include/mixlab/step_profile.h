// Where a training step's time goes: device time per phase and per top-level layer,
// from a profiling pass of a few extra steps run the way the timed steps ran (replayed
// as one CUDA graph, or op by op), with events between phases and layers.
#pragma once
#include "mixlab/device.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

enum class StepPhase : int {
    Input,    // gather + augmentation + normalisation of the batch
    Forward,  // every layer's forward pass
    Loss,     // cross-entropy and its gradient (scaled)
    Backward, // every layer's backward pass
    // The inf/NaN check over every gradient (the unscale is fused into the update); under
    // mixed_fp8 also the fp8 tensors' scale update, the other scaling bookkeeping, which
    // must come before the update (the optimizer quantizes the new weights with it).
    LossScaling,
    Optimizer, // the update of masters, state and low copies, and the scaler update
    Count
};
inline constexpr int k_step_phases = int(StepPhase::Count);
std::string_view step_phase_name(StepPhase p); // "input", "forward", ...

// One top-level layer (a residual block counts as one) or a dtype cast between layers.
struct LayerTime {
    std::string path; // "layer 3" or "cast before layer 3"
    std::string type; // "dense", "conv2d", "residual", "cast", ...
    double forward_ms = 0, backward_ms = 0;
    double flops = 0; // forward + backward, this batch
    double bytes =
        0; // estimated bytes moved, forward + backward (the byte model of analysis/layer_costs.cpp)
    bool is_gemm = false;
    bool tensor_cores = false;    // its GEMM or convolution ran on tensor cores
    std::string tensor_core_note; // why not, when it could have
};

struct StepProfile {
    int steps = 0;         // profiled steps the means are over
    bool replayed = false; // measured inside the recorded graph (as the timed steps ran)
    std::array<double, k_step_phases> phase_ms{}; // device time per phase, mean
    double device_ms = 0; // the profiled step from first to last event (sum of phases)
    double step_ms = 0;   // the timed steps' device time per step (median)
    double wall_ms = 0;   // the timed steps' host wall time per step (median of deltas)
    // Host/launch overhead: wall time per step the device did not spend on the step
    // (max(0, wall - device)); gpu_busy = device / wall, at most 1.
    double overhead_ms = 0;
    double gpu_busy_fraction = 0;
    std::vector<LayerTime> layers;
};

class JsonReader;

// The JSON form, one for the app's experiment files and `mixlab-cli explain --json`:
//   {"profiled_steps", "replayed", "phases_ms": {"input": ms, ... one per step_phase_name},
//    "sum_of_phases_ms" (device_ms), "measured_step_ms" (step_ms),
//    "wall_ms_per_step" (wall_ms), "overhead_ms", "gpu_busy_fraction",
//    "layers": [{"path", "type", "forward_ms", "backward_ms", "flops",
//                "bytes_estimate" (bytes), "gemm" (is_gemm), "tensor_cores",
//                "tensor_core_note"}]}
// The keys say what each number is where the fields' names lean on this header: device_ms
// is the phases added up, not the step's device time; step_ms beside a run's per-step
// step_ms, wall_ms beside its cumulative wall_ms and steps beside its step count would
// mislead; bytes are the byte model's estimate, not a measurement. Non-finite times null.
nlohmann::ordered_json step_profile_to_json(const StepProfile& profile);
nlohmann::ordered_json layer_time_to_json(const LayerTime& layer);
// Every field required (null reads as NaN); InputError naming the field otherwise.
StepProfile step_profile_from_json(const JsonReader& json);
LayerTime layer_time_from_json(const JsonReader& json);

} // namespace mixlab
