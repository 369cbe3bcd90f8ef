"""TRACE arguments → one merged event stream.

A TRACE is a file, ``-`` (stdin), a directory or a glob; files may be
compressed.  Files are read as bytes in chunks, split on ``\\n`` only and
decoded with surrogateescape, so no byte sequence can crash the reader and
no line (however long) is held whole in memory beyond ``max_line``.
"""
from __future__ import annotations

import bz2
import glob as globmod
import gzip
import heapq
import lzma
import os
import re
import sys
from typing import Iterator

from .events import Event, InputInfo
from .parse.strace import Parser, looks_like_trace_line

CHUNK = 1 << 20
DETECT_LINES = 50


class InputError(Exception):
    """An input that cannot be read or recognized; str() is one line."""


def _err(path: str, why: str) -> InputError:
    return InputError(f"rocrtrace: {path}: {why}")


_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"),
          (b"\x28\xb5\x2f\xfd", "zstd"))


def compression_of(head: bytes) -> str | None:
    """The compression a file's first bytes announce, or None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def is_plain_file(path: str) -> bool:
    """A regular, readable, uncompressed file (not stdin)."""
    if path == "-":
        return False
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            return compression_of(f.read(6)) is None
    except OSError:
        return False


def _open_bytes(path: str):
    """A binary stream for ``path`` (``-`` = stdin), decompressing by magic
    bytes."""
    if path == "-":
        return sys.stdin.buffer
    try:
        f = open(path, "rb")
    except OSError as e:
        raise _err(path, e.strerror or "cannot open") from None
    kind = compression_of(f.read(6))
    f.seek(0)
    if kind == "gzip":
        return gzip.GzipFile(fileobj=f)
    if kind == "xz":
        return lzma.LZMAFile(f)
    if kind == "bzip2":
        return bz2.BZ2File(f)
    if kind == "zstd":
        try:
            import zstandard  # type: ignore
        except ImportError:
            f.close()
            raise _err(path, "zstd-compressed, but the zstandard module is not installed "
                             "(pip install zstandard, or decompress it first)") from None
        return zstandard.ZstdDecompressor().stream_reader(f)
    return f


def _too_long(info: InputInfo, lineno: int, text) -> tuple[int, None]:
    """Count an over-long line as unparsed; only its head is kept."""
    if isinstance(text, bytes):
        text = text[:200].decode("utf-8", "surrogateescape")
    info.too_long += 1
    info.add_unparsed(lineno, text[:200])
    return lineno, None


def read_lines(stream, info: InputInfo, max_line: int = 1 << 20,
               first: bytes = b"", start_line: int = 0) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line; text is None for an over-long line
    (counted in info.too_long and as unparsed).  Memory stays within one
    chunk plus ``max_line`` whatever the input.  ``start_line`` is the number
    of lines before the stream's first byte (a chunk of a larger file)."""
    buf = b""
    lineno = start_line
    skipping = False
    pending = first       # bytes already read (format detection on stdin)
    while True:
        if pending:
            chunk, pending = pending, b""
        else:
            try:
                chunk = stream.read(CHUNK)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as e:
                raise _err(info.file, f"read error: {e}") from None
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            chunk = chunk[nl + 1:]
            skipping = False
            buf = b""
        buf += chunk
        last = buf.rfind(b"\n")
        if last < 0:
            if len(buf) > max_line:
                lineno += 1
                yield _too_long(info, lineno, buf)
                buf = b""
                skipping = True
            continue
        text = buf[:last].decode("utf-8", "surrogateescape")
        buf = buf[last + 1:]
        for line in text.split("\n"):
            lineno += 1
            if len(line) > max_line:
                yield _too_long(info, lineno, line)
            else:
                yield lineno, line
        if len(buf) > max_line:
            lineno += 1
            yield _too_long(info, lineno, buf)
            buf = b""
            skipping = True
    if buf and not skipping:
        info.ends_mid_line = True
        lineno += 1
        line = buf.decode("utf-8", "surrogateescape")
        if len(line) > max_line:
            yield _too_long(info, lineno, line)
        else:
            yield lineno, line
    elif skipping:
        info.ends_mid_line = True


def _detect(path: str, head: bytes) -> str:
    """strace | preload, from the first lines; raises InputError."""
    if not head:
        raise _err(path, "empty")
    text = head.decode("utf-8", "surrogateescape")
    lines = [ln for ln in text.split("\n")[:400] if ln.strip()][:DETECT_LINES]
    if not lines:
        raise _err(path, "empty (no lines)")
    if lines[0].startswith("# rocrtrace-log"):
        return "preload"
    good = sum(1 for ln in lines if len(ln) < 65536 and looks_like_trace_line(ln))
    if good >= 1 and good * 3 >= len(lines):
        return "strace"
    first = lines[0][:60].encode("unicode_escape").decode("ascii")
    raise _err(path, f"not an strace or preload log (first line: {first})")


_FF_SUFFIX = re.compile(r"\.(\d+)$")


class _File:
    def __init__(self, path: str, fmt: str, info: InputInfo, tid: int | None):
        self.path, self.fmt, self.info, self.tid = path, fmt, info, tid


class Trace:
    """One TRACE argument: its files and their merged event stream."""

    def __init__(self, arg: str, files: list[_File], max_line: int, jobs: int = 1):
        self.arg = arg
        self._files = files
        self.infos: list[InputInfo] = [f.info for f in files]
        self.max_line = max_line
        self.jobs = jobs
        self.chunk_opts: dict = {}   # tests: options for parse.chunks.file_events

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self._files]

    def _file_events(self, f: _File, tgid_of: dict | None) -> Iterator[Event]:
        stream = _open_bytes(f.path)
        parser = Parser(f.path if f.path != "-" else "-", f.info, tid=f.tid, tgid_of=tgid_of)
        feed = parser.feed
        try:
            for lineno, line in read_lines(stream, f.info, self.max_line):
                if line is None:
                    f.info.lines += 1
                    continue
                evs = feed(lineno, line)
                if evs:
                    yield from evs
            yield from parser.finish()
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()

    def events(self, jobs: int | None = None) -> Iterator[Event]:
        """The merged stream in completion order; seq unique in the trace.
        With ``jobs`` > 1 one large plain file is parsed in chunks by that
        many processes (rocrtrace.parse.chunks); the events are the same."""
        files = self._files
        seq = 0
        if len(files) == 1:
            jobs = self.jobs if jobs is None else jobs
            for ev in self._one_file_events(files[0], jobs):
                ev.seq = seq
                seq += 1
                yield ev
            return
        tgid_of = self._ff_threads()
        streams = [self._keyed(self._file_events(f, tgid_of), i) for i, f in enumerate(files)]
        for _key, _i, _n, ev in heapq.merge(*streams):
            ev.seq = seq
            seq += 1
            yield ev

    def _one_file_events(self, f: _File, jobs: int) -> Iterator[Event]:
        if jobs > 1:
            from .parse import chunks

            evs = chunks.file_events(f.path, f.fmt, f.info, self.max_line, jobs,
                                     **self.chunk_opts)
            if evs is not None:
                return evs
        return self._file_events(f, None)

    @staticmethod
    def _keyed(evs: Iterator[Event], idx: int):
        last = float("-inf")
        n = 0
        for ev in evs:
            end = ev.end
            if end is not None and end > last:
                last = end
            n += 1
            yield (last, idx, n, ev)

    def _ff_threads(self) -> dict:
        """tid → tgid for -ff files, from a cheap pre-pass over the clone
        lines: threads live in files of their own, so a thread's first line
        can come before its parent's clone in the merged order."""
        parent: dict = {}
        tids = {f.tid for f in self._files if f.tid is not None}
        if not tids:
            return {}
        for f in self._files:
            if f.tid is None or f.fmt != "strace":
                continue
            info = InputInfo(file=f.path)
            stream = _open_bytes(f.path)
            try:
                p = Parser(f.path, info, tid=f.tid)
                evs = []
                for lineno, line in read_lines(stream, info, self.max_line):
                    if line is None or ("clone" not in line and "fork" not in line
                                        and "syscall_0x1b3" not in line):
                        continue
                    evs.extend(p.feed(lineno, line))
                evs.extend(p.finish())
                for ev in evs:
                    if ev.name in ("clone", "clone3", "fork", "vfork") and ev.ret \
                            and ev.ret > 0:
                        parent[ev.ret] = (f.tid, getattr(ev, "thread", False))
            finally:
                if stream is not sys.stdin.buffer:
                    stream.close()
        out: dict = {}

        def tgid(t, depth=0):
            if t in out:
                return out[t]
            pr = parent.get(t)
            g = t
            if pr is not None and pr[1] and depth < 10000:
                g = tgid(pr[0], depth + 1)
            out[t] = g
            return g
        for t in tids:
            tgid(t)
        return out


def _expand(arg: str) -> list[str]:
    if arg == "-":
        return ["-"]
    if os.path.isdir(arg):
        names = sorted(os.listdir(arg))
        paths = [os.path.join(arg, n) for n in names
                 if not n.startswith(".") and os.path.isfile(os.path.join(arg, n))]
        if not paths:
            raise _err(arg, "empty directory")
        return paths
    if os.path.exists(arg):
        return [arg]
    if any(ch in arg for ch in "*?["):
        paths = sorted(p for p in globmod.glob(arg) if os.path.isfile(p))
        if not paths:
            raise _err(arg, "no files match")
        return paths
    raise _err(arg, "no such file or directory")


def _strip_compression(path: str) -> str:
    for suf in (".gz", ".xz", ".bz2", ".zst"):
        if path.endswith(suf):
            return path[:-len(suf)]
    return path


def open_trace(arg: str, input_format: str | None = None, max_line: int = 1 << 20,
               jobs: int = 1) -> Trace:
    """Open a TRACE argument; raises InputError (one line naming the file).
    ``jobs`` > 1: parse one large plain file with that many processes."""
    paths = _expand(arg)
    files: list[_File] = []
    stdin_head = b""
    for path in paths:
        if path != "-" and os.path.isfile(path) and os.path.getsize(path) == 0:
            raise _err(path, "empty file")
        stream = _open_bytes(path)
        try:
            head = stream.read(1 << 16)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise _err(path, f"cannot decompress: {e}") from None
        finally:
            if path != "-":
                stream.close()
        if path == "-":
            stdin_head = head
        fmt = input_format
        if fmt is None or fmt == "auto":
            fmt = _detect(path, head)
        elif not head:
            raise _err(path, "empty")
        info = InputInfo(file=path, format=fmt)
        tid = None
        if len(paths) > 1:
            m = _FF_SUFFIX.search(_strip_compression(path))
            if m and fmt == "strace":
                tid = int(m.group(1))
        files.append(_File(path, fmt, info, tid))
    if stdin_head:
        return _StdinTrace(arg, files, max_line, stdin_head)
    return Trace(arg, files, max_line, jobs)


class _StdinTrace(Trace):
    """stdin cannot be reopened: replay the bytes used for detection."""

    def __init__(self, arg, files, max_line, head):
        super().__init__(arg, files, max_line)
        self._head = head

    def _file_events(self, f, tgid_of):
        parser = Parser("-", f.info)
        for lineno, line in read_lines(sys.stdin.buffer, f.info, self.max_line,
                                       first=self._head):
            if line is None:
                f.info.lines += 1
                continue
            yield from parser.feed(lineno, line)
        yield from parser.finish()


__all__ = ["InputError", "Trace", "open_trace", "read_lines"]
