#!/usr/bin/env bash
# Prints the library path under which MixLab's CUDA module finds cuDNN 9 and cuBLASLt 13
# on a GPU machine that keeps them outside the loader's search path (the GPU machine's
# image has cuDNN only inside a Python package): /usr/local/cuda's folders first, then
# the folder of each library found elsewhere. Prints nothing when the loader finds both.
# Usage: LD_LIBRARY_PATH="$(tools/cuda_lib_path.sh)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ...
set -uo pipefail
path=""
add() { case ":$path:" in *":$1:"*) ;; *) path="${path:+$path:}$1" ;; esac; }
for lib in libcudnn.so.9 libcublasLt.so.13; do
    ldconfig -p 2>/dev/null | grep -q "$lib " && continue
    found=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
        [ -e "$d/$lib" ] && { found="$d/$lib"; break; }
    done
    [ -n "$found" ] || found="$(find / \( -path /proc -o -path /sys \) -prune -o -name "$lib" -print 2>/dev/null | head -n 1)"
    [ -n "$found" ] && add "$(dirname "$found")"
done
printf '%s' "$path"
