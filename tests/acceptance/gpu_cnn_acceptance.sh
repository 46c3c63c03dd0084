#!/usr/bin/env bash
# Issue 4's acceptance run on a CUDA machine (no Qt needed there): every op against the
# CPU reference (conv, batch norm, pooling, add, augmentation included), ResNet-18 on
# Fashion-MNIST for 3 epochs in fp32 / mixed_fp16 / mixed_bf16 in lockstep, ResNet-50
# and ResNet-152 for 100 mixed_fp16 steps at batch 128, and W2 beside PyTorch.
# Usage: tests/acceptance/gpu_cnn_acceptance.sh MIXLAB_CLI FASHION_MNIST_DIR OUT_DIR
set -uo pipefail
cli="$1"; data="$2"; out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
models="$here/../../resources/models"
mkdir -p "$out"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== op checks (CUDA against CPU)"
"$cli" check --json "$out/check.json" > "$out/check.txt" 2>&1 || status=1
grep -E "^FAIL|passed" "$out/check.txt" | cut -c1-300 | tail -15

echo "== ResNet-18 on Fashion-MNIST (28x28x1), 3 epochs, batch 128, three policies"
"$cli" compare --model "$models/resnet18.json" --dataset "$data" --epochs 3 --batch 128 \
  --device cuda --policies fp32,mixed_fp16,mixed_bf16 --log-json "$out/r18_fmnist.json" \
  > "$out/r18_fmnist.txt" 2>&1 || status=1
grep -E "epoch 3/3 done|test accuracy|median|tensor cores" "$out/r18_fmnist.txt" | head -20
tail -25 "$out/r18_fmnist.txt"

for m in resnet50 resnet152; do
  echo "== $m, 100 steps mixed_fp16, batch 128 (synthetic 32x32x3)"
  "$cli" train --model "$models/$m.json" --dataset synthetic --synthetic-size 12800 \
    --steps 100 --batch 128 --device cuda --policy mixed_fp16 --augment crop,flip \
    --log-json "$out/$m.json" > "$out/$m.txt" 2>&1 || status=1
  echo "rc=$? $(grep -E 'mean step|final train loss|skipped' "$out/$m.txt" | tr -s ' ' | tr '\n' ';')"
done

echo "== W2 beside PyTorch"
"$here/../../bench/run_w2.sh" "$cli" "$out/w2" || status=1
exit $status
