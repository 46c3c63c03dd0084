#!/usr/bin/env bash
# NVIDIA's compute-sanitizer over MixLab's kernels on a GPU machine. Each job writes
# OUT_DIR/<job>.txt; a summary line per job ends the output. Jobs run side by side.
#   racecheck:<filter>  shared-memory races in the kernels of `mixlab-cli check --filter`
#   memcheck:<filter>   out-of-bounds and misaligned accesses, leaks, same checks
#   initcheck-train:MODEL[:direct]  reads of never-written device memory over $STEPS
#                       (default 3) training steps of MODEL (a preset's name or a file) under
#                       mixed_fp16 (cuBLASLt's splitKreduce_kernel, which reads its own
#                       workspace, excluded); ":direct" makes our direct convolution kernel
#                       write the conv outputs instead of cuDNN. ~70 s a step for small-cnn.
#   poison-train:MODEL:POLICY[:direct]  60 steps three times without a sanitizer, the
#                       third with every new buffer filled with NaN bytes
#                       (MIXLAB_POISON_BUFFERS=1): a read of memory no op wrote makes a loss
#                       NaN or different from the first run by more than the first two differ
#                       (exact when they agree), which also covers stores initcheck does not
#                       track. GEMM candidates are not timed (MIXLAB_GEMM_TUNE=0) so the picks
#                       repeat; ":direct" runs convolutions on our kernel (cuDNN's picks are
#                       timed, so they can differ between processes)
# Usage: tests/acceptance/gpu_sanitize.sh MIXLAB_CLI OUT_DIR JOB [JOB...]   (env TIMEOUT, default 300 s)
set -uo pipefail
cli="$1"; out="$2"; shift 2
here="$(cd "$(dirname "$0")" && pwd)"
libs="$("$here/../../tools/cuda_lib_path.sh")"
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
[ -n "$cs" ] || { echo "compute-sanitizer not found" >&2; exit 2; }
mkdir -p "$out"
# A preset's name (resources/models/NAME.json) or a file.
model_file() { if [ -f "$1" ]; then echo "$1"; else echo "$here/../../resources/models/$1.json"; fi; }
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
    initcheck-train:*)
        local rest="${j#initcheck-train:}" env=()
        [[ "$rest" == *:direct ]] && { env=(MIXLAB_CONV_DIRECT=1); rest="${rest%:direct}"; }
        env "${env[@]}" MIXLAB_CONV_LOG=1 timeout "$limit" "$cs" --tool initcheck --error-exitcode 3 \
            --kernel-name-exclude kns=splitKreduce \
            "$cli" train --model "$(model_file "$rest")" --dataset synthetic --synthetic-size 512 \
            --batch 64 --steps "${STEPS:-3}" --policy mixed_fp16 --device cuda > "$log" 2>&1
        rc=$? ;;
    poison-train:*)
        local rest="${j#poison-train:}" env=(MIXLAB_GEMM_TUNE=0)
        [[ "$rest" == *:direct ]] && { env+=(MIXLAB_CONV_DIRECT=1); rest="${rest%:direct}"; }
        local m="${rest%%:*}" policy="${rest#*:}" args=()
        args=(train --model "$(model_file "$m")" --dataset synthetic --synthetic-size 2048 --batch 64
              --steps 60 --policy "$policy" --device cuda)
        env "${env[@]}" timeout "$limit" "$cli" "${args[@]}" --log-json "$out/$name.clean.json" > "$log" 2>&1 &&
            env "${env[@]}" timeout "$limit" "$cli" "${args[@]}" \
                --log-json "$out/$name.control.json" >> "$log" 2>&1 &&
            env "${env[@]}" MIXLAB_POISON_BUFFERS=1 timeout "$limit" "$cli" "${args[@]}" \
                --log-json "$out/$name.poisoned.json" >> "$log" 2>&1 &&
            python3 "$here/compare_losses.py" "$out/$name.poisoned.json" "$out/$name.clean.json" 60 0 \
                "$out/$name.control.json" >> "$log" 2>&1
        rc=$?
        tail -n 5 "$log" | sed "s/^/    /" > "$out/$name.detail" ;;
    *) echo "$j: unknown job" > "$log"; rc=2 ;;
    esac
    local errors checks
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1)"
    checks="$(grep -E '^[0-9]+ passed' "$log" | tail -n 1)"
    echo "$j: exit $rc${errors:+, $errors}${checks:+, checks: $checks}, $((SECONDS - t0)) s" > "$out/$name.summary"
    [ -f "$out/$name.detail" ] && cat "$out/$name.detail" >> "$out/$name.summary"
}

for j in "$@"; do job "$j" & done
wait
cat "$out"/*.summary
