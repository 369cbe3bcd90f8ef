"""Growth with trace length where only the live state should count (SPEC 7,
issue 37): each case is a trace of N and 2N units whose live state stays the
same (or, where it cannot, grows by N), analyzed by `rocrtrace analyze` in a
child process; printed: wall seconds and peak RSS at both sizes and their
ratios (2.0 = linear time, 1.0 = flat memory).  Figures from one run; not a
timed test.

    python benchmarks/bench_growth.py [N] [CASE ...]   # default 50,000, all

Cases (the generators of all but same-range are tests/growth_traces.py's,
whose test_growth.py checks what they give at CI's sizes):
  same-range   one range set again and again (register+map shapes
               alternating): a claim keeps its current effect, not every
               grant it ever had (was 4.2 / 19 / 112 s at 25k / 50k / 100k)
  tids         N threads, all live, then ending in start order (was 1.3 /
               4.1 / 13.4 s at 10k / 20k / 40k)
  children     N fork children, the same (was 3.5 / 15.7 s at 40k / 80k)
  close-bad    4N close(-1): one finding "N times" (was 903 MB at 200k)
  sweeps       N/10 fork children each closing fds 3 to 40: one sweep note
               "N/10 times" (a note per child before)
  fds-live     4N files opened and held: memory grows with them; printed
               too: bytes per live fd (was 1.1-1.3 GB at 10^6)
  ff-files     `strace -ff` with N/5 children, a file each, merged with a
               bounded number of files open (was > 600 s, 610 MB at 10^5)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import growth_traces as g  # noqa: E402

HEAD = (
    "# rocrtrace-log 1\n# pid=100 ppid=1 exe=/bin/x page_size=4096 start=1.0\n"
    '100   1.000000 openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = 3</dev/kfd> <0.000010>\n'
)
SET = (
    "100   {t:.6f} ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {{start_addr=0x7e0000000000, "
    "size=0x4000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr={n}, attrs=[{attrs}]}}) = 0 <0.000005>\n"
)
FINE_IP = (
    "{type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=KFD_IOCTL_SVM_FLAG_COHERENT}, "
    "{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}"
)
IP = "{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}"


def same_range(path: Path, n: int) -> None:
    with path.open("w") as f:
        f.write(HEAD)
        for i in range(n):
            t = 1.0 + 2e-5 * (i + 1)
            f.write(SET.format(t=t, n=2, attrs=FINE_IP) if i % 2 else SET.format(t=t, n=1, attrs=IP))
        f.write("# exit status=0\n")


def ff_files(path: Path, n: int) -> None:
    g.ff_files(path, n)


# name -> (writer, units per N)
CASES = {
    "same-range": (same_range, 1),
    "tids": (g.tids, 1),
    "children": (g.children, 1),
    "close-bad": (g.close_bad, 4),
    "sweeps": (g.sweeps, 0.1),
    "fds-live": (g.fds_live, 4),
    "ff-files": (ff_files, 0.2),
}

# the analysis in a child of its own that prints its peak RSS (KB) last
# (RUSAGE_CHILDREN is the largest child so far, not the last one)
_CHILD = """
import resource, subprocess, sys
subprocess.run([sys.executable, "-m", "rocrtrace", "analyze", "--no-progress", "--format",
                "json", sys.argv[1]], stdout=subprocess.DEVNULL, check=False)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(path: Path, runs: int = 2) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of analyzing `path` in a child: the
    fastest of `runs` (the first reads a file just written, cold)."""
    best, peak = float("inf"), 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            check=False,
            text=True,
        )
        best = min(best, time.perf_counter() - t0)
        peak = max(peak, float(r.stdout.split()[-1]) / 1024)
    return best, peak


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=50_000)
    ap.add_argument("cases", nargs="*", help=", ".join(CASES))
    a = ap.parse_args()
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s): {', '.join(unknown)}")
    with tempfile.TemporaryDirectory() as d:
        for name in a.cases or CASES:
            gen, per = CASES[name]
            rows = []
            for n in (int(a.n * per), int(2 * a.n * per)):
                p = Path(d) / f"{name}-{n}"
                gen(p, n)
                rows.append((n, *measure(p)))
            (n1, t1, m1), (n2, t2, m2) = rows
            extra = ""
            if name == "fds-live":
                extra = f"  {(m2 - m1) * 2**20 / (n2 - n1):.0f} bytes per live fd"
            print(
                f"{name:12} {n1:>8} {t1:7.2f} s {m1:7.1f} MB | {n2:>8} {t2:7.2f} s "
                f"{m2:7.1f} MB | time x{t2 / t1:.2f}  memory x{m2 / m1:.2f}{extra}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
