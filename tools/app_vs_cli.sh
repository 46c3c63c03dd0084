#!/usr/bin/env bash
# The app's metrics path against the CLI on the same GPU: W1 (seed MLP, 32x32x3
# synthetic data) at one batch size, fp32 vs mixed_fp16 in lockstep, run by the real
# app offscreen and by mixlab-cli compare, alternately, twice each.
# Usage: tools/app_vs_cli.sh MIXLAB MIXLAB_CLI OUT_DIR [batch]
set -uo pipefail
app="$1"; cli="$2"; out="$3"; batch="${4:-256}"
here="$(cd "$(dirname "$0")" && pwd)"
model="$here/../resources/models/seed-mlp-fixed.json"
mkdir -p "$out"
common=(--dataset synthetic --synthetic-size 20000 --batch "$batch" --steps 400 --device cuda)
for i in 1 2; do
  QT_QPA_PLATFORM=offscreen "$app" --model "$model" "${common[@]}" --compare \
    --policies fp32,mixed_fp16 --log-json "$out/app_$i.json" --screenshot "$out/app_$i.png" \
    > "$out/app_$i.log" 2>&1
  "$cli" compare --model "$model" "${common[@]}" --policies fp32,mixed_fp16 \
    --log-json "$out/cli_$i.json" > "$out/cli_$i.log" 2>&1
done
python3 - "$out" <<'PY'
import json, sys, statistics
root = sys.argv[1]
def medians(path):
    d = json.load(open(path))
    return {r["policy"]: r["summary"]["median_step_ms"] for r in d["runs"]}
for pol in ("fp32", "mixed_fp16"):
    app = statistics.mean(medians(f"{root}/app_{i}.json")[pol] for i in (1, 2))
    cli = statistics.mean(medians(f"{root}/cli_{i}.json")[pol] for i in (1, 2))
    print(f"{pol:<11} app {app:.4f} ms/step  cli {cli:.4f} ms/step  app/cli {app / cli:.3f}")
PY
