#!/usr/bin/env bash
# Install what is missing, build, and run every test (lit suite, end-to-end and unit
# tests) through ctest. ctest's summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${KILN_TEST_JOBS:-2}"
