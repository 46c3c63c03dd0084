# Sourced by packaging/test_deb_install.sh and tests/acceptance/test_fresh_machine.sh: a clean Debian 12
# (bookworm, debootstrap minbase) root in a temporary folder under /var/tmp, with /proc,
# /dev and a /tmp of its own mounted, apt pointed at this machine's own Debian mirror and
# proxy, and a trap that unmounts and removes everything on exit. The base root is
# debootstrapped once and cached as a tarball.
#
# Before sourcing, set `tag` (the name in progress lines) and `root_dir` (the checkout).
# Then call debian_root_prepare; afterwards $chroot_dir is the root, $work its temporary
# folder (logs go there), and in_root CMD runs CMD in it with a clean environment
# (chroot "$chroot_dir" "${root_env[@]}" CMD, for a caller that needs the process itself).
# Also defined: $base_cache (the base root's tarball), say, fail (exit 1), cannot (exit 2).
# A caller that starts processes defines debian_root_before_cleanup to stop them; it
# runs first on exit.
#
# Environment: MIRROR (default: the Debian mirror of this machine's apt sources),
# BASE_CACHE (default $root_dir/build-deb/debian12-base.tar.gz), KEEP_ROOT=1 keeps the root.

t0=$SECONDS
base_cache="${BASE_CACHE:-$root_dir/build-deb/debian12-base.tar.gz}"
say() { echo "[$tag $((SECONDS - t0))s] $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
cannot() { echo "$0: $*" >&2; exit 2; }

# The Debian mirror this machine's apt uses: the first source serving bookworm, else the
# first serving another Debian suite (a mirror of one serves all). deb822 files
# (*.sources) and one-line files (sources.list, *.list) both count.
host_debian_mirror() {
    local f found=""
    local suites='^(bookworm|trixie|bullseye|forky|sid|stable|testing|unstable|oldstable)$'
    for pass in exact any; do
        local want='^bookworm$'
        [ $pass = any ] && want="$suites"
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            found="$(awk -v want="$want" '
                function flush() {
                    if (!done && types ~ /(^| )deb( |$)/ && enabled != "no" && uri != "") {
                        n = split(suites, s, " ")
                        for (i = 1; i <= n; i++) if (s[i] ~ want) { print uri; done = 1; exit }
                    }
                    types = ""; uri = ""; suites = ""; enabled = ""
                }
                /^#/ { next }
                /^[ \t]*$/ { flush(); next }
                { key = tolower($1); sub(/:$/, "", key); $1 = "" ; sub(/^ +/, "") }
                key == "types" { types = $0 }
                key == "uris" { split($0, u, " "); uri = u[1] }
                key == "suites" { suites = $0 }
                key == "enabled" { enabled = tolower($0) }
                END { flush() }' "$f")"
            [ -n "$found" ] && break 2
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            found="$(awk -v want="$want" '
                $1 != "deb" { next }
                { i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } }
                $(i + 1) ~ want { print $i; exit }' "$f")"
            [ -n "$found" ] && break 2
        done
    done
    case "$found" in
    http://* | https://* | ftp://* | file:/*) printf '%s\n' "$found" ;;
    *) return 1 ;;
    esac
}

# This machine's apt settings for reaching its mirror (proxies, and the date checks a
# snapshot mirror needs turned off), as apt.conf lines for the root.
host_apt_network_conf() {
    apt-config dump 2>/dev/null |
        grep -E '^Acquire::(https?|ftp)::Proxy[ :]|^Acquire::Check-(Valid-Until|Date) ' || true
}

# A login's environment and nothing of this machine's.
root_env=(/usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
in_root() { chroot "$chroot_dir" "${root_env[@]}" "$@"; }

debian_root_mounted=()
debian_root_cleanup() {
    local rc=$?
    declare -F debian_root_before_cleanup >/dev/null && debian_root_before_cleanup
    local i
    # Unmount in reverse order; a busy mount is detached lazily rather than left behind.
    for ((i = ${#debian_root_mounted[@]} - 1; i >= 0; i--)); do
        umount "${debian_root_mounted[i]}" 2>/dev/null || umount -l "${debian_root_mounted[i]}" 2>/dev/null || true
    done
    if [ "${KEEP_ROOT:-0}" = 1 ]; then
        echo "root kept in $chroot_dir" >&2
    elif ! grep -q " $work/" /proc/mounts; then
        rm -rf "$work"
    else
        echo "$work still has mounts: not removed" >&2
    fi
    exit $rc
}

debian_root_mount() {
    mount "$@" && debian_root_mounted+=("${*: -1}")
}

debian_root_prepare() {
    [ "$(id -u)" -eq 0 ] || cannot "must run as root (debootstrap, chroot and mount need it)"
    command -v debootstrap >/dev/null || cannot "debootstrap is missing: apt-get install debootstrap"
    local cache="$base_cache"
    local mirror="${MIRROR:-}"
    if [ -z "$mirror" ]; then
        mirror="$(host_debian_mirror)" ||
            cannot "no Debian mirror in this machine's apt sources (/etc/apt/sources.list*): set MIRROR"
    fi
    # debootstrap fetches with wget, which reads the proxy from the environment.
    local proxy="" https_proxy_conf=""
    eval "$(apt-config shell proxy Acquire::http::Proxy https_proxy_conf Acquire::https::Proxy 2>/dev/null)"
    [ -n "$proxy" ] && [ -z "${http_proxy:-}" ] && export http_proxy="$proxy"
    [ -n "$https_proxy_conf" ] && [ -z "${https_proxy:-}" ] && export https_proxy="$https_proxy_conf"

    work="$(mktemp -d /var/tmp/mixlab-$tag.XXXXXX)"
    chroot_dir="$work/root"
    trap debian_root_cleanup EXIT INT TERM
    mkdir -p "$chroot_dir"
    if [ -s "$cache" ]; then
        say "base root from $cache"
        tar -xzf "$cache" -C "$chroot_dir"
    else
        say "debootstrap --variant=minbase bookworm from $mirror (cached afterwards in $cache)"
        debootstrap --variant=minbase bookworm "$chroot_dir" "$mirror" > "$work/debootstrap.log" 2>&1 ||
            { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap failed (log above)"; }
        mkdir -p "$(dirname "$cache")"
        tar -czf "$cache.tmp" -C "$chroot_dir" . && mv "$cache.tmp" "$cache"
    fi
    grep -q "bookworm" "$chroot_dir/etc/os-release" || fail "the root is not Debian 12 (bookworm)"

    debian_root_mount -t proc proc "$chroot_dir/proc"
    debian_root_mount --bind /dev "$chroot_dir/dev"
    debian_root_mount -t tmpfs tmpfs "$chroot_dir/tmp"
    cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
    echo "deb $mirror bookworm main" > "$chroot_dir/etc/apt/sources.list"
    host_apt_network_conf > "$chroot_dir/etc/apt/apt.conf.d/00host-network"
    say "apt in the root: bookworm main from $mirror (this machine's apt sources)"
}
