#!/usr/bin/env bash
# Install what is missing, build, fuzz for a bounded time, and run every test (lit
# suite, unit, end-to-end, runtime, session and host tests) through ctest. ctest's
# summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# Bounded fuzzing of the front end, the compile pipelines, kiln IR parsing and the
# bundle reader under ASan/UBSan (KILN_FUZZ_SECONDS each; 0 skips).
if [ "${KILN_FUZZ_SECONDS:-20}" != 0 ]; then
  bash scripts/fuzz.sh
fi
cd build
ctest --output-on-failure -j "${KILN_TEST_JOBS:-2}"
