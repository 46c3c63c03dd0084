#!/usr/bin/env python3
"""The table of bench/ab_compare.sh: per build and policy, the median over rounds of each
round's median step (the compare log's summary.median_step_ms), each round's value beside
it, the build's time over the first build's, and the first policy's time over each
policy's (a speedup, taken round by round within one process, then the median).

Usage: ab_table.py OUT_DIR NAME NAME... (reads OUT_DIR/NAME_<round>.json; writes
OUT_DIR/ab.txt and OUT_DIR/ab.json and prints the table). Exit status 1 when a log is
missing, unreadable or has a run without a time: named under the table."""
import json
import re
import statistics
import sys
from pathlib import Path


def read_rounds(out, name, problems):
    """{policy: [ms per round, in round order]} and the policy order of the first log."""
    times, order = {}, []
    logs = []
    for log in out.glob(f"{name}_*.json"):
        m = re.fullmatch(rf"{re.escape(name)}_(\d+)", log.stem)
        if m:
            logs.append((int(m.group(1)), log))
    if not logs:
        problems.append(f"{name}: no compare log ({name}_<round>.json) in {out}")
    for _, log in sorted(logs):
        try:
            data = json.loads(log.read_text())
        except (OSError, ValueError) as e:
            problems.append(f"{log.name}: unreadable ({e})")
            continue
        for run in data.get("runs", []):
            policy = run.get("policy", "?")
            ms = (run.get("summary") or {}).get("median_step_ms")
            if not ms:
                problems.append(f"{log.name}: no time for {policy} ({run.get('error', 'no summary')})")
                continue
            if policy not in order:
                order.append(policy)
            times.setdefault(policy, []).append(ms)
    return times, order


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    out, names = Path(argv[1]), argv[2:]
    problems = []
    builds = {n: read_rounds(out, n, problems) for n in names}
    policies = []
    for times, order in builds.values():
        policies += [p for p in order if p not in policies]

    rows, lines = [], []
    lines.append(f"{'policy':<12} {'build':<14} {'median ms':>9} {'/first':>7}  rounds (ms)")
    for p in policies:
        first = None
        for n in names:
            t = builds[n][0].get(p)
            if not t:
                continue
            med = statistics.median(t)
            first = first or med
            rows.append({"policy": p, "build": n, "median_ms": med, "rounds_ms": t,
                         "over_first_build": med / first})
            lines.append(f"{p:<12} {n:<14} {med:9.4f} {med / first:7.3f}  "
                         + " ".join(f"{v:.4f}" for v in t))
    speedups = []
    if len(policies) > 1:
        base = policies[0]
        lines.append("")
        lines.append(f"speedup over {base} within each run (median over rounds):")
        for n in names:
            times = builds[n][0]
            for p in policies[1:]:
                pairs = list(zip(times.get(base, []), times.get(p, [])))
                if not pairs:
                    continue
                s = statistics.median(b / v for b, v in pairs)
                speedups.append({"build": n, "policy": p, "over": base, "speedup": s})
                lines.append(f"  {n:<14} {p:<12} {s:.3f}x")
    if problems:
        lines.append("")
        lines += ["problem: " + p for p in problems]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    (out / "ab.txt").write_text(text)
    (out / "ab.json").write_text(json.dumps(
        {"builds": names, "rows": rows, "speedups": speedups, "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
