#!/usr/bin/env bash
# The engine's acceptance run on a CUDA machine (no Qt needed there): every op against
# the CPU reference, CUDA-vs-CPU losses over the first 50 steps, three policies trained
# for 3 epochs on Fashion-MNIST, and W1 timings beside PyTorch.
# Usage: tests/acceptance/gpu_acceptance.sh MIXLAB_CLI FASHION_MNIST_DIR OUT_DIR
set -uo pipefail
cli="$1"; data="$2"; out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
model="$here/../../resources/models/seed-mlp-fixed.json"
mkdir -p "$out"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== op checks (CUDA against CPU)"
"$cli" check --json "$out/check.json" > "$out/check.txt" 2>&1 || status=1
grep -E "FAIL|passed" "$out/check.txt"

echo "== first 50 steps, CUDA fp32 against CPU fp32"
"$cli" train --model "$model" --dataset "$data" --steps 50 --device cuda --policy fp32 \
  --log-json "$out/steps50_cuda.json" > /dev/null 2>&1 || status=1
"$cli" train --model "$model" --dataset "$data" --steps 50 --device cpu --policy fp32 \
  --log-json "$out/steps50_cpu.json" > /dev/null 2>&1 || status=1
python3 "$here/compare_losses.py" "$out/steps50_cuda.json" "$out/steps50_cpu.json" 50 1e-3 || status=1
# Rounding differences between two fp32 summation orders grow step by step under
# SGD with momentum; a smaller learning rate shows how much of the gap is that growth.
for dev in cuda cpu; do
  "$cli" train --model "$model" --dataset "$data" --steps 50 --device $dev --policy fp32 \
    --lr 0.001 --log-json "$out/steps50_lr1e-3_$dev.json" > /dev/null 2>&1 || status=1
done
python3 "$here/compare_losses.py" "$out/steps50_lr1e-3_cuda.json" "$out/steps50_lr1e-3_cpu.json" 50 1e-3 || status=1

echo "== out of GPU memory: a message and exit code 1, no crash"
cat > "$out/huge.json" <<'JSON'
{"format": "mixlab-model/1", "name": "huge", "layers": [{"type": "flatten"},
 {"type": "dense", "units": 1000000}, {"type": "dense", "units": 1000000},
 {"type": "dense", "units": 10}]}
JSON
"$cli" train --model "$out/huge.json" --dataset synthetic --steps 2 --device cuda \
  > /dev/null 2> "$out/oom.err"
rc=$?
echo "exit code $rc: $(tail -1 "$out/oom.err")"
[ $rc -eq 1 ] || status=1

echo "== Fashion-MNIST, 3 epochs, fp32 / mixed_fp16 / mixed_bf16 in lockstep"
"$cli" compare --model "$model" --dataset "$data" --epochs 3 --device cuda \
  --policies fp32,mixed_fp16,mixed_bf16 --log-json "$out/fmnist3.json" \
  > "$out/fmnist3.txt" 2> "$out/fmnist3.err" || status=1
cat "$out/fmnist3.txt"

echo "== W1 beside PyTorch"
"$here/../../bench/run_w1.sh" "$cli" "$out/w1" "${W1_BATCHES:-32,256,1024,4096}" || status=1
exit $status
