#!/usr/bin/env python3
"""The peers of bench/kiln-gpu-bench.cpp on the same shapes, on the same GPU:
torch.matmul (cuBLAS) in f16 and bf16, torch._scaled_mm in fp8 (e4m3),
torch's scaled_dot_product_attention,
torch.softmax / layer_norm / rms-norm written in torch, a Triton row softmax and
layernorm written here for the comparison, and the device copy bandwidth.
Prints one JSON object per line, like kiln-gpu-bench. Exits 0 with a message
when there is no CUDA device (nothing to compare)."""
import json
import sys

small = "--small" in sys.argv
try:
    import torch
except ImportError:
    print("gpu_peers: torch is not installed", file=sys.stderr)
    sys.exit(0)
if not torch.cuda.is_available():
    print("gpu_peers: no CUDA device", file=sys.stderr)
    sys.exit(0)

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

REPEATS = 3 if small else 20


def median_ms(fn):
    for _ in range(2):
        fn()
    times = []
    for _ in range(REPEATS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def report(op, shape, peer, ms, flops=0.0, bytes_=0.0):
    print(json.dumps({"op": op, "shape": shape, "peer": peer, "ms": ms,
                      "tflops": flops / ms / 1e9, "gbs": bytes_ / ms / 1e6}), flush=True)


dev = "cuda"
print("gpu_peers on", torch.cuda.get_device_name(0), file=sys.stderr)

# Copy bandwidth: the ceiling for the row kernels.
big = torch.empty(1 << (24 if small else 28), dtype=torch.float32, device=dev)
out = torch.empty_like(big)
ms = median_ms(lambda: out.copy_(big))
report("copy", f"{big.numel()}", "torch copy_", ms, bytes_=2.0 * big.numel() * 4)
del big, out

n = 256 if small else 8192
for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    ms = median_ms(lambda: torch.matmul(a, b))
    report(f"gemm-{name}", f"{n}^3", "torch.matmul (cuBLAS)", ms, flops=2.0 * n ** 3)

# fp8 (e4m3) GEMM with a bf16 result: torch._scaled_mm (cuBLASLt), whose B must be
# column-major. Its signature moved between torch releases; a failure is reported,
# not fatal.
if hasattr(torch, "float8_e4m3fn"):
    try:
        a8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        b8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.tensor(1.0, device=dev)
        ms = median_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16))
        report("gemm-f8e4m3", f"{n}^3", "torch._scaled_mm (cuBLASLt)", ms, flops=2.0 * n ** 3)
    except Exception as e:  # noqa: BLE001 - any torch error means no peer figure
        print("gpu_peers: fp8 GEMM peer failed:", e, file=sys.stderr)

# int8 GEMM: torch._int_mm (cuBLAS, i8 in, i32 out) alone; Kiln's W8A8 kernel also
# scales each result and rounds it to f16 in the same launch.
try:
    ai = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8)
    bi = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8)
    ms = median_ms(lambda: torch._int_mm(ai, bi))
    report("gemm-w8a8", f"{n}^3", "torch._int_mm (cuBLAS, unscaled)", ms, flops=2.0 * n ** 3)
except Exception as e:  # noqa: BLE001 - any torch error means no peer figure
    print("gpu_peers: int8 GEMM peer failed:", e, file=sys.stderr)

# The MoE grouped GEMM as eager PyTorch MoE layers run it: one torch.matmul per
# expert over its rows (f16 out where Kiln writes f32).
t, k, nn, experts = (512, 256, 256, 8) if small else (16384, 4096, 4096, 8)
xm = torch.randn(t, k, device=dev, dtype=torch.float16)
wm = torch.randn(experts, k, nn, device=dev, dtype=torch.float16)
ym = torch.empty(t, nn, device=dev, dtype=torch.float16)
per = t // experts


def moe_loop():
    for e in range(experts):
        torch.matmul(xm[e * per:(e + 1) * per], wm[e], out=ym[e * per:(e + 1) * per])


report("moe-f16", f"8x{per}x{k}x{nn}", "torch.matmul per expert", median_ms(moe_loop),
       flops=2.0 * t * k * nn)
del xm, wm, ym

rows, cols = (64, 1024) if small else (16384, 4096)
x = torch.randn(rows, cols, device=dev)
w = torch.randn(cols, device=dev)
bias = torch.randn(cols, device=dev)
shape = f"{rows}x{cols}"
moved = 2.0 * rows * cols * 4
report("softmax", shape, "torch.softmax", median_ms(lambda: torch.softmax(x, dim=1)), bytes_=moved)
report("layernorm", shape, "torch layer_norm",
       median_ms(lambda: torch.nn.functional.layer_norm(x, (cols,), w, bias, 1e-5)), bytes_=moved)
report("rmsnorm", shape, "torch (eager)",
       median_ms(lambda: x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-6) * w), bytes_=moved)
classes = (torch.arange(rows, device=dev) * 7919) % cols
report("cross_entropy", shape, "torch cross_entropy",
       median_ms(lambda: torch.nn.functional.cross_entropy(x, classes, reduction="none")),
       bytes_=rows * cols * 4.0 + rows * 16.0)

if triton is not None:
    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        v = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(y_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n_cols
        v = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
        mean = tl.sum(v, axis=0) / n_cols
        d = tl.where(mask, v - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
        wv = tl.load(w_ptr + offs, mask=mask)
        bv = tl.load(b_ptr + offs, mask=mask)
        tl.store(y_ptr + row * stride + offs, d * rstd * wv + bv, mask=mask)

    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    report("softmax", shape, "Triton",
           median_ms(lambda: softmax_kernel[(rows,)](x, y, cols, cols, BLOCK=block)), bytes_=moved)
    report("layernorm", shape, "Triton",
           median_ms(lambda: layernorm_kernel[(rows,)](x, w, bias, y, cols, cols, 1e-5,
                                                        BLOCK=block)), bytes_=moved)

z, s, d = (2, 128, 64) if small else (32, 4096, 64)
q, k, v = (torch.randn(1, z, s, d, device=dev) for _ in range(3))
for causal, name in ((False, "attention"), (True, "attention_causal")):
    ms = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=causal, scale=0.125))
    report(name, f"{z}x{s}x64", "torch SDPA (f32)", ms,
           flops=4.0 * z * s * s * d * (0.5 if causal else 1.0))
qh, kh, vh = (t.half() for t in (q, k, v))
for causal, name in ((False, "attention_f16"), (True, "attention_f16_causal")):
    ms = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
        qh, kh, vh, is_causal=causal, scale=0.125))
    report(name, f"{z}x{s}x64", "torch SDPA (f16, flash)", ms,
           flops=4.0 * z * s * s * d * (0.5 if causal else 1.0))
