#!/usr/bin/env bash
# Builds MixLab (CPU backend, CLI, app, tests) with AddressSanitizer and
# UndefinedBehaviorSanitizer into build-asan and runs the cpu and gui suites under them.
# Usage: tools/sanitize.sh  (MIXLAB_JOBS: build jobs, default 2; MIXLAB_CTEST_JOBS: 1)
set -euo pipefail
cd "$(dirname "$0")/.."

build="${MIXLAB_ASAN_BUILD:-build-asan}"
jobs="${MIXLAB_JOBS:-2}"
ctest_jobs="${MIXLAB_CTEST_JOBS:-1}"
# -fno-sanitize-recover: undefined behaviour ends the test, so ctest sees it as a failure.
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

start=$(date +%s)
# RelWithDebInfo rather than Debug: the training suites run several times faster with
# optimisation, and -g keeps the sanitizers' stack traces readable.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIXLAB_WITH_CUDA=OFF \
      -DMIXLAB_WITH_GUI=ON -DMIXLAB_BUILD_TESTS=ON \
      -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
      -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$build" --parallel "$jobs"
built=$(date +%s)

# Leaks inside system libraries only (fontconfig, Qt's plugin loading) are suppressed;
# see the file for why each is there. Never add our own code to it.
export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
status=0
ctest --test-dir "$build" -L 'cpu|gui' --output-on-failure --parallel "$ctest_jobs" || status=$?
done_at=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((done_at - built)) s, total $((done_at - start)) s" >&2
exit "$status"
