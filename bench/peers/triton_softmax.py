#!/usr/bin/env python3
"""Triton's compile latency for the same row softmax as examples/softmax.kiln,
compiled for cuda sm_90 without a GPU (Triton ships its own ptxas). Prints
`cold_ms warm_ms`: a compile into an empty cache, then the cached compile."""
import os
import shutil
import sys
import tempfile
import time

cache = tempfile.mkdtemp(prefix="kiln-bench-triton-")
os.environ["TRITON_CACHE_DIR"] = cache

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def softmax(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def compile_once():
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "stride": "i32",
                 "BLOCK": "constexpr"}
    try:
        src = ASTSource(fn=softmax, signature=signature, constexprs={"BLOCK": 1024})
    except TypeError:  # older Triton spells it `constants`
        src = ASTSource(fn=softmax, signature=signature, constants={"BLOCK": 1024})
    start = time.perf_counter()
    triton.compile(src, target=GPUTarget("cuda", 90, 32))
    return (time.perf_counter() - start) * 1000


def main():
    colds, warms = [], []
    for _ in range(5):
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        colds.append(compile_once())
        warms.append(compile_once())
    colds.sort()
    warms.sort()
    print("%.3f %.3f" % (colds[len(colds) // 2], warms[len(warms) // 2]))
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report, do not hide: the harness prints the reason
        print("error: %s" % e, file=sys.stderr)
        sys.exit(1)
