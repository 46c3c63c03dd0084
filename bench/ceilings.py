"""The GPU's measured ceilings, for the roofline floors of bench/table.py: achieved TFLOP/s
of a large GEMM per dtype (fp32 with TF32 off, tf32, fp16, bf16, and fp8 E4M3 from compute
capability 8.9) and achieved GB/s of a
large device-to-device copy (bytes read plus bytes written), each the median of several
runs timed with CUDA events after warm-up, on random data (zeros run faster). Prints one
JSON object."""
import argparse
import json
import statistics

import torch


def timed_ms(fn, warmup, runs):
    """Median and spread of `runs` timed calls of fn, each between its own CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def gemm(name, n, warmup, runs):
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
             "bf16": torch.bfloat16}[name]
    # TF32 on only for the tf32 row: fp32 is the FMA-pipe ceiling MixLab's fp32 policy uses.
    torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    med, lo, hi = timed_ms(lambda: torch.matmul(a, b, out=c), warmup, runs)
    flops = 2.0 * n ** 3
    del a, b, c
    return {"n": n, "median_ms": med, "min_ms": lo, "max_ms": hi,
            "tflops": flops / (med * 1e-3) / 1e12, "tflops_best": flops / (lo * 1e-3) / 1e12}


def gemm_fp8(n, warmup, runs):
    """E4M3 x E4M3 -> bf16 with fp32 accumulation (fast accumulation off, as MixLab runs
    it), per-tensor scales of 1: torch._scaled_mm reads B column-major (the TN form)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(n, n, device="cuda", generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda", generator=g).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    med, lo, hi = timed_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                                    out_dtype=torch.bfloat16), warmup, runs)
    flops = 2.0 * n ** 3
    del a, b
    return {"n": n, "median_ms": med, "min_ms": lo, "max_ms": hi,
            "tflops": flops / (med * 1e-3) / 1e12, "tflops_best": flops / (lo * 1e-3) / 1e12}


def copy(mib, warmup, runs):
    # Far larger than the 60 MB L2, so every run goes to HBM.
    n = mib * (1 << 20) // 4
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    med, lo, hi = timed_ms(lambda: dst.copy_(src), warmup, runs)
    moved = 2.0 * n * 4  # read once, written once
    return {"mib": mib, "median_ms": med, "min_ms": lo, "max_ms": hi,
            "gbs": moved / (med * 1e-3) / 1e9, "gbs_best": moved / (lo * 1e-3) / 1e9}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=8192, help="GEMM size n x n x n")
    p.add_argument("--copy-mib", type=int, default=2048)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--runs", type=int, default=15)
    a = p.parse_args()
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "gemm": {}, "copy": None, "errors": []}
    for name in ("fp32", "tf32", "fp16", "bf16"):
        try:
            out["gemm"][name] = gemm(name, a.n, a.warmup, a.runs)
        except Exception as e:  # one dtype failing leaves the others measured
            out["errors"].append(f"gemm {name}: {e}")
    if torch.cuda.get_device_capability() >= (8, 9):
        try:
            out["gemm"]["fp8"] = gemm_fp8(a.n, a.warmup, a.runs)
        except Exception as e:
            out["errors"].append(f"gemm fp8: {e}")
    try:
        out["copy"] = copy(a.copy_mib, a.warmup, 3 * a.runs)
    except Exception as e:
        out["errors"].append(f"copy: {e}")
    torch.backends.cuda.matmul.allow_tf32 = False
    print(json.dumps(out))


if __name__ == "__main__":
    main()
