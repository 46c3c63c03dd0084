#!/usr/bin/env python3
"""The summary of bench/fp8_acceptance.sh: each GPU item of the mixed_fp8 policy's
acceptance list (issue 18), what the call measured, the target and whether it is met.

- whole step: W1 batch 4096, mixed_bf16's step time over mixed_fp8's within each run
  (ab/ab.json, the median over runs); target >= 1.3x.
- GEMM kernels: the summed time of one step's GEMM kernels (kernels_<policy>/
  mixlab_kernels.csv, grouped as kernel_table.py groups them), bf16 over fp8; target
  >= 1.6x. The fp8 layers' quantize and transpose passes are a group of their own, shown
  on the next line (explain's per-layer times, which include them), not in the target.
- Fashion-MNIST: mixed_fp8's test accuracy against mixed_bf16's (fmnist.json), in points;
  target within 0.5.
- check: every case passed (check.json).

Usage: fp8_acceptance_table.py OUT_DIR. Prints a markdown table; exit status 1 when an
item is missing or not met."""
import json
import statistics
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
    sums = {}
    for p in ("mixed_bf16", "mixed_fp8"):
        path = out / f"kernels_{p}" / "mixlab_kernels.csv"
        if not path.exists():
            raise LookupError(f"{path.parent.name}/{path.name}: not written")
        rows = kernel_table.read(path)
        gemm = [us for name, us in rows if kernel_table.group_of(name) == "GEMM"]
        if not gemm:
            raise LookupError(f"{path.parent.name}: no GEMM kernel in the profile")
        sums[p] = (sum(gemm), len(gemm), sum(us for _, us in rows))
    value = sums["mixed_bf16"][0] / sums["mixed_fp8"][0]
    detail = (f"GEMM kernels {sums['mixed_bf16'][0]:.1f} us ({sums['mixed_bf16'][1]}) against "
              f"{sums['mixed_fp8'][0]:.1f} us ({sums['mixed_fp8'][1]}); all kernels "
              f"{sums['mixed_bf16'][2]:.1f} against {sums['mixed_fp8'][2]:.1f} us")
    return value, f"{value:.2f}x", detail


def fp8_layers(out):
    runs = runs_by_policy(load(out / "explain.json"), "explain.json")
    per_layer, totals = [], {}
    for p in ("mixed_bf16", "mixed_fp8"):
        layers = [l for l in ((runs[p].get("profile") or {}).get("layers") or []) if l.get("gemm")]
        if not layers:
            raise LookupError(f"explain.json: {p} has no profiled GEMM layer")
        totals[p] = {l["path"]: l["forward_ms"] + l["backward_ms"] for l in layers}
    for path, bf16 in totals["mixed_bf16"].items():
        fp8 = totals["mixed_fp8"].get(path)
        if fp8:
            per_layer.append(f"{path} {bf16:.3f}/{fp8:.3f} ms ({bf16 / fp8:.2f}x)")
    bf16, fp8 = sum(totals["mixed_bf16"].values()), sum(totals["mixed_fp8"].values())
    return bf16 / fp8, f"{bf16 / fp8:.2f}x", "dense layers with their passes: " + "; ".join(per_layer)


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
