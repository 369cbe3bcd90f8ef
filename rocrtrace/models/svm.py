"""SVM replay: the per-process range map, the claims on it, and the SVM rules
(SPEC 4.3 and 5).

Events arrive in completion order.  Intent calls (hsa_amd_memory_lock /
unlock) are written at their return, after the ioctls they issued, so the
model decides with what it knows when an ioctl completes and corrects the
claim bookkeeping when the enclosing intent call arrives: registration
SET_ATTRs are adopted into the lock's explicit claim (same claim object, so
findings already made about it follow), and a revoke found inside an unlock's
window is re-pointed at that unlock's claim.  Findings are built in
``finish()`` because of that.

Cause precedence for svm-over-revoke, most specific first:
cross-thread-order > enclosing-range > grown-extent > shared-page.  A race
explains the other shapes (the shared page only matters because of the
order), an enclosing victim is hit whatever the revoke's extent, and a grown
extent is the reason a neighbour's shared page is reached.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .. import kfd
from ..parse.pyevents import Event, Exec, Exit, Intent, Ioctl, Mmap, Mremap, Munmap, ProcessInfo
from ..findings import Evidence, Finding, fingerprint
from . import Model
from .svm_map import ACCESS_NAMES, NO_ACCESS, CoverIndex, PieceMap, SvmMap

REG_FLAGS = (kfd.FLAG_HOST_ACCESS | kfd.FLAG_COHERENT | kfd.FLAG_EXT_COHERENT
             | kfd.FLAG_GPU_ALWAYS_MAPPED)
COH_FLAGS = kfd.FLAG_COHERENT | kfd.FLAG_EXT_COHERENT
LOCKS = ("hsa_amd_memory_lock", "hsa_amd_memory_lock_to_pool")
UNLOCK = "hsa_amd_memory_unlock"
SVM_SET = "hsa_amd_svm_attributes_set"
_ALLOC_TYPE, _ALLOC_NR = kfd.ALLOC_MEMORY_OF_GPU
RETRY_ERRNOS = {"EINTR", "EAGAIN", "ERESTARTSYS", "ERESTARTNOINTR", "ERESTARTNOHAND"}
# errors svm_ioctl returns before touching any range; later ones may have
# committed attributes (kfd-uapi 6, step 6), which the model cannot know
EARLY_ERRNOS = {"EINVAL", "EFAULT", "EADDRINUSE", "EPERM", "EOPNOTSUPP", "EBADF", "ENOTTY"}
MAP_FIXED = 0x10
_SVM_TYPE, _SVM_NR = kfd.SVM
EPS = 1e-7
RECENT = 256

ATTR_SHORT = {t: n.replace("KFD_IOCTL_SVM_ATTR_", "") for t, n in kfd.ATTR_NAMES.items()}
FLAG_SHORT = {b: n.replace("KFD_IOCTL_SVM_FLAG_", "") for b, n in kfd.SVM_FLAG_NAMES.items()}

LIMITS = [
    "SVM: without intent calls, two registrations with identical page ranges are "
    "indistinguishable (they are one claim)",
    "SVM: a deregistration that issues no ioctl (the baseline runtime always; the fixed ones "
    "when survivors cover the buffer or it holds no whole page) leaves its claim looking "
    "alive until its pages are unmapped or revoked",
    "SVM: NO_ACCESS racing in-flight SDMA copies (clr #6724) needs copy-completion events, "
    "which an ioctl trace does not have",
    "SVM: ranges created by GPU retry faults (XNACK on) appear without an ioctl; GET_ATTR "
    "answers over them may differ from the model (svm-model-mismatch notes)",
    "SVM: a SET_ATTR that failed late (ENOMEM, migration errors) may have committed its "
    "attributes; the model assumes it did not",
]


def _h(x: int) -> str:
    return f"{x:#x}"


def _flags_text(v: int) -> str:
    return kfd.flag_names(v, FLAG_SHORT)


def shape_of(attrs) -> str:
    """Run-independent attribute shape, e.g. 'NO_ACCESS*2+CLR_FLAGS(COHERENT)'."""
    parts: list[str] = []
    for t, v in attrs:
        name = ATTR_SHORT.get(t, f"{t:#x}")
        if t in (kfd.ATTR_SET_FLAGS, kfd.ATTR_CLR_FLAGS):
            name += f"({_flags_text(v)})"
        if parts and parts[-1].split("*")[0] == name:
            n = int(parts[-1].split("*")[1]) if "*" in parts[-1] else 1
            parts[-1] = f"{name}*{n + 1}"
        else:
            parts.append(name)
    return "+".join(parts) or "none"


@dataclass
class Effect:
    """Net effect of an attribute array (array order, later entries win)."""

    taken: frozenset = frozenset()     # gpus left NO_ACCESS
    granted: frozenset = frozenset()   # gpus left ACCESS / ACCESS_IN_PLACE
    cleared: int = 0                   # COHERENT/EXT_COHERENT left clear
    set_: int = 0                      # flag bits left set
    other: bool = False                # locations, granularity
    kind: str = "none"                 # registration | revoke | application | none


def effect_of(attrs) -> Effect:
    access: dict[int, int] = {}
    bits_set = bits_clr = 0
    other = False
    reg_shape = bool(attrs)
    has_no = False
    revoke_shape = bool(attrs)
    for t, v in attrs:
        if t in (kfd.ATTR_ACCESS, kfd.ATTR_ACCESS_IN_PLACE, NO_ACCESS):
            access[v] = t
            has_no |= t == NO_ACCESS
        if t == kfd.ATTR_SET_FLAGS:
            bits_set |= v
            bits_clr &= ~v
        elif t == kfd.ATTR_CLR_FLAGS:
            bits_clr |= v
            bits_set &= ~v
        elif t in (kfd.ATTR_PREFERRED_LOC, kfd.ATTR_PREFETCH_LOC, kfd.ATTR_GRANULARITY):
            other = True
        if not (t == kfd.ATTR_ACCESS_IN_PLACE
                or (t in (kfd.ATTR_SET_FLAGS, kfd.ATTR_CLR_FLAGS) and not v & ~REG_FLAGS)):
            reg_shape = False
        if t not in (NO_ACCESS, kfd.ATTR_CLR_FLAGS):
            revoke_shape = False
    eff = Effect(
        taken=frozenset(g for g, a in access.items() if a == NO_ACCESS),
        granted=frozenset(g for g, a in access.items() if a != NO_ACCESS),
        cleared=bits_clr & COH_FLAGS, set_=bits_set, other=other)
    if revoke_shape and has_no:
        eff.kind = "revoke"
    elif reg_shape:
        eff.kind = "registration"
    elif eff.granted or eff.set_ or other:
        eff.kind = "application"
    return eff


_EFFECTS: dict = {}


def _effect(attrs: list) -> Effect:
    """effect_of, kept per attribute array (read-only once made: records
    share it).  Bounded: shapes repeat, traces don't."""
    key = tuple(attrs)
    eff = _EFFECTS.get(key)
    if eff is None:
        if len(_EFFECTS) > 1024:
            _EFFECTS.clear()
        eff = _EFFECTS[key] = effect_of(attrs)
    return eff


def _by_id(c) -> int:
    return c.id


def _default_reliant(c, xnack) -> bool:
    """A registration that granted no gpu relies on default access, which
    is every gpu only with XNACK on (kfd-uapi 6: a new range's access bitmap
    is all gpus iff XNACK is on); with XNACK known off it has none to lose."""
    return c.kind != "application" and xnack is not False


def _noaccess(st) -> bool:
    for _, a in st.access:
        if a == NO_ACCESS:
            return True
    return False


def _true(v=None) -> bool:
    return True


@dataclass(eq=False, slots=True)
class Grant:
    event: Event
    gpus: frozenset
    flags: int


@dataclass(eq=False, slots=True)
class Claim:
    """Who relies on which pages.  ``kind``: registration (inferred from a
    SET_ATTR shape), application, or explicit (a lock ... unlock)."""

    id: int
    kind: str
    start: int                      # identity: the exact page range
    end: int
    pages: list = field(default_factory=list)   # live [s, e) parts
    grants: list = field(default_factory=list)
    gpus: frozenset = frozenset()
    flags: int = 0
    born: Event | None = None
    live: bool = True
    ended_by: Event | None = None
    ptr: int | None = None          # explicit claims
    byte_end: int | None = None
    lock: Event | None = None
    refcount: int = 0
    stale_gpus: frozenset = frozenset()
    getattr_seen: list = field(default_factory=list)
    alias: "Claim | None" = None    # merged into another claim at adoption

    def real(self) -> "Claim":
        c = self
        while c.alias is not None:
            c = c.alias
        return c

    def npages(self) -> int:
        return sum(e - s for s, e in self.pages) or (self.end - self.start)

    def recompute(self) -> None:
        g: frozenset = frozenset()
        f = 0
        for gr in self.grants:
            g |= gr.gpus
            f |= gr.flags
        self.gpus, self.flags = g, f

    def label(self, shift: int) -> str:
        rng = f"[{_h(self.start << shift)}, {_h(self.end << shift)})"
        if self.kind == "explicit":
            return f"lock({_h(self.ptr)}) pages {rng}"
        return f"{self.kind} {rng}"

    def summary(self, shift: int) -> dict:
        d = {"kind": self.kind, "start": _h(self.start << shift),
             "end": _h(self.end << shift), "pages": self.end - self.start,
             "gpus": sorted(_h(g) for g in self.gpus), "flags": _flags_text(self.flags)}
        if self.ptr is not None:
            d["ptr"] = _h(self.ptr)
        ev = self.born or self.lock
        if ev is not None:
            d.update(file=ev.file, line=ev.line, tid=ev.tid, time=ev.time)
        return d


@dataclass(slots=True)
class Loss:
    gpus: frozenset
    flags: int
    lo: int
    hi: int
    npages: int


@dataclass(eq=False, slots=True)
class Rec:
    """One SET_ATTR as the model saw it, kept while an intent call may still
    claim it (bounded per thread) or while findings refer to it."""

    event: Event
    eff: Effect
    s: int
    e: int
    claim: Claim | None = None
    grant: Grant | None = None
    released: list = field(default_factory=list)
    losses: dict = field(default_factory=dict)
    stale_pre: dict = field(default_factory=dict)
    unlock: Event | None = None


@dataclass(eq=False)
class Raw:
    """A finding not yet built: its claims may still change identity."""

    rule: str
    rec: Rec | None
    claim: Claim | None
    loss: Loss | None = None
    extra: dict = field(default_factory=dict)
    dead: bool = False


class _Proc:
    def __init__(self, pid, clean_start: bool) -> None:
        self.pid = pid
        self.shift = 12
        self.map = SvmMap(clean_start)
        self.cover = CoverIndex()
        self.reg: dict = {}       # (s, e) -> live inferred registration claim
        self.app: dict = {}       # (s, e) -> live application claim
        self.by_ptr: dict = {}    # host_ptr -> explicit claim (while locked)
        self.recent: dict = {}    # tid -> deque[Rec]
        # pages whose access a deregistration took last: what svm-stale-no-access
        # means by "left NO_ACCESS by an earlier revoke" (not the program's own)
        self.dereg = PieceMap()
        self.xnack: bool | None = None
        self.retry: dict = {}     # tid -> failed EINTR/EAGAIN SET_ATTR awaiting its retry
        # the legacy pinning path (SPEC 4.3): userptr ALLOCs per thread, kept
        # until an intent call asks about them, and the locks they served
        self.allocs: dict = {}    # tid -> deque[Ioctl]
        self.userptr: dict = {}   # host_ptr -> lock refcount (a buffer handle, no claim)
        self.legacy = False       # this runtime pins with userptr buffers


def _overlap(a: tuple, b: tuple) -> bool:
    """Two call windows overlap (both known)."""
    if a[0] is None or b[0] is None:
        return False
    return a[0] < b[1] - EPS and b[0] < a[1] - EPS


def _union(ranges: list) -> list:
    out: list = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _win(ev: Event) -> tuple:
    return (ev.time, ev.end)


def _inside(ev: Event, outer: Event) -> bool:
    if ev.time is None or outer.time is None:
        return True   # no clock: everything since the thread's last intent call
    return ev.time >= outer.time - EPS and ev.end <= outer.end + EPS


class SvmModel(Model):
    """Replays AMDKFD_IOC_SVM with mmap/munmap/mremap and intent calls.

    ``watch=(start, end[, pid])`` (bytes) records every event touching those
    pages in ``history`` as (event, description, state).  ``xnack`` is the
    XNACK mode when known from elsewhere (SET_XNACK_MODE in the trace sets
    it); ``clean_start=False`` for traces attached mid-run.
    """

    limits = LIMITS

    def __init__(self, watch=None, xnack: bool | None = None, clean_start: bool = True) -> None:
        super().__init__()
        self.watch = None
        self.watch_pid = None
        if watch is not None:
            self.watch = (int(watch[0]), int(watch[1]))
            if len(watch) > 2:
                self.watch_pid = watch[2]
        self.history: list = []
        self.xnack = xnack
        self.clean_start = clean_start
        self.procs: dict = {}
        self._raw: list[Raw] = []
        self._stale: dict = {}    # claim -> Raw (one per claim)
        self._ids = 0
        self.counts = {"set_attr": 0, "get_attr": 0, "claims": 0}

    # --- plumbing -----------------------------------------------------------

    def _proc(self, pid) -> _Proc:
        p = self.procs.get(pid)
        if p is None:
            p = self.procs[pid] = _Proc(pid, self.clean_start)
            p.xnack = self.xnack
        return p

    def _new_claim(self, p: _Proc, kind: str, s: int, e: int, born: Event | None,
                   near: tuple | None = None) -> Claim:
        self._ids += 1
        self.counts["claims"] += 1
        c = Claim(self._ids, kind, s, e, pages=[(s, e)], born=born)
        p.cover.add(s, e, c, near)
        if kind == "registration":
            p.reg[(s, e)] = c
        elif kind == "application":
            p.app[(s, e)] = c
        return c

    def _unindex(self, p: _Proc, c: Claim, near: tuple | None = None) -> None:
        """``near``: (s, e, walk) from ``CoverIndex.query_near(s, e)`` with
        the index unchanged since, for a part that is exactly [s, e)."""
        for s, e in c.pages:
            if near is not None and near[0] == s and near[1] == e:
                p.cover.remove(s, e, c, near[2])
            else:
                p.cover.remove(s, e, c)
            near = None
        key = (c.start, c.end)
        if p.reg.get(key) is c:
            del p.reg[key]
        if p.app.get(key) is c:
            del p.app[key]

    def _watched(self, p: _Proc, s: int, e: int) -> bool:
        if self.watch is None or (self.watch_pid is not None and p.pid != self.watch_pid):
            return False
        ws, we = self.watch[0] >> p.shift, -(-self.watch[1] >> p.shift)
        return s < we and ws < e

    def _note(self, p: _Proc, ev: Event, s: int, e: int, what: str) -> None:
        if not self._watched(p, s, e):
            return
        ws, we = self.watch[0] >> p.shift, -(-self.watch[1] >> p.shift)
        claims = sorted(p.cover.query(ws, we), key=lambda c: c.id)
        state = {
            "pieces": p.map.describe(ws, we, p.shift) or "no SVM range",
            "claims": [f"#{c.id} {c.label(p.shift)} gpus "
                       f"{','.join(_h(g) for g in sorted(c.gpus)) or 'none'}"
                       f" flags {_flags_text(c.flags)}" for c in claims] or "none",
        }
        self.history.append((ev, what, state))

    def _pages(self, p: _Proc, addr: int, size: int) -> tuple[int, int]:
        ps = 1 << p.shift
        return addr >> p.shift, (addr + size + ps - 1) >> p.shift

    # --- feed ---------------------------------------------------------------

    def feed(self, ev: Event) -> None:
        t = type(ev)
        if t is Ioctl:
            if ev.nr == _SVM_NR and ev.type == _SVM_TYPE:
                self._svm(ev)
                return
            if ev.nr == _ALLOC_NR and ev.type == _ALLOC_TYPE:
                self._alloc(ev)
                return
        elif t is Intent:
            name = ev.name
            if name == UNLOCK:
                self._unlock(ev)
                return
            if name in LOCKS:
                self._lock(ev)
                return
            if name == SVM_SET:
                self._svm_intent(ev)
                return
        self._feed(ev)

    def _feed(self, ev: Event) -> None:
        if isinstance(ev, Ioctl):
            if (ev.type, ev.nr) == kfd.SVM:
                self._svm(ev)
            elif (ev.type, ev.nr) == (kfd.TYPE_KFD, 0x21) and ev.ok:
                v = (ev.out or {}).get("xnack_enabled")
                if v is None and ev.arg and ev.arg.get("xnack_enabled", -1) >= 0:
                    v = ev.arg["xnack_enabled"]
                if v is not None and v >= 0:
                    self._proc(ev.pid).xnack = bool(v)
        elif isinstance(ev, Munmap):
            if ev.ok and ev.length:
                p = self._proc(ev.pid)
                self._unmap(p, ev, *self._pages(p, ev.addr, ev.length))
        elif isinstance(ev, Mremap):
            self._mremap(ev)
        elif isinstance(ev, Mmap):
            if ev.ok and ev.flags & MAP_FIXED and ev.length and ev.pid in self.procs:
                p = self.procs[ev.pid]
                self._unmap(p, ev, *self._pages(p, ev.ret, ev.length))
        elif isinstance(ev, Intent):
            if ev.name in LOCKS:
                self._lock(ev)
            elif ev.name == UNLOCK:
                self._unlock(ev)
            elif ev.name == SVM_SET:
                self._svm_intent(ev)
            elif ev.pid in self.procs:
                self.procs[ev.pid].recent.pop(ev.tid, None)
                self.procs[ev.pid].allocs.pop(ev.tid, None)
        elif isinstance(ev, ProcessInfo):
            p = self._proc(ev.pid)
            if ev.page_size and ev.page_size & (ev.page_size - 1) == 0:
                p.shift = ev.page_size.bit_length() - 1
        elif isinstance(ev, Exit):
            if ev.whole and ev.pid in self.procs:
                self._drop(self.procs.pop(ev.pid), ev)
        elif isinstance(ev, Exec):
            if ev.ok and ev.pid in self.procs:
                self._drop(self.procs.pop(ev.pid), ev)

    def finish(self) -> None:
        for p in list(self.procs.values()):
            for tid, ev in list(p.retry.items()):
                self._bad(p, ev, f"failed with {ev.err} and was not retried")
            p.retry.clear()
            for c in self._live(p):
                self._judge_stale(p, c, "now")
        self._build()

    def _live(self, p: _Proc) -> list[Claim]:
        out = set()
        for _, _, v in p.cover.pieces.items():
            out |= v
        return sorted(out, key=lambda c: c.id)

    def _drop(self, p: _Proc, ev: Event) -> None:
        """Process exit or exec: ranges are freed with the process."""
        for c in self._live(p):
            self._judge_stale(p, c, "now")
            c.live = False
            c.ended_by = ev
        p.retry.clear()

    # --- SVM ioctl ----------------------------------------------------------

    def _svm(self, ev: Ioctl) -> None:
        arg = ev.arg
        if not arg or "op" not in arg:
            return   # strace: no struct, nothing to replay
        p = self._proc(ev.pid)
        start, size = int(arg.get("start_addr", 0)), int(arg.get("size", 0))
        attrs = [(int(t), int(v)) for t, v in arg.get("attrs") or []]
        op = arg["op"]
        if op == kfd.SVM_OP_GET_ATTR:
            self.counts["get_attr"] += 1
            if ev.ok and ev.out and ev.out.get("attrs") and size and not (start | size) & (
                    (1 << p.shift) - 1):
                self._get_attr(p, ev, start, size, attrs,
                               [(int(t), int(v)) for t, v in ev.out["attrs"]])
            return
        if op != kfd.SVM_OP_SET_ATTR:
            return
        self.counts["set_attr"] += 1
        tid = ev.tid
        prev = p.retry.pop(tid, None)
        if prev is not None and prev.arg != ev.arg:
            self._bad(p, prev, f"failed with {prev.err} and was not retried")
        if not ev.ok:
            if ev.err in RETRY_ERRNOS:
                p.retry[tid] = ev    # a retry with the same arguments is not a finding
            elif ev.err is not None:
                self._bad(p, ev, f"failed with {ev.err}")
            return   # EARLY_ERRNOS changed nothing; later ones may have (LIMITS)
        mask = (1 << p.shift) - 1
        if size == 0 or start & mask or size & mask:
            why = "zero size" if size == 0 else "unaligned start" if start & mask \
                else "unaligned size"
            self._bad(p, ev, f"{why} (the kernel answers EINVAL)")
            return
        s, e = start >> p.shift, (start + size) >> p.shift
        self._set_attr(p, ev, s, e, attrs)

    def _bad(self, p: _Proc, ev: Ioctl, why: str) -> None:
        self._raw.append(Raw("svm-bad-range", None, None, extra={"event": ev, "why": why,
                                                                "pid": p.pid}))
        arg = ev.arg or {}
        s = int(arg.get("start_addr", 0)) >> p.shift
        self._note(p, ev, s, s + max(1, int(arg.get("size", 0)) >> p.shift),
                   f"svm-bad-range: SET_ATTR {why}")

    def _set_attr(self, p: _Proc, ev: Ioctl, s: int, e: int, attrs: list) -> None:
        """One SET_ATTR, asking the cover index once and the map once for
        what the revoke reaches (the same walk then places the update), and
        the new pieces for what a deregistration left NO_ACCESS under a new
        registration.  tests/test_svm_equivalence.py keeps the plain version
        (each question asked of the maps on its own) and compares the two."""
        eff = _effect(attrs)
        kind = eff.kind
        rec = Rec(ev, eff, s, e)
        own = None
        if kind == "registration":
            own = p.reg.get((s, e))
        elif kind == "application":
            own = p.app.get((s, e))
        # the cover index's walk around [s, e) serves the query and, for a
        # registration or application (which end nothing first), the claim's add
        touched, near_cover = p.cover.query_near(s, e)
        released: list[Claim] = []
        if kind == "revoke":
            app = p.app.get((s, e))
            if app is not None:
                released.append(app)   # the program's own NO_ACCESS on exactly its range
            if touched:
                released += self._infer_release(p, s, e, touched)
        rec.released = released
        mp = p.map
        walk = mp.walk(s, e)
        taken, cleared = eff.taken, eff.cleared
        if touched and (taken or cleared):
            near = None
            for c in sorted(touched, key=_by_id) if len(touched) > 1 else touched:
                if c is own:
                    continue
                # _loss's own first test, before any piece is looked at
                if c.gpus:
                    want = c.gpus & taken
                elif _default_reliant(c, p.xnack):
                    want = taken
                else:
                    want = None
                if want or c.flags & cleared:
                    if near is None:
                        near = mp.overlapping_at(walk)
                    loss = self._loss(p, c, s, e, eff, near)
                    if loss is not None:
                        rec.losses[c] = loss
                if c.stale_gpus and not c.gpus and _default_reliant(c, p.xnack):
                    rec.stale_pre[c] = self._still_stale(p, c)
        if released:
            # the first claim ended is the first change to the cover index:
            # its removal can reuse the walk the query made
            near_rm = (s, e, near_cover)
            for c in released:
                if c.live:
                    self._end(p, c, ev, rec.stale_pre.get(c, "now"), near_rm)
                    near_rm = None
        after = mp.set_attr(s, e, attrs, walk)
        if taken:
            if any(c.kind != "application" for c in released):
                p.dereg.update(s, e, _true, _true)
            else:
                p.dereg.delete(s, e)
        if rec.losses:
            for c, loss in rec.losses.items():
                if c not in released:
                    self._victim(p, rec, c, loss)
        if kind == "registration" or kind == "application":
            new = own is None
            if new:
                own = self._new_claim(p, kind, s, e, ev, near_cover)
            g = Grant(ev, eff.granted, eff.set_)
            if kind == "application" and not new:
                # the program's own range: what it takes from itself is not a loss
                own.grants = [Grant(x.event, x.gpus - taken, x.flags & ~cleared)
                              for x in own.grants]
            own.grants.append(g)
            own.recompute()
            rec.claim, rec.grant = own, g
            if new and kind == "registration":
                own.stale_gpus = self._noaccess_gpus(p, s, e, after)
        if self.watch is not None and self._watched(p, s, e):
            self._note_set_attr(p, ev, s, e, attrs, eff, rec, released)
        dq = p.recent.get(ev.tid)
        if dq is None:
            dq = p.recent[ev.tid] = deque(maxlen=RECENT)
        dq.append(rec)

    def _note_set_attr(self, p: _Proc, ev: Ioctl, s: int, e: int, attrs: list, eff: Effect,
                       rec: Rec, released: list) -> None:
        what = (f"SET_ATTR {shape_of(attrs)} on {_h(s << p.shift)}-{_h(e << p.shift)} "
                f"({eff.kind})")
        if released:
            what += "; releases " + ", ".join(f"#{c.id}" for c in released)
        if rec.claim is not None:
            what += f"; claim #{rec.claim.id}"
        for c, loss in rec.losses.items():
            if c not in released:
                what += f"; takes {self._loss_text(loss)} from live claim #{c.id}"
        self._note(p, ev, s, e, what)

    def _infer_release(self, p: _Proc, s: int, e: int, touched=None) -> list[Claim]:
        """The smallest registration claim containing [s, e), and every one
        lying wholly inside it.  ``touched``: the claims on [s, e) when known."""
        if touched is None:
            touched = p.cover.query(s, e)
        regs = [c for c in touched if c.kind != "application"]
        if len(regs) < 2:
            if regs:
                c = regs[0]
                if (c.start <= s and c.end >= e) or (c.start >= s and c.end <= e):
                    return [c]
            return []
        containing = [c for c in regs if c.start <= s and c.end >= e]
        out: list[Claim] = []
        if containing:
            # ties (identical ranges, explicit claims only) go to the newest
            out.append(min(containing, key=lambda c: (c.end - c.start, -c.id)))
        for c in sorted(regs, key=lambda c: c.id):
            if c.start >= s and c.end <= e and c not in out:
                out.append(c)
        return out

    def _loss(self, p: _Proc, c: Claim, s: int, e: int, eff: Effect,
              near: list | None = None) -> Loss | None:
        """What claim c loses on [s, e): gpus it granted (any gpu if it is a
        registration that granted none) still accessible there, and flags it
        set that are not already clear.  ``near``: the map's pieces
        overlapping [s, e) (unclipped) when known."""
        if c.gpus:
            want = c.gpus & eff.taken
        elif _default_reliant(c, p.xnack):
            want = eff.taken
        else:
            want = frozenset()
        want_flags = c.flags & eff.cleared
        if not want and not want_flags:
            return None
        lost_g: set = set()
        lost_f = 0
        lo = hi = None
        n = 0
        for cs, ce in c.pages:
            a, b = max(cs, s), min(ce, e)
            if a >= b:
                continue
            if near is None:
                pieces = p.map.overlapping(a, b)
            else:   # what p.map.overlapping(a, b) answers, [a, b) lying in [s, e)
                pieces = [(ps if ps > a else a, pe if pe < b else b, st)
                          for ps, pe, st in near if ps < b and pe > a]
            pos = a
            for ps, pe, st in pieces + [(b, b, None)]:
                if pos < ps:   # no range yet: default access, default flags
                    gl, fl = set(want), want_flags & (kfd.DEFAULT_SVM_FLAGS | 0)
                    self_hit = gl or fl
                    if self_hit:
                        lost_g |= gl
                        lost_f |= fl
                        lo = pos if lo is None else min(lo, pos)
                        hi = ps if hi is None else max(hi, ps)
                        n += ps - pos
                if st is None:
                    break
                gl = {g for g in want if st.access_of(g) != NO_ACCESS}
                fl = want_flags & ~st.flags_clr
                if gl or fl:
                    lost_g |= gl
                    lost_f |= fl
                    lo = ps if lo is None else min(lo, ps)
                    hi = pe if hi is None else max(hi, pe)
                    n += pe - ps
                pos = pe
        if not lost_g and not lost_f:
            return None
        return Loss(frozenset(lost_g), lost_f, lo, hi, n)

    def _loss_text(self, loss: Loss) -> str:
        parts = []
        if loss.gpus:
            parts.append("gpu " + ",".join(_h(g) for g in sorted(loss.gpus)))
        if loss.flags:
            parts.append(_flags_text(loss.flags))
        return " and ".join(parts) + f" on {loss.npages} page(s)"

    def _noaccess_gpus(self, p: _Proc, s: int, e: int, after: list | None = None) -> frozenset:
        """GPUs a deregistration left NO_ACCESS somewhere on [s, e).
        ``after``: what ``SvmMap.set_attr`` on [s, e) just returned."""
        out: set = set()
        if after is not None:
            # nothing NO_ACCESS on [s, e) at all: no need to ask where
            # deregistrations were
            for ps, (pe, st) in after:
                if ps < e and pe > s and _noaccess(st):
                    break
            else:
                return frozenset()
        for ds, de, _ in p.dereg.overlapping(s, e):
            a, b = max(ds, s), min(de, e)
            if after is None:
                states = [st for _, _, st in p.map.overlapping(a, b)]
            else:   # the pieces overlapping [a, b) are among those covering [s, e)
                states = [st for ps, (pe, st) in after if ps < b and pe > a]
            for st in states:
                out |= {g for g, x in st.access if x == NO_ACCESS}
        return frozenset(out)

    def _still_stale(self, p: _Proc, c: Claim):
        gpus: set = set()
        lo = hi = None
        for cs, ce in c.pages:
            for ps, pe, st in p.map.overlapping(cs, ce):
                hit = {g for g in c.stale_gpus if st.access_of(g) == NO_ACCESS}
                if hit:
                    gpus |= hit
                    lo = ps if lo is None else min(lo, ps)
                    hi = pe if hi is None else max(hi, pe)
        return (frozenset(gpus), lo, hi) if gpus else None

    def _judge_stale(self, p: _Proc, c: Claim, pre) -> None:
        """svm-stale-no-access, once per claim, when it ends (or the trace does)."""
        if c.gpus or not c.stale_gpus or c in self._stale or not _default_reliant(c, p.xnack):
            return
        # pre: judged before the ending revoke applied, or "now"
        res = self._still_stale(p, c) if pre == "now" else pre
        if res:
            r = Raw("svm-stale-no-access", None, c, extra={"res": res, "pid": p.pid,
                                                             "shift": p.shift})
            self._stale[c] = r
            self._raw.append(r)

    def _end(self, p: _Proc, c: Claim, ev: Event, pre="now", near: tuple | None = None) -> None:
        if not c.live:
            return
        self._judge_stale(p, c, pre)
        c.live = False
        c.ended_by = ev
        self._unindex(p, c, near)

    def _revive(self, p: _Proc, c: Claim) -> None:
        if c.live:
            return
        c.live = True
        c.ended_by = None
        for s, e in c.pages:
            p.cover.add(s, e, c)
        if c.kind == "registration":
            p.reg.setdefault((c.start, c.end), c)
        r = self._stale.pop(c, None)
        if r is not None:
            r.dead = True

    def _victim(self, p: _Proc, rec: Rec, c: Claim, loss: Loss) -> None:
        if loss.gpus:
            self._raw.append(Raw("svm-over-revoke", rec, c, loss, {"pid": p.pid,
                                                                     "shift": p.shift}))
        if loss.flags:
            self._raw.append(Raw("svm-coherency-downgrade", rec, c, loss,
                                 {"pid": p.pid, "shift": p.shift}))

    # --- GET_ATTR -----------------------------------------------------------

    def _get_attr(self, p: _Proc, ev: Ioctl, start: int, size: int, asked, answered) -> None:
        s, e = start >> p.shift, (start + size) >> p.shift
        pred = p.map.predict(s, e, asked, p.xnack)
        diffs = []
        for (t_in, v_in), (t_out, v_out), pr in zip(asked, answered, pred):
            if t_in == kfd.ATTR_ACCESS and t_out == NO_ACCESS:
                for c in p.cover.query(s, e):
                    if v_in in c.stale_gpus and len(c.getattr_seen) < 3:
                        c.getattr_seen.append(ev)
            if pr is None:
                continue
            pt, pv, known = pr
            if pt != t_out or (pv ^ v_out) & known:
                diffs.append((t_in, v_in, pt, pv, t_out, v_out))
        desc = "GET_ATTR " + ", ".join(
            f"{ATTR_SHORT.get(t, t)}={ACCESS_NAMES.get(t, '') or _h(v)}" for t, v in answered)
        if diffs:
            self._raw.append(Raw("svm-model-mismatch", None, None,
                                 extra={"event": ev, "diffs": diffs, "pid": p.pid,
                                        "s": s, "e": e, "shift": p.shift}))
            desc += f"; differs from the model on {len(diffs)} attribute(s)"
        self._note(p, ev, s, e, desc)

    # --- munmap / mremap ----------------------------------------------------

    def _mremap(self, ev: Mremap) -> None:
        if not ev.ok or ev.pid not in self.procs:
            return
        p = self.procs[ev.pid]
        if ev.ret == ev.old_addr:
            # shrunk in place: the kernel page-aligns both lengths (mm/mremap.c),
            # so the partial last page of new_len stays mapped
            first = ev.old_addr >> p.shift
            keep = self._pages(p, 0, ev.new_len)[1]
            had = self._pages(p, 0, ev.old_len)[1]
            self._unmap(p, ev, first + keep, first + had)
            return
        # moved: whatever was at the target is replaced, the source unmapped
        self._unmap(p, ev, *self._pages(p, ev.ret, ev.new_len))
        self._unmap(p, ev, *self._pages(p, ev.old_addr, ev.old_len))

    def _unmap(self, p: _Proc, ev: Event, s: int, e: int) -> None:
        if s >= e:
            return
        hit = sorted(p.cover.query(s, e), key=lambda c: c.id)
        had_range = bool(p.map.overlapping(s, e))
        notes = []
        for c in hit:
            locked = c.kind == "explicit" and c.refcount > 0
            if locked or c.kind == "registration":
                self._raw.append(Raw("svm-unmap-registered", None, c,
                                     extra={"event": ev, "pid": p.pid, "shift": p.shift,
                                            "locked": locked, "s": s, "e": e,
                                            "pages": self._cut_count(c, s, e)}))
            notes.append(f"#{c.id}")
            left = []
            for cs, ce in c.pages:
                if ce <= s or cs >= e:
                    left.append((cs, ce))
                    continue
                p.cover.remove(max(cs, s), min(ce, e), c)
                if cs < s:
                    left.append((cs, s))
                if ce > e:
                    left.append((e, ce))
            if not left:
                self._judge_stale(p, c, "now")
                c.live = False
                c.ended_by = ev
                c.pages = []
                self._unindex(p, c)
            else:
                c.pages = left
        p.map.unmap(s, e)
        p.dereg.delete(s, e)
        if had_range or hit:
            self._note(p, ev, s, e, f"unmap {_h(s << p.shift)}-{_h(e << p.shift)}: SVM attributes "
                       "forgotten"
                       + (f"; removes pages of claims {', '.join(notes)}" if notes else ""))

    @staticmethod
    def _cut_count(c: Claim, s: int, e: int) -> int:
        return sum(max(0, min(ce, e) - max(cs, s)) for cs, ce in c.pages)

    # --- intent calls -------------------------------------------------------

    def _alloc(self, ev: Ioctl) -> None:
        """A userptr ALLOC_MEMORY_OF_GPU: kept for the lock it may serve."""
        flags = (ev.arg or {}).get("flags")
        if not ev.ok or not isinstance(flags, int) or not flags & kfd.ALLOC_FLAG_USERPTR:
            return
        p = self._proc(ev.pid)
        dq = p.allocs.get(ev.tid)
        if dq is None:
            dq = p.allocs[ev.tid] = deque(maxlen=16)
        dq.append(ev)

    def _lock(self, ev: Intent) -> None:
        p = self._proc(ev.pid)
        recs = [r for r in p.recent.pop(ev.tid, ()) if r.eff.kind == "registration"
                and r.claim is not None and _inside(r.event, ev)]
        userptr = any(_inside(a, ev) for a in p.allocs.pop(ev.tid, ()))
        ptr, size = ev.args.get("host_ptr"), ev.args.get("size")
        if ev.ret != 0 or not isinstance(ptr, int) or not isinstance(size, int) or size <= 0:
            return   # a failed lock registers nothing the runtime keeps
        if not recs and (userptr or ptr in p.userptr or (p.legacy and ptr not in p.by_ptr)):
            # the legacy path (SPEC 4.3): a userptr buffer at a GPU VA of its
            # own, a buffer handle (4.2) and no SVM claim; a nested lock of
            # it (no ioctl: the runtime refcounts) or, once the runtime is
            # known to pin this way, a lock that issued nothing, joins it
            p.legacy = p.legacy or userptr
            p.userptr[ptr] = p.userptr.get(ptr, 0) + 1
            if self.watch is not None:
                s, e = self._pages(p, ptr, size)
                self._note(p, ev, s, e, f"lock {_h(ptr)} size {_h(size)}: a userptr buffer "
                           f"(refcount {p.userptr[ptr]}), not an SVM claim")
            return
        s, e = self._pages(p, ptr, size)
        target = p.by_ptr.get(ptr)
        if target is not None and not target.live:
            target = None
        if target is None:
            first = recs[0].claim.real() if recs else None
            mine = {id(r.grant) for r in recs}
            if (first is not None and first.kind == "registration" and first.live
                    and all(id(g) in mine for g in first.grants)):
                # the provisional claim becomes the lock's: findings already
                # made about it follow the same object
                target = first
                key = (first.start, first.end)
                if p.reg.get(key) is first:
                    del p.reg[key]
                target.kind = "explicit"
            else:
                self._ids += 1
                self.counts["claims"] += 1
                target = Claim(self._ids, "explicit", s, e, pages=[(s, e)],
                               born=recs[0].event if recs else ev)
                p.cover.add(s, e, target)
                target.stale_gpus = self._noaccess_gpus(p, s, e)
            target.ptr, target.byte_end, target.lock, target.refcount = ptr, ptr + size, ev, 0
            p.by_ptr[ptr] = target
        target.refcount += 1
        # a second lock of the same pointer with another size widens the claim
        bs, be = ptr, max(ptr + size, target.byte_end or 0)
        target.byte_end = be
        ns, ne = self._pages(p, bs, be - bs)
        ns, ne = min(ns, target.start), max(ne, target.end)
        if (ns, ne) != (target.start, target.end):
            for a, b in ((ns, target.start), (target.end, ne)):
                if a < b:
                    p.cover.add(a, b, target)
                    target.pages.append((a, b))
            target.start, target.end = ns, ne
        for r in recs:
            src = r.claim.real()
            if src is target:
                continue
            if r.grant in src.grants:
                src.grants.remove(r.grant)
                src.recompute()
            target.grants.append(r.grant)
            r.claim = target
            for a, b in ((r.s, r.e),):
                if a < target.start or b > target.end:
                    p.cover.add(a, b, target)
                    target.pages.append((a, b))
                    target.start, target.end = min(a, target.start), max(b, target.end)
            if not src.grants and src.kind == "registration":
                # retired, not ended: it was this lock's claim all along
                src.live = False
                src.ended_by = ev
                self._unindex(p, src)
                src.alias = target
            if not target.stale_gpus:
                target.stale_gpus = src.stale_gpus
        target.recompute()
        if self.watch is not None:   # descriptions cost: only for `show`
            self._note(p, ev, target.start, target.end,
                       f"lock {_h(ptr)} size {_h(size)}: explicit claim #{target.id} "
                       f"(refcount {target.refcount}, {len(recs)} SET_ATTR(s) in its window)")

    def _unlock(self, ev: Intent) -> None:
        p = self._proc(ev.pid)
        recs = [r for r in p.recent.pop(ev.tid, ()) if r.eff.kind == "revoke"
                and _inside(r.event, ev)]
        p.allocs.pop(ev.tid, None)
        ptr = ev.args.get("host_ptr")
        n = p.userptr.get(ptr)
        if n is not None and ptr not in p.by_ptr:
            if ev.ret == 0:
                if n > 1:
                    p.userptr[ptr] = n - 1
                else:
                    del p.userptr[ptr]
            return   # a userptr buffer: the handle model sees its FREE
        c = p.by_ptr.get(ptr)
        if c is None or ev.ret != 0:
            return   # lock never seen: the revokes keep their inferred release
        c.refcount -= 1
        for r in recs:
            self._rebind(p, r, c, ev)
        ended = False
        if c.refcount <= 0:
            del p.by_ptr[ptr]
            if c.live:
                self._end(p, c, ev)
                ended = True
        if self.watch is not None:
            self._note(p, ev, c.start, c.end,
                       f"unlock {_h(ptr)}: claim #{c.id} refcount {c.refcount}"
                       + ("; last unlock ends it" if ended else ""))

    def _rebind(self, p: _Proc, rec: Rec, c: Claim, unlock: Intent) -> None:
        """A revoke inside an unlock's window releases that unlock's claim,
        whatever the inference chose when the revoke completed."""
        rec.unlock = unlock
        old = rec.released
        if old == [c]:
            return
        self._unrelease(p, rec, keep=[c])
        if c not in old:
            for r in self._raw:
                if r.rec is rec and r.claim is not None and r.claim.real() is c:
                    r.dead = True
            if c.live:
                self._end(p, c, rec.event, rec.stale_pre.get(c, "now"))
        rec.released = [c]

    def _unrelease(self, p: _Proc, rec, keep: list) -> None:
        """Undo ``rec``'s inferred releases of every claim not in ``keep``:
        they were not deregistered after all, so what ``rec`` took from them
        makes them victims."""
        for k in rec.released:
            if k in keep:
                continue
            self._revive(p, k)
            loss = rec.losses.get(k)
            if loss is not None:
                self._victim(p, rec, k, loss)

    def _svm_intent(self, ev: Intent) -> None:
        """hsa_amd_svm_attributes_set: the SET_ATTRs inside its window are the
        program's own (SPEC 4.3), application claims whatever their shape, or
        for NO_ACCESS on exactly an application claim's range the end of it.
        They completed before this call returned, so the inference made at
        their completion is corrected here."""
        p = self._proc(ev.pid)
        recs = [r for r in p.recent.pop(ev.tid, ()) if _inside(r.event, ev)]
        p.allocs.pop(ev.tid, None)
        mine = {id(r) for r in recs}
        for r in recs:
            if r.eff.kind == "registration" and r.claim is not None:
                self._to_application(p, r)
            elif r.eff.kind == "revoke":
                # the application claim on exactly this range (already ended
                # at completion) stays ended; inferred releases are undone:
                # the caller's own NO_ACCESS is no deregistration
                keep = [c for c in r.released if c.real().kind == "application"]
                self._unrelease(p, r, keep)
                r.released = keep
                p.dereg.delete(r.s, r.e)
        # what the caller takes from a claim lying wholly inside the range it
        # names is what it asked for (two buffers freed in one call, clr's
        # NO_ACCESS on the buffer it is about to unlock); a claim it reaches
        # only by rounding outward onto a shared page is a victim
        for raw in self._raw:
            if raw.rec is not None and id(raw.rec) in mine and raw.loss is not None:
                v = raw.claim.real()
                if raw.rec.s <= v.start and v.end <= raw.rec.e:
                    raw.dead = True
        if self.watch is not None and recs:
            self._note(p, ev, recs[0].s, recs[-1].e,
                       f"hsa_amd_svm_attributes_set: {len(recs)} SET_ATTR(s) are the "
                       "program's own")

    def _to_application(self, p: _Proc, r: Rec) -> None:
        """A registration-shaped SET_ATTR made by the program: its grant
        belongs to the application claim on that exact range."""
        c = r.claim.real()
        if c.kind == "application":
            return
        app = p.app.get((r.s, r.e))
        if app is None and c.kind == "registration" and c.start == r.s and c.end == r.e \
                and all(g is r.grant for g in c.grants):
            # made by this call alone: the same claim, now the program's
            key = (c.start, c.end)
            if p.reg.get(key) is c:
                del p.reg[key]
            c.kind = "application"
            c.stale_gpus = frozenset()
            p.app[key] = c
            r.claim = c
            return
        if app is None:
            app = self._new_claim(p, "application", r.s, r.e, r.event)
        if r.grant in c.grants:
            c.grants.remove(r.grant)
            c.recompute()
        app.grants.append(r.grant)
        app.recompute()
        r.claim = app
        if not c.grants and c.kind == "registration" and c.live:
            c.live = False
            c.ended_by = r.event
            self._unindex(p, c)
            c.alias = app

    # --- findings -----------------------------------------------------------

    def _build(self) -> None:
        new: list[Finding] = []
        for r in self._raw:
            if r.dead:
                continue
            if r.rule in ("svm-over-revoke", "svm-coherency-downgrade"):
                f = self._victim_finding(r)
            elif r.rule == "svm-stale-no-access":
                f = self._stale_finding(r)
            elif r.rule == "svm-unmap-registered":
                f = self._unmap_finding(r)
            elif r.rule == "svm-bad-range":
                ev = r.extra["event"]
                a = ev.arg or {}
                f = Finding(
                    rule=r.rule, event=ev,
                    message=f"SET_ATTR of {_h(int(a.get('start_addr', 0)))} size "
                            f"{_h(int(a.get('size', 0)))} {r.extra['why']}",
                    subject=self._subject(int(a.get("start_addr", 0)),
                                          int(a.get("start_addr", 0)) + int(a.get("size", 0)),
                                          []),
                    evidence=[Evidence("this SET_ATTR", ev)],
                    key=(r.extra["why"].split(" (")[0], shape_of(a.get("attrs") or [])))
            else:
                f = self._mismatch_finding(r)
            new.append(f)
        # SPEC 6: two different findings never share a fingerprint (two locks
        # of one size at one call site, two identical revokes): those that
        # would collide get their occurrence number, in trace order
        seen: dict = {}
        for f in sorted(new, key=lambda f: (f.file or "", f.line or 0)):
            seen.setdefault(f.fingerprint, []).append(f)
        for same in seen.values():
            if len(same) > 1:
                for n, f in enumerate(same, 1):
                    f.key = (*f.key, f"occurrence={n}")
                    f.fingerprint = fingerprint(f)
        self.findings.extend(new)
        self._raw = []

    @staticmethod
    def _subject(start: int, end: int, gpus) -> dict:
        return {"kind": "svm-range", "start": _h(start), "end": _h(end),
                "gpu_ids": [_h(g) for g in sorted(gpus)]}

    def _victim_finding(self, r: Raw) -> Finding:
        rec, loss, sh = r.rec, r.loss, r.extra["shift"]
        victim = r.claim.real()
        ev = rec.event
        released = [c.real() for c in rec.released]
        cause, order, culprit = self._cause(rec, victim, loss, released)
        over = r.rule == "svm-over-revoke"
        attrs = (ev.arg or {}).get("attrs") or []
        lost = (", ".join(_h(g) for g in sorted(loss.gpus)) if over
                else _flags_text(loss.flags))
        rel = ", ".join(c.label(sh) for c in released) or "nothing"
        msg = (f"SET_ATTR {shape_of(attrs)} on [{_h(rec.s << sh)}, {_h(rec.e << sh)}) "
               f"released {rel} but took {'GPU ' if over else ''}{lost} from {loss.npages} "
               f"page(s) of live {victim.label(sh)}")
        if victim.born is not None and victim.born.tid is not None:
            msg += f" (granted on tid {victim.born.tid})"
        if not over:
            msg += ": fine-grained pages made coarse-grained (stale reads, no fault)"
        if cause:
            msg += f" [cause: {cause}]"
        if order == "concurrent":
            msg += " [order: concurrent calls, the outcome depends on their order]"
        evidence = [Evidence("revoking call" if rec.eff.kind == "revoke" else "this SET_ATTR",
                             ev)]
        if rec.unlock is not None:
            evidence.append(Evidence("deregistration (unlock) it ran inside", rec.unlock))
        for c in released:
            first = c.grants[0].event if c.grants else c.born
            if c.lock is not None:
                evidence.append(Evidence("released claim: locked by", c.lock))
            if first is not None and first is not c.lock:
                evidence.append(Evidence("released claim: registered by", first))
        if victim.lock is not None:
            evidence.append(Evidence("victim claim: locked by", victim.lock))
        shown = 0
        for g in victim.grants:
            if shown >= 4:
                break
            if (over and (g.gpus & loss.gpus or not victim.gpus)) or (g.flags & loss.flags):
                evidence.append(Evidence("victim claim: granted by"
                                         + (" (the call that raced)" if g.event is culprit
                                            else ""), g.event))
                shown += 1
        if not shown and victim.born is not None and victim.born is not victim.lock:
            evidence.append(Evidence("victim claim: registered by", victim.born))
        details = {
            "order": order,
            "released": [c.summary(sh) for c in released],
            "victim": victim.summary(sh),
            "pages": loss.npages,
            "gpus": [_h(g) for g in sorted(loss.gpus)] if over else [],
            "flags": _flags_text(loss.flags) if loss.flags else "",
        }
        # one subject for both rules: the victim's pages, the gpus and flags taken
        subject = self._subject(loss.lo << sh, loss.hi << sh, loss.gpus)   # SPEC 6 shape
        key = (cause or "-", shape_of(attrs), victim.kind,
               "+".join(sorted({c.kind for c in released})) or "none",
               f"taken={loss.npages}/{victim.end - victim.start}",
               f"revoke={rec.e - rec.s}",
               "released=" + ",".join(str(c.end - c.start) for c in released))
        return Finding(rule=r.rule, message=msg, event=ev, subject=subject,
                       evidence=evidence, cause=cause, key=key,
                       details=details)

    def _cause(self, rec: Rec, victim: Claim, loss: Loss, released: list):
        """(cause, order, racing grant event) for one (SET_ATTR, victim)."""
        ev = rec.event
        began = rec.unlock.time if rec.unlock is not None else ev.time
        grants = [g for g in victim.grants
                  if (g.gpus & loss.gpus) or (g.flags & loss.flags) or not victim.gpus]
        grant_events = [g.event for g in grants] or [victim.born or victim.lock]
        order = "certain"
        culprit = None
        cross = False
        for g in grant_events:
            if g is None:
                continue
            if _overlap(_win(g), _win(ev)):
                order = "concurrent"
            if g.tid != ev.tid and g.time is not None and began is not None:
                if g.end > began + EPS or _overlap(_win(g), _win(ev)):
                    cross = True
                    culprit = g
        if rec.eff.kind != "revoke":
            return None, order, culprit
        if cross:
            return "cross-thread-order", order, culprit
        if victim.start < rec.s and victim.end >= rec.e:
            return "enclosing-range", order, culprit
        # the revoke reaches past what it releases, onto the victim's pages;
        # without the unlock's window the release is the inferred one, which
        # covers the revoke whenever a claim contains it (C2 then shows no cause)
        covered = 0
        for a, b in _union([(c.start, c.end) for c in released]):
            covered += max(0, min(b, loss.hi) - max(a, loss.lo))
        if released and covered < loss.hi - loss.lo:
            return "grown-extent", order, culprit
        bounds_v = {victim.start, victim.end - 1}
        bounds_r = {rec.s, rec.e - 1}
        if all(pg in bounds_v and pg in bounds_r for pg in range(loss.lo, loss.hi)):
            return "shared-page", order, culprit
        return None, order, culprit

    def _stale_finding(self, r: Raw) -> Finding:
        c, sh = r.claim.real(), r.extra["shift"]
        gpus, lo, hi = r.extra["res"]
        ev = c.born or c.lock
        msg = (f"{c.label(sh)} grants no GPU itself but covers {hi - lo} page(s) left "
               f"NO_ACCESS for GPU {', '.join(_h(g) for g in sorted(gpus))} by an earlier "
               f"revoke: the VA was reused without munmap and nothing re-granted it")
        evidence = [Evidence("registration relying on default access", ev)]
        if c.lock is not None and c.lock is not ev:
            evidence.append(Evidence("locked by", c.lock))
        for g in c.getattr_seen:
            evidence.append(Evidence("GET_ATTR answered NO_ACCESS", g))
        if c.ended_by is not None:
            evidence.append(Evidence("claim ended by", c.ended_by))
        return Finding(rule=r.rule, message=msg, event=ev,
                       subject=self._subject(lo << sh, hi << sh, gpus),
                       evidence=evidence, key=(c.kind, f"pages={c.end - c.start}"),
                       details={"claim": c.summary(sh), "pages": hi - lo,
                                "gpus": [_h(g) for g in sorted(gpus)],
                                "get_attr_confirms": bool(c.getattr_seen)})

    def _unmap_finding(self, r: Raw) -> Finding:
        c, sh, ev = r.claim.real(), r.extra["shift"], r.extra["event"]
        locked = r.extra["locked"]
        s, e = r.extra["s"], r.extra["e"]
        lo, hi = max(s, c.start), min(e, c.end)
        msg = (f"{ev.name} removes {r.extra['pages']} page(s) of {c.label(sh)} "
               + ("still locked: memory freed while registered" if locked else
                  "whose deregistration is not visible (no intent calls): it may have ended "
                  "without an ioctl"))
        evidence = [Evidence("this unmap", ev)]
        if c.lock is not None:
            evidence.append(Evidence("locked by", c.lock))
        elif c.born is not None:
            evidence.append(Evidence("registered by", c.born))
        return Finding(rule=r.rule, message=msg, event=ev,
                       subject=self._subject(lo << sh, hi << sh, c.gpus),
                       evidence=evidence, severity="warning" if locked else "note",
                       key=(c.kind, "locked" if locked else "inferred"),
                       details={"claim": c.summary(sh), "pages": r.extra["pages"]})

    def _mismatch_finding(self, r: Raw) -> Finding:
        ev, sh = r.extra["event"], r.extra["shift"]
        parts = []
        names = []
        for t_in, v_in, pt, pv, t_out, v_out in r.extra["diffs"]:
            name = ATTR_SHORT.get(t_in, str(t_in))
            names.append(name)
            if t_in == kfd.ATTR_ACCESS:
                parts.append(f"ACCESS for GPU {_h(v_in)}: kernel {ACCESS_NAMES.get(t_out, t_out)}"
                             f", model {ACCESS_NAMES.get(pt, pt)}")
            else:
                parts.append(f"{name}: kernel {_h(v_out)}, model {_h(pv)}")
        return Finding(rule=r.rule, event=ev,
                       message="GET_ATTR answer differs from the replayed model: "
                               + "; ".join(parts),
                       subject=self._subject(r.extra["s"] << sh, r.extra["e"] << sh, []),
                       evidence=[Evidence("this GET_ATTR", ev)], key=tuple(sorted(names)),
                       details={"differences": parts})
