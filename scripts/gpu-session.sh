#!/usr/bin/env bash
# Everything a session with a GPU machine runs, prepared here in one folder so that
# a single `run` call (carry: gpu-session) does it within the device budget:
# correctness of the CUDA paths first (gpu-check), then the benchmark against
# torch and Triton (gpu-bench).
#
#   bash scripts/gpu-session.sh        # writes gpu-session/ (about 17 MiB)
#   # on the GPU machine, from the repository root (OUT: where logs go):
#   bash gpu-session/run.sh            # ~1 min of tests, then ~5 min of benchmarks
#
# Record both logs in docs/performance.md (and the test results in the issues).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/gpu-check.sh > /dev/null
bash scripts/gpu-bench.sh > /dev/null
rm -rf gpu-session && mkdir gpu-session
mv gpu-check gpu-bench gpu-session/
cat > gpu-session/run.sh <<'RUN'
#!/usr/bin/env bash
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
# The CUDA tests (every OnDevice test on the cuda device, plus the metadata and
# bundle checks), then the same on mma.sync-only and FMA-only builds of the
# kernels to localize a failure; a failure here means the benchmark's numbers
# mean nothing.
timeout 300 bash "$here/gpu-check/run.sh" --gtest_filter='*/cuda:Metadata*:Bundle*' \
  2>&1 | tee "$out/gpu-check.log"
echo "gpu-check exit: ${PIPESTATUS[0]}" | tee -a "$out/gpu-check.log"
timeout 480 bash "$here/gpu-bench/run.sh" 2>&1 | tee "$out/gpu-bench.log"
echo "gpu-bench exit: ${PIPESTATUS[0]}" | tee -a "$out/gpu-bench.log"
cp -r "$here/gpu-bench/out" "$out/gpu-bench-json" 2>/dev/null || true
RUN
chmod +x gpu-session/run.sh
du -sh gpu-session
