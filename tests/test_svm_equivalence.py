"""The core's SVM model on rich random traffic against the page oracle.

Hypothesis-made and longer seeded sequences of everything the SVM model
reads (registrations and revokes with and without lock/unlock intents, the
program's own ranges, GET_ATTR, failed and unaligned calls, mmap/munmap/
mremap, legacy userptr pins, XNACK queries, exits) go through
rocrtrace._engine.run_svm_model with the whole range watched.  Whatever the
claims and rules make of them, the map under them must stay the kernel's:
every `show --addr` row's pieces equal tests/svm_oracle.py's ranges after
the kernel calls up to that event (a SET_ATTR the kernel refused, or that
was unaligned, changes nothing).  And the run is a function of its events:
the same sequence twice gives the same findings, rows and counts.

(The PieceMap under the map is checked against a page array by cargo test:
src/models/svm_map/tests.rs.)"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocrtrace import kfd

from coremodels import end, svm_run
from svm_oracle import Oracle
from vocab import Exit, Intent, Ioctl, Mmap, Mremap, Munmap, ProcessInfo, kind

X = 0x7F3A1C200000
PAGE = 0x1000
GPUS = (0x1A2B, 0x2B3C, 0x3C4D)
N = 40  # pages in play
COH, EXT = kfd.FLAG_COHERENT, kfd.FLAG_EXT_COHERENT


class Builder:
    def __init__(self):
        self.t = 1764435600.0
        self.events = [ProcessInfo(pid=1, tid=1, time=self.t, page_size=PAGE)]

    def _ev(self, cls, tid, dur=1e-5, at=None, **kw):
        t = self.t if at is None else at
        ev = cls(pid=1, tid=tid, time=t, dur=dur, file="t.log", line=len(self.events) + 1, seq=len(self.events), **kw)
        if at is None:
            self.t = t + dur + 1e-5
        self.events.append(ev)
        return ev

    def svm(self, tid, p0, n, attrs, op=kfd.SVM_OP_SET_ATTR, out=None, err=None, off=0):
        arg = {"start_addr": X + p0 * PAGE + off, "size": n * PAGE, "op": op, "nattr": len(attrs), "attrs": list(attrs)}
        return self._ev(
            Ioctl,
            tid,
            type=kfd.TYPE_KFD,
            nr=0x20,
            fd=3,
            ioctl="AMDKFD_IOC_SVM",
            arg=arg,
            out={"attrs": out} if out is not None else None,
            ret=-1 if err else 0,
            err=err,
            text="ioctl(3, AMDKFD_IOC_SVM, ...)",
        )

    def intent(self, tid, name, t0, ret=0, **args):
        self.events.append(
            Intent(
                pid=1,
                tid=tid,
                time=t0,
                dur=self.t - t0,
                file="t.log",
                line=len(self.events) + 1,
                seq=len(self.events),
                ret=ret,
                name=name,
                args=args,
                text=f"{name}(...)",
            )
        )
        self.t += 1e-5


def build(ops) -> list:
    b = Builder()
    for op in ops:
        kind, tid, p0, n, gi, x = op
        n = max(1, min(n, N + 2 - p0))
        gpus = [GPUS[i] for i in range(3) if gi & (1 << i)] or [GPUS[0]]
        if kind == "reg":
            t0 = b.t
            b.t += 1e-6
            attrs = [(kfd.ATTR_ACCESS_IN_PLACE, g) for g in gpus] if x % 4 else []
            attrs += (
                [(kfd.ATTR_SET_FLAGS, COH), (kfd.ATTR_CLR_FLAGS, EXT)]
                if x % 3 or not attrs
                else [(kfd.ATTR_CLR_FLAGS, COH | EXT)]
            )
            b.svm(tid, p0, n, attrs)
            if x % 5 == 0:
                b.svm(tid, p0, n, [(kfd.ATTR_ACCESS_IN_PLACE, g) for g in gpus])
            if x % 2:
                b.intent(
                    tid,
                    "hsa_amd_memory_lock" if x % 7 else "hsa_amd_memory_lock_to_pool",
                    t0,
                    ret=0 if x % 11 else 1,
                    host_ptr=X + p0 * PAGE + 0x10 * (x % 3),
                    size=n * PAGE - 0x20 * (x % 3),
                )
        elif kind == "rev":
            t0 = b.t
            b.t += 1e-6
            attrs = [(kfd.ATTR_NO_ACCESS, g) for g in gpus]
            if x % 4 == 0:
                attrs.append((kfd.ATTR_CLR_FLAGS, COH))
            lo = p0 + (x % 3 == 1)
            hi = p0 + n - (x % 3 == 2)
            if lo < hi:
                b.svm(tid, lo, hi - lo, attrs, err=("EINTR" if x % 13 == 0 else "ENOMEM" if x % 17 == 0 else None))
            if x % 2:
                b.intent(
                    tid, "hsa_amd_memory_unlock", t0, ret=0 if x % 19 else 1, host_ptr=X + p0 * PAGE + 0x10 * (x % 3)
                )
        elif kind == "app":
            attrs = [(kfd.ATTR_ACCESS, g) for g in gpus]
            if x % 3 == 0:
                attrs.append((kfd.ATTR_SET_FLAGS, kfd.FLAG_GPU_RO))
            if x % 5 == 0:
                attrs = [(kfd.ATTR_NO_ACCESS, g) for g in gpus]  # the program's own revoke
            b.svm(tid, p0, n, attrs, err="EAGAIN" if x % 23 == 0 else None)
        elif kind == "other":
            attrs = (
                [(kfd.ATTR_PREFETCH_LOC, gpus[0])]
                if x % 3 == 0
                else [(kfd.ATTR_PREFERRED_LOC, gpus[0]), (kfd.ATTR_GRANULARITY, x % 12)]
                if x % 3 == 1
                else [
                    (kfd.ATTR_SET_FLAGS, kfd.FLAG_HOST_ACCESS),
                    (kfd.ATTR_NO_ACCESS, gpus[0]),
                    (kfd.ATTR_ACCESS, gpus[0]),
                ]
            )
            b.svm(tid, p0, n, attrs, off=0x10 if x % 29 == 0 else 0)
        elif kind == "get":
            ans = (kfd.ATTR_ACCESS, kfd.ATTR_ACCESS_IN_PLACE, kfd.ATTR_NO_ACCESS)[x % 3]
            q = [(kfd.ATTR_ACCESS, gpus[0])]
            out = [(ans, gpus[0])]
            if x % 2:
                q.append((kfd.ATTR_SET_FLAGS, 0))
                out.append((kfd.ATTR_SET_FLAGS, (0, COH, kfd.FLAG_HOST_ACCESS)[x % 3]))
            b.svm(tid, p0, n, q, op=kfd.SVM_OP_GET_ATTR, out=out)
        elif kind == "svmset":
            # the program's own hsa_amd_svm_attributes_set: fine-grained
            # (registration-shaped), no-access or coarse
            t0 = b.t
            b.t += 1e-6
            attrs = (
                [(kfd.ATTR_ACCESS_IN_PLACE, gpus[0]), (kfd.ATTR_SET_FLAGS, COH)]
                if x % 3 == 0
                else [(kfd.ATTR_NO_ACCESS, g) for g in gpus]
                if x % 3 == 1
                else [(kfd.ATTR_CLR_FLAGS, COH)]
            )
            b.svm(tid, p0, n, attrs)
            b.intent(
                tid,
                "hsa_amd_svm_attributes_set",
                t0,
                ptr=X + p0 * PAGE + 0x10 * (x % 2),
                size=n * PAGE - 0x20 * (x % 2),
            )
        elif kind == "pin":
            # the legacy lock: a userptr buffer, no SVM ioctl (nested when x is odd)
            t0 = b.t
            b.t += 1e-6
            if x % 2 == 0:
                b._ev(
                    Ioctl,
                    tid,
                    type=kfd.TYPE_KFD,
                    nr=0x16,
                    fd=3,
                    ioctl="AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
                    arg={
                        "va_addr": 0x7F0000000000,
                        "size": n * PAGE,
                        "gpu_id": GPUS[0],
                        "flags": kfd.ALLOC_FLAG_USERPTR,
                        "mmap_offset": X + p0 * PAGE,
                    },
                    ret=0,
                    text="ioctl(3, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, ...)",
                )
            b.intent(
                tid,
                "hsa_amd_memory_lock" if x % 3 else "hsa_amd_memory_unlock",
                t0,
                host_ptr=X + p0 * PAGE,
                size=n * PAGE,
            )
        elif kind == "xnack":
            b._ev(
                Ioctl,
                tid,
                type=kfd.TYPE_KFD,
                nr=0x21,
                fd=3,
                ioctl="AMDKFD_IOC_SET_XNACK_MODE",
                arg={"xnack_enabled": -1},
                out={"xnack_enabled": x % 2},
                ret=0,
                text="ioctl(3, AMDKFD_IOC_SET_XNACK_MODE, ...)",
            )
        elif kind == "unmap":
            b._ev(Munmap, tid, addr=X + p0 * PAGE, length=n * PAGE, ret=0)
        elif kind == "mmap":
            b._ev(Mmap, tid, addr=X + p0 * PAGE, length=n * PAGE, ret=X + p0 * PAGE, prot=3, flags=0x32)
        elif kind == "mremap":
            b._ev(
                Mremap,
                tid,
                old_addr=X + p0 * PAGE,
                old_len=n * PAGE,
                new_len=max(1, n - 1 - x % 3) * PAGE if x % 2 else n * PAGE,
                ret=X + p0 * PAGE if x % 2 else X + ((p0 + 7 * x) % N) * PAGE,
            )
        else:
            b.intent(tid, "hsa_amd_memory_pool_allocate", b.t)
    return sorted(b.events, key=lambda e: (end(e), e.seq))


SPAN = 64  # pages the oracle and the watch cover: every op lands inside
MAP_FIXED = 0x10


def oracle_rows(events) -> list:
    """Per event, the oracle's ranges after it (the kernel calls up to it),
    and before them those a moving mremap passes through (the target
    replaced, the source still there: the model notes each unmap)."""
    o = Oracle(SPAN)
    out = []
    for ev in events:
        k = kind(ev)
        ok = ev.err is None
        if k == "Ioctl" and ev.nr == 0x20 and ok:
            a = ev.arg
            start, size = a["start_addr"], a["size"]
            if a["op"] == kfd.SVM_OP_SET_ATTR and size and not (start | size) & (PAGE - 1):
                o.set_attr((start - X) // PAGE, (start + size - X) // PAGE, a["attrs"])
        elif k == "Munmap" and ok and ev.length:
            o.unmap_bytes(X, ev.addr, ev.length)
        elif k == "Mmap" and ok and ev.flags & MAP_FIXED and ev.length:
            o.unmap_bytes(X, ev.ret, ev.length)
        elif k == "Mremap" and ok:
            if ev.ret != ev.old_addr:
                o.unmap_bytes(X, ev.ret, ev.new_len)
                out.append([o.rows(X)])
                o.unmap_bytes(X, ev.old_addr, ev.old_len)
                out[-1].append(o.rows(X))
                continue
            o.mremap(X, ev.old_addr, ev.old_len, ev.new_len, ev.ret)
        elif k == "Exit" and ev.whole:
            o = Oracle(SPAN)
        out.append([o.rows(X)])
    return out


def check(events):
    """The core's rows against the oracle; the run again, the same."""
    run = svm_run(events, watch=(X, X + SPAN * PAGE))
    want = oracle_rows(events)
    at = {ev.line: i for i, ev in enumerate(events)}
    # A row is written while the model handles an event, mostly its own; one
    # about an earlier call (a failed SET_ATTR judged when the thread moves
    # on, or at the end) shows the state of that later moment: somewhere from
    # the latest event a row named so far to just before the next row's.
    rows = [(at[ev.line], what, state["pieces"]) for ev, what, state in run.history]
    seen = -1
    for i, (pos, what, pieces) in enumerate(rows):
        seen = max(seen, pos)
        nxt = [p for p, _, _ in rows[i + 1 :] if p > seen]
        hi = nxt[0] - 1 if nxt else len(events) - 1
        assert any(pieces in w for w in want[seen : hi + 1]), (events[pos].line, what)
    again = svm_run(events, watch=(X, X + SPAN * PAGE))
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in run.findings]
    assert [(ev.line, w, repr(s)) for ev, w, s in again.history] == [(ev.line, w, repr(s)) for ev, w, s in run.history]
    assert again.counts == run.counts
    return run


op_ = st.tuples(
    st.sampled_from(
        [
            "reg",
            "reg",
            "rev",
            "rev",
            "app",
            "other",
            "get",
            "unmap",
            "mmap",
            "mremap",
            "intent",
            "svmset",
            "pin",
            "xnack",
        ]
    ),
    st.integers(2, 5),  # tid
    st.integers(0, N - 1),  # first page
    st.sampled_from([1, 1, 2, 3, 5, 8, 17]),
    st.integers(0, 7),  # gpu set
    st.integers(0, 1000),  # shape selector
)


@settings(max_examples=250, deadline=None)
@given(st.lists(op_, min_size=1, max_size=40))
def test_map_under_the_claims_is_the_kernels(ops):
    check(build(ops))


@pytest.mark.parametrize("seed", range(6))
def test_map_under_the_claims_is_the_kernels_long(seed):
    """Longer random traffic: many live claims, neighbours sharing pages."""
    rnd = random.Random(seed)
    kinds = (
        ["reg"] * 4
        + ["rev"] * 4
        + ["app", "other", "get", "unmap", "mmap", "mremap", "intent", "svmset", "svmset", "pin"]
    )
    ops = [
        (
            rnd.choice(kinds),
            rnd.randint(2, 5),
            rnd.randrange(N),
            rnd.choice([1, 2, 3, 5, 8, 17]),
            rnd.randrange(8),
            rnd.randrange(1000),
        )
        for _ in range(600)
    ]
    run = check(build(ops))
    assert run.counts["set_attr"] > 300 and run.findings
    assert len(run.history) > 300


def test_exit_drops_the_map():
    ops = [("reg", 2, 0, 5, 1, 1), ("reg", 3, 3, 5, 3, 4), ("rev", 2, 0, 5, 1, 3), ("app", 4, 10, 3, 2, 1)]
    events = build(ops)
    t = end(events[-1]) + 1
    events.append(Exit(pid=1, tid=1, time=t, whole=True, seq=len(events), file="t.log", line=len(events) + 1))
    b = Builder()
    b.t = t + 1
    b.events = []
    b.svm(2, 20, 2, [(kfd.ATTR_ACCESS, GPUS[0])])  # the pid again: a new process
    after = b.events[0]
    after.line, after.seq = len(events) + 1, len(events)
    events.append(after)
    run = check(events)
    (row,) = [st for ev, _, st in run.history if ev.line == after.line]
    assert [p["range"] for p in row["pieces"]] == [f"{X + 20 * PAGE:#x}-{X + 22 * PAGE:#x}"]
