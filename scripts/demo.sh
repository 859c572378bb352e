#!/usr/bin/env bash
# The main job: install what is missing, build, compile every example kernel for
# every target, then run each one on the best device present (a CUDA, HIP or
# Vulkan GPU, else the CPU backend, and then Vulkan on the CPU if present;
# override with KILN_DEVICE), checked against the CPU backend and timed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh

KILNC=build/bin/kilnc
RUN=build/bin/kiln-run
OUT=build/demo
mkdir -p "$OUT"

echo
echo "== Compiling examples/*.kiln for every target =="
bash scripts/compile-examples.sh "$KILNC" "$OUT"

# Every example, checked against the CPU backend and timed; "$@" picks the device.
run_examples() {
  "$RUN" "$@" examples/vector_add.kiln --shape N=4194304 --check --bench
  "$RUN" "$@" examples/softmax.kiln --shape M=4096,N=1000 --check --bench
  "$RUN" "$@" examples/layernorm.kiln --shape M=4096,N=1000 --arg eps=1e-5 --check --bench
  "$RUN" "$@" examples/reduce.kiln --kernel row_sum --shape M=4096,N=1000 --check --bench
  "$RUN" "$@" examples/reduce.kiln --kernel col_sum --shape M=4096,N=1000 --check --bench
  "$RUN" "$@" examples/matmul.kiln --shape M=256,N=256,K=256 --flops 2*M*N*K --check --bench
  "$RUN" "$@" examples/matmul.kiln --kernel matmul_bias_act --shape M=256,N=256,K=256 --arg alpha=0.5 --flops 2*M*N*K --check --bench
  "$RUN" "$@" examples/matmul.kiln --kernel matmul_f16 --shape M=256,N=256,K=256 --flops 2*M*N*K --check --bench
  "$RUN" "$@" examples/matmul.kiln --kernel matmul_persistent --shape M=256,N=256,K=256 --flops 2*M*N*K \
    --check --bench
  # Eight experts of 512 rows each: ends = 512, 1024, ...
  "$RUN" "$@" examples/moe.kiln --shape T=4096,K=512,N=512,E=8 --fill ends=512:512 --flops 2*T*N*K \
    --check --bench
  "$RUN" "$@" examples/bmm.kiln --shape Z=8,M=128,N=128,K=128 --flops 2*Z*M*N*K --check --bench
  "$RUN" "$@" examples/rmsnorm.kiln --shape M=4096,N=1000 --arg eps=1e-6 --check --bench
  "$RUN" "$@" examples/attention.kiln --shape Z=8,S=512 --arg scale=0.125 --flops 4*Z*S*S*64 --check --bench
  "$RUN" "$@" examples/attention.kiln -D CAUSAL=true --shape Z=8,S=512 --arg scale=0.125 --check --bench
  "$RUN" "$@" examples/histogram.kiln --shape N=1048576 --arg lo=-1 --arg hi=1 --check --bench
  "$RUN" "$@" examples/dropout.kiln --shape N=4194304 --arg p=0.1 --arg seed=42 --check --bench
  "$RUN" "$@" examples/searchsorted.kiln --shape N=1048576,Q=1048576 --check --bench
  "$RUN" "$@" examples/linear_recurrence.kiln --shape T=4096,D=1024 --check --bench
  "$RUN" "$@" examples/linear_recurrence.kiln --kernel linear_recurrence_loop --shape T=4096,D=1024 \
    --check --bench
  "$RUN" "$@" examples/rope.kiln --shape R=65536,P=4096,H2=32 --check --bench
  "$RUN" "$@" examples/quant_matmul.kiln --shape M=256,N=1024,K=1024,KP=512,G=8 --flops 2*M*N*K \
    --check --bench
  "$RUN" "$@" examples/layernorm_backward.kiln --shape M=4096,N=1000,G=64 --arg eps=1e-5 \
    --zero dw_partial,db_partial,locks --check --bench
}

echo
echo "== Devices present =="
"$RUN" --devices
echo
echo "== Running on the best device, checked against the CPU backend =="
run_examples
# Without a GPU the best device is the CPU backend itself; run on Vulkan as well
# (lavapipe here), so that --check compares two devices.
devices=$("$RUN" --devices)
if [[ -z "${KILN_DEVICE:-}" && "$devices" == cpu* && "$devices" == *$'\n'vulkan* ]]; then
  echo
  echo "== Running on Vulkan, checked against the CPU backend =="
  run_examples --device vulkan
fi
