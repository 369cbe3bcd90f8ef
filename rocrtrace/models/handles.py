"""The buffer-handle model: KFD handles per process and GEM handles per open
file description of a DRM node (SPEC §4.2), and the dma-buf identity of
exported fds (rocrtrace.models.dmabuf).

bo-double-free is raised only on the kernel's own word: FREE_MEMORY_OF_GPU
and GEM_CLOSE answer EINVAL for a handle that is not live, so a second free is
visible in the result.  A free the kernel accepted proves the handle was live,
whatever the model believed (a creator it does not decode: IPC import, CRIU).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from .. import kfd
from ..parse.pyevents import Event, Ioctl
from ..findings import Evidence, Finding
from . import Model
from .dmabuf import Buffer, DmabufTracker, merge
from .fds import FdModel, Slot, at, call_site, fd_value, short

FREED_MEMORY = 4096          # freed handles remembered per model (bounded)

AMDGPU_GEM_CREATE = "DRM_IOCTL_AMDGPU_GEM_CREATE"
XDNA_CREATE_BO = "DRM_IOCTL_AMDXDNA_CREATE_BO"


def ioctl_name(ev: Ioctl, slot: Slot | None = None) -> str | None:
    """The canonical name; DRM driver numbers are shared between amdgpu and
    XDNA, so the fd's kind decides when the parser left the name out."""
    if ev.ioctl:
        return ev.ioctl
    path = ev.path
    if path is None and slot is not None:
        path = {"accel": "/dev/accel/", "drm-render": "/dev/dri/"}.get(slot.kind, slot.path)
    return kfd.ioctl_name(ev.type, ev.nr, path)


def _int(d, k) -> int | None:
    if not isinstance(d, dict):
        return None
    v = d.get(k)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(slots=True, eq=False)
class Handle:
    handle: int
    created: Event
    how: str                               # the creating ioctl's name
    buffer: Buffer
    scope: str                             # "process 42" / "/dev/accel/accel0 (fd 5)"
    imports: list = field(default_factory=list)   # imports that returned this same handle


class HandleModel(Model):
    """``HandleModel(fds)``: fed after (or instead of) the FdModel it reads;
    feeding the same event to both is safe."""

    def __init__(self, fds: FdModel | None = None, *, watch=None, reexport_threshold: int = 3,
                 held_allocs: int = 8, held_seconds: float = 10.0, peak_min: int = 32) -> None:
        super().__init__()
        self.fds = fds if fds is not None else FdModel(watch=watch)
        self.fds.listeners.append(self)
        self.fds.describe_buffer = self.describe_fd
        self.dmabuf = DmabufTracker(self._emit, reexport_threshold=reexport_threshold,
                                    held_allocs=held_allocs, held_seconds=held_seconds,
                                    peak_min=peak_min)
        self.kfd_live: dict = {}               # (pid, handle) -> Handle
        self.gem_live: dict = {}               # (scope key, handle) -> Handle
        self.freed: OrderedDict = OrderedDict()   # key -> (Handle | None, free event)
        self._finished = False

    @property
    def history(self):
        return self.fds.history

    def _emit(self, f: Finding) -> Finding:
        self.findings.append(f)
        return f

    # fd model listener ----------------------------------------------------------

    def on_fd_open(self, proc, slot, ev) -> None:
        self.dmabuf.fd_open(proc, slot, ev)

    def on_fd_release(self, proc, slot, ev, how) -> None:
        self.dmabuf.fd_release(proc, slot, ev, how)

    def on_process_end(self, proc, ev, exited) -> None:
        slots = list(proc.table.slots.values()) if proc.table.users <= 0 else []
        self.dmabuf.process_end(proc, ev, exited, slots)
        for k in [k for k in self.kfd_live if k[0] == ("kfd", proc.pid)]:
            del self.kfd_live[k]
        if proc.table.users <= 0:
            # GEM handles die with the last fd of their DRM file description
            gone = {("ofd", s.ofd) for s in slots} | {("ofd", s.ofd) for s in
                                                       proc.table.slots.values()}
            for k in [k for k in self.gem_live if k[0] in gone or
                      (k[0][0] == "fd" and k[0][1] == proc.pid)]:
                del self.gem_live[k]

    def describe_fd(self, pid, slot: Slot) -> str | None:
        buf = self.dmabuf.buffer_of(slot)
        if buf is None:
            return None
        s = f"the dma-buf of {buf.label}"
        if buf.created is not None:
            s += f" (created by {short(buf.created)})"
        return s

    # feed ----------------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        self.fds.feed(ev)
        if not isinstance(ev, Ioctl) or ev.type is None:
            return
        key = (ev.type, ev.nr)
        if key not in _INTERESTING:
            return
        pid = ev.pid
        dev = self.fds.lookup(pid, ev.fd)
        name = ioctl_name(ev, dev)
        arg = ev.arg if isinstance(ev.arg, dict) else None
        out = ev.out if isinstance(ev.out, dict) else None
        if key == kfd.ALLOC_MEMORY_OF_GPU:
            h = _int(out, "handle")
            if ev.ok and h is not None:
                self._create(("kfd", pid), h, ev, name, f"process {pid}", None)
        elif key == kfd.IMPORT_DMABUF:
            h = _int(out, "handle")
            if ev.ok and h is not None:
                src = self.fds.lookup(pid, fd_value(arg.get("dmabuf_fd")) if arg else -1)
                self._create(("kfd", pid), h, ev, name, f"process {pid}",
                             self.dmabuf.buffer_of(src))
        elif key == kfd.FREE_MEMORY_OF_GPU:
            h = _int(arg, "handle")
            if h is not None:
                self._free(("kfd", pid), h, ev, name, f"process {pid}")
        elif key == kfd.EXPORT_DMABUF:
            self._export(("kfd", pid), _int(arg, "handle"), ev, fd_value(out.get("dmabuf_fd"))
                         if out else None, "KFD")
        elif name in (AMDGPU_GEM_CREATE, XDNA_CREATE_BO):
            h = _int(out, "handle")
            if ev.ok and h is not None:
                self._create(self._scope(pid, ev, dev), h, ev, name, self._where(ev, dev), None)
        elif key == kfd.PRIME_FD_TO_HANDLE:
            h = _int(out, "handle")
            if ev.ok and h is not None:
                src = self.fds.lookup(pid, fd_value(arg.get("fd")) if arg else -1)
                self._create(self._scope(pid, ev, dev), h, ev, name, self._where(ev, dev),
                             self.dmabuf.buffer_of(src))
        elif key == kfd.PRIME_HANDLE_TO_FD:
            self._export(self._scope(pid, ev, dev), _int(arg, "handle"), ev,
                         fd_value(out.get("fd")) if out else None, "GEM")
        elif key == kfd.GEM_CLOSE:
            h = _int(arg, "handle")
            if h is not None:
                self._free(self._scope(pid, ev, dev), h, ev, name, self._where(ev, dev))

    @staticmethod
    def _scope(pid, ev: Ioctl, dev: Slot | None):
        # GEM handles belong to the open file description: dup and fork share it
        return ("ofd", dev.ofd) if dev is not None else ("fd", pid, ev.fd)

    @staticmethod
    def _where(ev: Ioctl, dev: Slot | None) -> str:
        path = ev.path or (dev.path if dev else None) or "a DRM node"
        return f"{path} (fd {ev.fd})"

    def _note_history(self, ev: Event, text: str) -> None:
        h = self.fds.history
        if h and h[-1][0] is ev:
            e = h[-1]
            h[-1] = (e[0], f"{e[1]}; {text}", *e[2:])

    # handle lifecycle -------------------------------------------------------------

    def _create(self, scope, h: int, ev: Ioctl, name: str | None, where: str,
                src: Buffer | None) -> None:
        table = self.kfd_live if scope[0] == "kfd" else self.gem_live
        key = (scope, h)
        self.freed.pop(key, None)
        ent = table.get(key)
        if ent is not None:
            # Importing a buffer this file already holds returns its handle:
            # no new object, and one GEM_CLOSE will end both users.
            if len(ent.imports) < 3:
                ent.imports.append(ev)
            ent.buffer = merge(ent.buffer, src)
            return
        kindlabel = "KFD handle" if scope[0] == "kfd" else "GEM handle"
        buf = src.resolve() if src is not None else Buffer(
            f"{kindlabel} {h:#x}", f"{h:#x}", ev.pid, ev)
        table[key] = Handle(h, ev, name or "ioctl", buf, where)
        src_fd = None
        if isinstance(ev.arg, dict):
            src_fd = fd_value(ev.arg.get("fd", ev.arg.get("dmabuf_fd")))
        if src_fd is not None and self.fds._watched(ev.pid, src_fd):
            self._note_history(ev, f"imported as {kindlabel} {h:#x} ({buf.label})")

    def _export(self, scope, h: int | None, ev: Ioctl, fd: int | None, family: str) -> None:
        if not ev.ok or h is None:
            return
        table = self.kfd_live if scope[0] == "kfd" else self.gem_live
        ent = table.get((scope, h))
        if ent is None:
            # created before the trace or by a call we do not decode
            buf = Buffer(f"{family} handle {h:#x}", f"{h:#x}", ev.pid, None)
            table[(scope, h)] = ent = Handle(h, ev, "unknown", buf, "")
        slot = self.fds.lookup(ev.pid, fd) if fd is not None and fd >= 0 else None
        self.dmabuf.exported(ent.buffer, ev, slot)
        ent.buffer = ent.buffer.resolve()
        if fd is not None and self.fds._watched(ev.pid, fd):
            self._note_history(ev, f"the dma-buf of {ent.buffer.label} "
                               f"(export #{ent.buffer.exports})")

    def _free(self, scope, h: int, ev: Ioctl, name: str | None, where: str) -> None:
        table = self.kfd_live if scope[0] == "kfd" else self.gem_live
        key = (scope, h)
        if ev.ok:
            ent = table.pop(key, None)
            self.freed[key] = (ent, ev)
            self.freed.move_to_end(key)
            while len(self.freed) > FREED_MEMORY:
                self.freed.popitem(last=False)
            return
        if ev.err in ("EBUSY", "EINTR", "EAGAIN", "ERESTARTSYS", "EPERM"):
            return                    # still live (mapped, interrupted, the signal BO)
        prior = self.freed.get(key)
        if ev.err == "EINVAL":
            if key in table:
                # The kernel does not know a handle the model thinks live: it
                # was freed where the trace cannot see.  Nothing to prove here.
                ent = table.pop(key)
                self.freed[key] = (ent, None)
                return
            self._double_free(scope, h, ev, name, where, prior)
        elif ev.ret is None and prior is not None:
            self._double_free(scope, h, ev, name, where, prior)

    def _double_free(self, scope, h: int, ev: Ioctl, name: str | None, where: str,
                     prior) -> None:
        name = name or "ioctl"
        gem = scope[0] != "kfd"
        what = f"{'GEM' if gem else 'KFD'} handle {h:#x}"
        res = f"failed with {ev.err}" if ev.err else "returned nothing the trace shows"
        msg = f"{name}({what}) on {where} {res}: "
        evidence = [Evidence("this free", ev, call_site(ev))]
        ent, prev = prior if prior is not None else (None, None)
        if prev is not None:
            msg += (f"the handle was already {'closed' if gem else 'freed'} by "
                    f"{short(prev)}{at(prev)} and nothing re-created it "
                    f"{'in this DRM file' if gem else 'in this process'}")
            evidence.append(Evidence("previous free", prev, call_site(prev)))
        else:
            msg += (f"the {'DRM file' if gem else 'process'} holds no such handle "
                    "(no earlier free is visible: it was never created in this trace, or "
                    "freed by a call the trace cannot see)")
        selfimport = False
        if ent is not None:
            if ent.how != "unknown":
                msg += f". It was created by {short(ent.created)}"
                evidence.append(Evidence("created by", ent.created, call_site(ent.created)))
            if ent.imports:
                selfimport = True
                imp = ent.imports[0]
                msg += (f"; {short(imp)} imported a buffer this file already held and got "
                        f"the same handle {h:#x} back (one handle per buffer per DRM file), so "
                        "one GEM_CLOSE ended the owner's and the importer's handle alike: "
                        "the importer must not GEM_CLOSE a handle it does not own")
                for imp in ent.imports:
                    evidence.append(Evidence("import returned the same handle", imp,
                                             call_site(imp)))
        msg += ". The first free may be the culprit: both call sites are shown"
        evidence.sort(key=lambda e: (e.event.time if e.event.time is not None else 0,
                                     e.event.seq, e.event.line))
        self._emit(Finding(
            rule="bo-double-free", message=msg, event=ev,
            subject={"kind": "handle", "handle": f"{h:#x}"}, evidence=evidence,
            key=(name, ent.how if ent else "unknown",
                 "self-import" if selfimport else "plain",
                 "known" if prev is not None else "never-seen")))

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self.fds.finish()


_INTERESTING = {kfd.ALLOC_MEMORY_OF_GPU, kfd.IMPORT_DMABUF, kfd.FREE_MEMORY_OF_GPU,
                kfd.EXPORT_DMABUF, kfd.PRIME_FD_TO_HANDLE, kfd.PRIME_HANDLE_TO_FD,
                kfd.GEM_CLOSE, kfd.AMDGPU_GEM_CREATE, kfd.XDNA_CREATE_BO}
