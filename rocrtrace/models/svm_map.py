"""The SVM range map of one process, page-granular, as KFD keeps it.

The kernel holds a list of non-overlapping ``svm_range`` objects that
SET_ATTR splits on its boundaries, fills gaps of with new default ranges, and
never merges (ref/kfd-uapi.md section 6).  ``PieceMap`` is that list: the
starts kept sorted in blocks, so a lookup is a bisect (log n) and an update
touches only the pieces it overlaps.  ``SvmMap`` puts the kernel's attribute
semantics on top; ``CoverIndex`` reuses the structure to find which claims
(which may overlap each other) lie on a page range.

All ranges are in pages, ``[start, end)`` with ``end`` exclusive.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Any, Callable, Iterator, NamedTuple

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
    the caller asks (``coalesce``).

    A dict ``start -> (end, value)`` plus the starts in sorted blocks (a
    two-level list, as sortedcontainers keeps them, but walked here directly):
    finding the pieces on a range is two C bisects and a slice, and an update
    replaces the run of starts it touched with one slice assignment, so a
    lookup or an update costs O(log n + block) whatever the trace length.
    """

    __slots__ = ("_d", "_blocks", "_maxes", "_load")

    LOAD = 512    # a block is split past 2 * LOAD starts

    def __init__(self, load: int | None = None) -> None:
        self._d: dict = {}          # start -> (end, value)
        self._blocks: list = []     # sorted starts, in blocks
        self._maxes: list = []      # the last start of each block
        self._load = load or self.LOAD

    def __len__(self) -> int:
        return len(self._d)

    def items(self) -> Iterator[tuple[int, int, Any]]:
        d = self._d
        for blk in self._blocks:
            for s in blk:
                e, v = d[s]
                yield s, e, v

    # --- the walk and the splice ------------------------------------------

    def _walk(self, s: int, e: int) -> tuple[int, int, list]:
        """(b, j, starts): the starts of the pieces overlapping [s, e), in
        order, and where the first of them sits (block b, index j), or where
        a piece starting at s would go when there is none."""
        maxes = self._maxes
        if not maxes:
            return 0, 0, []
        blocks = self._blocks
        b = bisect_right(maxes, s)
        if b == len(maxes):
            # every start is <= s: only the last piece can reach s
            b -= 1
            blk = blocks[b]
            j = len(blk) - 1
            k = blk[j]
            if self._d[k][0] > s and k < e:
                return b, j, [k]
            return b, j + 1, []
        blk = blocks[b]
        j = bisect_right(blk, s)            # blk[j] is the first start > s
        k = e if j == len(blk) else blk[j]  # (j < len(blk) since maxes[b] > s)
        # the piece starting at or before s, if it reaches past s
        if j:
            pk = blk[j - 1]
            if self._d[pk][0] > s and pk < e:
                j -= 1
                k = pk
        elif b:
            pblk = blocks[b - 1]
            pk = pblk[-1]
            if self._d[pk][0] > s and pk < e:
                if k >= e:
                    return b - 1, len(pblk) - 1, [pk]
                keys = [pk]
                keys += self._run(b, 0, e)
                return b - 1, len(pblk) - 1, keys
        if k >= e:
            return b, j, []
        return b, j, self._run(b, j, e)

    def _run(self, b: int, j: int, e: int) -> list:
        """The starts from block b index j on that are < e."""
        blocks = self._blocks
        blk = blocks[b]
        je = bisect_left(blk, e, j)
        if je < len(blk) or b + 1 == len(blocks) or blocks[b + 1][0] >= e:
            return blk[j:je]
        out = blk[j:]
        for blk in blocks[b + 1:]:
            je = bisect_left(blk, e)
            out += blk[:je]
            if je < len(blk):
                break
        return out

    def _splice(self, b: int, j: int, old: list, new: list) -> None:
        """Replace the pieces starting at ``old`` (consecutive starts, the
        first at block b index j) by ``new``, a list of (start, (end, value))
        lying in the same place."""
        d = self._d
        keys = [k for k, _ in new]
        if keys == old:
            d.update(new)   # same starts: values only
            return
        for k in old:
            del d[k]
        d.update(new)
        blocks = self._blocks
        if not blocks:
            if keys:
                self._blocks.append(keys)
                self._maxes.append(keys[-1])
                self._grown(0)
            return
        blk = blocks[b]
        n = len(old)
        if j + n <= len(blk):
            blk[j:j + n] = keys
            if blk:
                self._maxes[b] = blk[-1]
                if len(blk) > 2 * self._load:
                    self._grown(b)
            else:
                del blocks[b]
                del self._maxes[b]
            return
        # the run crosses a block boundary (rare): key by key
        for k in old:
            self._del_key(k)
        for k in keys:
            self._ins_key(k)

    def _grown(self, b: int) -> None:
        blk = self._blocks[b]
        if len(blk) <= 2 * self._load:
            return
        half = len(blk) >> 1
        tail = blk[half:]
        del blk[half:]
        self._blocks.insert(b + 1, tail)
        self._maxes[b] = blk[-1]
        self._maxes.insert(b + 1, tail[-1])

    def _del_key(self, k: int) -> None:
        b = bisect_left(self._maxes, k)
        blk = self._blocks[b]
        del blk[bisect_left(blk, k)]
        if blk:
            self._maxes[b] = blk[-1]
        else:
            del self._blocks[b]
            del self._maxes[b]

    def _ins_key(self, k: int) -> None:
        maxes = self._maxes
        if not maxes:
            self._blocks.append([k])
            maxes.append(k)
            return
        b = bisect_left(maxes, k)
        if b == len(maxes):
            b -= 1
        blk = self._blocks[b]
        insort(blk, k)
        maxes[b] = blk[-1]
        self._grown(b)

    # --- queries ------------------------------------------------------------

    def overlapping(self, s: int, e: int) -> list[tuple[int, int, Any]]:
        """Pieces overlapping [s, e), unclipped, in address order."""
        d = self._d
        out = []
        for k in self._walk(s, e)[2]:
            pe, v = d[k]
            out.append((k, pe, v))
        return out

    def get(self, page: int):
        keys = self._walk(page, page + 1)[2]
        return self._d[keys[0]][1] if keys else None

    # --- updates ------------------------------------------------------------

    def update(self, s: int, e: int, fn: Callable[[Any], Any],
               fill: Callable[[], Any] | None, always: bool = False) -> None:
        """Replace each overlapped value v by fn(v) on [s, e) only, splitting
        pieces that stick out; a piece fn leaves equal is left whole (the
        kernel's svm_range_is_same_attrs) unless ``always``.  Gaps get
        fn(fill()) when ``fill`` is given."""
        b, j, keys = self._walk(s, e)
        self._splice(b, j, keys, _updated(self._d, keys, s, e, fn, fill, always))

    # Changes take s <= e (the model makes only non-empty ones); queries
    # answer any range as the SortedDict version did.

    def delete(self, s: int, e: int) -> list[tuple[int, int, Any]]:
        """Remove [s, e); heads and tails that stick out survive.  Returns the
        removed parts, clipped."""
        b, j, keys = self._walk(s, e)
        if not keys:
            return []
        d = self._d
        removed = []
        new = []
        for ps in keys:
            pe, v = d[ps]
            lo = ps if ps > s else s
            hi = pe if pe < e else e
            removed.append((lo, hi, v))
            if ps < lo:
                new.append((ps, (lo, v)))
            if pe > hi:
                new.append((hi, (pe, v)))
        self._splice(b, j, keys, new)
        return removed

    def coalesce(self, s: int, e: int, drop: Callable[[Any], bool]) -> None:
        """Merge touching equal neighbours around [s, e) and drop pieces whose
        value ``drop`` rejects (used by CoverIndex, never by the SVM map)."""
        b, j, keys = self._walk(s - 1, e + 1)
        d = self._d
        self._splice(b, j, keys, _coalesced([(k, d[k]) for k in keys], drop))

    def update_coalesce(self, s: int, e: int, fn: Callable[[Any], Any],
                        fill: Callable[[], Any] | None, drop: Callable[[Any], bool],
                        near: tuple | None = None) -> None:
        """``update(s, e, fn, fill)`` then ``coalesce(s, e, drop)`` in one
        walk: what the update leaves on [s - 1, e + 1] depends only on the
        pieces that were there.  ``near``: ``_walk(s - 1, e + 1)`` taken since
        the last change."""
        if e <= s:
            self.update(s, e, fn, fill)
            self.coalesce(s, e, drop)
            return
        b, j, keys = near if near is not None else self._walk(s - 1, e + 1)
        d = self._d
        lo = 0
        hi = len(keys)
        if keys and d[keys[0]][0] <= s:     # ends at s: untouched by the update
            lo = 1
        if hi > lo and keys[-1] >= e:       # starts at e: untouched
            hi -= 1
        mid = _updated(d, keys[lo:hi], s, e, fn, fill, False)
        if lo:
            mid.insert(0, (keys[0], d[keys[0]]))
        if hi < len(keys):
            mid.append((keys[-1], d[keys[-1]]))
        self._splice(b, j, keys, _coalesced(mid, drop))


def _updated(d: dict, keys: list, s: int, e: int, fn, fill, always: bool) -> list:
    """PieceMap.update's result for the pieces at ``keys`` (those overlapping
    [s, e)), as (start, (end, value)) in address order."""
    new = []
    pos = s
    for ps in keys:
        pe, v = d[ps]
        if fill is not None and pos < ps:
            new.append((pos, (ps, fn(fill()))))
        nv = fn(v)
        hi = pe if pe < e else e
        if not always and nv == v:
            new.append((ps, (pe, v)))
            pos = hi
            continue
        if ps < s:
            new.append((ps, (s, v)))
            new.append((s, (hi, nv)))
        else:
            new.append((ps, (hi, nv)))
        if pe > hi:
            new.append((hi, (pe, v)))
        pos = hi
    if fill is not None and pos < e:
        new.append((pos, (e, fn(fill()))))
    if e <= s and new:
        # zero-width writes land on keys written again: the last one wins
        new = sorted(dict(new).items())
    return new


def _coalesced(pieces: list, drop) -> list:
    """PieceMap.coalesce on a run of (start, (end, value)) pieces."""
    out: list = []
    prev = None
    for ps, (pe, v) in pieces:
        if drop(v):
            prev = None
            continue
        if prev is not None and prev[1] == ps and prev[2] == v:
            out[-1] = (prev[0], (pe, v))
            prev = (prev[0], pe, v)
        else:
            out.append((ps, (pe, v)))
            prev = (ps, pe, v)
    return out


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
        fill = self._fill = DEFAULT_STATE if clean_start else UNKNOWN_STATE
        self._fill_fn = lambda: fill
        self._cache: dict = {}       # (state, attrs) -> state after
        self._appliers: dict = {}    # attrs as given -> (fn, always)

    def __len__(self) -> int:
        return len(self.pieces)

    def _applier(self, attrs: tuple):
        cache = self._cache

        def fn(st):
            key = (st, attrs)
            r = cache.get(key)
            if r is None:
                r = cache[key] = apply_attrs(st, attrs)
            return r
        return fn

    def _prepared(self, attrs) -> tuple:
        """(fn, always) for an attribute array, kept per array: traces repeat
        a handful of shapes."""
        try:
            key = tuple(attrs)
            got = self._appliers.get(key)
        except TypeError:    # unhashable entries (lists): no reuse
            key = got = None
        if got is None:
            norm = tuple((int(t), int(v)) for t, v in attrs)
            # PREFETCH_LOC always counts as a change (it re-migrates), so it splits
            always = any(t == kfd.ATTR_PREFETCH_LOC for t, _ in norm)
            got = (self._applier(norm), always)
            if key is not None:
                if len(self._appliers) > 256:   # bounded: shapes repeat, traces don't
                    self._appliers.clear()
                self._appliers[key] = got
        return got

    def walk(self, s: int, e: int) -> tuple:
        """Where the pieces on [s, e) are: for ``overlapping_at`` and
        ``set_attr``, valid until the map changes."""
        return self.pieces._walk(s, e)

    def set_attr(self, s: int, e: int, attrs, walk: tuple | None = None) -> list:
        """Apply a SET_ATTR on [s, e).  ``walk``: ``self.walk(s, e)`` taken
        since the last change.  Returns the pieces that replaced the ones it
        overlapped, as (start, (end, state)) in address order: they cover
        [s, e) and may stick out of it."""
        if len(self._cache) > 4096:   # bounded: states repeat, traces don't
            self._cache.clear()
        fn, always = self._prepared(attrs)
        pieces = self.pieces
        b, j, keys = walk if walk is not None else pieces._walk(s, e)
        new = _updated(pieces._d, keys, s, e, fn, self._fill_fn, always)
        pieces._splice(b, j, keys, new)
        return new

    def overlapping_at(self, walk: tuple) -> list[tuple[int, int, PageState]]:
        """The pieces of ``walk`` (see ``walk``), unclipped."""
        d = self.pieces._d
        out = []
        for k in walk[2]:
            pe, st = d[k]
            out.append((k, pe, st))
        return out

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

    def add(self, s: int, e: int, item, near: tuple | None = None) -> None:
        """``near``: the walk ``query_near(s, e)`` returned, when the index
        has not changed since."""
        one = frozenset((item,))
        self.pieces.update_coalesce(s, e, lambda v: v | one, frozenset, _empty, near)

    def remove(self, s: int, e: int, item, near: tuple | None = None) -> None:
        one = frozenset((item,))
        self.pieces.update_coalesce(s, e, lambda v: v - one, None, _empty, near)

    def query_near(self, s: int, e: int) -> tuple[set, tuple]:
        """``query(s, e)`` and the walk around [s, e) that ``add`` can reuse."""
        pieces = self.pieces
        d = pieces._d
        near = pieces._walk(s - 1, e + 1)
        out: set = set()
        for k in near[2]:
            pe, v = d[k]
            if pe > s and k < e:
                out |= v
        return out, near

    def query(self, s: int, e: int) -> set:
        pieces = self.pieces
        d = pieces._d
        out: set = set()
        for k in pieces._walk(s, e)[2]:
            out |= d[k][1]
        return out


def _empty(v) -> bool:
    return not v
