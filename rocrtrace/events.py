"""The normalized event vocabulary.

This module is the only thing parsers and replay models share.  A parser turns
one input (an strace log, a preload log, a tinygrad IOCTL=1 log ...) into a
stream of these events; the models never see text.  One event is one call
(syscall, ioctl or intent call) or one process-level fact (exit, exec, fd
snapshot, map snapshot).

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
        d = {"module": self.module, "symbol": self.symbol,
             "offset": None if self.addr is None else f"{self.addr:#x}"}
        if self.function:
            d["function"] = self.function
        if self.source:
            d["source"] = self.source
            d["line"] = self.source_line
        return d


@dataclass(slots=True, kw_only=True)
class Event:
    """Fields every event has.  Subclasses add what their call carries."""

    file: str = "-"
    line: int = 0                 # 1-based line of the entry (or only) line
    end_line: int | None = None   # line of the ``resumed`` half, if split
    seq: int = 0                  # order of emission within its input
    pid: int | None = None
    tid: int | None = None
    time: float | None = None
    dur: float | None = None
    ret: int | None = None
    err: str | None = None
    stack: tuple = ()             # tuple[Frame, ...]
    text: str = ""                # the source line(s), shortened, for evidence
    partial: bool = False         # resumed half without its entry, or cut short

    # ``name`` is a class-level constant on most subclasses; Syscall and
    # Intent carry their own.
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


# --- file descriptors -------------------------------------------------------

@dataclass(slots=True, kw_only=True)
class FdCreate(Event):
    """A syscall that installs new fds: open*, creat, dup*, fcntl(F_DUPFD*),
    socket, accept, pipe*, socketpair, eventfd, memfd_create, pidfd_open,
    pidfd_getfd, recvmsg with SCM_RIGHTS, epoll_create, signalfd, timerfd ...

    ``origin`` names the creator kind: ``open``, ``dup``, ``recvmsg``,
    ``pidfd_getfd``, or the syscall name for the rest.  For ``dup2``/``dup3``
    ``replace`` is True: the target number is closed first if it was open.
    """

    name: str = "openat"
    origin: str = "open"
    fds: tuple = ()               # new fd numbers (empty when it failed)
    paths: tuple = ()             # decoration or path per fd (None if unknown)
    cloexec: bool = False
    src_fd: int | None = None     # dup source / pidfd_getfd target fd
    replace: bool = False
    new_fd: int | None = None     # dup2/dup3: the number asked for (also when it failed)


@dataclass(slots=True, kw_only=True)
class Close(Event):
    name: str = "close"
    fd: int = -1
    path: str | None = None


@dataclass(slots=True, kw_only=True)
class CloseRange(Event):
    """close_range(first, last, flags) and closefrom(first) (last = ~0U)."""

    name: str = "close_range"
    first: int = 0
    last: int = 0xFFFFFFFF
    flags: int = 0                # CLOSE_RANGE_UNSHARE 2, CLOSE_RANGE_CLOEXEC 4


@dataclass(slots=True, kw_only=True)
class SetCloexec(Event):
    """fcntl(fd, F_SETFD, ...): the only call that changes FD_CLOEXEC later."""

    name: str = "fcntl"
    fd: int = -1
    cloexec: bool = False


@dataclass(slots=True, kw_only=True)
class Syscall(Event):
    """Any other syscall.  ``fds`` lists the fd arguments it used (decorated
    or in a known fd position), ``paths`` their decorations."""

    name: str = ""
    fds: tuple = ()
    paths: tuple = ()


# --- ioctls -----------------------------------------------------------------

@dataclass(slots=True, kw_only=True)
class Ioctl(Event):
    """An ioctl, identified by (type, nr) rebuilt from the request, never by
    strace's name alone.  ``size`` is the size field of the request (data:
    AMDKFD_IOC_SVM carries 24 + 8*nattr).  ``arg`` holds the decoded input
    struct (preload logs), ``out`` the fields the kernel wrote (after ``=>``);
    both ``None`` when the input only shows a pointer (strace logs).
    SVM attributes are a list of ``(type, value)`` int pairs under
    ``arg["attrs"]`` (and ``out["attrs"]`` for GET_ATTR answers);
    MAP/UNMAP ``device_ids_array`` is a list of gpu_ids."""

    name: str = "ioctl"
    fd: int = -1
    path: str | None = None
    request: int | None = None
    dir: int | None = None
    type: int | None = None
    nr: int | None = None
    size: int | None = None
    ioctl: str | None = None      # our canonical name, e.g. AMDKFD_IOC_SVM
    arg: dict | None = None
    out: dict | None = None


# --- memory -----------------------------------------------------------------

@dataclass(slots=True, kw_only=True)
class Mmap(Event):
    """mmap/mmap2; ``ret`` is the mapped address."""

    name: str = "mmap"
    addr: int | None = None       # requested address (hint), None for NULL
    length: int = 0
    prot: int = 0
    flags: int = 0
    fd: int = -1
    path: str | None = None
    offset: int = 0


@dataclass(slots=True, kw_only=True)
class Munmap(Event):
    name: str = "munmap"
    addr: int = 0
    length: int = 0


@dataclass(slots=True, kw_only=True)
class Mremap(Event):
    """``ret`` is the new address; the old range is unmapped on success."""

    name: str = "mremap"
    old_addr: int = 0
    old_len: int = 0
    new_len: int = 0
    flags: int = 0
    new_addr: int | None = None   # MREMAP_FIXED target


# --- processes and threads --------------------------------------------------

@dataclass(slots=True, kw_only=True)
class Clone(Event):
    """fork, vfork, clone, clone3.  ``ret`` (and ``child``) is the new tid."""

    name: str = "clone"
    child: int | None = None
    thread: bool = False          # CLONE_THREAD: same process
    share_files: bool = False     # CLONE_FILES: shared fd table
    flags: int = 0


@dataclass(slots=True, kw_only=True)
class Exec(Event):
    """execve/execveat.  On success (ret == 0) cloexec fds are gone."""

    name: str = "execve"
    path: str | None = None


@dataclass(slots=True, kw_only=True)
class Exit(Event):
    """A thread or the whole process ended.

    ``whole`` is True for the end of the process (exit_group, the leader's
    ``+++ exited``/``+++ killed``, a preload ``# exit`` line).  ``status`` is
    the exit status, ``signal`` the killing signal name.
    """

    name: str = "exit"
    whole: bool = False
    status: int | None = None
    signal: str | None = None


@dataclass(slots=True, kw_only=True)
class Signal(Event):
    name: str = "signal"
    signal: str = ""


# --- metadata (preload logs, and what parsers learn about an input) ---------

@dataclass(slots=True, kw_only=True)
class ProcessInfo(Event):
    """``# pid=… ppid=… exe=… page_size=…`` header of a preload log."""

    name: str = "process"
    ppid: int | None = None
    exe: str | None = None
    page_size: int = 4096


@dataclass(slots=True, kw_only=True)
class FdSnapshot(Event):
    """The open fds at one moment: ``when`` is ``start`` or ``exit``."""

    name: str = "fd-snapshot"
    when: str = "start"
    fds: dict = field(default_factory=dict)   # fd -> path


@dataclass(slots=True, kw_only=True)
class ModuleMap(Event):
    """An executable mapping: lets the symbolizer find the module's file."""

    name: str = "map"
    start: int = 0
    end_addr: int = 0
    offset: int = 0
    perms: str = ""
    module: str = ""
    build_id: str | None = None


@dataclass(slots=True, kw_only=True)
class Intent(Event):
    """A runtime library call logged for intent (hsa_amd_memory_lock ...).

    ``args`` are the call's arguments by name (``ptr``, ``size``, ``agents``,
    ``fd``, ``handle`` ...), ints where the log shows numbers; ``outs`` the
    values it returned through pointers.
    """

    name: str = ""
    args: dict = field(default_factory=dict)
    outs: dict = field(default_factory=dict)


EVENT_TYPES = (FdCreate, Close, CloseRange, SetCloexec, Syscall, Ioctl, Mmap,
               Munmap, Mremap, Clone, Exec, Exit, Signal, ProcessInfo,
               FdSnapshot, ModuleMap, Intent)


def event_record(ev: Event) -> dict[str, Any]:
    """A flat dict of one event for tables (events/stats/diff)."""
    rec: dict[str, Any] = {
        "file": ev.file, "line": ev.line, "seq": ev.seq, "pid": ev.pid,
        "tid": ev.tid, "time": ev.time, "dur": ev.dur,
        "event": type(ev).__name__, "name": getattr(ev, "name", ""),
        "ret": ev.ret, "err": ev.err,
    }
    if isinstance(ev, Ioctl):
        rec.update(fd=ev.fd, ioctl=ev.ioctl, type=ev.type, nr=ev.nr,
                   size=ev.size, request=ev.request)
    elif isinstance(ev, (Close, SetCloexec)):
        rec["fd"] = ev.fd
    elif isinstance(ev, FdCreate):
        rec["fd"] = ev.fds[0] if ev.fds else None
    elif isinstance(ev, Mmap):
        rec.update(fd=ev.fd, length=ev.length)
    return rec


@dataclass(slots=True)
class InputInfo:
    """What a parser learned about one input file, for the report's inputs and
    coverage sections and the trace-unparsed / trace-incomplete findings."""

    file: str
    format: str = "unknown"       # strace | preload | tinygrad
    lines: int = 0
    events: int = 0
    unparsed: int = 0
    unparsed_samples: list = field(default_factory=list)   # [(line, text)], first 20
    too_long: int = 0             # over-long lines skipped (counted in unparsed)
    unfinished: int = 0           # calls that never completed (no result)
    orphans: int = 0              # resumed halves with no entry
    detached: int = 0
    has_pids: bool = False
    has_time: bool = False
    has_durations: bool = False
    has_stacks: bool = False
    has_decorations: bool = False
    decoded_structs: bool = False  # ioctl structs decoded (preload logs)
    intent_calls: bool = False
    exit_seen: bool = False        # a process-exit line / '# exit' was seen
    ends_mid_line: bool = False    # last line had no newline
    header: dict = field(default_factory=dict)   # preload '#' metadata
    preamble: int = 0             # lines before the first trace line, skipped
    layout: str = ""              # indentation/quoting removed ("indented by 4 column(s)")
    crlf: bool = False            # CRLF line ends (the \r is dropped)

    def add_unparsed(self, line: int, text: str) -> None:
        self.unparsed += 1
        if len(self.unparsed_samples) < 20:
            self.unparsed_samples.append((line, text[:200]))

    def to_dict(self) -> dict:
        return {"file": self.file, "format": self.format, "lines": self.lines,
                "events": self.events, "unparsed": self.unparsed}
