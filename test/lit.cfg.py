# -*- Python -*-
# lit configuration for Kiln: every compiler stage is pinned by a FileCheck test.
import os
import re
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".kiln", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs", "e2e", "unit"]
# `X.test.kiln` and `X.test.<what>.kiln` are inputs of the test X.test, not tests.
config.excludes += [name for _, _, names in os.walk(os.path.dirname(__file__))
                    for name in names if re.search(r"\.test(\.[\w-]+)?\.kiln$", name)]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.substitutions.append(("%kiln_examples", os.path.join(config.kiln_src_root, "examples")))
config.substitutions.append(("%kiln_src_root", config.kiln_src_root))
config.substitutions.append(("%kiln_obj_root", config.kiln_obj_root))
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Diagnostics must not depend on the terminal.
config.environment["TERM"] = "dumb"

# Vendor tools the GPU codegen tests run. A test that needs a missing one is
# reported as UNSUPPORTED, visibly, instead of passing.
import shutil
cuda_bin = "/usr/local/cuda/bin"
if shutil.which("ptxas") or os.path.exists(os.path.join(cuda_bin, "ptxas")):
    config.available_features.add("ptxas")
    config.environment["PATH"] += os.pathsep + cuda_bin
    # Blackwell (sm_100, sm_120) needs ptxas from CUDA 12.8 or later.
    import re, subprocess
    ptxas = shutil.which("ptxas") or os.path.join(cuda_bin, "ptxas")
    release = re.search(r"release (\d+)\.(\d+)",
                        subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout)
    if release and (int(release.group(1)), int(release.group(2))) >= (12, 8):
        config.available_features.add("ptxas-blackwell")
    # CUDA 13 dropped Volta (sm_70, sm_72).
    if release and int(release.group(1)) >= 13:
        config.available_features.add("ptxas-without-volta")
for tool in ["spirv-val", "spirv-dis"]:
    if shutil.which(tool):
        config.available_features.add(tool)
if os.path.exists("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc") or \
        os.path.exists(os.path.join(os.environ.get("ROCM_PATH", "/nonexistent"), "amdgcn/bitcode/ocml.bc")):
    config.available_features.add("rocm-device-libs")

# A Vulkan device (lavapipe on CPU-only machines) for the tests that run kernels.
import subprocess
try:
    if subprocess.run(["vulkaninfo", "--summary"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL, timeout=60).returncode == 0:
        config.available_features.add("vulkan")
        # lavapipe's processors are its LP_NUM_THREADS (a test sets them).
        summary = subprocess.run(["vulkaninfo", "--summary"], capture_output=True, text=True,
                                 timeout=60).stdout
        if "llvmpipe" in summary:
            config.available_features.add("lavapipe")
except (OSError, subprocess.TimeoutExpired):
    pass
# Kernel caches of the tests stay inside the build tree.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.kiln_obj_root, "test", "kiln-cache")
