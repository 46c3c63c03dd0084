"""One training step of PyTorch's W1 or W2, for Nsight Compute: the variant set up as
w1_pytorch.py / w2_pytorch.py time it, warmed up, then one step between profiler start
and stop (run under `ncu --profile-from-start off`; graphed variants need
`--graph-profiling node`).
Usage: kernel_profile_torch.py w1|w2 VARIANT BATCH, e.g. w2 amp_fp16_cl_graph 128"""
import importlib
import sys

import torch

from torch_timing import make_step

workload, variant, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
setup = importlib.import_module(f"{workload}_pytorch").setup
model, x, y, base, graphed = setup(variant, batch)
step = make_step(model, x, y, base, graphed)
for _ in range(20):
    step()
torch.cuda.synchronize()
torch.cuda.profiler.start()
step()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
