#!/usr/bin/env bash
# Checks that includes between MixLab's folders run one way, so the folders stay the
# picture of the design (docs/ARCHITECTURE.md): a file includes headers of its own folder
# and of folders ranked below it, never of a folder that depends on it.
#   core/src:  base < spec < data, backends < model < analysis < train < report < check
#              (backends/cpu and backends/cuda do not include each other)
#   public headers core/include/mixlab/X.h rank with the folder that implements them
#   gui:       common < designer, runs < charts < numerics, analysis < files < app
#   cli/ and gui/ include the engine through its public headers only.
# Usage: tools/check_layering.sh   Exit status: 0 with one "layering: ..." line; 1 naming
# every include that runs the wrong way.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

declare -A core_rank=([base]=0 [spec]=1 [data]=2 [backends]=2 [model]=3 [analysis]=4
                      [train]=5 [report]=6 [check]=7)
declare -A gui_rank=([common]=0 [designer]=1 [runs]=1 [charts]=2 [numerics]=3 [analysis]=3 [files]=4 [app]=5)
# Public headers without a .cpp of the same name under core/src: the folder they belong to.
declare -A public_home=([error]=base [dtype]=base [output_head]=base [backend]=backends
                        [device]=backends [step_profile]=analysis [trainer]=train
                        [run_group]=train [backend_check]=check [report]=report)

problems=()
# Includes that still run the wrong way, each with the work that removes it; the list
# only shrinks.
known=()

# The core folder a public header belongs to: the folder of X.cpp, else public_home.
declare -A cpp_folder=()
while IFS= read -r cpp; do
    cpp_folder[$(basename "$cpp" .cpp)]="${cpp%%/*}"
done < <(find core/src -name '*.cpp' -printf '%P\n')
public_folder() {
    local name="$1"
    echo "${public_home[$name]:-${cpp_folder[$name]:-?}}"
}

# "file<TAB>included-path" for every quoted include of the files under the folders given,
# with one grep (a process per file is slow on a busy machine).
includes_in() {
    grep -rH --include='*.cpp' --include='*.h' --include='*.cu' --include='*.cuh' \
         '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$@" |
        sed 's/^\([^:]*\):[^"]*"\([^"]*\)".*/\1\t\2/' | sort
}

# Engine sources: a file in folder F (rank r) may include F's own headers and those of
# folders ranked below r; folders of equal rank do not include each other.
check_core_include() {
    local file="$1" from="$2" inc="$3" to rank_from rank_to
    case "$inc" in
        mixlab/*) to="$(public_folder "$(basename "$inc" .h)")" ;;
        *) to="${inc%%/*}" ;;
    esac
    [ -n "${core_rank[$to]:-}" ] || { problems+=("$file: \"$inc\" is in no known engine folder"); return; }
    [ "$to" = "$from" ] && return
    rank_from="${core_rank[$from]}"
    rank_to="${core_rank[$to]}"
    if [ "$rank_to" -ge "$rank_from" ]; then
        local k
        for k in "${known[@]}"; do [ "$k" = "$file includes \"$inc\"" ] && return; done
        problems+=("$file ($from) includes \"$inc\" ($to): $to does not sit below $from")
    fi
}

while IFS=$'\t' read -r file inc; do
    rel="${file#core/src/}"
    from="${rel%%/*}"
    [ -n "${core_rank[$from]:-}" ] || { problems+=("$file: not in a known engine folder"); continue; }
    case "$inc" in
        *.moc) continue ;;
        backends/cpu/*) [[ "$rel" == backends/cuda/* ]] && problems+=("$file includes \"$inc\": the CUDA backend does not include the CPU backend") ;;
        backends/cuda/*) [[ "$rel" == backends/cuda/* ]] || problems+=("$file includes \"$inc\": nothing outside backends/cuda includes it (the module is loaded with dlopen)") ;;
    esac
    check_core_include "$file" "$from" "$inc"
done < <(includes_in core/src)

# Public headers among themselves, by the folders they belong to.
while IFS=$'\t' read -r file inc; do
    from="$(public_folder "$(basename "$file" .h)")"
    [ -n "${core_rank[$from]:-}" ] || { problems+=("$file: belongs to no known engine folder"); continue; }
    case "$inc" in
        mixlab/*) check_core_include "$file" "$from" "$inc" ;;
        *) problems+=("$file includes \"$inc\": a public header includes only public headers") ;;
    esac
done < <(includes_in core/include/mixlab)

# The app: by folder rank; the engine only through its public headers.
while IFS=$'\t' read -r file inc; do
    rel="${file#gui/}"
    from="${rel%%/*}"
    [ -n "${gui_rank[$from]:-}" ] || { problems+=("$file: not in a known app folder"); continue; }
    case "$inc" in
        mixlab/*|*.moc) continue ;;
    esac
    to="${inc%%/*}"
    if [ -z "${gui_rank[$to]:-}" ]; then
        problems+=("$file includes \"$inc\": not an app folder or a public engine header")
    elif [ "$to" != "$from" ] && [ "${gui_rank[$to]}" -ge "${gui_rank[$from]}" ]; then
        problems+=("$file ($from) includes \"$inc\" ($to): $to does not sit below $from")
    fi
done < <(includes_in gui)

# The CLI: its own files and the engine's public headers.
while IFS=$'\t' read -r file inc; do
    case "$inc" in
        mixlab/*) ;;
        */*) problems+=("$file includes \"$inc\": mixlab-cli uses the engine's public headers only") ;;
    esac
done < <(includes_in cli)

if [ ${#problems[@]} -gt 0 ]; then
    printf 'FAIL: %s\n' "${problems[@]}" >&2
    exit 1
fi
echo "layering: includes run one way in core/src (${#core_rank[@]} folders), the app (${#gui_rank[@]}) and the CLI"
