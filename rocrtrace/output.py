"""Files the tool writes (reports, -o, perfetto:FILE, baselines, the GitHub
step summary), written so that a path can never be turned against the user
(issue 37):

* a symbolic link is never followed for a file the tool writes: the link
  is refused (exit 2), so a planted ``/tmp/report.json -> /etc/passwd``
  cannot make a root run overwrite the target (``O_NOFOLLOW``);
* what is not a regular file is never replaced: a character device
  (``/dev/null``, a terminal) is written in place, a FIFO, socket, block
  device or directory is refused (exit 2) - a FIFO would block forever;
* ``/dev/stdout``, ``/dev/stderr`` and ``/dev/fd/N`` name the tool's own
  streams: they are written through the descriptor, not by opening the path.

Every problem is an ``OutputError``: one line, exit 2.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile

from .report.common import printable


class OutputError(Exception):
    """An output path that cannot be written: one line, exit 2."""


# The tool's own streams by the names a shell user writes them.
_STREAMS = {
    "/dev/stdout": 1,
    "/dev/stderr": 2,
    "/dev/fd/1": 1,
    "/dev/fd/2": 2,
    "/proc/self/fd/1": 1,
    "/proc/self/fd/2": 2,
}


_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d{1,9})$")


def stream_of(path: str | None) -> int | None:
    """The descriptor ``path`` names when it is one of the tool's own open
    descriptors (``None`` and ``-`` are stdout; ``/dev/stdout``,
    ``/dev/fd/N`` as a shell's ``>(...)`` gives it), else None.  These are
    written through the descriptor: nothing is opened, created or followed."""
    if path is None or path == "-":
        return 1
    if path in _STREAMS:
        return _STREAMS[path]
    m = _FD_PATH.match(path)
    return int(m.group(1)) if m else None


def _fail(what: str, path: str, why: str) -> OutputError:
    return OutputError(f"rocrtrace: cannot write {what} {printable(path)}: {why}")


def _kind(mode: int) -> str | None:
    """Why a node of this mode is refused, or None when it may be written."""
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "it is a FIFO (a named pipe would block the run; write to a file)"
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    if stat.S_ISBLK(mode):
        return "it is a block device"
    return "it is not a regular file"


def check(path: str | None, what: str = "output") -> None:
    """Refuse a bad output path before a long analysis runs, not after."""
    fd_no = stream_of(path)
    if fd_no is not None:
        if fd_no > 2:
            try:
                os.fstat(fd_no)
            except OSError as e:
                raise _fail(what, path, e.strerror or str(e)) from None
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d):
            raise _fail(what, path, f"no directory {printable(d)}") from None
        if not os.access(d, os.W_OK | os.X_OK):
            raise _fail(what, path, "permission denied") from None
        return
    except OSError as e:
        raise _fail(what, path, e.strerror or str(e)) from None
    if stat.S_ISLNK(st.st_mode):
        raise _fail(
            what,
            path,
            "it is a symbolic link (rocrtrace never follows one for a file it writes: give the target's path)",
        )
    why = _kind(st.st_mode)
    if why:
        raise _fail(what, path, why)
    if not os.access(path, os.W_OK):
        raise _fail(what, path, "permission denied")


def _open_fd(path: str, what: str, append: bool = False) -> int:
    """A descriptor open for writing on ``path``: never through a symlink,
    never on a FIFO (O_NONBLOCK: a FIFO with no reader fails at once, one
    with a reader is refused after fstat), never replacing a node."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_CREAT
    if append:
        flags |= os.O_APPEND
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        import errno

        if e.errno == errno.ELOOP:
            raise _fail(
                what,
                path,
                "it is a symbolic link (rocrtrace never follows one for a file it writes: give the target's path)",
            ) from None
        if e.errno == errno.ENXIO:
            raise _fail(what, path, "it is a FIFO (a named pipe would block the run; write to a file)") from None
        raise _fail(what, path, e.strerror or str(e)) from None
    try:
        st = os.fstat(fd)
        why = _kind(st.st_mode)
        if why:
            raise _fail(what, path, why)
        if stat.S_ISREG(st.st_mode) and not append:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write(path: str | None, data: str | bytes, what: str = "output", append: bool = False) -> None:
    """Write ``data`` (text as UTF-8, bytes as they are) to ``path``."""
    if isinstance(data, str):
        # backslashreplace: a report never crashes on a byte the trace held
        # that UTF-8 cannot carry (reporters escape them already)
        data = data.encode("utf-8", "backslashreplace")
    fd_no = stream_of(path)
    if fd_no is not None and fd_no not in (1, 2):
        try:
            _write_all(fd_no, data)
        except OSError as e:
            raise _fail(what, path, e.strerror or str(e)) from None
        return
    if fd_no is not None:
        stream = sys.stdout if fd_no == 1 else sys.stderr
        try:
            stream.flush()
            buf = getattr(stream, "buffer", None)
            if buf is not None:
                buf.write(data)
            else:
                stream.write(data.decode("utf-8", "backslashreplace"))
            stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            name = "standard output" if fd_no == 1 else "standard error"
            raise OutputError(f"rocrtrace: cannot write {what} to {name}: {e.strerror or e}") from None
        return
    fd = _open_fd(path, what, append=append)
    try:
        _write_all(fd, data)
    except OSError as e:
        raise _fail(what, path, e.strerror or str(e)) from None
    finally:
        os.close(fd)


def replace(path: str, data: str | bytes, what: str = "output") -> None:
    """Write ``data`` to ``path`` whole or not at all: a regular file (or a
    new one) is replaced by a temporary file renamed over it, keeping its
    permission bits; a character device (/dev/null) is written in place;
    a symlink, FIFO or anything else is refused.  rename() replaces the
    directory entry itself, never what a link points to."""
    if isinstance(data, str):
        data = data.encode("utf-8", "backslashreplace")
    if stream_of(path) is not None:
        write(path, data, what)
        return
    check(path, what)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _fail(what, path, e.strerror or str(e)) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        write(path, data, what)  # a character device, checked above
        return
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rocrtrace.", dir=d)
    except OSError as e:
        raise _fail(what, path, e.strerror or str(e)) from None
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, 0o666 & ~umask)
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        raise _fail(what, path, e.strerror or str(e)) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
