"""The SVM replay's fast paths against its general ones.

* ``PieceMap`` (starts in a SortedList, walks reused by the update) against a
  plain dict scanned in full, doing what the SortedDict version did, with
  tiny blocks so that splits, empty blocks and runs crossing a block boundary
  all happen; ``update_coalesce`` against ``update`` then ``coalesce``.
* ``SvmModel`` against ``PlainSvmModel`` below (every SET_ATTR asks the
  maps each question on its own, as before the walks were shared): the same
  findings, the same ``show`` history and the same state (pieces, cover
  index, claims, records) after every event, on hypothesis-made sequences
  and on longer seeded random traffic.
"""
from __future__ import annotations

import bisect
import random
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocrtrace import kfd
from rocrtrace.events import Exit, Intent, Ioctl, Mmap, Mremap, Munmap, ProcessInfo
from rocrtrace.models.svm import RECENT, Grant, Rec, SvmModel, effect_of
from rocrtrace.models.svm_map import PieceMap

# --- PieceMap -----------------------------------------------------------------


class RefMap:
    """The former PieceMap's algorithms over a dict scanned in full."""

    def __init__(self):
        self.d = {}

    def items(self):
        return [(s, e, v) for s, (e, v) in sorted(self.d.items())]

    def overlapping(self, s, e):
        # from the last piece starting at or before s to the last before e
        keys = sorted(self.d)
        i = bisect.bisect_right(keys, s) - 1
        out = []
        for k in keys[i if i > 0 else 0:bisect.bisect_left(keys, e)]:
            pe, v = self.d[k]
            if pe > s:
                out.append((k, pe, v))
        return out

    def get(self, page):
        keys = sorted(self.d)
        i = bisect.bisect_right(keys, page) - 1
        if i < 0:
            return None
        e, v = self.d[keys[i]]
        return v if e > page else None

    def update(self, s, e, fn, fill, always=False):
        d = self.d
        pos = s
        for ps, pe, v in self.overlapping(s, e):
            if fill is not None and pos < ps:
                d[pos] = (ps, fn(fill()))
            nv = fn(v)
            hi = pe if pe < e else e
            if not always and nv == v:
                pos = hi
                continue
            lo = ps if ps > s else s
            if ps < lo:
                d[ps] = (lo, v)
            d[lo] = (hi, nv)
            if pe > hi:
                d[hi] = (pe, v)
            pos = hi
        if fill is not None and pos < e:
            d[pos] = (e, fn(fill()))

    def delete(self, s, e):
        d = self.d
        removed = []
        for ps, pe, v in self.overlapping(s, e):
            lo, hi = max(ps, s), min(pe, e)
            removed.append((lo, hi, v))
            del d[ps]
            if ps < lo:
                d[ps] = (lo, v)
            if pe > hi:
                d[hi] = (pe, v)
        return removed

    def coalesce(self, s, e, drop):
        d = self.d
        prev = None
        for ps, pe, v in self.overlapping(s - 1, e + 1):
            if drop(v):
                del d[ps]
                prev = None
                continue
            if prev is not None and prev[1] == ps and prev[2] == v:
                d[prev[0]] = (pe, v)
                del d[ps]
                prev = (prev[0], pe, v)
            else:
                prev = (ps, pe, v)


def check_blocks(m: PieceMap) -> None:
    m._keys._check()        # the SortedList's own invariants
    keys = list(m._keys)
    assert keys == sorted(m._d) and len(keys) == len(m._d)
    last = None
    for s, e, _ in m.items():
        assert s < e and (last is None or last <= s)
        last = e


M = 60
# empty ranges too (the model changes only non-empty ones), reversed ones in
# queries (`show --addr A:0` asks about an empty range)
mspan = st.tuples(st.integers(-2, M), st.integers(0, 12)).map(lambda t: (t[0], t[0] + t[1]))
qspan = st.tuples(st.integers(-2, M), st.integers(-3, 12)).map(lambda t: (t[0], t[0] + t[1]))
mop = st.one_of(
    st.tuples(st.just("update"), mspan, st.integers(0, 4), st.booleans(), st.booleans()),
    st.tuples(st.just("delete"), mspan, st.just(0), st.just(False), st.just(False)),
    st.tuples(st.just("coalesce"), mspan, st.just(0), st.just(False), st.just(False)),
    st.tuples(st.just("upco"), mspan, st.integers(0, 4), st.booleans(), st.just(False)),
    st.tuples(st.just("query"), qspan, st.just(0), st.just(False), st.just(False)),
)


def _fn(x):
    return lambda v: (v + x) % 3 if x < 3 else x - 3   # keeps some values equal


@settings(max_examples=300, deadline=None)
@given(st.lists(mop, min_size=1, max_size=60), st.sampled_from([4, 5, 8, 1000]))   # SortedList needs load >= 4
def test_piece_map_matches_reference(ops, load):
    m, r = PieceMap(load=load), RefMap()
    for kind, (s, e), x, fill, always in ops:
        if kind == "update":
            f = (lambda: 1) if fill else None
            m.update(s, e, _fn(x), f, always)
            r.update(s, e, _fn(x), f, always)
        elif kind == "delete":
            assert m.delete(s, e) == r.delete(s, e)
        elif kind == "coalesce":
            m.coalesce(s, e, lambda v: v == 2)
            r.coalesce(s, e, lambda v: v == 2)
        elif kind == "upco":
            f = (lambda: 0) if fill else None
            m.update_coalesce(s, e, _fn(x), f, lambda v: v == 2)
            r.update(s, e, _fn(x), f)
            r.coalesce(s, e, lambda v: v == 2)
        else:
            assert m.overlapping(s, e) == r.overlapping(s, e)
            assert m.get(s) == r.get(s)
        check_blocks(m)
        assert list(m.items()) == r.items()
        assert len(m) == len(r.d)


def test_piece_map_many_blocks():
    """Thousands of pieces in blocks of 4: updates and deletes across block
    boundaries, against the reference."""
    rnd = random.Random(3)
    m, r = PieceMap(load=4), RefMap()
    for i in range(3000):
        s = rnd.randrange(2000)
        e = s + rnd.choice((1, 1, 2, 5, 30))
        k = rnd.random()
        if k < 0.6:
            x = rnd.randrange(5)
            m.update(s, e, _fn(x), lambda: 1, x == 4)
            r.update(s, e, _fn(x), lambda: 1, x == 4)
        elif k < 0.8:
            assert m.delete(s, e) == r.delete(s, e)
        else:
            m.update_coalesce(s, e, _fn(1), None, lambda v: v == 0)
            r.update(s, e, _fn(1), None)
            r.coalesce(s, e, lambda v: v == 0)
        if i % 100 == 0:
            check_blocks(m)
            assert list(m.items()) == r.items()
    check_blocks(m)
    assert list(m.items()) == r.items()
    assert len(m._keys._lists) > 10     # many blocks: runs crossed their boundaries


# --- SvmModel: fast path against the general one --------------------------------

X = 0x7F3A1C200000
PAGE = 0x1000
GPUS = (0x1A2B, 0x2B3C, 0x3C4D)
N = 40      # pages in play
COH, EXT = kfd.FLAG_COHERENT, kfd.FLAG_EXT_COHERENT


class Builder:
    def __init__(self):
        self.t = 1764435600.0
        self.events = [ProcessInfo(pid=1, tid=1, time=self.t, page_size=PAGE)]

    def _ev(self, cls, tid, dur=1e-5, at=None, **kw):
        t = self.t if at is None else at
        ev = cls(pid=1, tid=tid, time=t, dur=dur, file="t.log", line=len(self.events) + 1,
                 seq=len(self.events), **kw)
        if at is None:
            self.t = t + dur + 1e-5
        self.events.append(ev)
        return ev

    def svm(self, tid, p0, n, attrs, op=kfd.SVM_OP_SET_ATTR, out=None, err=None, off=0):
        arg = {"start_addr": X + p0 * PAGE + off, "size": n * PAGE, "op": op,
               "nattr": len(attrs), "attrs": list(attrs)}
        return self._ev(Ioctl, tid, type=kfd.TYPE_KFD, nr=0x20, fd=3, ioctl="AMDKFD_IOC_SVM",
                        arg=arg, out={"attrs": out} if out is not None else None,
                        ret=-1 if err else 0, err=err, text="ioctl(3, AMDKFD_IOC_SVM, ...)")

    def intent(self, tid, name, t0, ret=0, **args):
        self.events.append(Intent(pid=1, tid=tid, time=t0, dur=self.t - t0, file="t.log",
                                  line=len(self.events) + 1, seq=len(self.events), ret=ret,
                                  name=name, args=args, text=f"{name}(...)"))
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
            attrs += [(kfd.ATTR_SET_FLAGS, COH), (kfd.ATTR_CLR_FLAGS, EXT)] if x % 3 or not attrs \
                else [(kfd.ATTR_CLR_FLAGS, COH | EXT)]
            b.svm(tid, p0, n, attrs)
            if x % 5 == 0:
                b.svm(tid, p0, n, [(kfd.ATTR_ACCESS_IN_PLACE, g) for g in gpus])
            if x % 2:
                b.intent(tid, "hsa_amd_memory_lock" if x % 7 else "hsa_amd_memory_lock_to_pool",
                         t0, ret=0 if x % 11 else 1, host_ptr=X + p0 * PAGE + 0x10 * (x % 3),
                         size=n * PAGE - 0x20 * (x % 3))
        elif kind == "rev":
            t0 = b.t
            b.t += 1e-6
            attrs = [(kfd.ATTR_NO_ACCESS, g) for g in gpus]
            if x % 4 == 0:
                attrs.append((kfd.ATTR_CLR_FLAGS, COH))
            lo = p0 + (x % 3 == 1)
            hi = p0 + n - (x % 3 == 2)
            if lo < hi:
                b.svm(tid, lo, hi - lo, attrs, err=("EINTR" if x % 13 == 0 else
                                                    "ENOMEM" if x % 17 == 0 else None))
            if x % 2:
                b.intent(tid, "hsa_amd_memory_unlock", t0, ret=0 if x % 19 else 1,
                         host_ptr=X + p0 * PAGE + 0x10 * (x % 3))
        elif kind == "app":
            attrs = [(kfd.ATTR_ACCESS, g) for g in gpus]
            if x % 3 == 0:
                attrs.append((kfd.ATTR_SET_FLAGS, kfd.FLAG_GPU_RO))
            if x % 5 == 0:
                attrs = [(kfd.ATTR_NO_ACCESS, g) for g in gpus]   # the program's own revoke
            b.svm(tid, p0, n, attrs, err="EAGAIN" if x % 23 == 0 else None)
        elif kind == "other":
            attrs = ([(kfd.ATTR_PREFETCH_LOC, gpus[0])] if x % 3 == 0 else
                     [(kfd.ATTR_PREFERRED_LOC, gpus[0]), (kfd.ATTR_GRANULARITY, x % 12)]
                     if x % 3 == 1 else
                     [(kfd.ATTR_SET_FLAGS, kfd.FLAG_HOST_ACCESS), (kfd.ATTR_NO_ACCESS, gpus[0]),
                      (kfd.ATTR_ACCESS, gpus[0])])
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
            attrs = ([(kfd.ATTR_ACCESS_IN_PLACE, gpus[0]), (kfd.ATTR_SET_FLAGS, COH)]
                     if x % 3 == 0 else [(kfd.ATTR_NO_ACCESS, g) for g in gpus]
                     if x % 3 == 1 else [(kfd.ATTR_CLR_FLAGS, COH)])
            b.svm(tid, p0, n, attrs)
            b.intent(tid, "hsa_amd_svm_attributes_set", t0, ptr=X + p0 * PAGE + 0x10 * (x % 2),
                     size=n * PAGE - 0x20 * (x % 2))
        elif kind == "pin":
            # the legacy lock: a userptr buffer, no SVM ioctl (nested when x is odd)
            t0 = b.t
            b.t += 1e-6
            if x % 2 == 0:
                b._ev(Ioctl, tid, type=kfd.TYPE_KFD, nr=0x16, fd=3,
                      ioctl="AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
                      arg={"va_addr": 0x7F0000000000, "size": n * PAGE, "gpu_id": GPUS[0],
                           "flags": kfd.ALLOC_FLAG_USERPTR, "mmap_offset": X + p0 * PAGE},
                      ret=0, text="ioctl(3, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, ...)")
            b.intent(tid, "hsa_amd_memory_lock" if x % 3 else "hsa_amd_memory_unlock", t0,
                     host_ptr=X + p0 * PAGE, size=n * PAGE)
        elif kind == "xnack":
            b._ev(Ioctl, tid, type=kfd.TYPE_KFD, nr=0x21, fd=3, ioctl="AMDKFD_IOC_SET_XNACK_MODE",
                  arg={"xnack_enabled": -1}, out={"xnack_enabled": x % 2}, ret=0,
                  text="ioctl(3, AMDKFD_IOC_SET_XNACK_MODE, ...)")
        elif kind == "unmap":
            b._ev(Munmap, tid, addr=X + p0 * PAGE, length=n * PAGE, ret=0)
        elif kind == "mmap":
            b._ev(Mmap, tid, addr=X + p0 * PAGE, length=n * PAGE, ret=X + p0 * PAGE, prot=3,
                  flags=0x32)
        elif kind == "mremap":
            b._ev(Mremap, tid, old_addr=X + p0 * PAGE, old_len=n * PAGE,
                  new_len=max(1, n - 1 - x % 3) * PAGE if x % 2 else n * PAGE,
                  ret=X + p0 * PAGE if x % 2 else X + ((p0 + 7 * x) % N) * PAGE)
        else:
            b.intent(tid, "hsa_amd_memory_pool_allocate", b.t)
    return sorted(b.events, key=lambda e: (e.end, e.seq))


def claim_state(c):
    return (c.id, c.kind, c.start, c.end, list(c.pages), sorted(c.gpus), c.flags, c.live,
            c.ended_by.seq if c.ended_by is not None else None, c.ptr, c.byte_end,
            c.refcount, sorted(c.stale_gpus), [e.seq for e in c.getattr_seen],
            c.alias.id if c.alias is not None else None,
            [(g.event.seq, sorted(g.gpus), g.flags) for g in c.grants])


def model_state(m: SvmModel):
    out = []
    for pid, p in sorted(m.procs.items()):
        claims = {}
        for _, _, v in p.cover.pieces.items():
            for c in v:
                claims[c.id] = c
        recs = [r for dq in p.recent.values() for r in dq]
        for c in [*p.reg.values(), *p.app.values(), *p.by_ptr.values(),
                  *(r.claim for r in recs if r.claim is not None),
                  *(k for r in recs for k in r.released)]:
            claims[c.id] = c
        out.append((pid, list(p.map.pieces.items()),
                    [(s, e, sorted(c.id for c in v)) for s, e, v in p.cover.pieces.items()],
                    list(p.dereg.items()), sorted((k, c.id) for k, c in p.reg.items()),
                    sorted((k, c.id) for k, c in p.app.items()),
                    sorted((k, c.id) for k, c in p.by_ptr.items()),
                    [claim_state(claims[i]) for i in sorted(claims)],
                    sorted((t, [(r.event.seq, r.s, r.e, r.eff.kind,
                                 r.claim.id if r.claim is not None else None,
                                 [c.id for c in r.released],
                                 sorted((c.id, l.gpus and sorted(l.gpus), l.flags, l.lo, l.hi,
                                         l.npages) for c, l in r.losses.items()),
                                 sorted((c.id, str(v)) for c, v in r.stale_pre.items()))
                                for r in dq]) for t, dq in p.recent.items()),
                    sorted(p.retry), p.xnack, sorted(p.userptr.items()), p.legacy))
    return out


class PlainSvmModel(SvmModel):
    """SvmModel with SET_ATTR done the plain way, each question asked of the
    maps on its own, in the same order as the model's shared-walk version:
    the reference that version is checked against."""

    def _set_attr(self, p, ev, s: int, e: int, attrs: list) -> None:
        eff = effect_of(attrs)
        rec = Rec(ev, eff, s, e)
        own = None
        if eff.kind == "registration":
            own = p.reg.get((s, e))
        elif eff.kind == "application":
            own = p.app.get((s, e))
        released: list = []
        if eff.kind == "revoke":
            app = p.app.get((s, e))
            if app is not None:
                released.append(app)   # the program's own NO_ACCESS on exactly its range
            released += self._infer_release(p, s, e)
        rec.released = released
        touched = p.cover.query(s, e)
        if eff.taken or eff.cleared:
            for c in sorted(touched, key=lambda c: c.id):
                if c is own:
                    continue
                loss = self._loss(p, c, s, e, eff)
                if loss is not None:
                    rec.losses[c] = loss
                # with XNACK known off a grant-less registration has no
                # default access to be left without
                if c.stale_gpus and not c.gpus and c.kind != "application" \
                        and p.xnack is not False:
                    rec.stale_pre[c] = self._still_stale(p, c)
        for c in released:
            self._end(p, c, ev, rec.stale_pre.get(c, "now"))
        p.map.set_attr(s, e, attrs)
        if eff.taken:
            if any(c.kind != "application" for c in released):
                p.dereg.update(s, e, lambda v: True, lambda: True)
            else:
                p.dereg.delete(s, e)
        for c, loss in rec.losses.items():
            if c not in released:
                self._victim(p, rec, c, loss)
        if eff.kind in ("registration", "application"):
            new = own is None
            if new:
                own = self._new_claim(p, eff.kind, s, e, ev)
            g = Grant(ev, eff.granted, eff.set_)
            if eff.kind == "application" and not new:
                # the program's own range: what it takes from itself is not a loss
                own.grants = [Grant(x.event, x.gpus - eff.taken, x.flags & ~eff.cleared)
                              for x in own.grants]
            own.grants.append(g)
            own.recompute()
            rec.claim, rec.grant = own, g
            if new and eff.kind == "registration":
                own.stale_gpus = self._noaccess_gpus(p, s, e)
        if self._watched(p, s, e):   # descriptions cost: only for `show`
            self._note_set_attr(p, ev, s, e, attrs, eff, rec, released)
        dq = p.recent.get(ev.tid)
        if dq is None:
            dq = p.recent[ev.tid] = deque(maxlen=RECENT)
        dq.append(rec)


def replay(events, fast: bool, every: bool = True):
    m = (SvmModel if fast else PlainSvmModel)(watch=(X, X + N * PAGE))
    states = []
    for ev in events:
        m.feed(ev)
        if every:
            states.append(model_state(m))
    states.append(model_state(m))
    m.finish()
    findings = [f.to_dict() for f in m.findings]
    history = [(ev.seq, what, repr(state)) for ev, what, state in m.history]
    return states, findings, history, dict(m.counts)


def assert_same(events, every=True):
    fast = replay(events, True, every)
    general = replay(events, False, every)
    assert fast[1] == general[1]         # findings
    assert fast[2] == general[2]         # `show` history
    assert fast[3] == general[3]
    assert fast[0] == general[0]         # state after each event
    return fast


op_ = st.tuples(
    st.sampled_from(["reg", "reg", "rev", "rev", "app", "other", "get", "unmap", "mmap",
                     "mremap", "intent", "svmset", "pin", "xnack"]),
    st.integers(2, 5),                 # tid
    st.integers(0, N - 1),             # first page
    st.sampled_from([1, 1, 2, 3, 5, 8, 17]),
    st.integers(0, 7),                 # gpu set
    st.integers(0, 1000),              # shape selector
)


@settings(max_examples=250, deadline=None)
@given(st.lists(op_, min_size=1, max_size=40))
def test_fast_set_attr_matches_general(ops):
    assert_same(build(ops))


@pytest.mark.parametrize("seed", range(6))
def test_fast_set_attr_matches_general_long(seed):
    """Longer random traffic: many live claims, neighbours sharing pages."""
    rnd = random.Random(seed)
    kinds = ["reg"] * 4 + ["rev"] * 4 + ["app", "other", "get", "unmap", "mmap", "mremap",
                                          "intent", "svmset", "svmset", "pin"]
    ops = [(rnd.choice(kinds), rnd.randint(2, 5), rnd.randrange(N),
            rnd.choice([1, 2, 3, 5, 8, 17]), rnd.randrange(8), rnd.randrange(1000))
           for _ in range(600)]
    _, findings, _, counts = assert_same(build(ops), every=False)
    assert counts["set_attr"] > 300 and findings


def test_exit_drops_the_same():
    ops = [("reg", 2, 0, 5, 1, 1), ("reg", 3, 3, 5, 3, 4), ("rev", 2, 0, 5, 1, 3),
           ("app", 4, 10, 3, 2, 1)]
    events = build(ops)
    events.append(Exit(pid=1, tid=1, time=events[-1].end + 1, whole=True, seq=len(events)))
    assert_same(events)
