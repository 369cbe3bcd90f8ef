"""Instructions per trace line of the core, counted by valgrind's callgrind.

    python benchmarks/instructions.py                  # 200k strace, 100k preload
    python benchmarks/instructions.py --lines 400000 --preload-lines 0

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


def instructions(cmd: list[str], ok=(0,)) -> int:
    """The Ir callgrind counts for `cmd` and its children (exit status in
    `ok`: grep -c exits 1 on a file without a match)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.%p"
        r = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                            f"--callgrind-out-file={out}", *cmd],
                           capture_output=True, text=True)
        if r.returncode not in ok:
            sys.exit(f"instructions.py: {cmd[0]} failed under valgrind:\n{r.stderr[-2000:]}")
        total = 0
        for f in Path(d).glob("cg.*"):
            m = re.search(r"^summary:\s+(\d+)", f.read_text(errors="replace"), re.M)
            total += int(m.group(1)) if m else 0
        return total


def first_lines(path: Path, n: int, into: Path) -> Path:
    with open(path, "rb") as src, open(into, "wb") as dst:
        for i, line in enumerate(src):
            if i == n:
                break
            dst.write(line)
    return into


def per_line(kind: str, n: int, workdir: Path) -> None:
    path = workdir / f"{kind}-{n}.log"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "gen_traces.py"), kind, str(n), str(path)],
                       check=True)
    # a preload log must keep its header lines to be one
    head = first_lines(path, 16 if kind == "preload" else 1, workdir / f"{kind}-head.log")
    lines = sum(1 for _ in open(path, "rb"))
    hlines = sum(1 for _ in open(head, "rb"))
    py = [sys.executable, "-c", ANALYZE]
    ours = (instructions([*py, str(path)]) - instructions([*py, str(head)])) / (lines - hlines)
    grep_cmd = [shutil.which("grep") or "grep", "-c", "ioctl"]
    grep = (instructions([*grep_cmd, str(path)], (0, 1))
            - instructions([*grep_cmd, str(head)], (0, 1))) / (lines - hlines)
    print(f"{kind:<8} {lines:>9,} lines  analyze {ours:10,.0f} instructions/line   "
          f"grep -c ioctl {grep:8,.1f}/line   ratio {grep / ours:.4f}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000, help="strace trace lines (0: skip)")
    ap.add_argument("--preload-lines", type=int, default=100_000,
                    help="preload trace lines (0: skip)")
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        sys.exit("instructions.py: needs valgrind (apt-get install valgrind)")
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for kind, n in (("strace", a.lines), ("preload", a.preload_lines)):
        if n:
            per_line(kind, n, workdir)


if __name__ == "__main__":
    main()
