"""The core's SVM range map against a brute-force per-page oracle
(tests/svm_oracle.py), seen from outside: SET_ATTR and munmap events through
rocrtrace._engine.run_svm_model with the whole range watched, each `show
--addr` history row's pieces against the oracle's ranges after the same
event; GET_ATTR answers the oracle computes are never a model mismatch, and
a wrong one is.  (The map's own invariants, its cover index and its size
are cargo tests: src/models/svm_map/tests.rs.)"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocrtrace import kfd

from coremodels import svm_run
from svm_oracle import PAGE, Oracle
from vocab import Ioctl, Munmap, ProcessInfo, kind

N = 48
X = 0x7F3A1C200000
GPUS = [0x11, 0x22, 0x33]


class Events:
    def __init__(self):
        self.events = [ProcessInfo(pid=1, tid=1, time=1000.0, page_size=PAGE, file="m.log", line=1, seq=0)]

    def _ev(self, cls, **kw):
        n = len(self.events)
        ev = cls(pid=1, tid=1, time=1000.0 + n * 1e-3, dur=1e-5, file="m.log", line=n + 1, seq=n, **kw)
        self.events.append(ev)
        return ev

    def svm(self, s, e, attrs, op=kfd.SVM_OP_SET_ATTR, out=None):
        arg = {"start_addr": X + s * PAGE, "size": (e - s) * PAGE, "op": op, "nattr": len(attrs), "attrs": list(attrs)}
        return self._ev(
            Ioctl,
            type=kfd.TYPE_KFD,
            nr=0x20,
            fd=3,
            ioctl="AMDKFD_IOC_SVM",
            arg=arg,
            out={"attrs": out} if out is not None else None,
            ret=0,
            text=f"ioctl(3, AMDKFD_IOC_SVM, {{start_addr={X + s * PAGE:#x}}})",
        )

    def munmap(self, s, e):
        return self._ev(
            Munmap,
            addr=X + s * PAGE,
            length=(e - s) * PAGE,
            ret=0,
            text=f"munmap({X + s * PAGE:#x}, {(e - s) * PAGE:#x}) = 0",
        )


def replay(ops):
    """The events of ops and the oracle's rows after each (by line)."""
    b, o = Events(), Oracle(N)
    want = {}
    for what, (s, e), attrs in ops:
        if what == "set":
            ev = b.svm(s, e, attrs)
            o.set_attr(s, e, attrs)
        else:
            ev = b.munmap(s, e)
            o.unmap(s, e)
        want[ev.line] = o.rows(X)
    return b, o, want


attr = st.one_of(
    st.tuples(st.sampled_from([2, 3, 4]), st.sampled_from(GPUS)),
    st.tuples(st.sampled_from([5, 6]), st.sampled_from([0x1, 0x2, 0x80, 0x40, 0x82])),
    st.tuples(st.sampled_from([0, 1]), st.sampled_from([0, 0x11, 0xFFFFFFFF])),
    st.tuples(st.just(7), st.integers(0, 12)),
)
span = st.tuples(st.integers(0, N - 1), st.integers(1, 16)).map(lambda t: (t[0], min(N, t[0] + t[1])))
op = st.one_of(
    st.tuples(st.just("set"), span, st.lists(attr, min_size=1, max_size=4)),
    st.tuples(st.just("unmap"), span, st.just([])),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(op, min_size=1, max_size=30))
def test_map_matches_page_oracle(ops):
    b, _, want = replay(ops)
    run = svm_run(b.events, watch=(X, X + N * PAGE))
    rows = {ev.line: state["pieces"] for ev, _, state in run.history}
    # every SET_ATTR on the watched range is a row; each row's state is the oracle's
    sets = [ev.line for ev in b.events if kind(ev) == "Ioctl"]
    assert set(sets) <= set(rows)
    for line, pieces in rows.items():
        assert pieces == want[line], line


def _kernel_access(o: Oracle, s, e, gpu, xnack: bool):
    """What GET_ATTR ACCESS answers for gpu over [s, e): ACCESS if every page
    has it, ACCESS_IN_PLACE if every page has that, else NO_ACCESS; a page at
    its default has access iff XNACK is on."""
    states = [o.state[i] for i in range(s, e) if o.state[i] is not None]

    def has(x, t):
        a = dict(x[0]).get(gpu)
        return a == t or (a is None and t == kfd.ATTR_ACCESS and xnack)

    if not states:
        return None
    if all(has(x, kfd.ATTR_ACCESS) for x in states):
        return kfd.ATTR_ACCESS
    if all(has(x, kfd.ATTR_ACCESS_IN_PLACE) for x in states):
        return kfd.ATTR_ACCESS_IN_PLACE
    return kfd.ATTR_NO_ACCESS


@settings(max_examples=100, deadline=None)
@given(
    st.lists(op, min_size=1, max_size=20),
    st.lists(st.tuples(span, st.sampled_from(GPUS)), min_size=1, max_size=5),
    st.booleans(),
)
def test_get_attr_answers_of_the_oracle_are_no_mismatch(ops, queries, xnack):
    b, o, _ = replay(ops)
    asked = []
    for (s, e), gpu in queries:
        ans = _kernel_access(o, s, e, gpu, xnack)
        if ans is not None:
            asked.append((s, e, gpu, ans))
    if not asked:
        return
    prefix = list(b.events)
    for s, e, gpu, ans in asked:
        b.svm(s, e, [(kfd.ATTR_ACCESS, gpu)], op=kfd.SVM_OP_GET_ATTR, out=[(ans, gpu)])
    run = svm_run(b.events, xnack=xnack)
    assert [f for f in run.findings if f.rule == "svm-model-mismatch"] == []
    # the same question answered otherwise: the model says it disagrees
    s, e, gpu, ans = asked[0]
    wrong = kfd.ATTR_ACCESS if ans != kfd.ATTR_ACCESS else kfd.ATTR_NO_ACCESS
    b.events = prefix
    q = b.svm(s, e, [(kfd.ATTR_ACCESS, gpu)], op=kfd.SVM_OP_GET_ATTR, out=[(wrong, gpu)])
    run = svm_run(b.events, xnack=xnack)
    (f,) = [f for f in run.findings if f.rule == "svm-model-mismatch"]
    assert f.event.line == q.line
