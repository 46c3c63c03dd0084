# Sourced by tools/setup.sh and tools/fuzz.sh.
# apt_install_missing TAG PACKAGE...: installs those of the Debian packages that are not
# installed yet, with apt-get --no-install-recommends (through sudo when not root), and
# says which on stderr, prefixed by TAG. Installs nothing when all are there.
apt_install_missing() {
    local tag="$1" p
    shift
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "$tag: installing ${missing[*]}" >&2
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || {
            echo "$tag: not root and sudo is missing: as root, apt-get install ${missing[*]}" >&2
            return 1
        }
        sudo=(sudo)
    fi
    # Through env: sudo drops the caller's environment, DEBIAN_FRONTEND included.
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
