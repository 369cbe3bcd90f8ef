"""Traces whose length grows while what the models must hold does not, or
grows only with the live state (issue 37).  Each writer takes a path
and a size N; tests/test_growth.py runs them at sizes CI affords and checks
what the result must look like, benchmarks/bench_growth.py times two sizes
and prints the ratios.

  tids       one process starts N threads (strace -f); all run, then exit
             in the order they started
  children   one process forks N children; all run, then exit in the order
             they were forked
  close-bad  N `close(-1) = -1 EBADF`: one finding, N times
  sweeps     N fork children one after the other, each closing fds 3 to 40
             before it exits (none open): one sweep note, N times
  fds-live   N files opened and held: memory per live fd
  ff-files   `strace -ff -o DIR/t`: a parent and N children, one file each
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

THREAD = (
    "{pid} {t} clone3({{flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|"
    "CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, "
    "exit_signal=0, tls=0x7f0000001000}}, 88) = {c}\n"
)
FORK = (
    "{pid} {t} clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|"
    "SIGCHLD, child_tidptr=0x7f0000002000) = {c}\n"
)
OPEN = '{pid} {t} openat(AT_FDCWD, "/etc/hosts", O_RDONLY|O_CLOEXEC) = {fd}\n'
CLOSE = "{pid} {t} close({fd}) = 0\n"
ROOT = 1000


class _Clock:
    """Absolute times (strace -ttt), one microsecond apart."""

    def __init__(self) -> None:
        self.us = 0

    def __call__(self) -> str:
        self.us += 1
        return f"{1_700_000_000 + self.us // 1_000_000}.{self.us % 1_000_000:06d}"


@contextmanager
def _trace(path: Path):
    """(file, clock) of an `strace -f -ttt` log of ROOT, between its execve
    and its exit."""
    t = _Clock()
    with path.open("w") as f:
        f.write(f'{ROOT} {t()} execve("/bin/x", ["x"], 0x7ffc0000 /* 1 var */) = 0\n')
        yield f, t
        f.write(f"{ROOT} {t()} exit_group(0) = ?\n{ROOT} {t()} +++ exited with 0 +++\n")


def _spawn(path: Path, n: int, make: str, end: str) -> None:
    """ROOT makes n tasks with `make` (a clone line), each opens and closes
    a file, then each ends with `end` (its exit call), in the order made."""
    with _trace(path) as (f, t):
        for i in range(n):
            f.write(make.format(pid=ROOT, t=t(), c=ROOT + 1 + i))
        for i in range(n):
            f.write(OPEN.format(pid=ROOT + 1 + i, t=t(), fd=3))
            f.write(CLOSE.format(pid=ROOT + 1 + i, t=t(), fd=3))
        for i in range(n):
            tid = ROOT + 1 + i
            f.write(f"{tid} {t()} {end} = ?\n{tid} {t()} +++ exited with 0 +++\n")


def tids(path: Path, n: int) -> None:
    _spawn(path, n, THREAD, "exit(0)")


def children(path: Path, n: int) -> None:
    _spawn(path, n, FORK, "exit_group(0)")


def close_bad(path: Path, n: int) -> None:
    with _trace(path) as (f, t):
        for _ in range(n):
            f.write(f"{ROOT} {t()} close(-1) = -1 EBADF (Bad file descriptor)\n")


def sweeps(path: Path, n: int) -> None:
    with _trace(path) as (f, t):
        for i in range(n):
            pid = ROOT + 1 + i
            f.write(FORK.format(pid=ROOT, t=t(), c=pid))
            for fd in range(3, 41):
                f.write(f"{pid} {t()} close({fd}) = -1 EBADF (Bad file descriptor)\n")
            f.write(f"{pid} {t()} exit_group(0) = ?\n{pid} {t()} +++ exited with 0 +++\n")


def fds_live(path: Path, n: int) -> None:
    with _trace(path) as (f, t):
        for i in range(n):
            f.write(f'{ROOT} {t()} openat(AT_FDCWD, "/data/part-{i:08d}.bin", O_RDONLY|O_CLOEXEC) = {3 + i}\n')


def ff_files(dir_: Path, n: int) -> Path:
    """`strace -ff -o DIR/t`: DIR/t.PID per process; returns DIR."""
    dir_.mkdir(parents=True, exist_ok=True)
    t = _Clock()
    parent = [f'{t()} execve("/bin/x", ["x"], 0x7ffc0000 /* 1 var */) = 0\n']
    for i in range(n):
        parent.append(
            f"{t()} clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|"
            f"CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f0000002000) = {ROOT + 1 + i}\n"
        )
    for i in range(n):
        with (dir_ / f"t.{ROOT + 1 + i}").open("w") as f:
            f.write(f'{t()} openat(AT_FDCWD, "/etc/hosts", O_RDONLY|O_CLOEXEC) = 3\n')
            f.write(f"{t()} close(3) = 0\n")
            f.write(f"{t()} exit_group(0) = ?\n{t()} +++ exited with 0 +++\n")
    parent.append(f"{t()} exit_group(0) = ?\n{t()} +++ exited with 0 +++\n")
    (dir_ / f"t.{ROOT}").write_text("".join(parent))
    return dir_


WRITERS = {"tids": tids, "children": children, "close-bad": close_bad, "sweeps": sweeps, "fds-live": fds_live}
