"""Per-call cost of an intercepted ioctl: a small C program loops N ioctls
(AMDKFD_IOC_GET_VERSION on /dev/null, which answers ENOTTY) and times itself
with clock_gettime.  Runs it bare, under the capture library (stacks off and
on), and under `strace -f`, and prints the median ns/call of several runs and
the library's added cost as a fraction of strace's.

    python benchmarks/bench_capture.py [N] [RUNS]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from fakedev import cbuild  # noqa: E402
from rocrtrace.capture import run  # noqa: E402

LOOP = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  int fd = open("/dev/null", O_RDWR);
  unsigned v[2];
  struct timespec a, b;
  for (int i = 0; i < 1000; i++) ioctl(fd, 0x80084b01, v);   /* warm up */
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) ioctl(fd, 0x80084b01, v);     /* AMDKFD_IOC_GET_VERSION */
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
  printf("%.1f\n", ns);
  return 0;
}
"""


def measure(argv, env, runs):
    out = []
    for _ in range(runs):
        p = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        out.append(float(p.stdout.split()[-1]))
    return statistics.median(out)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    prog = str(cbuild.build(LOOP, "bench_ioctl_loop"))
    with tempfile.TemporaryDirectory() as tmp:
        res = {"bare": measure([prog, str(n)], None, runs)}
        res["preload"] = measure([prog, str(n)], run.preload_env(os.path.join(tmp, "a"), 0), runs)
        res["preload+stack8"] = measure([prog, str(n)], run.preload_env(os.path.join(tmp, "b"), 8), runs)
        if shutil.which("strace"):
            sn = max(n // 20, 1000)  # strace is slow: fewer calls, same per-call figure
            res["strace -f"] = measure(
                ["strace", "-f", "-o", os.path.join(tmp, "s"), "-ttt", "-T", "-yy", prog, str(sn)], None, runs
            )
    bare = res["bare"]
    print(f"ioctl loop, N={n}, median of {runs} runs")
    print(f"{'mode':<16}{'ns/call':>10}{'added ns':>10}")
    for k, v in res.items():
        print(f"{k:<16}{v:>10.1f}{v - bare:>10.1f}")
    if "strace -f" in res:
        st_added = res["strace -f"] - bare
        for k in ("preload", "preload+stack8"):
            print(f"{k} added cost / strace added cost = {(res[k] - bare) / st_added:.3f}")


if __name__ == "__main__":
    main()
