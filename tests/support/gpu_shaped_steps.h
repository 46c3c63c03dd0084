// Step metrics shaped like the H200 compare of issue 13 (the real app, W1 = the seed MLP,
// batch 256, 3000 steps): the first steps record the CUDA graph and time GEMM plans
// (~380 ms, then ~24 ms and ~2 ms), after which fp32 steps take 0.51 ms and mixed_fp16
// steps 0.21 ms, with ~2% jitter and one step in 200 about 15% slower. mixed_fp16's
// first step overflows at the initial scale 65536 and is skipped (scale 32768 after).
// Lets CPU-only machines check the charts on the series a GPU run gives.
#pragma once
#include "mixlab/trainer.h"

#include <QRandomGenerator>

#include <cmath>
#include <vector>

inline constexpr int k_gpuShapedBatch = 256;
inline constexpr int k_gpuShapedStepsPerEpoch = 60000 / k_gpuShapedBatch; // Fashion-MNIST
inline constexpr double k_gpuShapedWarmupMs[] = {380.0, 24.0, 1.9};

inline std::vector<mixlab::StepMetrics> gpuShapedSteps(double steadyMs, bool mixed, int steps,
                                                       quint32 seed)
{
    QRandomGenerator rng(seed);
    std::vector<mixlab::StepMetrics> out;
    double wall = 0;
    float scale = mixed ? 65536.0f : 1.0f;
    for (int i = 0; i < steps; ++i) {
        mixlab::StepMetrics m;
        m.step = i + 1;
        m.epoch = i / k_gpuShapedStepsPerEpoch + 1;
        // Jitter: a sum of uniforms, about 2% of the step; a rare slower step.
        const double jitter = 0.02 * (rng.generateDouble() + rng.generateDouble() - 1.0) * 1.7;
        double ms = i < 3 ? k_gpuShapedWarmupMs[i] * (1.0 + jitter) : steadyMs * (1.0 + jitter);
        if (i >= 3 && rng.bounded(200) == 0) ms *= 1.15;
        m.step_ms = float(ms);
        wall += ms + 0.02; // the host's share between steps
        m.wall_ms = wall;
        m.samples_per_s = k_gpuShapedBatch / (ms / 1000.0);
        m.loss = float(2.3 * std::exp(-double(m.step) / 600.0) + 0.3 + 0.1 * rng.generateDouble());
        m.accuracy =
            float(std::min(0.95, 0.1 + double(m.step) / 1500.0 + 0.05 * rng.generateDouble()));
        m.loss_scale = scale;
        m.overflow = m.skipped = mixed && i == 0;
        if (m.skipped) scale *= 0.5f;
        m.next_loss_scale = scale;
        out.push_back(m);
    }
    return out;
}
