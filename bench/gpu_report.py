#!/usr/bin/env python3
"""Joins kiln-gpu-bench's and gpu_peers.py's JSON lines (same op and shape) into
one table: Kiln's time, each peer's, the ratio peer_time / kiln_time (above 1:
Kiln is faster) and, for the row kernels, Kiln's share of the copy bandwidth.

    gpu_report.py kiln.jsonl peers.jsonl"""
import json
import sys


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


kiln, peers = load(sys.argv[1]), load(sys.argv[2])
copy = next((p["gbs"] for p in peers if p["op"] == "copy"), None)
if copy:
    print(f"device copy bandwidth: {copy:.0f} GB/s")
print(f"{'op':<18} {'shape':<18} {'kiln ms':>9} {'peer':<24} {'peer ms':>9} {'ratio':>7} {'kiln':>16}")
for k in kiln:
    if "error" in k:
        print(f"{k['op']:<18} {k['shape']:<18} failed: {k['error']}")
        continue
    rate = f"{k['tflops']:.1f} TFLOP/s" if k["tflops"] else (
        f"{100 * k['gbs'] / copy:.0f}% of copy" if copy else f"{k['gbs']:.0f} GB/s")
    matched = [p for p in peers if p["op"] == k["op"] and p["shape"] == k["shape"]]
    if not matched:
        print(f"{k['op']:<18} {k['shape']:<18} {k['ms']:>9.3f} {'(no peer)':<24} {'':>9} {'':>7} {rate:>16}")
    for p in matched:
        print(f"{k['op']:<18} {k['shape']:<18} {k['ms']:>9.3f} {p['peer']:<24} {p['ms']:>9.3f} "
              f"{p['ms'] / k['ms']:>6.2f}x {rate:>16}")
