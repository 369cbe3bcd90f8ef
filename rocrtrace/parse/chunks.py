"""Chunked parallel parsing of one large, plain trace file (``--jobs N``).

The file is cut into chunks at line starts.  Worker processes read and parse
their own byte ranges; the main process puts their results back together so
that the event stream is *identical* to what one sequential ``Parser`` gives:
same events, same order, same fields, same ``InputInfo``.

How a chunk is made exact
-------------------------
The main process keeps the exact parser state at the last chunk boundary it
has passed (``_State``: the tid → tgid map, live tids, root, the preload pid,
calls left ``<unfinished ...>``, the event ``-k`` frames go to ...).  A chunk
is only cut at a *solid* line (not empty, not a stack frame, not ``#``, no
ANSI escapes, not over-long): the parser flushes its held events there, so
nothing but that state crosses a boundary.

A worker parses chunk k with a parser *seeded* with the state the main
process last knew when it sent the chunk off (the identity part of it, with
no calls in flight).  When the main process reaches chunk k it checks the
result against the true state at the end of chunk k-1:

* the seed must equal the true identity state (otherwise a thread created or
  ended meanwhile may have changed a pid: re-parse);
* calls still unfinished at the boundary show up in the worker as orphan
  ``<... resumed>`` events; each is replaced by the event the sequential
  parser makes (the two raw lines re-parsed by a parser seeded with the same
  tid → tgid entry), keeping the frames the orphan collected, and
  ``info.orphans`` is corrected.  Calls still unfinished at the end of the
  file become partial events through ``Parser.finish()`` on the true state;
* ``-k`` frames that the sequential parser attaches to an event already
  handed out (the previous chunk's last event, or an event before a line
  that emits nothing) are applied at the same point of the stream;
* preload meta events take the time of the last timed line: workers start
  with a sentinel ``last_time`` that is replaced by the true one;
* ``InputInfo`` counters add up, flags are or-ed, samples keep the first 20.

Whenever a case is not covered -- a clone or restarted call in flight across
the boundary, an exec superseding a thread, ``-r`` relative timestamps, a
worker ending with held events (an ``exit_group`` waiting for its ``+++``, a
cut line, an fd snapshot, events waiting for a pid), a stale seed, any worker
error -- the main process re-parses that chunk itself with the exact state
(slower, never different).  Many failures in a row turn the workers off.

Results travel compactly: per event its class code and the tuple of its
dataclass fields (one ``operator.attrgetter`` per class), marshalled once per
chunk, rebuilt in the main process without running ``__init__``; workers read
their byte ranges themselves.  At most ``jobs + 1`` chunks are in flight, so
memory stays flat in the trace length.

``unsupported()`` refuses (and --jobs then parses sequentially) when Parser
grows state this module does not know how to carry: tests/test_chunked.py
checks it, and that every fixture parses identically both ways.
"""
from __future__ import annotations

import dataclasses
import gc
import itertools
import marshal
import operator
import os
import pickle
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from typing import Iterator

from .pyevents import Event, Frame, InputInfo, Syscall
from .strace import _CLONES, Parser

CHUNK_BYTES = 1 << 20       # per worker job
FIRST_BYTES = 256 << 10     # the first chunk: parsed by the main process
MIN_BYTES = 2 << 20         # smaller files are parsed sequentially

_SENT = -7.25e300           # "last_time not known yet" in a worker

# Every attribute of a Parser, as this module knows them.  Another attribute
# means state this module cannot carry across a boundary: chunking is off.
_PARSER_STATE = frozenset((
    "file", "info", "file_tid", "tgid", "fixed_tgid", "inflight", "live", "root", "nopid",
    "hold", "target", "exit_hold", "expect_exec", "out", "rel_sum", "fragment",
    "in_summary", "snapshot", "last_time", "cont", "fresh", "handover"))
_INFO_SUM = ("lines", "events", "unparsed", "too_long", "unfinished", "orphans", "detached",
             "preamble")
_INFO_OR = ("has_pids", "has_time", "has_durations", "has_stacks", "has_decorations",
            "decoded_structs", "intent_calls", "exit_seen", "ends_mid_line", "crlf")
# layout: chunking only runs on files without one (inputs.Layout.plain)
_INFO_FIELDS = frozenset(("file", "format", "unparsed_samples", "header", "layout")
                         + _INFO_SUM + _INFO_OR)


def _attrs(obj) -> set:
    names = set(getattr(obj, "__dict__", {}))
    for k in type(obj).__mro__:
        s = k.__dict__.get("__slots__", ())
        names.update((s,) if isinstance(s, str) else s)
    names.discard("__dict__")
    names.discard("__weakref__")
    return names


def unsupported() -> str | None:
    """Why chunked parsing cannot be exact with this Parser, or None."""
    have = _attrs(Parser("-"))
    if have != _PARSER_STATE:
        return ("Parser state changed (unknown: %s; missing: %s): teach rocrtrace/parse/"
                "chunks.py to carry it" % (sorted(have - _PARSER_STATE),
                                            sorted(_PARSER_STATE - have)))
    names = {f.name for f in dataclasses.fields(InputInfo)}
    if names != _INFO_FIELDS:
        return "InputInfo fields changed: teach rocrtrace/parse/chunks.py to merge them"
    if [f.name for f in dataclasses.fields(Event)] != _BASE_FIELDS:
        return "Event base fields changed"
    return None


# --- the compact event codec ------------------------------------------------

_END, _TIME, _STACK, _PARTIAL = 2, 6, 10, 12      # in _BASE_FIELDS
_FRAME_GET = operator.attrgetter(*[f.name for f in dataclasses.fields(Frame)])
_call = operator.call
_get_stack = operator.itemgetter(_STACK)
_get_time = operator.itemgetter(_TIME)
_get_partial = operator.itemgetter(_PARTIAL)


def _frames(t) -> tuple:
    return tuple(Frame(*f) for f in t)


def _maker(cls):
    """vals -> a new ``cls`` without running __init__ (all fields given)."""
    names = [f.name for f in dataclasses.fields(cls)]
    src = ("def make(v, _new=_new, _cls=_cls, _fr=_fr):\n"
           "    o = _new(_cls)\n"
           f"    {', '.join('o.' + n for n in names)}, = v\n"
           f"    if v[{_STACK}]:\n"
           f"        o.stack = _fr(v[{_STACK}])\n"
           "    return o\n")
    ns = {"_new": object.__new__, "_cls": cls, "_fr": _frames}
    exec(src, ns)  # noqa: S102 - generated from dataclass field names only
    return ns["make"]


class _Codec:
    """Events <-> (class codes, tuples of their dataclass fields).  Codes are
    per result: each carries its list of classes."""

    def __init__(self):
        self.getters: dict = {}
        self.makers: dict = {}

    def encode(self, events: list):
        types: list = []
        code: dict = {}
        getters = []
        cls_codes = []
        for cls in set(map(type, events)):
            g = self.getters.get(cls)
            if g is None:
                names = [f.name for f in dataclasses.fields(cls)]
                if names[:_PARTIAL + 1] != _BASE_FIELDS:
                    raise TypeError(f"cannot encode {cls.__name__}")
                g = self.getters[cls] = operator.attrgetter(*names)
            code[cls] = len(types)
            types.append(cls)
            getters.append(g)
        codes = bytes(map(code.__getitem__, map(type, events))) if len(types) < 256 else None
        if codes is None:
            raise TypeError("too many event classes")
        vals = list(map(_call, map(getters.__getitem__, codes), events))
        for i in itertools.compress(range(len(vals)), map(_get_stack, vals)):
            v = vals[i]
            vals[i] = v[:_STACK] + (tuple(map(_FRAME_GET, v[_STACK])),) + v[_STACK + 1:]
        return types, codes, vals

    def decode(self, types: list, codes: bytes, vals: list) -> list:
        makers = []
        for cls in types:
            mk = self.makers.get(cls)
            if mk is None:
                mk = self.makers[cls] = _maker(cls)
            makers.append(mk)
        return list(map(_call, map(makers.__getitem__, codes), vals))


_BASE_FIELDS = ["file", "line", "end_line", "seq", "pid", "tid", "time", "dur", "ret", "err",
                "stack", "text", "partial"]
_codec: _Codec | None = None


def _get_codec() -> _Codec:
    global _codec
    if _codec is None:
        _codec = _Codec()
    return _codec


# --- byte ranges and chunk planning ----------------------------------------

class _Range:
    """A file's bytes [start, end) read in the blocks the sequential reader
    would read (multiples of inputs.CHUNK from the file's start), so that
    over-long lines are judged exactly as in one pass over the file."""

    def __init__(self, f, start: int, end: int | None, block: int):
        f.seek(start)
        self.f, self.pos, self.end, self.block = f, start, end, block

    def read(self, _n: int = -1) -> bytes:
        nxt = (self.pos // self.block + 1) * self.block
        if self.end is not None and nxt > self.end:
            nxt = self.end
        if nxt <= self.pos:
            return b""
        data = self.f.read(nxt - self.pos)
        self.pos += len(data)
        return data


def _range_lines(f, start, end, lineno0, info, max_line, layout=None):
    from ..inputs import CHUNK, Layout, clean_lines, read_lines

    lines = read_lines(_Range(f, start, end, CHUNK), info, max_line, start_line=lineno0)
    if layout is not None:
        # a preamble and indentation (inputs.Layout): removed wherever a
        # chunk starts, exactly as in one pass
        lines = clean_lines(lines, info, Layout(*layout))
    return lines


def _skip_rest(f) -> bytes | None:
    """Read past the next newline; the line's last bytes (without the
    newline), None at end of file."""
    last = b""
    while True:
        part = f.readline(1 << 16)
        if not part:
            return None
        if part.endswith(b"\n"):
            return (last + part)[-64:-1].rstrip(b"\r")
        last = part[-64:]


_UNFINISHED_B = b"<unfinished ...>"


def _solid(body: bytes, prefix: bytes = b"") -> bool:
    """A line the parser flushes its held events at, and that no earlier
    line's frames or fragments can belong to (``prefix``: the indentation
    the reader removes first)."""
    if prefix:
        if not body.startswith(prefix):
            return False
        body = body[len(prefix):]
    return bool(body) and body[:3] not in _NOT_SOLID and body[:1] != b"#" \
        and b"\x1b" not in body and not body.startswith(b" VCPU:")


# lines that belong to the line before them (frames, dumps, dump headers)
_NOT_SOLID = frozenset((b" > ", b" | ", b" * ", b" = "))


def _next_solid(f, pos: int, max_line: int, prefix: bytes = b"") -> int | None:
    """Offset of the first solid line starting at or after ``pos`` (> 0).
    Never the line right after an ``<unfinished ...>`` one: strace 5.2-6.1
    with -z/-Z prints the rest of such a call there, unprefixed."""
    back = min(pos - 1, 32)
    f.seek(pos - 1 - back)
    before = f.read(back)           # the line's text before pos-1 (its marker may start there)
    tail = _skip_rest(f)
    if tail is None:
        return None
    after_unfinished = (before.rpartition(b"\n")[2] + tail).endswith(_UNFINISHED_B)
    limit = min(max_line, 1 << 16)
    while True:
        at = f.tell()
        line = f.readline(limit + 1)
        if not line:
            return None
        if line.endswith(b"\n"):
            body = line[:-1].rstrip(b"\r")
            if _solid(body, prefix) and not after_unfinished:
                return at
            after_unfinished = body.endswith(_UNFINISHED_B)
            continue
        if len(line) <= limit:          # the last line, without a newline
            return at if _solid(line.rstrip(b"\r"), prefix) and not after_unfinished \
                else None
        tail = _skip_rest(f)            # long line: never a boundary
        if tail is None:
            return None
        after_unfinished = tail.endswith(_UNFINISHED_B)


def _count_lines(f, start: int, end: int) -> int:
    f.seek(start)
    n = 0
    left = end - start
    while left > 0:
        blk = f.read(min(left, 1 << 20))
        if not blk:
            break
        n += blk.count(b"\n")
        left -= len(blk)
    return n


def plan(path: str, chunk_bytes: int = CHUNK_BYTES, first_bytes: int = FIRST_BYTES,
         max_line: int = 1 << 20, prefix: bytes = b"") -> Iterator[tuple[int, int | None, int]]:
    """(start offset, end offset or None for "to the end", lines before start)
    for each chunk, computed lazily while reading ahead."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start, lineno, want = 0, 0, max(1, first_bytes)
        while True:
            nxt = _next_solid(f, start + want, max_line, prefix) if start + want < size \
                else None
            if nxt is None:
                yield start, None, lineno
                return
            yield start, nxt, lineno
            lineno += _count_lines(f, start, nxt)
            start, want = nxt, max(1, chunk_bytes)


# --- parser state at a boundary ---------------------------------------------

@dataclasses.dataclass
class _State:
    """The exact parser state at a clean chunk boundary (nothing held)."""

    tgid: dict
    live: set
    root: int | None
    fixed_tgid: int | None
    expect_exec: set
    rel_sum: float
    in_summary: bool
    last_time: float | None
    inflight: list                 # [(tid, _Pending)] in the parser's dict order
    target: Event | None           # where the next -k frames would go

    def seed(self) -> tuple:
        return (self.tgid, self.live, self.root, self.fixed_tgid, self.expect_exec,
                self.rel_sum, self.in_summary)


def _clean_state(p: Parser) -> _State | None:
    """The state of ``p`` (already flushed at a boundary) if nothing but
    _State is pending in it."""
    if (p.nopid or p.hold or p.exit_hold or p.fragment is not None or p.snapshot is not None
            or p.cont or p.handover):
        return None
    return _State(dict(p.tgid), set(p.live), p.root, p.fixed_tgid, set(p.expect_exec),
                  p.rel_sum, p.in_summary, p.last_time, list(p.inflight.items()), p.target)


def _parser_at(name: str, info: InputInfo, st: _State) -> Parser:
    """A Parser in exactly state ``st``."""
    p = Parser(name, info, tgid_of=st.tgid)
    p.live.update(st.live)
    p.root = st.root
    p.fixed_tgid = st.fixed_tgid
    p.expect_exec.update(st.expect_exec)
    p.rel_sum = st.rel_sum
    p.in_summary = st.in_summary
    p.last_time = st.last_time
    p.target = st.target
    for tid, pend in st.inflight:
        p.inflight[tid] = pend
    return p


def _seeded(name: str, info: InputInfo, seed: tuple) -> Parser:
    tgid, live, root, fixed, expect, rel_sum, in_summary = seed
    p = Parser(name, info, tgid_of=tgid)
    p.live.update(live)
    p.root = root
    p.fixed_tgid = fixed
    p.expect_exec.update(expect)
    p.rel_sum = rel_sum
    p.in_summary = in_summary
    p.last_time = _SENT
    return p


# --- the worker -------------------------------------------------------------

def _in(x, seq) -> bool:
    for y in seq:
        if y is x:
            return True
    return False


def parse_range(path: str, name: str, start: int, end: int | None, lineno0: int,
                seed: tuple, max_line: int, layout: tuple | None = None) -> tuple:
    """Parse bytes [start, end) of ``path`` (lines numbered from ``lineno0``)
    with a Parser seeded with ``seed``.  The result is plain data, unpacked
    in _stitch: the events as codes and field tuples, what the chunk taught
    InputInfo, the orphan resumed lines, the events whose time is the
    sentinel, frames that went to events already handed out, and the state
    at the end."""
    info = InputInfo(file=name)
    p = _seeded(name, info, seed)
    dummy = Syscall(name="")     # frames the previous chunk's last event gets
    p.target = dummy
    feed = p.feed
    out: list = []
    orphans: list = []           # (line, raw text) where info.orphans grew
    n_orph = 0
    first_set: dict = {}         # tid -> line where it first entered inflight
    n_inf = 0
    n_exp = len(p.expect_exec)
    exp_grew = superseded = False
    late: list = []              # (stream position, target, stack len before, after)
    with open(path, "rb") as f:
        for lineno, line in _range_lines(f, start, end, lineno0, info, max_line, layout):
            if line is None:
                info.lines += 1
                continue
            if line.startswith(" > "):
                t = p.target
                if t is not None and not _in(t, p.hold):
                    before = len(t.stack)
                    pos = len(out)
                    evs = feed(lineno, line)
                    if len(t.stack) != before:
                        late.append((pos, t, before, len(t.stack)))
                else:
                    evs = feed(lineno, line)
            else:
                # an exec superseding a thread moves its unfinished call
                # (also when the '+++' line was cut and is joined here)
                if "superseded" in line or (p.fragment is not None and "+++" in str(p.fragment)):
                    superseded = True
                evs = feed(lineno, line)
            if evs:
                out += evs
            if info.orphans != n_orph:
                n_orph = info.orphans
                orphans.append((lineno, line))
            n = len(p.inflight)
            if n != n_inf:
                if n > n_inf:
                    for k in p.inflight:
                        if k not in first_set:
                            first_set[k] = lineno
                n_inf = n
            if len(p.expect_exec) != n_exp:
                if len(p.expect_exec) > n_exp:
                    exp_grew = True
                n_exp = len(p.expect_exec)
    p._flush_hold()
    out += p._drain()
    unclean = bool(p.nopid or p.hold or p.exit_hold or p.fragment is not None
                   or p.snapshot is not None or p.cont)
    types, codes, vals = _get_codec().encode(out)
    # the sentinel object itself (a time parsed from the text is never it)
    sent = list(itertools.compress(range(len(vals)), map(operator.is_, itertools.repeat(_SENT),
                                                        map(_get_time, vals))))
    orph_idx = {}
    if orphans:
        lines = {ln for ln, _ in orphans}
        for i in itertools.compress(range(len(vals)), map(_get_partial, vals)):
            if vals[i][_END] in lines:
                orph_idx[vals[i][_END]] = i
    index = None

    def idx(ev):
        nonlocal index
        if ev is dummy:
            return -1
        if ev is None:
            return None
        if out and out[-1] is ev:
            return len(out) - 1
        if index is None:
            index = {id(e): i for i, e in enumerate(out)}
        return index.get(id(ev), -2)

    target = idx(p.target)
    late_i = [(pos, idx(t), b, a) for pos, t, b, a in late]
    if target == -2 or any(i == -2 for _, i, _, _ in late_i):
        unclean = True
    info_d = {k: getattr(info, k) for k in _INFO_SUM + _INFO_OR}
    info_d["unparsed_samples"] = info.unparsed_samples
    info_d["header"] = info.header
    state = (dict(p.tgid), set(p.live), p.root, p.fixed_tgid, set(p.expect_exec), p.rel_sum,
             p.in_summary, None if p.last_time is _SENT else p.last_time,
             p.last_time is not _SENT)
    return (types, codes, vals, info_d, [(ln, raw, orph_idx.get(ln)) for ln, raw in orphans],
            sent,
            late_i, tuple(map(_FRAME_GET, dummy.stack)), target, state,
            list(p.inflight.items()), first_set, superseded, exp_grew, unclean)


def _work(job) -> tuple:
    # A job holds its chunk's events until it returns: the cyclic GC would
    # only walk them again and again (it frees nothing here).
    enabled = gc.isenabled()
    gc.disable()
    try:
        res = parse_range(*job)
        try:        # the field tuples: marshal is faster both ways
            vals = marshal.dumps(res[2], 4)
            packed = True
        except ValueError:              # a value that is not a plain builtin
            vals, packed = pickle.dumps(res[2], 5), False
        return packed, vals, pickle.dumps(res[:2] + (None,) + res[3:], 5)
    finally:
        if enabled:
            gc.enable()


def _unpack(blob: tuple) -> tuple:
    packed, vals, rest = blob
    res = pickle.loads(rest)
    return res[:2] + ((marshal.loads if packed else pickle.loads)(vals),) + res[3:]


# --- stitching in the main process -----------------------------------------

class _Fail(Exception):
    pass


def _resume(name: str, st: _State, pend, line: int, raw: str, orphan: Event):
    """The event the sequential parser makes when the call ``pend`` (left
    unfinished before this chunk) resumes at ``line``; None when unsure."""
    q = Parser(name, InputInfo(file=name),
               tgid_of={orphan.tid: orphan.pid} if orphan.tid is not None else None)
    q.live.update(st.live)
    q.root = st.root
    q.fixed_tgid = st.fixed_tgid
    evs = q.feed(pend.line, pend.text)
    evs += q.feed(line, raw)
    evs += q.finish()
    if len(evs) != 1 or q.info.orphans or q.info.unfinished or q.info.unparsed:
        return None
    e = evs[0]
    if (e.tid != orphan.tid or e.pid != orphan.pid or e.line != pend.line
            or e.end_line != line or e.partial):
        return None
    return e, q.info


def _stitch(res: tuple, st: _State, seed: tuple, name: str, info: InputInfo):
    """Chunk events made exact, late-frame patches and the state after the
    chunk; raises _Fail(reason) when the chunk must be re-parsed."""
    (types, codes, vals, inf, orphans, sent, late, dummy_frames, target, state, w_inflight,
     first_set, superseded, exp_grew, unclean) = res
    if unclean:
        raise _Fail("chunk ends with held state")
    if seed != st.seed():
        raise _Fail("stale seed")
    remaining = dict(st.inflight)
    if remaining:
        if any(p.name in _CLONES for p in remaining.values()):
            raise _Fail("clone in flight across the boundary")
        if superseded or exp_grew or st.expect_exec:
            raise _Fail("exec superseding a thread")
    evs = _get_codec().decode(types, codes, vals)
    stitched = []
    for line, raw, i in orphans:
        if not remaining:
            break
        if i is None:
            raise _Fail("resumed line without an event")
        orphan = evs[i]
        pend = remaining.get(orphan.tid)
        if pend is None:
            continue                    # an orphan in the sequential parse too
        if first_set.get(orphan.tid, line + 1) <= line:
            raise _Fail("call restarted before it resumed")
        if st.rel_sum or state[5]:
            raise _Fail("relative timestamps")
        if orphan.name in _CLONES or pend.name in _CLONES:
            raise _Fail("clone resumed across the boundary")
        got = _resume(name, st, pend, line, raw, orphan)
        if got is None:
            raise _Fail("resumed call does not re-parse alike")
        e, qinfo = got
        e.stack = orphan.stack
        evs[i] = e
        del remaining[orphan.tid]
        stitched.append(qinfo)
    resumed = len(stitched)
    for tid in remaining:
        if tid in first_set:
            raise _Fail("call restarted across the boundary")
    if any(tid in remaining for tid, _ in w_inflight):
        raise _Fail("call restarted across the boundary")
    if sent:
        for i in sent:
            evs[i].time = st.last_time
    patches = []
    if late:
        first: dict = {}
        for pos, i, before, after in late:
            if i == -1:
                obj = st.target
                if obj is None:
                    continue
                base = first.setdefault(-1, obj.stack)
                full = base + _frames(dummy_frames)
                patches.append((pos, obj, full[:len(base) + after]))
            else:
                obj = evs[i]
                if i not in first:
                    first[i] = obj.stack
                    obj.stack = obj.stack[:before]
                patches.append((pos, obj, first[i][:after]))
    tgid, live, root, fixed, expect, rel_sum, in_summary, last_time, time_seen = state
    new = _State(tgid, live, root, fixed, expect, rel_sum, in_summary,
                 last_time if time_seen else st.last_time,
                 list(remaining.items()) + list(w_inflight),
                 st.target if target == -1 else (None if target is None else evs[target]))
    # the chunk is accepted: merge what it learnt about the input
    for k in _INFO_SUM:
        setattr(info, k, getattr(info, k) + inf[k])
    info.orphans -= len(stitched)
    for k in _INFO_OR:
        if inf[k]:
            setattr(info, k, True)
    for q in stitched:
        for k in _INFO_OR:
            if getattr(q, k):
                setattr(info, k, True)
    room = 20 - len(info.unparsed_samples)
    if room > 0:
        info.unparsed_samples.extend(inf["unparsed_samples"][:room])
    if inf["header"]:
        info.header.update(inf["header"])
    return evs, patches, new, resumed


# --- driving ----------------------------------------------------------------

def _take(fut, st: _State, seed: tuple, name: str, info: InputInfo):
    """((events, patches, new state, resumed calls), None) for a stitched
    chunk, or (None, why it must be re-parsed)."""
    try:
        blob = fut.result()
    except Exception as e:  # noqa: BLE001 - any worker trouble: parse it here
        return None, f"worker error: {type(e).__name__}"
    # A chunk's events are made at once: the collector would walk them over
    # and over while they are built (it frees nothing meanwhile).
    gc_on = gc.isenabled()
    gc.disable()
    try:
        return _stitch(_unpack(blob), st, seed, name, info), None
    except _Fail as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - never wrong: parse it here instead
        return None, f"stitch error: {type(e).__name__}: {e}"
    finally:
        if gc_on:
            gc.enable()


class InlineExecutor:
    """Runs jobs in this process when their result is asked for (tests)."""

    def submit(self, fn, *args):
        fut = _LazyFuture(fn, args)
        return fut

    def shutdown(self, wait=True, cancel_futures=False):
        pass


class _LazyFuture:
    def __init__(self, fn, args):
        self.fn, self.args, self.done = fn, args, False

    def result(self):
        if not self.done:
            self.value, self.done = self.fn(*self.args), True
        return self.value

    def cancel(self):
        return True


def chunked_events(path: str, name: str, info: InputInfo, max_line: int, jobs: int,
                   chunk_bytes: int = CHUNK_BYTES, first_bytes: int = FIRST_BYTES,
                   executor=None, ahead: int | None = None, adaptive: bool = True,
                   stats: dict | None = None, layout: tuple | None = None) -> Iterator[Event]:
    """The events of one plain file, as ``Parser`` gives them sequentially,
    parsed by ``jobs`` worker processes.

    ``adaptive``: when most chunks have to be re-parsed here anyway the
    workers pause (for 8 chunks, then 16, 32 ... up to 1024) and stop for
    good on ``-r`` logs.  ``stats`` (a dict) receives counters and the
    reasons chunks were re-parsed."""
    stats = stats if stats is not None else {}
    reasons: Counter = stats.setdefault("fallbacks", Counter())
    for k in ("chunks", "stitched", "resumed", "late_frames"):
        stats.setdefault(k, 0)
    own = executor is None
    ex = ProcessPoolExecutor(max_workers=jobs) if own else executor
    ahead = ahead if ahead is not None else jobs + 1
    prefix = layout[1].encode("utf-8", "surrogateescape") if layout else b""
    chunks = plan(path, chunk_bytes, first_bytes, max_line, prefix)
    queue: deque = deque()           # (chunk, future, seed)
    recent: deque = deque(maxlen=8)  # stitched? for the last results
    parallel = True                  # False: workers stopped for good
    pause, backoff = 0, 8            # chunks to parse here before trying again
    st: _State | None = None         # exact state at the last clean boundary
    m: Parser | None = Parser(name, info)   # authoritative parser when not None
    try:
        while True:
            if m is None and parallel and adaptive and st.rel_sum:
                # -r: the running sum moves every line, a seed sent ahead is
                # always stale
                parallel = False
                reasons["turned off: relative timestamps"] += 1
            if m is None and parallel and not pause:
                while len(queue) < ahead:
                    ch = next(chunks, None)
                    if ch is None:
                        break
                    seed = st.seed()
                    try:
                        fut = ex.submit(_work, (path, name, *ch, seed, max_line, layout))
                    except Exception:   # noqa: BLE001 - a broken pool: go on alone
                        parallel = False
                        reasons["pool failed"] += 1
                        queue.append((ch, None, None))
                        break
                    queue.append((ch, fut, seed))
            if queue:
                ch, fut, seed = queue.popleft()
            else:
                ch, fut, seed = next(chunks, None), None, None
                if ch is None:
                    break
            stats["chunks"] += 1
            if m is None and fut is not None:
                got, why = _take(fut, st, seed, name, info)
                if got is not None:
                    evs, patches, st, resumed = got
                    stats["stitched"] += 1
                    stats["resumed"] += resumed
                    stats["late_frames"] += len(patches)
                    recent.append(True)
                    if not patches:
                        yield from evs
                    else:
                        k = 0
                        for pos, obj, stack in patches:
                            while k < pos:
                                yield evs[k]
                                k += 1
                            obj.stack = stack
                        yield from evs[k:]
                    continue
                reasons[why] += 1
                if why.startswith("worker error: BrokenProcessPool"):
                    parallel = False
                recent.append(False)
                if adaptive and len(recent) >= 4 and recent.count(False) * 2 > len(recent):
                    pause, backoff = backoff, min(2 * backoff, 1024)
                    recent.clear()
                    reasons["paused: too many re-parses"] += 1
            elif fut is not None:
                fut.cancel()
            elif pause:
                pause -= 1
            if m is None:
                m = _parser_at(name, info, st)
            start, end, lineno0 = ch
            feed = m.feed
            with open(path, "rb") as f:
                for lineno, line in _range_lines(f, start, end, lineno0, info, max_line,
                                                 layout):
                    if line is None:
                        info.lines += 1
                        continue
                    evs = feed(lineno, line)
                    if evs:
                        yield from evs
            m._flush_hold()
            yield from m._drain()
            clean = _clean_state(m)
            if clean is not None:
                st, m = clean, None
            if queue and (pause or not parallel):
                for _, qfut, _ in queue:
                    if qfut is not None:
                        qfut.cancel()
                chunks = _chain([q[0] for q in queue], chunks)
                queue.clear()
        if m is None:
            m = _parser_at(name, info, st)
        yield from m.finish()
    finally:
        if own:
            ex.shutdown(wait=False, cancel_futures=True)


def _chain(first: list, rest):
    yield from first
    yield from rest


def applicable(path: str, fmt: str, min_bytes: int = MIN_BYTES) -> bool:
    """One regular, uncompressed file big enough to be worth cutting, and a
    Parser whose state this module knows how to carry."""
    if fmt not in ("strace", "preload") or unsupported() is not None:
        return False
    from ..inputs import is_plain_file

    try:
        return is_plain_file(path) and os.path.getsize(path) >= min_bytes
    except OSError:
        return False


def file_events(path: str, fmt: str, info: InputInfo, max_line: int, jobs: int,
                min_bytes: int = MIN_BYTES, **opts) -> Iterator[Event] | None:
    """chunked_events for one file of a Trace, or None when it does not apply
    (then the caller parses sequentially).  ``opts`` go to chunked_events
    (tests: chunk_bytes, first_bytes, executor, ahead, adaptive, stats)."""
    if jobs <= 1 or not applicable(path, fmt, min_bytes):
        return None
    return chunked_events(path, path, info, max_line, jobs, **opts)


__all__ = ["chunked_events", "file_events", "applicable", "plan", "parse_range",
           "unsupported", "InlineExecutor", "CHUNK_BYTES", "MIN_BYTES"]
