#!/usr/bin/env bash
# Checks that a build holds everything the source tree defines, so a build that lost the
# app or some suites (Qt missing, a dropped CMake line) cannot pass for a complete one:
#   - bin/mixlab-cli prints its version; bin/mixlab starts offscreen, trains two CPU
#     steps and saves a screenshot of its window;
#   - ctest lists every suite of tests/gui/tst_*.cpp under the label gui, every one of
#     tests/core/tst_*.cpp under cpu (tst_cuda_* under gpu), and the corpus replay
#     fuzz_<name>_replay of every tests/fuzz/fuzz_<name>.cpp under cpu;
#   - every .cpp and .cu of core/src, cli and gui was compiled (compile_commands.json):
#     the CMake lists name files one by one, and a file in no list is not built
#     (core/src/backends/cuda only in a build with the CUDA backend).
# Usage: tools/check_build_complete.sh [build folder, default build]
# Exit status: 0 with one "complete: ..." line; 1 naming each thing missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
problems=()

# Test names ctest lists under one label.
listed() { ctest --test-dir "$build" -N -L "^$1\$" | sed -n 's/^ *Test *#[0-9]*: *\([^ ]*\).*/\1/p' | sort; }
# Suite names the source tree defines: file names without the folder and the suffix.
defined() { for f in "$@"; do [ -e "$f" ] && basename "$f" .cpp; done | sort; }
# expect LABEL NAME...: every name must be listed under the label.
expect() {
    local label="$1" missing
    shift
    missing="$(comm -23 <(printf '%s\n' "$@" | sed '/^$/d' | sort) <(listed "$label") | tr '\n' ' ')"
    [ -z "$missing" ] || problems+=("not in ctest -L $label: $missing")
}

[ -f "$build/CTestTestfile.cmake" ] || { echo "FAIL: $build has no test suites (configured with -DMIXLAB_BUILD_TESTS=OFF?)" >&2; exit 1; }

mapfile -t gui_suites < <(defined "$root"/tests/gui/tst_*.cpp)
mapfile -t core_suites < <(defined "$root"/tests/core/tst_*.cpp)
mapfile -t fuzz_replays < <(defined "$root"/tests/fuzz/fuzz_*.cpp | grep -vx fuzz_driver | sed 's/$/_replay/')
expect gui "${gui_suites[@]}"
expect cpu $(printf '%s\n' "${core_suites[@]}" | grep -v '^tst_cuda_') "${fuzz_replays[@]}"
expect gpu $(printf '%s\n' "${core_suites[@]}" | grep '^tst_cuda_' || true)

# Every source file of the tree is in the build.
commands="$build/compile_commands.json"
if [ ! -f "$commands" ]; then
    problems+=("$commands is missing (configured before CMAKE_EXPORT_COMPILE_COMMANDS was on?)")
else
    with_cuda="$(sed -n 's/^MIXLAB_WITH_CUDA:BOOL=//p' "$build/CMakeCache.txt")"
    compiled="$(sed -n 's/^ *"file": "\(.*\)",\{0,1\}$/\1/p' "$commands" | sed "s|^$root/||" | sort -u)"
    mapfile -t sources < <(cd "$root" && find core/src cli gui -type f \( -name '*.cpp' -o -name '*.cu' \) | sort)
    unbuilt=()
    for f in "${sources[@]}"; do
        [[ "$f" == core/src/backends/cuda/* && "$with_cuda" != ON ]] && continue
        grep -qxF "$f" <<<"$compiled" || unbuilt+=("$f")
    done
    [ ${#unbuilt[@]} -eq 0 ] ||
        problems+=("not built (named in no CMake list: core/sources.cmake, cli/, gui/CMakeLists.txt): ${unbuilt[*]}")
fi

cli="$build/bin/mixlab-cli"
if [ ! -x "$cli" ]; then
    problems+=("$cli is missing")
elif ! "$cli" --version >/dev/null 2>&1; then
    problems+=("$cli --version failed")
fi

app="$build/bin/mixlab"
if [ ! -x "$app" ]; then
    problems+=("$app is missing (configured with -DMIXLAB_WITH_GUI=OFF?)")
else
    # A home of its own: the run must not read or write the user's settings and autosave.
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/mixlab-check.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    rc=0
    env HOME="$tmp" XDG_RUNTIME_DIR="$tmp" QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS=1 timeout 120 \
        "$app" --dataset synthetic --synthetic-size 256 --batch 64 --steps 2 --device cpu \
        --no-recover --no-autosave --start --screenshot "$tmp/app.png" > "$tmp/app.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
        problems+=("$app did not run a job and exit (exit code $rc): $(tail -n 3 "$tmp/app.log" | tr '\n' ' ')")
    elif ! head -c 8 "$tmp/app.png" 2>/dev/null | od -An -c | grep -q "P   N   G"; then
        problems+=("$app wrote no screenshot of its window")
    fi
fi

if [ ${#problems[@]} -gt 0 ]; then
    printf 'FAIL: %s\n' "${problems[@]}" >&2
    exit 1
fi
echo "complete: every source file is built; mixlab and mixlab-cli run; ctest lists ${#gui_suites[@]} gui, ${#core_suites[@]} core" \
     "and ${#fuzz_replays[@]} fuzz replay suites, as the source tree defines"
