"""Peak memory of every command, against the length of the trace (SPEC 7:
memory follows the live state of the traced program, for `analyze`, `stats`,
`events` and `diff` alike).

    .venv/bin/python benchmarks/bench_memory.py                  # 1M and 4M lines
    .venv/bin/python benchmarks/bench_memory.py --sizes 1000000,10000000

For each input kind (strace `-f -ttt -T -yy`; the same lines without the pid
prefix, as `strace -o` writes them for one process; a preload log with SVM
replay) and each size, one run of each command with its output in a pipe
(not /dev/null), the peak RSS of the whole process tree, and the ratio of the
largest size to the smallest: flat means <= 1.10x.  `diff` compares the trace
with itself (two passes over two inputs).  Traces come from gen_traces.py
into --workdir, kept between runs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import ROOT, count_lines, generate, measure  # noqa: E402

COMMANDS = {
    "analyze": lambda p: ["analyze", "--fail-on", "never", "--no-progress", str(p)],
    "stats": lambda p: ["stats", str(p)],
    "events": lambda p: ["events", "--format", "csv", str(p)],
    "diff": lambda p: ["diff", "--fail-on", "never", str(p), str(p)],
}


def pidless(src: Path) -> Path:
    """The strace trace with its pid column cut (one-process `strace -o`)."""
    dst = src.with_name(src.stem + "-nopid.log")
    if not dst.exists():
        with open(src, "rb") as fi, open(dst, "wb") as fo:
            for line in fi:
                fo.write(line.split(b" ", 1)[1] if line[:1].isdigit() else line)
    return dst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,4000000")
    ap.add_argument("--kinds", default="strace,strace-nopid,preload")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rocrtrace = [sys.executable, "-m", "rocrtrace"]
    sizes = [int(x) for x in a.sizes.split(",")]
    version = subprocess.run([*rocrtrace, "--version"], capture_output=True, text=True)
    print(version.stdout.strip(), flush=True)
    rows = []
    for kind in a.kinds.split(","):
        for n in sizes:
            base = generate("preload" if kind == "preload" else "strace", n, workdir)
            path = pidless(base) if kind == "strace-nopid" else base
            lines = count_lines(path)
            for cmd in a.commands.split(","):
                m = measure([*rocrtrace, *COMMANDS[cmd](path)], 1)
                rows.append((kind, n, cmd, m["tree_mb"], m["wall"]))
                print(
                    f"{kind:<13} {lines:>11,} lines  {cmd:<8} peak RSS {m['tree_mb']:7.1f} MB  {m['wall']:8.1f} s",
                    flush=True,
                )
    print()
    print(f"{'input':<13} {'command':<8} " + " ".join(f"{n:>12,}" for n in sizes) + "   ratio   <= 64 MB")
    for kind in a.kinds.split(","):
        for cmd in a.commands.split(","):
            mb = [r[3] for n in sizes for r in rows if r[:3] == (kind, n, cmd)]
            ratio = mb[-1] / mb[0]
            print(
                f"{kind:<13} {cmd:<8} "
                + " ".join(f"{x:9.1f} MB" for x in mb)
                + f"   {ratio:5.2f}x  {'yes' if max(mb) <= 64 else 'no'}"
            )


if __name__ == "__main__":
    main()
