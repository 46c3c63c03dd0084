#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for MixLab (Debian packages only) and
# builds it into build/. Safe to run again: installs nothing that is already there.
# CUDA is optional: with /usr/local/cuda (or nvcc on PATH) the CUDA backend is built.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config zlib1g-dev nlohmann-json3-dev
          libeigen3-dev qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_type="${MIXLAB_BUILD_TYPE:-Release}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${MIXLAB_CMAKE_ARGS:-} >/dev/null
cmake --build build --parallel "$(nproc)"
