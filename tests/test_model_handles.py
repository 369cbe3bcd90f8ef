"""The core's handle and dma-buf models with their fd model (rocrtrace._engine.FdModels):
the ROCm VMM (hsa_amd_vmem_*) and XDNA buffer-object scenarios, built as event
streams (no files)."""

from __future__ import annotations

from rocrtrace import kfd

from coremodels import Fds, same
from vocab import Close, Exit, FdCreate, FdSnapshot, Frame, Intent, Ioctl

O_CLOEXEC = 0o2000000
DRM_RDWR = 2
PID = 300


def stk(*specs):
    frames = [Frame(module="/lib/x86_64-linux-gnu/libc.so.6", symbol="ioctl", addr=0x1)]
    for i, sp in enumerate(specs):
        mod, fn = sp.split("!")
        frames.append(Frame(module=f"/opt/rocm/lib/{mod}", symbol=fn, addr=0x100 + i))
    return tuple(frames)


RT = stk("libhsa-runtime64.so!DestroyMemoryHandle", "libhsa-runtime64.so!hsa_amd_vmem_handle_release", "app!main")
APP = stk("app!main")


class Trace:
    """Builds a process's events with the kernel's lowest-free fd numbers."""

    def __init__(self, pid=PID, preopen=None):
        self.pid = pid
        self.seq = 0
        self.open: set[int] = set()
        self.events: list = []
        snap = preopen or {0: "/dev/pts/0", 1: "/dev/pts/0", 2: "/dev/pts/0"}
        self.open |= set(snap)
        self._add(FdSnapshot(when="start", fds=dict(snap), **self._b()))

    def _b(self, stack=(), **kw):
        self.seq += 1
        d = dict(
            file="h.log",
            line=self.seq,
            seq=self.seq,
            time=2000.0 + self.seq * 1e-4,
            dur=1e-5,
            pid=self.pid,
            tid=self.pid,
            stack=stack,
            text=f"ev {self.seq}",
        )
        d.update(kw)
        return d

    def _add(self, ev):
        self.events.append(ev)
        return ev

    def low(self):
        return next(n for n in range(1 << 20) if n not in self.open)

    def openf(self, path):
        fd = self.low()
        self.open.add(fd)
        self._add(FdCreate(name="openat", origin="open", fds=(fd,), paths=(path,), cloexec=True, **self._b(ret=fd)))
        return fd

    def close(self, fd, stack=(), err=None):
        if err is None:
            self.open.discard(fd)
        return self._add(Close(fd=fd, **self._b(ret=-1 if err else 0, err=err, stack=stack)))

    def ioctl(self, fd, name, arg=None, out=None, ret=0, err=None, path=None, stack=()):
        d, t, nr, size = kfd.REQUEST_BY_NAME[name]
        return self._add(
            Ioctl(
                fd=fd,
                path=path,
                request=kfd.ioc(d, t, nr, size),
                dir=d,
                type=t,
                nr=nr,
                size=size,
                ioctl=name,
                arg=arg,
                out=out,
                **self._b(ret=-1 if err else ret, err=err, stack=stack),
            )
        )

    def newfd_ioctl(self, fd, name, arg, field, stack=()):
        nfd = self.low()
        self.open.add(nfd)
        self.ioctl(fd, name, arg, {field: nfd}, stack=stack)
        return nfd

    def intent(self, name, args=None, outs=None, ret=0):
        return self._add(Intent(name=name, args=args or {}, outs=outs or {}, **self._b(ret=ret)))

    # KFD / DRM helpers
    def alloc(self, kfd_fd, h):
        self.ioctl(
            kfd_fd,
            "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
            {"va_addr": 0, "size": 0x200000, "gpu_id": 0x1A2B, "flags": 1},
            {"handle": h, "mmap_offset": 0},
        )

    def export(self, kfd_fd, h, stack=()):
        return self.newfd_ioctl(
            kfd_fd, "AMDKFD_IOC_EXPORT_DMABUF", {"handle": h, "flags": O_CLOEXEC}, "dmabuf_fd", stack
        )

    def prime_to_fd(self, drm_fd, h, flags=O_CLOEXEC | DRM_RDWR, stack=()):
        return self.newfd_ioctl(drm_fd, "DRM_IOCTL_PRIME_HANDLE_TO_FD", {"handle": h, "flags": flags}, "fd", stack)

    def fd_to_handle(self, drm_fd, fd, h):
        self.ioctl(drm_fd, "DRM_IOCTL_PRIME_FD_TO_HANDLE", {"fd": fd}, {"handle": h})

    def gem_close(self, drm_fd, h, err=None, stack=()):
        return self.ioctl(drm_fd, "DRM_IOCTL_GEM_CLOSE", {"handle": h}, err=err, stack=stack)

    def exit(self):
        snap = {n: "x" for n in self.open}
        self._add(FdSnapshot(when="exit", fds=snap, **self._b()))
        self._add(Exit(whole=True, status=0, **self._b()))


class _Handles:
    """The handle model's side of the stack: its findings."""

    def __init__(self, m: Fds):
        self.findings = m.handle_findings


def replay(events, **kw):
    """(the fd model's side, the handle model's side) of the models analyze
    stacks, after the events and the trace's end."""
    m = Fds(handles=True, **kw)
    for ev in events:
        m.feed(ev)
    m.finish()
    return m, _Handles(m)


def all_findings(fds, hm):
    return fds.findings + hm.findings


def rules(fds, hm):
    return sorted(f.rule for f in all_findings(fds, hm))


# --- VMM V2: the fd-per-handle design -----------------------------------------------------


def vmm_v2_create(t, kfd_fd, render, h, g):
    """handle_create (V2): export, import, close, then keep a re-exported fd."""
    t.alloc(kfd_fd, h)
    f1 = t.export(kfd_fd, h)
    t.fd_to_handle(render, f1, g)
    t.close(f1)
    keep = t.prime_to_fd(render, g)
    t.intent("hsa_amd_vmem_handle_create", {"size": 0x200000}, {"memory_handle": h})
    return keep


def test_vmm_v2_fd_per_handle_exhausts_the_table():
    # 0-2 std, kfd, render and four others: 1015 numbers left under RLIMIT_NOFILE 1024
    t = Trace(
        preopen={0: "/dev/pts/0", 1: "/dev/pts/0", 2: "/dev/pts/0", 5: "/etc/a", 6: "/etc/b", 7: "/etc/c", 8: "/etc/d"}
    )
    kfd_fd = t.openf("/dev/kfd")
    render = t.openf("/dev/dri/renderD128")
    kept = []
    for i in range(1015):
        kept.append(vmm_v2_create(t, kfd_fd, render, 0x66A400000000 + i, 0x10 + i))
    assert len(t.open) == 1024
    t.alloc(kfd_fd, 0x66A400100000)
    t.ioctl(kfd_fd, "AMDKFD_IOC_EXPORT_DMABUF", {"handle": 0x66A400100000, "flags": O_CLOEXEC}, err="EMFILE")
    fds, hm = replay(t.events)
    ex = [f for f in fds.findings if f.rule == "fd-exhaustion"]
    assert len(ex) == 1
    assert ex[0].details["open_by_kind"]["dmabuf"] == 1015
    assert "1015 dmabuf" in ex[0].message and "fd-per-handle" in ex[0].message
    peak = [f for f in hm.findings if f.rule == "fd-held-open" and f.subject == {"kind": "process"}]
    assert len(peak) == 1
    assert peak[0].details["peak"] == 1015
    assert 0.9 <= peak[0].details["fds_per_allocation"] <= 1.1
    assert "fd-per-handle" in peak[0].message
    # the trace ends without an exit: the kept fds are leak notes, never errors
    assert not [f for f in all_findings(fds, hm) if f.severity == "error" and f.rule != "fd-exhaustion"]
    assert {f.severity for f in fds.findings if f.rule == "fd-leak"} == {"note"}


def test_vmm_v2_export_double_close_across_app_and_runtime():
    t = Trace()
    kfd_fd = t.openf("/dev/kfd")
    render = t.openf("/dev/dri/renderD128")
    keep = vmm_v2_create(t, kfd_fd, render, 0x66A400000013, 0x21)
    hand = t.intent("hsa_amd_vmem_export_shareable_handle", {"handle": 0x66A400000013}, {"dmabuf_fd": [keep]})
    app_close = t.close(keep, stack=APP)
    rt_close = t.close(keep, stack=RT, err="EBADF")
    t.exit()
    fds, hm = replay(t.events)
    assert rules(fds, hm) == ["fd-double-close"]
    (f,) = fds.findings
    assert same(f.event, rt_close) and f.subject == {"kind": "fd", "fd": keep, "fd_kind": "dmabuf"}
    roles = [e.role for e in f.evidence]
    # the chain in order: export -> handed to the app -> close -> close
    assert roles[0] == "originally created by"
    assert roles.index("handed to the caller by") < roles.index("previous close") < roles.index("this close")
    assert any(same(e.event, hand) for e in f.evidence)
    assert any(same(e.event, app_close) for e in f.evidence)
    assert "DRM_IOCTL_PRIME_HANDLE_TO_FD" in f.message
    assert "app" in f.message and "DestroyMemoryHandle" in f.message
    assert "KFD handle 0x66a400000013" in f.message  # the buffer it exports
    assert "may be the culprit" in f.message


def test_vmm_v3_fixed_design_has_no_findings():
    t = Trace()
    kfd_fd = t.openf("/dev/kfd")
    r0 = t.openf("/dev/dri/renderD128")
    r1 = t.openf("/dev/dri/renderD129")
    for i in range(64):
        h, g = 0x66A400000000 + i, 0x10 + i
        t.intent("hsa_amd_vmem_handle_create", {"size": 0x200000}, {"memory_handle": h})
        t.alloc(kfd_fd, h)
        f1 = t.export(kfd_fd, h)
        t.fd_to_handle(r0, f1, g)
        t.close(f1)
        # set_access for the one peer: export, import on the peer, close in the scope guard
        f2 = t.prime_to_fd(r0, g)
        t.fd_to_handle(r1, f2, 0x900 + i)
        t.close(f2)
    for i in range(64):
        t.gem_close(r1, 0x900 + i)
        t.gem_close(r0, 0x10 + i)
        t.ioctl(kfd_fd, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000000 + i})
    t.exit()
    fds, hm = replay(t.events)
    assert all_findings(fds, hm) == []


# --- VMM V0: per-chunk x per-agent export/import/close --------------------------------------


def test_vmm_v0_reexport_is_a_note_only():
    t = Trace()
    kfd_fd = t.openf("/dev/kfd")
    renders = [t.openf(f"/dev/dri/renderD{128 + i}") for i in range(3)]
    for chunk in range(2):
        h = 0x66A400000100 + chunk
        t.alloc(kfd_fd, h)
        for agent, r in enumerate(renders):  # vmem_map + set_access per agent
            f = t.export(kfd_fd, h)
            t.fd_to_handle(r, f, 0x40 + chunk)
            t.close(f)
    t.exit()
    fds, hm = replay(t.events)
    assert rules(fds, hm) == ["dmabuf-reexport", "dmabuf-reexport"]
    for f in hm.findings:
        assert f.severity == "note"
        assert "3 times" in f.message and f.subject["kind"] == "handle"
        assert f.subject["handle"].startswith("0x66a4000001")
        assert not any(isinstance(k, int) for k in f.key)
    # one finding per buffer even if it keeps being exported
    assert hm.findings[0].fingerprint == hm.findings[1].fingerprint


# --- XDNA -----------------------------------------------------------------------------------------


def xdna(t, fixed: bool):
    acc = t.openf("/dev/accel/accel0")
    t.ioctl(acc, "DRM_IOCTL_AMDXDNA_CREATE_BO", {"flags": 0, "vaddr": 0, "size": 0x1000, "type": 1}, {"handle": 1})
    x = t.prime_to_fd(acc, 1, flags=DRM_RDWR)  # CreateShareableHandle keeps X
    t.fd_to_handle(acc, x, 1)  # import of its own export: same h
    imp_close = None
    if not fixed:
        imp_close = t.gem_close(acc, 1, stack=RT)  # imported handle destroyed
    t.close(x)
    owner_close = t.gem_close(acc, 1, stack=RT, err=None if fixed else "EINVAL")
    t.exit()
    return imp_close, owner_close


def test_xdna_7660_double_gem_close():
    t = Trace()
    first, second = xdna(t, fixed=False)
    fds, hm = replay(t.events)
    assert rules(fds, hm) == ["bo-double-free"]
    (f,) = hm.findings
    assert same(f.event, second) and f.subject == {"kind": "handle", "handle": "0x1"}
    roles = {e.role for e in f.evidence}
    assert {"this free", "previous free", "created by", "import returned the same handle"} <= roles
    assert any(same(e.event, first) for e in f.evidence)
    assert "DRM_IOCTL_AMDXDNA_CREATE_BO" in f.message and "same handle" in f.message
    assert f.key[2] == "self-import"


def test_xdna_fixed_owns_allocation_has_no_findings():
    t = Trace()
    xdna(t, fixed=True)
    t.ioctl(4, "DRM_IOCTL_AMDGPU_GEM_CREATE", {"bo_size": 0x1000}, {"handle": 7})
    fds, hm = replay(t.events)
    assert all_findings(fds, hm) == []
    # memory follows live state (nothing kept for an ended process): cargo test
    # handles::tests::an_ended_process_leaves_nothing


# --- KFD handles and GEM scoping -----------------------------------------------------------------


def test_kfd_double_free_and_ebusy():
    t = Trace()
    k = t.openf("/dev/kfd")
    t.alloc(k, 0x66A400000001)
    t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000001}, err="EBUSY")
    t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000001})
    fds, hm = replay(t.events)
    assert hm.findings == []
    bad = t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000001}, err="EINVAL")
    t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000777}, err="EINVAL")
    fds, hm = replay(t.events)
    a, b = hm.findings
    assert same(a.event, bad) and "already freed" in a.message
    assert a.subject == {"kind": "handle", "handle": "0x66a400000001"}
    assert "no earlier free is visible" in b.message
    assert a.fingerprint != b.fingerprint


def test_free_accepted_by_the_kernel_is_never_a_double_free():
    t = Trace()
    k = t.openf("/dev/kfd")
    t.alloc(k, 0x66A400000001)
    t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000001})
    t.ioctl(k, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", {"handle": 0x66A400000001})
    fds, hm = replay(t.events)
    assert hm.findings == []


def test_gem_handles_are_scoped_per_open_file_description():
    t = Trace()
    r0 = t.openf("/dev/dri/renderD128")
    r1 = t.openf("/dev/dri/renderD128")  # a second open: its own handle space
    for r in (r0, r1):
        t.ioctl(r, "DRM_IOCTL_AMDGPU_GEM_CREATE", {"bo_size": 0x1000}, {"handle": 1})
    t.gem_close(r0, 1)
    t.gem_close(r1, 1)
    fds, hm = replay(t.events)
    assert hm.findings == []
    # a dup shares the description, so closing through both is a double close
    t2 = Trace()
    r = t2.openf("/dev/dri/renderD128")
    d = t2.low()
    t2.open.add(d)
    t2._add(FdCreate(name="dup", origin="dup", fds=(d,), paths=(None,), src_fd=r, **t2._b(ret=d)))
    t2.ioctl(r, "DRM_IOCTL_AMDGPU_GEM_CREATE", {"bo_size": 0x1000}, {"handle": 1})
    t2.gem_close(d, 1)
    t2.gem_close(r, 1, err="EINVAL")
    fds, hm = replay(t2.events)
    assert [f.rule for f in hm.findings] == ["bo-double-free"]


def test_held_open_export_and_short_lived_exports():
    t = Trace()
    k = t.openf("/dev/kfd")
    t.alloc(k, 0x100)
    held = t.export(k, 0x100)
    for i in range(10):
        t.alloc(k, 0x200 + i)
        f = t.export(k, 0x200 + i)  # exported and closed right away: fine
        t.close(f)
    t.close(held)
    t.exit()
    fds, hm = replay(t.events)
    (f,) = hm.findings
    assert f.rule == "fd-held-open" and f.severity == "note"
    assert f.subject["fd"] == held and "10 allocation(s)" in f.message


def test_handles_model_alone_feeds_its_own_fd_model():
    t = Trace()
    xdna(t, fixed=False)
    m = Fds(handles=True)
    for ev in t.events:
        m.feed(ev)
    m.finish()
    assert [f.rule for f in m.handle_findings] == ["bo-double-free"]
    assert m.findings == []


def test_history_notes_the_buffer_behind_a_watched_fd():
    t = Trace()
    k = t.openf("/dev/kfd")
    t.alloc(k, 0x66A400000005)
    fd = t.export(k, 0x66A400000005)
    t.close(fd)
    m = Fds(watch=(None, fd), handles=True)
    for ev in t.events:
        m.feed(ev)
    m.finish()
    assert "KFD handle 0x66a400000005" in m.history[0][1]
    # the handle model only notes the buffer: without it the row has none
    plain = Fds(watch=(None, fd))
    for ev in t.events:
        plain.feed(ev)
    assert [w for _, w, _ in plain.history][1:] == [w for _, w, _ in m.history][1:]
    assert "KFD handle" not in plain.history[0][1]
