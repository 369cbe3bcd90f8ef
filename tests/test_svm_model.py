"""The core's SVM model (rocrtrace._engine.run_svm_model) on constructed event
streams: the ROCm runtime's SVM paths (register, map, deregister, the
#6699 revoke race) as worked examples, each without intent calls (claims
inferred from ioctl shapes) and with lock/unlock intent calls wrapping the
ioctls on their thread.  Buggy variants must give exactly the expected
findings, fixed and clean ones none."""

from __future__ import annotations

import pytest

from rocrtrace import kfd

from coremodels import same, svm_run
from vocab import Intent, Ioctl, Mmap, Mremap, Munmap, ProcessInfo

X = 0x7F3A1C200000
G = 0x1A2B
GPUS8 = [0x1A2B + 0x111 * i for i in range(8)]
PAGE = 0x1000


def AIP(g):
    return (kfd.ATTR_ACCESS_IN_PLACE, g)


def NO(g):
    return (kfd.ATTR_NO_ACCESS, g)


def ACC(g):
    return (kfd.ATTR_ACCESS, g)


def SETF(v):
    return (kfd.ATTR_SET_FLAGS, v)


def CLRF(v):
    return (kfd.ATTR_CLR_FLAGS, v)


COH, EXT = kfd.FLAG_COHERENT, kfd.FLAG_EXT_COHERENT
FINE = [SETF(COH), CLRF(EXT)]  # rocm-paths 4.3: COH/EXT of a fine-grained pool
COARSE = [CLRF(COH), CLRF(EXT)]


class Trace:
    """Builds events on a shared clock; ``run`` feeds them in completion
    order as the analyzer does.  ``explicit`` wraps registrations and
    deregistrations in lock/unlock intent calls on the same thread."""

    def __init__(self, explicit: bool, pid: int = 4242, t0: float = 1764435600.0):
        self.explicit = explicit
        self.pid = pid
        self.now = t0
        self.events = [ProcessInfo(pid=pid, tid=pid, time=t0, page_size=PAGE)]
        self.open: dict = {}

    def _ev(self, cls, tid, dur=1e-5, at=None, **kw):
        t = self.now if at is None else at
        ev = cls(
            pid=self.pid, tid=tid, time=t, dur=dur, file="t.log", line=len(self.events) + 1, seq=len(self.events), **kw
        )
        if at is None:
            self.now = t + dur + 1e-5
        self.events.append(ev)
        return ev

    def svm(self, tid, start, size, attrs, op=kfd.SVM_OP_SET_ATTR, out=None, err=None, at=None, dur=1e-5):
        arg = {"start_addr": start, "size": size, "op": op, "nattr": len(attrs), "attrs": list(attrs)}
        return self._ev(
            Ioctl,
            tid,
            dur=dur,
            at=at,
            type=kfd.TYPE_KFD,
            nr=0x20,
            fd=3,
            ioctl="AMDKFD_IOC_SVM",
            arg=arg,
            out={"attrs": out} if out is not None else None,
            ret=-1 if err else 0,
            err=err,
            text=f"ioctl(3, AMDKFD_IOC_SVM, {{start_addr={start:#x}, size={size:#x}, ...}})",
        )

    def get_access(self, tid, start, size, gpu, answer):
        return self.svm(tid, start, size, [ACC(gpu)], op=kfd.SVM_OP_GET_ATTR, out=[(answer, gpu)])

    def begin(self, tid, name, **args):
        self.open[(tid, name)] = (self.now, args)
        self.now += 1e-5

    def end(self, tid, name, ret=0):
        t, args = self.open.pop((tid, name))
        self.now += 1e-5
        self._ev(Intent, tid, dur=self.now - t, at=t, name=name, args=args, ret=ret, text=f"{name}(...) = {ret}")

    # the runtime paths -------------------------------------------------

    def lock(self, tid, ptr, size, register, map_attrs=()):
        """hsa_amd_memory_lock: register (+ map) ioctls on the outward-rounded range."""
        a, b = ptr & ~(PAGE - 1), (ptr + size + PAGE - 1) & ~(PAGE - 1)
        if self.explicit:
            self.begin(tid, "hsa_amd_memory_lock", host_ptr=ptr, size=size)
        if register is not None:
            self.svm(tid, a, b - a, register)
        if map_attrs:
            self.svm(tid, a, b - a, map_attrs)
        if self.explicit:
            self.end(tid, "hsa_amd_memory_lock")

    def unlock(self, tid, ptr, revokes=()):
        """hsa_amd_memory_unlock issuing the given (start, size, attrs) revokes."""
        if self.explicit:
            self.begin(tid, "hsa_amd_memory_unlock", host_ptr=ptr)
        for start, size, attrs in revokes:
            self.svm(tid, start, size, attrs)
        if self.explicit:
            self.end(tid, "hsa_amd_memory_unlock")

    def mmap(self, tid, addr, length):
        return self._ev(Mmap, tid, addr=addr, length=length, ret=addr, prot=3, flags=0x22)

    def munmap(self, tid, addr, length):
        return self._ev(Munmap, tid, addr=addr, length=length, ret=0)

    def run(self, **kw):
        """The core's SVM model after the events, fed in file order as the
        analyzer feeds it (the model replays them in completion order
        itself): findings, limits, history, counts."""
        return svm_run(self.events, **kw)


def summary(m):
    return sorted((f.rule, f.cause) for f in m.findings)


def v1_revoke(gpus):
    return [NO(g) for g in gpus] + [CLRF(COH), CLRF(EXT)]


MODES = pytest.mark.parametrize("explicit", [False, True], ids=["inferred", "explicit"])


# --- C1: enclosing range skipped (V1 bug 2) ------------------------------------


@MODES
@pytest.mark.parametrize("gpus", [[G], GPUS8[:2], GPUS8], ids=["1gpu", "2gpu", "8gpu"])
@pytest.mark.parametrize("buggy", [True, False], ids=["V1", "fixed"])
def test_c1_enclosing_range(explicit, gpus, buggy):
    t = Trace(explicit)
    maps = [AIP(g) for g in gpus]
    t.lock(1, X, 0x8000, FINE, maps)  # E
    t.lock(2, X + 0x2000, 0x1000, FINE, maps)  # F, another thread
    t.lock(1, X + 0x3000, 0x1000, FINE, maps)  # H
    # V1: the sweep starts at F, never sees E, revokes H's page under E
    t.unlock(1, X + 0x3000, [(X + 0x3000, 0x1000, v1_revoke(gpus))] if buggy else [])
    m = t.run()
    if not buggy:
        assert m.findings == []
        return
    assert summary(m) == [("svm-coherency-downgrade", "enclosing-range"), ("svm-over-revoke", "enclosing-range")]
    over = next(f for f in m.findings if f.rule == "svm-over-revoke")
    assert over.subject == {
        "kind": "svm-range",
        "start": hex(X + 0x3000),
        "end": hex(X + 0x4000),
        "gpu_ids": [hex(g) for g in sorted(gpus)],
    }
    assert over.details["order"] == "certain"
    assert over.details["victim"]["start"] == hex(X)
    assert over.details["released"][0]["start"] == hex(X + 0x3000)
    roles = [e.role for e in over.evidence]
    assert roles[0] == "revoking call"
    assert any(r.startswith("victim claim") for r in roles)
    assert any(r.startswith("released claim") for r in roles)
    if explicit:
        assert "deregistration (unlock) it ran inside" in roles
        assert over.details["victim"]["kind"] == "explicit"
    down = next(f for f in m.findings if f.rule == "svm-coherency-downgrade")
    assert down.details["flags"] == "COHERENT"
    assert down.subject["gpu_ids"] == over.subject["gpu_ids"]


def test_c1_fingerprint_ignores_run_values():
    def run(base_pid, base_time, shift):
        t = Trace(False, pid=base_pid, t0=base_time)
        x = X + shift
        t.lock(1, x, 0x8000, FINE, [AIP(G)])
        t.lock(1, x + 0x3000, 0x1000, FINE, [AIP(G)])
        t.unlock(1, x + 0x3000, [(x + 0x3000, 0x1000, v1_revoke([G]))])
        return sorted(f.fingerprint for f in t.run().findings)

    assert run(1, 1000.0, 0) == run(777, 5e9, 0x10000000)


# --- C2: grown extent (V1 bug 1) ------------------------------------------------


@MODES
@pytest.mark.parametrize("buggy", [True, False], ids=["V1", "V3"])
def test_c2_grown_extent(explicit, buggy):
    t = Trace(explicit)
    reg = FINE if buggy else [AIP(G)] + FINE  # V3 grants at register
    t.lock(1, X + 0x10, 0x20, reg, [AIP(G)])  # A: page 0
    t.lock(1, X + 0x100, 0x7000, reg, [AIP(G)])  # B: same base, pages 0-7
    # V1: refcount 2 -> 1, no ioctl; V3: B's extent minus A's page
    t.unlock(1, X + 0x100, [] if buggy else [(X + 0x1000, 0x7000, [NO(G)] + [CLRF(COH)])])
    # the allocator reuses pages 1-7 for data made fine-grained by the application
    if explicit:
        t.begin(2, "hsa_amd_svm_attributes_set", ptr=X + 0x1000, size=0x7000)
    t.svm(2, X + 0x1000, 0x7000, [ACC(G), SETF(COH)])
    if explicit:
        t.end(2, "hsa_amd_svm_attributes_set")
    # V1: base goes cold -> revoke the grown extent; V3: A's own page only
    t.unlock(1, X + 0x10, [(X, 0x8000, v1_revoke([G]))] if buggy else [(X, 0x1000, [NO(G)])])
    m = t.run()
    if not buggy:
        assert m.findings == []
        return
    # Without the unlock windows the revoke looks like B's own release (B's
    # no-ioctl deregistration is invisible): the grown extent cannot be told.
    cause = "grown-extent" if explicit else None
    assert summary(m) == [("svm-coherency-downgrade", cause), ("svm-over-revoke", cause)]
    over = next(f for f in m.findings if f.rule == "svm-over-revoke")
    assert (over.subject["start"], over.subject["end"]) == (hex(X + 0x1000), hex(X + 0x8000))
    assert over.details["victim"]["kind"] == "application"
    assert over.details["pages"] == 7


# --- C3 / kfdtest SVMApiRegisterReGrant: VA reuse without re-grant -------------


@MODES
@pytest.mark.parametrize("buggy", [True, False], ids=["V1", "V3"])
def test_c3_regrant(explicit, buggy):
    t = Trace(explicit)
    t.mmap(1, X, PAGE)
    reg = FINE if buggy else [AIP(G)] + FINE
    rev = v1_revoke([G]) if buggy else [NO(G)]
    t.lock(1, X, PAGE, reg)  # register only: no map
    t.unlock(1, X, [(X, PAGE, rev)])
    t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS)
    t.lock(1, X, PAGE, reg)  # the allocator hands X out again
    again = t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS if buggy else kfd.ATTR_ACCESS_IN_PLACE)
    t.unlock(1, X, [(X, PAGE, rev)])
    t.munmap(1, X, PAGE)
    m = t.run()
    if not buggy:
        assert m.findings == []
        return
    assert summary(m) == [("svm-stale-no-access", None)]
    f = m.findings[0]
    assert f.subject["gpu_ids"] == [hex(G)]
    assert any(same(e.event, again) for e in f.evidence)  # GET_ATTR is extra evidence
    assert f.details["get_attr_confirms"]


# --- kfdtest SVMApiPartialPageNotRevoked ---------------------------------------


@MODES
@pytest.mark.parametrize("buggy", [True, False], ids=["outward", "inward"])
def test_partial_page(explicit, buggy):
    t = Trace(explicit)
    t.mmap(1, X, 2 * PAGE)
    grant = [AIP(G)] + FINE
    t.lock(2, X + 0x800, 0x1000, grant)  # neighbour on pages 0-1
    t.lock(1, X, 0x10, grant)  # 16 bytes at the page start
    # buggy rounds the revoke outward (page 0), fixed revokes whole pages only (none)
    t.unlock(1, X, [(X, PAGE, [NO(G)])] if buggy else [])
    m = t.run()
    if not buggy:
        assert m.findings == []
        return
    assert summary(m) == [("svm-over-revoke", "shared-page")]
    assert m.findings[0].subject["start"] == hex(X)
    assert m.findings[0].subject["end"] == hex(X + PAGE)


@MODES
def test_partial_page_kfdtest_fixed_clean(explicit):
    """The kfdtest sequence itself on a fixed runtime: nothing to report."""
    t = Trace(explicit)
    t.mmap(1, X, 2 * PAGE)
    grant = [AIP(G)] + FINE
    t.lock(1, X, 0x10, grant)
    t.unlock(1, X, [])
    t.get_access(1, X, PAGE, G, kfd.ATTR_ACCESS_IN_PLACE)
    t.lock(1, X, PAGE, grant)
    t.unlock(1, X, [(X, PAGE, [NO(G)])])
    t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS)
    m = t.run()
    assert m.findings == []


# --- the two adjacent 17-page pins racing (rocm-paths 6) ------------------------

A_PTR, B_PTR, SZ17 = X, X + 0x10000, 0x11000
GRANT = [AIP(G)] + COARSE


def _race(explicit, order):
    t = Trace(explicit)
    t.lock(1, A_PTR, SZ17, GRANT, [AIP(G)])
    t.now += 1e-3
    t0 = t.now
    if order == "fixed-b":  # T1's NO_ACCESS completes before T2's grant
        t.unlock(1, A_PTR, [(A_PTR, SZ17, [NO(G)] + COARSE)])
        t.lock(2, B_PTR, SZ17, GRANT, [AIP(G)])
        return t
    if order == "fixed-a":  # B inserted before T1 computes: 16 pages revoked
        t.lock(2, B_PTR, SZ17, GRANT, [AIP(G)])
        t.unlock(1, A_PTR, [(A_PTR, 0x10000, [NO(G)] + COARSE)])
        return t
    # first commit of #11411: T1 computes, drops the lock; T2 grants; T1 revokes
    if explicit:
        t.begin(1, "hsa_amd_memory_unlock", host_ptr=A_PTR)
        t.begin(2, "hsa_amd_memory_lock", host_ptr=B_PTR, size=SZ17)
    t.svm(2, B_PTR, SZ17, GRANT)
    if order == "buggy":
        t.svm(2, B_PTR, SZ17, [AIP(G)])
        t.svm(1, A_PTR, SZ17, [NO(G)] + COARSE)
    else:  # concurrent: the map and the revoke overlap, the map completes first
        t.svm(2, B_PTR, SZ17, [AIP(G)], at=t.now, dur=4e-5)
        t.svm(1, A_PTR, SZ17, [NO(G)] + COARSE, at=t.now + 1e-5, dur=5e-5)
        t.now += 1e-4
    if explicit:
        t.end(2, "hsa_amd_memory_lock")
        t.end(1, "hsa_amd_memory_unlock")
    assert t.now > t0
    return t


@MODES
@pytest.mark.parametrize(
    "order,cause,certainty",
    [
        ("buggy", None, "certain"),
        ("concurrent", "cross-thread-order", "concurrent"),
        ("fixed-a", None, None),
        ("fixed-b", None, None),
    ],
)
def test_adjacent_17_page_race(explicit, order, cause, certainty):
    m = _race(explicit, order).run()
    if certainty is None:
        assert m.findings == []
        return
    if cause is None:
        # with the unlock's window the race is visible; without it only the page
        cause = "cross-thread-order" if explicit else "shared-page"
    assert summary(m) == [("svm-over-revoke", cause)]
    f = m.findings[0]
    assert f.details["order"] == certainty
    assert (f.subject["start"], f.subject["end"]) == (hex(X + 0x10000), hex(X + 0x11000))
    assert f.tid == 1
    assert f.details["victim"]["tid"] == 2


# --- clr hostUnlock NO_ACCESS before unlock (#6724) ------------------------------


@MODES
@pytest.mark.parametrize("buggy", [True, False], ids=["6724", "7085-revert"])
def test_clr_no_access_before_unlock(explicit, buggy):
    t = Trace(explicit)
    a, b, n = X + 0x10, X + 0x10020, 0x10000  # glibc chunks: share page 16
    t.lock(1, a, n, COARSE, [AIP(G)])
    t.lock(2, b, n, COARSE, [AIP(G)])
    if buggy:  # SetSvmAttrib rounds outward: pages 0-16, page 16 is B's too
        if explicit:
            t.begin(1, "hsa_amd_svm_attributes_set", ptr=a, size=n)
        t.svm(1, X, 0x11000, [NO(G)])
        if explicit:
            t.end(1, "hsa_amd_svm_attributes_set")
    t.unlock(1, a, [])  # V0: unlock issues nothing
    m = t.run()
    if not buggy:
        assert m.findings == []
        return
    assert summary(m) == [("svm-over-revoke", "shared-page")]
    assert m.findings[0].subject["start"] == hex(X + 0x10000)


# --- V4: grant at map, revoke only granted GPUs ---------------------------------


@MODES
@pytest.mark.parametrize("revoke_pages", [16, 17])
def test_v4_revokes_only_granted_gpus(explicit, revoke_pages):
    g1, g2 = GPUS8[0], GPUS8[1]
    t = Trace(explicit)
    t.lock(1, A_PTR, SZ17, COARSE, [AIP(g1)])
    t.lock(2, B_PTR, SZ17, COARSE, [AIP(g2)])
    t.unlock(1, A_PTR, [(A_PTR, revoke_pages * PAGE, [NO(g1)])])
    t.unlock(2, B_PTR, [(B_PTR, SZ17, [NO(g2)])])
    assert t.run().findings == []


# --- clean paths ----------------------------------------------------------------


@MODES
def test_clean_v0_many_threads(explicit):
    """Baseline runtime: register + map, deregister issues nothing."""
    t = Trace(explicit)
    for i in range(6):
        # one pool: mixing pools on a shared page is a downgrade (tested below)
        t.lock(1 + i % 3, X + i * 0x10000, SZ17, FINE, [AIP(g) for g in GPUS8[:2]])
    for i in range(6):
        t.unlock(1 + (i + 1) % 3, X + i * 0x10000, [])
    if explicit:  # unlocked memory may be freed
        t.munmap(1, X, 0x80000)
    assert t.run().findings == []


@MODES
def test_clean_v3_shared_pages(explicit):
    t = Trace(explicit)
    for i in range(4):
        t.lock(1 + i % 2, X + i * 0x10000, SZ17, GRANT, [AIP(G)])
    # last reference of each: its extent minus surviving coverage
    t.unlock(1, X, [(X, 0x10000, [NO(G)])])
    t.unlock(2, X + 0x10000, [(X + 0x10000, 0x10000, [NO(G)])])
    t.unlock(1, X + 0x20000, [(X + 0x20000, 0x10000, [NO(G)])])
    t.unlock(2, X + 0x30000, [(X + 0x30000, 0x11000, [NO(G)])])
    t.munmap(1, X, 0x100000)
    assert t.run().findings == []


def test_clean_application_managed_range():
    t = Trace(False)
    t.mmap(1, X, 0x200000)
    t.svm(1, X, 0x200000, [(kfd.ATTR_PREFERRED_LOC, G), ACC(G), SETF(COH)])
    t.svm(1, X, 0x200000, [(kfd.ATTR_GRANULARITY, 4)])
    t.svm(1, X + 0x100000, 0x1000, [(kfd.ATTR_PREFETCH_LOC, G)])
    t.svm(
        1,
        X,
        0x200000,
        [(kfd.ATTR_PREFERRED_LOC, 0), (kfd.ATTR_SET_FLAGS, 0)],
        op=kfd.SVM_OP_GET_ATTR,
        out=[(kfd.ATTR_PREFERRED_LOC, G), (kfd.ATTR_SET_FLAGS, kfd.FLAG_HOST_ACCESS | COH)],
    )
    t.svm(1, X, 0x200000, [NO(G)])  # its own NO_ACCESS on exactly its range
    t.munmap(1, X, 0x200000)
    m = t.run()
    assert m.findings == []


# --- the other rules -------------------------------------------------------------


@MODES
def test_unmap_registered(explicit):
    t = Trace(explicit)
    t.lock(1, X, 0x2000, GRANT, [AIP(G)])
    t.munmap(1, X, 0x1000)
    m = t.run()
    assert [(f.rule, f.severity) for f in m.findings] == [("svm-unmap-registered", "warning" if explicit else "note")]


@pytest.mark.parametrize(
    "new_len, unmapped", [(0x2000, True), (0x1800, True), (0x2001, False), (0x2FFF, False), (0x3000, False)]
)
def test_mremap_shrink_keeps_the_partial_page(new_len, unmapped):
    # mremap page-aligns both lengths (mm/mremap.c): shrinking three pages to
    # 0x2001 bytes keeps all three mapped, so the lock on the third page is
    # untouched; only a new length of two pages or less unmaps it.
    t = Trace(True)
    t.mmap(1, X, 0x3000)
    t.lock(1, X + 0x2000, 0x1000, GRANT, [AIP(G)])
    t._ev(Mremap, 1, old_addr=X, old_len=0x3000, new_len=new_len, ret=X)
    m = t.run()
    assert [f.rule for f in m.findings] == (["svm-unmap-registered"] if unmapped else [])


def test_unmap_resets_pages_and_ends_claims():
    t = Trace(False)
    t.lock(1, X, 0x2000, FINE, [AIP(G)])
    t.munmap(1, X, 0x2000)
    t.mmap(1, X, 0x2000)
    t.svm(1, X, 0x2000, v1_revoke([G]))  # nothing left to hurt
    m = t.run(watch=(X, X + 0x2000))
    assert [f.rule for f in m.findings] == ["svm-unmap-registered"]
    # the munmap forgot both pages: the revoke made one new range, no claim on it
    assert len(m.history[-1][2]["pieces"]) == 1
    assert m.history[-1][2]["claims"] == "none"


def test_bad_range():
    t = Trace(False)
    t.svm(1, X + 0x10, 0x1000, [AIP(G)])  # unaligned start
    t.svm(1, X, 0, [AIP(G)])  # zero size
    t.svm(1, X, 0x1000, [AIP(G)], err="EFAULT")  # not mapped
    t.svm(1, X, 0x2000, [AIP(G)], err="EINTR")  # retried: fine
    t.svm(1, X, 0x2000, [AIP(G)])
    t.svm(1, X, 0x3000, [AIP(G)], err="EAGAIN")  # never retried
    t.svm(1, X, 0x1000, FINE)
    m = t.run()
    assert [f.rule for f in m.findings] == ["svm-bad-range"] * 4
    whys = [f.key[0] for f in m.findings]
    assert whys == ["unaligned start", "zero size", "failed with EFAULT", "failed with EAGAIN and was not retried"]


def test_model_mismatch_and_xnack_caution():
    t = Trace(False)
    t.svm(1, X, 0x2000, FINE)  # access left at default
    t.get_access(1, X, 0x2000, G, kfd.ATTR_ACCESS)  # XNACK unknown: no judgement
    t.svm(1, X, 0x1000, [AIP(G)])
    t.get_access(1, X, 0x1000, G, kfd.ATTR_ACCESS_IN_PLACE)  # agrees
    t.get_access(1, X, 0x1000, G, kfd.ATTR_NO_ACCESS)  # disagrees
    t.svm(
        1,
        X,
        0x2000,
        [SETF(COH), CLRF(0)],
        op=kfd.SVM_OP_GET_ATTR,
        out=[
            (kfd.ATTR_SET_FLAGS, kfd.FLAG_HOST_ACCESS | COH),
            (kfd.ATTR_CLR_FLAGS, ~(kfd.FLAG_HOST_ACCESS | COH) & 0xFFFFFFFF),
        ],
    )
    m = t.run()
    assert [f.rule for f in m.findings] == ["svm-model-mismatch"]
    assert "ACCESS for GPU" in m.findings[0].message
    # with XNACK known off, default access is no access: ACCESS is a mismatch
    assert len(t.run(xnack=False).findings) == 2


def test_coarse_registration_downgrades_fine_neighbour():
    """Whatever the shape: a registration clearing COHERENT on a shared page."""
    t = Trace(False)
    t.lock(1, X, 0x11000, FINE, [AIP(G)])
    t.lock(2, X + 0x10000, 0x11000, COARSE, [AIP(G)])
    m = t.run()
    assert summary(m) == [("svm-coherency-downgrade", None)]
    assert m.findings[0].subject["start"] == hex(X + 0x10000)
    assert m.findings[0].details["flags"] == "COHERENT"


def test_history_watch():
    t = Trace(True)
    t.lock(1, X, 0x8000, FINE, [AIP(G)])
    t.lock(1, X + 0x3000, 0x1000, FINE, [AIP(G)])
    t.unlock(1, X + 0x3000, [(X + 0x3000, 0x1000, v1_revoke([G]))])
    t.lock(1, X + 0x100000, 0x1000, FINE, [AIP(G)])  # elsewhere: not recorded
    m = t.run(watch=(X + 0x3000, X + 0x3001))
    whats = [w for _, w, _ in m.history]
    # E's register + map + lock, H's register + map + lock, the revoke, the unlock
    assert len(whats) == 8
    assert whats[0].startswith("SET_ATTR SET_FLAGS(COHERENT)")
    assert "takes gpu" in whats[6] and "releases" in whats[6]
    state = m.history[6][2]
    assert state["pieces"][0]["access"] == {hex(G): "NO_ACCESS"}
    assert "lock(" in state["claims"][0]


def test_limits_listed():
    limits = svm_run([]).limits
    assert any("identical page ranges" in x for x in limits)
    assert any("no ioctl" in x for x in limits)


def test_partial_page_application_neighbour_then_own_no_access():
    """kfdtest with the program's own SVM range on the page: the V1 outward
    revoke hurts it (shared page); after the program ends its range itself, a
    register-only claim on the page is not 'stale' (no deregistration left it
    NO_ACCESS)."""
    t = Trace(False)
    t.mmap(1, X, 2 * PAGE)
    t.svm(1, X, 2 * PAGE, [ACC(G)])
    t.svm(1, X, PAGE, COARSE)  # register 16 bytes (V1)
    t.svm(1, X, PAGE, v1_revoke([G]))  # deregister, outward
    t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS)
    t.svm(1, X, 2 * PAGE, [NO(G)])  # the program ends its range
    t.svm(1, X, PAGE, COARSE)  # register the whole page
    t.svm(1, X, PAGE, v1_revoke([G]))
    t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS)
    t.munmap(1, X, 2 * PAGE)
    m = t.run()
    assert summary(m) == [("svm-over-revoke", "shared-page")]
    assert m.findings[0].subject["gpu_ids"] == [hex(G)]


def test_c3_v4_register_only_never_revoked():
    """V4 grants at map only: a register-only caller issues no revoke, so the
    munmap removes a claim that still looks registered (a note)."""
    t = Trace(False)
    t.mmap(1, X, PAGE)
    t.svm(1, X, PAGE, COARSE)
    t.get_access(1, X, PAGE, G, kfd.ATTR_NO_ACCESS)  # XNACK unknown: not judged
    t.svm(1, X, PAGE, COARSE)
    t.munmap(1, X, PAGE)
    m = t.run()
    assert [(f.rule, f.severity, f.subject["gpu_ids"]) for f in m.findings] == [("svm-unmap-registered", "note", [])]


# --- liveness: what the trace proves of a victim --------------------


@pytest.mark.parametrize("began_first", [True, False], ids=["unlock-first", "unlock-after"])
def test_an_unlock_that_began_before_the_revoke_leaves_no_victim(began_first):
    """A's unlock begins before B's revoke takes A's shared page; its line
    (written at return) comes after the revoke's.  A's release had begun: no
    finding.  The same revoke before A's unlock began is an error."""
    t = Trace(True)
    t.mmap(1, X, 4 * PAGE)
    t.lock(1, X, 2 * PAGE, FINE, [AIP(G)])  # A [X, X+2P)
    t.lock(2, X + PAGE, 2 * PAGE, FINE, [AIP(G)])  # B [X+P, X+3P): page X+P shared
    if began_first:
        t.begin(1, "hsa_amd_memory_unlock", host_ptr=X)
    t.unlock(2, X + PAGE, revokes=[(X + PAGE, 2 * PAGE, v1_revoke([G]))])
    if not began_first:
        t.begin(1, "hsa_amd_memory_unlock", host_ptr=X)
    # A's own revoke: computed while B was registered, it leaves page X+P out
    t.svm(1, X, PAGE if began_first else 2 * PAGE, v1_revoke([G]))
    t.end(1, "hsa_amd_memory_unlock")
    m = t.run()
    hurt = [f for f in m.findings if f.rule in ("svm-over-revoke", "svm-coherency-downgrade")]
    if began_first:
        assert hurt == []
    else:
        assert {f.severity for f in hurt} == {"error"} and len(hurt) == 2


def test_the_programs_own_change_inside_its_range_hurts_nothing():
    """hsa_amd_svm_attributes_set on a sub-range of the program's own range
    (made coarse, then revoked): what the program asked for, not a victim."""
    t = Trace(False)
    t.mmap(1, X, 8 * PAGE)
    t.begin(1, "hsa_amd_svm_attributes_set", ptr=X, size=8 * PAGE)
    t.svm(1, X, 8 * PAGE, [SETF(COH), AIP(G)])
    t.end(1, "hsa_amd_svm_attributes_set")
    t.begin(1, "hsa_amd_svm_attributes_set", ptr=X + 4 * PAGE, size=4 * PAGE)
    t.svm(1, X + 4 * PAGE, 4 * PAGE, [CLRF(COH), ACC(G)])
    t.end(1, "hsa_amd_svm_attributes_set")
    t.begin(1, "hsa_amd_svm_attributes_set", ptr=X + 4 * PAGE, size=4 * PAGE)
    t.svm(1, X + 4 * PAGE, 4 * PAGE, [NO(G)])
    t.end(1, "hsa_amd_svm_attributes_set")
    t.munmap(1, X, 8 * PAGE)
    assert [f for f in t.run().findings if f.severity != "note"] == []


def test_a_silent_runtime_gives_notes():
    """The baseline runtime: registrations come and go on reused pages and no
    revoke ever releases one.  A coarse registration clearing COHERENT on the
    pages of an earlier fine one (deregistered without an ioctl) is not an
    error: its liveness is not proven."""
    t = Trace(False)
    t.mmap(1, X, 4 * PAGE)
    for _ in range(2):
        t.svm(1, X, 4 * PAGE, FINE)
        t.svm(1, X, 4 * PAGE, [AIP(G)])
        t.svm(1, X, 2 * PAGE, COARSE)  # a half, coarse, later
        t.svm(1, X, 2 * PAGE, [AIP(G)])
    m = t.run()
    hurt = [f for f in m.findings if f.rule == "svm-coherency-downgrade"]
    assert hurt and {f.severity for f in hurt} == {"note"}


def shows_subtraction(t, w):
    """Earlier in the trace, on thread 3: W and a neighbour, and W's revoke
    leaving out the page the neighbour covers (the runtime subtracts the
    registrations it still counts)."""
    t.svm(3, w, 2 * PAGE, FINE)
    t.svm(3, w, 2 * PAGE, [AIP(G)])
    t.svm(3, w + PAGE, 2 * PAGE, FINE)
    t.svm(3, w + PAGE, 2 * PAGE, [AIP(G)])
    t.svm(3, w, PAGE, v1_revoke([G]))
    t.svm(3, w + PAGE, 2 * PAGE, v1_revoke([G]))


@pytest.mark.parametrize(
    "case,left",
    [
        ("victim-mapped-before-revoke-computed", True),  # the revoke was computed after V left the table
        ("revoke-may-predate-victim", False),  # computed before V registered: the real race
        ("runtime-never-subtracts", False),  # no evidence the runtime counts neighbours
    ],
)
def test_a_revoke_computed_after_the_victim_left_the_table(case, left):
    """Liveness read from a release revoke's range, the other way round: a
    runtime that leaves out of its revokes the pages its other registrations
    cover counted every registration it held when it computed one.  X's
    revoke takes the page X shares with V although V was registered and
    mapped before X's revoke could have been computed (after X's thread's
    previous call): V had already left the runtime's table, its release had
    begun, nothing live was hurt.  V's thread stays quiet until V's own revoke
    (computed under the lock, issued late), so the windows alone leave a
    note; the range decides."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V, XA = X + 0x10000, X  # X [X, X+17P), V [X+16P, X+33P)
    if case != "runtime-never-subtracts":
        shows_subtraction(t, X + 0x30000)
    if case == "revoke-may-predate-victim":
        t.svm(1, XA, SZ17, FINE)  # X registered, mapped by thread 1
        t.svm(1, XA, SZ17, [AIP(G)])
        t.now += 1e-3  # thread 1 computes X's revoke here ...
        t.svm(2, V, SZ17, FINE)  # ... V registered and mapped after
        t.svm(2, V, SZ17, [AIP(G)])
    else:
        t.svm(2, V, SZ17, FINE)  # V registered and mapped first
        t.svm(2, V, SZ17, [AIP(G)])
        t.now += 1e-3
        t.svm(1, XA, SZ17, FINE)  # then X, by thread 1
        t.svm(1, XA, SZ17, [AIP(G)])
    t.svm(1, XA, SZ17, v1_revoke([G]))  # X's revoke takes the shared page
    t.svm(2, V, SZ17, v1_revoke([G]))  # V's own revoke lands later
    hurt = [f for f in t.run().findings if f.rule in ("svm-over-revoke", "svm-coherency-downgrade")]
    if left:
        assert hurt == []
    else:
        assert hurt and {f.severity for f in hurt} == {"note"}
        assert {f.subject["start"] for f in hurt} == {hex(V)}


def test_a_call_a_microsecond_past_its_intent_is_still_inside():
    """Times and durations are logged to the microsecond, each cut: the
    program's own NO_ACCESS over its two neighbouring ranges (hsaops
    svm_neighbours on the real runtime) may seem to end 1 us after the
    hsa_amd_svm_attributes_set that issued it.  It is still the program's
    own change: no victim (it was two false over-revokes under load)."""
    t = Trace(False)
    t.mmap(1, X, 0x20000)
    A, B = X, X + 0x8000  # share page X+0x8000
    for start in (A, B):
        t.begin(1, "hsa_amd_svm_attributes_set", ptr=start + 0x380, size=0x8000)
        t.svm(1, start, 0x9000, [AIP(G), SETF(COH)])
        t.end(1, "hsa_amd_svm_attributes_set")
    t0 = t.now + 1e-4
    t.svm(1, A, 0x11000, [NO(G)], at=t0, dur=6e-6)  # ends 1 us past the intent
    t._ev(
        Intent,
        1,
        dur=5e-6,
        at=t0,
        name="hsa_amd_svm_attributes_set",
        args={"ptr": A + 0x380, "size": 0x10000},
        ret=0,
        text="hsa_amd_svm_attributes_set(...) = 0",
    )
    t.now = t0 + 1e-4
    assert [f for f in t.run().findings if f.severity != "note"] == []


@pytest.mark.parametrize("case", ["same-range-pinned-again", "victim-registered-twice"])
def test_a_registration_made_since_explains_what_a_release_left_out(case):
    """Liveness: the converse reading of a release revoke's range must not
    credit the wrong claim.  X's revoke (computed before V registered)
    takes the page X shares with V while V is in use: real damage.  What
    V's own release later leaves out is explained by what the runtime held
    *then*: X's range pinned again (X'), or V registered twice in the
    model's view (an earlier V's release computed before V came back).
    Neither says X was still counted when V's release was computed, so the
    damage stays reported (a note: V's thread is quiet in the windows).
    The first case was a missed damage event of the threaded emulation
    (test_svm_emul, a schedule seen once in CI)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V, XA = X + 0x10000, X  # X [X, X+17P), V [X+16P, X+33P)
    shows_subtraction(t, X + 0x30000)
    if case == "same-range-pinned-again":
        t.svm(1, XA, SZ17, FINE)  # X by thread 1
        t.svm(1, XA, SZ17, [AIP(G)])
        t.now += 1e-3  # X's revoke computed: no V yet
        t.svm(2, V, SZ17, FINE)  # V by thread 2
        t.svm(2, V, SZ17, [AIP(G)])
        t.svm(1, XA, SZ17, v1_revoke([G]))  # lands on V's first page
        t.svm(3, XA, SZ17, FINE)  # X's range pinned again (X')
        t.svm(3, XA, SZ17, [AIP(G)])
        t.svm(2, V + PAGE, SZ17 - PAGE, v1_revoke([G]))  # V's release leaves out X''s page
    else:
        t.svm(3, V, SZ17, FINE)  # V1 by thread 3
        t.svm(3, V, SZ17, [AIP(G)])
        t.now += 1e-3
        t.svm(1, XA, SZ17, FINE)  # X by thread 1
        t.svm(1, XA, SZ17, [AIP(G)])
        t.now += 1e-3  # V1's release computed (X counted),
        t.svm(2, V, SZ17, FINE)  # then X's (V1 gone); V2 comes back
        t.svm(2, V, SZ17, [AIP(G)])
        t.svm(1, XA, SZ17, v1_revoke([G]))  # X's revoke: V2's first page
        t.svm(3, V + PAGE, SZ17 - PAGE, v1_revoke([G]))  # V1's release lands
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke"]
    assert {(f.subject["start"], f.subject["end"]) for f in hurt} == {(hex(V), hex(V + PAGE))}
    assert {f.severity for f in hurt} == {"note"}


def test_a_victim_whose_unlock_began_before_the_revoke_ran_was_not_hurt():
    """SPEC 4.3 with intent calls: a victim is live until its unlock begins.
    X's unlock computes its revoke early (V not locked yet, so the page X
    shares with V is in it) and issues it late; V is locked and unlocked in
    between, and V's unlock begins before X's revoke runs.  The page was
    taken from a pin already being released: nothing to report (it was a
    false cross-thread-order warning when the revoking unlock's entry, not
    the revoke's, was the time compared)."""
    t = Trace(True)
    t.mmap(1, X, 0x40000)
    XP, VP = X + 0x10, X + 0x10020  # X [X, X+17P), V [X+16P, X+33P)
    t.lock(1, XP, 0x10000, FINE, [AIP(G)])
    t.begin(1, "hsa_amd_memory_unlock", host_ptr=XP)  # X's revoke computed here
    t.lock(2, VP, 0x10000, FINE, [AIP(G)])
    t.begin(2, "hsa_amd_memory_unlock", host_ptr=VP)  # V's release begins
    t.svm(1, X, SZ17, v1_revoke([G]))  # X's revoke lands on V's first page
    t.end(1, "hsa_amd_memory_unlock")
    t.svm(2, X + 16 * PAGE, SZ17, v1_revoke([G]))  # V's, computed after X had left
    t.end(2, "hsa_amd_memory_unlock")
    assert [f for f in t.run().findings if f.rule.startswith("svm-")] == []


def test_a_lock_logged_as_ending_before_its_own_ioctls_still_owns_them():
    """One thread's records are written in the order its calls return: the
    registration ioctls whose records come before the lock's, and which
    began after it, ran inside it, whatever the logged end of the lock says
    (seen on a VM: a lock logged as 11 us long whose register began 47 us
    after it).  X's claim is the lock's, and the revoke of X's unlock that
    takes V's page while V is in use is an error naming the lock."""
    t = Trace(True)
    t.mmap(1, X, 0x40000)
    XP, VP = X + 0x10, X + 0x10020
    t0 = t.now
    t.svm(1, X, SZ17, FINE, at=t0 + 50e-6, dur=5e-6)  # began after the lock,
    t.svm(1, X, SZ17, [AIP(G)], at=t0 + 56e-6, dur=4e-6)  # logged after its end
    t._ev(
        Intent,
        1,
        dur=11e-6,
        at=t0,
        name="hsa_amd_memory_lock",
        args={"host_ptr": XP, "size": 0x10000},
        ret=0,
        text="hsa_amd_memory_lock(...) = 0",
    )
    t.now = t0 + 1e-4
    t.begin(1, "hsa_amd_memory_unlock", host_ptr=XP)
    t.lock(2, VP, 0x10000, FINE, [AIP(G)])  # V locked after X's revoke was computed
    t.svm(1, X, SZ17, v1_revoke([G]))  # lands on V's first page, V in use
    t.end(1, "hsa_amd_memory_unlock")
    t.unlock(2, VP, [(X + 17 * PAGE, SZ17 - PAGE, v1_revoke([G]))])
    found = [f for f in t.run().findings if f.rule.startswith("svm-")]
    assert {(f.rule, f.severity) for f in found} == {("svm-over-revoke", "error"), ("svm-coherency-downgrade", "error")}
    for f in found:
        assert f.subject["start"] == hex(X + 16 * PAGE)
        assert f"released lock({XP:#x})" in f.message


def test_a_range_registered_again_after_the_call_is_not_proven_live():
    """Without intent calls one range registered twice is one claim (the
    runtime's refcount, or a release not landed yet).  X's revoke takes the
    page X shares with V; V's range is registered again by another thread
    after the revoke landed, and the release the trace later shows may be
    that later holder's: the first holder may have let go silently before
    the revoke.  Liveness is not proven: a note, not an error (the
    emulation's shared pins gave 16-54 false errors a run)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V = X + 0x10000
    t.svm(1, X, SZ17, FINE)
    t.svm(1, X, SZ17, [AIP(G)])
    t.now += 1e-3
    t.svm(2, V, SZ17, FINE)  # V by thread 2
    t.svm(2, V, SZ17, [AIP(G)])
    t.svm(1, X, SZ17, v1_revoke([G]))  # X's revoke takes V's first page
    t.svm(3, V, SZ17, FINE)  # V's range again, thread 3
    t.svm(3, V, SZ17, [AIP(G)])
    t.now += 1e-3
    t.svm(3, V, SZ17, v1_revoke([G]))  # the release the trace shows
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke"]
    assert [(f.subject["start"], f.severity) for f in hurt] == [(hex(V), "note")]


def test_an_unlock_does_not_end_a_claim_locked_after_it_began():
    """An unlock's line is written at its return: here after another
    thread's lock of the same pointer that began once the unlock's revoke
    had landed.  That lock made a new claim (the runtime had dropped the
    old one); the unlock is the old claim's, and its revoke hurt nobody.
    (Taking the newest claim of the pointer made the old one a victim of
    its own revoke: a false error on the emulation's shared pins.)"""
    t = Trace(True)
    t.mmap(1, X, 0x40000)
    P = X + 0x10
    t.lock(1, P, 0x10000, FINE, [AIP(G)])
    t.begin(1, "hsa_amd_memory_unlock", host_ptr=P)
    t.svm(1, X, SZ17, v1_revoke([G]))  # lands before the other lock
    t.lock(2, P, 0x10000, FINE, [AIP(G)])  # thread 2 locks P again
    t.end(1, "hsa_amd_memory_unlock")  # thread 1's line comes now
    t.now += 1e-3
    t.unlock(2, P, [(X, SZ17, v1_revoke([G]))])
    assert [f for f in t.run().findings if f.rule.startswith("svm-") and f.severity != "note"] == []


def test_a_lock_joining_a_claim_its_only_holder_was_unlocking_is_a_new_claim():
    """Thread 1 unlocks P (its only holder: the runtime drops the entry and
    computes the revoke), thread 2 locks P after that unlock began (a new
    entry: register and map again), and thread 1's late revoke lands on
    thread 2's pin.  Lines are written at return, so the model saw thread
    2's lock join the claim before thread 1's unlock; the unlock now splits
    the late lock off as its own claim, and the revoke's damage to it is an
    error (it was missed: the damage went to the claim being released)."""
    t = Trace(True)
    t.mmap(1, X, 0x40000)
    P = X + 0x10
    t.lock(1, P, 0x10000, FINE, [AIP(G)])
    t.begin(1, "hsa_amd_memory_unlock", host_ptr=P)  # revoke computed here
    t.lock(2, P, 0x10000, FINE, [AIP(G)])  # a new entry for P
    t.now += 1e-4
    t.svm(1, X, SZ17, v1_revoke([G]))  # lands on thread 2's pin
    t.end(1, "hsa_amd_memory_unlock")
    t.now += 1e-3
    t.unlock(2, P, [(X, SZ17, v1_revoke([G]))])
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke"]
    assert [(f.subject["start"], f.subject["end"], f.severity) for f in hurt] == [(hex(X), hex(X + SZ17), "error")]
    assert "tid 2" in hurt[0].message or any(e.tid == 2 for e in hurt[0].evidence)


def test_a_claim_released_by_an_enclosing_revoke_may_have_left_with_its_own_later():
    """Without intent calls a revoke releases the claims lying wholly inside
    its range.  V (2 pages) is registered and mapped by thread 1, which then
    goes quiet; W's revoke takes the page W shares with V; thread 3 then
    registers and revokes a range enclosing V, which the model takes as V's
    release, after the hurting call; V's own revoke of exactly its range
    lands last, from the quiet thread 1.  The runtime may have computed
    that one (V leaving its table) before W's revoke ran: V's liveness is
    not proven, a note, not an error (the emulation's v1 runtime with mixed
    pins gave such false errors: a revoke keyed by the first page, late)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V = X + 0x10000
    t.svm(1, V, 0x2000, FINE)  # V by thread 1
    t.svm(1, V, 0x2000, [AIP(G)])
    t.now += 1e-4
    t.svm(2, V - PAGE, 0x2000, FINE)  # W shares V's first page
    t.svm(2, V - PAGE, 0x2000, [AIP(G)])
    t.svm(2, V - PAGE, 0x2000, v1_revoke([G]))  # W's revoke takes it
    t.svm(3, V, 0x11000, FINE)  # a range enclosing V
    t.svm(3, V, 0x11000, [AIP(G)])
    t.svm(3, V, 0x11000, v1_revoke([G]))  # "releases" V too
    t.now += 1e-4
    t.svm(1, V, 0x2000, v1_revoke([G]))  # V's own revoke, late
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke"]
    assert [(f.subject["start"], f.severity) for f in hurt] == [(hex(V), "note")]


def test_a_revoke_of_a_neighbours_exact_range_may_be_the_victims_own():
    """A subtracting runtime revokes a registration's range minus what
    others cover, which can be exactly the range of another registration.
    V (2 pages) is registered and mapped by thread 1, which then goes quiet;
    N registers V's first page; X's revoke takes V's second page; thread 1's
    revoke of exactly N's range lands last.  The model gives it to N, but
    it may be V's own (V minus its second page, which X had), computed
    before X's revoke ran: V's liveness is not proven, a note.  (The
    mixed-pin soak of the emulation's v1 runtime gave such false errors.)"""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V = X + 0x10000
    t.svm(1, V, 2 * PAGE, FINE)  # V by thread 1
    t.svm(1, V, 2 * PAGE, [AIP(G)])
    t.now += 1e-4
    t.svm(3, V, PAGE, FINE)  # N: V's first page
    t.svm(3, V, PAGE, [AIP(G)])
    t.svm(4, V + PAGE, 2 * PAGE, FINE)  # X shares V's second page
    t.svm(4, V + PAGE, 2 * PAGE, [AIP(G)])
    t.svm(4, V + PAGE, 2 * PAGE, v1_revoke([G]))  # X's revoke takes it
    t.now += 1e-4
    t.svm(1, V, PAGE, v1_revoke([G]))  # exactly N's range
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke" and f.subject["start"] == hex(V + PAGE)]
    assert [f.severity for f in hurt] == ["note"]


def test_a_deregistrations_later_piece_was_computed_with_the_first():
    """A subtracting runtime revokes a registration minus the pages others
    cover, so one deregistration may issue two revokes, one after the
    other, both computed before the first.  V (17 pages, thread 1) is
    deregistered while N covers two pages in its middle: its pieces land
    one after the other; the first is read as the release of W (the
    smallest registration containing it) and takes V's pages; the second
    releases V.  V's release was computed before the first piece, so it
    was not hurt by it: not an error (the model used to take the end of
    the first piece as the earliest V's release began)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    V = X + 0x10000
    t.svm(2, V - PAGE, 4 * PAGE, FINE)  # W around V's first pages
    t.svm(2, V - PAGE, 4 * PAGE, [AIP(G)])
    t.svm(3, V + 3 * PAGE, 2 * PAGE, FINE)  # N in V's middle
    t.svm(3, V + 3 * PAGE, 2 * PAGE, [AIP(G)])
    t.svm(1, V, SZ17, FINE)  # V
    t.svm(1, V, SZ17, [AIP(G)])
    t.now += 1e-4
    t.svm(1, V, 3 * PAGE, v1_revoke([G]), dur=3e-5)  # V's pieces
    t.svm(1, V + 5 * PAGE, SZ17 - 5 * PAGE, v1_revoke([G]))
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke" and f.severity in ("error", "warning")]
    assert hurt == []


def test_a_revoke_of_an_awaited_range_from_the_claims_own_thread_is_its_release():
    """A is released by a revoke enclosing it (another thread's), so A's own
    late revoke, of exactly A's range, is awaited.  V, registered and mapped
    by thread 1 over A's pages and one more, is deregistered while N covers
    that last page: thread 1 revokes V minus N, which is exactly A's range.
    From V's own thread that revoke is V's release, not A's: V is no
    victim of it (the awaited-range reading made V a certain victim of its
    own release in the mixed-pin soak)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    A = X + 0x10000
    t.svm(2, A, 2 * PAGE, FINE)  # A, thread 2
    t.svm(2, A, 2 * PAGE, [AIP(G)])
    t.svm(3, A - PAGE, 5 * PAGE, FINE)  # B encloses A
    t.svm(3, A - PAGE, 5 * PAGE, [AIP(G)])
    t.svm(3, A - PAGE, 5 * PAGE, v1_revoke([G]))  # releases B, and A inside it
    t.svm(4, A + 2 * PAGE, PAGE, FINE)  # N
    t.svm(4, A + 2 * PAGE, PAGE, [AIP(G)])
    t.svm(1, A, 3 * PAGE, FINE)  # V, thread 1
    t.svm(1, A, 3 * PAGE, [AIP(G)])
    t.svm(1, A, 2 * PAGE, v1_revoke([G]))  # V minus N: A's range
    hurt = [f for f in t.run().findings if f.rule == "svm-over-revoke" and f.severity in ("error", "warning")]
    assert hurt == []


def test_an_unlock_whose_pointer_was_locked_again_still_ends_its_claim():
    """Thread 1 locks P and begins unlocking it (the runtime drops P and
    computes P's revoke, then is preempted).  Thread 3 locks and unlocks Q,
    whose range encloses P's pages, twice: each revoke of Q takes P's pages
    (P had left the runtime's table).  Threads 2 and 4 lock and unlock P
    and Q anew before the line of thread 3's second unlock is written; then
    thread 1's late revoke lands and its unlock's line is written.  P's
    first claim was being released when Q's first revoke ran (its unlock
    had begun): nothing to report.  The model gave each unlock the
    pointer's current claim: threads 2 and 4 had made new ones (and their
    unlocks dropped them), so thread 3's second unlock and thread 1's found
    none, P's first claim stayed the victim of Q's first revoke and live
    for good: an error on the emulation's shared pins, where the program's
    own record shows no damage (the same runs missed real damage the
    unlocks' revokes did)."""
    t = Trace(True)
    t.mmap(1, X, 0x40000)
    P, Q = X + 2 * PAGE, X + 0x800  # P [2, 5) pages, Q [0, 9)
    t.lock(1, P, 0x3000, FINE, [AIP(G)])
    t.begin(1, "hsa_amd_memory_unlock", host_ptr=P)  # P's revoke computed here
    t.lock(3, Q, 0x8000, FINE, [AIP(G)])
    t.unlock(3, Q, [(X, 9 * PAGE, v1_revoke([G]))])  # takes P's pages
    t.lock(3, Q, 0x8000, FINE, [AIP(G)])
    t.begin(3, "hsa_amd_memory_unlock", host_ptr=Q)
    t.svm(3, X, 9 * PAGE, v1_revoke([G]))  # and again
    t.lock(2, P, 0x3000, FINE, [AIP(G)])  # a new entry for P
    t.unlock(2, P, [(P, 3 * PAGE, v1_revoke([G]))])
    t.lock(4, Q, 0x8000, FINE, [AIP(G)])  # and for Q
    t.unlock(4, Q, [(X, 9 * PAGE, v1_revoke([G]))])
    t.end(3, "hsa_amd_memory_unlock")  # written after threads 2 and 4's calls
    t.svm(1, P, 3 * PAGE, v1_revoke([G]))  # thread 1's revoke lands late
    t.end(1, "hsa_amd_memory_unlock")
    loud = [f for f in t.run().findings if f.rule.startswith("svm-") and f.severity != "note"]
    assert loud == []


def test_a_registration_all_of_whose_pages_others_cover_may_leave_silently():
    """A runtime that revokes a range minus what other registrations still
    cover issues nothing for a range they cover whole.  B is registered
    over the last page of A and the first of C; its deregistration comes
    later and is silent; then A's release revokes A's pages, B's first one
    among them.  Nothing shows B was still registered: a note, not an error
    (the emulation's `mixed v1 wide` run gave six errors against such a B,
    "certainly live" to the end of the trace, where the program's own
    record shows no damage)."""
    t = Trace(False)
    t.mmap(1, X, 0x40000)
    t.svm(3, X, 2 * PAGE, FINE)  # A [0, 2)
    t.svm(3, X, 2 * PAGE, [AIP(G)])
    t.svm(1, X + 2 * PAGE, 9 * PAGE, FINE)  # C [2, 11)
    t.svm(1, X + 2 * PAGE, 9 * PAGE, [AIP(G)])
    t.svm(2, X + PAGE, 2 * PAGE, FINE)  # B [1, 3): A and C cover it
    t.svm(2, X + PAGE, 2 * PAGE, [AIP(G)])
    t.now += 1e-4  # B's deregistration: nothing left to revoke, no ioctl
    t.svm(3, X, 2 * PAGE, v1_revoke([G]))  # A's release takes page 1
    found = [f for f in t.run().findings if f.rule.startswith("svm-")]
    assert found and {f.severity for f in found} == {"note"}
