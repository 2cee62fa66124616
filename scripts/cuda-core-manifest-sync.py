#!/usr/bin/env python3
"""Bring docs/reference/cuda-core-tests-manifest.toml in line with the id list.

Usage (from the repository root, after regenerating docs/reference/cuda-core-tests.txt
with scripts/cuda-core-test-ids.py)::

    python3 scripts/cuda-core-manifest-sync.py [--check]

Keeps every entry whose id is still listed, adds each new id as "todo", drops the
entries whose id is gone and prints them (their Rust tests may need a new id), and
writes the entries in the list's order. The header (the lines before ``[tests]``) is
kept. With ``--check`` nothing is written; the exit status is 1 when anything would
change. Python 3.11 or later, standard library only.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "docs/reference/cuda-core-tests.txt"
MANIFEST = ROOT / "docs/reference/cuda-core-tests-manifest.toml"


def listed_ids() -> list[str]:
    out = []
    for line in LIST.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            out.append(line.split(" # ")[0])
    return out


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if out of date")
    args = ap.parse_args()
    text = MANIFEST.read_text(encoding="utf-8")
    header = text.split("\n[tests]\n")[0]
    entries: dict[str, str] = tomllib.loads(text)["tests"]
    ids = listed_ids()
    wanted = set(ids)
    gone = [i for i in entries if i not in wanted]
    new = [i for i in ids if i not in entries]
    for i in gone:
        print(f"gone: {i} = {entries[i]}", file=sys.stderr)
    for i in new:
        print(f"new:  {i}", file=sys.stderr)
    body = "".join(f"{quote(i)} = {quote(entries.get(i, 'todo'))}\n" for i in ids)
    out = f"{header}\n[tests]\n{body}"
    if out == text:
        return 0
    if args.check:
        print("the manifest is out of date: run scripts/cuda-core-manifest-sync.py", file=sys.stderr)
        return 1
    MANIFEST.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
