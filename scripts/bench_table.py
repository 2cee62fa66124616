#!/usr/bin/env python3
"""Medians of benchmark JSON lines ({"peer","metric","value"}) as a Markdown table.

Usage: bench_table.py [--per-round] FILE...  (or JSON lines on standard input)
Rows are metrics, columns peers; each cell is the median over rounds, and for
every peer but the C driver the ratio to C's median (lower is better for times,
higher for bandwidths). With --per-round, a second table: for each metric and
peer, the median of the per-round ratios to C (the n-th figure of a peer over
the n-th figure of C: the rounds interleave the programs, so a round's ratio
compares figures taken moments apart) and every round's ratio in brackets.
"""
import json
import statistics
import sys
from collections import defaultdict

ORDER = ["c-driver", "cuda-rs", "cuda-rs-bindings", "py-cuda.core", "cupy"]


def main() -> int:
    args = sys.argv[1:]
    per_round = "--per-round" in args
    args = [a for a in args if a != "--per-round"]
    streams = [open(f) for f in args] or [sys.stdin]
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
    if per_round:
        print()
        others = [p for p in peers if p != "c-driver"]
        print("| metric | " + " | ".join(f"{p} / C" for p in others) + " |")
        print("|---|" + "---|" * len(others))
        for m in metrics:
            c = values.get((m, "c-driver"))
            if not c:
                continue
            cells = []
            for p in others:
                v = values.get((m, p))
                if not v:
                    cells.append("–")
                    continue
                ratios = [x / y for x, y in zip(v, c) if y]
                cells.append(
                    f"{statistics.median(ratios):.2f}× ["
                    + " ".join(f"{r:.2f}" for r in ratios)
                    + "]"
                )
            print(f"| `{m}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
