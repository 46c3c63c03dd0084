#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs each for
# a bounded time on a copy of its seed corpus. A crash, hang or sanitizer report is kept
# in tests/fuzz/regressions/<name>/ (replayed by the normal ctest run from then on) and
# the script exits non-zero naming the target and the file.
# Usage: tools/fuzz.sh [seconds per target, default 60] [target ...]
#        (targets: model_spec keras_import keras_archive run_config experiment idx cifar
#         safetensors; default all)
set -euo pipefail
cd "$(dirname "$0")/.."

# clang and its libFuzzer runtime: Debian packages, installed when missing (as setup.sh does).
# shellcheck source=lib/apt_install.sh
source tools/lib/apt_install.sh
apt_install_missing fuzz clang libclang-rt-14-dev

seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(model_spec keras_import keras_archive run_config experiment idx cifar safetensors)
build="${MIXLAB_FUZZ_BUILD:-build-fuzz}"
jobs="${MIXLAB_JOBS:-2}"

# Every object carries the coverage hooks and both sanitizers; only the targets link
# libFuzzer's main (tests/fuzz/CMakeLists.txt). -O1 keeps clang's compile time down.
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# The GUI is not built (the experiment target compiles the three app files it needs);
# the targets live under tests/, which need Qt 6 Test.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DCMAKE_CXX_FLAGS="$flags" -DMIXLAB_FUZZ=ON -DMIXLAB_WITH_CUDA=OFF \
      -DMIXLAB_WITH_GUI=OFF -DMIXLAB_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --parallel "$jobs" --target "${targets[@]/#/fuzz_}"

# Past these lengths an input only costs time: a CIFAR-10 set needs six 3073-byte files.
declare -A max_len=([model_spec]=16384 [keras_import]=32768 [keras_archive]=65536 [run_config]=4096 [experiment]=32768 [idx]=16384 [cifar]=65536 [safetensors]=65536)
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
failed=()
for t in "${targets[@]}"; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/mixlab-fuzz-$t.XXXXXX")
  mkdir -p "$work/corpus" "$work/artifacts"
  # A copy, so a run never changes tracked files; kept crash inputs seed it too.
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  find tests/fuzz/regressions/"$t" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$work/corpus/" \; 2>/dev/null || true
  echo "fuzz: $t for ${seconds} s" >&2
  # The format's keywords: mutations that reach past "unknown field" far sooner.
  dict=()
  [ -f tests/fuzz/dict/"$t".dict ] && dict=(-dict=tests/fuzz/dict/"$t".dict)
  status=0
  "$build/bin/fuzz_$t" "$work/corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len="${max_len[$t]}" -artifact_prefix="$work/artifacts/" -print_final_stats=1 "${dict[@]}" \
      >"$work/log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/log" >&2 || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/log" >&2
    mkdir -p tests/fuzz/regressions/"$t"
    kept=()
    for f in "$work"/artifacts/*; do
      [ -f "$f" ] || continue
      cp "$f" tests/fuzz/regressions/"$t"/
      kept+=("tests/fuzz/regressions/$t/$(basename "$f")")
    done
    echo "fuzz: target $t FAILED (exit $status); input kept as: ${kept[*]:-none (see $work/log)}" >&2
    failed+=("$t")
  else
    rm -rf "$work"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failing targets: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: nothing found in ${seconds} s each" >&2
