"""Compares the per-step losses of two mixlab-cli train JSON logs (e.g. CUDA fp32 and
CPU fp32 from the same seed). Usage: compare_losses.py A.json B.json [steps] [rtol] [CONTROL.json]
Exits 1 when any of the first `steps` losses differ by more than rtol (relative), or is
not a number. With CONTROL, a second run of B's settings, the limit is instead the
difference B and CONTROL show themselves (a run that is not bit-reproducible between
processes, such as one whose algorithms are chosen by timing), and exact when they agree."""
import json
import sys


def losses(path):
    return [s["loss"] for s in json.load(open(path))["steps"]]


def main():
    a, b = losses(sys.argv[1]), losses(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    rtol = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-3
    n = min(n, len(a), len(b))
    # NaN (or null, as the log writes a non-finite loss) on either side: a read of memory
    # no op wrote, when one side ran with MIXLAB_POISON_BUFFERS=1.
    for i, (x, y) in enumerate(zip(a[:n], b[:n])):
        if x is None or y is None or x != x or y != y:
            print(f"step {i + 1}: loss {x} vs {y}: not a number")
            sys.exit(1)
    worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a[:n], b[:n]))
    if len(sys.argv) > 5:
        c = losses(sys.argv[5])
        n = min(n, len(c))
        rtol = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(c[:n], b[:n]))
        print(f"control: B and a second run of it differ by {rtol:.3e} (relative) in {n} steps")
    print(f"first {n} step losses: max relative difference {worst:.3e} (limit {rtol:g})")
    for i in (0, n // 2, n - 1):
        print(f"  step {i + 1}: {a[i]:.6f} vs {b[i]:.6f}")
    sys.exit(0 if worst <= rtol else 1)


if __name__ == "__main__":
    main()
