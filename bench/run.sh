#!/usr/bin/env bash
# One command for the side-by-side benchmarks on this machine: builds, runs
# kiln-bench (Kiln against OpenBLAS, C++ loops, GLSL, nvcc, glslang, Triton, IREE), writes
# bench/results/results.json and PNG plots, and prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install --quiet matplotlib
# Triton compiles for CUDA without a GPU; it is the compile-latency peer.
python3 -c "import triton" 2>/dev/null || python3 -m pip install --quiet triton || true
# IREE compiles linalg.softmax for Vulkan: the other compile-latency peer.
command -v iree-compile > /dev/null || python3 -m pip install --quiet iree-base-compiler || true
bash scripts/build.sh
mkdir -p bench/results
./build/bin/kiln-bench bench/results/results.json | tee bench/results/table.txt
python3 bench/plot.py bench/results/results.json bench/results
