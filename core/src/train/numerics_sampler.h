// The numerics of a training run (mixlab/numerics.h), sampled every N steps: on a sampled
// step the trainer calls the three enqueue_* parts at their places in the step (they only
// enqueue device ops, so a sampled step can be recorded as a graph of its own and the other
// steps stay exactly as they were), then copy_out after the step; report() turns the host
// copy into a NumericsSample once the step's end event has passed. Private to the engine.
#pragma once
#include "mixlab/backend.h"
#include "mixlab/numerics.h"
#include "model/network.h"

#include <cstdint>
#include <vector>

namespace mixlab {

class NumericsSampler {
public:
    // `slots` host copies (the trainer's ring), so samples in flight never share one.
    NumericsSampler(Backend& backend, const Network& net, int every, int slots);
    ~NumericsSampler();
    NumericsSampler(const NumericsSampler&) = delete;
    NumericsSampler& operator=(const NumericsSampler&) = delete;

    // Whether the step of 0-based index `step_index` is sampled: steps N, 2N, ... (1-based).
    bool due(std::int64_t step_index) const { return (step_index + 1) % m_every == 0; }

    // After the forward pass: zeroes the counters, counts activations and weights (the
    // values this forward read).
    void enqueue_forward();
    // After the backward pass, before optimizer_step: gradients, and a copy of every
    // parameter for the update statistics.
    void enqueue_backward();
    // After optimizer_step: what it did to each parameter.
    void enqueue_update();
    // After the step: the counters into host slot `slot`, asynchronously.
    void copy_out(int slot);
    // The sample in host slot `slot`, which the device has finished writing.
    NumericsSample read(int slot, std::int64_t step, float loss_scale, bool skipped) const;

private:
    // `before` is a second copy of every master the layer updates (same count and dtype:
    // fp32 masters, or pure fp16's fp16 weights), so while numerics are on the masters'
    // memory is doubled. The copies are allocated once, by the constructor at the run's
    // start, and only when the run samples numerics at all (the trainer builds a sampler
    // only for numerics_every > 0); a split master has none (no buffer holds its fp32
    // value).
    struct Param {
        ParamSlot slot;
        Buffer before; // the masters as the step began; empty: no update statistics
    };
    struct Layer {
        std::string path, type;
        const Buffer* activation = nullptr;
        std::vector<Param> params;
        // Offsets of each histogram in the counters; -1: the layer has none.
        std::int64_t activations = -1, weights = -1, gradients = -1, updates = -1;
    };
    Backend& m_backend;
    int m_every;
    int m_slots;
    std::vector<Layer> m_layers;
    Buffer m_counts;                 // I32 (uint32 counters), every histogram of one sample
    std::uint32_t* m_host = nullptr; // m_slots copies of m_counts, pinned
};

} // namespace mixlab
