"""Shared parts of the fuzz harnesses: the seed corpus (pieces of the
committed fixtures) and the exceptions that are an answer, not a crash."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
DICT = os.path.join(HERE, "strace.dict")
SEED_DIRS = ("fixtures/strace", "fixtures/tinygrad", "fixtures/scenarios")
PIECE_LINES = 24
MAX_LEN = 16384


def seed_files() -> list[str]:
    out = []
    for d in SEED_DIRS:
        top = os.path.join(ROOT, d)
        for base, _dirs, files in os.walk(top):
            out.extend(os.path.join(base, f) for f in sorted(files) if f.endswith(".log"))
    return sorted(out)


def write_corpus(dest: str) -> int:
    """Cut every fixture log into pieces of PIECE_LINES lines (the harnesses'
    inputs are small); returns the number of seed files written."""
    os.makedirs(dest, exist_ok=True)
    n = 0
    for path in seed_files():
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        for i in range(0, len(lines), PIECE_LINES):
            piece = b"\n".join(lines[i : i + PIECE_LINES])[:MAX_LEN]
            if not piece.strip():
                continue
            with open(os.path.join(dest, f"seed-{n:05d}"), "wb") as out:
                out.write(piece)
            n += 1
    return n
