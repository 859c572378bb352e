#!/usr/bin/env bash
# Installs every Debian and PyPI package Kiln needs. Idempotent: packages already present
# are skipped, and `apt-get update` runs at most once per invocation.
set -euo pipefail

DEB_PACKAGES=(
  cmake ninja-build ccache g++ python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools lld-19 clang-19 libclang-rt-19-dev
  libgtest-dev
  spirv-tools spirv-cross libspirv-cross-c-shared-dev
  libvulkan-dev mesa-vulkan-drivers vulkan-tools glslang-tools
  rocm-device-libs libopenblas-dev
)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi
# lit.py, FileCheck, not and count come with llvm-19-tools; nothing from PyPI is needed.
