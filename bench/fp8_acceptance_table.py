#!/usr/bin/env python3
"""The summary of bench/fp8_acceptance.sh: each GPU item of the mixed_fp8 policy's
acceptance list (issue 18), what the call measured, the target and whether it is met.

- whole step: W1 batch 4096, mixed_bf16's step time over mixed_fp8's within each run
  (ab/ab.json, the median over runs); target >= 1.3x.
- GEMM kernels: the summed time of one step's GEMM kernels (kernels_<policy>/
  mixlab_kernels.csv, grouped as kernel_table.py groups them) less those both runs launch
  alike (the bf16 output layer's), bf16 over fp8; target >= 1.6x. The fp8 layers'
  quantize and transpose passes are a group of their own, shown on the next line
  (explain's per-layer times, which include them), not in the target.
- Fashion-MNIST: mixed_fp8's test accuracy against mixed_bf16's (fmnist.json), in points;
  target within 0.5.
- check: every case passed (check.json).

Usage: fp8_acceptance_table.py OUT_DIR. Prints a markdown table; exit status 1 when an
item is missing or not met."""
import json
import statistics
from collections import Counter
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_table  # noqa: E402  (bench/kernel_table.py: the kernel groups)


def load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise LookupError(f"{path.name}: {e}")


def runs_by_policy(doc, what):
    runs = {r.get("policy"): r for r in doc.get("runs", [])}
    for p in ("mixed_bf16", "mixed_fp8"):
        if p not in runs:
            raise LookupError(f"{what}: no {p} run")
        if runs[p].get("error"):
            raise LookupError(f"{what}: {p} failed: {runs[p]['error']}")
    return runs


def whole_step(out):
    ab = load(out / "ab" / "ab.json")
    s = [x["speedup"] for x in ab.get("speedups", []) if x.get("policy") == "mixed_fp8"]
    if not s:
        raise LookupError("ab.json: no mixed_fp8 speedup")
    ms = {r["policy"]: r["median_ms"] for r in ab.get("rows", []) if r.get("build") == ab["builds"][0]}
    value = statistics.median(s)
    detail = (f"mixed_bf16 {ms.get('mixed_bf16', float('nan')):.4f} ms, mixed_fp8 "
              f"{ms.get('mixed_fp8', float('nan')):.4f} ms; per build " + ", ".join(f"{v:.3f}x" for v in s))
    return value, f"{value:.4f}x", detail


def gemm_kernels(out):
    rows = {}
    for p in ("mixed_bf16", "mixed_fp8"):
        path = out / f"kernels_{p}" / "mixlab_kernels.csv"
        if not path.exists():
            raise LookupError(f"{path.parent.name}/{path.name}: not written")
        rows[p] = kernel_table.read(path)
        if not any(kernel_table.group_of(name) == "GEMM" for name, _ in rows[p]):
            raise LookupError(f"{path.parent.name}: no GEMM kernel in the profile")
    # The GEMM kernels both runs launch alike (by name: the bf16 output layer's) are not
    # fp8's; left out of both sides, one launch of each name for each one the other has.
    gemm = {p: [(n, us) for n, us in r if kernel_table.group_of(n) == "GEMM"] for p, r in rows.items()}
    shared = Counter(n for n, _ in gemm["mixed_bf16"]) & Counter(n for n, _ in gemm["mixed_fp8"])
    sums, left = {}, {}
    for p, kernels in gemm.items():
        drop = Counter(shared)
        kept, out_us = [], 0.0
        for n, us in kernels:
            if drop[n] > 0:
                drop[n] -= 1
                out_us += us
            else:
                kept.append(us)
        sums[p], left[p] = (sum(kept), len(kept)), out_us
    value = sums["mixed_bf16"][0] / sums["mixed_fp8"][0]
    detail = (f"the fp8 layers' GEMM kernels {sums['mixed_bf16'][0]:.1f} us ({sums['mixed_bf16'][1]}) "
              f"in bf16 against {sums['mixed_fp8'][0]:.1f} us ({sums['mixed_fp8'][1]}); "
              f"{sum(shared.values())} GEMM kernels both runs launch alike left out "
              f"({left['mixed_bf16']:.1f} / {left['mixed_fp8']:.1f} us); all kernels "
              f"{sum(us for _, us in rows['mixed_bf16']):.1f} against "
              f"{sum(us for _, us in rows['mixed_fp8']):.1f} us")
    return value, f"{value:.2f}x", detail


def fp8_layers(out):
    runs = runs_by_policy(load(out / "explain.json"), "explain.json")
    layers = {p: [l for l in ((runs[p].get("profile") or {}).get("layers") or []) if l.get("gemm")]
              for p in ("mixed_bf16", "mixed_fp8")}
    # fp8 runs on tensor cores only: a GEMM layer of the fp8 run that did not use them
    # stayed in bf16 (W1's 10-unit output layer).
    fp8 = {l["path"]: l["forward_ms"] + l["backward_ms"] for l in layers["mixed_fp8"] if l.get("tensor_cores")}
    bf16 = {l["path"]: l["forward_ms"] + l["backward_ms"] for l in layers["mixed_bf16"] if l["path"] in fp8}
    if not fp8 or len(bf16) != len(fp8):
        raise LookupError("explain.json: no fp8 layer with a bf16 counterpart")
    per_layer = [f"{p} {bf16[p]:.3f}/{fp8[p]:.3f} ms ({bf16[p] / fp8[p]:.2f}x)" for p in fp8]
    value = sum(bf16.values()) / sum(fp8.values())
    return value, f"{value:.2f}x", "fp8 layers, forward + backward with their passes: " + "; ".join(per_layer)


def fashion_mnist(out):
    runs = runs_by_policy(load(out / "fmnist.json"), "fmnist.json")
    acc = {}
    for p in ("mixed_bf16", "mixed_fp8"):
        a = (runs[p].get("summary") or {}).get("final_test_accuracy")
        if a is None:
            raise LookupError(f"fmnist.json: {p} has no test accuracy")
        acc[p] = 100.0 * a if a <= 1.0 else a
    gap = acc["mixed_bf16"] - acc["mixed_fp8"]
    return gap, f"{gap:+.2f} points", f"mixed_bf16 {acc['mixed_bf16']:.2f}%, mixed_fp8 {acc['mixed_fp8']:.2f}%"


def check(out):
    doc = load(out / "check.json")
    passed, failed = doc.get("passed", 0), doc.get("failed", 0)
    fp8 = [r for r in doc.get("results", []) if "fp8" in r.get("name", "")]
    return failed, f"{passed}/{passed + failed}", (
        f"seed {doc.get('seed')}; fp8 cases {sum(1 for r in fp8 if r.get('passed'))}/{len(fp8)}")


# (item, measure, target text, met(value)); met None: shown, not judged.
ITEMS = [
    ("whole step, W1 b4096, fp8 over bf16", whole_step, ">= 1.3x", lambda v: v >= 1.3),
    ("GEMM kernels, W1 b4096", gemm_kernels, ">= 1.6x", lambda v: v >= 1.6),
    ("fp8 layers with their passes (explain)", fp8_layers, "-", None),
    ("Fashion-MNIST 3 epochs, bf16 - fp8", fashion_mnist, "within 0.5 points", lambda v: abs(v) <= 0.5),
    ("mixlab-cli check", check, "all pass", lambda v: v == 0),
]


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    ok = True
    print("| item | measured | target | met | detail |")
    print("|---|---|---|---|---|")
    for name, measure, target, met in ITEMS:
        try:
            value, text, detail = measure(out)
        except (LookupError, KeyError, TypeError, ZeroDivisionError) as e:
            print(f"| {name} | missing | {target} | no | {e} |")
            ok = False
            continue
        verdict = "-" if met is None else ("yes" if met(value) else "no")
        ok = ok and verdict != "no"
        print(f"| {name} | {text} | {target} | {verdict} | {detail} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
