"""W1 (bench/WORKLOADS.md) in PyTorch, to its reference settings: the seed MLP on
CIFAR-10-shaped synthetic data already on the GPU, eager mode, SGD(lr=0.01,
momentum=0.9), cross-entropy on logits. Prints one JSON object: ms/step per policy
and batch (median over timed windows, CUDA events)."""
import torch
import torch.nn as nn

from torch_timing import main, median_step_ms, parse_policy, set_math


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(3072, 3000), nn.ReLU(),
                         nn.Linear(3000, 1000), nn.ReLU(), nn.Linear(1000, 10)).cuda()


def setup(policy, batch):
    """Model, inputs and labels of one variant ("amp_bf16_graph"), math set for it;
    returns (model, x, y, base policy, graphed)."""
    base, _, graphed = parse_policy(policy)
    set_math(base)
    torch.manual_seed(0)
    model = make_model()
    x = torch.randn(batch, 32, 32, 3, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    return model, x, y, base, graphed


def time_policy(policy, batch, windows, steps_per_window, warmup):
    model, x, y, base, graphed = setup(policy, batch)
    return median_step_ms(model, x, y, base, windows, steps_per_window, warmup, graphed)

if __name__ == "__main__":
    main(time_policy, "32,256,1024,4096",
         "fp32,tf32,amp_fp16,amp_bf16,fp32_graph,tf32_graph,amp_fp16_graph,amp_bf16_graph",
         7, 50, 30)
