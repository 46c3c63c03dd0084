#!/usr/bin/env bash
# Per-kernel time of one training step of W1 (the seed MLP) or W2 (ResNet-18, CIFAR form),
# MixLab's against PyTorch's graphed step, in one call. Each side runs under Nsight
# Compute (the device has ncu, not nsys) with only one step's kernels measured: MixLab's
# step MIXLAB_PROFILE_STEP (a replay of its recorded graph between cudaProfilerStart and
# Stop), PyTorch's one replay of its captured step; each kernel node timed on its own
# (gpu__time_duration in one pass, application replay: under ncu's default kernel replay
# PyTorch's fp16 step failed in cuDNN's persistent batch-norm kernel; clocks and caches
# left alone). kernel_table.py groups them. The sum of a side's kernels is its step
# without launch gaps: against the event-timed step it shows how much of it is gaps.
# Usage: bench/kernel_profile.sh MIXLAB_CLI OUT_DIR [w2] [batch 128] [policy mixed_fp16]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cli="$1" out="$2" workload="${3:-w2}" batch="${4:-128}" policy="${5:-mixed_fp16}"
layout=_cl
[ "$workload" = w1 ] && layout=""
case "$policy" in
  mixed_fp16) variant="amp_fp16${layout}_graph" ;;
  mixed_bf16) variant="amp_bf16${layout}_graph" ;;
  fp32 | tf32) variant="${policy}_graph" ;;
  # PyTorch has no fp8 training step of its own (Transformer Engine is not on the
  # device): mixed_fp8 is profiled against its strongest bf16 step.
  mixed_fp8) variant="amp_bf16${layout}_graph" ;;
  *) echo "kernel_profile.sh: no PyTorch variant for policy '$policy'" >&2; exit 2 ;;
esac
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
[ -x "$ncu_bin" ] || { echo "kernel_profile.sh: ncu (Nsight Compute) not found" >&2; exit 1; }
ncu=("$ncu_bin" --profile-from-start off --graph-profiling node --clock-control none
     --cache-control none --replay-mode application --metrics gpu__time_duration.sum
     --csv --page raw --print-units base)
mkdir -p "$out"
data="$(mktemp -d)"
case "$workload" in
  w1) args=(--model "$here/../resources/models/seed-mlp-fixed.json" --dataset synthetic
            --synthetic-size $(( batch * 64 > 20000 ? batch * 64 : 20000 ))) ;;
  w2) python3 "$here/cifar_files.py" "$data"
      args=(--model "$here/../resources/models/resnet18.json" --dataset "$data") ;;
  *) echo "kernel_profile.sh: workload must be w1 or w2, not '$workload'" >&2; exit 2 ;;
esac
"${ncu[@]}" --log-file "$out/mixlab_kernels.csv" env MIXLAB_PROFILE_STEP=30 \
  "LD_LIBRARY_PATH=${MIXLAB_LIB_PATH:+$MIXLAB_LIB_PATH:}${LD_LIBRARY_PATH:-}" "$cli" train \
  "${args[@]}" --batch "$batch" --steps 40 --device cuda --policy "$policy" \
  --log-json "$out/mixlab_run.json" > "$out/mixlab_train.txt" 2>&1 ||
  echo "kernel_profile.sh: MixLab's run failed (see mixlab_train.txt)" >&2
(cd "$here" && "${ncu[@]}" --log-file "$out/pytorch_kernels.csv" python3 \
  kernel_profile_torch.py "$workload" "$variant" "$batch") > "$out/pytorch.txt" 2>&1 ||
  echo "kernel_profile.sh: PyTorch's run failed (see pytorch.txt)" >&2
rm -rf "$data"
python3 "$here/kernel_table.py" "$out/mixlab_kernels.csv" "$out/pytorch_kernels.csv" |
  tee "$out/kernel_table.md"
