#!/usr/bin/env bash
# Installs Kiln into a scratch prefix, builds examples/host against the installed
# package with find_package(Kiln), and runs the JIT and AOT programs on the CPU and
# on Vulkan (when the machine has a Vulkan device).
set -euo pipefail
src=$1
build=$2
prefix=$build/host-test/prefix
hostbuild=$build/host-test/build
cmake --install "$build" --prefix "$prefix" > /dev/null
cmake -S "$src/examples/host" -B "$hostbuild" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$hostbuild" -j 2 > /dev/null
export KILN_CACHE_DIR=$build/host-test/cache
devices="cpu"
if command -v vulkaninfo > /dev/null && vulkaninfo --summary > /dev/null 2>&1; then
  devices="cpu vulkan"
else
  echo "host-examples: no Vulkan device; running on the CPU only"
fi
for device in $devices; do
  KILN_DEVICE=$device "$hostbuild/jit_softmax"
  KILN_DEVICE=$device "$hostbuild/aot_softmax"
done
