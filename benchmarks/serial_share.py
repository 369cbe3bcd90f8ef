"""The serial share of `analyze --jobs N`: the part of the core's work that
stays on the main thread (the stateful parse, the models, the replay) when
N threads tokenize and build events (SPEC 7).  By Amdahl's law no number of
cores makes a run faster than 1 / serial share.

    .venv/bin/python benchmarks/serial_share.py                 # 200k strace, 100k preload
    .venv/bin/python benchmarks/serial_share.py --lines 400000 --jobs 2

Measured in instructions (valgrind's callgrind, one count per thread with
--separate-threads=yes), not time: the same binary on the same trace counts
the same on a loaded machine.  The main thread is callgrind's thread 1
(the interpreter's, which runs the core's replay); the others are the
parse workers.  The main thread also reads and pre-parses a batch itself
when the next one is not ready yet (`Shared::take_one`, more often under
valgrind, which runs one thread at a time): that is not the serial part,
and its inclusive count goes to the other side.  Each side's count on the N-line trace minus
its count on the trace's first line, so interpreter start-up and imports
cancel out.  Chunking is forced on (the core
chunks only files of 2 MiB and more by default).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

ANALYZE = (
    "import sys, rocrtrace._engine as e; e.analyze([sys.argv[1]], jobs=int(sys.argv[2]), chunking=(1 << 16, 1 << 10))"
)


def stolen(out: Path) -> int:
    """Ir of the batches a thread read and pre-parsed (`take_one`, inclusive)."""
    r = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)], capture_output=True, text=True
    )
    for line in r.stdout.splitlines():
        if "chunked::Shared<P>::take_one [" in line:
            return int(line.split()[0].replace(",", ""))
    return 0


def per_thread(path: Path, jobs: int) -> dict[int, int]:
    """Ir per thread (callgrind's thread number) of the core analyzing `path`;
    the main thread's batches read and pre-parsed as thread 0."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        r = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                ANALYZE,
                str(path),
                str(jobs),
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode:
            raise SystemExit(f"callgrind failed: {r.stderr[-500:]}")
        counts = {}
        for f in Path(d).glob("cg.out*"):
            text = f.read_text(errors="replace")
            t = re.search(r"^thread:\s+(\d+)", text, re.M)
            m = re.search(r"^summary:\s+(\d+)", text, re.M)
            if t and m:
                counts[int(t.group(1))] = int(m.group(1))
                if int(t.group(1)) == 1:
                    counts[0] = stolen(f)
                    counts[1] -= counts[0]
        return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--preload-lines", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    from run import generate

    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for kind, n in (("strace", a.lines), ("preload", a.preload_lines)):
        if not n:
            continue
        path = generate(kind, n, workdir)
        one = workdir / f"{path.stem}-1.log"
        with open(path, "rb") as fi, open(one, "wb") as fo:
            # the header lines of a preload log and its first call
            for line in fi:
                fo.write(line)
                if not line.startswith(b"#"):
                    break
        base = per_thread(one, a.jobs)
        full = per_thread(path, a.jobs)
        main_ir = full[1] - base[1]
        workers = (sum(full.values()) - full[1]) - (sum(base.values()) - base[1])
        total = main_ir + workers
        share = main_ir / total
        print(
            f"{kind} {n:,} lines, --jobs {a.jobs}: main thread {main_ir / n:,.0f} instr/line, "
            f"other threads {workers / n:,.0f} instr/line: serial share {share:.1%}, "
            f"at most {1 / share:.2f}x on any number of cores",
            flush=True,
        )


if __name__ == "__main__":
    main()
