#!/usr/bin/env bash
# NVIDIA's compute-sanitizer over MixLab's kernels on a GPU machine. Each job writes
# OUT_DIR/<job>.txt; a summary line per job ends the output. Jobs run side by side.
#   racecheck:<filter>  shared-memory races in the kernels of `mixlab-cli check --filter`
#   memcheck:<filter>   out-of-bounds and misaligned accesses, leaks, same checks
#   initcheck-train[:direct]  reads of never-written device memory over 12 training steps
#                       of small-cnn under mixed_fp16 (cuBLASLt's splitKreduce_kernel, which
#                       reads its own workspace, excluded); ":direct" makes our direct
#                       convolution kernel write the conv outputs instead of cuDNN
# Usage: tools/gpu_sanitize.sh MIXLAB_CLI OUT_DIR JOB [JOB...]   (env TIMEOUT, default 300 s)
set -uo pipefail
cli="$1"; out="$2"; shift 2
here="$(cd "$(dirname "$0")" && pwd)"
libs="$("$here/cuda_lib_path.sh")"
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
[ -n "$cs" ] || { echo "compute-sanitizer not found" >&2; exit 2; }
mkdir -p "$out"
model="$here/../resources/models/small-cnn.json"
limit="${TIMEOUT:-300}"

job() {
    local j="$1" name="${1//[^A-Za-z0-9_-]/_}"
    local log="$out/$name.txt" t0=$SECONDS rc
    case "$j" in
    racecheck:* | memcheck:*)
        local tool="${j%%:*}" filter="${j#*:}" extra=()
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        [ "$tool" = racecheck ] && extra=(--racecheck-report all)
        timeout "$limit" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 3 \
            "$cli" check --seed 5 --filter "$filter" > "$log" 2>&1
        rc=$? ;;
    initcheck-train*)
        local env=()
        [ "$j" = initcheck-train:direct ] && env=(MIXLAB_CONV_DIRECT=1)
        env "${env[@]}" MIXLAB_CONV_LOG=1 timeout "$limit" "$cs" --tool initcheck --error-exitcode 3 \
            --kernel-name-exclude kns=splitKreduce \
            "$cli" train --model "$model" --dataset synthetic --synthetic-size 512 --batch 64 \
            --steps 12 --policy mixed_fp16 --device cuda > "$log" 2>&1
        rc=$? ;;
    *) echo "$j: unknown job" > "$log"; rc=2 ;;
    esac
    local errors checks
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1)"
    checks="$(grep -E '^[0-9]+ passed' "$log" | tail -n 1)"
    echo "$j: exit $rc${errors:+, $errors}${checks:+, checks: $checks}, $((SECONDS - t0)) s" > "$out/$name.summary"
}

for j in "$@"; do job "$j" & done
wait
cat "$out"/*.summary
