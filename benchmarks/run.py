"""Benchmark runner: speed and memory of `rocrtrace analyze`, against the
reading floor (wc -l, grep -c ioctl) and the PyPI strace parsers.

    python benchmarks/run.py                 # 1M and 10M strace, 1M preload
    python benchmarks/run.py --sizes 1000000 --runs 3 --jobs 1,2 --others

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

# Runs a command and reports its wall time, the peak RSS of the largest
# process it started (RUSAGE_CHILDREN: the max over waited-for descendants)
# and the peak of the whole tree's summed RSS, sampled every 0.2 s (--jobs
# runs several processes; shared pages count once per process: an upper bound).
MEASURE = r"""
import json, os, resource, subprocess, sys, threading, time

def tree_rss(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total

peak = 0
t = time.perf_counter()
# stdout is a pipe, not /dev/null: GNU grep stops at the first match when
# its output is /dev/null, which would make the floor look free.
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
done = threading.Event()

def sample():
    global peak
    while not done.wait(0.2):
        peak = max(peak, tree_rss(p.pid))

threading.Thread(target=sample, daemon=True).start()
out, err = p.communicate()
el = time.perf_counter() - t
done.set()
print(json.dumps({"rc": p.returncode, "wall": el,
                  "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "tree_mb": peak / 2 ** 20, "err": err.decode(errors="replace")[-400:]}))
"""


def measure(cmd, runs):
    res = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True).stdout
        res.append(json.loads(out))
    bad = [r for r in res if r["rc"] not in (0, 1)]
    if bad:
        raise SystemExit(f"{cmd[0]} failed: rc={bad[0]['rc']} {bad[0]['err']}")
    return {
        "wall": statistics.median(r["wall"] for r in res),
        "rss_mb": max(r["rss_mb"] for r in res),
        "tree_mb": max(max(r["tree_mb"], r["rss_mb"]) for r in res),
        "runs": len(res),
    }


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
    out = subprocess.run(
        [*rocrtrace, "analyze", "--format", "json", "--fail-on", "never", str(path)], capture_output=True, text=True
    )
    return json.loads(out.stdout)["summary"]["events"]


def others_venv(workdir):
    """stracetools and strace-process-tree in their own venv (not our deps)."""
    venv = workdir / "others-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "stracetools==1.0.0", "strace-process-tree==1.5.3"], check=True
        )
    return py


# The ceiling of any per-line Python parser: read the lines, one regex
# match and one small object per line, nothing else.
PYFLOOR = r"""
import re, sys
R = re.compile(rb"(\d+) +([\d.:]+) (\w+)\((.*)\) += (\S+)")
class E:
    __slots__ = ("tid", "t", "name", "args", "ret")
    def __init__(self, *a):
        self.tid, self.t, self.name, self.args, self.ret = a
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        m = R.match(line)
        if m:
            g = m.groups()
            E(int(g[0]), g[1], g[2], g[3], g[4])
            n += 1
print(n)
"""

STRACETOOLS = r"""
import sys, logging
logging.disable(logging.CRITICAL)
from stracetools.parser import StraceParser
evs = StraceParser().parse_file(sys.argv[1])
print(len(evs))
"""


def strace_analyzer():
    """The Rust `strace-analyzer` (crates.io; `cargo install strace-analyzer`)
    when it is on PATH or named by $STRACE_ANALYZER, else None."""
    import shutil

    exe = os.environ.get("STRACE_ANALYZER") or shutil.which("strace-analyzer")
    return exe if exe and os.access(exe, os.X_OK) else None


def report(name, lines, m, floor=None):
    lps = lines / m["wall"]
    s = (
        f"{name:<44} {m['wall']:8.2f} s  {lps:12,.0f} lines/s  peak RSS {m['rss_mb']:6.1f} MB"
        f" (all processes {m['tree_mb']:6.1f} MB)  [median of {m['runs']}]"
    )
    if floor:
        s += f"  {m['wall'] / floor:7.1f}x wc -l"
    print(s, flush=True)
    return lps


def analyze_cmd(rocrtrace, path, jobs):
    extra = ["--jobs", str(jobs)] if jobs > 1 else []
    return [*rocrtrace, "analyze", "--fail-on", "never", "--no-progress", *extra, str(path)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--preload-size", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", default="1,2", help="comma-separated --jobs values to time analyze with")
    ap.add_argument("--others", action="store_true", help="also time stracetools and strace-process-tree (own venv)")
    ap.add_argument("--workdir", default=str(ROOT / "out" / "bench"))
    a = ap.parse_args(argv)
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rocrtrace = [sys.executable, "-m", "rocrtrace"]
    jobs = [int(x) for x in a.jobs.split(",")]
    best = max(jobs)
    targets = []  # (what, figure, target, met)

    import importlib.util

    # rocrtrace runs as `python -m rocrtrace` with this very Python: its
    # dependencies must be installed for it (the venv's, not the system's)
    missing = [m for m in ("click", "tabulate", "pandas", "pyarrow", "elftools") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(
            f"benchmarks/run.py: rocrtrace's dependencies ({', '.join(missing)}) are not "
            f"installed for {sys.executable}; run it with the Python rocrtrace is "
            "installed for, e.g. .venv/bin/python benchmarks/run.py"
        )
    version = subprocess.run([*rocrtrace, "--version"], capture_output=True, text=True)
    print(f"{version.stdout.strip()}, python {sys.version.split()[0]}, {os.cpu_count()} cpus", flush=True)
    subprocess.run([*rocrtrace, "--help"], capture_output=True)
    helps = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([*rocrtrace, "--help"], capture_output=True)
        helps.append(time.perf_counter() - t)
    help_s = statistics.median(helps)
    print(f"{'rocrtrace --help':<44} {help_s:8.3f} s  [median of 5]")
    targets.append(("rocrtrace --help", f"{help_s:.3f} s", "< 0.15 s", help_s < 0.15))

    figures = {}
    vs_sa = {}  # size -> rocrtrace's best lines/s / strace-analyzer's
    for n in (int(x) for x in a.sizes.split(",")):
        path = generate("strace", n, workdir)
        lines = count_lines(path)
        floor = measure(["wc", "-l", str(path)], a.runs)["wall"]
        grep = measure(["grep", "-c", "ioctl", str(path)], a.runs)["wall"]
        pyfloor = measure([sys.executable, "-c", PYFLOOR, str(path)], a.runs)
        print(f"--- strace -f -o -ttt -T -yy, {lines:,} lines, {path.stat().st_size / 1e6:,.0f} MB")
        print(f"{'wc -l':<44} {floor:8.3f} s  {lines / floor:12,.0f} lines/s")
        print(f"{'grep -c ioctl':<44} {grep:8.3f} s  {lines / grep:12,.0f} lines/s")
        report("python floor (1 regex + 1 object per line)", lines, pyfloor, floor)
        for j in jobs:
            m = measure(analyze_cmd(rocrtrace, path, j), a.runs)
            lps = report(f"rocrtrace analyze --jobs {j}", lines, m, floor)
            print(
                f"{'':<44} {lps / (lines / grep):12.4f} of grep -c's lines/s, "
                f"{lps / (lines / pyfloor['wall']):.3f} of the python floor"
            )
            figures[(n, j)] = {
                "lines_per_s": lps,
                "rss_mb": m["tree_mb"],
                "wall": m["wall"],
                "of_grep": lps / (lines / grep),
            }
        sa = strace_analyzer()
        if sa:
            # it reads the same -f log (lines with a pid prefix are parsed
            # as its own; it reports reads and writes per file only)
            m = measure([sa, str(path)], a.runs)
            sa_lps = report("strace-analyzer (Rust, crates.io)", lines, m, floor)
            best_lps = max(figures[(n, j)]["lines_per_s"] for j in jobs)
            print(f"{'':<44} rocrtrace / strace-analyzer: {best_lps / sa_lps:.2f}x lines/s")
            vs_sa[n] = best_lps / sa_lps
        if n <= 2_000_000:
            evs = events_of(path, rocrtrace)
            w = figures[(n, best)]["wall"]
            print(f"{'':<44} {evs / w:12,.0f} events/s with --jobs {best} ({evs:,} events)")
    sizes = sorted({n for n, _ in figures})
    big = sizes[-1]
    for j, want in ((1, 0.25), (2, 0.4)):
        if (big, j) in figures:
            r = figures[(big, j)]["of_grep"]
            targets.append(
                (f"analyze --jobs {j}, {big:,} strace lines", f"{r:.4f} of grep -c", f">= {want} of grep -c", r >= want)
            )
    if big in vs_sa:
        r = vs_sa[big]
        targets.append((f"vs strace-analyzer, {big:,} strace lines", f"{r:.2f}x its lines/s", "> 1x (faster)", r > 1))
    elif not strace_analyzer():
        print("(strace-analyzer not on PATH: `cargo install strace-analyzer` to compare with it)")
    rss = max(f["rss_mb"] for f in figures.values())
    targets.append(("peak RSS of analyze, all processes", f"{rss:.1f} MB", "<= 64 MB", rss <= 64))
    if len(sizes) > 1:
        for j in jobs:
            lo, hi = figures[(sizes[0], j)]["rss_mb"], figures[(big, j)]["rss_mb"]
            print(f"peak RSS --jobs {j}, {big:,} vs {sizes[0]:,} lines: {hi:.1f} / {lo:.1f} MB = {hi / lo:.2f}x")
            targets.append(
                (f"RSS {big:,} / {sizes[0]:,} lines, --jobs {j}", f"{hi / lo:.2f}x", "<= 1.10x", hi / lo <= 1.10)
            )

    if a.preload_size:
        path = generate("preload", a.preload_size, workdir)
        lines = count_lines(path)
        grep = measure(["grep", "-c", "ioctl", str(path)], a.runs)["wall"]
        print(f"--- preload log with SVM replay, {lines:,} lines")
        print(f"{'grep -c ioctl':<44} {grep:8.3f} s  {lines / grep:12,.0f} lines/s")
        prss = 0.0
        for j in jobs:
            m = measure(analyze_cmd(rocrtrace, path, j), a.runs)
            lps = report(f"rocrtrace analyze --jobs {j} (preload)", lines, m)
            prss = max(prss, m["tree_mb"])
            print(f"{'':<44} {lps / (lines / grep):12.4f} of grep -c's lines/s")
            if j == 1:
                r = lps / (lines / grep)
                targets.append(
                    ("analyze --jobs 1, preload log with SVM", f"{r:.4f} of grep -c", ">= 0.10 of grep -c", r >= 0.10)
                )
        targets.append(("peak RSS of analyze, preload", f"{prss:.1f} MB", "<= 64 MB", prss <= 64))

    if a.others:
        n = sizes[0]
        py = others_venv(workdir)
        path = generate("strace", n, workdir, tt=True)
        lines = count_lines(path)
        print(f"--- strace -f -o -tt (stracetools' format), {lines:,} lines")
        ours = max(
            report(f"rocrtrace analyze --jobs {j}", lines, measure(analyze_cmd(rocrtrace, path, j), a.runs))
            for j in jobs
        )
        theirs = report(
            "stracetools 1.0.0 parse_file", lines, measure([str(py), "-c", STRACETOOLS, str(path)], max(1, a.runs // 2))
        )
        print(f"rocrtrace / stracetools: {ours / theirs:.1f}x lines/s")
        targets.append(("vs stracetools (same -tt log)", f"{ours / theirs:.1f}x", ">= 100x", ours / theirs >= 100))
        tree = report(
            "strace-process-tree 1.5.3", lines, measure([str(py.parent / "strace-process-tree"), str(path)], a.runs)
        )
        print(f"rocrtrace / strace-process-tree: {ours / tree:.2f}x lines/s (it reads only process lifetimes)")
        targets.append(("vs strace-process-tree (same log)", f"{ours / tree:.1f}x", ">= 10x", ours / tree >= 10))

    print("--- targets (issue 36)")
    w = max(len(t[0]) for t in targets)
    for what, fig, target, met in targets:
        print(f"{what:<{w}}  {fig:>22}  target {target:<22} {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
