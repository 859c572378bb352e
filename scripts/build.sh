#!/usr/bin/env bash
# Configures (once) and builds Kiln in build/ with Ninja and ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
fi
# Two jobs: MLIR-heavy translation units need about 1 GB each.
cmake --build build -j "${KILN_BUILD_JOBS:-2}"
