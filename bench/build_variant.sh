#!/usr/bin/env bash
# One git revision's mixlab-cli built for timing on the GPU machine, beside another
# (bench/ab_compare.sh): the CLI and its CUDA module only, for one GPU architecture,
# stripped, side by side in OUT_DIR (mixlab-cli finds libmixlab_core.so and
# libmixlab_cuda.so beside it). The module for every architecture setup.sh builds is
# ~76 MB; for one it is small enough that two builds fit what a device call carries.
# No Qt, no tests, no .keras archives (libzip, libhdf5): the GPU machine has none of them.
#
# Usage: bench/build_variant.sh REV OUT_DIR [CUDA_ARCH]   (CUDA_ARCH default 90: Hopper)
# Builds in a git worktree of REV in a temporary folder, removed afterwards;
# MIXLAB_CMAKE_ARGS as for tools/setup.sh (compiler launchers). OUT_DIR/REVISION names
# what was built.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "usage: $0 REV OUT_DIR [CUDA_ARCH]" >&2
    exit 2
fi
rev="$1"; out="$2"; arch="${3:-90}"
[[ "$arch" =~ ^[0-9]+[a-z]?$ ]] || { echo "$0: CUDA_ARCH is a number such as 90, not '$arch'" >&2; exit 2; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
sha="$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}")" ||
    { echo "$0: '$rev' is no commit of $repo" >&2; exit 2; }
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
    { echo "$0: nvcc not found (the CUDA toolkit): the CUDA module cannot be built" >&2; exit 2; }

tmp="$(mktemp -d)"
cleanup() { git -C "$repo" worktree remove --force "$tmp/src" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
git -C "$repo" worktree add --quiet --detach "$tmp/src" "$sha"
# shellcheck disable=SC2086 # MIXLAB_CMAKE_ARGS is a list of arguments, as in setup.sh
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DMIXLAB_WITH_CUDA=ON -DMIXLAB_WITH_GUI=OFF -DMIXLAB_BUILD_TESTS=OFF \
      -DMIXLAB_KERAS_ARCHIVES=OFF -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      ${MIXLAB_CMAKE_ARGS:-} > "$tmp/configure.log" ||
    { cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$tmp/build" --parallel "$(nproc)" --target mixlab-cli mixlab_cuda

mkdir -p "$out"
for f in bin/mixlab-cli lib/libmixlab_core.so lib/libmixlab_cuda.so; do
    [[ -f "$tmp/build/$f" ]] || { echo "$0: the build made no $f" >&2; exit 1; }
    install -m 755 "$tmp/build/$f" "$out/"
    strip --strip-unneeded "$out/$(basename "$f")"
done
echo "$(git -C "$repo" log -1 --format="%H %s" "$sha") (built for sm_$arch)" > "$out/REVISION"
"$out/mixlab-cli" --version > /dev/null || { echo "$0: $out/mixlab-cli does not start" >&2; exit 1; }
du -ch "$out"/* | tail -n 1 | sed "s|total|$out|"
