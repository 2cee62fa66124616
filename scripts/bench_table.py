#!/usr/bin/env python3
"""Medians of benchmark JSON lines ({"peer","metric","value"}) as a Markdown table.

Usage: bench_table.py FILE...  (or JSON lines on standard input)
Rows are metrics, columns peers; each cell is the median over rounds, and for
every peer but the C driver the ratio to C's median (lower is better for times,
higher for bandwidths).
"""
import json
import statistics
import sys
from collections import defaultdict

ORDER = ["c-driver", "cuda-rs", "cuda-rs-bindings", "py-cuda.core", "cupy"]


def main() -> int:
    streams = [open(f) for f in sys.argv[1:]] or [sys.stdin]
    values = defaultdict(list)
    for s in streams:
        for line in s:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                j = json.loads(line)
            except json.JSONDecodeError:
                continue
            if {"peer", "metric", "value"} <= j.keys():
                values[(j["metric"], j["peer"])].append(float(j["value"]))
    peers = sorted({p for _, p in values}, key=lambda p: (ORDER.index(p) if p in ORDER else len(ORDER), p))
    metrics = sorted({m for m, _ in values})
    print("| metric | " + " | ".join(peers) + " |")
    print("|---|" + "---|" * len(peers))
    for m in metrics:
        c = values.get((m, "c-driver"))
        base = statistics.median(c) if c else None
        cells = []
        for p in peers:
            v = values.get((m, p))
            if not v:
                cells.append("–")
                continue
            med = statistics.median(v)
            cell = f"{med:.4g}"
            if base and p != "c-driver":
                cell += f" ({med / base:.2f}×)"
            cells.append(cell)
        print(f"| `{m}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
