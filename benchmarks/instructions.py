"""Instructions per trace line of the core, counted by valgrind's callgrind.

    python benchmarks/instructions.py                  # 200k strace, 100k preload
    python benchmarks/instructions.py --lines 400000 --preload-lines 0
    python benchmarks/instructions.py --core target/release/examples/analyze_bench

Wall-clock figures (benchmarks/run.py) swing by 15% and more on a shared or
loaded machine; instruction counts do not: the same binary on the same
trace counts the same, whatever else runs.  So this is the A/B measure for
a change to the core, and run.py stays the one for the issue's targets.

Per line = (Ir of analyzing the N-line trace - Ir of analyzing its first
line) / (N - 1): interpreter start-up, imports and the report cancel out.
`grep -c ioctl` on the same file is counted the same way, for a ratio in
instructions next to run.py's ratio in lines/s (instructions are not time:
grep's are vector instructions, ours mostly scalar ones).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ANALYZE = "import sys, rocrtrace._engine as e; e.analyze([sys.argv[1]])"


# mimalloc's entry points: a call to one of them from outside mimalloc is
# one allocation (the extension's allocator, src/alloc.rs, calls these)
ALLOC_FNS = {"mi_malloc", "mi_zalloc", "mi_malloc_aligned", "mi_zalloc_aligned", "mi_realloc", "mi_realloc_aligned"}


def allocations(out: str) -> int:
    """Calls into ALLOC_FNS from outside mimalloc in one callgrind output."""
    names: dict[str, str] = {}
    caller = callee = ""
    total = 0
    for line in out.splitlines():
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, ident, name = m.groups()
            if name is not None:
                names[ident] = name
            name = names.get(ident, "")
            if kind == "fn":
                caller = name
            else:
                callee = name
            continue
        if line.startswith("calls=") and callee in ALLOC_FNS and not caller.startswith(("mi_", "_mi_")):
            total += int(line[6:].split()[0])
    return total


def instructions(cmd: list[str], ok=(0,), allocs: list[int] | None = None) -> int:
    """The Ir callgrind counts for `cmd` and its children (exit status in
    `ok`: grep -c exits 1 on a file without a match); the allocations they
    made are appended to `allocs` when given."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.%p"
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}", *cmd],
            capture_output=True,
            text=True,
        )
        if r.returncode not in ok:
            sys.exit(f"instructions.py: {cmd[0]} failed under valgrind:\n{r.stderr[-2000:]}")
        total = 0
        n_alloc = 0
        for f in Path(d).glob("cg.*"):
            text = f.read_text(errors="replace")
            m = re.search(r"^summary:\s+(\d+)", text, re.M)
            total += int(m.group(1)) if m else 0
            if allocs is not None:
                n_alloc += allocations(text)
        if allocs is not None:
            allocs.append(n_alloc)
        return total


def first_lines(path: Path, n: int, into: Path) -> Path:
    with open(path, "rb") as src, open(into, "wb") as dst:
        for i, line in enumerate(src):
            if i == n:
                break
            dst.write(line)
    return into


def per_line(kind: str, n: int, workdir: Path, core: str | None = None) -> None:
    path = workdir / f"{kind}-{n}.log"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "gen_traces.py"), kind, str(n), str(path)], check=True)
    # a preload log must keep its header lines to be one
    head = first_lines(path, 16 if kind == "preload" else 1, workdir / f"{kind}-head.log")
    lines = sum(1 for _ in open(path, "rb"))
    hlines = sum(1 for _ in open(head, "rb"))
    py = [core] if core else [sys.executable, "-c", ANALYZE]
    allocs: list[int] = []
    ours = (instructions([*py, str(path)], allocs=allocs) - instructions([*py, str(head)], allocs=allocs)) / (
        lines - hlines
    )
    per_alloc = (allocs[0] - allocs[1]) / (lines - hlines)
    grep_cmd = [shutil.which("grep") or "grep", "-c", "ioctl"]
    grep = (instructions([*grep_cmd, str(path)], (0, 1)) - instructions([*grep_cmd, str(head)], (0, 1))) / (
        lines - hlines
    )
    print(
        f"{kind:<8} {lines:>9,} lines  analyze {ours:10,.0f} instructions/line   "
        f"grep -c ioctl {grep:8,.1f}/line   ratio {grep / ours:.4f}   "
        f"allocations {per_alloc:.2f}/line",
        flush=True,
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000, help="strace trace lines (0: skip)")
    ap.add_argument("--preload-lines", type=int, default=100_000, help="preload trace lines (0: skip)")
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    ap.add_argument(
        "--core",
        metavar="BINARY",
        help="count this binary (target/release/examples/analyze_bench: the core "
        "without Python) instead of the extension under the interpreter",
    )
    a = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: needs valgrind (apt-get install valgrind)")
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for kind, n in (("strace", a.lines), ("preload", a.preload_lines)):
        if n:
            per_line(kind, n, workdir, a.core)


if __name__ == "__main__":
    main()
