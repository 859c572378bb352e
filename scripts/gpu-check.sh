#!/usr/bin/env bash
# Prepares, on this (build) machine, everything the CUDA runtime tests need on a GPU
# machine that has no LLVM: the runtime-only test binary (links kiln-rt, not LLVM),
# the kernels kilnc compiled for every device kind, and the Vulkan loader.
#
#   bash scripts/gpu-check.sh          # writes gpu-check/ (a few MiB)
#   # on the GPU machine, from the repository root:
#   bash gpu-check/run.sh              # runs the CUDA (and every other present) tests,
#                                      # then the CUDA ones on mma.sync and FMA builds
#
# Record what the run printed in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh > /dev/null
rm -rf gpu-check && mkdir -p gpu-check/lib
cp build/bin/kiln-runtime-tests gpu-check/
cp -r build/test/kernels build/test/kernels-mma-sync build/test/kernels-none gpu-check/
cp -L /usr/lib/x86_64-linux-gnu/libvulkan.so.1 gpu-check/lib/ 2>/dev/null || true
cat > gpu-check/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs kiln-rt's device tests here; devices this machine lacks are skipped, visibly.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export KILN_KERNELS_DIR=$here/kernels
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
"$here/kiln-runtime-tests" --gtest_color=no "$@"
status=$?
# The same tests on kernels built with mma.sync instead of wgmma, and with no
# matrix instructions: where only the first run fails, the tensor-core path is at
# fault. Skipped with KILN_CHECK_VARIANTS=0.
if [ "${KILN_CHECK_VARIANTS:-1}" != 0 ]; then
  for variant in mma-sync none; do
    echo "=== CUDA kernels built with --matrix-units=$variant"
    KILN_KERNELS_DIR=$here/kernels-$variant "$here/kiln-runtime-tests" --gtest_color=no \
      --gtest_filter='*/cuda' --gtest_brief=1 || status=1
  done
fi
exit $status
RUN
chmod +x gpu-check/run.sh
du -sh gpu-check
