"""What w1_pytorch.py and w2_pytorch.py share: PyTorch's math settings per policy, the
timed training loop (SGD lr 0.01 momentum 0.9, cross-entropy; amp_fp16 with a GradScaler,
amp_bf16 without), median ms/step over timed windows measured with CUDA events, and the command line."""
import argparse
import json
import statistics

import torch
import torch.nn as nn


def set_math(policy):
    """fp32 means TF32 off for matmuls and cuDNN; tf32 turns both on."""
    torch.backends.cuda.matmul.allow_tf32 = policy == "tf32"
    torch.backends.cudnn.allow_tf32 = policy == "tf32"
    torch.backends.cudnn.benchmark = True


def median_step_ms(model, x, y, policy, windows, steps_per_window, warmup):
    """policy: fp32, tf32, amp_fp16 or amp_bf16 (set_math must have been called)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if policy == "amp_fp16" else None
    dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(policy)

    def step():
        opt.zero_grad(set_to_none=True)
        if dtype is not None:
            with torch.autocast("cuda", dtype=dtype):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    return timed_median(step, windows, steps_per_window, warmup)


def timed_median(step, windows, steps_per_window, warmup):
    """Median ms per call of step() over timed windows of steps_per_window calls each,
    after warmup calls; CUDA events around each window."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps_per_window):
            step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / steps_per_window)
    return statistics.median(times)


def main(time_policy, batches, policies, windows, steps, warmup):
    """The command line both workload scripts share: times every policy at every batch
    with time_policy(policy, batch, windows, steps, warmup) and prints one JSON object."""
    p = argparse.ArgumentParser()
    p.add_argument("--batches", default=batches)
    p.add_argument("--policies", default=policies)
    p.add_argument("--windows", type=int, default=windows)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--warmup", type=int, default=warmup)
    a = p.parse_args()
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "ms_per_step": {}}
    for b in [int(v) for v in a.batches.split(",")]:
        for pol in a.policies.split(","):
            out["ms_per_step"][f"{pol}@{b}"] = time_policy(pol, b, a.windows, a.steps, a.warmup)
    print(json.dumps(out))
