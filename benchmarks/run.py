"""Benchmark runner: speed and memory of `rocrtrace analyze`, against the
reading floor (wc -l, grep -c ioctl) and the PyPI strace parsers.

    python benchmarks/run.py                 # 1M and 10M strace, 1M preload
    python benchmarks/run.py --sizes 1000000 --runs 3 --others

Prints one line per measurement (median of --runs) and the ratios the
performance issue sets targets for.  Traces are generated deterministically
by gen_traces.py into --workdir (kept between runs).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Runs a command and reports its wall time and the peak RSS of the process
# tree it started (RUSAGE_CHILDREN: the max over waited-for descendants).
MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
el = time.perf_counter() - t
print(json.dumps({"rc": p.returncode, "wall": el,
                  "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "err": p.stderr.decode(errors="replace")[-400:]}))
"""


def measure(cmd, runs):
    res = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True,
                             text=True, check=True).stdout
        res.append(json.loads(out))
    bad = [r for r in res if r["rc"] not in (0, 1)]
    if bad:
        raise SystemExit(f"{cmd[0]} failed: rc={bad[0]['rc']} {bad[0]['err']}")
    return {"wall": statistics.median(r["wall"] for r in res),
            "rss_mb": max(r["rss_mb"] for r in res), "runs": len(res)}


def generate(kind, n, workdir, tt=False):
    path = workdir / f"{kind}{'-tt' if tt else ''}-{n}.log"
    if not path.exists():
        args = [sys.executable, str(HERE / "gen_traces.py"), kind, str(n), str(path)]
        if tt:
            args.append("--tt")
        subprocess.run(args, check=True)
    return path


def count_lines(path):
    with open(path, "rb") as fh:
        return sum(buf.count(b"\n") for buf in iter(lambda: fh.read(1 << 20), b""))


def events_of(path, rocrtrace):
    out = subprocess.run([*rocrtrace, "analyze", "--format", "json", "--fail-on", "never",
                          str(path)], capture_output=True, text=True)
    return json.loads(out.stdout)["summary"]["events"]


def others_venv(workdir):
    """stracetools and strace-process-tree in their own venv (not our deps)."""
    venv = workdir / "others-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "stracetools==1.0.0",
                        "strace-process-tree==1.5.3"], check=True)
    return py


STRACETOOLS = r"""
import sys, logging
logging.disable(logging.CRITICAL)
from stracetools.parser import StraceParser
evs = StraceParser().parse_file(sys.argv[1])
print(len(evs))
"""


def report(name, lines, m, floor=None):
    lps = lines / m["wall"]
    s = f"{name:<44} {m['wall']:8.2f} s  {lps:12,.0f} lines/s  peak RSS {m['rss_mb']:7.1f} MB"
    if floor:
        s += f"  ({m['wall'] / floor:5.1f}x wc -l)"
    print(s, flush=True)
    return lps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--preload-size", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="pass --jobs to analyze")
    ap.add_argument("--others", action="store_true", help="also time stracetools")
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rocrtrace = [sys.executable, "-m", "rocrtrace"]
    extra = ["--jobs", str(a.jobs)] if a.jobs else []
    figures = {}
    t = time.perf_counter()
    subprocess.run([*rocrtrace, "--help"], capture_output=True)
    subprocess.run([*rocrtrace, "--help"], capture_output=True)
    t = time.perf_counter()
    for _ in range(5):
        subprocess.run([*rocrtrace, "--help"], capture_output=True)
    print(f"{'rocrtrace --help':<44} {(time.perf_counter() - t) / 5:8.3f} s")
    for n in (int(x) for x in a.sizes.split(",")):
        path = generate("strace", n, workdir)
        lines = count_lines(path)
        floor = measure(["wc", "-l", str(path)], a.runs)["wall"]
        grep = measure(["grep", "-c", "ioctl", str(path)], a.runs)["wall"]
        print(f"--- strace -f -o -ttt -T -yy, {lines:,} lines, {path.stat().st_size / 1e6:,.0f} MB")
        print(f"{'wc -l':<44} {floor:8.2f} s")
        print(f"{'grep -c ioctl':<44} {grep:8.2f} s")
        m = measure([*rocrtrace, "analyze", "--fail-on", "never", "--no-progress", *extra,
                     str(path)], a.runs)
        lps = report("rocrtrace analyze", lines, m, floor)
        evs = events_of(path, rocrtrace) if n <= 2_000_000 else None
        if evs:
            print(f"{'':<44} {evs / m['wall']:12,.0f} events/s ({evs:,} events)")
        figures[n] = {"lines_per_s": lps, "rss_mb": m["rss_mb"], "wall": m["wall"]}
    sizes = sorted(figures)
    if len(sizes) > 1:
        small, big = figures[sizes[0]], figures[sizes[-1]]
        print(f"peak RSS {sizes[-1]:,} vs {sizes[0]:,} lines: {big['rss_mb']:.1f} / "
              f"{small['rss_mb']:.1f} MB = {big['rss_mb'] / small['rss_mb']:.2f}x (target <= 1.10)")
    if a.preload_size:
        path = generate("preload", a.preload_size, workdir)
        lines = count_lines(path)
        print(f"--- preload log with SVM replay, {lines:,} lines")
        m = measure([*rocrtrace, "analyze", "--fail-on", "never", "--no-progress", str(path)],
                    a.runs)
        report("rocrtrace analyze (preload)", lines, m)
    if a.others:
        n = sizes[0]
        path = generate("strace", n, workdir, tt=True)
        lines = count_lines(path)
        py = others_venv(workdir)
        print(f"--- strace -f -o -tt (stracetools' format), {lines:,} lines")
        mine = measure([*rocrtrace, "analyze", "--fail-on", "never", "--no-progress", str(path)],
                       a.runs)
        ours = report("rocrtrace analyze", lines, mine)
        theirs_m = measure([str(py), "-c", STRACETOOLS, str(path)], max(1, a.runs // 2))
        theirs = report("stracetools 1.0.0 parse_file", lines, theirs_m)
        print(f"rocrtrace / stracetools: {ours / theirs:.1f}x lines/s (target >= 30x)")


if __name__ == "__main__":
    main()
