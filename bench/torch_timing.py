"""What the workload scripts share: PyTorch's math settings per policy, the timed training
loop (SGD lr 0.01 momentum 0.9, cross-entropy; amp_fp16 with a GradScaler, amp_bf16
without), the whole step captured in one CUDA graph (a policy named ..._graph), median
ms/step over timed windows measured with CUDA events, and the command line.

A graphed step is PyTorch's strongest form of the same training, and MixLab's own (it
replays each step as one recorded graph): the step warmed up on a side stream, then
forward, backward and optimizer captured once and replayed, as PyTorch's "whole network
capture" recipe does. It cannot hold GradScaler's host-side checks, so amp_fp16 graphed
uses a static loss scale (the gradients unscaled before the step, no inf/NaN check: the
work of a scaler that never skips); autocast's weight-cast cache is off, as capture needs."""
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


# amp_fp16 graphed: the loss times this, the gradients times its inverse before the step.
STATIC_LOSS_SCALE = 128.0


def parse_policy(name):
    """"amp_fp16_cl_graph" -> ("amp_fp16", channels_last, graphed)."""
    graphed = name.endswith("_graph")
    name = name.removesuffix("_graph")
    channels_last = name.endswith("_cl")
    return name.removesuffix("_cl"), channels_last, graphed


def autocast(dtype, graphed):
    return torch.autocast("cuda", dtype=dtype, enabled=dtype is not None,
                          cache_enabled=not graphed)


def capture(body, warmup=3):
    """body() run warmup times on a side stream (cuDNN and cuBLAS pick their algorithms,
    the allocator settles), then captured into one CUDA graph; returns its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return graph.replay


def backward_and_step(loss, params, opt, policy, graphed, scaler, clip=None):
    """The step after the forward: amp_fp16 eager through the GradScaler (unscale, clip,
    a step it may skip), amp_fp16 graphed with STATIC_LOSS_SCALE, the others plain."""
    if scaler is not None:
        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(params, clip)
        scaler.step(opt)
        scaler.update()
        return
    if graphed and policy == "amp_fp16":
        (loss * STATIC_LOSS_SCALE).backward()
        torch._foreach_mul_([p.grad for p in params if p.grad is not None],
                            1.0 / STATIC_LOSS_SCALE)
    else:
        loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(params, clip)
    opt.step()


def median_step_ms(model, x, y, policy, windows, steps_per_window, warmup, graphed=False):
    """policy: fp32, tf32, amp_fp16 or amp_bf16 (set_math must have been called); graphed:
    the whole step replayed from one CUDA graph."""
    return timed_median(make_step(model, x, y, policy, graphed), windows, steps_per_window,
                        warmup)


def make_step(model, x, y, policy, graphed=False):
    """One training step as a callable (graphed: the replay of its capture), as
    median_step_ms times it and kernel_profile_torch.py profiles it."""
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda") if policy == "amp_fp16" and not graphed else None
    dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(policy)

    def step():
        # Inside a capture too: backward then writes fresh gradients from the graph's pool
        # (no memset), as PyTorch's whole-network capture recipe has it.
        opt.zero_grad(set_to_none=True)
        with autocast(dtype, graphed):
            loss = loss_fn(model(x), y)
        backward_and_step(loss, params, opt, policy, graphed, scaler)

    return capture(step) if graphed else step


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
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "ms_per_step": {},
           "errors": {}}
    for b in [int(v) for v in a.batches.split(",")]:
        for pol in a.policies.split(","):
            # One variant that cannot run (a capture PyTorch refuses, memory) costs its own
            # entry, not the workload's other numbers.
            try:
                ms = time_policy(pol, b, a.windows, a.steps, a.warmup)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                ms = None
                out["errors"][f"{pol}@{b}"] = str(e).splitlines()[0][:300]
            out["ms_per_step"][f"{pol}@{b}"] = ms
            torch.cuda.empty_cache()
    print(json.dumps(out))
