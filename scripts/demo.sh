#!/usr/bin/env bash
# The main job: install what is missing, build, then compile every example kernel
# and run it on the best device present (the CPU backend in this build), checking
# each result against a C++ reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/bin/kiln-demo
