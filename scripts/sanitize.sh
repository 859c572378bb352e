#!/usr/bin/env bash
# Builds Kiln's own code with AddressSanitizer and UndefinedBehaviorSanitizer (LLVM
# and MLIR stay the uninstrumented Debian libraries) in build-asan/, and runs the
# whole test suite there. Any sanitizer report fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh > /dev/null
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=ON \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ > /dev/null
fi
# The JIT maps memory ASan cannot see into; leaks inside LLVM's own globals are not
# ours. halt_on_error makes any real report fail its test.
# allocator_may_return_null: out-of-memory tests expect malloc to fail, not abort.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the free part of a slab
# in instrumented code only. A slab that Kiln's (instrumented, inlined) code starts
# in an MLIR uniquer is then handed out by libMLIR's uninstrumented code, which
# never unpoisons it, and MLIR's own writes there read as use-after-poison.
asan=halt_on_error=1:detect_odr_violation=0:allocator_may_return_null=1:allow_user_poisoning=0
# The build runs the instrumented kilnc to compile the test kernels.
ASAN_OPTIONS=$asan:detect_leaks=0 cmake --build build-asan -j "${KILN_BUILD_JOBS:-2}"
cd build-asan
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$(pwd)/../scripts/lsan.supp
# The installed-package test rebuilds examples/host without sanitizers; skip it here.
# Mesa's Vulkan driver is unloaded at exit, so its one-time allocations cannot be
# attributed or suppressed: tests that open a Vulkan device run without leak
# checking (ASan's memory-error checks stay on); everything else checks leaks.
# (Devices.DefaultIsTheFastestPresent opens every kind, Vulkan too.)
vulkan='vulkan|c-api|^lit$|session|Devices\.DefaultIsTheFastestPresent'
ASAN_OPTIONS=$asan:detect_leaks=1 \
  ctest --output-on-failure -j "${KILN_TEST_JOBS:-2}" -E "host-examples|$vulkan"
ASAN_OPTIONS=$asan:detect_leaks=0 \
  ctest --output-on-failure -j "${KILN_TEST_JOBS:-2}" -R "$vulkan"
