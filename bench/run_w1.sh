#!/usr/bin/env bash
# W1 of shared/WORKLOADS.md, MixLab and PyTorch in one call on the same GPU.
# Usage: bench/run_w1.sh MIXLAB_CLI OUT_DIR [batches]
set -euo pipefail
cli="$1"; out="$2"; batches="${3:-32,256,1024,4096}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
PYTHONUNBUFFERED=1 python3 "$here/w1_pytorch.py" --batches "$batches" > "$out/w1_pytorch.json"
for b in ${batches//,/ }; do
  # Enough samples that evaluation and epoch ends stay rare at every batch size.
  n=$(( b * 64 > 20000 ? b * 64 : 20000 ))
  "$cli" compare --model "$here/../resources/models/seed-mlp-fixed.json" --dataset synthetic \
    --synthetic-size "$n" --batch "$b" --steps 300 --device cuda \
    --policies fp32,tf32,mixed_fp16,mixed_bf16 --log-json "$out/w1_mixlab_$b.json" \
    > "$out/w1_mixlab_$b.txt" 2> "$out/w1_mixlab_$b.err"
done
python3 "$here/w_table.py" w1 "$out"
