"""A brute-force per-page model of the kernel's SVM range list, the reference
the core's SVM model is checked against (test_svm_map.py,
test_svm_equivalence.py).

Per page it keeps the kernel state and the id of the svm_range the page
belongs to, and implements kfd-uapi.md section 6 literally: gaps become new
default ranges, a range the attributes change is cut at the SET_ATTR
boundaries (head and tail keep their attributes), a range they leave equal
is left whole, PREFETCH_LOC always counts as a change, munmap forgets pages
and splits what it cuts, nothing ever merges.  ``rows`` renders the ranges
as `rocrtrace show --addr` prints the model's pieces."""

from __future__ import annotations

import itertools

from rocrtrace import kfd

PAGE = 0x1000
# (access by gpu, flags known set, flags known clear, preferred, prefetch, granularity)
DEFAULT = ((), kfd.DEFAULT_SVM_FLAGS, ~kfd.DEFAULT_SVM_FLAGS & 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 9)
ACCESS_NAMES = {kfd.ATTR_ACCESS: "ACCESS", kfd.ATTR_ACCESS_IN_PLACE: "ACCESS_IN_PLACE", kfd.ATTR_NO_ACCESS: "NO_ACCESS"}
# the kernel header's flag names without KFD_IOCTL_SVM_FLAG_, in bit order
FLAG_SHORT = {bit: name.removeprefix("KFD_IOCTL_SVM_FLAG_") for bit, name in sorted(kfd.SVM_FLAG_NAMES.items())}


def oracle_apply(state, attrs):
    access, fs, fc, pref, pf, gran = state
    acc = dict(access)
    for t, v in attrs:
        if t in (kfd.ATTR_ACCESS, kfd.ATTR_ACCESS_IN_PLACE, kfd.ATTR_NO_ACCESS):
            acc[v] = t
        elif t == kfd.ATTR_SET_FLAGS:
            fs, fc = fs | v, fc & ~v
        elif t == kfd.ATTR_CLR_FLAGS:
            fs, fc = fs & ~v, fc | v
        elif t == kfd.ATTR_PREFERRED_LOC:
            pref = v
        elif t == kfd.ATTR_PREFETCH_LOC:
            pf = v
        elif t == kfd.ATTR_GRANULARITY:
            gran = v
    return (tuple(sorted(acc.items())), fs, fc & 0xFFFFFFFF, pref, pf, gran)


class Oracle:
    def __init__(self, n: int):
        self.n = n
        self.state = [None] * n
        self.rid = [None] * n
        self.ids = itertools.count()

    def set_attr(self, s, e, attrs):
        prefetch = any(t == kfd.ATTR_PREFETCH_LOC for t, _ in attrs)
        p = s
        while p < e:
            r = self.rid[p]
            q = p
            while q < e and self.rid[q] == r and (r is not None or self.rid[q] is None):
                q += 1
            if r is None:
                nid = next(self.ids)
                for i in range(p, q):
                    self.rid[i], self.state[i] = nid, oracle_apply(DEFAULT, attrs)
            else:
                new = oracle_apply(self.state[p], attrs)
                if new != self.state[p] or prefetch:
                    nid = next(self.ids)  # the part inside [s, e) becomes its own range
                    for i in range(p, q):
                        self.rid[i], self.state[i] = nid, new
            p = q

    def unmap(self, s, e):
        s, e = max(s, 0), min(e, self.n)
        if s >= e:
            return
        for i in range(s, e):
            self.rid[i] = self.state[i] = None
        # a range cut in two by the unmap: the tail is a range of its own
        if e < self.n and self.rid[e] is not None and s > 0 and self.rid[s - 1] == self.rid[e]:
            old, nid = self.rid[e], next(self.ids)
            i = e
            while i < self.n and self.rid[i] == old:
                self.rid[i] = nid
                i += 1

    def unmap_bytes(self, base, addr, length):
        """Every page any byte of [addr, addr + length) lies on."""
        self.unmap((addr - base) // PAGE, -(-(addr + length - base) // PAGE))

    def mremap(self, base, old, old_len, new_len, ret):
        """In place the kernel keeps the start and cuts the tail past the
        page-aligned new length; moved, the target is replaced and the
        source gone (mm/mremap.c)."""
        if ret == old:
            keep = -(-new_len // PAGE) * PAGE
            if keep < old_len:
                self.unmap_bytes(base, old + keep, old_len - keep)
        else:
            self.unmap_bytes(base, ret, new_len)
            self.unmap_bytes(base, old, old_len)

    def pieces(self):
        out = []
        for k, grp in itertools.groupby(range(self.n), key=lambda i: self.rid[i]):
            g = list(grp)
            if k is not None:
                out.append((g[0], g[-1] + 1, self.state[g[0]]))
        return out

    def rows(self, base):
        """The ranges as `show --addr` states them (the history's "pieces")."""
        out = []
        for s, e, (access, fs, fc, pref, pf, gran) in self.pieces():
            out.append(
                {
                    "range": f"{base + s * PAGE:#x}-{base + e * PAGE:#x}",
                    "access": {f"{g:#x}": ACCESS_NAMES[t] for g, t in access} or "default",
                    "flags": kfd.flag_names(fs, FLAG_SHORT),
                    "flags_clear": kfd.flag_names(fc & 0xFF, FLAG_SHORT),
                    "preferred": f"{pref:#x}",
                    "prefetch": f"{pf:#x}",
                    # newer kernels clamp to 0x3f, older ones do not: past it unknown
                    "granularity": gran if gran <= 0x3F else None,
                }
            )
        return out or "no SVM range"
