"""A strace log whose first process has no pid prefix and never says its pid
(an attached `strace -p`): its events go out after a bounded wait (4,096
events, NOPID_MAX in src/parse/strace.rs) as the process of unknown pid, and
stay that process when a later prefix or getpid names it, so memory stays
flat and one process is never split in two (issue 36)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coremodels import trace_events


def _log(path, n, named_at=None, by="prefix"):
    """fd 3 and 4 opened unprefixed; n reads of fd 4; at `named_at` the root
    is named (a fork's prefixes, or getpid) and then closes both fds."""
    t = [1764435600.0]
    out = []

    def line(s, pid=None):
        t[0] += 1e-5
        out.append((f"[pid {pid}] " if pid else "") + f"{t[0]:.6f} {s}")

    line('openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = 3</dev/kfd> <0.000010>')
    line('openat(AT_FDCWD, "/tmp/x", O_RDONLY) = 4</tmp/x> <0.000010>')
    root = None
    for i in range(n):
        if i == named_at:
            if by == "prefix":
                line(
                    "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, "
                    "child_tidptr=0x7f) = 777 <0.000050>"
                )
                line("close(4</tmp/x>) = 0 <0.000005>", pid=777)
                line("exit_group(0) = ?", pid=777)
                line("+++ exited with 0 +++", pid=777)
                root = 555
            else:
                line("getpid() = 555 <0.000002>")
        line('read(4</tmp/x>, "x", 1) = 1 <0.000003>', pid=root)
    line("close(4</tmp/x>) = 0 <0.000005>", pid=root)
    line("close(3</dev/kfd>) = 0 <0.000005>", pid=root)
    line("close(4</tmp/x>) = -1 EBADF (Bad file descriptor) <0.000005>", pid=root)
    path.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize(
    "n,named_at,by", [(2000, 1000, "prefix"), (20000, 10000, "prefix"), (20000, 10000, "getpid"), (20000, None, None)]
)
def test_the_unknown_pid_process_stays_one_process(tmp_path, n, named_at, by):
    log = tmp_path / "p.log"
    _log(log, n, named_at, by)
    evs, _ = trace_events(str(log))
    root_pids = {e.pid for e in evs if e.pid != 777}
    assert len(root_pids) == 1, root_pids  # never split in two
    if n > 4096 and named_at is not None:
        assert root_pids == {None}  # committed before it was named
    p = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", str(log)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = [(f["rule"], f["line"]) for f in json.loads(p.stdout)["findings"] if f["severity"] != "note"]
    # exactly the real double close at the end, no false finding from a split
    assert found == [("fd-double-close", len(log.read_text().splitlines()))], found
