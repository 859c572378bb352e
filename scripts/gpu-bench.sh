#!/usr/bin/env bash
# Kiln against torch (cuBLAS, SDPA) and Triton on an NVIDIA GPU, in one run.
#
# On this (build) machine, which needs no GPU:
#   bash scripts/gpu-bench.sh            # writes gpu-bench/ (runtime-only binary + kernels)
# On the GPU machine (CUDA, torch and triton installed; no LLVM needed):
#   bash gpu-bench/run.sh                # prints the table; raw JSON in gpu-bench/out/
#
# Kiln's kernels (kilnc, sm_90) are timed by kiln-gpu-bench with CUDA events; the
# peers by bench/peers/gpu_peers.py with torch.cuda events, on the same shapes:
# GEMM f16/bf16/fp8/int8 8192^3, the MoE grouped GEMM (8 experts of 2048 rows, 4096 x 4096
# weights), softmax/layernorm/rmsnorm 16384x4096, flash attention 32x4096x64
# (causal and not). Record the table in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh > /dev/null
rm -rf gpu-bench && mkdir -p gpu-bench/lib
cp build/bin/kiln-gpu-bench gpu-bench/
cp -r build/test/kernels gpu-bench/kernels
cp bench/peers/gpu_peers.py bench/gpu_report.py gpu-bench/
cat > gpu-bench/run.sh <<'RUN'
#!/usr/bin/env bash
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null || true
"$here/kiln-gpu-bench" "$here/kernels" --require-device "$@" | tee "$here/out/kiln.jsonl"
python3 "$here/gpu_peers.py" "$@" | tee "$here/out/peers.jsonl"
python3 "$here/gpu_report.py" "$here/out/kiln.jsonl" "$here/out/peers.jsonl"
RUN
chmod +x gpu-bench/run.sh
du -sh gpu-bench
