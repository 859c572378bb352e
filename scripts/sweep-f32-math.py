#!/usr/bin/env python3
"""Sweeps Kiln's f32 math on a device against Python's double-precision libm.

For COUNT arguments (half random bit patterns of every finite float, half
uniform in [-1e5, 1e5]) it runs sin, cos, tan, atan, atan2, asin, acos, pow and
exp through kiln-run, reads the results back from .npy files, and prints each
function's largest distance from the exact value in ulps of the float nearest
it, with the argument. The double result stands in for the exact one (its error
is 2^-29 of a float ulp). docs/targets.md, "f32 math on Vulkan", quotes a run.
Random arguments seldom land near a multiple of pi/2, where the reduction of
sin, cos and tan is hardest; DeviceAgreement.FloatMathAgreesWithLibmOnEveryDevice
has such a case.

  python3 scripts/sweep-f32-math.py [--count N] [--seed S] [--device vulkan]
"""
import argparse
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

KERNEL = """
kernel k(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[9, N])
    params(B: i32 = 256) grid(cdiv(N, B)) {
  let o = program_id(0) * B + arange(0, B);
  let m = o < N;
  let a = load(x[o], mask = m);
  let b = load(y[o], mask = m);
  store(out[0, o], sin(a), mask = m);
  store(out[1, o], cos(a), mask = m);
  store(out[2, o], tan(a), mask = m);
  store(out[3, o], atan(a), mask = m);
  store(out[4, o], atan2(a, b - 1.5), mask = m);
  store(out[5, o], asin(b - 1.0), mask = m);
  store(out[6, o], acos(b - 1.0), mask = m);
  store(out[7, o], pow(b, a * 0.001), mask = m);
  store(out[8, o], exp(a * 0.01), mask = m);
}
"""
FLT_MAX = 3.4028234663852886e38


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def bits_of(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def write_npy(path, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def read_npy(path):
    data = open(path, "rb").read()
    body = data[10 + struct.unpack("<H", data[8:10])[0]:]
    return struct.unpack("<%df" % (len(body) // 4), body)


def ulps(got, want):
    """The distance from got to the exact want in ulps of the float nearest it."""
    if math.isnan(want):
        return 0.0 if math.isnan(got) else math.inf
    nearest = f32(want) if abs(want) <= FLT_MAX else math.copysign(math.inf, want)
    if math.isinf(nearest):
        return 0.0 if got == nearest else math.inf
    mag = abs(nearest)
    ulp = 2.0**104 if mag == FLT_MAX else struct.unpack(
        "<f", struct.pack("<I", bits_of(mag) + 1))[0] - mag
    return abs(got - want) / ulp


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="vulkan")
    parser.add_argument("--kiln-run", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin", "kiln-run"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    xs, ys = [], []
    for i in range(args.count):
        if i % 2:
            x = f32(rng.uniform(-1e5, 1e5))
        else:
            x = math.nan
            while not math.isfinite(x):
                x = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
        xs.append(x)
        ys.append(f32(rng.uniform(0, 2)) if i % 2 else f32(rng.uniform(1.999, 2)))
    references = [
        ("sin", lambda a, b: math.sin(a)),
        ("cos", lambda a, b: math.cos(a)),
        ("tan", lambda a, b: math.tan(a)),
        ("atan", lambda a, b: math.atan(a)),
        ("atan2", lambda a, b: math.atan2(a, f32(b - 1.5))),
        ("asin", lambda a, b: math.asin(f32(b - 1.0))),
        ("acos", lambda a, b: math.acos(f32(b - 1.0))),
        ("pow", lambda a, b: math.pow(b, f32(a * f32(0.001)))),
        ("exp", lambda a, b: math.exp(f32(a * f32(0.01)))),
    ]
    with tempfile.TemporaryDirectory() as work:
        kernel = os.path.join(work, "sweep.kiln")
        open(kernel, "w").write(KERNEL)
        write_npy(os.path.join(work, "x.npy"), xs)
        write_npy(os.path.join(work, "y.npy"), ys)
        run = subprocess.run(
            [args.kiln_run, kernel, "--kernel", "k", "--device", args.device,
             "--load", "x=" + os.path.join(work, "x.npy"),
             "--load", "y=" + os.path.join(work, "y.npy"),
             "--save", os.path.join(work, "out")], capture_output=True, text=True)
        if run.returncode:
            sys.exit("kiln-run failed:\n" + run.stdout + run.stderr)
        out = read_npy(os.path.join(work, "out", "out.npy"))
    n = args.count
    for row, (name, reference) in enumerate(references):
        worst, where = 0.0, None
        for i in range(n):
            try:
                want = reference(xs[i], ys[i])
            except OverflowError:
                want = math.inf
            distance = ulps(out[row * n + i], want)
            if distance > worst:
                worst, where = distance, (xs[i], ys[i], out[row * n + i], want)
        print("%-6s %6.2f ulps" % (name, worst), "" if where is None else
              "(x = %r, y = %r: got %r, want %r)" % where)


if __name__ == "__main__":
    main()
