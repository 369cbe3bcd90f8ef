"""Parse speed: generate a deterministic `strace -f -o -ttt -T -yy` log of
N lines (default 1,000,000) and print lines/s and events/s of the core
reading and parsing it into the event table (_engine.events_table: no
replay, no Python object per event).  Usage: python benchmarks/bench_parse.py [N]"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rocrtrace import _engine  # noqa: E402

SHAPES = [
    "{p} {t} ioctl(3</dev/kfd<char 235:0>>, AMDKFD_IOC_WAIT_EVENTS, 0x7ffc765d479c) = 0 <0.000031>",
    "{p} {t} ioctl(3</dev/kfd<char 235:0>>, _IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x28), 0x7ffc765d4790) = 0 <0.000041>",
    "{p} {t} mmap(NULL, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE, -1, 0) = 0x7f3a1c200000 <0.000012>",
    "{p} {t} munmap(0x7f3a1c200000, 2097152) = 0 <0.000020>",
    '{p} {t} openat(AT_FDCWD</home/dev>, "/dev/dri/renderD128", O_RDWR|O_CLOEXEC) = 5</dev/dri/renderD128<char 226:128>> <0.000015>',
    "{p} {t} close(5</dev/dri/renderD128<char 226:128>>) = 0 <0.000004>",
    "{p} {t} futex(0x55d0c3a2b3c8, FUTEX_WAKE_PRIVATE, 1) = 0 <0.000006>",
    '{p} {t} read(7<pipe:[14982]>, "x", 1) = 1 <0.000010>',
    "{p} {t} ioctl(4</dev/dri/renderD128<char 226:128>>, DRM_IOCTL_AMDGPU_INFO or DRM_IOCTL_SIS_FB_FREE, 0x7ffc765d46c0) = 0 <0.000009>",
    "{p} {t} close(9) = -1 EBADF (Bad file descriptor) <0.000003>",
]


def generate(path: str, n: int) -> None:
    rnd = random.Random(1)
    t = 1795973828.0
    with open(path, "w") as f:
        i = 0
        while i < n:
            pid = 4242 + rnd.randrange(4)
            t += 0.000013
            if rnd.random() < 0.05 and i + 2 < n:
                f.write(f"{pid:<5d} {t:.6f} read(7<pipe:[14982]>,  <unfinished ...>\n")
                other = 4250
                f.write(f"{other:<5d} {t + 0.000001:.6f} close(9) = -1 EBADF (Bad file descriptor) <0.000003>\n")
                f.write(f'{pid:<5d} {t + 0.000002:.6f} <... read resumed>"x", 1) = 1 <0.000020>\n')
                i += 3
                continue
            f.write(rnd.choice(SHAPES).format(p=f"{pid:<5d}", t=f"{t:.6f}") + "\n")
            i += 1


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.log")
        generate(path, n)
        t0 = time.perf_counter()
        _, (info,) = _engine.events_table([path])
        dt = time.perf_counter() - t0
        events = info.events
        print(
            f"lines {info.lines}  events {events}  unparsed {info.unparsed}  "
            f"{dt:.2f} s  {info.lines / dt:,.0f} lines/s  {events / dt:,.0f} events/s"
        )


if __name__ == "__main__":
    main()
