"""The SVM range map of one process, page-granular, as KFD keeps it.

The kernel holds a list of non-overlapping ``svm_range`` objects that
SET_ATTR splits on its boundaries, fills gaps of with new default ranges, and
never merges (ref/kfd-uapi.md section 6).  ``PieceMap`` is that list: a
SortedDict keyed by start page, so a lookup is a bisect (log n) and an update
touches only the pieces it overlaps.  ``SvmMap`` puts the kernel's attribute
semantics on top; ``CoverIndex`` reuses the structure to find which claims
(which may overlap each other) lie on a page range.

All ranges are in pages, ``[start, end)`` with ``end`` exclusive.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, NamedTuple

from sortedcontainers import SortedDict

from .. import kfd

ACCESS = kfd.ATTR_ACCESS
IN_PLACE = kfd.ATTR_ACCESS_IN_PLACE
NO_ACCESS = kfd.ATTR_NO_ACCESS
MASK32 = 0xFFFFFFFF
UNDEF = kfd.SVM_LOCATION_UNDEFINED
_FLAG_SHORT = {b: n.replace("KFD_IOCTL_SVM_FLAG_", "") for b, n in kfd.SVM_FLAG_NAMES.items()}
ACCESS_NAMES = {ACCESS: "ACCESS", IN_PLACE: "ACCESS_IN_PLACE", NO_ACCESS: "NO_ACCESS"}


class PieceMap:
    """Non-overlapping ``[start, end) -> value`` pieces, never merged unless
    the caller asks (``coalesce``)."""

    __slots__ = ("_d",)

    def __init__(self) -> None:
        self._d = SortedDict()

    def __len__(self) -> int:
        return len(self._d)

    def items(self) -> Iterator[tuple[int, int, Any]]:
        for s, (e, v) in self._d.items():
            yield s, e, v

    def overlapping(self, s: int, e: int) -> list[tuple[int, int, Any]]:
        """Pieces overlapping [s, e), unclipped, in address order."""
        d = self._d
        # from the last piece starting at or before s to the last before e;
        # a key slice is one bisect each end (irange costs more per call)
        i = d.bisect_right(s) - 1
        out = []
        for k in d.keys()[i if i > 0 else 0:d.bisect_left(e)]:
            pe, v = d[k]
            if pe > s:
                out.append((k, pe, v))
        return out

    def get(self, page: int):
        d = self._d
        i = d.bisect_right(page) - 1
        if i < 0:
            return None
        k, (e, v) = d.peekitem(i)
        return v if e > page else None

    def update(self, s: int, e: int, fn: Callable[[Any], Any],
               fill: Callable[[], Any] | None, always: bool = False) -> None:
        """Replace each overlapped value v by fn(v) on [s, e) only, splitting
        pieces that stick out; a piece fn leaves equal is left whole (the
        kernel's svm_range_is_same_attrs) unless ``always``.  Gaps get
        fn(fill()) when ``fill`` is given."""
        d = self._d
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

    def delete(self, s: int, e: int) -> list[tuple[int, int, Any]]:
        """Remove [s, e); heads and tails that stick out survive.  Returns the
        removed parts, clipped."""
        d = self._d
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

    def coalesce(self, s: int, e: int, drop: Callable[[Any], bool]) -> None:
        """Merge touching equal neighbours around [s, e) and drop pieces whose
        value ``drop`` rejects (used by CoverIndex, never by the SVM map)."""
        d = self._d
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


class PageState(NamedTuple):
    """What the kernel holds for one range.  ``access`` is a sorted tuple of
    (gpu_id, ACCESS|IN_PLACE|NO_ACCESS); a gpu not listed is at its default,
    which depends on the XNACK mode at creation.  Flags are tracked as bits
    known set and bits known clear; None for a location or granularity means
    unknown."""

    access: tuple = ()
    flags_set: int = kfd.DEFAULT_SVM_FLAGS
    flags_clr: int = ~kfd.DEFAULT_SVM_FLAGS & MASK32
    preferred: int | None = UNDEF
    prefetch: int | None = UNDEF
    granularity: int | None = kfd.DEFAULT_GRANULARITY

    def access_of(self, gpu: int) -> int | None:
        for g, st in self.access:
            if g == gpu:
                return st
        return None


DEFAULT_STATE = PageState()
UNKNOWN_STATE = PageState((), 0, 0, None, None, None)


def apply_attrs(st: PageState, attrs: tuple) -> PageState:
    """The kernel's svm_range_apply_attrs: entries in array order, later win."""
    acc = dict(st.access)
    fs, fc = st.flags_set, st.flags_clr
    pref, pf, gran = st.preferred, st.prefetch, st.granularity
    for t, v in attrs:
        if t == ACCESS or t == IN_PLACE or t == NO_ACCESS:
            acc[v] = t
        elif t == kfd.ATTR_SET_FLAGS:
            fs |= v
            fc &= ~v
        elif t == kfd.ATTR_CLR_FLAGS:
            fc |= v
            fs &= ~v
        elif t == kfd.ATTR_PREFERRED_LOC:
            pref = v
        elif t == kfd.ATTR_PREFETCH_LOC:
            pf = v
        elif t == kfd.ATTR_GRANULARITY:
            # newer kernels clamp to 0x3f, older ones do not: past it we can't tell
            gran = v if v <= 0x3F else None
    return PageState(tuple(sorted(acc.items())), fs & MASK32, fc & MASK32, pref, pf, gran)


class SvmMap:
    """The per-process range list.  ``clean_start`` says the trace saw the
    process from its start: gap-filled ranges then get the kernel defaults;
    otherwise their flags and locations are unknown (a range may predate the
    trace)."""

    def __init__(self, clean_start: bool = True) -> None:
        self.pieces = PieceMap()
        self._fill = DEFAULT_STATE if clean_start else UNKNOWN_STATE
        self._cache: dict = {}

    def __len__(self) -> int:
        return len(self.pieces)

    def _applier(self, attrs: tuple):
        cache = self._cache
        if len(cache) > 4096:   # bounded: states repeat, traces don't
            cache.clear()

        def fn(st):
            key = (st, attrs)
            r = cache.get(key)
            if r is None:
                r = cache[key] = apply_attrs(st, attrs)
            return r
        return fn

    def set_attr(self, s: int, e: int, attrs) -> None:
        attrs = tuple((int(t), int(v)) for t, v in attrs)
        # PREFETCH_LOC always counts as a change (it re-migrates), so it splits
        always = any(t == kfd.ATTR_PREFETCH_LOC for t, _ in attrs)
        fill = self._fill
        self.pieces.update(s, e, self._applier(attrs), lambda: fill, always=always)

    def unmap(self, s: int, e: int) -> None:
        """munmap: the MMU notifier removes the pages, attributes forgotten."""
        self.pieces.delete(s, e)

    def state(self, page: int) -> PageState | None:
        return self.pieces.get(page)

    def overlapping(self, s: int, e: int) -> list[tuple[int, int, PageState]]:
        """Pieces on [s, e), clipped to it."""
        return [(max(ps, s), min(pe, e), st) for ps, pe, st in self.pieces.overlapping(s, e)]

    # --- GET_ATTR ---------------------------------------------------------

    def predict(self, s: int, e: int, attrs, xnack: bool | None = None) -> list:
        """What svm_range_get_attr would answer for each (type, value) query:
        a list of (type, value, known_mask) or None where the model cannot
        know (default access with the XNACK mode unknown, unknown flags).
        Only bits in known_mask of a flags answer are predicted."""
        pieces = [st for _, _, st in self.pieces.overlapping(s, e)]
        out = []
        for t, v in attrs:
            out.append(_predict_one(pieces, t, v, xnack))
        return out

    # --- presentation -----------------------------------------------------

    def describe(self, s: int, e: int, shift: int = 0) -> list[dict]:
        """The pieces on [s, e) for people: byte addresses when ``shift`` is
        the page shift, flag names without their common prefix."""
        rows = []
        for ps, pe, st in self.overlapping(s, e):
            rows.append({
                "range": f"{ps << shift:#x}-{pe << shift:#x}",
                "access": {f"{g:#x}": ACCESS_NAMES.get(a, str(a)) for g, a in st.access}
                or "default",
                "flags": kfd.flag_names(st.flags_set, _FLAG_SHORT),
                "flags_clear": kfd.flag_names(st.flags_clr & 0xFF, _FLAG_SHORT),
                "preferred": None if st.preferred is None else f"{st.preferred:#x}",
                "prefetch": None if st.prefetch is None else f"{st.prefetch:#x}",
                "granularity": st.granularity,
            })
        return rows

    def check(self) -> None:
        """Invariant: pieces are non-empty and never overlap (tests)."""
        last = None
        for s, e, _ in self.pieces.items():
            assert s < e, (s, e)
            assert last is None or last <= s, (last, s)
            last = e


def _predict_one(pieces, t, v, xnack):
    if t == kfd.ATTR_ACCESS:
        gpu = v
        if not pieces:
            if xnack is None:
                return None
            return (ACCESS if xnack else NO_ACCESS, gpu, MASK32)
        acc_all: bool | None = True   # three-valued: None = cannot tell
        aip_all = True
        for st in pieces:
            a = st.access_of(gpu)
            if a is None:
                acc = xnack   # default access bitmap = all GPUs iff XNACK on
                aip = False
            else:
                acc, aip = a == ACCESS, a == IN_PLACE
            if acc is False:
                acc_all = False
            elif acc is None and acc_all is True:
                acc_all = None
            if not aip:
                aip_all = False
        if acc_all is True:
            return (ACCESS, gpu, MASK32)
        if acc_all is None:
            return None
        return (IN_PLACE if aip_all else NO_ACCESS, gpu, MASK32)
    if not pieces:
        return _predict_one([DEFAULT_STATE], t, v, xnack)
    if t in (kfd.ATTR_PREFERRED_LOC, kfd.ATTR_PREFETCH_LOC):
        vals = {st.preferred if t == kfd.ATTR_PREFERRED_LOC else st.prefetch for st in pieces}
        if None in vals:
            return None
        return (t, vals.pop() if len(vals) == 1 else UNDEF, MASK32)
    if t == kfd.ATTR_GRANULARITY:
        vals = [st.granularity for st in pieces]
        if None in vals:
            return None
        return (t, min(vals), MASK32)
    if t == kfd.ATTR_SET_FLAGS:
        # AND of flags: a bit is known 1 if set everywhere, known 0 if clear somewhere
        all_set = MASK32
        any_clr = 0
        for st in pieces:
            all_set &= st.flags_set
            any_clr |= st.flags_clr
        return (t, all_set, (all_set | any_clr) & MASK32)
    if t == kfd.ATTR_CLR_FLAGS:
        # NOT(OR of flags): bit 1 if clear everywhere, 0 if set somewhere
        all_clr = MASK32
        any_set = 0
        for st in pieces:
            all_clr &= st.flags_clr
            any_set |= st.flags_set
        return (t, all_clr, (all_clr | any_set) & MASK32)
    return None


class CoverIndex:
    """Which items (claims) lie on which pages: items may overlap; pieces hold
    frozensets and are merged back when items leave, so the structure follows
    the live items, not their history."""

    def __init__(self) -> None:
        self.pieces = PieceMap()

    def __len__(self) -> int:
        return len(self.pieces)

    def add(self, s: int, e: int, item) -> None:
        one = frozenset((item,))
        self.pieces.update(s, e, lambda v: v | one, frozenset)
        self.pieces.coalesce(s, e, lambda v: not v)

    def remove(self, s: int, e: int, item) -> None:
        one = frozenset((item,))
        self.pieces.update(s, e, lambda v: v - one, None)
        self.pieces.coalesce(s, e, lambda v: not v)

    def query(self, s: int, e: int) -> set:
        out: set = set()
        for _, _, v in self.pieces.overlapping(s, e):
            out |= v
        return out
