"""The fd lifetime model: one fd table per process, replayed from events.

What it decides (SPEC §4.1, §5): fd-double-close, fd-bad-fd, fd-close-reused,
fd-use-after-close, fd-leak, fd-open-at-exit (``all_fds``), fd-exhaustion.  The kernel's answer is the
ground truth: a call that succeeded proves the fd was open, whatever the model
thought (a creator the trace cannot see: strace never shows fds made inside
ioctl structs, a preload log misses fclose and raw syscalls).  Only an EBADF
proves an fd was not open, so errors are only ever raised on EBADF answers,
never on the model's belief alone.

Memory follows live state: open slots, and per fd number the last slot that
held it and the close that ended it (so a second close can name the first).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .. import kfd
from ..parse.pyevents import (Clone, Close, CloseRange, Event, Exec, Exit, FdCreate,
                      FdSnapshot, Intent, Ioctl, Mmap, ProcessInfo, SetCloexec,
                      Syscall)
from ..findings import Evidence, Finding
from . import Model

CLOSE_RANGE_UNSHARE = 2
CLOSE_RANGE_CLOEXEC = 4
O_CLOEXEC = 0o2000000
MAP_ANONYMOUS = 0x20

# Kinds whose fd is a GPU object: open at process exit means a leak.
GPU_OBJECT_KINDS = ("dmabuf", "sync_file")
DEVICE_KINDS = ("kfd", "drm-render", "accel")

# ioctls that install a new fd: (type, nr) -> (where the fd is, kind, origin)
# where: an ``out`` field name, or None when the fd is the return value.
CREATING_IOCTLS = {
    kfd.EXPORT_DMABUF: ("dmabuf_fd", "dmabuf", "AMDKFD_IOC_EXPORT_DMABUF"),
    kfd.PRIME_HANDLE_TO_FD: ("fd", "dmabuf", "DRM_IOCTL_PRIME_HANDLE_TO_FD"),
    kfd.DMA_HEAP_ALLOC: ("fd", "dmabuf", "DMA_HEAP_IOCTL_ALLOC"),
    kfd.SYNCOBJ_HANDLE_TO_FD: ("fd", "sync_file", "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD"),
    kfd.DMABUF_EXPORT_SYNC_FILE: ("fd", "sync_file", "DMA_BUF_IOCTL_EXPORT_SYNC_FILE"),
    kfd.SMI_EVENTS: ("anon_fd", "other", "AMDKFD_IOC_SMI_EVENTS"),
    kfd.UDMABUF_CREATE: (None, "dmabuf", "UDMABUF_CREATE"),
    (kfd.TYPE_UDMABUF, 0x43): (None, "dmabuf", "UDMABUF_CREATE_LIST"),
}
# Origins that export a buffer as a new dma-buf fd (fd-held-open, dmabuf-reexport).
EXPORT_ORIGINS = ("AMDKFD_IOC_EXPORT_DMABUF", "DRM_IOCTL_PRIME_HANDLE_TO_FD",
                  "DMA_HEAP_IOCTL_ALLOC", "UDMABUF_CREATE", "UDMABUF_CREATE_LIST")

# ioctls that take a second fd inside their struct (borrowed, not consumed).
INNER_FD_FIELDS = {
    kfd.IMPORT_DMABUF: "dmabuf_fd",
    kfd.GET_DMABUF_INFO: "dmabuf_fd",
    kfd.PRIME_FD_TO_HANDLE: "fd",
    (kfd.TYPE_DMABUF, 0x03): "fd",          # DMA_BUF_IOCTL_IMPORT_SYNC_FILE
    kfd.ACQUIRE_VM: "drm_fd",               # the render node whose GPU VM KFD takes
}
IMPORT_IOCTLS = (kfd.IMPORT_DMABUF, kfd.PRIME_FD_TO_HANDLE)

# Allocations: the denominator of "dma-buf fds per allocation".  DRM driver
# numbers are shared (0x40 is amdgpu GEM_CREATE and XDNA CREATE_HWCTX), so by name.
ALLOC_IOCTLS = ("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", "DRM_IOCTL_AMDGPU_GEM_CREATE",
                "DRM_IOCTL_AMDXDNA_CREATE_BO")
ALLOC_INTENTS = ("hsa_amd_vmem_handle_create",)

# Intent calls that hand a dma-buf fd to their caller, and that take one.
HANDOVER_INTENTS = {"hsa_amd_vmem_export_shareable_handle": "dmabuf_fd",
                    "hsa_amd_portable_export_dmabuf": "dmabuf"}
BORROW_INTENTS = {"hsa_amd_vmem_import_shareable_handle": "dmabuf_fd",
                  "hsa_amd_portable_close_dmabuf": "dmabuf"}

# Syscalls that fail with EBADF for a valid fd opened in the wrong mode.
MODE_EBADF = {"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv",
              "pwritev", "preadv2", "pwritev2", "ftruncate", "fallocate", "sendfile",
              "copy_file_range", "splice", "flock", "fsync", "fdatasync", "mmap"}

# Probes ask whether a number is open and expect EBADF as an answer (a loop
# over inherited fds, a debug dump): never a use after close.  Every other
# syscall naming an fd does work on it and is a use.  fcntl reaches here only
# for commands that are not F_DUPFD*/F_SETFD (F_GETFD, F_GETFL, locks ...):
# the model cannot tell them apart, so all of them count as probes.
PROBES = frozenset("fstat fstat64 newfstatat fstatat64 statx fstatfs fstatfs64 "
                   "fcntl fcntl64 poll ppoll select pselect6 _newselect".split())

# A close-all sweep (SPEC 4.1): on one thread, closes of strictly increasing
# fd numbers with no other call of that thread in between, at least
# SWEEP_MIN of them, more than half (and at least two) failing with EBADF.
# That is how a daemon after start-up or a child between fork and execve
# drops the fds it may have inherited (for fd in 3..N: close(fd)).  Its EBADF
# closes are one note, whatever the trace saw of those numbers before; an
# open-ended close_range(N, ~0U) is a sweep by itself (it never fails).  A
# run is judged when it ends; past SWEEP_SETTLED closes a run that is a sweep
# stays one (its per-close findings are not kept).
SWEEP_MIN = 4
SWEEP_SETTLED = 4096

_LIBC = re.compile(r"(^|/)(libc|libpthread|ld-linux|libdl)[.-]")
_DEV_SUFFIX = re.compile(r"<char [0-9]+:[0-9]+>$")


_IOCTL_ORIGINS = ("AMDKFD_", "DRM_", "DMA_", "UDMABUF")


@functools.lru_cache(maxsize=4096)
def kind_of_path(path: str | None) -> str:
    """fd kind from a readlink / -y decoration; tolerant of ' (deleted)' and
    -yy '<char M:m>' nesting a parser may have left in place."""
    if not path:
        return "unknown"
    p = _DEV_SUFFIX.sub("", path.strip())
    if p.endswith("(deleted)"):
        p = p[:-len("(deleted)")].rstrip()
    if p.startswith("/dev/kfd"):
        return "kfd"
    if p.startswith("/dev/dri/renderD"):
        return "drm-render"
    if p.startswith("/dev/accel/"):
        return "accel"
    if p.startswith("/dmabuf:") or p.startswith("anon_inode:dmabuf") \
            or p.startswith("anon_inode:[dmabuf"):
        return "dmabuf"
    if p.startswith("anon_inode:sync_file") or p.startswith("anon_inode:[sync_file"):
        return "sync_file"
    return "other"


def fd_value(v) -> int | None:
    """An fd from a decoded struct field or intent argument: an int, a
    one-element list (strace's ``[7]`` for out-parameters), ``(fd, path)``,
    or text like ``7</dmabuf:>``."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, (list, tuple)) and v:
        return fd_value(v[0])
    if isinstance(v, dict):
        return fd_value(v.get("fd"))
    if isinstance(v, str):
        m = re.match(r"\s*\[?(-?[0-9]+)", v)
        if m:
            return int(m.group(1))
    return None


def frames_of(stack, depth: int = 3) -> list:
    """The innermost frames that are not libc/loader wrappers."""
    out = []
    for fr in stack:
        if _LIBC.search(fr.module or ""):
            continue
        out.append(fr)
        if len(out) >= depth:
            break
    return out


def call_site(ev: Event | None) -> str:
    """The innermost frame outside libc, or "" when the event has no stack."""
    if ev is None:
        return ""
    fr = frames_of(ev.stack, 1)
    if fr:
        return fr[0].label()
    if ev.stack:
        return ev.stack[0].label()
    return ""


def at(ev: Event | None) -> str:
    """`` (call site)`` for messages, nothing without a stack."""
    site = call_site(ev)
    return f" ({site})" if site else ""


def _func(fr) -> tuple | None:
    name = fr.symbol or fr.function
    if not name:
        return None
    return (fr.module.rsplit("/", 1)[-1], name)


# The code that owns an fd: its creating call's innermost frame outside libc,
# grouped into components (the ROCm runtime and its thunk are one).
_COMPONENTS = ((re.compile(r"hsa-runtime|hsakmt"), "runtime"),
               (re.compile(r"^libdrm"), "libdrm"),
               (re.compile(r"amd_smi|rocm_smi|amdsmi"), "amd-smi"),
               (re.compile(r"amdhip|hip_?runtime"), "hip"))


@functools.lru_cache(maxsize=1024)
def component(module: str) -> str:
    base = module.rsplit("/", 1)[-1]
    for rx, name in _COMPONENTS:
        if rx.search(base):
            return name
    return re.sub(r"\.so(\.[0-9.]*)?$", "", base)


def _comps(stack, depth: int = 3) -> set:
    return {component(fr.module) for fr in frames_of(stack, depth)}


def _owner(ev: Event | None) -> str | None:
    """The component of an event's innermost frame outside libc."""
    if ev is None:
        return None
    fr = frames_of(ev.stack, 1)
    return component(fr[0].module) if fr else None


def _shared_callers(old: "Slot", new: "Slot") -> set:
    """Functions on both creators' stacks (main() and other common callers):
    they say nothing about which fd a close was meant for."""
    a = old.root or old.creator
    b = new.creator
    if a is None or b is None:
        return set()
    return _funcs(a.stack) & _funcs(b.stack)


def _funcs(stack, depth: int | None = None) -> set:
    frs = frames_of(stack, depth) if depth else [f for f in stack if not _LIBC.search(f.module or "")]
    return {f for f in map(_func, frs) if f}


def short(ev: Event | None) -> str:
    if ev is None:
        return "(not in the trace)"
    name = getattr(ev, "ioctl", None) or getattr(ev, "name", "") or type(ev).__name__
    return f"{name} at {ev.file}:{ev.line}"


@dataclass(slots=True, eq=False)
class Slot:
    """One fd number's current occupant."""

    fd: int
    gen: int
    kind: str
    origin: str                       # creator kind: open, dup, ioctl name, inherited …
    creator: Event | None             # the call that installed this number
    root: Event | None                # the original creation through dup chains
    root_origin: str
    ofd: int                          # open file description (dup shares it)
    cloexec: bool = False
    path: str | None = None
    gpu: bool = False                 # created for a GPU object (leak candidate)
    last_use: Event | None = None
    uses: int = 0
    allocs_at_use: int = 0            # the process's allocation count at last use/creation
    notable: list = field(default_factory=list)   # [(role, event)], ≤ 4: imports, hand-overs
    prev: "Closed | None" = None      # the previous occupant of this number
    buffer: object = None             # the handle model's buffer identity (dup shares it)
    racing: Event | None = None       # an EBADF use while open: maybe a close in progress

    @property
    def exported(self) -> bool:
        return self.root_origin in EXPORT_ORIGINS

    def describe(self) -> str:
        """``fd 7 (dmabuf /dmabuf:, created by AMDKFD_IOC_EXPORT_DMABUF at f:12)``"""
        bits = [self.kind + (f" {self.path}" if self.path else "")]
        if self.origin == "unknown":
            bits.append("creator not in the trace")
        elif self.origin == "pre-existing":
            bits.append("open before the trace started")
        if self.creator is not None:
            if self.root is not None and self.root is not self.creator:
                bits.append(f"a {self.origin} made by {short(self.creator)} of the fd "
                            f"created by {short(self.root)}")
            else:
                bits.append(f"{'inherited, ' if self.origin == 'inherited' else ''}"
                            f"created by {short(self.creator)}")
        return f"fd {self.fd} ({', '.join(bits)})"

    def note(self, role: str, ev: Event) -> None:
        if len(self.notable) < 4:
            self.notable.append((role, ev))

    def copy(self, origin: str | None = None) -> "Slot":
        s = Slot(self.fd, self.gen, self.kind, origin or self.origin, self.creator,
                 self.root, self.root_origin, self.ofd, self.cloexec, self.path, self.gpu,
                 self.last_use, self.uses, self.allocs_at_use, list(self.notable), None,
                 self.buffer)
        return s


@dataclass(slots=True, eq=False)
class Closed:
    slot: Slot
    event: Event | None               # the call that closed it (None: an unseen close)
    how: str                          # close, close_range, dup2, exec, unseen
    flagged: bool = False             # already reported as fd-close-reused
    image: int = 0                    # the process image (execs so far) it was closed in
    pid: object = None                # the process that closed it (fork copies the record)


@dataclass(slots=True, eq=False)
class Run:
    """Consecutive closes of increasing numbers on one thread: a sweep candidate."""

    last: int
    first_ev: Event
    last_ev: Event
    closes: int = 0
    ebadf: int = 0
    lo: int = -1                      # the lowest and highest EBADF numbers
    hi: int = -1
    held: list | None = None          # its findings, taken back if it is a sweep
    settled: bool = False


class Table:
    __slots__ = ("slots", "closed", "gens", "users")

    def __init__(self) -> None:
        self.slots: dict[int, Slot] = {}
        self.closed: dict[int, Closed] = {}
        self.gens: dict[int, int] = {}
        self.users = 0

    def copy(self, origin: str) -> "Table":
        t = Table()
        t.slots = {n: s.copy(origin) for n, s in self.slots.items()}
        t.closed = dict(self.closed)
        t.gens = dict(self.gens)
        return t

    def next_gen(self, n: int) -> int:
        g = self.gens.get(n, 0) + 1
        self.gens[n] = g
        return g

    def lowest_free(self) -> int:
        n = 0
        while n in self.slots:
            n += 1
        return n


@dataclass(slots=True, eq=False)
class Proc:
    pid: int | None
    table: Table
    tids: set = field(default_factory=set)
    forked: bool = False              # a fork child that has not exec'd (close storms)
    blind: bool = False               # saw fd-creating ioctls without their structs
    ioctl_allocs: int = 0
    intent_allocs: int = 0
    exhaustion: Finding | None = None
    exit_snapshot: bool = False
    ended: bool = False
    complete: bool = False            # the trace saw it from its start (execve, snapshot)
    image: int = 0                    # successful execs so far
    first: bool = True                # no event of this process seen yet

    @property
    def allocs(self) -> int:
        # an allocation intent issues its own ioctls: count one or the other
        return self.intent_allocs or self.ioctl_allocs


class FdModel(Model):
    """fd tables per process.  ``watch=(pid_or_None, fd)`` records every event
    that touches that fd number in ``.history`` as (event, description).

    Listeners (the handle model) get ``on_fd_open(proc, slot, ev)``,
    ``on_fd_release(proc, slot, ev, how)`` and ``on_process_end(proc, ev, exited)``.
    """

    def __init__(self, watch: tuple | None = None, all_fds: bool = False) -> None:
        super().__init__()
        self.all_fds = all_fds            # --all-fds: fd-open-at-exit notes
        self._runs: dict = {}             # (pid, tid) -> Run
        self._sink: Run | None = None     # the run of the close being handled
        self.procs: dict = {}
        self.watch = watch
        self.history: list = []
        self.listeners: list = []
        self.describe_buffer = None       # set by the handle model: slot -> str | None
        self._ofd = 0
        self._last: Event | None = None
        self._finished = False
        self.limits: list[str] = []

    # --- query API ------------------------------------------------------------

    def lookup(self, pid, fd: int) -> Slot | None:
        p = self.procs.get(pid)
        return p.table.slots.get(fd) if p else None

    def last_closed(self, pid, fd: int) -> Closed | None:
        p = self.procs.get(pid)
        return p.table.closed.get(fd) if p else None

    def open_fds(self, pid) -> dict[int, Slot]:
        p = self.procs.get(pid)
        return dict(p.table.slots) if p else {}

    # --- plumbing -------------------------------------------------------------

    def _proc(self, pid) -> Proc:
        p = self.procs.get(pid)
        if p is None or p.ended:
            t = Table()
            t.users = 1
            p = Proc(pid, t)
            self.procs[pid] = p
        return p

    def _new_ofd(self) -> int:
        self._ofd += 1
        return self._ofd

    def _watched(self, pid, fd) -> bool:
        w = self.watch
        return w is not None and w[1] == fd and (w[0] is None or w[0] == pid)

    def _hist(self, ev: Event, pid, fd: int, what: str) -> None:
        if self._watched(pid, fd):
            p = self.procs.get(pid)
            s = p.table.slots.get(fd) if p else None
            state = s.describe() if s else "not open"
            if s and s.last_use is not None:
                state += f"; last use {short(s.last_use)}"
            self.history.append((ev, what, state))

    def _emit(self, f: Finding) -> Finding:
        # A close in a run is reported at once; if the run turns out to be a
        # sweep its findings are taken back (_retract).
        run = self._sink
        if run is not None:
            if run.settled:
                return f
            if run.held is None:
                run.held = []
            run.held.append(f)
        self.findings.append(f)
        return f

    def _retract(self, run: Run) -> None:
        if run.held:
            gone = set(map(id, run.held))
            self.findings[:] = [f for f in self.findings if id(f) not in gone]
            run.held = None

    # --- slot lifecycle -------------------------------------------------------

    def _install(self, p: Proc, ev: Event, fd: int, kind: str, origin: str, *,
                 path=None, cloexec=False, src: Slot | None = None, gpu=False,
                 creator: Event | None = None, what: str | None = None) -> Slot:
        t = p.table
        old = t.slots.get(fd)
        if old is not None:
            # The kernel handed out a number the model thought open: a close
            # happened that the trace could not see.
            self._release(p, fd, None, "unseen")
        closed = t.closed.pop(fd, None)
        if closed is not None:
            closed.slot.prev = None          # keep one generation back, not a chain
        made = None if origin in ("unknown", "pre-existing") else (creator or ev)
        if src is not None:
            s = Slot(fd, t.next_gen(fd), src.kind if kind == "unknown" else kind, origin,
                     made, src.root, src.root_origin, src.ofd, cloexec, path or src.path,
                     src.gpu or gpu, prev=closed, buffer=src.buffer)
        else:
            s = Slot(fd, t.next_gen(fd), kind, origin, made, made, origin, self._new_ofd(),
                     cloexec, path, gpu or kind in GPU_OBJECT_KINDS, prev=closed)
        s.allocs_at_use = p.allocs
        t.slots[fd] = s
        for li in self.listeners:
            li.on_fd_open(p, s, ev)
        self._hist(ev, p.pid, fd, what or f"fd {fd} created ({origin})")
        return s

    def _release(self, p: Proc, fd: int, ev: Event | None, how: str) -> Slot | None:
        t = p.table
        s = t.slots.pop(fd, None)
        if s is None:
            return None
        t.closed[fd] = Closed(s, ev, how, image=p.image, pid=p.pid)
        for li in self.listeners:
            li.on_fd_release(p, s, ev, how)
        return s

    def _use(self, p: Proc, fd: int, ev: Event, path: str | None = None,
             role: str | None = None) -> Slot:
        """A successful use proves the fd is open: reconcile the model."""
        t = p.table
        s = t.slots.get(fd)
        pk = kind_of_path(path) if path else None
        if s is not None and path and s.path is None and s.origin.startswith(_IOCTL_ORIGINS):
            # The creating ioctl is authoritative about what it installed; the
            # name is whatever the exporter gave the file (a memfd stand-in,
            # a named dma-buf): learn it rather than assume a new fd.
            s.path = path
        elif s is not None and pk and pk != "unknown" and s.kind not in ("unknown", pk) \
                and not (s.kind == "other" and pk == "other"):
            # The decoration says another kind of file holds this number: the
            # old one was closed and this one created where the trace cannot see.
            self._release(p, fd, None, "unseen")
            s = None
        if s is None:
            s = self._install(p, ev, fd, pk or "unknown", "unknown", path=path,
                              what=f"fd {fd} first seen in use; its creator is not in the trace")
        elif s.kind == "unknown" and pk:
            s.kind = pk
            s.path = path
            s.gpu = s.gpu or pk in GPU_OBJECT_KINDS
        s.last_use = ev
        s.uses += 1
        s.allocs_at_use = p.allocs
        if role:
            s.note(role, ev)
        return s

    # --- feed -----------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        if ev is self._last:      # the handle model may feed us the same event
            return
        self._last = ev
        p = self._proc(ev.pid)
        if p.first:
            self._first_event(p, ev)
        if ev.tid is not None:
            p.tids.add(ev.tid)
        runs = self._runs
        if runs:
            run = runs.get((ev.pid, ev.tid))
            if run is not None and (type(ev) is not Close or ev.fd <= run.last):
                self._end_run((ev.pid, ev.tid))
        if ev.err in ("EMFILE", "ENFILE"):
            self._exhaustion(p, ev)
        h = self._handlers.get(type(ev))
        if h is not None:
            h(self, p, ev)

    def _first_event(self, p: Proc, ev: Event) -> None:
        """What a process's first event says about how much the trace saw."""
        p.first = False
        if isinstance(ev, Exec) and ev.err is None:
            # a trace that starts at execve saw every fd the program opened
            p.complete = True
        elif isinstance(ev, ProcessInfo):
            # a preload log per process: a child of a traced process
            # starts between fork and execve
            par = self.procs.get(ev.ppid)
            p.forked = par is not None and par is not p
        elif not isinstance(ev, FdSnapshot) and len(self.procs) > 1:
            # a later process seen mid-life: a child whose fork/vfork
            # result is printed after its first calls (vfork always).
            # Judge it as a child between fork and execve: say less.
            p.forked = True

    def _on_create(self, p: Proc, ev: FdCreate) -> None:
        src = None
        if ev.src_fd is not None and ev.origin != "pidfd_getfd":
            if ev.err == "EBADF":
                self._dup_ebadf(p, ev)
                return
            if ev.ok and ev.src_fd >= 0:
                src = self._use(p, ev.src_fd, ev)
        if not ev.ok:
            return
        for i, fd in enumerate(ev.fds):
            if fd is None or fd < 0:
                continue
            path = ev.paths[i] if i < len(ev.paths) else None
            if ev.origin == "dup":
                if ev.src_fd == fd:
                    continue                      # dup2(fd, fd): nothing changes
                if ev.replace and fd in p.table.slots:
                    self._release(p, fd, ev, "dup2")
                    self._hist(ev, p.pid, fd, f"{ev.name} closed fd {fd} to reuse its number")
                if src is not None:
                    self._install(p, ev, fd, kind_of_path(path) if path else "unknown", "dup",
                                  path=path, cloexec=ev.cloexec, src=src,
                                  what=f"fd {fd} = {ev.name} of fd {ev.src_fd}")
                    continue
            kind = kind_of_path(path)
            self._install(p, ev, fd, kind, ev.origin, path=path, cloexec=ev.cloexec,
                          what=f"fd {fd} created by {ev.name}")

    def _dup_ebadf(self, p: Proc, ev: FdCreate) -> None:
        """Which fd a failing dup is about (SPEC 4.1): dup2/dup3 with ``old``
        open fail with EBADF only for ``new`` (negative or past the limit),
        never a use of ``old``; a negative number is a bad argument."""
        old, new = ev.src_fd, ev.new_fd
        if old < 0:
            self._bad_fd(p, ev, old)
            return
        if new is not None and new < 0:
            self._bad_fd(p, ev, new)
            return
        t = p.table
        if old in t.slots:
            self._hist(ev, p.pid, old, f"{ev.name} failed with EBADF: about the new fd")
            return
        if old in t.closed:
            self._bad_use(p, ev, old)
        elif new is None:
            # dup, F_DUPFD: the only fd is old.  dup2/dup3 of a number never
            # seen open may still be about new (an inherited 0-2 is never seen)
            self._bad_fd(p, ev, old)

    def _on_close(self, p: Proc, ev: Close) -> None:
        fd = ev.fd
        if fd < 0:
            if ev.err == "EBADF":
                self._bad_fd(p, ev, fd)
            return
        t = p.table
        key = (ev.pid, ev.tid)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = Run(fd, ev, ev)
        run.last, run.last_ev = fd, ev
        run.closes += 1
        if ev.err == "EBADF":
            run.ebadf += 1
            run.lo = fd if run.lo < 0 else run.lo
            run.hi = fd
        self._sink = run
        try:
            self._close(p, t, ev, fd)
        finally:
            self._sink = None
        if not run.settled and run.closes >= SWEEP_SETTLED and self._is_sweep(run):
            run.settled = True
            self._retract(run)

    @staticmethod
    def _is_sweep(run: Run) -> bool:
        return run.closes >= SWEEP_MIN and run.ebadf >= 2 and run.ebadf * 2 > run.closes

    def _end_run(self, key) -> None:
        run = self._runs.pop(key)
        if run.settled or self._is_sweep(run):
            self._retract(run)
            self._sweep_note(run)

    def _sweep_note(self, run: Run) -> None:
        ev0, ev1 = run.first_ev, run.last_ev
        msg = (f"close-all sweep: {run.closes} closes of increasing fd numbers "
               f"({ev0.fd} to {ev1.fd}) in a row on one thread; {run.ebadf} of them (fd "
               f"{run.lo} the lowest, {run.hi} the highest) failed with EBADF: not open. "
               "This is how a daemon "
               "or a child between fork and execve drops the fds it may have inherited; "
               "the EBADF closes are not double closes")
        self._emit(Finding(
            rule="fd-bad-fd", severity="note", message=msg, event=ev0,
            subject={"kind": "fd", "fd": ev0.fd, "fd_kind": "unknown"},
            evidence=[Evidence("first close of the sweep", ev0, call_site(ev0)),
                      Evidence("last close of the sweep", ev1, call_site(ev1))],
            key=("sweep", "close"),
            details={"sweep": {"closes": run.closes, "ebadf": run.ebadf,
                               "first": ev0.fd, "last": ev1.fd}}))

    def _close(self, p: Proc, t: Table, ev: Close, fd: int) -> None:
        if ev.err == "EBADF":
            self._bad_close(p, ev)
            return
        if ev.ret is None:
            # The kernel's answer is not in the trace: whether it closed
            # anything cannot be told, so assume it did and judge nothing.
            self._release(p, fd, ev, "close")
            self._hist(ev, p.pid, fd, "close with no result in the trace")
            return
        # Success, EINTR, EIO …: Linux releases the number in every case but EBADF.
        s = t.slots.get(fd)
        if s is None:
            s = self._use(p, fd, ev, ev.path)   # open, so created where we cannot see
        elif ev.path:
            s = self._use(p, fd, ev, ev.path)
        if s.racing is not None:
            self._racing_use(p, s, ev)
        flagged = self._check_reused(p, s, ev)
        self._release(p, fd, ev, "close")
        t.closed[fd].flagged = flagged
        self._hist(ev, p.pid, fd, f"fd {fd} closed" + (f" ({ev.err}: released anyway)" if ev.err else ""))

    def _on_close_range(self, p: Proc, ev: CloseRange) -> None:
        if not ev.ok:
            return
        first, last = ev.first, ev.last
        if ev.flags & CLOSE_RANGE_UNSHARE and p.table.users > 1:
            p.table.users -= 1
            p.table = p.table.copy("inherited")
            p.table.users = 1
        if ev.flags & CLOSE_RANGE_CLOEXEC:
            for n, s in p.table.slots.items():
                if first <= n <= last:
                    s.cloexec = True
                    self._hist(ev, p.pid, n, f"fd {n} marked close-on-exec by close_range")
            return
        t = p.table
        span = last - first + 1
        if not p.blind and not p.forked and span <= len(t.slots) + len(t.closed) and \
                all(n in t.slots or n in t.closed for n in range(first, last + 1)):
            # A bounded close_range over numbers the trace knows names the
            # fds it means to close, like close() does (valgrind reports
            # each); it never fails for free numbers, so the trace's own
            # closes are the only evidence: a close in this process and
            # program image, nothing re-creating the number since.  A range
            # reaching numbers the trace never saw (close_range(3, ~0U),
            # Python's (N, INT_MAX)) is a sweep, and so is any close_range in
            # a child between fork and execve (CPython's subprocess closes
            # its pipe ends, then close_range()s the gaps between the fds it
            # keeps).  An strace log that missed fds made inside ioctl
            # structs (blind) cannot tell.
            for n in sorted(n for n, c in t.closed.items()
                            if first <= n <= last and n not in t.slots
                            and c.event is not None and c.how in ("close", "close_range")
                            and c.pid == p.pid and c.image == p.image):
                self._double_close(p, ev, n, t.closed[n])
        for n in [n for n in p.table.slots if first <= n <= last]:
            self._release(p, n, ev, "close_range")
            self._hist(ev, p.pid, n, f"fd {n} closed by close_range({first}, {last})")

    def _on_cloexec(self, p: Proc, ev: SetCloexec) -> None:
        if ev.fd < 0:
            return
        if ev.err == "EBADF":
            self._bad_use(p, ev, ev.fd)
            return
        if ev.ok:
            s = self._use(p, ev.fd, ev)
            s.cloexec = ev.cloexec
            self._hist(ev, p.pid, ev.fd, f"close-on-exec {'set' if ev.cloexec else 'cleared'}")

    def _on_syscall(self, p: Proc, ev: Syscall) -> None:
        t = p.table
        if ev.err == "EBADF":
            pos = [fd for fd in ev.fds if fd >= 0]
            if ev.name in PROBES:
                # the answer to a question, not a failed use; it only tells
                # the model the number is not open
                for fd in pos:
                    if fd in t.slots:
                        self._release(p, fd, None, "unseen")
                    self._hist(ev, p.pid, fd, f"{ev.name} probe: not open (EBADF)")
                return
            neg = [fd for fd in ev.fds if fd < 0]
            if neg:
                self._bad_fd(p, ev, neg[0])
                return
            closed = [fd for fd in pos if fd not in t.slots and fd in t.closed]
            if len(closed) == 1:
                self._bad_use(p, ev, closed[0])
            elif not closed and len(pos) == 1:
                s = t.slots.get(pos[0])
                if s is None:
                    self._bad_fd(p, ev, pos[0])
                elif s.racing is None:
                    # Open in the model: the wrong open mode, an O_PATH fd
                    # (fchmod, lseek, ... fail with EBADF on it), or another
                    # thread's close still in progress: that close decides
                    # (_racing_use); nothing is claimed on this call alone.
                    s.racing = ev
            return
        if not ev.ok:
            return
        for i, fd in enumerate(ev.fds):
            if fd < 0:
                continue
            path = ev.paths[i] if i < len(ev.paths) else None
            self._use(p, fd, ev, path)
            self._hist(ev, p.pid, fd, f"used by {ev.name}")

    def _on_mmap(self, p: Proc, ev: Mmap) -> None:
        if ev.flags & MAP_ANONYMOUS:
            return
        if ev.fd < 0:
            if ev.err == "EBADF":
                self._bad_fd(p, ev, ev.fd)     # a file mapping of fd -1
            return
        if ev.err == "EBADF":
            self._bad_use(p, ev, ev.fd, never_seen_ok=True)
            return
        if ev.ok:
            self._use(p, ev.fd, ev, ev.path)
            self._hist(ev, p.pid, ev.fd, "mmap of this fd")

    def _on_ioctl(self, p: Proc, ev: Ioctl) -> None:
        key = (ev.type, ev.nr)
        arg = ev.arg if isinstance(ev.arg, dict) else None
        inner_field = INNER_FD_FIELDS.get(key)
        inner = fd_value(arg.get(inner_field)) if arg and inner_field else None
        if ev.err == "EBADF":
            self._ioctl_ebadf(p, ev, inner)
            return
        if ev.ok and key[0] in (kfd.TYPE_KFD, kfd.TYPE_DRM):
            name = ev.ioctl
            if name is None:
                s = p.table.slots.get(ev.fd)
                path = ev.path or ({"accel": "/dev/accel/", "drm-render": "/dev/dri/"}.get(
                    s.kind) if s else None)
                name = kfd.ioctl_name(ev.type, ev.nr, path)
            if name in ALLOC_IOCTLS:
                p.ioctl_allocs += 1
        if ev.ret is None or ev.err is not None:
            if ev.fd >= 0 and ev.ret is not None:
                # An ioctl that reached the driver proves its fd was open.
                self._use(p, ev.fd, ev, ev.path)
            return
        if ev.fd >= 0:
            self._use(p, ev.fd, ev, ev.path)
            self._hist(ev, p.pid, ev.fd, f"{ev.ioctl or 'ioctl'} on this fd")
        if inner is not None and inner >= 0:
            role = "imported by" if key in IMPORT_IOCTLS else None
            self._use(p, inner, ev, None, role)
            self._hist(ev, p.pid, inner, f"passed to {ev.ioctl or 'ioctl'}")
        spec = CREATING_IOCTLS.get(key)
        if spec is None:
            return
        where, kind, origin = spec
        if where is None:
            fd = ev.ret
        else:
            out = ev.out if isinstance(ev.out, dict) else None
            fd = fd_value(out.get(where)) if out else None
            if out is None:
                # strace: the new fd is in a struct we cannot read.
                p.blind = True
                if self.watch is not None and self._watched(p.pid, p.table.lowest_free()):
                    self.history.append((ev, f"{origin} probably created fd "
                                         f"{p.table.lowest_free()} (lowest free number; "
                                         f"the struct is not in the trace)", None))
                return
        if fd is None or fd < 0:
            return
        flags = arg.get("flags", 0) if arg else 0
        flags = flags if isinstance(flags, int) else 0
        cloexec = True
        if key in (kfd.EXPORT_DMABUF, kfd.PRIME_HANDLE_TO_FD):
            cloexec = bool(flags & O_CLOEXEC)
        elif key == kfd.DMA_HEAP_ALLOC:
            ff = arg.get("fd_flags", 0) if arg else 0
            cloexec = bool(ff & O_CLOEXEC) if isinstance(ff, int) else False
        elif key == kfd.UDMABUF_CREATE:
            cloexec = bool(flags & 1)
        if key == kfd.SYNCOBJ_HANDLE_TO_FD and not flags & 1:
            kind = "other"            # a syncobj fd, not a sync_file: still a GPU object
        self._install(p, ev, fd, kind, origin, cloexec=cloexec, gpu=kind != "other" or
                      key == kfd.SYNCOBJ_HANDLE_TO_FD, what=f"fd {fd} created by {origin}")

    def _on_intent(self, p: Proc, ev: Intent) -> None:
        if ev.name in ALLOC_INTENTS and ev.ok and ev.ret == 0:
            p.intent_allocs += 1
        fld = HANDOVER_INTENTS.get(ev.name)
        if fld and ev.ret == 0:
            fd = fd_value(ev.outs.get(fld, ev.args.get(fld)))
            if fd is not None and fd >= 0:
                s = p.table.slots.get(fd)
                if s is not None:
                    s.note("handed to the caller by", ev)
                self._hist(ev, p.pid, fd, f"{ev.name} handed fd {fd} to its caller")
        fld = BORROW_INTENTS.get(ev.name)
        if fld:
            fd = fd_value(ev.args.get(fld))
            if fd is not None and fd >= 0:
                s = p.table.slots.get(fd)
                if s is not None:
                    s.note(f"passed to {ev.name} by", ev)
                self._hist(ev, p.pid, fd, f"passed to {ev.name}")

    def _on_clone(self, p: Proc, ev: Clone) -> None:
        child = ev.child if ev.child is not None else ev.ret
        if not ev.ok or child is None or child <= 0 or ev.pid is None:
            return
        if ev.thread:
            return                      # same process, same table
        c = self.procs.get(child)
        if c is not None and not c.ended and (c.table.slots or c.tids):
            # The child's own log came first (its start snapshot is the truth);
            # only lend it our creators for the numbers it holds.
            for n, s in c.table.slots.items():
                ps = p.table.slots.get(n)
                if ps is not None and s.origin in ("pre-existing", "unknown"):
                    c.table.slots[n] = ps.copy("inherited")
            return
        if ev.share_files:
            t = p.table
            t.users += 1
        else:
            t = p.table.copy("inherited")
            t.users = 1
        c = Proc(child, t, forked=True, blind=p.blind, complete=p.complete, first=False)
        self.procs[child] = c
        for n in t.slots:
            self._hist(ev, child, n, f"fd {n} inherited by child {child}")

    def _on_exec(self, p: Proc, ev: Exec) -> None:
        if ev.err is not None or ev.ret not in (0, None):
            return
        p.forked = False
        p.image += 1
        if ev.tid is not None:
            p.tids = {ev.tid}           # exec ends every other thread
        for n in [n for n, s in p.table.slots.items() if s.cloexec]:
            self._release(p, n, ev, "exec")
            self._hist(ev, p.pid, n, f"fd {n} closed by exec (close-on-exec)")

    def _on_snapshot(self, p: Proc, ev: FdSnapshot) -> None:
        snap = {int(k): v for k, v in ev.fds.items()}
        t = p.table
        if ev.when == "exit":
            p.exit_snapshot = True
            for n in [n for n in t.slots if n not in snap]:
                # closed by a call the hook cannot see (fclose, raw syscall)
                self._release(p, n, None, "unseen")
                self._hist(ev, p.pid, n, f"fd {n} absent from the exit snapshot: "
                           "closed by a call the capture could not see")
            for n, path in snap.items():
                if n not in t.slots:
                    self._install(p, ev, n, kind_of_path(path), "unknown", path=path,
                                  what=f"fd {n} open at exit, creator not in the trace")
                else:
                    self._use_path(t.slots[n], path)
            return
        p.complete = True                # every open fd is listed
        for n in [n for n in t.slots if n not in snap]:
            self._release(p, n, None, "unseen")
        for n, path in snap.items():
            s = t.slots.get(n)
            if s is None:
                self._install(p, ev, n, kind_of_path(path), "pre-existing", path=path,
                              what=f"fd {n} open when the capture started")
            else:
                self._use_path(s, path)

    @staticmethod
    def _use_path(s: Slot, path: str | None) -> None:
        if path and s.kind == "unknown":
            s.kind = kind_of_path(path)
            s.path = path
            s.gpu = s.gpu or s.kind in GPU_OBJECT_KINDS

    def _on_exit(self, p: Proc, ev: Exit) -> None:
        if ev.whole:
            self._end(p, ev, exited=True)
            return
        if ev.tid is not None:
            p.tids.discard(ev.tid)
            if not p.tids:
                self._end(p, ev, exited=True)

    def _on_info(self, p: Proc, ev: ProcessInfo) -> None:
        pass

    _handlers = {
        FdCreate: _on_create, Close: _on_close, CloseRange: _on_close_range,
        SetCloexec: _on_cloexec, Syscall: _on_syscall, Mmap: _on_mmap,
        Ioctl: _on_ioctl, Intent: _on_intent, Clone: _on_clone, Exec: _on_exec,
        FdSnapshot: _on_snapshot, Exit: _on_exit, ProcessInfo: _on_info,
    }

    # --- process end ----------------------------------------------------------

    def _end(self, p: Proc, ev: Event | None, exited: bool) -> None:
        if p.ended:
            return
        for key in [k for k in self._runs if k[0] == p.pid]:
            self._end_run(key)
        p.ended = True
        t = p.table
        t.users -= 1
        for li in self.listeners:
            li.on_process_end(p, ev, exited)
        if t.users <= 0:
            for s in sorted(t.slots.values(), key=lambda s: s.fd):
                self._leak(p, s, ev, exited)
                if self.all_fds and exited:
                    self._open_at_exit(p, s, ev)
        if self.procs.get(p.pid) is p:
            del self.procs[p.pid]

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        for key in list(self._runs):
            self._end_run(key)
        for p in list(self.procs.values()):
            self._end(p, None, exited=False)

    def _open_at_exit(self, p: Proc, s: Slot, ev: Event | None) -> None:
        """--all-fds: valgrind --track-fds's list of fds still open at exit,
        for the ones the program made itself (GPU objects are fd-leak's,
        device fds are held on purpose)."""
        if s.gpu or s.kind in GPU_OBJECT_KINDS or s.kind in DEVICE_KINDS or s.fd <= 2:
            return
        if s.origin in ("pre-existing", "inherited", "unknown") or s.root is None:
            return
        made = s.root
        msg = (f"{s.describe()} was still open when the process exited; it was opened by "
               f"{made.name} at {made.file}:{made.line}{at(made)}")
        evidence = [Evidence("created by", made, call_site(made))]
        if s.creator is not None and s.creator is not made:
            evidence.append(Evidence(f"{s.origin} by", s.creator, call_site(s.creator)))
        if ev is not None:
            evidence.append(Evidence("process exit", ev))
        self._emit(Finding(
            rule="fd-open-at-exit", message=msg, event=made,
            subject={"kind": "fd", "fd": s.fd, "fd_kind": s.kind},
            evidence=evidence, key=(s.kind, s.root_origin, getattr(made, "name", ""))))

    def _leak(self, p: Proc, s: Slot, ev: Event | None, exited: bool) -> None:
        if not (s.gpu or s.kind in GPU_OBJECT_KINDS):
            return
        if s.origin in ("pre-existing", "inherited"):
            return                      # given to this process, not made by it
        sev = "warning" if exited else "note"
        unknown = s.origin == "unknown"
        if unknown:
            sev = "note"
        end = ("when the process exited" if exited else
               "when the trace ended (no process exit was seen, so this is only a note)")
        msg = f"{s.describe()} was still open {end}"
        if s.last_use is not None:
            msg += f"; last used by {short(s.last_use)}"
        else:
            msg += "; it was never used after it was created"
        if self.describe_buffer:
            b = self.describe_buffer(p.pid, s)
            if b:
                msg += f"; it is {b}"
        if unknown:
            msg += ("; its creator is not in the trace (an strace log cannot show fds made "
                    "inside ioctl structs), so it may not have been made by this process")
        ev0 = s.root or s.creator
        evidence = []
        if s.root is not None:
            evidence.append(Evidence("created by", s.root))
        if s.creator is not None and s.creator is not s.root:
            evidence.append(Evidence(f"{s.origin} by", s.creator))
        if s.last_use is not None and s.last_use is not s.creator:
            evidence.append(Evidence("last used by", s.last_use))
        if ev is not None:
            evidence.append(Evidence("process exit", ev))
        offending = ev0 or s.last_use or ev
        self._emit(Finding(
            rule="fd-leak", message=msg, event=offending, severity=sev,
            subject={"kind": "fd", "fd": s.fd, "fd_kind": s.kind},
            evidence=evidence, key=(s.kind, s.root_origin, "exited" if exited else "trace-end"),
            details={"origin": s.root_origin, "exited": exited}))

    # --- findings -------------------------------------------------------------

    def _exhaustion(self, p: Proc, ev: Event) -> None:
        if p.exhaustion is not None:
            p.exhaustion.details["failed_calls"] += 1
            return
        counts: dict[str, int] = {}
        for s in p.table.slots.values():
            counts[s.kind] = counts.get(s.kind, 0) + 1
        order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        total = sum(counts.values())
        kinds = ", ".join(f"{n} {k}" for k, n in order) or "none visible"
        name = getattr(ev, "ioctl", None) or getattr(ev, "name", "call")
        msg = (f"{name} failed with {ev.err}: the fd table is full. "
               f"The trace shows {total} fds open at that moment: {kinds}")
        if order and order[0][1] * 2 > total:
            top = order[0][0]
            msg += f"; {top} fds fill it"
            if top == "dmabuf":
                msg += (" (dma-buf fds kept open per buffer: the VMM fd-per-handle design "
                        "stops at RLIMIT_NOFILE, ~1015 handles at the default 1024)")
        if ev.err == "ENFILE":
            msg += "; ENFILE is the system-wide limit, so other processes share the blame"
        evidence = [Evidence("first failing call", ev)]
        oldest = [s for s in p.table.slots.values() if s.kind == (order[0][0] if order else "")]
        if oldest:
            s0 = min(oldest, key=lambda s: (s.creator.seq if s.creator else -1, s.fd))
            if s0.creator is not None:
                evidence.append(Evidence(f"one of the {order[0][1]} {order[0][0]} fds "
                                         "was created by", s0.creator))
        p.exhaustion = self._emit(Finding(
            rule="fd-exhaustion", message=msg, event=ev, subject={"kind": "process"},
            evidence=evidence, key=(ev.err, order[0][0] if order else "unknown", name),
            details={"open_by_kind": dict(order), "open": total, "failed_calls": 1}))

    def _bad_close(self, p: Proc, ev: Close) -> None:
        fd = ev.fd
        t = p.table
        s = t.slots.get(fd)
        if s is not None:
            # The model thought it open: a close the trace cannot see (fclose,
            # raw syscall) came first.  The kernel's EBADF is the proof.
            self._release(p, fd, None, "unseen")
            c = t.closed.get(fd)
            self._double_close(p, ev, fd, c)
            return
        c = t.closed.get(fd)
        if c is None:
            self._bad_fd(p, ev, fd)
            return
        self._double_close(p, ev, fd, c)
        if c is not None and c.how == "close" and c.event is not None:
            self._reused_by_ebadf(p, ev, fd, c)

    def _double_close(self, p: Proc, ev: Event, fd: int, c: Closed | None) -> None:
        name = ev.name if ev.name != "close" else "close"
        call = (f"close_range({ev.first}, {ev.last})" if isinstance(ev, CloseRange)
                else f"{name}({fd})")
        evidence = [Evidence("this close", ev, call_site(ev))]
        failed = f"{call} failed with EBADF" if ev.err == "EBADF" else \
            f"{call} closes fd {fd} again"
        if c is None:
            msg = (f"{failed}: fd {fd} was not open (no earlier close is visible; "
                   "it was never created in this trace or was closed by a call the trace "
                   "cannot see)")
            key = ("bad-close", "never-seen", name)
            kind = "unknown"
        else:
            s = c.slot
            kind = s.kind
            if c.how == "exec":
                msg = (f"{failed}: fd {fd} ({s.kind}) was closed by {short(c.event)} "
                       "because it had close-on-exec set; an fd meant to survive exec was "
                       "opened with O_CLOEXEC, or this close is stale")
            elif c.how == "unseen" or c.event is None:
                msg = (f"{failed}: {s.describe()} had already been closed by a call the "
                       "trace cannot see (fclose, closedir, a raw syscall); two owners "
                       "close this fd")
            else:
                how = {"close_range": "close_range", "dup2": "dup2/dup3 onto it"}.get(c.how, "close")
                msg = (f"{failed}: {s.describe()} was already closed by {how} at "
                       f"{c.event.file}:{c.event.line}{at(c.event)} and nothing "
                       "re-created it. This close is at "
                       f"{ev.file}:{ev.line}{at(ev)}. The first close may be the "
                       "culprit: whoever closed it first may not have owned it")
                evidence.append(Evidence("previous close", c.event, call_site(c.event)))
            if s.root is not None:
                evidence.append(Evidence("originally created by", s.root, call_site(s.root)))
            if s.creator is not None and s.creator is not s.root:
                evidence.append(Evidence(f"{s.origin} by", s.creator, call_site(s.creator)))
            for role, nev in s.notable:
                evidence.append(Evidence(role, nev, call_site(nev)))
            if self.describe_buffer:
                b = self.describe_buffer(p.pid, s)
                if b:
                    msg += f". The fd is {b}"
            handed = [nev for role, nev in s.notable if role.startswith("handed")]
            if handed:
                msg += (f". {short(handed[0])} handed this fd to its caller, so two owners "
                        "(the application and the runtime) each close it")
            key = ("double-close", s.kind, s.root_origin, c.how, name)
        # order the story as it happened: creation, imports, closes
        evidence.sort(key=lambda e: (e.event.time if e.event.time is not None else 0,
                                     e.event.seq, e.event.line))
        self._emit(Finding(
            rule="fd-double-close", message=msg, event=ev,
            subject={"kind": "fd", "fd": fd, "fd_kind": kind},
            evidence=evidence, key=key))
        self._hist(ev, p.pid, fd, f"{call} of a closed fd: double close")

    def _bad_use(self, p: Proc, ev: Event, fd: int, never_seen_ok: bool = False) -> None:
        t = p.table
        c = t.closed.get(fd)
        s = t.slots.get(fd)
        name = getattr(ev, "ioctl", None) or ev.name
        if s is not None:
            if getattr(ev, "name", "") in MODE_EBADF and not isinstance(ev, Ioctl):
                # EBADF here may only mean the wrong open mode, or another
                # thread's close that completes later (its number is gone
                # at entry): the close decides (_racing_use)
                if s.racing is None:
                    s.racing = ev
                return
            self._release(p, fd, None, "unseen")
            msg = (f"{name} on fd {fd} failed with EBADF: {s.describe()} was open in the "
                   "model, so a close the trace cannot see (fclose, a raw syscall) ended it "
                   "before this use")
            key = ("use-after-close", s.kind, s.root_origin, name, "unseen-close")
            kind = s.kind
            evidence = [Evidence("this use", ev, call_site(ev))]
            if s.root is not None:
                evidence.append(Evidence("created by", s.root, call_site(s.root)))
        elif c is not None:
            s = c.slot
            kind = s.kind
            msg = (f"{name} on fd {fd} failed with EBADF: {s.describe()} was closed by "
                   f"{short(c.event)}{at(c.event)} and nothing re-created it")
            if s.last_use is not None and s.last_use is not c.event:
                msg += f"; its last successful use was {short(s.last_use)}"
            key = ("use-after-close", s.kind, s.root_origin, name, c.how)
            evidence = [Evidence("this use", ev, call_site(ev))]
            if c.event is not None:
                evidence.append(Evidence("closed by", c.event, call_site(c.event)))
            if s.root is not None:
                evidence.append(Evidence("created by", s.root, call_site(s.root)))
        else:
            if never_seen_ok:
                self._bad_fd(p, ev, fd)
            return
        self._emit(Finding(rule="fd-use-after-close", message=msg, event=ev,
                           subject={"kind": "fd", "fd": fd, "fd_kind": kind},
                           evidence=evidence, key=key))
        self._hist(ev, p.pid, fd, f"{name} failed with EBADF: use after close")
        if c is not None and c.how == "close" and c.event is not None:
            self._reused_by_ebadf(p, ev, fd, c)

    def _bad_fd(self, p: Proc, ev: Event, fd: int) -> None:
        """fd-bad-fd: EBADF for a number that was never an open fd.  A
        negative number is wrong whatever the trace saw; a never-seen one
        only where the trace saw the process from its start (execve, a
        preload start snapshot) and outside a child between fork and exec.
        Elsewhere it is a note: the number may have been opened and closed
        before the trace began."""
        name = getattr(ev, "ioctl", None) or ev.name
        call = f"{name}({fd})" if isinstance(ev, Close) else f"{name} on fd {fd}"
        if fd < 0 and isinstance(ev, Close):
            # close(-1) is a no-op that correct programs do all the time (a
            # cleanup path closing an fd variable that was never set: dash in a
            # pipeline, rocminfo at exit); nothing was lost, so only a note
            sev, why = "note", (f"{fd} is not an fd number: the close of an fd variable "
                                "reset to -1 (or never set) does nothing")
            sort = "negative-close"
        elif fd < 0:
            sev, why = "warning", (f"{fd} is not an fd number: an fd variable reset to -1 "
                                   "(or an error return) was used as an fd anyway")
            sort = "negative"
        elif p.complete and not p.forked:
            sev, why = "warning", (f"fd {fd} was never open in this process: the trace saw "
                                   "it from its start and nothing created that number "
                                   "(a stale or uninitialised fd variable)")
            sort = "never-open"
        else:
            sev = "note"
            why = (f"the trace never saw fd {fd} open, but it "
                   + ("is a child between fork and execve, where closing numbers that may "
                      "be inherited is normal" if p.forked else
                      "did not see this process start, so the number may have been opened "
                      "and closed before the trace began"))
            sort = "never-seen"
        self._emit(Finding(
            rule="fd-bad-fd", severity=sev, message=f"{call} failed with EBADF: {why}",
            event=ev, subject={"kind": "fd", "fd": fd, "fd_kind": "unknown"},
            evidence=[Evidence("this call", ev, call_site(ev))],
            key=("bad-fd", sort, name)))
        self._hist(ev, p.pid, fd, f"{name} failed with EBADF: not an open fd")

    def _racing_use(self, p: Proc, s: Slot, close: Close) -> None:
        """A read/write that got EBADF while the model had the fd open, then a
        close of it by another thread that began before that call ended.
        close() takes the number out of the table first and finishes later
        (strace prints it unfinished around the other thread's call), so the
        EBADF proves the close came first: a use after close on another
        thread.  A close that began after the call ended says nothing: the
        EBADF was the open mode's."""
        use, s.racing = s.racing, None
        if use.tid == close.tid or use.pid != close.pid:
            return
        if use.time is not None and close.time is not None and use.dur is not None:
            if close.time > use.end:
                return
        elif use.file == close.file:
            # no durations: the close must be printed before the use
            # finished (its entry line before the use's last line)
            if close.line > (use.end_line or use.line):
                return
        elif use.time is None or close.time is None or close.time > use.time:
            return
        name = use.name
        msg = (f"{name} on fd {s.fd} failed with EBADF on thread {use.tid}: another thread "
               f"({close.tid}) was closing {s.describe()} at {close.file}:{close.line}"
               f"{at(close)}; the calls overlap, and the EBADF shows the close took the "
               "number first. A use after close across threads")
        evidence = [Evidence("this use", use, call_site(use)),
                    Evidence("closed by", close, call_site(close))]
        if s.root is not None:
            evidence.append(Evidence("created by", s.root, call_site(s.root)))
        evidence.sort(key=lambda e: (e.event.time if e.event.time is not None else 0,
                                     e.event.seq, e.event.line))
        self._emit(Finding(rule="fd-use-after-close", message=msg, event=use,
                           subject={"kind": "fd", "fd": s.fd, "fd_kind": s.kind},
                           evidence=evidence,
                           key=("use-after-close", s.kind, s.root_origin, name,
                                "concurrent-close")))
        self._hist(use, p.pid, s.fd, f"{name} failed with EBADF: another thread's close")

    def _ioctl_ebadf(self, p: Proc, ev: Ioctl, inner: int | None) -> None:
        t = p.table
        outer = ev.fd
        cand = [fd for fd in (outer, inner) if fd is not None and fd >= 0]
        closed = [fd for fd in cand if fd not in t.slots and fd in t.closed]
        if closed:
            self._bad_use(p, ev, closed[0])
            return
        outer_open = outer in t.slots or bool(ev.path)
        if inner is not None and inner >= 0:
            if outer_open:
                # the driver answered, so the device fd was fine: the inner fd is bad
                self._bad_use(p, ev, inner, never_seen_ok=True)
            elif inner in t.slots and outer >= 0:
                self._bad_use(p, ev, outer, never_seen_ok=True)
            return
        if outer_open:
            return      # the bad fd may be inside a struct the trace does not show
        if outer >= 0:
            self._bad_use(p, ev, outer, never_seen_ok=True)

    # fd-close-reused ------------------------------------------------------------

    def _check_reused(self, p: Proc, s: Slot, ev: Close) -> bool:
        """Stack evidence at close time: the close comes from the old
        occupant's code and from nothing the new occupant ran."""
        prev = s.prev
        if prev is None or not ev.stack or s.creator is None or not s.creator.stack:
            return False
        old = prev.slot
        if old.root_origin == s.root_origin and old.kind == s.kind:
            return False                 # same kind of owner: stacks cannot tell them apart
        # The owners (SPEC 4.1): the component of each creating call's
        # innermost frame.  The close belongs to the new fd when it runs in
        # the new owner's component or shares a function with the code that
        # created or used the new fd (its two innermost frames only: deeper
        # ones reach main() and everything shares that).  It belongs to the
        # old fd when its component made, used or closed the old one.
        new_owner = _owner(s.creator)
        close_comp = _owner(ev)
        if close_comp is None or new_owner is None or close_comp == new_owner:
            return False
        shared = _shared_callers(old, s)
        close_funcs = _funcs(ev.stack, 2) - shared
        new_funcs = _funcs(s.creator.stack)
        if s.last_use is not None and s.last_use not in (s.creator, ev):
            # (a -y decorated close counts as the slot's last use: not itself)
            new_funcs |= _funcs(s.last_use.stack)
        if close_funcs & new_funcs:
            return False
        # (the old fd's close is not its owner: whoever closed it first may
        # not have owned it)
        old_events = [e for e in (old.root, old.creator, old.last_use)
                      if e is not None and e is not prev.event]
        old_comps: set = set()
        old_funcs: set = set()
        for e in old_events:
            old_comps |= _comps(e.stack)
            old_funcs |= _funcs(e.stack)
        if close_comp not in old_comps and not close_funcs & old_funcs:
            return False
        if _owner(old.root or old.creator) == new_owner:
            return False                 # one owner made both: the stacks cannot tell
        hit = {close_comp}
        self._reused(p, ev, s, prev, f"its call stack{at(ev)} is in "
                     f"{', '.join(sorted(hit))}, the code that created and used the old fd, "
                     f"and shares no frame with the code that created the new one"
                     f"{at(s.creator)}", None)
        return True

    def _reused_by_ebadf(self, p: Proc, ev: Event, fd: int, c: Closed) -> None:
        """A later EBADF by the new occupant's own code: the close that ended
        it was meant for the previous occupant."""
        s = c.slot
        prev = s.prev
        if prev is None or s.creator is None or c.flagged:
            return
        if not ev.stack or not c.event.stack or not s.creator.stack:
            return                       # without stacks the owners cannot be told apart
        # the EBADF comes from the new fd's owner: its component, or a
        # function of the code that created or used the new fd
        new_owner = _owner(s.creator)
        shared = _shared_callers(prev.slot, s)
        mine = _funcs(ev.stack, 3) - shared
        last = s.last_use if s.last_use is not c.event else None   # a decorated close
        owner = (_funcs(s.creator.stack) | (_funcs(last.stack) if last else set())) - shared
        closer = _funcs(c.event.stack, 3) - shared
        closer_comp = _owner(c.event)
        if not (mine & owner or _owner(ev) == new_owner):
            return
        if closer & owner or closer & mine or closer_comp == new_owner:
            return
        # ...and the closing code must be tied to the previous occupant, else
        # this is a plain use-after-close (another thread closed it on purpose)
        old = prev.slot
        old_funcs: set = set()
        old_comps: set = set()
        for e in (old.root, old.creator, old.last_use):
            if e is not None and e is not prev.event:
                old_funcs |= _funcs(e.stack)
                old_comps |= _comps(e.stack)
        if not (closer & old_funcs or closer_comp in old_comps):
            return
        c.flagged = True
        self._reused(p, c.event, s, prev, f"the new fd's owner{at(ev)} later got "
                     f"EBADF at {ev.file}:{ev.line}, so it never closed it itself", ev)

    def _reused(self, p: Proc, ev: Event, s: Slot, prev: Closed, why: str,
                later: Event | None) -> None:
        old = prev.slot
        msg = (f"close({s.fd}) at {ev.file}:{ev.line} closed {s.describe()}, but it was "
               f"meant for the fd that held number {s.fd} before ({old.kind}, created by "
               f"{short(old.root or old.creator)}, closed by {short(prev.event)}): {why}. "
               "fdsan's wrong owner: the close of a stale number took a bystander's fd")
        evidence = [Evidence("this close", ev, call_site(ev))]
        if prev.event is not None:
            evidence.append(Evidence("the old fd was closed by", prev.event, call_site(prev.event)))
        if old.root is not None:
            evidence.append(Evidence("the old fd was created by", old.root, call_site(old.root)))
        if s.root is not None:
            evidence.append(Evidence("the new fd was created by", s.root, call_site(s.root)))
        if later is not None:
            evidence.append(Evidence("the new owner's later EBADF", later, call_site(later)))
        self._emit(Finding(
            rule="fd-close-reused", message=msg, event=ev,
            subject={"kind": "fd", "fd": s.fd, "fd_kind": s.kind},
            evidence=evidence, key=(old.kind, old.root_origin, s.kind, s.root_origin,
                                    "ebadf" if later is not None else "stack")))
        self._hist(ev, p.pid, s.fd, "this close was meant for the previous fd (wrong owner)")
