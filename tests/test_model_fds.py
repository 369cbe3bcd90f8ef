"""The core's fd model alone (rocrtrace._engine.FdModels, handles off): pure model
tests on constructed events (no files)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rocrtrace import kfd

from coremodels import Fds, lines, same
from vocab import (
    Clone,
    Close,
    CloseRange,
    Exec,
    Exit,
    FdCreate,
    FdSnapshot,
    Frame,
    Intent,
    Ioctl,
    Mmap,
    SetCloexec,
    Syscall,
)

O_CLOEXEC = 0o2000000


def stk(*specs):
    """'mod!func' frames, innermost first, with libc's wrapper on top."""
    frames = [Frame(module="/lib/x86_64-linux-gnu/libc.so.6", symbol="close", addr=0x1)]
    for i, sp in enumerate(specs):
        mod, fn = sp.split("!")
        frames.append(Frame(module=f"/opt/rocm/lib/{mod}", symbol=fn, addr=0x100 + i))
    return tuple(frames)


class B:
    """Event builder: sequential lines, times and a pid/tid."""

    def __init__(self, pid=100):
        self.pid = pid
        self.seq = 0

    def _b(self, pid=None, tid=None, stack=(), **kw):
        self.seq += 1
        d = dict(
            file="t.log",
            line=self.seq,
            seq=self.seq,
            time=1000.0 + self.seq * 0.001,
            dur=0.00001,
            pid=self.pid if pid is None else pid,
            tid=tid if tid is not None else (self.pid if pid is None else pid),
            stack=stack,
            text=f"event {self.seq}",
        )
        d.update(kw)
        return d

    def open(self, fd, path="/etc/hosts", cloexec=False, **kw):
        return FdCreate(
            name="openat", origin="open", fds=(fd,), paths=(path,), cloexec=cloexec, **self._b(ret=fd, **kw)
        )

    def dup(self, src, new, **kw):
        return FdCreate(name="dup", origin="dup", fds=(new,), paths=(None,), src_fd=src, **self._b(ret=new, **kw))

    def dup2(self, src, new, cloexec=False, **kw):
        return FdCreate(
            name="dup2",
            origin="dup",
            fds=(new,),
            paths=(None,),
            src_fd=src,
            replace=src != new,
            cloexec=cloexec,
            **self._b(ret=new, **kw),
        )

    def close(self, fd, err=None, path=None, **kw):
        return Close(fd=fd, path=path, **self._b(ret=-1 if err else 0, err=err, **kw))

    def close_range(self, first, last=0xFFFFFFFF, flags=0, **kw):
        return CloseRange(first=first, last=last, flags=flags, **self._b(ret=0, **kw))

    def ioctl(self, fd, name, arg=None, out=None, ret=0, err=None, path=None, **kw):
        d, t, nr, size = kfd.REQUEST_BY_NAME[name]
        return Ioctl(
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
            **self._b(ret=-1 if err else ret, err=err, **kw),
        )

    def export(self, kfd_fd, handle, fd, **kw):
        return self.ioctl(
            kfd_fd, "AMDKFD_IOC_EXPORT_DMABUF", {"handle": handle, "flags": O_CLOEXEC}, {"dmabuf_fd": fd}, **kw
        )

    def mmap(self, fd, err=None, **kw):
        return Mmap(fd=fd, length=4096, prot=3, flags=1, **self._b(ret=-1 if err else 0x7F0000000000, err=err, **kw))

    def syscall(self, name, fds, err=None, **kw):
        return Syscall(
            name=name, fds=tuple(fds), paths=(None,) * len(fds), **self._b(ret=-1 if err else 0, err=err, **kw)
        )

    def clone(self, child, thread=False, share_files=False, **kw):
        return Clone(name="clone", child=child, thread=thread, share_files=share_files, **self._b(ret=child, **kw))

    def exec_(self, **kw):
        return Exec(path="/bin/true", **self._b(ret=0, **kw))

    def exit(self, **kw):
        return Exit(whole=True, status=0, **self._b(**kw))

    def snapshot(self, fds, when="start", **kw):
        return FdSnapshot(when=when, fds=dict(fds), **self._b(**kw))


def run(events, model=None, finish=True):
    m = model or Fds()
    for ev in events:
        m.feed(ev)
    if finish:
        m.finish()
    return m


def rules(m):
    return [f.rule for f in m.findings]


def assert_key_clean(f):
    """Fingerprint keys hold what, never run-specific numbers."""
    for part in f.key:
        assert not isinstance(part, int), f.key


# --- clean churn -------------------------------------------------------------


def test_clean_churn_has_no_findings():
    b = B()
    evs = [
        b.snapshot({0: "/dev/pts/0", 1: "/dev/pts/0", 2: "/dev/pts/0"}),
        b.open(3, "/dev/kfd", cloexec=True),
        b.open(4, "/dev/dri/renderD128", cloexec=True),
    ]
    for i in range(50):
        evs += [
            b.export(3, 0x1000 + i, 5),
            b.ioctl(4, "DRM_IOCTL_PRIME_FD_TO_HANDLE", {"fd": 5}, {"handle": 1}),
            b.close(5),
            b.open(5, "/etc/hosts"),
            b.dup(5, 6),
            b.dup2(6, 9),
            b.close(5),
            b.close(6),
            b.close_range(9, 20),
        ]
    evs += [b.exec_(), b.exit()]
    m = run(evs)
    assert m.findings == []


def test_dup2_onto_a_free_number_is_not_a_close():
    b = B()
    m = run([b.open(3), b.dup2(3, 10), b.close(10), b.close(3)], finish=False)
    assert m.findings == []
    m2 = run([b.open(3), b.dup2(3, 10)], finish=False)
    s = m2.lookup(100, 10)
    assert s.origin == "dup" and s.ofd == m2.lookup(100, 3).ofd


def test_dup2_onto_open_fd_closes_it_and_keeps_original_creator():
    b = B()
    o3 = b.open(3, "/dev/null")
    m = run([o3, b.open(4, "/etc/passwd"), b.dup2(3, 4), b.dup(4, 5)], finish=False)
    s = m.lookup(100, 5)
    assert same(s.root, o3) and s.root_origin == "open"
    # the old fd 4 was closed by dup2 and is remembered as the number's previous occupant
    assert m.lookup(100, 4).prev.how == "dup2"
    assert m.lookup(100, 4).prev.slot.path == "/etc/passwd"
    m.feed(b.close(4))
    m.feed(b.close(4, err="EBADF"))
    (f,) = m.findings
    assert f.rule == "fd-double-close"
    assert any(same(e.event, o3) for e in f.evidence), "original creation through the dup chain"


def test_close_range_over_free_numbers_is_not_a_double_close():
    b = B()
    m = run([b.open(3), b.open(4), b.close(4), b.close_range(3), b.close_range(3), b.close_range(3, 100)])
    assert m.findings == []


def test_bounded_close_range_over_closed_fds_is_a_double_close_of_each():
    # a bounded close_range over fds the trace already closed
    # (nothing re-creating them) double-closes each; one that reaches
    # numbers the trace never saw is a sweep, like an open-ended one
    b = B()
    again = b.close_range(3, 4)
    m = run([b.open(3), b.open(4), b.close(4), b.close_range(3), again, b.close_range(3, 100)])
    assert rules(m) == ["fd-double-close", "fd-double-close"]
    assert sorted(f.subject["fd"] for f in m.findings) == [3, 4]
    assert all(same(f.event, again) and f.message.startswith("close_range(3, 4) closes fd") for f in m.findings)


def test_close_range_in_a_forked_child_is_a_sweep_not_a_double_close():
    # CPython's subprocess child: close(pipe end), then close_range over the gaps
    b = B()
    m = run(
        [
            b.open(3),
            b.open(4),
            b.clone(200),
            b.close(3, pid=200),
            b.close_range(3, 3, pid=200),
            b.close_range(5, pid=200),
            b.exec_(pid=200),
        ]
    )
    assert m.findings == []


def test_close_range_of_one_closed_fd_is_a_double_close():
    b = B()
    m = run([b.open(7), b.close(7), b.close_range(7, 7)])
    assert rules(m) == ["fd-double-close"]


# --- fd-double-close -----------------------------------------------------------


def test_double_close_three_part_evidence():
    b = B()
    o = b.open(5, "/dev/null", stack=stk("app!open_it", "app!main"))
    c1 = b.close(5, stack=stk("app!first_closer", "app!main"))
    c2 = b.close(5, err="EBADF", stack=stk("app!second_closer", "app!main"))
    m = run([o, c1, c2])
    (f,) = m.findings
    assert f.rule == "fd-double-close" and f.severity == "error"
    assert same(f.event, c2)
    assert f.subject == {"kind": "fd", "fd": 5, "fd_kind": "other"}
    roles = {e.role: e.event for e in f.evidence}
    assert same(roles["this close"], c2) and same(roles["previous close"], c1)
    assert same(roles["originally created by"], o)
    assert "first close may be the culprit" in f.message
    assert "first_closer" in f.message and "second_closer" in f.message
    assert_key_clean(f)


def test_close_after_exec_of_a_cloexec_fd():
    b = B()
    m = run([b.open(3, cloexec=True), b.open(4), b.exec_(), b.close(4)], finish=False)
    assert m.findings == []
    m.feed(b.close(3, err="EBADF"))
    (f,) = m.findings
    assert f.rule == "fd-double-close"
    assert "close-on-exec" in f.message and "execve" in f.message


def test_unseen_close_then_ebadf_close():
    # preload: fclose is invisible; a later close(fd) = EBADF is still a double close
    b = B()
    m = run([b.open(3, "/etc/hosts"), b.close(3, err="EBADF")])
    (f,) = m.findings
    assert "cannot see" in f.message


def test_forked_child_close_storm_is_not_reported():
    b = B()
    evs = [b.open(3), b.clone(200)]
    evs += [b.close(n, err="EBADF", pid=200) for n in range(4, 40)]
    evs += [b.close(3, pid=200), b.exec_(pid=200)]
    m = run(evs)
    # a close-all sweep is one note
    (f,) = m.findings
    assert f.rule == "fd-bad-fd" and f.severity == "note" and "sweep" in f.message
    assert f.details["sweep"] == {"closes": 36, "ebadf": 36, "first": 4, "last": 39}


# --- fork, threads -------------------------------------------------------------


def test_fork_child_closes_its_copy_parent_keeps_its_own():
    b = B()
    m = run([b.open(3, "/dev/kfd"), b.export(3, 0x10, 7), b.clone(200), b.close(7, pid=200)], finish=False)
    assert m.lookup(100, 7) is not None and m.lookup(200, 7) is None
    assert m.lookup(200, 3).origin == "inherited"
    m.feed(b.close(7))
    assert m.findings == []
    m.feed(b.close(7, err="EBADF", pid=200))
    (f,) = m.findings
    assert f.pid == 200 and f.rule == "fd-double-close"


def test_threads_share_one_table():
    b = B()
    m = run([b.clone(101, thread=True), b.open(3, tid=101), b.close(3, tid=100)], finish=False)
    assert m.lookup(100, 3) is None
    m.feed(b.close(3, err="EBADF", tid=101))
    assert rules(m) == ["fd-double-close"]


def test_clone_files_shares_the_table_between_processes():
    b = B()
    m = run([b.open(3), b.clone(200, share_files=True), b.close(3, pid=200)], finish=False)
    assert m.lookup(100, 3) is None


# --- fd-use-after-close ----------------------------------------------------------


def test_use_of_never_seen_fd_says_so():
    b = B()
    m = run([b.mmap(9, err="EBADF")])
    (f,) = m.findings
    # a number never seen open is fd-bad-fd (a note: no execve seen)
    assert f.rule == "fd-bad-fd" and "never saw fd 9 open" in f.message


def test_read_ebadf_on_open_fd_may_be_open_mode_not_a_finding():
    b = B()
    m = run([b.open(3), b.syscall("write", [3], err="EBADF")])
    assert m.findings == []


def test_successful_use_of_unknown_fd_is_unknown_origin():
    b = B()
    m = run(
        [b.ioctl(5, "DRM_IOCTL_PRIME_FD_TO_HANDLE", {"fd": 9}, {"handle": 1}, path="/dev/dri/renderD128")], finish=False
    )
    assert m.lookup(100, 5).kind == "drm-render" and m.lookup(100, 5).origin == "unknown"
    assert m.lookup(100, 9).origin == "unknown"
    assert m.findings == []


# --- fd-leak -------------------------------------------------------------------------


def test_pre_existing_and_inherited_fds_are_not_leaks():
    b = B()
    m = run(
        [
            b.snapshot({0: "/dev/null", 8: "/dmabuf:"}),
            b.open(3, "/dev/kfd"),
            b.export(3, 1, 6),
            b.clone(200),
            b.exit(pid=200),
            b.close(6),
            b.exit(),
        ]
    )
    assert m.findings == []


# --- fd-exhaustion ---------------------------------------------------------------------


def test_exhaustion_once_per_process_names_kinds():
    b = B()
    evs = [b.open(3, "/dev/kfd")]
    evs += [b.export(3, 0x100 + i, 4 + i) for i in range(40)]
    evs += [
        b.ioctl(3, "AMDKFD_IOC_EXPORT_DMABUF", {"handle": 0x999, "flags": 0}, err="EMFILE"),
        FdCreate(name="openat", fds=(), paths=(), **b._b(ret=-1, err="EMFILE")),
    ]
    m = run(evs, finish=False)
    (f,) = [f for f in m.findings if f.rule == "fd-exhaustion"]
    assert f.subject == {"kind": "process"}
    assert f.details["open_by_kind"]["dmabuf"] == 40 and f.details["failed_calls"] == 2
    assert "40 dmabuf" in f.message and "dmabuf fds fill it" in f.message
    assert_key_clean(f)


# --- fd-close-reused ---------------------------------------------------------------------


def test_close_reused_by_stack_evidence():
    b = B()
    keep = b.ioctl(
        4,
        "DRM_IOCTL_PRIME_HANDLE_TO_FD",
        {"handle": 1, "flags": O_CLOEXEC},
        {"fd": 7},
        stack=stk(
            "libdrm_amdgpu.so!drmPrimeHandleToFD",
            "libhsakmt.so!hsaKmtHandleExport",
            "libhsa-runtime64.so!CreateShareableHandle",
        ),
    )
    app_close = b.close(7, stack=stk("app!main"))
    app_open = b.open(7, "/etc/app.conf", stack=stk("app!load_config", "app!main"))
    rt_close = b.close(
        7,
        stack=stk(
            "libhsa-runtime64.so!DestroyMemoryHandle", "libhsa-runtime64.so!hsa_amd_vmem_handle_release", "app!main"
        ),
    )
    m = run([b.open(4, "/dev/dri/renderD128"), keep, app_close, app_open, rt_close], finish=False)
    (f,) = m.findings
    assert f.rule == "fd-close-reused" and same(f.event, rt_close)
    assert f.subject["fd_kind"] == "other"
    assert "meant for" in f.message and "DestroyMemoryHandle" in f.message


def test_close_by_the_new_owner_is_not_close_reused():
    b = B()
    m = run(
        [
            b.open(7, "/a", stack=stk("liba!reader")),
            b.close(7, stack=stk("liba!reader")),
            b.ioctl(
                4,
                "DRM_IOCTL_PRIME_HANDLE_TO_FD",
                {"handle": 1, "flags": 0},
                {"fd": 7},
                stack=stk("libhsa-runtime64.so!Export", "app!main"),
            ),
            b.close(7, stack=stk("app!main")),
        ]
    )
    assert [r for r in rules(m) if r != "fd-leak"] == []


def test_close_reused_by_later_ebadf_of_the_new_owner():
    b = B()
    rogue = b.close(7, stack=stk("liba!reader_cleanup"))
    m = run(
        [
            b.open(7, "/a", stack=stk("liba!reader")),
            b.close(7, stack=stk("liba!reader")),
            b.open(7, "/b", stack=stk("libb!logger")),
            rogue,
            b.syscall("write", [7], err="EBADF", stack=stk("libb!logger")),
        ]
    )
    got = sorted(rules(m))
    assert got == ["fd-close-reused", "fd-use-after-close"]
    (f,) = [f for f in m.findings if f.rule == "fd-close-reused"]
    assert same(f.event, rogue) and "later got EBADF" in f.message


def test_no_close_reused_without_stacks():
    b = B()
    m = run([b.open(7, "/a"), b.close(7), b.open(7, "/b"), b.close(7), b.syscall("write", [7], err="EBADF")])
    assert rules(m) == ["fd-use-after-close"]


# --- kinds, history ----------------------------------------------------------------------


def test_history_records_every_event_touching_the_watched_fd():
    b = B()
    m = Fds(watch=(None, 7))
    run(
        [
            b.open(3, "/dev/kfd"),
            b.export(3, 0x40, 7),
            b.syscall("lseek", [7]),
            b.close(7),
            b.open(8),
            b.close(7, err="EBADF"),
        ],
        model=m,
    )
    assert len(m.history) == 4
    assert all(isinstance(d, str) for _, d, *_ in m.history)
    assert "EXPORT_DMABUF" in m.history[0][1]
    assert "double close" in m.history[-1][1]


def test_intent_handover_is_named_in_double_close():
    b = B()
    hand = Intent(name="hsa_amd_vmem_export_shareable_handle", args={"handle": 1}, outs={"dmabuf_fd": 7}, **b._b(ret=0))
    m = run([b.open(3, "/dev/kfd"), b.export(3, 0x40, 7), hand, b.close(7), b.close(7, err="EBADF")])
    (f,) = m.findings
    assert any(same(e.event, hand) for e in f.evidence)
    assert "handed this fd to its caller" in f.message


def test_setcloexec_and_mode_use():
    b = B()
    m = run(
        [
            b.open(3),
            SetCloexec(fd=3, cloexec=True, **b._b(ret=0)),
            b.exec_(),
            SetCloexec(fd=3, cloexec=True, **b._b(ret=-1, err="EBADF")),
        ]
    )
    (f,) = m.findings
    assert f.rule == "fd-use-after-close"


# --- property: against a brute-force kernel fd table -----------------------------------------

OPS = st.lists(
    st.tuples(st.sampled_from(["open", "dup", "dup2", "close", "close_range"]), st.integers(0, 12), st.integers(0, 12)),
    max_size=60,
)


def _simulate(ops, allow_double: bool):
    """Kernel semantics with lowest-free allocation; returns events and the
    final open set, plus whether a closed fd was ever closed again."""
    b = B()
    table: set[int] = set()
    evs = []
    doubled = False
    closed_once: set[int] = set()
    for op, x, y in ops:
        low = next(n for n in range(100) if n not in table)
        if op == "open":
            evs.append(b.open(low))
            table.add(low)
            closed_once.discard(low)
        elif op == "dup" and x in table:
            evs.append(b.dup(x, low))
            table.add(low)
            closed_once.discard(low)
        elif op == "dup2" and x in table:
            evs.append(b.dup2(x, y))
            if x != y:
                table.add(y)
                closed_once.discard(y)
        elif op == "close":
            if x in table:
                evs.append(b.close(x))
                table.discard(x)
                closed_once.add(x)
            elif allow_double:
                evs.append(b.close(x, err="EBADF"))
                doubled = True
        elif op == "close_range":
            lo, hi = min(x, y), max(x, y)
            # a double close where most numbers in the range held fds the
            # model saw (a bounded range names the fds it means to
            # close); one over numbers that mostly never held one is a sweep
            known = table | closed_once
            if 2 * sum(n in known for n in range(lo, hi + 1)) > hi - lo + 1 and any(
                lo <= n <= hi and n not in table for n in closed_once
            ):
                if not allow_double:
                    continue
                doubled = True
            evs.append(b.close_range(lo, hi))
            for n in [n for n in table if lo <= n <= hi]:
                table.discard(n)
                closed_once.add(n)
    return evs, table, doubled


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_random_sequences_match_reference_and_never_close_twice_means_no_findings(ops):
    evs, table, _ = _simulate(ops, allow_double=False)
    m = run(evs, finish=False)
    assert set(m.open_fds(100)) == table
    assert m.findings == []


@settings(max_examples=100, deadline=None)
@given(OPS)
def test_random_sequences_with_double_closes_are_found(ops):
    evs, table, doubled = _simulate(ops, allow_double=True)
    m = run(evs, finish=False)
    assert set(m.open_fds(100)) == table
    assert bool(m.findings) == doubled
    # a number never open is fd-bad-fd; a run of them may be one sweep note
    assert all(f.rule in ("fd-double-close", "fd-bad-fd") for f in m.findings)
    assert all(f.severity == "note" for f in m.findings if f.rule == "fd-bad-fd")


# --- more creators, the boundary chain, bounded memory ------------------------------------------


def test_export_import_close_close_chain_names_both_call_sites():
    b = B()
    exp = b.export(3, 0x50, 7, stack=stk("libhsa-runtime64.so!ExportDMABuf"))
    imp = b.ioctl(3, "AMDKFD_IOC_IMPORT_DMABUF", {"dmabuf_fd": 7, "gpu_id": 1, "va_addr": 0}, {"handle": 0x51})
    c1 = b.close(7, stack=stk("app!release_buffer", "app!main"))
    c2 = b.close(
        7, err="EBADF", stack=stk("libhsa-runtime64.so!DmaBufClose", "libhsa-runtime64.so!DestroyMemoryHandle")
    )
    m = run([b.open(3, "/dev/kfd"), exp, imp, c1, c2])
    (f,) = m.findings
    assert lines(e.event for e in f.evidence) == lines([exp, imp, c1, c2])
    assert [e.role for e in f.evidence][1] == "imported by"
    assert "release_buffer" in f.message and "DmaBufClose" in f.message


def test_recvmsg_dmabuf_is_an_import_that_can_leak():
    b = B()
    got = FdCreate(name="recvmsg", origin="recvmsg", fds=(6,), paths=("/dmabuf:",), src_fd=5, **b._b(ret=1))
    m = run([b.open(5, "socket:[1]"), got, b.exit()])
    (f,) = m.findings
    assert f.rule == "fd-leak" and f.subject["fd_kind"] == "dmabuf"
    assert f.key[1] == "recvmsg"


# --- fd ownership: the runtime's stale close of amd-smi's fd ------------------------


def bare(*mods):
    """Unsymbolized strace -k frames: 'MODULE() [0xOFF]', libc's wrapper on top."""
    frames = [Frame(module="/lib/x86_64-linux-gnu/libc.so.6", addr=0x1)]
    frames += [Frame(module=f"/opt/rocm/lib/{m}", addr=0x100 + i) for i, m in enumerate(mods)]
    return tuple(frames)


def _amdsmi_reuse(symbols: bool):
    b = B()
    s = stk if symbols else (lambda *sp: bare(*[x.split("!")[0] for x in sp]))
    export = b.export(
        3,
        0x60,
        7,
        stack=s(
            "libhsakmt.so.1!hsaKmtExportDMABufHandle",
            "libhsa-runtime64.so.1!ExportDMABuf",
            "libamdhip64.so.6!hipMemExportToShareableHandle",
        ),
    )
    app_close = b.close(7, stack=s("app!release", "app!main"))
    # amd-smi, called from inside the runtime, opens a sysfs file: number 7 again
    smi_open = b.open(
        7,
        "/sys/class/drm/card0/device/gpu_metrics",
        stack=s("libamd_smi.so!amdsmi_get_gpu_metrics_info", "libhsa-runtime64.so.1!UpdateAgentMetrics", "app!main"),
    )
    rt_close = b.close(
        7,
        stack=s(
            "libhsa-runtime64.so.1!DestroyMemoryHandle", "libhsa-runtime64.so.1!hsa_amd_vmem_handle_release", "app!main"
        ),
    )
    m = run([b.exec_(), b.open(3, "/dev/kfd"), export, app_close, smi_open, rt_close], finish=False)
    return m, rt_close


def test_close_reused_runtime_closes_amd_smis_fd_symbolized():
    m, rt_close = _amdsmi_reuse(symbols=True)
    (f,) = m.findings
    assert f.rule == "fd-close-reused" and same(f.event, rt_close)
    assert f.subject["fd_kind"] == "other" and "runtime" in f.message
    assert "meant for the fd that held number 7 before (dmabuf" in f.message


def test_close_reused_runtime_closes_amd_smis_fd_unsymbolized():
    # strace -k without symbols: the owners are told apart by module alone
    m, rt_close = _amdsmi_reuse(symbols=False)
    (f,) = m.findings
    assert f.rule == "fd-close-reused" and same(f.event, rt_close)


def test_close_reused_by_the_new_owners_later_ebadf_across_components():
    b = B()
    smi_open = b.open(7, "/sys/a", stack=stk("libamd_smi.so!amdsmi_init", "app!main"))
    smi_close = b.close(7, stack=stk("libamd_smi.so!amdsmi_init", "app!main"))
    rt_open = b.open(7, "/sys/b", stack=stk("libhsa-runtime64.so.1!ReadTopology", "app!main"))
    stale = b.close(7, stack=stk("libamd_smi.so!amdsmi_shut_down", "app!main"))
    rt_read = b.syscall("read", [7], err="EBADF", stack=stk("libhsa-runtime64.so.1!ReadTopology", "app!main"))
    m = run([b.exec_(), smi_open, smi_close, rt_open, stale, rt_read])
    assert sorted(rules(m)) == ["fd-close-reused", "fd-use-after-close"]
    (f,) = [f for f in m.findings if f.rule == "fd-close-reused"]
    assert same(f.event, stale) and "later got EBADF" in f.message


def test_close_by_a_caller_of_the_new_owner_is_not_close_reused():
    # the program closes the fd a library handed to it: the new owner's own
    # stack holds the closing function, so nothing can be claimed
    b = B()
    m = run(
        [
            b.exec_(),
            b.export(3, 0x60, 7, stack=stk("libhsa-runtime64.so.1!ExportDMABuf", "app!export_it")),
            b.close(7, stack=stk("app!export_it")),
            b.open(7, "/etc/x", stack=stk("libfoo.so!foo_open", "app!use_foo")),
            b.close(7, stack=stk("app!use_foo")),
        ],
        finish=False,
    )
    assert rules(m) == []


# --- probes, sweeps, negative fds, dup2 attribution ------------------------------


def test_dup2_ebadf_with_old_open_is_about_new():
    b = B()
    d = FdCreate(name="dup2", origin="dup", fds=(), src_fd=0, new_fd=-4, replace=True, **b._b(ret=-1, err="EBADF"))
    hi = FdCreate(name="dup2", origin="dup", fds=(), src_fd=3, new_fd=99999, replace=True, **b._b(ret=-1, err="EBADF"))
    m = run([b.exec_(), b.open(3), d, hi])
    (f,) = m.findings
    assert f.rule == "fd-bad-fd" and same(f.event, d) and f.subject["fd"] == -4
    assert m.findings[0].severity == "warning"


def test_probes_of_closed_fds_are_not_uses():
    b = B()
    evs = [b.exec_(), b.open(3), b.open(4), b.close(3), b.close(4)]
    evs += [b.syscall(n, [fd], err="EBADF") for n in ("fstat", "newfstatat", "statx", "fcntl") for fd in (3, 4, 5)]
    evs += [b.syscall("read", [3], err="EBADF")]
    m = run(evs)
    (f,) = m.findings
    assert f.rule == "fd-use-after-close" and f.event.name == "read"


def test_negative_fds_are_bad_fd_never_use_after_close():
    b = B()
    m = run([b.open(3), b.close(-1, err="EBADF"), b.syscall("read", [-1], err="EBADF"), b.mmap(-1, err="EBADF")])
    assert rules(m) == ["fd-bad-fd"] * 3
    assert all("not an fd number" in f.message for f in m.findings)
    # close(-1) does nothing (a note); read and mmap of -1 lost their work
    assert [f.severity for f in m.findings] == ["note", "warning", "warning"]


def test_sweep_over_numbers_seen_closed_is_one_note():
    # "whatever the trace saw of those numbers before the sweep"
    b = B()
    evs = [b.exec_(), b.open(3), b.open(4), b.open(5), b.close(4), b.close(5), b.open(6)]
    evs += [b.close(n, err=None if n in (3, 6) else "EBADF") for n in range(3, 64)]
    m = run(evs)
    (f,) = m.findings
    assert f.rule == "fd-bad-fd" and f.severity == "note" and "sweep" in f.message
    assert f.details["sweep"]["closes"] == 61 and f.details["sweep"]["ebadf"] == 59


def test_a_short_run_of_bad_closes_is_not_a_sweep():
    b = B()
    m = run([b.exec_(), b.open(3), b.open(4), b.close(3), b.close(4), b.close(3, err="EBADF"), b.close(4, err="EBADF")])
    assert rules(m) == ["fd-double-close", "fd-double-close"]


def test_sweeps_are_per_thread_and_end_at_another_call():
    b = B()
    evs = [b.exec_(), b.open(3), b.close(3)]
    # two threads interleave their closes: each thread's own run counts
    for n in range(3, 20):
        evs.append(b.close(n, err="EBADF", tid=101))
        evs.append(b.close(n, err="EBADF", tid=102))
    evs.append(b.syscall("getpid", [], tid=101))
    evs.append(b.close(3, err="EBADF", tid=101))  # after the sweep: a real double close
    m = run(evs)
    assert sorted((f.rule, f.severity) for f in m.findings) == [("fd-bad-fd", "note"), ("fd-double-close", "error")]
    # a sweep on each thread: the same note twice, one finding "2 times"
    # (repeats aggregate), the other thread's as its last
    (sweep,) = [f for f in m.findings if f.rule == "fd-bad-fd"]
    assert sweep.details["occurrences"] == 2
    assert [(e.role, e.event.tid) for e in sweep.evidence] == [
        ("first close of the sweep", 101),
        ("last close of the sweep", 101),
        ("the last of 2", 102),
    ]


def test_a_huge_sweep_keeps_no_per_close_findings():
    b = B()
    evs = [b.exec_()] + [b.close(n, err="EBADF") for n in range(3, 3 + 5000)]
    m = Fds()
    for ev in evs:
        m.feed(ev)
    assert m.findings == []  # retracted at SWEEP_SETTLED, nothing held since
    m.finish()
    (f,) = m.findings
    assert f.details["sweep"]["closes"] == 5000


def test_all_fds_lists_what_the_program_opened_and_still_holds():
    b = B()
    mine = b.open(5, "/etc/hosts")
    evs = [
        FdSnapshot(when="start", fds={0: "/dev/null", 3: "/tmp/inherited"}, **b._b()),
        b.open(4, "/dev/kfd"),
        mine,
        b.export(4, 0x10, 6),
        b.exit(),
    ]
    m = run(evs, Fds(all_fds=True))
    got = sorted((f.rule, f.subject["fd"]) for f in m.findings)
    assert got == [("fd-leak", 6), ("fd-open-at-exit", 5)]
    (f,) = [f for f in m.findings if f.rule == "fd-open-at-exit"]
    assert f.severity == "note" and same(f.event, mine) and same(f.evidence[0].event, mine)
    assert sorted(r for r in rules(run(evs[:0] + [b.open(5), b.exit()]))) == []


def test_read_ebadf_during_another_threads_close_is_a_use_after_close():
    # strace -f: "close(3 <unfinished ...>", the other thread's read = EBADF,
    # "<... close resumed> = 0": the close completes last but began first
    b = B()
    o = b.open(3, "/dev/null")
    close = b.close(3, tid=101)
    rd = b.syscall("read", [3], err="EBADF", tid=102)
    close.time, close.dur = rd.time - 0.0005, 0.002  # overlaps the read
    m = run([b.exec_(), o, rd, close])
    (f,) = m.findings
    assert f.rule == "fd-use-after-close" and same(f.event, rd)
    assert "another thread" in f.message
    assert lines(e.event for e in f.evidence) == lines([o, close, rd])


def test_read_ebadf_then_a_later_close_is_the_open_mode_not_a_finding():
    b = B()
    late = b.close(3, tid=101)
    rd = b.syscall("read", [3], err="EBADF", tid=102)
    late.time = rd.time + 0.01  # began after the read ended
    same = b.syscall("read", [4], err="EBADF", tid=101)
    m = run([b.exec_(), b.open(3, "/dev/null"), b.open(4), rd, late, same, b.close(4, tid=101)])
    assert m.findings == []


def test_racing_close_without_durations_is_ordered_by_lines():
    # strace -f without -T: "read(3, <unfinished ...>" (line 10), "close(3
    # <unfinished ...>" (11), "<... read resumed> = -1 EBADF" (12)
    b = B()
    o = b.open(3, "/dev/null")
    rd = b.syscall("read", [3], err="EBADF", tid=102, dur=None, line=10, end_line=12)
    close = b.close(3, tid=101, dur=None, line=11, end_line=13)
    m = run([b.exec_(), o, rd, close])
    (f,) = m.findings
    assert f.rule == "fd-use-after-close" and same(f.event, rd)
    b = B()
    rd = b.syscall("read", [3], err="EBADF", tid=102, dur=None, line=10, end_line=12)
    late = b.close(3, tid=101, dur=None, line=14)
    assert run([b.exec_(), b.open(3, "/dev/null"), rd, late]).findings == []


def test_ebadf_on_an_open_o_path_fd_is_not_a_finding():
    # fchmod/lseek/fsync on an O_PATH fd fail with EBADF: the fd is open
    b = B()
    m = run(
        [
            b.exec_(),
            b.open(3, "/etc"),
            b.syscall("fchmod", [3], err="EBADF"),
            b.syscall("lseek", [3], err="EBADF"),
            b.close(3),
        ]
    )
    assert m.findings == []


def test_a_render_node_libdrm_opened_for_the_runtime_is_the_runtimes():
    """The real runtime (Debian's ROCm 5.2 on the fake KFD, with stacks): it
    reads a sysfs directory (opendir: fd 5, closed), then has libdrm open the
    render node (fd 5 again), then closes it itself.  libdrm's drmOpen* hand
    the fd to their caller: not a wrong owner."""
    b = B()
    topo = b.open(
        5,
        "/sys/devices/virtual/kfd/kfd/topology/nodes",
        stack=stk("libhsakmt.so.1!topology_sysfs_get_nodes", "app!main"),
    )
    topo_close = b.close(5, stack=stk("libhsakmt.so.1!topology_sysfs_get_nodes", "app!main"))
    drm = b.open(
        5, "/dev/dri/renderD128", stack=stk("libdrm.so.2!drmOpenRender", "libhsakmt.so.1!hsaKmtOpenKFD", "app!main")
    )
    rt_close = b.close(5, stack=stk("libhsakmt.so.1!hsaKmtCloseKFD", "app!main"))
    m = run([b.exec_(), topo, topo_close, drm, rt_close], finish=False)
    assert rules(m) == []
