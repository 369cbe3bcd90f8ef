"""The normalized event vocabulary.

The engine (the compiled core, src/events.rs) turns each input (an strace
log, a preload log, a tinygrad IOCTL=1 log ...) into a stream of events and
replays them through its models; what crosses into Python (the events a
finding cites, `show`'s history, the perfetto sink) is one ``Event`` record
per event: its kind's name in ``event`` and the fields of KINDS.  One event is
one call (syscall, ioctl or intent call) or one process-level fact (exit,
exec, fd snapshot, map snapshot).

Conventions every parser follows:

* ``pid`` is the process (tgid), ``tid`` the thread.  ``pid`` is ``None`` only
  for an strace log that never names a pid.
* ``time`` is the entry time in seconds (epoch, or seconds since midnight for
  ``-t``/``-tt`` logs, or the running sum of ``-r`` deltas), ``dur`` the
  duration in seconds when known.  Either may be ``None``.
* ``ret`` is the integer result, ``None`` when the call never returned
  (``= ?``, unfinished, detached).  ``err`` is the errno name (``"EBADF"``)
  when the call failed, else ``None``.
* fd decorations (``3</dev/kfd>``) become ``path`` fields: the decoded path
  text with escapes resolved, ``None`` when not decorated.
* Integers are Python ints; decoded struct fields are keyed by the kernel
  struct's field names, enumerations and flags resolved to their integer
  values (``op=KFD_IOCTL_SVM_OP_SET_ATTR`` becomes ``0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Frame:
    """One stack frame, as strace ``-k`` and the preload library print it.

    ``addr`` is the offset into the module file (strace's bracket), not a
    virtual address.  ``function``/``source``/``source_line`` are filled by
    the symbolizer when it can read the module.
    """

    module: str
    symbol: str | None = None
    sym_offset: int | None = None
    addr: int | None = None
    function: str | None = None
    source: str | None = None
    source_line: int | None = None

    def label(self) -> str:
        """Best human form: function and source line when symbolized."""
        fn = self.function or self.symbol
        where = f"{self.module}"
        if fn:
            where += f"({fn}"
            if self.sym_offset is not None and not self.function:
                where += f"+{self.sym_offset:#x}"
            where += ")"
        if self.addr is not None:
            where += f" [{self.addr:#x}]"
        if self.source:
            where += f" {self.source}:{self.source_line}"
        return where

    def to_dict(self) -> dict:
        d = {"module": self.module, "symbol": self.symbol, "offset": None if self.addr is None else f"{self.addr:#x}"}
        if self.function:
            d["function"] = self.function
        if self.source:
            d["source"] = self.source
            d["line"] = self.source_line
        return d


# --- the event record -----------------------------------------------------

# Fields every event has, with their defaults.
HEADER: dict[str, Any] = {
    "file": "-",
    "line": 0,  # 1-based line of the entry (or only) line
    "end_line": None,  # line of the ``resumed`` half, if split
    "seq": 0,  # order of emission within its input
    "pid": None,
    "tid": None,
    "time": None,
    "dur": None,
    "ret": None,
    "err": None,
    "stack": (),  # tuple[Frame, ...]
    "text": "",  # the source line(s), whole, for evidence (read back by the core)
    "partial": False,  # resumed half without its entry, or cut short
    "injected": False,  # strace made the result up (-e inject, -e fault): not replayed
}

# The vocabulary's schema: each kind's own fields and their defaults, in the
# order the core (src/events.rs) declares them.  ``dict`` stands for a fresh
# empty dict per event.  This table is the one place the kinds are spelled
# out: the record, tests/vocab.py's constructors and the conversions from
# the core all follow it.
KINDS: dict[str, dict[str, Any]] = {
    # open*, creat, dup*, fcntl(F_DUPFD*), socket, accept, pipe*, socketpair,
    # eventfd, memfd_create, pidfd_open, pidfd_getfd, recvmsg with SCM_RIGHTS
    # ...  ``origin``: open, dup, recvmsg, pidfd_getfd, or the syscall name.
    # dup2/dup3: ``replace`` (the target is closed first if open), ``new_fd``
    # the number asked for (also when it failed).
    "FdCreate": {
        "name": "openat",
        "origin": "open",
        "fds": (),
        "paths": (),
        "cloexec": False,
        "src_fd": None,
        "replace": False,
        "new_fd": None,
    },
    "Close": {"name": "close", "fd": -1, "path": None},
    # close_range(first, last, flags) and closefrom(first) (last = ~0U);
    # flags: CLOSE_RANGE_UNSHARE 2, CLOSE_RANGE_CLOEXEC 4
    "CloseRange": {"name": "close_range", "first": 0, "last": 0xFFFFFFFF, "flags": 0},
    # fcntl(fd, F_SETFD, ...): the only call that changes FD_CLOEXEC later
    "SetCloexec": {"name": "fcntl", "fd": -1, "cloexec": False},
    # any other syscall: the fd arguments it used and their decorations
    "Syscall": {"name": "", "fds": (), "paths": ()},
    # identified by (type, nr) rebuilt from the request; ``size`` the size
    # field (AMDKFD_IOC_SVM: 24 + 8*nattr); ``arg`` the decoded input struct,
    # ``out`` what the kernel wrote (None when only a pointer is shown).  SVM
    # attributes: (type, value) int pairs under arg["attrs"]; MAP/UNMAP
    # device_ids_array: a list of gpu_ids.
    "Ioctl": {
        "name": "ioctl",
        "fd": -1,
        "path": None,
        "request": None,
        "dir": None,
        "type": None,
        "nr": None,
        "size": None,
        "ioctl": None,
        "arg": None,
        "out": None,
    },
    # mmap/mmap2: ``ret`` is the mapped address, ``addr`` the hint (None: NULL)
    "Mmap": {"name": "mmap", "addr": None, "length": 0, "prot": 0, "flags": 0, "fd": -1, "path": None, "offset": 0},
    "Munmap": {"name": "munmap", "addr": 0, "length": 0},
    # ``ret`` is the new address; the old range is unmapped on success
    "Mremap": {"name": "mremap", "old_addr": 0, "old_len": 0, "new_len": 0, "flags": 0, "new_addr": None},
    # fork, vfork, clone, clone3: ``ret`` (and ``child``) is the new tid;
    # ``thread``: CLONE_THREAD, ``share_files``: CLONE_FILES
    "Clone": {"name": "clone", "child": None, "thread": False, "share_files": False, "flags": 0},
    # execve/execveat: on success (ret == 0) cloexec fds are gone
    "Exec": {"name": "execve", "path": None},
    # a thread or the whole process (``whole``: exit_group, the leader's
    # +++ exited/killed, a preload '# exit' line) ended
    "Exit": {"name": "exit", "whole": False, "status": None, "signal": None},
    "Signal": {"name": "signal", "signal": ""},
    # '# pid=... ppid=... exe=... page_size=...' header of a preload log
    "ProcessInfo": {"name": "process", "ppid": None, "exe": None, "page_size": 4096},
    # the open fds (fd -> path) at ``when``: start or exit
    "FdSnapshot": {"name": "fd-snapshot", "when": "start", "fds": dict},
    # an executable mapping: lets the symbolizer find the module's file
    "ModuleMap": {"name": "map", "start": 0, "end_addr": 0, "offset": 0, "perms": "", "module": "", "build_id": None},
    # a runtime library call logged for intent (hsa_amd_memory_lock ...):
    # its arguments by name, and what it returned through pointers
    "Intent": {"name": "", "args": dict, "outs": dict},
}

# Every field name once: the record's slots.
_FIELDS = tuple(dict.fromkeys([*HEADER, *(f for k in KINDS.values() for f in k)]))
# Per kind, the fields it has, header first (eq, repr and the conversions).
FIELDS: dict[str, tuple[str, ...]] = {k: (*HEADER, *v) for k, v in KINDS.items()}


class Event:
    """One event: ``event`` is its kind ('Ioctl', 'Close' ...), then the
    header every event has and the kind's own fields (KINDS).  A field the
    kind does not have is not set: reading it raises AttributeError, so
    ``getattr(ev, "fd", None)`` answers for any kind."""

    __slots__ = ("event", *_FIELDS)

    def __init__(self, event: str, /, **fields) -> None:
        try:
            kind = KINDS[event]
        except KeyError:
            raise TypeError(f"not an event kind: {event!r}") from None
        for k, v in HEADER.items():
            setattr(self, k, fields.pop(k) if k in fields else v)
        for k, v in kind.items():
            if k in fields:
                v = fields.pop(k)
            elif v is dict:
                v = {}
            setattr(self, k, v)
        if fields:
            raise TypeError(f"{event} has no field(s) {', '.join(sorted(fields))}")
        self.event = event

    def fields(self) -> dict[str, Any]:
        """The kind's fields (header included) and their values."""
        return {k: getattr(self, k) for k in FIELDS[self.event]}

    def __eq__(self, other):
        # equal to any object of the same kind (its ``event``) and the same
        # values of that kind's fields, not only to another Event
        kind = getattr(other, "event", None)
        if not isinstance(kind, str):
            return NotImplemented
        if kind != self.event:
            return False
        missing = object()
        return all(getattr(self, k) == getattr(other, k, missing) for k in FIELDS[kind])

    __hash__ = None  # mutable, as the dataclasses were

    def __repr__(self) -> str:
        return f"{self.event}(" + ", ".join(f"{k}={v!r}" for k, v in self.fields().items()) + ")"

    def __reduce__(self):
        return (_rebuild, (self.event, self.fields()))

    @property
    def end(self) -> float | None:
        """Completion time: entry + duration where known, else entry."""
        if self.time is None:
            return None
        return self.time + (self.dur or 0.0)

    @property
    def ok(self) -> bool:
        return self.err is None and self.ret is not None

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _rebuild(event: str, fields: dict) -> Event:
    return Event(event, **fields)


def make(event: str, **fields) -> Event:
    """An event of kind ``event``; fields not given take the kind's defaults."""
    return Event(event, **fields)


def event_record(ev: Event) -> dict[str, Any]:
    """A flat dict of one event for tables (events/stats/diff)."""
    kind = ev.event
    rec: dict[str, Any] = {
        "file": ev.file,
        "line": ev.line,
        "seq": ev.seq,
        "pid": ev.pid,
        "tid": ev.tid,
        "time": ev.time,
        "dur": ev.dur,
        "event": kind,
        "name": getattr(ev, "name", ""),
        "ret": ev.ret,
        "err": ev.err,
    }
    if kind == "Ioctl":
        rec.update(fd=ev.fd, ioctl=ev.ioctl, type=ev.type, nr=ev.nr, size=ev.size, request=ev.request)
    elif kind in ("Close", "SetCloexec"):
        rec["fd"] = ev.fd
    elif kind == "FdCreate":
        rec["fd"] = ev.fds[0] if ev.fds else None
    elif kind == "Mmap":
        rec.update(fd=ev.fd, length=ev.length)
    return rec


@dataclass(slots=True)
class InputInfo:
    """What a parser learned about one input file, for the report's inputs and
    coverage sections and the trace-unparsed / trace-incomplete findings."""

    file: str
    format: str = "unknown"  # strace | preload | tinygrad
    lines: int = 0
    events: int = 0
    unparsed: int = 0
    unparsed_samples: list = field(default_factory=list)  # [(line, text)], first 20
    too_long: int = 0  # over-long lines skipped (counted in unparsed)
    unfinished: int = 0  # calls that never completed (no result)
    orphans: int = 0  # resumed halves with no entry
    injected: int = 0  # results strace made up (-e inject, -e fault): not replayed
    detached: int = 0
    has_pids: bool = False
    has_time: bool = False
    has_durations: bool = False
    has_stacks: bool = False
    has_decorations: bool = False
    decoded_structs: bool = False  # ioctl structs decoded (preload logs)
    intent_calls: bool = False
    exit_seen: bool = False  # a process-exit line / '# exit' was seen
    ends_mid_line: bool = False  # last line had no newline
    header: dict = field(default_factory=dict)  # preload '#' metadata
    preamble: int = 0  # lines before the first trace line, skipped
    layout: str = ""  # indentation/quoting removed ("indented by 4 column(s)")
    crlf: bool = False  # CRLF line ends (the \r is dropped)

    def add_unparsed(self, line: int, text: str) -> None:
        self.unparsed += 1
        if len(self.unparsed_samples) < 20:
            self.unparsed_samples.append((line, text[:200]))

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "format": self.format,
            "lines": self.lines,
            "events": self.events,
            "unparsed": self.unparsed,
        }
