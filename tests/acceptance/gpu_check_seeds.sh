#!/usr/bin/env bash
# `mixlab-cli check` (every backend op on the CUDA backend against the CPU reference, fresh
# random inputs per seed) over a range of seeds, several processes sharing the one GPU;
# one line per seed and every failed check's line at the end. Exit 1 when any failed.
# Usage: tests/acceptance/gpu_check_seeds.sh MIXLAB_CLI OUT_DIR FIRST_SEED LAST_SEED [PARALLEL]
set -uo pipefail
cli="$1"; out="$2"; first="$3"; last="$4"; parallel="${5:-4}"
here="$(cd "$(dirname "$0")" && pwd)"
libs="$("$here/../../tools/cuda_lib_path.sh")"
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
t0=$SECONDS
seq "$first" "$last" | xargs -P "$parallel" -I{} sh -c \
    '"$0" check --seed {} > "$1/check_seed{}.txt" 2>&1; echo $? > "$1/check_seed{}.rc"' "$cli" "$out"
status=0
for s in $(seq "$first" "$last"); do
    f="$out/check_seed$s.txt"
    summary="$(grep -E '^[0-9]+ passed' "$f" | tail -n 1)"
    [ -n "$summary" ] || summary="no summary: $(tail -n 1 "$f")"
    rc="$(cat "$out/check_seed$s.rc" 2>/dev/null || echo '?')"
    echo "seed $s: $summary (exit $rc)"
    [ "$rc" = 0 ] || status=1
done
grep -h '^FAIL' "$out"/check_seed*.txt | head -n 40
echo "seeds $first-$last in $((SECONDS - t0)) s"
exit $status
