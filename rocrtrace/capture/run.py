"""Run a program under capture: the preload library (default) or strace.

API for the CLI: ``capture(cmd, method, prefix, stack_depth, echo) -> int``
returns the program's exit status (128+N when killed by signal N), or raises
CaptureError with a one-line message for usage problems.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path
from typing import Callable

from .build import BuildError, library_path

DEFAULT_PREFIX = "rocrtrace.log"
# %desc on strace 6.1 leaves out close_range and the network calls that make
# or move fds (socket, socketpair, accept, accept4, sendmsg, recvmsg): they
# are named outside it (checked by tests/test_capture_basic.py)
STRACE_FD_CALLS = "close_range,socket,socketpair,accept,accept4,sendmsg,recvmsg"
STRACE_TRACE = f"%desc,%memory,%process,{STRACE_FD_CALLS},ioctl,pidfd_getfd"


class CaptureError(Exception):
    """A usage problem (exit code 2 in the CLI); str() is one line."""


def strace_command(cmd: list[str], prefix: str, stack_depth: int = 0) -> list[str]:
    exe = shutil.which("strace")
    if not exe:
        raise CaptureError("strace not found: install strace or use --method preload")
    # -ff: one file per thread, PREFIX.TID (a process's first thread: PREFIX.PID)
    args = [exe, "-ff", "-o", prefix, "-ttt", "-T", "-yy", "-X", "verbose", "-s", "256", "-e", f"trace={STRACE_TRACE}"]
    if stack_depth > 0:
        args.append("-k")
    return args + ["--", *cmd]


def preload_env(
    prefix: str, stack_depth: int = 0, base: dict[str, str] | None = None, extra_preload: list[str] | None = None
) -> dict[str, str]:
    """Environment that loads the capture library (prepended to LD_PRELOAD)."""
    env = dict(os.environ if base is None else base)
    try:
        lib = str(library_path())
    except BuildError as e:
        raise CaptureError(str(e)) from None
    parts = [lib] + list(extra_preload or [])
    if env.get("LD_PRELOAD"):
        parts.append(env["LD_PRELOAD"])
    env["LD_PRELOAD"] = ":".join(parts)
    env["ROCRTRACE_LOG"] = prefix
    env["ROCRTRACE_STACK_DEPTH"] = str(max(0, int(stack_depth)))
    return env


def _exit_status(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _stamp(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _existing(prefix: str) -> dict[str, tuple | None]:
    return {f: _stamp(f) for f in glob.glob(glob.escape(prefix) + ".*")}


def _written(prefix: str, before: dict[str, tuple | None]) -> list[str]:
    """The PREFIX.N files this run created or rewrote (not older ones)."""
    files = [
        f
        for f, st in _existing(prefix).items()
        if f.rsplit(".", 1)[1].isdigit() and st is not None and before.get(f) != st
    ]
    return sorted(files, key=lambda f: (len(f), f))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def trim_tail(path: str) -> int:
    """Cut the unused rest of the last growth step a killed writer leaves at
    the end of a preload log: the capture library grows its mapped log in
    steps filled with newlines (NUL bytes if it could not fill them) and
    cuts it to what it wrote at exit; SIGKILL leaves the rest.  One newline
    is kept after the last record.  Only for a writer that is gone: a live
    one may still fill it.  Returns the number of bytes cut."""
    pid = path.rsplit(".", 1)[-1]
    if not pid.isdigit() or _alive(int(pid)):
        return 0
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return 0
        end = st.st_size
        while end > 0:
            n = min(end, 1 << 16)
            block = os.pread(fd, n, end - n)
            if len(block) != n:
                return 0
            kept = len(block.rstrip(b"\0\n"))
            end -= n - kept
            if kept:
                break
        if 0 < end < st.st_size:
            end += 1  # the newline that ends the last record
        if end < st.st_size:
            os.ftruncate(fd, end)
        return st.st_size - end
    except OSError:
        return 0
    finally:
        os.close(fd)


def capture(
    cmd: list[str],
    method: str = "preload",
    prefix: str | None = None,
    stack_depth: int = 0,
    echo: Callable[[str], object] | None = print,
) -> int:
    """Run `cmd` under capture and return its exit status."""
    if not cmd:
        raise CaptureError("no command given (usage: rocrtrace capture [...] -- CMD ...)")
    if method not in ("preload", "strace"):
        raise CaptureError(f"unknown capture method {method!r} (preload or strace)")
    if stack_depth < 0:
        raise CaptureError("--stack-depth must be >= 0")
    prefix = prefix or DEFAULT_PREFIX
    if "\n" in prefix:
        raise CaptureError("the log prefix must not contain a newline")
    exe = cmd[0]
    if os.sep not in exe and not shutil.which(exe):
        raise CaptureError(f"command not found: {exe}")
    if prefix.endswith(os.sep) or Path(prefix).is_dir():
        raise CaptureError(f"the log prefix names a directory, not a file prefix: {prefix}")
    parent = Path(prefix).parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CaptureError(f"cannot create the log prefix's directory {parent}: {e.strerror}") from None
    prefix = str(Path(prefix).absolute())  # the program may chdir
    before = _existing(prefix)
    if method == "strace":
        argv = strace_command(cmd, prefix, stack_depth)
        env = None
    else:
        argv = list(cmd)
        env = preload_env(prefix, stack_depth)
    # the child gets the terminal's signals itself; we only wait for it.  A
    # no-op handler, not SIG_IGN: an ignored signal stays ignored across exec
    # and the program would no longer die of Ctrl-C.  Started with SIGINT
    # ignored (a script's background job), we keep it so: the program would
    # have inherited that without us
    old = signal.getsignal(signal.SIGINT)
    if old is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda *_: None)
    try:
        try:
            proc = subprocess.Popen(argv, env=env)
        except OSError as e:
            raise CaptureError(f"cannot run {argv[0]}: {e.strerror}") from None
        rc = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    status = _exit_status(rc)
    if method == "preload":
        for f in _written(prefix, before):
            trim_tail(f)
    if echo is not None:
        files = _written(prefix, before)
        if files:
            echo(f"rocrtrace: {method} capture wrote {len(files)} file(s):")
            for f in files:
                echo(f"  {f}")
        else:
            echo(f"rocrtrace: {method} capture wrote no log (prefix {prefix})")
    return status
