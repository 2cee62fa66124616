#!/usr/bin/env python3
"""Pick rows of docs/parity.md's name table for a spot check: N "covered" rows,
chosen with random.Random(SEED).sample from the covered rows in page order.

    python3 scripts/parity-spot-check.py [SEED] [N]   (defaults: 4246 30)

Prints one line per row: section, Python name, the Rust cell.
"""
import random
import sys
from pathlib import Path

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 4246
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
page = Path(__file__).resolve().parent.parent / "docs" / "parity.md"
section, rows = None, []
for line in page.read_text().splitlines():
    if line.startswith("## "):
        section = line.split("`")[1]
    elif line.startswith("| `"):
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[1] == "covered":
            rows.append((section, cells[0].strip("`"), cells[2]))
for section, name, rust in sorted(random.Random(seed).sample(rows, n), key=rows.index):
    print(f"{section}.{name}\t{rust}")
