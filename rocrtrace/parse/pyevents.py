"""The Python reference engine's event classes (one dataclass per kind).

They leave with the Python engine (rocrtrace/parse, rocrtrace/models,
replay.py, inputs.py): the product's events are the single record of
rocrtrace.events.  ``event`` (the kind's name) lets the product's code read
these as it reads the record.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..events import Frame, InputInfo  # noqa: F401  (re-exported for the engine)

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

    @property
    def event(self) -> str:
        """The kind's name, as the record of rocrtrace.events has it."""
        return type(self).__name__

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


