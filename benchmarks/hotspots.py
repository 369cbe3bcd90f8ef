"""Where analyze spends its time: the core's passes per event (the event
table, the analysis), and the functions with the most self time (py-spy --native when
installed: it samples the Rust frames too without slowing the code down;
else cProfile, which sees only the Python front: symbolization, reports).

    python benchmarks/hotspots.py                      # 200k-line strace trace
    python benchmarks/hotspots.py preload 100000
    python benchmarks/hotspots.py --file TRACE --top 40

The traces come from gen_traces.py (deterministic), written to --workdir.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def split(path: str) -> None:
    """The core's two passes a command makes, timed whole (they share the
    read and the parse, so their difference is no replay time)."""
    from rocrtrace import _engine

    Path(path).read_bytes()  # the page cache warm for both
    t0 = time.perf_counter()
    _, infos = _engine.events_table([path])
    t1 = time.perf_counter()
    _engine.analyze([path])
    t2 = time.perf_counter()
    n = sum(i.events for i in infos)
    print(
        f"{n:,} events: read+parse+table (events) {t1 - t0:.2f} s "
        f"({(t1 - t0) / n * 1e6:.2f} us/event), read+parse+replay (analyze) "
        f"{t2 - t1:.2f} s ({(t2 - t1) / n * 1e6:.2f} us/event)"
    )


def top_pyspy(path: str, top: int) -> bool:
    spy = shutil.which("py-spy")
    if spy is None:
        return False
    with tempfile.NamedTemporaryFile(suffix=".txt") as raw:
        r = subprocess.run(
            [
                spy,
                "record",
                "--native",
                "-o",
                raw.name,
                "-f",
                "raw",
                "-r",
                "250",
                "--",
                sys.executable,
                "-m",
                "rocrtrace",
                "analyze",
                "--fail-on",
                "never",
                "--no-progress",
                path,
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            # e.g. ptrace refused, or another py-spy attached: say so, use cProfile
            why = (r.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"py-spy failed (exit {r.returncode}: {why}); falling back to cProfile")
            return False
        own: collections.Counter = collections.Counter()
        total = 0
        for line in open(raw.name):
            stack, count = line.rsplit(" ", 1)
            frame = re.sub(r" \(.*?([\w.]+/[\w.]+\.py):\d+\)$", r" \1", stack.split(";")[-1])
            own[frame] += int(count)
            total += int(count)
    print(f"py-spy, {total} samples; self time:")
    for frame, count in own.most_common(top):
        print(f"  {100 * count / total:5.1f}%  {frame}")
    return True


def top_cprofile(path: str, top: int) -> None:
    from rocrtrace.engine import analyze

    prof = cProfile.Profile()
    prof.runcall(analyze, [path])
    print("cProfile (adds overhead per call); self time:")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", nargs="?", default="strace", choices=["strace", "preload"])
    ap.add_argument("lines", nargs="?", type=int, default=200000)
    ap.add_argument("--file", help="profile this trace instead of a generated one")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    path = a.file
    if path is None:
        Path(a.workdir).mkdir(parents=True, exist_ok=True)
        path = str(Path(a.workdir) / f"{a.kind}-{a.lines}.log")
        if not Path(path).exists():
            subprocess.run([sys.executable, str(HERE / "gen_traces.py"), a.kind, str(a.lines), path], check=True)
    split(path)
    if not top_pyspy(path, a.top):
        top_cprofile(path, a.top)


if __name__ == "__main__":
    main()
