#!/usr/bin/env bash
# README's quick start on a clean Debian 12, as a new user meets it: a debootstrapped
# minbase bookworm root (tools/lib/debian_root.sh; the base root cached), a fresh
# `git clone` of this checkout's committed HEAD in it, then README's two quick-start
# commands exactly as README writes them (read from README), as root in the clone:
#   1. under an X server until the app's main window is mapped; a screenshot of that
#      window is saved, then the app is ended (TERM);
#   2. to its end; the suites that ran are counted, and how many carry the label gui;
# then tools/check_build_complete.sh over that build (every suite the tree defines,
# the app and mixlab-cli run). The root has no CUDA toolkit: the build is CPU-only.
# The X server (Xvfb) and the screenshot tools run on this machine and reach the root
# through the X socket, so the root holds only what setup.sh installs.
#
# Usage (as root; it builds MixLab from scratch, 7 minutes on an idle 2-core machine,
# over 20 on a busy one; not part of CI):  tests/acceptance/test_fresh_machine.sh
# Needs here: debootstrap, git, Xvfb (xvfb), xwininfo (x11-utils), import and identify
# (imagemagick).
# Environment: MIRROR, BASE_CACHE, KEEP_ROOT (see tools/lib/debian_root.sh);
#   FRESH_TIMEOUT: seconds the first command may take until the window is up (7200).
# Writes build-fresh/fresh-machine-app.png (the screenshot) and build-fresh/*.log.
# Exit status: 0 with a "PASS: ..." line; 1 with a "FAIL: ..." line; 2 when it cannot run.
set -euo pipefail

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tag=fresh-machine
# shellcheck source=lib/debian_root.sh
source "$root_dir/tools/lib/debian_root.sh"
out="$root_dir/build-fresh"
shot="$out/fresh-machine-app.png"
limit="${FRESH_TIMEOUT:-7200}"

for tool in git Xvfb xwininfo import identify; do
    command -v "$tool" >/dev/null ||
        cannot "'$tool' is missing here: apt-get install git xvfb x11-utils imagemagick"
done

# README's quick start: the first code block after its heading, two commands.
mapfile -t commands < <(awk '/^## Quick start/ { s = 1; next }
                              s && /^## / { exit }
                              s && /^```/ { if (f) exit; f = 1; next }
                              f && NF' "$root_dir/README.md")
[ ${#commands[@]} -eq 2 ] ||
    cannot "README's quick start should hold two commands in its first code block, found ${#commands[@]}"

head_sha="$(git -C "$root_dir" rev-parse HEAD)"
branch="$(git -C "$root_dir" rev-parse --abbrev-ref HEAD)"
[ -z "$(git -C "$root_dir" status --porcelain --untracked-files=no)" ] ||
    echo "note: uncommitted changes in $root_dir are not tested (a clone has only commits)" >&2

stop_app() {
    [ -n "${app_pid:-}" ] || return 0
    kill -TERM -- "-$app_pid" 2>/dev/null || true
    for _ in $(seq 1 20); do
        kill -0 -- "-$app_pid" 2>/dev/null || break
        sleep 0.5
    done
    kill -KILL -- "-$app_pid" 2>/dev/null || true
    wait "$app_pid" 2>/dev/null || true
    app_pid=""
}
debian_root_before_cleanup() {
    stop_app
    [ -n "${xvfb_pid:-}" ] && kill -TERM "$xvfb_pid" 2>/dev/null && wait "$xvfb_pid" 2>/dev/null
    return 0
}

mkdir -p "$out"
rm -f "$shot" "$out"/*.log
debian_root_prepare
stage=$SECONDS

# ---- a fresh clone of the committed HEAD -----------------------------------------------
git clone --quiet --no-checkout "$root_dir" "$chroot_dir/root/mixlab"
git -C "$chroot_dir/root/mixlab" checkout --quiet -B "$branch" "$head_sha"
say "cloned $branch at $(git -C "$root_dir" log -1 --format='%h %s' | cut -c1-80) into /root/mixlab"

# ---- the X server, its socket inside the root -------------------------------------------
exec 3> "$work/display"
Xvfb -displayfd 3 -screen 0 1600x1000x24 -nolisten tcp > "$out/xvfb.log" 2>&1 &
xvfb_pid=$!
exec 3>&-
for _ in $(seq 1 50); do
    [ -s "$work/display" ] && break
    sleep 0.2
done
[ -s "$work/display" ] || fail "Xvfb did not start: $(tail -n 3 "$out/xvfb.log")"
display=":$(tr -d '\n' < "$work/display")"
mkdir -p "$chroot_dir/tmp/.X11-unix"
debian_root_mount --bind /tmp/.X11-unix "$chroot_dir/tmp/.X11-unix"
say "Xvfb on display $display (1600x1000)"

# ---- first command: until the app's main window is up ----------------------------------
say "first command: ${commands[0]}"
# setsid: the command and the app it starts form one process group, ended together.
setsid chroot "$chroot_dir" "${root_env[@]}" DISPLAY="$display" \
    bash -c "cd /root/mixlab && ${commands[0]}" > "$out/first-command.log" 2>&1 &
app_pid=$!
window=""
last_report=$SECONDS
while [ -z "$window" ]; do
    if ! kill -0 "$app_pid" 2>/dev/null; then
        rc=0
        wait "$app_pid" || rc=$?
        app_pid=""
        tail -n 30 "$out/first-command.log" >&2
        fail "the first command ended (exit $rc) before the app's window came up (log above, all in $out/first-command.log)"
    fi
    [ $((SECONDS - stage)) -lt "$limit" ] ||
        fail "no app window after $limit s (FRESH_TIMEOUT); log in $out/first-command.log"
    # The app's main window: class "mixlab", "MixLab" in its title (a dialog has its own),
    # viewable, larger than Qt's 1x1 helper windows.
    for id in $(DISPLAY="$display" xwininfo -root -tree 2>/dev/null |
                awk '/MixLab.*\("mixlab" "mixlab"\)/ { print $1 }'); do
        info="$(DISPLAY="$display" xwininfo -id "$id" 2>/dev/null || true)"
        if grep -q "Map State: IsViewable" <<< "$info" &&
           [ "$(awk '/Width:/ { print $2 }' <<< "$info")" -gt 100 ]; then
            window="$id"
        fi
    done
    if [ -z "$window" ]; then
        if [ $((SECONDS - last_report)) -ge 300 ]; then
            say "first command still running: $(tail -c 300 "$out/first-command.log" | tr '\r' '\n' | tail -n 1 | cut -c1-100)"
            last_report=$SECONDS
        fi
        sleep 5
    fi
done
first_s=$((SECONDS - stage))
title="$(DISPLAY="$display" xwininfo -id "$window" | sed -n 's/^xwininfo: Window id: [^ ]* "\(.*\)"$/\1/p')"
say "the app's window is up after $first_s s: \"$title\" ($(DISPLAY="$display" xwininfo -id "$window" |
    awk '/Width:/ { w = $2 } /Height:/ { h = $2 } END { print w "x" h }'))"
# Once painted: screenshots 2 s apart until two show the same pixels (at most 60 s).
previous=""
for _ in $(seq 1 30); do
    sleep 2
    DISPLAY="$display" import -window "$window" "$work/shot.png"
    now="$(identify -format '%#' "$work/shot.png")"
    [ "$now" = "$previous" ] && break
    previous="$now"
done
cp "$work/shot.png" "$shot"
colours="$(identify -format '%k' "$shot")"
[ "$colours" -gt 16 ] || fail "the screenshot has $colours colours: nothing drawn ($shot)"
say "screenshot: $shot ($colours colours)"
stop_app
say "the app ended (TERM)"
if grep -q -i "could not load the Qt platform plugin\|cannot open display" "$out/first-command.log"; then
    fail "the app reported a display problem (see $out/first-command.log)"
fi

# ---- second command: to its end --------------------------------------------------------
stage=$SECONDS
say "second command: ${commands[1]}"
rc=0
in_root bash -c "cd /root/mixlab && ${commands[1]}" > "$out/second-command.log" 2>&1 || rc=$?
second_s=$((SECONDS - stage))
summary="$(grep -E '^[0-9]+% tests passed' "$out/second-command.log" || true)"
say "second command exited $rc after $second_s s: ${summary:-no ctest summary}"
grep -A 8 '^Label Time Summary:' "$out/second-command.log" | sed '/^$/q' || true
[ $rc -eq 0 ] || { tail -n 40 "$out/second-command.log" >&2; fail "the second command exited $rc (log in $out/second-command.log)"; }
ran="$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' <<< "$summary")"
gui="$(sed -n 's/^ *gui *=.*(\([0-9]*\) tests*)$/\1/p' "$out/second-command.log")"
listed="$(in_root bash -c "cd /root/mixlab && ctest --test-dir build -N" | sed -n 's/^Total Tests: //p')"
gui_sources="$(ls "$chroot_dir"/root/mixlab/tests/gui/tst_*.cpp | wc -l)"
[ -n "$ran" ] && [ "$ran" = "$listed" ] || fail "ctest ran ${ran:-no} suites but lists ${listed:-none}"
[ -n "$gui" ] && [ "$gui" = "$gui_sources" ] ||
    fail "${gui:-no} GUI suites ran; tests/gui defines $gui_sources"

cuda="$(sed -n 's/^MIXLAB_WITH_CUDA:BOOL=//p' "$chroot_dir/root/mixlab/build/CMakeCache.txt")"
[ "$cuda" = OFF ] || fail "the root has no CUDA toolkit, yet the build has MIXLAB_WITH_CUDA=$cuda"
say "CPU-only build (no CUDA toolkit in the root: MIXLAB_WITH_CUDA=OFF); the GPU suites skip"

# ---- everything the tree defines is in the build ---------------------------------------
in_root bash -c "cd /root/mixlab && tools/check_build_complete.sh" > "$out/check-build.log" 2>&1 ||
    { cat "$out/check-build.log" >&2; fail "tools/check_build_complete.sh found the build incomplete"; }
say "$(cat "$out/check-build.log")"

echo "PASS: README's quick start on a clean Debian 12 (CPU-only): the app's window came up" \
     "after $first_s s (screenshot $shot); the second command ran $ran suites, $gui of them" \
     "GUI suites, all passed, in $second_s s; total $((SECONDS - t0)) s"
