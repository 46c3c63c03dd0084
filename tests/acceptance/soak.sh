#!/usr/bin/env bash
# The long-run soak: 100,000 CPU training steps through the app's worker, RunStore and
# views (charts, runs table, log) in a real X window (Xvfb via xvfb-run; offscreen when
# xvfb-run is absent), reporting VmRSS/VmHWM at every 10,000 steps and the largest
# event-loop delay. It is tests/gui/tst_long_run at full length.
#
# Usage: tests/acceptance/soak.sh [build folder, default build] [steps, default 100000]
# Writes the report to soak-report.txt in the build folder and prints it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
steps="${2:-100000}"
test_bin="$build/bin/tst_long_run"
[[ -x "$test_bin" ]] || { echo "$0: $test_bin not built (ninja -C $build tst_long_run)" >&2; exit 2; }

report="$build/soak-report.txt"
export MIXLAB_SOAK_STEPS="$steps" MIXLAB_SOAK_REPORT="$report"
# One OpenMP thread: the tiny model's GEMMs gain nothing from more, and on a small shared
# machine spinning OpenMP workers only steal time from the GUI thread being measured.
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
if command -v xvfb-run >/dev/null; then
    unset QT_QPA_PLATFORM
    xvfb-run -a -s "-screen 0 1600x1000x24" "$test_bin" -maxwarnings 0
else
    QT_QPA_PLATFORM=offscreen "$test_bin" -maxwarnings 0
fi
echo "report: $report"
cat "$report"
