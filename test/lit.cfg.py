# -*- Python -*-
# lit configuration for Kiln: every compiler stage is pinned by a FileCheck test.
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir", ".kiln", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "Inputs", "e2e", "unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.substitutions.append(("%kiln_examples", os.path.join(config.kiln_src_root, "examples")))
config.substitutions.append(("%kiln_src_root", config.kiln_src_root))
config.substitutions.append(("%kiln_obj_root", config.kiln_obj_root))
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Diagnostics must not depend on the terminal.
config.environment["TERM"] = "dumb"
