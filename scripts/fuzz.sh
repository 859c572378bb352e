#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan + UBSan on Kiln's own code) in
# build-fuzz/ and runs each for KILN_FUZZ_SECONDS (default 20) from the seed corpora
# in fuzz/corpus/. A crash, leak, sanitizer report or hang fails the run; the input
# that triggered it is left in build-fuzz/findings/ to become a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${KILN_FUZZ_SECONDS:-20}
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 > /dev/null
fi
cmake --build build-fuzz -j "${KILN_BUILD_JOBS:-2}" \
  --target kiln-fuzz-parser kiln-fuzz-frontend kiln-fuzz-compile kiln-fuzz-kilnir \
  kiln-fuzz-bundle
mkdir -p build-fuzz/findings
# allow_user_poisoning=0: see scripts/sanitize.sh (LLVM's slab allocator).
export ASAN_OPTIONS=allow_user_poisoning=0
run() {
  local name=$1 corpus=$2
  shift 2 # the rest: extra libFuzzer flags
  local work=build-fuzz/corpus-$name
  # Inputs that once crashed must keep passing.
  for input in fuzz/regressions/"$name"-*; do
    [ -e "$input" ] && "build-fuzz/bin/kiln-fuzz-$name" "$input" > /dev/null 2>&1 ||
      { [ -e "$input" ] && echo "fuzz: regression $input fails again" && exit 1; }
  done
  mkdir -p "$work"
  cp -n "$corpus"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $name for ${seconds}s"
  # -rss_limit_mb: MLIR contexts are large; -timeout: a hang is a failure.
  ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 "build-fuzz/bin/kiln-fuzz-$name" "$work" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/findings/"$name"- "$@" 2>&1 | tail -4
}
run parser fuzz/corpus/kiln -dict=fuzz/kiln.dict
run frontend fuzz/corpus/kiln -dict=fuzz/kiln.dict
run compile fuzz/corpus/kiln -dict=fuzz/kiln.dict
run kilnir fuzz/corpus/ir
run bundle fuzz/corpus/bundle
echo "fuzz: no crashes"
