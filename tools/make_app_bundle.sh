#!/usr/bin/env bash
# Packs a built `mixlab` app into a tar.xz that runs on a machine without Qt (the GPU
# machine): the binary, every shared library it or Qt's "offscreen" platform plugin
# needs except glibc, libstdc++/libgcc and the CUDA/cuDNN stack, and that plugin.
#
# Usage: tools/make_app_bundle.sh MIXLAB_BINARY OUT.tar.xz [EXTRA_BINARY...]
# Extra binaries (mixlab-cli, a test suite such as tst_cuda_backend) go beside mixlab,
# with the libraries they need added to lib/.
# Layout inside (no top folder):  mixlab  [extras]  lib/*.so*  plugins/platforms/libqoffscreen.so
#   fonts/ (DejaVu Sans and a fonts.conf, when this machine has them)
# Run there with:
#   tar xJf OUT.tar.xz -C /tmp/app
#   QT_QPA_PLATFORM=offscreen QT_PLUGIN_PATH=/tmp/app/plugins \
#   LD_LIBRARY_PATH=/tmp/app/lib:<cuda and cudnn lib folders> /tmp/app/mixlab ...
# A machine without fonts draws every letter as a box (timings are unaffected); add
# FONTCONFIG_FILE=/tmp/app/fonts/fonts.conf for readable screenshots.
set -euo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: $0 MIXLAB_BINARY OUT.tar.xz [EXTRA_BINARY...]" >&2
    exit 2
fi
app="$1"
out="$2"
shift 2
extras=("$@")
for x in "${extras[@]}"; do
    [[ -x "$x" ]] || { echo "$0: '$x' is not an executable file" >&2; exit 2; }
done
[[ -x "$app" ]] || { echo "$0: '$app' is not an executable file (build the mixlab target first)" >&2; exit 2; }
command -v ldd >/dev/null || { echo "$0: ldd is needed" >&2; exit 2; }

# The plugin sits where this machine's Qt 6 keeps its plugins; qtpaths6 knows, else the
# Debian/Ubuntu folder.
plugin_dir=""
if command -v qtpaths6 >/dev/null 2>&1; then
    plugin_dir="$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || true)"
fi
[[ -d "$plugin_dir" ]] || plugin_dir=/usr/lib/x86_64-linux-gnu/qt6/plugins
plugin="$plugin_dir/platforms/libqoffscreen.so"
[[ -f "$plugin" ]] || { echo "$0: Qt's offscreen plugin is not at $plugin (install qt6-base-dev, or the Qt 6 that built $app)" >&2; exit 2; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/plugins/platforms"
cp "$app" "$stage/mixlab"
for x in "${extras[@]}"; do cp "$x" "$stage/"; done
cp "$plugin" "$stage/plugins/platforms/"
# Symbols are not needed to run; stripping halves the binary.
strip --strip-unneeded "$stage/mixlab" "$stage/plugins/platforms/libqoffscreen.so" 2>/dev/null || true
for x in "${extras[@]}"; do strip --strip-unneeded "$stage/$(basename "$x")" 2>/dev/null || true; done

# Left to the target machine: glibc and the loader, the compiler's runtime (the newer
# system there is ABI-compatible with what built this), and the GPU stack, which must
# match the driver there.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libmvec|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn|libnvrtc|libnvJitLink|libcufft|libcurand|libcusparse|libcusolver|libnvidia)[.-]'

# ldd lists the whole closure (dependencies of dependencies too), so one pass over the
# binary and the plugin is enough.
missing=0
while read -r name path; do
    if [[ "$name" =~ $skip ]]; then continue; fi
    if [[ "$path" == "not found" || -z "$path" ]]; then
        echo "$0: $name is needed but ldd does not find it" >&2
        missing=1
        continue
    fi
    [[ -e "$stage/lib/$name" ]] || cp -L "$path" "$stage/lib/$name"
done < <(ldd "$app" "$plugin" "${extras[@]}" | awk '/=>/ { p = $3; if ($3 == "not") p = "not found"; print $1, p }')
[[ $missing -eq 0 ]] || exit 1
# The CUDA backend is a module the engine loads at run time from beside
# libmixlab_core.so (ldd cannot see it): without it the app would train on the CPU.
for m in "$(dirname "$app")/../lib/libmixlab_cuda.so" "$(dirname "$app")/libmixlab_cuda.so"; do
    [[ -f "$m" ]] && { cp -L "$m" "$stage/lib/"; break; }
done
# libgomp (Eigen's threads) is asked for explicitly: a build without OpenMP lacks it.
[[ -e "$stage/lib/libgomp.so.1" ]] || echo "$0: note: $app does not use libgomp" >&2

# One sans family, regular and bold (~1.4 MB, ~0.6 MB packed), found through a
# fonts.conf that names its own folder, so fontconfig needs no system configuration.
font_dir=/usr/share/fonts/truetype/dejavu
if [[ -f "$font_dir/DejaVuSans.ttf" ]]; then
    mkdir -p "$stage/fonts"
    cp "$font_dir/DejaVuSans.ttf" "$stage/fonts/"
    [[ -f "$font_dir/DejaVuSans-Bold.ttf" ]] && cp "$font_dir/DejaVuSans-Bold.ttf" "$stage/fonts/"
    cat > "$stage/fonts/fonts.conf" <<'XML'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">.</dir>
  <cachedir prefix="relative">cache</cachedir>
</fontconfig>
XML
else
    echo "$0: note: no DejaVu fonts here (fonts-dejavu-core): the bundle draws text as boxes" >&2
fi

mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -T2 -6 > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(du -k "$out" | cut -f1) KiB ($(ls "$stage/lib" | wc -l) libraries)"
