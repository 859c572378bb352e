#!/usr/bin/env python3
"""Plots kiln-bench's JSON: throughput against size for GEMM (in the style of Triton's
perf reports) and the Kiln/peer ratio of every other benchmark."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

results = json.load(open(sys.argv[1]))
outdir = sys.argv[2]
os.makedirs(outdir, exist_ok=True)
rows = results["rows"]

# GEMM: GFLOP/s against size, Kiln and OpenBLAS, one and all threads.
fig, ax = plt.subplots(figsize=(7, 4.5))
for op, style in [("sgemm-1t", "-"), ("sgemm-%dt" % results["threads"], "--")]:
    pts = [r for r in rows if r["op"] == op]
    if not pts:
        continue
    sizes = [int(r["size"].split("^")[0]) for r in pts]
    ax.plot(sizes, [r["kiln"] for r in pts], "o" + style, label="Kiln " + op[6:])
    ax.plot(sizes, [r["peer"] for r in pts], "s" + style, label="OpenBLAS " + op[6:])
ax.set_xscale("log", base=2)
ax.set_xlabel("M = N = K")
ax.set_ylabel("GFLOP/s")
ax.set_title("fp32 GEMM on the CPU")
ax.legend()
ax.grid(True, alpha=0.3)
fig.tight_layout()
fig.savefig(os.path.join(outdir, "cpu-sgemm.png"), dpi=110)

# Everything else: Kiln / peer.
others = [r for r in rows if not r["op"].startswith("sgemm")]
fig, ax = plt.subplots(figsize=(8, 4.5))
labels = ["%s\n%s" % (r["group"], r["op"]) for r in others]
ratios = [r["ratio"] for r in others]
colors = ["tab:green" if x >= 1 else "tab:orange" for x in ratios]
ax.bar(range(len(others)), ratios, color=colors)
ax.axhline(1.0, color="black", linewidth=0.8)
ax.set_xticks(range(len(others)))
ax.set_xticklabels(labels, fontsize=8)
ax.set_yscale("log")
ax.set_ylabel("Kiln / peer (higher is better)")
ax.set_title("Kiln against hand-written peers, same run")
for i, r in enumerate(others):
    ax.text(i, ratios[i], "%.2fx\nvs %s" % (ratios[i], r["peer_name"]), ha="center",
            va="bottom", fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(outdir, "ratios.png"), dpi=110)
print("plots written to", outdir)
