#!/usr/bin/env bash
# Checks that every kernel launched by launch_dependent (core/src/backends/cuda/
# dependent_launch.cuh) begins with wait_for_previous_grid(). Such a kernel may start
# while the kernel before it is still running; one that touched memory before the wait
# would race it, and only on Hopper and newer, only sometimes: no test would see it.
# Usage: tools/check_dependent_launch.sh   Exit status: 0 with one "dependent launch: ..."
# line; 1 naming each kernel launched without the wait.
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/core/src/backends/cuda"

# The kernels launched: launch_dependent's second argument, the name before any <...>.
mapfile -t launched < <(grep -hzoP 'launch_dependent\(\s*"[^"]*",\s*\K[A-Za-z_]\w*' -- *.cu *.cuh |
                            tr '\0' '\n' | sort -u)
# The kernels whose body starts with the wait: the name is the identifier before the first
# "(" of the declaration once __launch_bounds__(...) is taken out.
mapfile -t waiting < <(awk '
    /__global__/ { decl = ""; in_decl = 1 }
    in_decl {
        decl = decl " " $0
        if (index($0, "{") == 0) next
        in_decl = 0
        gsub(/__launch_bounds__\([^)]*\)/, "", decl)
        if (!match(decl, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) next
        name = substr(decl, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
        rest = substr(decl, index(decl, "{") + 1)
        if (rest ~ /^[ \t]*$/) { want = name; next }
        if (rest ~ /^[ \t]*wait_for_previous_grid\(\);/) print name
        next
    }
    want != "" && $0 !~ /^[ \t]*$/ {
        if ($0 ~ /^[ \t]*wait_for_previous_grid\(\);/) print want
        want = ""
    }' *.cu *.cuh | sort -u)

[[ ${#launched[@]} -gt 0 ]] || { echo "dependent launch: no launch_dependent call found" >&2; exit 1; }
missing=()
for k in "${launched[@]}"; do
    printf '%s\n' "${waiting[@]}" | grep -qx -- "$k" || missing+=("$k")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    for k in "${missing[@]}"; do
        echo "dependent launch: kernel $k is launched by launch_dependent but does not begin with wait_for_previous_grid();" >&2
    done
    exit 1
fi
echo "dependent launch: ${#launched[@]} kernels, each begins with wait_for_previous_grid()"
