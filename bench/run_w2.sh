#!/usr/bin/env bash
# W2 of bench/WORKLOADS.md alone (ResNet-18, CIFAR form, 100 classes; with the ceilings
# for its floors), MixLab and PyTorch in one call: run_bench.sh restricted to that workload.
# Usage: bench/run_w2.sh MIXLAB_CLI OUT_DIR [batches]
here="$(cd "$(dirname "$0")" && pwd)"
BENCH_PARTS="ceilings w2" W2_BATCHES="${3:-128,512}" exec "$here/run_bench.sh" "$1" "$2"
