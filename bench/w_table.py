"""Joins a workload's PyTorch timings and MixLab's compare logs (same device call) into
one table of ms/step and ratios. Usage: w_table.py WORKLOAD RESULTS_DIR, WORKLOAD being
w1 or w2 (reads WORKLOAD_pytorch.json and WORKLOAD_mixlab_<batch>.json, writes
WORKLOAD_table.json). PyTorch's channels_last variants (policy suffix _cl), where
measured, count as its best eager time."""
import json
import pathlib
import sys

PAIRS = [("fp32", "fp32"), ("tf32", "tf32"), ("mixed_fp16", "amp_fp16"), ("mixed_bf16", "amp_bf16")]


def main():
    work, root = sys.argv[1], pathlib.Path(sys.argv[2])
    torch = json.loads((root / f"{work}_pytorch.json").read_text())
    pt = torch["ms_per_step"]
    rows = []
    logs = sorted(root.glob(f"{work}_mixlab_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    for log in logs:
        batch = int(log.stem.split("_")[-1])
        data = json.loads(log.read_text())
        ours = {r["policy"]: r["summary"]["median_step_ms"] for r in data["runs"] if r.get("summary")}
        for mine, theirs in PAIRS:
            if mine not in ours:
                continue
            plain = pt.get(f"{theirs}@{batch}")
            cl = pt.get(f"{theirs}_cl@{batch}")
            best = min(t for t in (plain, cl) if t) if (plain or cl) else None
            rows.append({"batch": batch, "policy": mine, "mixlab_ms": ours[mine],
                         "pytorch_ms": plain, "pytorch_channels_last_ms": cl,
                         "speedup_vs_pytorch_best": (best / ours[mine]) if best else None,
                         "mixed_over_fp32": ours[mine] / ours["fp32"] if "fp32" in ours else None})
    print(f"{work.upper()} on {torch['gpu']} (torch {torch['torch']}): ms/step, median after warm-up")
    print(f"{'batch':>6} {'policy':<11} {'MixLab':>8} {'PyTorch':>8} {'PT c-last':>9} "
          f"{'PTbest/ML':>9} {'vs fp32':>8}")
    fmt = lambda v: f"{v:.3f}" if v else "-"
    for r in rows:
        sp = f"{r['speedup_vs_pytorch_best']:.2f}x" if r["speedup_vs_pytorch_best"] else "-"
        print(f"{r['batch']:>6} {r['policy']:<11} {r['mixlab_ms']:>8.3f} {fmt(r['pytorch_ms']):>8} "
              f"{fmt(r['pytorch_channels_last_ms']):>9} {sp:>9} {r['mixed_over_fp32']:>8.2f}")
    (root / f"{work}_table.json").write_text(
        json.dumps({"workload": work, "gpu": torch["gpu"], "torch": torch["torch"], "rows": rows},
                   indent=1))


if __name__ == "__main__":
    main()
