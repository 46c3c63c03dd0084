#!/usr/bin/env bash
# What the app's live metrics (worker -> GUI thread -> store -> charts) cost against the
# CLI: the same run (W1, synthetic data, one policy) trained by `mixlab-cli train` and by
# the app offscreen, alternately, REPEATS times each, per policy. Issue 5's target: the
# app's wall time per step within 5% of the CLI's.
#
# Usage: bench/app_overhead.sh MIXLAB MIXLAB_CLI OUT_DIR
# The app needs Qt's offscreen platform: on a machine without Qt, unpack the bundle of
# tools/make_app_bundle.sh and set QT_PLUGIN_PATH and LD_LIBRARY_PATH as it says.
# Environment: POLICIES (default "mixed_fp16 fp32"), BATCH (256), STEPS (5000),
#   SYNTHETIC_SIZE (102400 training samples), REPEATS (2), MODEL (W1's file),
#   RUN_TIMEOUT (seconds per run, 120), DEVICE (cuda; cpu to try the script without a GPU).
# Writes OUT_DIR/app_overhead.json (every run's numbers and the ratios) and
# OUT_DIR/app_overhead.txt (one line per policy, also printed).
set -uo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 MIXLAB MIXLAB_CLI OUT_DIR" >&2
    exit 2
fi
app="$1"; cli="$2"; out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
model="${MODEL:-$here/../resources/models/seed-mlp-fixed.json}"
policies="${POLICIES:-mixed_fp16 fp32}"
batch="${BATCH:-256}"
steps="${STEPS:-5000}"
size="${SYNTHETIC_SIZE:-102400}"
repeats="${REPEATS:-2}"
limit="${RUN_TIMEOUT:-120}"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
mkdir -p "$out"

now() { date +%s.%N; }
failed=0
for pol in $policies; do
    for i in $(seq 1 "$repeats"); do
        # CLI first: its log's config (minus the model) becomes the app's experiment file,
        # so both train exactly the same run config.
        t0=$(now)
        timeout "$limit" "$cli" train --model "$model" --dataset synthetic --synthetic-size "$size" \
            --batch "$batch" --steps "$steps" --device "${DEVICE:-cuda}" --policy "$pol" \
            --log-json "$out/cli_${pol}_$i.json" > "$out/cli_${pol}_$i.log" 2>&1
        rc=$?; t1=$(now)
        echo "$t0 $t1 $rc" > "$out/cli_${pol}_$i.time"
        [[ $rc -eq 0 ]] || { echo "cli $pol #$i failed ($rc): $(tail -3 "$out/cli_${pol}_$i.log")" >&2; failed=1; continue; }
        if [[ ! -f "$out/exp_$pol.mixlab.json" ]]; then
            python3 - "$out/cli_${pol}_$i.json" "$out/exp_$pol.mixlab.json" <<'PY' || failed=1
import json, sys
log = json.load(open(sys.argv[1]))
config = {k: v for k, v in log["config"].items() if k != "model"}
exp = {"format": "mixlab-experiment/1", "model": log["config"]["model"], "config": config,
       "compare_policies": ["fp32", "mixed_fp16"], "runs": []}
json.dump(exp, open(sys.argv[2], "w"), indent=1)
PY
        fi
        t0=$(now)
        timeout "$limit" "$app" "$out/exp_$pol.mixlab.json" --start \
            --log-json "$out/app_${pol}_$i.json" --screenshot "$out/app_${pol}_$i.png" \
            > "$out/app_${pol}_$i.log" 2>&1
        rc=$?; t1=$(now)
        echo "$t0 $t1 $rc" > "$out/app_${pol}_$i.time"
        [[ $rc -eq 0 && -f "$out/app_${pol}_$i.json" ]] || { echo "app $pol #$i failed ($rc): $(tail -3 "$out/app_${pol}_$i.log")" >&2; failed=1; }
    done
done

python3 - "$out" "$policies" "$repeats" "$batch" "$steps" <<'PY'
import json, os, statistics, sys
root, policies, repeats = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
batch, steps = int(sys.argv[4]), int(sys.argv[5])

def run_numbers(path):
    """One log's numbers: the summary of its (only) run, and the step table."""
    d = json.load(open(path))
    run = d["runs"][0] if d.get("kind") == "compare" else d
    s, rows = run["summary"], run["steps"]
    n = s["steps"]
    times = open(path[:-5] + ".time").read().split()
    return {
        "steps": n,
        "policy": run.get("policy", d["config"].get("policy")),
        "median_step_ms": s["median_step_ms"],          # device time, warm-up left out
        "wall_ms_per_step": 1000.0 * s["wall_seconds"] / n,  # the run's own wall clock
        "last_step_wall_ms_per_step": rows[-1]["wall_ms"] / rows[-1]["step"],
        # Over steps 11..n only: start-up (first launches, allocations) left out.
        "steady_wall_ms_per_step": (rows[-1]["wall_ms"] - rows[9]["wall_ms"]) /
                                   (rows[-1]["step"] - rows[9]["step"]),
        "process_seconds": float(times[1]) - float(times[0]),
    }

result = {"batch": batch, "steps": steps, "repeats": repeats, "policies": {}}
lines = []
for pol in policies:
    per = {"cli": [], "app": []}
    for who in per:
        for i in range(1, repeats + 1):
            p = f"{root}/{who}_{pol}_{i}.json"
            if os.path.exists(p):
                try:
                    per[who].append(run_numbers(p))
                except (KeyError, IndexError, TypeError, ValueError) as e:
                    print(f"{p}: unreadable ({e})", file=sys.stderr)
    entry = {"cli": per["cli"], "app": per["app"]}
    if per["cli"] and per["app"]:
        def mean(who, key):
            return statistics.mean(r[key] for r in per[who])
        for key in ("median_step_ms", "wall_ms_per_step", "steady_wall_ms_per_step"):
            entry[key] = {"cli": mean("cli", key), "app": mean("app", key),
                          "app_over_cli": mean("app", key) / mean("cli", key)}
        d, w, sw = entry["median_step_ms"], entry["wall_ms_per_step"], entry["steady_wall_ms_per_step"]
        lines.append(f"{pol} b{batch} x{steps} steps: device ms/step cli {d['cli']:.4f} app {d['app']:.4f} "
                     f"(app/cli {d['app_over_cli']:.3f}); wall ms/step cli {w['cli']:.4f} app {w['app']:.4f} "
                     f"(app/cli {w['app_over_cli']:.3f}); steady wall app/cli {sw['app_over_cli']:.3f}")
    else:
        lines.append(f"{pol}: missing runs (cli {len(per['cli'])}, app {len(per['app'])})")
    result["policies"][pol] = entry
json.dump(result, open(f"{root}/app_overhead.json", "w"), indent=1)
open(f"{root}/app_overhead.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
[[ $? -eq 0 ]] || failed=1
exit $failed
