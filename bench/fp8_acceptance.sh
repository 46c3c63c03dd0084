#!/usr/bin/env bash
# The mixed_fp8 policy's GPU list (issue 18's "done when") in one device call, each item
# measured beside its mixed_bf16 counterpart in the same call:
#   ab/       W1 at batch 4096, mixed_bf16 and mixed_fp8 in one compare, timed interleaved
#             (ab_compare.sh, the build named twice): the whole step's in-run speedup;
#   bench/    run_bench.sh's ceilings and W1 rows at batch 4096 with PyTorch beside them
#             (README's performance table);
#   fmnist.*  seed-mlp-fixed on Fashion-MNIST, 3 epochs, batch 128, seed 42: test accuracy;
#   explain.* mixlab-cli explain on W1: each layer's time with its fp8 passes;
#   check.*   mixlab-cli check (every op, the fp8 ones among them, against the CPU);
#   kernels_mixed_bf16/, kernels_mixed_fp8/
#             one step kernel by kernel (kernel_profile.sh, Nsight Compute): the GEMM
#             kernels alone, bf16 against fp8;
# then fp8_acceptance_table.py: one line per item, the measurement against its target
# (summary.md).
#
# Usage: bench/fp8_acceptance.sh MIXLAB_CLI FASHION_MNIST_DIR OUT_DIR
# Environment: FP8_GPU (a word the GPU's name must hold, e.g. H200: on any other GPU the
# script stops before any work with exit status 3, so that a call answered by another
# GPU costs seconds), AB_ROUNDS (default 2), BENCH_PARTS (default "ceilings w1"),
# FP8_KERNELS (default 1; 0 leaves out the kernel profiles, ~2 minutes), CHECK_SEED
# (default 1), MIXLAB_LIB_PATH (as run_bench.sh; found by tools/cuda_lib_path.sh when
# unset). Every part runs even when one before it failed; exit status 1 when any failed.
set -uo pipefail
if [[ $# -ne 3 ]]; then
    echo "usage: $0 MIXLAB_CLI FASHION_MNIST_DIR OUT_DIR" >&2
    exit 2
fi
cli="$(realpath "$1")"; fmnist="$2"; out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
[[ -x "$cli" ]] || { echo "$0: '$1' is not an executable mixlab-cli" >&2; exit 2; }
[[ -f "$fmnist/train-images-idx3-ubyte" || -f "$fmnist/train-images-idx3-ubyte.gz" ]] ||
    { echo "$0: '$fmnist' holds no Fashion-MNIST (train-images-idx3-ubyte[.gz])" >&2; exit 2; }
mkdir -p "$out"

gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
echo "gpu: ${gpu:-none found}, $(date -u +%FT%TZ)"
if [[ -n "${FP8_GPU:-}" && "$gpu" != *"$FP8_GPU"* ]]; then
    echo "$0: not a GPU named *$FP8_GPU*: nothing run"
    exit 3
fi

export MIXLAB_LIB_PATH="${MIXLAB_LIB_PATH:-$("$here/../tools/cuda_lib_path.sh")}"
mixlab=(env "LD_LIBRARY_PATH=${MIXLAB_LIB_PATH:+$MIXLAB_LIB_PATH:}${LD_LIBRARY_PATH:-}" "$cli")
model="$here/../resources/models/seed-mlp-fixed.json"
failed=0
t0=$SECONDS
step() { echo "== $* (t=$((SECONDS - t0)) s)"; }
fail() { echo "FAILED: $*"; failed=1; }

step "whole step, ab_compare.sh, ${AB_ROUNDS:-2} rounds"
"$here/ab_compare.sh" "$out/ab" "${AB_ROUNDS:-2}" run1="$cli" run2="$cli" > /dev/null ||
    fail "ab_compare.sh (see $out/ab)"
cat "$out/ab/ab.txt" 2>/dev/null

step "run_bench.sh ${BENCH_PARTS:-ceilings w1}, batch 4096"
BENCH_PARTS="${BENCH_PARTS:-ceilings w1}" W1_BATCHES=4096 W1_FP8_BATCHES=4096 \
    "$here/run_bench.sh" "$cli" "$out/bench" > /dev/null 2>&1 || fail "run_bench.sh: $(cat "$out/bench/failures.txt")"
grep -E "^\| W1 " "$out/bench/bench_table.md" 2>/dev/null

step "Fashion-MNIST, seed-mlp-fixed, 3 epochs, batch 128, seed 42"
"${mixlab[@]}" compare --model "$model" --dataset "$fmnist" --epochs 3 --batch 128 --seed 42 \
    --device cuda --policies mixed_bf16,mixed_fp8 --log-json "$out/fmnist.json" \
    > "$out/fmnist.txt" 2>&1 || fail "Fashion-MNIST compare (see fmnist.txt)"

step "explain, W1 batch 4096"
"${mixlab[@]}" explain --model "$model" --dataset synthetic --synthetic-size 262144 --batch 4096 \
    --steps 300 --device cuda --policies mixed_bf16,mixed_fp8 --json "$out/explain.json" \
    > "$out/explain.txt" 2>&1 || fail "explain (see explain.txt)"

step "mixlab-cli check --seed ${CHECK_SEED:-1}"
"${mixlab[@]}" check --seed "${CHECK_SEED:-1}" --json "$out/check.json" > "$out/check.txt" 2>&1 ||
    fail "check: $(tail -n 1 "$out/check.txt")"
grep -E "^FAIL" "$out/check.txt" | head -n 20

if [[ "${FP8_KERNELS:-1}" != 0 ]]; then
    for policy in mixed_bf16 mixed_fp8; do
        step "kernel_profile.sh w1 4096 $policy"
        mkdir -p "$out/kernels_$policy"
        "$here/kernel_profile.sh" "$cli" "$out/kernels_$policy" w1 4096 "$policy" \
            > "$out/kernels_$policy/profile.log" 2>&1 ||
            fail "kernel_profile.sh $policy: $(tail -n 1 "$out/kernels_$policy/profile.log")"
    done
fi

step "summary"
python3 "$here/fp8_acceptance_table.py" "$out" | tee "$out/summary.md" || failed=1
exit $failed
