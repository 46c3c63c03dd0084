"""Compares the per-step losses of two mixlab-cli train JSON logs (e.g. CUDA fp32 and
CPU fp32 from the same seed). Usage: compare_losses.py A.json B.json [steps] [rtol]
Exits 1 when any of the first `steps` losses differ by more than rtol (relative)."""
import json
import sys


def losses(path):
    return [s["loss"] for s in json.load(open(path))["steps"]]


def main():
    a, b = losses(sys.argv[1]), losses(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    rtol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-3
    n = min(n, len(a), len(b))
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a[:n], b[:n]))
    print(f"first {n} step losses: max relative difference {worst:.3e} (limit {rtol:g})")
    for i in (0, n // 2, n - 1):
        print(f"  step {i + 1}: {a[i]:.6f} vs {b[i]:.6f}")
    sys.exit(0 if worst <= rtol else 1)


if __name__ == "__main__":
    main()
