#!/usr/bin/env python3
"""Stand-in for strace in strace's own test suite that keeps a copy of every
file strace writes with -o (issue 33: the suite's logs, read by
benchmarks/strace_suite.py).

The suite runs strace many times in one test directory with the same -o
name, so the files left at the end hold only each test's last run.  This
wrapper execs the real strace in its own process (same pid, same signals,
same exit status, so the suite behaves as without it) and leaves behind a
detached watcher that waits for that pid to exit (pidfd) and copies the -o
file and its -ff siblings (`NAME.PID`) to
`$STRACE_SUITE_ARCHIVE/<test dir>/<ns>/`.  As the init of a new pid
namespace (`unshare -Urpf $STRACE`, the --pidns-translation tests) it runs
strace as its child instead: an orphaned watcher would be strace's child.

    STRACE_REAL='/path/to/strace' STRACE_SUITE_ARCHIVE=$PWD/tests/strace-logs \\
        STRACE=$PWD/strace_suite_wrap.py make check

STRACE_REAL may be a command line (split on spaces), e.g. a loader and the
binary.  Without STRACE_SUITE_ARCHIVE the wrapper only execs strace."""

from __future__ import annotations

import glob
import os
import select
import shutil
import sys
import time


def output_name(args: list[str]) -> str | None:
    """The file strace writes its trace to: the first -o/--output."""
    for i, a in enumerate(args):
        if a == "--":
            break
        if a in ("-o", "--output"):
            return args[i + 1] if i + 1 < len(args) else None
        if a.startswith("--output="):
            return a[len("--output=") :]
        if a.startswith("-o") and not a.startswith("--"):
            return a[2:]
    return None


def watch(pid: int, out: str, cwd: str, archive: str, ready_w: int) -> None:
    """In a detached grandchild: wait for `pid` to exit, copy what it wrote."""
    before = snapshot(out, cwd)
    fd = os.pidfd_open(pid)
    os.write(ready_w, b"x")
    os.close(ready_w)
    select.select([fd], [], [])
    copy_output(out, cwd, archive, before)


def candidates(out: str, cwd: str) -> list[str]:
    """The -o file and its -ff siblings (`NAME.PID`) as they are now (not a
    `NAME.err` the test's shell wrote strace's stderr to)."""
    path = out if os.path.isabs(out) else os.path.join(cwd, out)
    ff = [f for f in glob.glob(glob.escape(path) + ".*") if f[len(path) + 1 :].isdigit()]
    return [f for f in [path, *ff] if os.path.isfile(f)]


def snapshot(out: str, cwd: str) -> dict[str, tuple]:
    stamp = {}
    for f in candidates(out, cwd):
        st = os.stat(f)
        stamp[f] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return stamp


def copy_output(out: str, cwd: str, archive: str, before: dict[str, tuple]) -> None:
    """Copy the files strace wrote: new ones and changed ones, not an
    earlier run's left as they were."""
    now = snapshot(out, cwd)
    files = [f for f, st in now.items() if before.get(f) != st]
    if not files:
        return
    dest = os.path.join(archive, os.path.basename(cwd), str(time.time_ns()))
    os.makedirs(dest, exist_ok=True)
    for f in files:
        shutil.copyfile(f, os.path.join(dest, os.path.basename(f)))


def run_child(argv: list[str], out: str, archive: str) -> int:
    """strace as a child, its output copied once it exited; its status."""
    cwd = os.getcwd()
    before = snapshot(out, cwd)
    child = os.fork()
    if child == 0:
        os.execv(argv[0], argv)
    # as init we are also the parent of every orphan of the namespace: reap
    # them (strace has seen each exit before its parent can)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    copy_output(out, cwd, archive, before)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def main() -> None:
    real = os.environ["STRACE_REAL"].split()
    args = sys.argv[1:]
    out = output_name(args)
    archive = os.environ.get("STRACE_SUITE_ARCHIVE")
    # -o "|cmd" and "!cmd" pipe the trace into a command: no file to copy
    if archive and out and not out.startswith(("|", "!")) and out != "/dev/null":
        pid = os.getpid()
        if pid == 1:
            # the init of a new pid namespace (`unshare -Urpf strace`):
            # an orphaned watcher would become strace's own child and strace
            # would wait for it forever, so strace runs as our child here
            sys.exit(run_child(real + args, out, archive))
        cwd = os.getcwd()
        r, w = os.pipe()
        if os.fork() == 0:
            os.close(r)
            # the grandchild is reparented away: strace never sees it exit
            if os.fork() == 0:
                os.setsid()
                try:
                    watch(pid, out, cwd, archive, w)
                finally:
                    os._exit(0)
            os._exit(0)
        os.close(w)
        os.waitpid(-1, 0)
        os.read(r, 1)  # the watcher holds a pidfd before strace starts
        os.close(r)
    os.execv(real[0], real + args)


if __name__ == "__main__":
    main()
