"""Growth with trace length where only the live state should count (SPEC 7,
issue 37): each case is a preload log of N and 2N lines whose live state
stays the same, analyzed by `rocrtrace analyze` in a child process; printed:
wall seconds and peak RSS at both sizes and their ratios (2.0 = linear time,
1.0 = flat memory).  Figures from one run; not a timed test.

    python benchmarks/bench_growth.py [N]          # default 50,000

Cases:
  same-range   one range set again and again (register+map shapes
               alternating): a claim keeps its current effect, not every
               grant it ever had (was 4.2 / 19 / 112 s at 25k / 50k / 100k)
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD = ("# rocrtrace-log 1\n# pid=100 ppid=1 exe=/bin/x page_size=4096 start=1.0\n"
        '100   1.000000 openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = 3</dev/kfd> <0.000010>\n')
SET = ("100   {t:.6f} ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {{start_addr=0x7e0000000000, "
       "size=0x4000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr={n}, attrs=[{attrs}]}}) = 0 <0.000005>\n")
FINE_IP = ("{type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=KFD_IOCTL_SVM_FLAG_COHERENT}, "
           "{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}")
IP = "{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}"


def same_range(path: Path, n: int) -> None:
    with path.open("w") as f:
        f.write(HEAD)
        for i in range(n):
            t = 1.0 + 2e-5 * (i + 1)
            f.write(SET.format(t=t, n=2, attrs=FINE_IP) if i % 2 else SET.format(t=t, n=1, attrs=IP))
        f.write("# exit status=0\n")


CASES = {"same-range": same_range}


def measure(path: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of analyzing `path` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", str(path)],
                   stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=50_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for name, gen in CASES.items():
            rows = []
            for n in (a.n, 2 * a.n):
                p = Path(d) / f"{name}-{n}.log"
                gen(p, n)
                rows.append((n, *measure(p)))
            (n1, t1, m1), (n2, t2, m2) = rows
            print(f"{name:12} {n1:>8} lines {t1:7.2f} s {m1:7.1f} MB | {n2:>8} lines {t2:7.2f} s "
                  f"{m2:7.1f} MB | time x{t2 / t1:.2f}  memory x{m2 / m1:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
