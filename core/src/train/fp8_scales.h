// mixed_fp8's scales as a run reports them: the network's fp8 meta buffer copied into a
// ring of host slots after each step (beside the step's record, so the host never waits),
// read a few steps later into the step's metrics (the range of log2(scale) across the
// tensors, the app's scale chart) and into "fp8 amax jump" warnings. Small: a tensor is
// 4 + amax_history floats.
#pragma once
#include "mixlab/trainer.h"
#include "model/network.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mixlab {

// A tensor's amax this step beyond this many times the largest of its history (what its
// scale was set from) is a jump: values that large saturate at the format's maximum
// until the history catches up. 2^4: activations and gradients drift by small factors
// from step to step; 16x is an outlier, a diverging layer or a learning rate too high.
inline constexpr float k_fp8_amax_jump = 16.0f;
// Warnings per run; one more says that later jumps go unreported.
inline constexpr int k_fp8_max_jump_events = 20;
// What every jump warning's message starts with. The warning carries its facts as data
// too (RunEvent::fp8_amax_jump); explain's record_event picks out by this prefix only the
// warnings of logs written before that.
inline constexpr std::string_view k_fp8_amax_jump_prefix = "fp8 amax jump: ";

// A jump's words after the prefix, from its facts: "<layer path> x|w|dy reached |x| ...",
// or for the trainer's last report "20 jumps reported; later ones are not". The warning's
// message is the prefix and these; explain quotes them.
std::string fp8_amax_jump_text(const Fp8AmaxJump& jump);

class Fp8ScaleWatch {
public:
    // `net` must have fp8 tensors (Network::fp8_meta() set); `ring` host slots.
    Fp8ScaleWatch(Backend& backend, Network& net, int ring);
    ~Fp8ScaleWatch();
    Fp8ScaleWatch(const Fp8ScaleWatch&) = delete;
    Fp8ScaleWatch& operator=(const Fp8ScaleWatch&) = delete;

    // Enqueues the copy of the meta buffer as the step just enqueued leaves it.
    void copy_out(int slot);
    // The slot's scales into m (fp8_log2_scale_min/max); the jump warnings into `events`.
    // Slots must be read in step order (the jump compares with the step before).
    void read(int slot, StepMetrics& m, std::vector<RunEvent>& events);

private:
    Backend& m_backend;
    Network& m_net;
    std::size_t m_floats = 0;
    float* m_host = nullptr;
    std::vector<Fp8AmaxJump> m_tensors; // per tensor: its layer and operand, for its jumps
    std::vector<float> m_previous_max;  // per tensor: its history's max after the step before
    int m_jumps_reported = 0;
};

} // namespace mixlab
