"""W2 (bench/WORKLOADS.md) in PyTorch, to its reference settings: ResNet-18 in the CIFAR
form (3x3 stem, no max-pool), 100 classes, 32x32x3 inputs already on the GPU, eager mode,
SGD(lr=0.01, momentum=0.9), cross-entropy; channels_last variants for the amp policies.
Written here (no torchvision needed). Prints one JSON object: ms/step per policy and
batch (median over timed windows, CUDA events)."""
import torch
import torch.nn as nn

from torch_timing import main, median_step_ms, parse_policy, set_math


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet18(classes=100):
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def setup(policy, batch):
    """Model, inputs and labels of one variant ("amp_fp16_cl_graph"), math set for it;
    returns (model, x, y, base policy, graphed)."""
    base, channels_last, graphed = parse_policy(policy)
    set_math(base)
    torch.manual_seed(0)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = resnet18().cuda().to(memory_format=fmt)
    x = torch.randn(batch, 3, 32, 32, device="cuda").to(memory_format=fmt)
    y = torch.randint(0, 100, (batch,), device="cuda")
    return model, x, y, base, graphed


def time_policy(policy, batch, windows, steps_per_window, warmup):
    model, x, y, base, graphed = setup(policy, batch)
    return median_step_ms(model, x, y, base, windows, steps_per_window, warmup, graphed)


if __name__ == "__main__":
    main(time_policy, "128,512",
         "fp32,tf32,amp_fp16,amp_bf16,amp_fp16_cl,amp_bf16_cl,"
         "fp32_graph,tf32_graph,amp_fp16_cl_graph,amp_bf16_cl_graph", 5, 10, 10)
