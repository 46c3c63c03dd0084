#!/usr/bin/env bash
# W1 of bench/WORKLOADS.md alone (with the ceilings for its floors), MixLab and PyTorch
# in one call on the same GPU: run_bench.sh restricted to that workload.
# Usage: bench/run_w1.sh MIXLAB_CLI OUT_DIR [batches]
here="$(cd "$(dirname "$0")" && pwd)"
BENCH_PARTS="ceilings w1" W1_BATCHES="${3:-32,256,1024,4096}" exec "$here/run_bench.sh" "$1" "$2"
