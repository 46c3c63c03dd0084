#!/usr/bin/env bash
# The one formatter: clang-format with the tree's .clang-format (gui/ and tests/gui/ keep
# Qt's `T *p` through their own, which inherits the rest) over every C++ and CUDA source
# git knows. Formats in place, or with --check changes nothing and fails naming each file
# that is not formatted (CI runs that).
# Usage: tools/format.sh [--check]   (CLANG_FORMAT: the binary, default clang-format)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tool="${CLANG_FORMAT:-clang-format}"
# Debian's package when missing (as setup.sh installs its own): CI's machine starts without it.
if [ "$tool" = clang-format ]; then
    # shellcheck source=lib/apt_install.sh
    source tools/lib/apt_install.sh
    apt_install_missing format clang-format
fi
command -v "$tool" >/dev/null ||
    { echo "format: $tool not found (Debian: apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--check" ]; then
    bad=()
    for f in "${files[@]}"; do
        "$tool" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        printf 'not formatted (run tools/format.sh): %s\n' "${bad[@]}" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files as $("$tool" --version | sed 's/.*version \([0-9.]*\).*/clang-format \1/') formats them"
else
    "$tool" -i "${files[@]}"
fi
