"""TRACE arguments → one merged event stream.

A TRACE is a file, ``-`` (stdin), a directory or a glob; files may be
compressed.  Files are read as bytes in chunks, split on ``\\n`` only and
decoded as UTF-8 with bytes that are not UTF-8 written ``\\xNN`` (text that
every report, JSON file and hash can encode), so no byte sequence can crash
the reader, and no line (however long) is held whole in memory beyond
``max_line``.
"""
from __future__ import annotations

import bz2
import gzip
import heapq
import lzma
import os
import re
import sys
import tempfile
import pickle
import zlib
from dataclasses import dataclass
from typing import Iterator

from .parse.pyevents import Event, InputInfo
from .paths import InputError, compression_of, is_plain_file  # noqa: F401
from .paths import _err, expand as _expand  # noqa: F401
from .parse import tinygrad
from .parse.strace import Parser, looks_like_trace_line

CHUNK = 1 << 20
DETECT_LINES = 50
DETECT_BYTES = 8 << 20      # detection reads at most this much of a file
DETECT_PREAMBLE = 100000    # ... and skips at most this many preamble lines
MAX_OPEN = 64               # files a -ff merge holds open at once
MERGE_CHUNK = 64 << 10      # read size per file while merging many files
# Everything a decompressor or a reader can raise on a corrupt or odd file.
READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)



class _Prefixed:
    """A stream that first returns ``head`` then reads on from ``f``: the
    magic bytes (and detection's look-ahead) of a pipe, FIFO or stdin are
    replayed instead of seeking back, which such streams cannot do."""

    def __init__(self, head: bytes, f):
        self.head, self.f = head, f

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + self.f.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.f.read(n)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if self.f is not sys.stdin.buffer:
            self.f.close()


def _read_full(f, n: int) -> bytes:
    """Up to ``n`` bytes (a pipe may return fewer per read)."""
    out = b""
    while len(out) < n:
        part = f.read(n - len(out))
        if not part:
            break
        out += part
    return out


def _open_bytes(path: str, raw=None):
    """A binary stream for ``path`` (``-`` = stdin), decompressing by magic
    bytes.  ``raw``: an already open byte stream of it (a pipe)."""
    if raw is not None:
        f = raw
    elif path == "-":
        f = sys.stdin.buffer
    else:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise _err(path, e.strerror or "cannot open") from None
    try:
        magic = _read_full(f, 6)
    except OSError as e:
        raise _err(path, f"read error: {e.strerror or e}") from None
    kind = compression_of(magic)
    f = _Prefixed(magic, f)
    if kind == "gzip":
        return _Closing(gzip.GzipFile(fileobj=f), f)
    if kind == "xz":
        return _Closing(lzma.LZMAFile(f), f)
    if kind == "bzip2":
        return _Closing(bz2.BZ2File(f), f)
    if kind == "zstd":
        try:
            import zstandard  # type: ignore
        except ImportError:
            f.close()
            raise _err(path, "zstd-compressed, but the zstandard module is not installed "
                             "(pip install zstandard, or decompress it first)") from None
        return _Closing(zstandard.ZstdDecompressor().stream_reader(f), f)
    return f


class _Closing:
    """A decompressing reader that also closes the file under it (GzipFile
    and friends leave a passed-in file open)."""

    def __init__(self, dec, raw):
        self.dec, self.raw = dec, raw

    def read(self, n: int = -1) -> bytes:
        return self.dec.read(n)

    def close(self) -> None:
        try:
            self.dec.close()
        except READ_ERRORS:
            pass
        self.raw.close()


def _too_long(info: InputInfo, lineno: int, text) -> tuple[int, None]:
    """Count an over-long line as unparsed; only its head is kept."""
    if isinstance(text, bytes):
        text = text[:200].decode("utf-8", "backslashreplace")
    info.too_long += 1
    info.add_unparsed(lineno, text[:200])
    return lineno, None


def read_lines(stream, info: InputInfo, max_line: int = 1 << 20,
               first: bytes = b"", start_line: int = 0,
               chunk_size: int = CHUNK) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line; text is None for an over-long line
    (counted in info.too_long and as unparsed).  Memory stays within one
    chunk plus ``max_line`` whatever the input.  ``start_line`` is the number
    of lines before the stream's first byte (a chunk of a larger file).
    A ``\\r`` before the newline (a CRLF file) is dropped, so nothing at the
    end of a line (durations) is lost."""
    buf = b""
    lineno = start_line
    skipping = False
    pending = first       # bytes already read (format detection on stdin)
    while True:
        if pending:
            chunk, pending = pending, b""
        else:
            try:
                chunk = stream.read(chunk_size)
            except READ_ERRORS as e:
                raise _err(info.file, f"read error: {_why(e)}") from None
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
        text = buf[:last].decode("utf-8", "backslashreplace")
        buf = buf[last + 1:]
        lines = text.split("\n")
        if "\r" in text:
            lines = _uncr(lines, info)
        for line in lines:
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
        line = buf.decode("utf-8", "backslashreplace")
        if line.endswith("\r"):
            line = _uncr([line], info)[0]
        if len(line) > max_line:
            yield _too_long(info, lineno, line)
        else:
            yield lineno, line
    elif skipping:
        info.ends_mid_line = True


def _uncr(lines: list, info: InputInfo) -> list:
    out = []
    for ln in lines:
        if ln.endswith("\r"):
            ln = ln[:-1]
            info.crlf = True
        out.append(ln)
    return out


def _why(e: BaseException) -> str:
    """One line for a read or decompression error."""
    text = getattr(e, "strerror", None) or str(e) or type(e).__name__
    return " ".join(str(text).split())[:200]


# --- layout: preamble, indentation, quoting ---------------------------------

@dataclass(slots=True)
class Layout:
    """How a file's trace lines sit in it: ``first`` is the line number of
    the first trace line (lines before it are a preamble: a pasted header,
    ``#`` comments, a shell prompt), ``prefix`` the indentation or ``> ``
    quoting on every line, removed before parsing."""

    first: int = 1
    prefix: str = ""
    quote: bool = False

    @property
    def plain(self) -> bool:
        return self.first <= 1 and not self.prefix


_REL_LINE = re.compile(r"( +)(\d+)(?:\.\d+)? ")
_TINYGRAD = re.compile(r"\s*-?\d+(?:\.\d+)? ms \+\s*-?\d+(?:\.\d+)? ms : |ioctl idir=")


def _common_prefix(lines: list[str]) -> str:
    if not lines:
        return ""
    a, b = min(lines), max(lines)
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return a[:n]


def _relative_times(lines: list[str]) -> bool:
    """strace -r: every line that starts with spaces and a number has it
    right-aligned in six columns (``%6ld.%06ld``), so the spaces are part of
    the timestamp, not an indentation."""
    seen = False
    for ln in lines:
        m = _REL_LINE.match(ln)
        if m is None:
            continue
        if len(m.group(1)) + len(m.group(2)) != 6:
            return False
        seen = True
    return seen


def _find_prefix(lines: list[str]) -> tuple[str, bool]:
    """(prefix, quoted) shared by every non-blank line: e-mail ``>``
    quoting, or leading blanks that are not strace -r's right-aligned
    timestamps."""
    body = [ln for ln in lines if ln.strip()]
    if not body:
        return "", False
    if all(ln.startswith(">") for ln in body):
        # lines that are only '>' are quoted blank lines
        pre = _common_prefix([ln for ln in body if ln.rstrip("> \t")])
        k = 0
        while k < len(pre) and pre[k] in "> \t":
            k += 1
        return pre[:k], True
    pre = _common_prefix(body)
    k = 0
    while k < len(pre) and pre[k] in " \t":
        k += 1
    pre = pre[:k]
    if not pre or _relative_times(body):
        return "", False
    return pre, False


def _unprefix(line: str, lay: Layout) -> str:
    pre = lay.prefix
    if line.startswith(pre):
        return line[len(pre):]
    if lay.quote and not line.rstrip("> \t"):
        return ""
    return line


def clean_lines(lines, info: InputInfo, lay: Layout):
    """Drop the preamble (counted in info.preamble) and the indentation or
    quoting of every line."""
    first = lay.first
    pre = lay.prefix
    for lineno, line in lines:
        if lineno < first:
            info.preamble += 1
            if line is None:        # an over-long preamble line
                info.too_long -= 1
                info.unparsed -= 1
                if info.unparsed_samples and info.unparsed_samples[-1][0] == lineno:
                    info.unparsed_samples.pop()
            info.lines += 1
            continue
        if pre and line is not None:
            line = _unprefix(line, lay)
        yield lineno, line


def _kind(line: str) -> str | None:
    """The dialect one (cleaned) line belongs to, or None."""
    if line.startswith("# rocrtrace-log"):
        return "preload"
    if _TINYGRAD.match(line):
        return "tinygrad"
    if len(line) > 65536:
        line = line[:65536]
    if line.startswith("#"):
        return None
    if looks_like_trace_line(line):
        return "strace"
    return None


def layout_of(head: bytes, path: str, complete: bool = True) -> Layout:
    """The layout of a file from its first bytes (the last line only counts
    when ``complete``, i.e. the file ends there)."""
    text = head.decode("utf-8", "backslashreplace")
    lines = text.split("\n")
    if not complete and len(lines) > 1:
        lines = lines[:-1]
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines[:DETECT_PREAMBLE]]
    return _layout(lines)


def _layout(lines: list[str]) -> Layout:
    pre, quote = _find_prefix(lines[:2000])
    if not pre:
        # an indented or quoted trace under a preamble that is not: the
        # prefix of the lines from the first one that needs it
        for i, ln in enumerate(lines[:DETECT_PREAMBLE]):
            if ln[:1] in (" ", "\t", ">") and _kind(ln) is None \
                    and _kind(ln.lstrip(" \t>")) is not None:
                pre, quote = _find_prefix(lines[i:i + 2000])
                break
    lay = Layout(prefix=pre, quote=quote)
    for i, ln in enumerate(lines):
        if _kind(_unprefix(ln, lay) if pre else ln) is not None:
            lay.first = i + 1
            break
    return lay


def _detect(path: str, lines: list[str], lay: Layout) -> str:
    """strace | preload | tinygrad, from the first lines after the preamble;
    raises InputError."""
    body = [_unprefix(ln, lay) if lay.prefix else ln for ln in lines[lay.first - 1:]]
    body = [ln for ln in body if ln.strip()][:DETECT_LINES]
    if not body:
        if any(ln.strip() for ln in lines):
            first = next(ln for ln in lines if ln.strip())
            raise _err(path, f"not an strace, preload or tinygrad log (first line: "
                             f"{_show(first)})")
        raise _err(path, "empty (no lines)")
    kinds = [_kind(ln) for ln in body]
    if kinds[0] == "preload":
        return "preload"
    for fmt in ("tinygrad", "strace"):
        good = kinds.count(fmt)
        if good >= 1 and good * 3 >= len(body):
            return fmt
    raise _err(path, f"not an strace, preload or tinygrad log (first line: {_show(body[0])})")


def _show(line: str) -> str:
    return line[:60].encode("unicode_escape").decode("ascii")


_FF_SUFFIX = re.compile(r"\.(\d+)$")


class _File:
    def __init__(self, path: str, fmt: str, info: InputInfo, tid: int | None,
                 layout: Layout, stream=None):
        self.path, self.fmt, self.info, self.tid = path, fmt, info, tid
        self.layout = layout
        self.stream = stream        # a pipe/stdin: the one stream there is

    def open(self):
        if self.stream is not None:
            s, self.stream = self.stream, None
            return s
        if _is_stream(self.path):
            raise _err(self.path, "a pipe can be read only once")
        return _open_bytes(self.path)


def _parser_for(f: _File, tgid_of: dict | None, handover: dict | None = None):
    name = f.path
    if f.fmt == "tinygrad":
        return tinygrad.Parser(name, f.info)
    return Parser(name, f.info, tid=f.tid, tgid_of=tgid_of, handover=handover)


class Trace:
    """One TRACE argument: its files and their merged event stream."""

    def __init__(self, arg: str, files: list[_File], max_line: int, jobs: int = 1):
        self.arg = arg
        self._files = files
        self.infos: list[InputInfo] = [f.info for f in files]
        self.max_line = max_line
        self.jobs = jobs
        self.chunk_opts: dict = {}   # tests: options for parse.chunks.file_events
        self.max_open = MAX_OPEN     # tests: files a merge may hold open

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self._files]

    def _file_events(self, f: _File, tgid_of: dict | None,
                     chunk_size: int = CHUNK, handover: dict | None = None) -> Iterator[Event]:
        stream = f.open()
        parser = _parser_for(f, tgid_of, handover)
        feed = parser.feed
        info = f.info
        try:
            lines = read_lines(stream, info, self.max_line, chunk_size=chunk_size)
            if not f.layout.plain:
                lines = clean_lines(lines, info, f.layout)
            for lineno, line in lines:
                if line is None:
                    info.lines += 1
                    continue
                evs = feed(lineno, line)
                if evs:
                    yield from evs
            yield from parser.finish()
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
        if info.events == 0 and info.lines > info.preamble:
            raise _err(f.path, f"no line parses as {_article(f.fmt)} log")

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
        tgid_of, handover, parent = self._ff_threads()
        files = _parents_first(files, parent)
        chunk = CHUNK if len(files) <= 8 else MERGE_CHUNK
        makers = [(lambda f=f, i=i: self._keyed(self._file_events(f, tgid_of, chunk, handover),
                                                i))
                  for i, f in enumerate(files)]
        for _key, _i, _n, ev in _bounded_merge(makers, max(2, self.max_open)):
            ev.seq = seq
            seq += 1
            yield ev

    def _one_file_events(self, f: _File, jobs: int) -> Iterator[Event]:
        if jobs > 1 and f.stream is None:
            from .parse import chunks

            opts = dict(self.chunk_opts)
            lay = f.layout
            if not lay.plain:
                opts["layout"] = (lay.first, lay.prefix, lay.quote)
            evs = chunks.file_events(f.path, f.fmt, f.info, self.max_line, jobs, **opts)
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

    def _ff_threads(self) -> tuple[dict, dict | None, dict]:
        """tid → tgid for -ff files, from a cheap pre-pass over the clone
        lines: threads live in files of their own, so a thread's first line
        can come before its parent's clone in the merged order.  Also the
        execve lines that end ``<pid changed to N ...>`` (tid → (line,
        text)): the leader's file completes them; and tid → (the tid whose
        clone/fork made it, made as a thread)."""
        parent: dict = {}
        handover: dict = {}
        tids = {f.tid for f in self._files if f.tid is not None}
        if not tids:
            return {}, None, parent
        for f in self._files:
            if f.tid is None or f.fmt != "strace" or f.stream is not None:
                continue
            info = InputInfo(file=f.path)
            stream = _open_bytes(f.path)
            try:
                p = Parser(f.path, info, tid=f.tid)
                lines = read_lines(stream, info, self.max_line, chunk_size=MERGE_CHUNK)
                if not f.layout.plain:
                    lines = clean_lines(lines, info, f.layout)
                for lineno, line in lines:
                    if line is None:
                        continue
                    if "<pid changed to " in line:
                        handover[f.tid] = (lineno, line)
                        continue
                    if "clone" not in line and "fork" not in line \
                            and "syscall_0x1b3" not in line:
                        continue
                    for ev in p.feed(lineno, line):
                        _note_clone(parent, ev, f.tid)
                for ev in p.finish():
                    _note_clone(parent, ev, f.tid)
            finally:
                stream.close()
        out: dict = {}
        for t in tids:
            # walk up the thread parents without recursion; a cycle (two
            # files naming each other) stops at the first repeat
            chain = []
            seen = set()
            g = t
            while g not in out:
                pr = parent.get(g)
                if pr is None or not pr[1] or g in seen:
                    break
                seen.add(g)
                chain.append(g)
                g = pr[0]
            root = out.get(g, g)
            out[g] = root
            for c in chain:
                out[c] = root
        return out, handover, parent


def _parents_first(files: list, parent: dict) -> list:
    """The files in merge order: each after the file of the tid that made
    it, otherwise as listed.  Files without timestamps merge one after the
    other, so this puts a child's calls after the fork that gave it its fds
    whatever the numbers (pids wrap, and trace.10000 sorts before
    trace.9999); with timestamps the order only breaks ties."""
    at = {f.tid: i for i, f in enumerate(files) if f.tid is not None}
    order: list = []
    placed: set = set()
    for i in range(len(files)):
        chain, seen = [], set()
        j = i
        while j is not None and j not in placed and j not in seen:   # a cycle stops
            chain.append(j)
            seen.add(j)
            made_by = parent.get(files[j].tid)
            j = at.get(made_by[0]) if made_by else None
        for j in reversed(chain):
            placed.add(j)
            order.append(j)
    return [files[j] for j in order]


def _note_clone(parent: dict, ev, tid: int) -> None:
    if ev.name in ("clone", "clone3", "fork", "vfork") and isinstance(ev.ret, int) \
            and ev.ret > 0 and ev.ret != tid:
        parent[ev.ret] = (tid, getattr(ev, "thread", False))


def _article(fmt: str) -> str:
    return ("an " if fmt[0] in "aeiou" else "a ") + fmt


# --- merging many files with few open ---------------------------------------

def _bounded_merge(makers: list, max_open: int):
    """heapq.merge of the keyed streams ``makers`` make, holding at most
    ``max_open`` of them open: larger sets are merged group by group into
    temporary spill files first (keys are unique and each stream is sorted,
    so the result is the same order as one flat merge)."""
    while len(makers) > max_open:
        spills = []
        for g in range(0, len(makers), max_open):
            group = makers[g:g + max_open]
            spills.append(_spill(heapq.merge(*[m() for m in group])))
        makers = [(lambda p=p: _unspill(p)) for p in spills]
    return heapq.merge(*[m() for m in makers])


def _spill(items) -> str:
    fd, path = tempfile.mkstemp(prefix="rocrtrace-merge-")
    try:
        with os.fdopen(fd, "wb") as f:
            # one pickle per item: a shared memo would keep every event alive
            dump = pickle.dump
            for item in items:
                dump(item, f, pickle.HIGHEST_PROTOCOL)
    except BaseException:
        os.unlink(path)
        raise
    return path


def _unspill(path: str):
    try:
        with open(path, "rb") as f:
            load = pickle.load
            while True:
                try:
                    yield load(f)
                except EOFError:
                    return
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def _strip_compression(path: str) -> str:
    for suf in (".gz", ".xz", ".bz2", ".zst"):
        if path.endswith(suf):
            return path[:-len(suf)]
    return path


def _is_stream(path: str) -> bool:
    """stdin, a pipe, a FIFO, /dev/fd/N of a process substitution: anything
    that cannot be opened twice or seeked."""
    if path == "-":
        return True
    try:
        return not os.path.isfile(path)
    except OSError:
        return False


def _head(path: str, stream) -> tuple[list[str], bool, bytes]:
    """The first lines of a stream for detection: (lines, the stream ended,
    the bytes read).  Reads until DETECT_LINES non-blank lines after what
    could be a preamble, or DETECT_BYTES; a first line of any length is fine
    (over-long lines are seen by their head only)."""
    def read() -> bytes:
        try:
            return stream.read(1 << 16)
        except READ_ERRORS as e:
            raise _err(path, f"cannot read: {_why(e)}") from None

    data = bytearray()
    lines: list[str] = []
    buf = b""
    nonblank = 0
    ended = False
    while len(data) < DETECT_BYTES:
        part = read()
        if not part:
            ended = True
            break
        data += part
        buf += part
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > 1 << 20:
                # an over-long line: keep its head for detection
                lines.append(buf[:65536].decode("utf-8", "backslashreplace"))
                buf = b""
                while True:     # skip to its end inside the detection budget
                    part = read()
                    if not part:
                        ended = True
                        break
                    data += part
                    nl = part.find(b"\n")
                    if nl >= 0:
                        buf = part[nl + 1:]
                        break
                    if len(data) >= DETECT_BYTES:
                        break
                if ended:
                    break
            continue
        for raw in buf[:cut].split(b"\n"):
            ln = raw.decode("utf-8", "backslashreplace")
            if ln.endswith("\r"):
                ln = ln[:-1]
            lines.append(ln[:1 << 20])
            if ln.strip() and _kind(ln.lstrip(" \t>")) is not None:
                nonblank += 1
        buf = buf[cut + 1:]
        if nonblank >= DETECT_LINES or len(lines) >= DETECT_PREAMBLE:
            break
    if ended and buf:
        ln = buf.decode("utf-8", "backslashreplace")
        lines.append(ln[:-1] if ln.endswith("\r") else ln)
    return lines, ended, bytes(data)


def open_trace(arg: str, input_format: str | None = None, max_line: int = 1 << 20,
               jobs: int = 1) -> Trace:
    """Open a TRACE argument; raises InputError (one line naming the file).
    ``jobs`` > 1: parse one large plain file with that many processes.
    A forced ``input_format`` skips detection only: the file is read the
    same way (preamble, indentation, CRLF)."""
    paths = _expand(arg)
    files: list[_File] = []
    for path in paths:
        streaming = _is_stream(path)
        if not streaming and os.path.getsize(path) == 0:
            raise _err(path, "empty file")
        if streaming:
            raw = sys.stdin.buffer if path == "-" else _open_raw(path)
            stream = _open_bytes(path, raw)
        else:
            stream = _open_bytes(path)
        try:
            lines, ended, head = _head(path, stream)
        except BaseException:
            stream.close()
            raise
        if not streaming:
            stream.close()
            keep = None
        else:
            keep = _Prefixed(head, stream)
        if not head:
            if keep is not None:
                keep.close()
            raise _err(path, "empty")
        lay = _layout(lines)
        fmt = input_format
        try:
            if fmt is None or fmt == "auto":
                fmt = _detect(path, lines, lay)
        except InputError:
            if keep is not None:
                keep.close()
            raise
        info = InputInfo(file=path, format=fmt)
        info.layout = _layout_text(lay)
        tid = None
        if len(paths) > 1:
            m = _FF_SUFFIX.search(_strip_compression(path))
            if m and fmt == "strace":
                tid = int(m.group(1))
        files.append(_File(path, fmt, info, tid, lay, keep))
    return Trace(arg, files, max_line, jobs)


def _open_raw(path: str):
    try:
        return open(path, "rb")
    except OSError as e:
        raise _err(path, e.strerror or "cannot open") from None


def _layout_text(lay: Layout) -> str:
    if not lay.prefix:
        return ""
    if lay.quote:
        return f"quoted with {lay.prefix.strip()!r}"
    tabs = lay.prefix.count("\t")
    return f"indented by {len(lay.prefix)} " + ("tab(s)" if tabs == len(lay.prefix)
                                                  else "column(s)")


__all__ = ["InputError", "Trace", "open_trace", "read_lines", "clean_lines", "layout_of",
           "Layout"]
