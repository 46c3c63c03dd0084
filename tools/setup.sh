#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for MixLab (Debian packages only) and
# builds it into build/. Safe to run again: installs nothing that is already there.
# CUDA is optional: with /usr/local/cuda (or nvcc on PATH) the CUDA backend is built.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build pkg-config zlib1g-dev nlohmann-json3-dev
          libeigen3-dev libzip-dev libhdf5-dev qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev dataset-fashion-mnist)
# shellcheck source=lib/apt_install.sh
source tools/lib/apt_install.sh
apt_install_missing setup "${packages[@]}"

build_type="${MIXLAB_BUILD_TYPE:-Release}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${MIXLAB_CMAKE_ARGS:-} >/dev/null
cmake --build build --parallel "$(nproc)"
