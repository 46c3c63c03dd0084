#!/usr/bin/env bash
# Builds the MixLab .deb: a Release build in build-deb/ without the test suites, then
# CPack's DEB generator; the package lands in dist/ (git-ignored).
#
# Usage: packaging/make_deb.sh [extra cmake options, e.g. -DMIXLAB_WITH_CUDA=OFF]
# The package holds the app: without Qt 6 configuring stops naming the packages to
# install; -DMIXLAB_WITH_GUI=OFF builds a package of mixlab-cli alone.
# Environment: JOBS (parallel build jobs, default: the number of cores).
# Install with:  sudo apt install ./dist/mixlab_<version>_<arch>.deb
# Check it on a clean Debian 12:  sudo packaging/test_deb_install.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-deb"
jobs="${JOBS:-$(nproc)}"

for tool in cmake ninja cpack dpkg-deb; do
    command -v "$tool" >/dev/null || {
        echo "$0: '$tool' is needed (apt-get install cmake ninja-build dpkg)" >&2; exit 2; }
done

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXLAB_BUILD_TESTS=OFF "$@"
ninja -C "$build" -j "$jobs"
mkdir -p "$root/dist"
# CPackConfig.cmake in the build folder already sends the package to dist/.
(cd "$build" && cpack -G DEB)

deb="$(ls -t "$root"/dist/mixlab_*.deb | head -n 1)"
echo "built $deb"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends
