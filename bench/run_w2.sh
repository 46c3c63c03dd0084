#!/usr/bin/env bash
# W2 of shared/WORKLOADS.md (ResNet-18, CIFAR form, 100 classes), MixLab and PyTorch in
# one call on the same GPU. MixLab reads CIFAR-100-format files of random pixels written
# here (the step time does not depend on what the pixels are; CIFAR itself cannot be
# downloaded). Usage: bench/run_w2.sh MIXLAB_CLI OUT_DIR [batches]
set -euo pipefail
cli="$1"; out="$2"; batches="${3:-128,512}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
data="$(mktemp -d)"
python3 - "$data" <<'PY'
import os, sys
# CIFAR-100 binary records: coarse label, fine label, 3072 pixel bytes (CHW).
for name, n in (("train.bin", 20000), ("test.bin", 1000)):
    rec = bytearray(os.urandom(n * 3074))
    for i in range(n):
        rec[i * 3074] = rec[i * 3074] % 20
        rec[i * 3074 + 1] = rec[i * 3074 + 1] % 100
    open(os.path.join(sys.argv[1], name), "wb").write(rec)
PY
PYTHONUNBUFFERED=1 python3 "$here/w2_pytorch.py" --batches "$batches" > "$out/w2_pytorch.json"
for b in ${batches//,/ }; do
  "$cli" compare --model "$here/../resources/models/resnet18.json" --dataset "$data" \
    --batch "$b" --steps 40 --device cuda \
    --policies fp32,tf32,mixed_fp16,mixed_bf16 --log-json "$out/w2_mixlab_$b.json" \
    > "$out/w2_mixlab_$b.txt" 2> "$out/w2_mixlab_$b.err"
done
rm -rf "$data"
python3 "$here/w_table.py" w2 "$out"
