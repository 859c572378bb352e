#!/usr/bin/env bash
# Compiles every example kernel for every target and prints a table of what was
# written: scripts/compile-examples.sh [KILNC [OUT]] (defaults: build/bin/kilnc,
# build/demo). A Metal source holds one kernel, so Metal gets one file per kernel,
# named from the Vulkan build's metadata. Fails on the first error; the test suite
# runs it (examples.every-target).
set -euo pipefail
cd "$(dirname "$0")/.."
KILNC=${1:-build/bin/kilnc}
OUT=${2:-build/demo}
mkdir -p "$OUT"

row() { printf '%-32s %-14s %-8s %s\n' "$@"; }
row example target emit bytes
for f in examples/*.kiln; do
  name=$(basename "$f" .kiln)
  for spec in cpu:so cuda:sm_90:ptx amdgpu:gfx942:hsaco vulkan:spirv; do
    emit=${spec##*:}
    target=${spec%:*}
    out="$OUT/$name.${target//:/_}.$emit"
    "$KILNC" "$f" --target="$target" --emit="$emit" -o "$out"
    row "$name" "$target" "$emit" "$(stat -c %s "$out")"
  done
  kernels=$(python3 -c 'import json, sys
print(" ".join(k["name"] for k in json.load(open(sys.argv[1]))["kernels"]))' \
    "$OUT/$name.vulkan.spirv.json")
  for kernel in $kernels; do
    out="$OUT/$name.$kernel.metal"
    "$KILNC" "$f" --target=metal --emit=msl --kernel="$kernel" -o "$out"
    row "$name:$kernel" metal msl "$(stat -c %s "$out")"
  done
done
