#!/usr/bin/env bash
# Two or more builds of mixlab-cli timed on the same GPU in one call: the same
# `mixlab-cli compare` run by each build in turn, ROUNDS times, the order rotated every
# round so that neither build always runs first (or always on a warmer GPU). A change to a
# kernel is judged by this, not by two numbers from two calls: the GPU's clocks and the
# machine drift by a few percent between calls, about what one change saves.
#
# Usage: bench/ab_compare.sh OUT_DIR ROUNDS NAME=MIXLAB_CLI NAME=MIXLAB_CLI... [-- COMPARE_ARGS...]
# COMPARE_ARGS default to W1 at batch 4096, mixed_bf16 beside mixed_fp8, 300 steps on
# synthetic data (bench/run_bench.sh's fp8 compare). Each build's CUDA module is found as
# mixlab-cli finds it (beside it or in ../lib); cuDNN and cuBLASLt by tools/cuda_lib_path.sh.
# Writes OUT_DIR/NAME_ROUND.json (the compare's log) and .txt, and OUT_DIR/ab.txt and
# ab.json (bench/ab_table.py: each build's median over rounds per policy, its ratio to the
# first build's, and the in-run ratio of each policy to the first policy). Exit status 1
# when a run failed (its output names why; the other runs still go).
set -uo pipefail

usage() {
    echo "usage: $0 OUT_DIR ROUNDS NAME=MIXLAB_CLI NAME=MIXLAB_CLI... [-- COMPARE_ARGS...]" >&2
    exit 2
}
[[ $# -ge 4 ]] || usage
out="$1"; rounds="$2"; shift 2
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "$0: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"

names=(); clis=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
    [[ "$1" == *=* ]] || { echo "$0: '$1' is not NAME=MIXLAB_CLI" >&2; usage; }
    name="${1%%=*}"; cli="${1#*=}"
    [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "$0: build name '$name' may hold only letters, digits, _ and -" >&2; exit 2; }
    [[ -x "$cli" ]] || { echo "$0: $name: '$cli' is not an executable file" >&2; exit 2; }
    for n in "${names[@]}"; do [[ "$n" != "$name" ]] || { echo "$0: build name '$name' given twice" >&2; exit 2; }; done
    names+=("$name"); clis+=("$cli")
    shift
done
[[ ${#names[@]} -ge 2 ]] || { echo "$0: give at least two builds to compare" >&2; usage; }
[[ $# -gt 0 ]] && shift # the "--"
if [[ $# -gt 0 ]]; then
    compare_args=("$@")
else
    compare_args=(--model "$here/../resources/models/seed-mlp-fixed.json" --dataset synthetic
                  --synthetic-size 262144 --batch 4096 --steps 300 --device cuda
                  --policies mixed_bf16,mixed_fp8)
fi

mkdir -p "$out"
# An earlier call's logs in the same folder would count as rounds of this one.
for name in "${names[@]}"; do rm -f "$out/${name}"_[0-9]*.json "$out/${name}"_[0-9]*.txt; done
libs="$("$here/../tools/cuda_lib_path.sh" 2>/dev/null || true)"
{
    date -u +"date %Y-%m-%dT%H:%M:%SZ"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
            --format=csv 2>&1
    else
        echo "gpu: none seen (no nvidia-smi)"
    fi
    for i in "${!names[@]}"; do
        # bench/build_variant.sh leaves the revision it built beside the CLI.
        rev_file="$(dirname "${clis[$i]}")/REVISION"
        echo "build ${names[$i]}: ${clis[$i]}$([[ -f "$rev_file" ]] && echo " ($(cat "$rev_file"))")"
    done
    echo "rounds: $rounds"
    echo "compare: ${compare_args[*]}"
    echo "library path: ${libs:-as is}"
} > "$out/env.txt"

failed=0
count=${#names[@]}
for ((r = 1; r <= rounds; r++)); do
    for ((j = 0; j < count; j++)); do
        i=$(( (j + r - 1) % count )) # round r starts with build r-1 (mod count)
        name="${names[$i]}"
        echo "[ab] round $r: $name" >&2
        env LD_LIBRARY_PATH="${libs:+$libs:}${LD_LIBRARY_PATH:-}" "${clis[$i]}" compare \
            "${compare_args[@]}" --log-json "$out/${name}_$r.json" > "$out/${name}_$r.txt" 2>&1
        rc=$?
        if [[ $rc -ne 0 ]]; then
            echo "[ab] round $r: $name failed (exit $rc): $(tail -n 3 "$out/${name}_$r.txt" | tr '\n' ' ')" >&2
            failed=1
        fi
    done
done

python3 "$here/ab_table.py" "$out" "${names[@]}" || failed=1
exit $failed
