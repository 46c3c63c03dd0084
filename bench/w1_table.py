"""Joins W1's PyTorch timings and MixLab's compare logs (same device call) into one
table of ms/step and ratios. Usage: w1_table.py RESULTS_DIR  (writes w1_table.json)."""
import json
import pathlib
import sys

PAIRS = [("fp32", "fp32"), ("tf32", "tf32"), ("mixed_fp16", "amp_fp16"), ("mixed_bf16", "amp_bf16")]


def main():
    root = pathlib.Path(sys.argv[1])
    torch = json.loads((root / "w1_pytorch.json").read_text())
    rows = []
    for log in sorted(root.glob("w1_mixlab_*.json"), key=lambda p: int(p.stem.split("_")[-1])):
        batch = int(log.stem.split("_")[-1])
        data = json.loads(log.read_text())
        ours = {r["policy"]: r["summary"]["median_step_ms"] for r in data["runs"] if r.get("summary")}
        for mine, theirs in PAIRS:
            if mine not in ours:
                continue
            t = torch["ms_per_step"].get(f"{theirs}@{batch}")
            rows.append({"batch": batch, "policy": mine, "mixlab_ms": ours[mine], "pytorch_ms": t,
                         "speedup_vs_pytorch": (t / ours[mine]) if t else None,
                         "mixed_over_fp32": ours[mine] / ours["fp32"] if "fp32" in ours else None})
    print(f"W1 on {torch['gpu']} (torch {torch['torch']}): ms/step, median of steps after warm-up")
    print(f"{'batch':>6} {'policy':<11} {'MixLab':>8} {'PyTorch':>8} {'PT/ML':>7} {'vs fp32':>8}")
    for r in rows:
        pt = f"{r['pytorch_ms']:.3f}" if r["pytorch_ms"] else "-"
        sp = f"{r['speedup_vs_pytorch']:.2f}x" if r["speedup_vs_pytorch"] else "-"
        print(f"{r['batch']:>6} {r['policy']:<11} {r['mixlab_ms']:>8.3f} {pt:>8} {sp:>7} "
              f"{r['mixed_over_fp32']:>8.2f}")
    (root / "w1_table.json").write_text(json.dumps({"gpu": torch["gpu"], "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
