"""Writes and reads small .npy files without NumPy, for kiln-run's lit tests.

  npy.py write FILE DESCR SHAPE V1 V2 ...   e.g. npy.py write x.npy '<f4' 2,3 1 2 3 4 5 6
      [--v2] [--fortran] [--shape-twice]   (the last adds 'shape' again, reversed)
      [--header=TEXT]                       (the header dict as given; DESCR packs the data)
  npy.py read FILE                          prints: DESCR (SHAPE) V1 V2 ...
"""
import ast
import struct
import sys

CODES = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q",
         "u1": "B", "u2": "H", "u4": "I", "u8": "Q", "b1": "B"}  # bools as bytes


def write(path, descr, shape, values, version=1, fortran=False, shape_twice=False,
          header=None):
    dims = tuple(int(s) for s in shape.split(",") if s)
    if header is None:
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %r, }" % (descr, fortran, dims)
    if shape_twice:
        header = header[:-1] + "'shape': %r, }" % (dims[::-1],)
    preamble = 10 if version == 1 else 12
    header += " " * ((64 - (preamble + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    code = CODES[descr[1:]]
    parse = float if code in "efd" else int
    data = struct.pack("<%d%s" % (len(values), code), *[parse(v) for v in values])
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + data)


def read(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", "no magic"
    start = 10 if data[6] == 1 else 12
    size = struct.unpack("<H" if data[6] == 1 else "<I", data[8:start])[0]
    assert (start + size) % 64 == 0, "data not 64-byte aligned"
    header = ast.literal_eval(data[start:start + size].decode())
    code = CODES[header["descr"][1:]]
    body = data[start + size:]
    count = len(body) // struct.calcsize(code)
    values = struct.unpack("<%d%s" % (count, code), body)
    shape = header["shape"]
    print(header["descr"], shape, header["fortran_order"],
          " ".join(("%g" % v) if code in "efd" else str(int(v)) for v in values))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        header = [a[len("--header="):] for a in sys.argv if a.startswith("--header=")]
        args = [a for a in sys.argv[2:]
                if a not in ("--v2", "--fortran", "--shape-twice") and not a.startswith("--header=")]
        write(args[0], args[1], args[2], args[3:], 2 if "--v2" in sys.argv else 1,
              "--fortran" in sys.argv, "--shape-twice" in sys.argv, header[0] if header else None)
    else:
        read(sys.argv[2])
