#!/usr/bin/env bash
# Installs the MixLab .deb on a clean Debian 12 root and runs it there: a debootstrapped
# bookworm (cached as a tarball), `apt-get install ./mixlab_*.deb` from this machine's
# Debian mirror, then mixlab-cli --version, a short CPU training run, the app offscreen,
# the docs.
#
# Usage (as root; not part of CI, it takes minutes):
#   packaging/test_deb_install.sh [path/to/mixlab_<version>_<arch>.deb]
# Default package: the newest dist/mixlab_*.deb (packaging/make_deb.sh builds it).
# Environment: MIRROR (default: the Debian mirror of this machine's apt sources; apt's
# proxy there is used too), BASE_CACHE (the base root's tarball, default
# build-deb/debian12-base.tar.gz), KEEP_ROOT=1 keeps the root folder (tools/lib/debian_root.sh).
# Exit status: 0 when every check passed; 1 with a "FAIL: ..." line otherwise; 2 when it
# cannot run (not root, no debootstrap, no package).
set -euo pipefail

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tag=deb-test
# shellcheck source=lib/debian_root.sh
source "$root_dir/tools/lib/debian_root.sh"

deb="${1:-$(ls -t "$root_dir"/dist/mixlab_*.deb 2>/dev/null | head -n 1 || true)}"
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
    cannot "no package: build one with packaging/make_deb.sh or name it"
fi
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"

debian_root_prepare

# ---- install with apt, so the declared dependencies come from the mirror ---------------
cp "$deb" "$chroot_dir/tmp/"
pkg="/tmp/$(basename "$deb")"
say "apt-get update"
in_root apt-get update -q > "$work/apt.log" 2>&1 || { tail -n 20 "$work/apt.log" >&2; fail "apt-get update failed"; }
say "apt-get install -y $pkg"
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >> "$work/apt.log" 2>&1 ||
    { tail -n 30 "$work/apt.log" >&2; fail "apt-get install of $(basename "$deb") failed (log above)"; }
grep -E "^(Setting up|Unpacking) mixlab " "$work/apt.log" | head -n 2
newly="$(grep -c '^Setting up ' "$work/apt.log" || true)"
say "installed mixlab and $((newly - 1)) packages it pulled"

has_cuda_module=0
in_root test -e /usr/lib/mixlab/libmixlab_cuda.so && has_cuda_module=1
for f in /usr/bin/mixlab /usr/bin/mixlab-cli /usr/lib/mixlab/libmixlab_core.so; do
    in_root test -x "$f" || in_root test -e "$f" || fail "$f is not installed"
done

# Every library the binaries (and the module's own engine link) need resolves; the
# module itself may miss NVIDIA's libraries: they are only recommended.
for f in /usr/bin/mixlab /usr/bin/mixlab-cli; do
    missing="$(in_root ldd "$f" | grep 'not found' || true)"
    [ -z "$missing" ] || fail "$f: libraries not found: $missing"
    in_root ldd "$f" | grep -qE 'libcudnn|libcublas' && fail "$f links NVIDIA's libraries"
done
say "ldd: mixlab and mixlab-cli resolve every library, none of NVIDIA's"

# ---- mixlab-cli ---------------------------------------------------------------------
version="$(in_root mixlab-cli --version)" || fail "mixlab-cli --version exited $?"
[[ "$version" == "mixlab-cli "* ]] || fail "mixlab-cli --version printed '$version'"
say "mixlab-cli --version: $version"

set +e
in_root mixlab-cli train --model /usr/share/mixlab/models/mnist-mlp.json --dataset synthetic \
    --synthetic-size 512 --batch 64 --epochs 1 --device auto \
    > "$chroot_dir/tmp/train.out" 2> "$chroot_dir/tmp/train.err"
rc=$?
set -e
[ $rc -eq 0 ] || { cat "$chroot_dir/tmp/train.err" >&2; fail "mixlab-cli train exited $rc"; }
grep -q "^device *cpu" "$chroot_dir/tmp/train.out" ||
    { cat "$chroot_dir/tmp/train.out" >&2; fail "mixlab-cli train did not run on the CPU backend"; }
notice="$(grep 'CUDA backend not loaded' "$chroot_dir/tmp/train.err" || true)"
if [ $has_cuda_module = 1 ]; then
    # No NVIDIA libraries in this root: auto must say so once and fall back.
    [ -n "$notice" ] || { cat "$chroot_dir/tmp/train.err" >&2; fail "no 'CUDA backend not loaded' line on stderr"; }
    [ "$(printf '%s\n' "$notice" | wc -l)" -eq 1 ] || fail "the fallback line was printed more than once"
    [[ "$notice" == *"using the CPU backend"* ]] || fail "the fallback line does not say it uses the CPU: $notice"
    say "fallback message: $notice"
else
    [ -z "$notice" ] || fail "a CPU-only package printed a CUDA notice: $notice"
    say "CPU-only package: no CUDA notice, as expected"
fi
say "mixlab-cli train: $(grep -E '^(final|test|train)' "$chroot_dir/tmp/train.out" | head -n 2 | tr '\n' ' ')"

# --device cuda must fail cleanly (exit 2, one line naming the reason), not crash.
set +e
in_root mixlab-cli train --model /usr/share/mixlab/models/mnist-mlp.json --dataset synthetic \
    --synthetic-size 256 --batch 64 --steps 2 --device cuda > /dev/null 2> "$chroot_dir/tmp/cuda.err"
rc=$?
set -e
[ $rc -eq 2 ] || { cat "$chroot_dir/tmp/cuda.err" >&2; fail "--device cuda exited $rc, expected 2"; }
say "--device cuda: $(cat "$chroot_dir/tmp/cuda.err")"

# ---- the app, offscreen ------------------------------------------------------------
# QApplication needs a platform before the options are parsed, even for --help.
set +e
in_root env QT_QPA_PLATFORM=offscreen mixlab --help > "$chroot_dir/tmp/help.txt" 2>&1
rc=$?
set -e
[ $rc -eq 0 ] || { cat "$chroot_dir/tmp/help.txt" >&2; fail "mixlab --help exited $rc"; }
grep -q -- "--screenshot" "$chroot_dir/tmp/help.txt" || fail "mixlab --help does not list its options"
set +e
in_root env QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp HOME=/tmp timeout 120 \
    mixlab --dataset synthetic --synthetic-size 512 --batch 64 --epochs 1 --device auto \
    --no-recover --no-autosave --start --screenshot /tmp/app.png > "$chroot_dir/tmp/app.log" 2>&1
rc=$?
set -e
[ $rc -eq 0 ] || { tail -n 20 "$chroot_dir/tmp/app.log" >&2; fail "the app exited $rc (124: still running after 120 s)"; }
[ -s "$chroot_dir/tmp/app.png" ] || fail "the app wrote no screenshot"
head -c 8 "$chroot_dir/tmp/app.png" | od -An -c | grep -q "P   N   G" || fail "app.png is not a PNG"
if [ $has_cuda_module = 1 ]; then
    grep -q "CUDA backend not loaded" "$chroot_dir/tmp/app.log" ||
        { cat "$chroot_dir/tmp/app.log" >&2; fail "the app did not say why the CUDA backend is not loaded"; }
fi
cp "$chroot_dir/tmp/app.png" "$(dirname "$base_cache")/test_deb_install-app.png"
say "app offscreen: screenshot of $(stat -c %s "$chroot_dir/tmp/app.png") bytes (copy in $(dirname "$base_cache")/test_deb_install-app.png)"

# ---- documentation and desktop files --------------------------------------------------
for f in /usr/share/man/man1/mixlab.1.gz /usr/share/man/man1/mixlab-cli.1.gz \
         /usr/share/doc/mixlab/copyright /usr/share/doc/mixlab/changelog.gz \
         /usr/share/applications/mixlab.desktop /usr/share/metainfo/io.mixlab.MixLab.metainfo.xml \
         /usr/share/mixlab/models/resnet18.json; do
    in_root test -s "$f" || fail "$f is missing or empty"
done
in_root sh -c 'gzip -dc /usr/share/man/man1/mixlab.1.gz | grep -q "^\.TH MIXLAB 1"' || fail "mixlab.1 is not a man page"
say "man pages, copyright, changelog, desktop file, metainfo and presets are installed"

echo "PASS: $(basename "$deb") installs on a clean Debian 12 and runs ($((SECONDS - t0)) s)"
