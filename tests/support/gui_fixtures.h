// The tiny model and quick CPU run the app's window-level suites train: a few seconds of
// work at most on the CPU backend (256 synthetic images, batch 32).
#pragma once

#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"

inline mixlab::ModelSpec tinyGuiModel()
{
    return mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "tiny",
        "layers": [{"type": "flatten"}, {"type": "dense", "units": 16, "activation": "relu"},
                   {"type": "dense", "units": 10}]})");
}

inline mixlab::RunConfig quickCpuConfig(int epochs)
{
    mixlab::RunConfig c;
    c.dataset.name = "synthetic";
    c.dataset.synthetic_train = 256;
    c.dataset.synthetic_test = 64;
    c.batch_size = 32;
    c.epochs = epochs;
    c.optimizer.lr = 0.05f;
    c.device = mixlab::DeviceChoice::CPU;
    c.seed = 7;
    return c;
}
