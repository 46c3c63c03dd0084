"""What w1_pytorch.py and w2_pytorch.py share: PyTorch's math settings per policy and the
timed training loop (SGD lr 0.01 momentum 0.9, cross-entropy; amp_fp16 with a GradScaler,
amp_bf16 without), median ms/step over timed windows measured with CUDA events."""
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
