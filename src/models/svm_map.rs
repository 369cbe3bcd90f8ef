//! The SVM range map of one process, page-granular, as KFD keeps it.
//!
//! The kernel holds a list of non-overlapping `svm_range` objects that
//! SET_ATTR splits on its boundaries, fills gaps of with new default ranges,
//! and never merges (drivers/gpu/drm/amd/amdkfd/kfd_svm.c).  [`PieceMap`]
//! is that list, sorted by start in chunks, so a lookup is two binary
//! searches and an update touches only the pieces it overlaps.  [`SvmMap`] puts the kernel's
//! attribute semantics on top; [`CoverIndex`] reuses the structure to find
//! which claims (which may overlap each other) lie on a page range.
//!
//! All ranges are in pages, `[start, end)` with `end` exclusive.  Changes
//! take non-empty ranges; a change or query on an empty range (`end <=
//! start`) does nothing and finds nothing (the model never asks one).
//!
//! No range-map crate fits: `rangemap` and its kind merge touching equal
//! values, and the kernel's list must keep every split.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

use crate::kfd;

pub const ACCESS: u32 = kfd::ATTR_ACCESS;
pub const IN_PLACE: u32 = kfd::ATTR_ACCESS_IN_PLACE;
pub const NO_ACCESS: u32 = kfd::ATTR_NO_ACCESS;
const UNDEF: u32 = kfd::SVM_LOCATION_UNDEFINED;

/// Non-overlapping `[start, end) -> value` pieces, never merged unless the
/// caller asks ([`PieceMap::coalesce`]).
///
/// The pieces lie in address order in chunks of at most [`CHUNK`] (a
/// sorted vector cut in blocks), the start of each chunk's first piece
/// beside them: a change finds the pieces it touches by two binary
/// searches and replaces them where they lie, one splice of one chunk,
/// rather than a tree descent to find them and another a piece to remove
/// or insert each.  Chunks are never empty and a small one is merged into
/// its neighbour, so the memory follows the pieces.
#[derive(Debug, Clone)]
pub struct PieceMap<V> {
    chunks: Vec<Vec<(u64, u64, V)>>,
    /// the start of each chunk's first piece
    firsts: Vec<u64>,
    len: usize,
    /// room for the pieces a change walks, and for those it makes (empty
    /// between calls): no allocation a change
    room: Vec<(u64, u64, V)>,
    spare: Vec<(u64, u64, V)>,
}

impl<V> Default for PieceMap<V> {
    fn default() -> Self {
        PieceMap {
            chunks: Vec::new(),
            firsts: Vec::new(),
            len: 0,
            room: Vec::new(),
            spare: Vec::new(),
        }
    }
}

/// Equal maps hold equal pieces, however they are cut in chunks.
impl<V: PartialEq> PartialEq for PieceMap<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self
                .chunks
                .iter()
                .flatten()
                .eq(other.chunks.iter().flatten())
    }
}

/// The most pieces whose room a [`PieceMap`] keeps for the next change.
const ROOM: usize = 64;

/// The most pieces in one chunk of a [`PieceMap`] (small under test, so
/// the property tests cross chunk boundaries all the time); a chunk below
/// a quarter of it is merged into a neighbour.
const CHUNK: usize = if cfg!(test) { 4 } else { 64 };
const CHUNK_MIN: usize = CHUNK / 4;

/// A piece's place: chunk and index in it; canonical when the index is
/// inside the chunk, or `(chunks, 0)` past the last piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pos {
    c: usize,
    i: usize,
}

/// The pieces between two places, in address order either way.
pub struct Run<'a, V> {
    chunks: &'a [Vec<(u64, u64, V)>],
    front: Pos,
    back: Pos,
}

// (a walk copied to be walked again: no `V: Clone` asked)
impl<V> Clone for Run<'_, V> {
    fn clone(&self) -> Self {
        Run {
            chunks: self.chunks,
            front: self.front,
            back: self.back,
        }
    }
}

impl<'a, V> Iterator for Run<'a, V> {
    type Item = (u64, u64, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let chunk = &self.chunks[self.front.c];
        let (s, e, ref v) = chunk[self.front.i];
        self.front.i += 1;
        if self.front.i == chunk.len() {
            self.front = Pos {
                c: self.front.c + 1,
                i: 0,
            };
        }
        Some((s, e, v))
    }
}

impl<V> DoubleEndedIterator for Run<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back = if self.back.i > 0 {
            Pos {
                c: self.back.c,
                i: self.back.i - 1,
            }
        } else {
            let c = self.back.c - 1;
            Pos {
                c,
                i: self.chunks[c].len() - 1,
            }
        };
        let (s, e, ref v) = self.chunks[self.back.c][self.back.i];
        Some((s, e, v))
    }
}

impl<V: Clone + PartialEq> PieceMap<V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every piece as (start, end, value), in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, &V)> {
        self.chunks.iter().flatten().map(|(s, e, v)| (*s, *e, v))
    }

    /// The canonical place `(c, i)`: `(c + 1, 0)` when `i` is past chunk c.
    fn canon(&self, c: usize, i: usize) -> Pos {
        if c < self.chunks.len() && i == self.chunks[c].len() {
            Pos { c: c + 1, i: 0 }
        } else {
            Pos { c, i }
        }
    }

    /// The place of the first piece ending after `s` (the one around `s`,
    /// or the first after it).
    fn first_ending_after(&self, s: u64) -> Pos {
        let c = self.firsts.partition_point(|&f| f <= s).saturating_sub(1);
        match self.chunks.get(c) {
            Some(chunk) => self.canon(c, chunk.partition_point(|p| p.1 <= s)),
            None => Pos { c: 0, i: 0 },
        }
    }

    /// The places of the pieces overlapping [s, e): from the first to past
    /// the last (equal when none does; then where a piece on [s, e) goes).
    /// One binary search finds the first; the others follow it (a walk
    /// reads them anyway).
    fn span(&self, s: u64, e: u64) -> (Pos, Pos) {
        let lo = self.first_ending_after(s);
        if e <= s {
            return (lo, lo);
        }
        let mut hi = lo;
        while let Some(chunk) = self.chunks.get(hi.c) {
            let mut i = hi.i;
            while i < chunk.len() && chunk[i].0 < e {
                i += 1;
            }
            if i < chunk.len() {
                hi.i = i;
                break;
            }
            hi = Pos { c: hi.c + 1, i: 0 };
        }
        (lo, hi)
    }

    fn run(&self, lo: Pos, hi: Pos) -> Run<'_, V> {
        Run {
            chunks: &self.chunks,
            front: lo,
            back: hi,
        }
    }

    /// The pieces overlapping [s, e), unclipped, in order.
    pub fn walk(&self, s: u64, e: u64) -> Vec<(u64, u64, &V)> {
        let (lo, hi) = self.span(s, e);
        self.run(lo, hi).collect()
    }

    /// `walk` without collecting: the pieces overlapping [s, e),
    /// unclipped, in order, read in place (a clone walks them again).
    pub fn walk_run(&self, s: u64, e: u64) -> Run<'_, V> {
        let (lo, hi) = self.span(s, e);
        self.run(lo, hi)
    }

    /// The pieces overlapping [s, e), unclipped, from the last back,
    /// without collecting them.
    pub fn walk_back(&self, s: u64, e: u64) -> impl Iterator<Item = (u64, u64, &V)> {
        let (lo, hi) = self.span(s, e);
        self.run(lo, hi).rev()
    }

    /// The pieces between two places, in the map's room (give it back
    /// with [`PieceMap::give_back`]).
    fn take_run(&mut self, lo: Pos, hi: Pos) -> Vec<(u64, u64, V)> {
        let mut out = std::mem::take(&mut self.room);
        let run = Run {
            chunks: &self.chunks,
            front: lo,
            back: hi,
        };
        out.extend(run.map(|(a, b, v)| (a, b, v.clone())));
        out
    }

    fn give_back(&mut self, room: Vec<(u64, u64, V)>) {
        keep_room(&mut self.room, room);
    }

    /// Pieces overlapping [s, e), unclipped, in address order.
    pub fn overlapping(&self, s: u64, e: u64) -> Vec<(u64, u64, V)> {
        let (lo, hi) = self.span(s, e);
        self.run(lo, hi)
            .map(|(ps, pe, v)| (ps, pe, v.clone()))
            .collect()
    }

    /// Whether any piece overlaps [s, e).
    pub fn any_in(&self, s: u64, e: u64) -> bool {
        let lo = self.first_ending_after(s);
        e > s
            && self
                .chunks
                .get(lo.c)
                .and_then(|c| c.get(lo.i))
                .is_some_and(|p| p.0 < e)
    }

    /// The value on `page`.
    pub fn get(&self, page: u64) -> Option<&V> {
        let lo = self.first_ending_after(page);
        let (s, _, v) = self.chunks.get(lo.c)?.get(lo.i)?;
        (*s <= page).then_some(v)
    }

    /// Put `new` (in address order) in place of the pieces from `lo` to
    /// `hi` (consecutive; `new` lies between their neighbours).  Pieces
    /// of one chunk are replaced by one splice of it; pieces across
    /// chunks by those chunks cut again.
    fn replace(&mut self, lo: Pos, hi: Pos, new: &[(u64, u64, V)]) {
        self.len = self.len + new.len() - (self.count(lo, hi));
        if self.chunks.is_empty() {
            if !new.is_empty() {
                self.chunks.push(new.to_vec());
                self.firsts.push(new[0].0);
                self.split(0);
            }
            return;
        }
        // (c, a..b): the pieces replaced, all in chunk c
        let (c, a, b) = if lo.c == self.chunks.len() {
            // nothing replaced, past the last piece: appended to its chunk
            let c = lo.c - 1;
            let n = self.chunks[c].len();
            (c, n, n)
        } else if hi.c == lo.c {
            (lo.c, lo.i, hi.i)
        } else if hi.c == lo.c + 1 && hi.i == 0 {
            // (up to the end of chunk lo.c)
            (lo.c, lo.i, self.chunks[lo.c].len())
        } else {
            // across chunks: those from lo.c to hi's cut again
            let last = if hi.i == 0 { hi.c - 1 } else { hi.c };
            let mut all: Vec<(u64, u64, V)> = Vec::new();
            all.extend(self.chunks[lo.c][..lo.i].iter().cloned());
            all.extend(new.iter().cloned());
            if hi.i > 0 {
                all.extend(self.chunks[hi.c][hi.i..].iter().cloned());
            }
            self.chunks.drain(lo.c + 1..=last);
            self.firsts.drain(lo.c + 1..=last);
            self.chunks[lo.c] = all;
            self.settle(lo.c);
            return;
        };
        let chunk = &mut self.chunks[c];
        if b - a == new.len() {
            // as many pieces as before: overwritten where they lie
            chunk[a..b].clone_from_slice(new);
            if a == 0 {
                self.firsts[c] = chunk[0].0;
            }
            return;
        }
        match (b - a, new) {
            (0, [p]) => chunk.insert(a, p.clone()),
            (1, []) => {
                chunk.remove(a);
            }
            _ => {
                chunk.splice(a..b, new.iter().cloned());
            }
        }
        self.settle(c);
    }

    /// How many pieces lie from `lo` to `hi`.
    fn count(&self, lo: Pos, hi: Pos) -> usize {
        if lo >= hi {
            return 0;
        }
        if lo.c == hi.c {
            return hi.i - lo.i;
        }
        let mid: usize = self.chunks[lo.c + 1..hi.c].iter().map(Vec::len).sum();
        self.chunks[lo.c].len() - lo.i + mid + hi.i
    }

    /// Chunk c after a change: dropped when empty, merged into a
    /// neighbour when small, cut when big; its first start noted.
    fn settle(&mut self, c: usize) {
        let n = self.chunks[c].len();
        if n == 0 {
            self.chunks.remove(c);
            self.firsts.remove(c);
            return;
        }
        self.firsts[c] = self.chunks[c][0].0;
        if n < CHUNK_MIN && self.chunks.len() > 1 {
            // into the smaller neighbour
            let into = if c == 0 {
                1
            } else if c + 1 == self.chunks.len()
                || self.chunks[c - 1].len() <= self.chunks[c + 1].len()
            {
                c - 1
            } else {
                c + 1
            };
            let (a, b) = (c.min(into), c.max(into));
            let tail = self.chunks.remove(b);
            self.firsts.remove(b);
            self.chunks[a].extend(tail);
            self.split(a);
        } else {
            self.split(c);
        }
    }

    /// Cut chunk c in chunks of at most [`CHUNK`] pieces, of about equal
    /// size.
    fn split(&mut self, c: usize) {
        let n = self.chunks[c].len();
        if n <= CHUNK {
            return;
        }
        let parts = n.div_ceil(CHUNK);
        let size = n.div_ceil(parts);
        let mut rest = std::mem::take(&mut self.chunks[c]);
        let mut at = c;
        let mut heads = Vec::with_capacity(parts);
        while rest.len() > size {
            let tail = rest.split_off(size);
            heads.push(rest);
            rest = tail;
        }
        heads.push(rest);
        let mut it = heads.into_iter();
        self.chunks[c] = it.next().expect("one part");
        self.firsts[c] = self.chunks[c][0].0;
        for part in it {
            at += 1;
            self.firsts.insert(at, part[0].0);
            self.chunks.insert(at, part);
        }
    }

    /// Replace each overlapped value v by fn(v) on [s, e) only, splitting
    /// pieces that stick out; a piece fn leaves equal is left whole (the
    /// kernel's svm_range_is_same_attrs) unless `always`.  Gaps get
    /// fn(fill) when `fill` is given.  `look` is shown the pieces that
    /// replaced the overlapped ones, in address order: they cover what was
    /// there (and the gaps, with `fill`) and may stick out of [s, e).  They
    /// are made in the map's room (no allocation a change): `look` answers
    /// what the caller wants of them (`<[_]>::to_vec`: all of them).
    pub fn apply<R>(
        &mut self,
        s: u64,
        e: u64,
        f: impl FnMut(&V) -> V,
        fill: Option<&V>,
        always: bool,
        look: impl FnOnce(&[(u64, u64, V)]) -> R,
    ) -> R {
        if e <= s {
            return look(&[]);
        }
        let (lo, hi) = self.span(s, e);
        if let Some((c, a, b)) = self.inside(lo, hi, s, e, fill.is_some()) {
            // the pieces keep their bounds: their values changed where
            // they lie
            let mut f = f;
            for p in &mut self.chunks[c][a..b] {
                let nv = f(&p.2);
                if always || nv != p.2 {
                    p.2 = nv;
                }
            }
            return look(&self.chunks[c][a..b]);
        }
        let mut new = std::mem::take(&mut self.spare);
        self.remake(lo, hi, &mut new, |old, new| {
            updated(new, old, s, e, f, fill, always);
        });
        let seen = look(&new);
        keep_room(&mut self.spare, new);
        seen
    }

    /// The pieces from `lo` to `hi` as (chunk, from, to) when they are
    /// some, lie in one chunk and inside [s, e) (an update splits none of
    /// them), and, with `gapless`, cover it without a gap (an update
    /// fills none).
    fn inside(
        &self,
        lo: Pos,
        hi: Pos,
        s: u64,
        e: u64,
        gapless: bool,
    ) -> Option<(usize, usize, usize)> {
        if lo >= hi {
            return None;
        }
        let c = lo.c;
        let b = if hi.c == c {
            hi.i
        } else if hi.c == c + 1 && hi.i == 0 {
            self.chunks[c].len()
        } else {
            return None;
        };
        let run = &self.chunks[c][lo.i..b];
        let (first, last) = (run[0].0, run[run.len() - 1].1);
        let within = first >= s && last <= e;
        let whole =
            !gapless || (first == s && last == e && run.windows(2).all(|w| w[0].1 == w[1].0));
        (within && whole).then_some((c, lo.i, b))
    }

    /// Replace the pieces from `lo` to `hi` by what `make` pushes on `new`
    /// (empty) from them.  `make` reads them where they lie when they lie
    /// in one chunk (no copy of them), from a copy in the map's room
    /// otherwise.
    fn remake(
        &mut self,
        lo: Pos,
        hi: Pos,
        new: &mut Vec<(u64, u64, V)>,
        make: impl FnOnce(&[(u64, u64, V)], &mut Vec<(u64, u64, V)>),
    ) {
        if lo >= hi {
            make(&[], new);
        } else if lo.c == hi.c {
            make(&self.chunks[lo.c][lo.i..hi.i], new);
        } else if hi.c == lo.c + 1 && hi.i == 0 {
            make(&self.chunks[lo.c][lo.i..], new);
        } else {
            let old = self.take_run(lo, hi);
            make(&old, new);
            self.give_back(old);
        }
        self.replace(lo, hi, new);
    }

    /// Remove [s, e); heads and tails that stick out survive.  Returns the
    /// removed parts, clipped.
    pub fn delete(&mut self, s: u64, e: u64) -> Vec<(u64, u64, V)> {
        let (lo, hi) = self.span(s, e);
        let old = self.take_run(lo, hi);
        let mut removed = Vec::with_capacity(old.len());
        let mut new = std::mem::take(&mut self.spare);
        for &(ps, pe, ref v) in &old {
            let (lo, hi) = (ps.max(s), pe.min(e));
            removed.push((lo, hi, v.clone()));
            if ps < lo {
                new.push((ps, lo, v.clone()));
            }
            if pe > hi {
                new.push((hi, pe, v.clone()));
            }
        }
        if !old.is_empty() {
            self.replace(lo, hi, &new);
        }
        self.give_back(old);
        keep_room(&mut self.spare, new);
        removed
    }

    /// Merge touching equal neighbours around [s, e) (the pieces overlapping
    /// [s - 1, e + 1)) and drop those whose value `drop` rejects (used by
    /// CoverIndex, never by the SVM map).
    pub fn coalesce(&mut self, s: u64, e: u64, drop: impl Fn(&V) -> bool) {
        let (lo, hi) = self.span(s.saturating_sub(1), e.saturating_add(1));
        let old = self.take_run(lo, hi);
        let mut out = std::mem::take(&mut self.spare);
        out.extend(old.iter().cloned());
        coalesce_in_place(&mut out, drop);
        // nothing merged or dropped: the map stays as it is
        if out.len() != old.len() {
            self.replace(lo, hi, &out);
        }
        self.give_back(old);
        keep_room(&mut self.spare, out);
    }

    /// `apply(s, e, f, fill, false, ..)` then `coalesce(s, e, drop)` in one
    /// walk.  After the update the pieces on
    /// [s - 1, e + 1) are the one ending at s, what the update made, and the
    /// one starting at e: one walk over [s - 1, e + 1) finds all three.
    pub fn update_coalesce(
        &mut self,
        s: u64,
        e: u64,
        f: impl FnMut(&V) -> V,
        fill: Option<&V>,
        drop: impl Fn(&V) -> bool,
    ) {
        if e <= s {
            return;
        }
        let (lo, hi) = self.span(s.saturating_sub(1), e.saturating_add(1));
        let mut out = std::mem::take(&mut self.spare);
        self.remake(lo, hi, &mut out, |around, out| {
            // the pieces overlapping [s, e) lie between those that only touch it
            let i0 = around.iter().take_while(|p| p.1 <= s).count();
            let i1 = i0 + around[i0..].iter().take_while(|p| p.0 < e).count();
            out.extend(around[..i0].iter().cloned());
            updated(out, &around[i0..i1], s, e, f, fill, false);
            out.extend(around[i1..].iter().cloned());
            coalesce_in_place(out, drop);
        });
        keep_room(&mut self.spare, out);
    }

    /// A piece [s, e) of `v()` when no piece lies on [s, e) and no piece
    /// touching it holds an equal value (what `update_coalesce` makes of a
    /// gap with nothing to merge: the pieces around it stay as they are);
    /// whether it did.
    fn put_alone(&mut self, s: u64, e: u64, v: impl FnOnce() -> V) -> bool {
        let (lo, hi) = self.span(s, e);
        if lo != hi {
            return false;
        }
        let v = v();
        // (the piece before `lo` ends at s at the latest, the one at `lo`
        // begins at e at the earliest)
        let joins = |p: Option<&(u64, u64, V)>, touch: bool| p.is_some_and(|p| touch && p.2 == v);
        let before = self.before(lo);
        let at = self.chunks.get(lo.c).and_then(|c| c.get(lo.i));
        if joins(before, before.is_some_and(|p| p.1 == s))
            || joins(at, at.is_some_and(|p| p.0 == e))
        {
            return false;
        }
        self.replace(lo, hi, &[(s, e, v)]);
        true
    }

    /// The piece before place `lo`, if any.
    fn before(&self, lo: Pos) -> Option<&(u64, u64, V)> {
        if lo.i > 0 {
            self.chunks.get(lo.c).and_then(|c| c.get(lo.i - 1))
        } else if lo.c > 0 {
            self.chunks.get(lo.c - 1).and_then(|c| c.last())
        } else {
            None
        }
    }

    /// Remove the one piece on [s, e) when it lies inside [s, e) and `is`
    /// its value (what `update_coalesce` makes of a piece whose value the
    /// update empties: the pieces around it, apart now, stay as they
    /// are); whether it did.
    fn take_alone(&mut self, s: u64, e: u64, is: impl FnOnce(&V) -> bool) -> bool {
        let (lo, hi) = self.span(s, e);
        let Some((ps, pe, v)) = self.run(lo, hi).next() else {
            return false;
        };
        let alone = ps >= s && pe <= e && self.count(lo, hi) == 1 && is(v);
        if alone {
            self.replace(lo, hi, &[]);
        }
        alone
    }

    /// Invariant: chunks are non-empty, at most [`CHUNK`] pieces, their
    /// first starts noted, the count right (tests).
    #[cfg(test)]
    pub fn check_chunks(&self) {
        assert_eq!(self.chunks.len(), self.firsts.len());
        let mut n = 0;
        for (c, f) in self.chunks.iter().zip(&self.firsts) {
            assert!(!c.is_empty() && c.len() <= CHUNK, "chunk of {}", c.len());
            assert_eq!(c[0].0, *f);
            n += c.len();
        }
        assert_eq!(n, self.len);
    }
}

/// What `apply` puts in place of the pieces `old` (those overlapping
/// [s, e), in order), pushed on `new`.
fn updated<V: Clone + PartialEq>(
    new: &mut Vec<(u64, u64, V)>,
    old: &[(u64, u64, V)],
    s: u64,
    e: u64,
    mut f: impl FnMut(&V) -> V,
    fill: Option<&V>,
    always: bool,
) {
    new.reserve(old.len() + 2);
    let mut pos = s;
    for &(ps, pe, ref v) in old {
        if let Some(fv) = fill
            && pos < ps
        {
            new.push((pos, ps, f(fv)));
        }
        let nv = f(v);
        let hi = pe.min(e);
        if !always && nv == *v {
            new.push((ps, pe, v.clone()));
            pos = hi;
            continue;
        }
        if ps < s {
            new.push((ps, s, v.clone()));
            new.push((s, hi, nv));
        } else {
            new.push((ps, hi, nv));
        }
        if pe > hi {
            new.push((hi, pe, v.clone()));
        }
        pos = hi;
    }
    if let Some(fv) = fill
        && pos < e
    {
        new.push((pos, e, f(fv)));
    }
}

/// Touching equal neighbours merged, pieces `drop` rejects left out (a
/// dropped piece breaks the run), in place.
fn coalesce_in_place<V: PartialEq>(v: &mut Vec<(u64, u64, V)>, drop: impl Fn(&V) -> bool) {
    // v[..w]: the pieces kept so far; `run`: the piece before the current
    // one was kept (merged into v[w - 1] or moved there)
    let mut w = 0;
    let mut run = false;
    for r in 0..v.len() {
        if drop(&v[r].2) {
            run = false;
            continue;
        }
        if run && v[w - 1].1 == v[r].0 && v[w - 1].2 == v[r].2 {
            v[w - 1].1 = v[r].1;
        } else {
            v.swap(w, r);
            w += 1;
        }
        run = true;
    }
    v.truncate(w);
}

/// Keep `v`'s room in `slot` for the next change, emptied (not past
/// [`ROOM`] pieces).
fn keep_room<V>(slot: &mut Vec<(u64, u64, V)>, mut v: Vec<(u64, u64, V)>) {
    if v.capacity() <= ROOM {
        v.clear();
        *slot = v;
    }
}

/// One SVM attribute of a SET_ATTR or GET_ATTR (kfd_ioctl_svm_attribute:
/// two u32s).  A decoded value outside u32 is not a kernel attribute: the
/// caller does not hand it to the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attr {
    pub ty: u32,
    pub value: u32,
}

impl Attr {
    pub const fn new(ty: u32, value: u32) -> Self {
        Attr { ty, value }
    }
}

/// What the kernel holds for one range.  `access` is
/// sorted by gpu_id, one entry per gpu with ACCESS, IN_PLACE or NO_ACCESS;
/// a gpu not listed is at its default, which depends on the XNACK mode at
/// creation.  Flags are tracked as bits known set and bits known clear;
/// `None` for a location or granularity means unknown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageState {
    pub access: Vec<(u32, u32)>,
    pub flags_set: u32,
    pub flags_clr: u32,
    pub preferred: Option<u32>,
    pub prefetch: Option<u32>,
    pub granularity: Option<u32>,
}

impl PageState {
    /// The kernel's defaults for a new range.
    pub fn default_state() -> Self {
        PageState {
            access: Vec::new(),
            flags_set: kfd::DEFAULT_SVM_FLAGS,
            flags_clr: !kfd::DEFAULT_SVM_FLAGS,
            preferred: Some(UNDEF),
            prefetch: Some(UNDEF),
            granularity: Some(kfd::DEFAULT_GRANULARITY),
        }
    }

    /// A range that may predate the trace: nothing known.
    pub fn unknown() -> Self {
        PageState {
            access: Vec::new(),
            flags_set: 0,
            flags_clr: 0,
            preferred: None,
            prefetch: None,
            granularity: None,
        }
    }

    /// Whether a gpu has access `a` (ACCESS, IN_PLACE, NO_ACCESS) here.
    pub fn has(&self, a: u32) -> bool {
        self.access.iter().any(|x| x.1 == a)
    }

    pub fn access_of(&self, gpu: u32) -> Option<u32> {
        self.access.iter().find(|a| a.0 == gpu).map(|a| a.1)
    }

    /// The kernel's svm_range_apply_attrs: entries in array order, later
    /// win.  SET_FLAGS makes its bits known set and no
    /// longer known clear, CLR_FLAGS the reverse; NO_ACCESS is recorded as
    /// an entry, not removed; an unknown type changes nothing.
    pub fn apply(&self, attrs: &[Attr]) -> PageState {
        let mut st = self.clone();
        for a in attrs {
            let v = a.value;
            match a.ty {
                ACCESS | IN_PLACE | NO_ACCESS => {
                    match st.access.binary_search_by_key(&v, |x| x.0) {
                        Ok(i) => st.access[i].1 = a.ty,
                        Err(i) => st.access.insert(i, (v, a.ty)),
                    }
                }
                kfd::ATTR_SET_FLAGS => {
                    st.flags_set |= v;
                    st.flags_clr &= !v;
                }
                kfd::ATTR_CLR_FLAGS => {
                    st.flags_clr |= v;
                    st.flags_set &= !v;
                }
                kfd::ATTR_PREFERRED_LOC => st.preferred = Some(v),
                kfd::ATTR_PREFETCH_LOC => st.prefetch = Some(v),
                // newer kernels clamp to 0x3f, older ones do not: past it we can't tell
                kfd::ATTR_GRANULARITY => st.granularity = (v <= 0x3F).then_some(v),
                _ => {}
            }
        }
        st
    }
}

/// A piece's state, shared between the pieces a split leaves.
pub type State = Arc<PageState>;

/// The per-process range list.  `clean_start` says the
/// trace saw the process from its start: gap-filled ranges then get the
/// kernel defaults; otherwise their flags and locations are unknown.
#[derive(Debug, Clone)]
pub struct SvmMap {
    pub pieces: PieceMap<State>,
    fill: State,
    memo: Memo,
}

/// For the last few attribute lists, the last states each turned into
/// which (state before, state after): SET_ATTR is a pure function of the
/// two.  A program registers and revokes in turn, so a memo of the latest
/// list alone was emptied by nearly every call.  The latest list first.
#[derive(Debug, Clone, Default)]
struct Memo {
    lists: Vec<(Vec<Attr>, Vec<Turn>)>,
}

/// A state before an attribute list, and after.
type Turn = (State, State);

/// States remembered per list, and lists remembered.
const MEMO: usize = 4;
const MEMO_LISTS: usize = 4;

impl Memo {
    /// The states remembered for `attrs`, made the latest list.
    fn of(&mut self, attrs: &[Attr]) -> &mut Vec<Turn> {
        match self.lists.iter().position(|(a, _)| a[..] == *attrs) {
            Some(0) => {}
            Some(i) => self.lists[..=i].rotate_right(1),
            None => {
                if self.lists.len() >= MEMO_LISTS {
                    self.lists.pop();
                }
                self.lists.insert(0, (attrs.to_vec(), Vec::new()));
            }
        }
        &mut self.lists[0].1
    }
}

impl SvmMap {
    pub fn new(clean_start: bool) -> Self {
        let fill = if clean_start {
            PageState::default_state()
        } else {
            PageState::unknown()
        };
        SvmMap {
            pieces: PieceMap::new(),
            fill: Arc::new(fill),
            memo: Memo::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Apply a SET_ATTR on [s, e).  PREFETCH_LOC always counts as a change
    /// (it re-migrates), so it splits even where it changes nothing.
    /// Returns whether a piece it left on [s, e) is NO_ACCESS to a gpu.
    pub fn set_attr(&mut self, s: u64, e: u64, attrs: &[Attr]) -> bool {
        let always = attrs.iter().any(|a| a.ty == kfd::ATTR_PREFETCH_LOC);
        let fill = self.fill.clone();
        // pieces a split left share one state, and one program sets the
        // same few states over and over: remember the last answers
        let seen = self.memo.of(attrs);
        // (neighbours a split left hold one state: the last answer first)
        let mut last: Option<Turn> = None;
        self.pieces.apply(
            s,
            e,
            |st| {
                if let Some((was, now)) = &last
                    && Arc::ptr_eq(was, st)
                {
                    return now.clone();
                }
                let now = match seen
                    .iter()
                    .find(|(was, _)| Arc::ptr_eq(was, st) || **was == **st)
                {
                    Some((_, now)) => now.clone(),
                    None => {
                        let nv = st.apply(attrs);
                        let now = if nv == **st { st.clone() } else { Arc::new(nv) };
                        if seen.len() >= MEMO {
                            seen.remove(0);
                        }
                        seen.push((st.clone(), now.clone()));
                        now
                    }
                };
                last = Some((st.clone(), now.clone()));
                now
            },
            Some(&fill),
            always,
            |new| {
                new.iter()
                    .any(|(ps, pe, st)| *ps < e && *pe > s && st.has(NO_ACCESS))
            },
        )
    }

    /// munmap: the MMU notifier removes the pages, attributes forgotten.
    pub fn unmap(&mut self, s: u64, e: u64) {
        self.pieces.delete(s, e);
    }

    pub fn state(&self, page: u64) -> Option<&PageState> {
        self.pieces.get(page).map(|s| &**s)
    }

    /// Pieces on [s, e), clipped to it.
    pub fn overlapping(&self, s: u64, e: u64) -> Vec<(u64, u64, State)> {
        self.pieces
            .overlapping(s, e)
            .into_iter()
            .map(|(ps, pe, st)| (ps.max(s), pe.min(e), st))
            .collect()
    }

    /// What svm_range_get_attr would answer for each query:
    /// (type, value, known_mask), or `None` where the model cannot know
    /// (default access with the XNACK mode unknown, unknown locations).  Only
    /// the bits in known_mask of a flags answer are predicted.
    pub fn predict(
        &self,
        s: u64,
        e: u64,
        attrs: &[Attr],
        xnack: Option<bool>,
    ) -> Vec<Option<(u32, u32, u32)>> {
        let pieces: Vec<State> = self
            .pieces
            .overlapping(s, e)
            .into_iter()
            .map(|p| p.2)
            .collect();
        attrs
            .iter()
            .map(|a| predict_one(&pieces, a.ty, a.value, xnack))
            .collect()
    }

    /// The pieces on [s, e) for people: byte addresses
    /// when `shift` is the page shift, flag names without their common
    /// prefix.
    pub fn describe(&self, s: u64, e: u64, shift: u32) -> Vec<Row> {
        let hex = |v: Option<u32>| v.map(|v| format!("{v:#x}"));
        self.overlapping(s, e)
            .into_iter()
            .map(|(ps, pe, st)| {
                let access = st
                    .access
                    .iter()
                    .map(|&(g, a)| (format!("{g:#x}"), access_name(a)))
                    .collect::<Vec<_>>();
                Row {
                    range: format!("{:#x}-{:#x}", ps << shift, pe << shift),
                    access: (!access.is_empty()).then_some(access),
                    flags: kfd::flag_names(st.flags_set.into(), FLAG_SHORT),
                    flags_clear: kfd::flag_names((st.flags_clr & 0xFF).into(), FLAG_SHORT),
                    preferred: hex(st.preferred),
                    prefetch: hex(st.prefetch),
                    granularity: st.granularity,
                }
            })
            .collect()
    }

    /// Invariant: pieces are non-empty and never overlap (tests).
    pub fn check(&self) {
        let mut last: Option<u64> = None;
        for (s, e, _) in self.pieces.iter() {
            assert!(s < e, "empty piece {s}..{e}");
            assert!(last.is_none_or(|l| l <= s), "overlap at {s}");
            last = Some(e);
        }
    }
}

/// One piece as [`SvmMap::describe`] shows it; `access` `None` is
/// "default" (no gpu set explicitly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub range: String,
    pub access: Option<Vec<(String, String)>>,
    pub flags: String,
    pub flags_clear: String,
    pub preferred: Option<String>,
    pub prefetch: Option<String>,
    pub granularity: Option<u32>,
}

/// The short name of an access attribute (ACCESS, ACCESS_IN_PLACE,
/// NO_ACCESS), with the number for anything else.
pub fn access_name(a: u32) -> String {
    match a {
        ACCESS => "ACCESS".to_owned(),
        IN_PLACE => "ACCESS_IN_PLACE".to_owned(),
        NO_ACCESS => "NO_ACCESS".to_owned(),
        _ => a.to_string(),
    }
}

/// kfd.SVM_FLAG_NAMES without the KFD_IOCTL_SVM_FLAG_ prefix.
pub const FLAG_SHORT: &[(u64, &str)] = &[
    (0x01, "HOST_ACCESS"),
    (0x02, "COHERENT"),
    (0x04, "HIVE_LOCAL"),
    (0x08, "GPU_RO"),
    (0x10, "GPU_EXEC"),
    (0x20, "GPU_READ_MOSTLY"),
    (0x40, "GPU_ALWAYS_MAPPED"),
    (0x80, "EXT_COHERENT"),
];

/// What svm_range_get_attr answers for one attribute query over `pieces`:
/// (type, value, known_mask), or None where the model cannot know.
fn predict_one(pieces: &[State], t: u32, v: u32, xnack: Option<bool>) -> Option<(u32, u32, u32)> {
    const MASK: u32 = u32::MAX;
    if t == ACCESS {
        let gpu = v;
        if pieces.is_empty() {
            let x = xnack?;
            return Some((if x { ACCESS } else { NO_ACCESS }, gpu, MASK));
        }
        // three-valued: None = cannot tell
        let mut acc_all = Some(true);
        let mut aip_all = true;
        for st in pieces {
            let (acc, aip) = match st.access_of(gpu) {
                // default access bitmap = all GPUs iff XNACK on
                None => (xnack, false),
                Some(a) => (Some(a == ACCESS), a == IN_PLACE),
            };
            if acc == Some(false) {
                acc_all = Some(false);
            } else if acc.is_none() && acc_all == Some(true) {
                acc_all = None;
            }
            if !aip {
                aip_all = false;
            }
        }
        return match acc_all {
            Some(true) => Some((ACCESS, gpu, MASK)),
            None => None,
            Some(false) => Some((if aip_all { IN_PLACE } else { NO_ACCESS }, gpu, MASK)),
        };
    }
    if pieces.is_empty() {
        return predict_one(&[Arc::new(PageState::default_state())], t, v, xnack);
    }
    match t {
        kfd::ATTR_PREFERRED_LOC | kfd::ATTR_PREFETCH_LOC => {
            let mut vals = BTreeSet::new();
            for st in pieces {
                vals.insert(if t == kfd::ATTR_PREFERRED_LOC {
                    st.preferred
                } else {
                    st.prefetch
                }?);
            }
            let one = if vals.len() == 1 {
                vals.pop_first()?
            } else {
                UNDEF
            };
            Some((t, one, MASK))
        }
        kfd::ATTR_GRANULARITY => {
            let mut min = u32::MAX;
            for st in pieces {
                min = min.min(st.granularity?);
            }
            Some((t, min, MASK))
        }
        kfd::ATTR_SET_FLAGS => {
            // AND of flags: a bit is known 1 if set everywhere, known 0 if clear somewhere
            let all_set = pieces.iter().fold(MASK, |a, st| a & st.flags_set);
            let any_clr = pieces.iter().fold(0, |a, st| a | st.flags_clr);
            Some((t, all_set, all_set | any_clr))
        }
        kfd::ATTR_CLR_FLAGS => {
            // NOT(OR of flags): bit 1 if clear everywhere, 0 if set somewhere
            let all_clr = pieces.iter().fold(MASK, |a, st| a & st.flags_clr);
            let any_set = pieces.iter().fold(0, |a, st| a | st.flags_set);
            Some((t, all_clr, all_clr | any_set))
        }
        _ => None,
    }
}

/// The pages [s, e) the bytes [addr, addr + size) touch:
/// the start rounded down, the end up.  Computed wide, so an end past 2^64
/// bytes is still the right page.
pub fn pages(addr: u64, size: u64, shift: u32) -> (u64, u64) {
    pages_wide(addr.into(), size.into(), shift)
}

fn pages_wide(addr: u128, size: u128, shift: u32) -> (u64, u64) {
    let ps = 1u128 << shift;
    // below 2^65 bytes: the pages fit u64 for any shift
    (
        (addr >> shift) as u64,
        ((addr + size + ps - 1) >> shift) as u64,
    )
}

/// The page ranges a successful mremap takes from the map, in the order the
/// model unmaps them: shrunk in place, the tail past
/// the page-aligned new length (mm/mremap.c aligns both lengths, so the
/// partial last page of `new_len` stays mapped); moved, whatever was at the
/// target, then the source; grown in place, nothing.  `ret` is the call's
/// result, the new address.  Empty ranges are left out (an unmap of
/// nothing changes nothing).
pub fn mremap_unmaps(
    old_addr: u64,
    old_len: u64,
    new_len: u64,
    ret: u64,
    shift: u32,
) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    if ret == old_addr {
        let first = old_addr >> shift;
        let keep = pages(0, new_len, shift).1;
        let had = pages(0, old_len, shift).1;
        out.push((first + keep, first + had));
    } else {
        out.push(pages(ret, new_len, shift));
        out.push(pages(old_addr, old_len, shift));
    }
    out.retain(|&(s, e)| s < e);
    out
}

/// Which items (claims) lie on which pages: items may
/// overlap; pieces hold sets and are merged back when items leave, so the
/// structure follows the live items, not their history.  A set is shared
/// between the pieces a split leaves (copied only when one of them changes).
#[derive(Debug, Clone)]
pub struct CoverIndex<T: Ord + Clone> {
    pub pieces: PieceMap<Items<T>>,
    /// the empty set a gap starts from, made once (not one allocation an add)
    empty: Items<T>,
}

/// The items on one piece of a [`CoverIndex`]: sorted, each once (a piece
/// holds a few claims: a slice beats a tree at that size; one allocation
/// a set, not a vector's and its box's).
pub type Items<T> = Rc<[T]>;

impl<T: Ord + Clone> Default for CoverIndex<T> {
    fn default() -> Self {
        CoverIndex {
            pieces: PieceMap::new(),
            empty: Rc::new([]),
        }
    }
}

impl<T: Ord + Clone> CoverIndex<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    pub fn add(&mut self, s: u64, e: u64, item: T) {
        // nothing on [s, e) and nothing equal touching it: a piece of its
        // own, nothing to merge
        if e > s && self.pieces.put_alone(s, e, || Rc::from([item.clone()])) {
            return;
        }
        let empty = &self.empty;
        let mut last: Option<(Items<T>, Items<T>)> = None;
        self.pieces.update_coalesce(
            s,
            e,
            |v| {
                let Err(at) = v.binary_search(&item) else {
                    return v.clone();
                };
                if let Some((was, now)) = &last
                    && Rc::ptr_eq(was, v)
                {
                    return now.clone();
                }
                // (an exact-size iterator: the set is allocated once)
                let n: Items<T> = v[..at]
                    .iter()
                    .cloned()
                    .chain(std::iter::once(item.clone()))
                    .chain(v[at..].iter().cloned())
                    .collect();
                last = Some((v.clone(), n.clone()));
                n
            },
            Some(empty),
            |v| v.is_empty(),
        );
    }

    pub fn remove(&mut self, s: u64, e: u64, item: &T) {
        // the item alone on the one piece on [s, e), inside it: the piece
        // goes, nothing to merge
        if self
            .pieces
            .take_alone(s, e, |v| v.len() == 1 && v[0] == *item)
        {
            return;
        }
        let mut last: Option<(Items<T>, Items<T>)> = None;
        self.pieces.update_coalesce(
            s,
            e,
            |v| {
                let Ok(at) = v.binary_search(item) else {
                    return v.clone();
                };
                if let Some((was, now)) = &last
                    && Rc::ptr_eq(was, v)
                {
                    return now.clone();
                }
                let n: Items<T> = v[..at]
                    .iter()
                    .cloned()
                    .chain(v[at + 1..].iter().cloned())
                    .collect();
                last = Some((v.clone(), n.clone()));
                n
            },
            None,
            |v| v.is_empty(),
        );
    }

    /// The pieces overlapping [s, e) and their items, from the last back,
    /// unclipped (no copy of them).
    pub fn pieces_back(&self, s: u64, e: u64) -> impl Iterator<Item = (u64, u64, &Items<T>)> {
        self.pieces.walk_back(s, e)
    }

    /// Whether an item on a page of [s, e) passes `f` (`query(s, e)`
    /// asked without copying it).
    pub fn any(&self, s: u64, e: u64, mut f: impl FnMut(&T) -> bool) -> bool {
        self.pieces
            .walk_back(s, e)
            .any(|(_, _, items)| items.iter().any(&mut f))
    }

    /// The items on any page of [s, e), in order, each once.
    pub fn query(&self, s: u64, e: u64) -> Vec<T> {
        let mut out = Vec::new();
        self.query_into(s, e, &mut out);
        out
    }

    /// `query` into `out` (emptied first), in the room it has.
    pub fn query_into(&self, s: u64, e: u64, out: &mut Vec<T>) {
        // the pieces in any order (several are sorted and deduplicated
        // below), so straight from the walk, not from a vector of it
        out.clear();
        let mut pieces = 0;
        for (_, _, items) in self.pieces.walk_back(s, e) {
            out.extend(items.iter().cloned());
            pieces += 1;
        }
        // one piece (the usual case) is in order already
        if pieces > 1 {
            out.sort_unstable();
            out.dedup();
        }
    }
}

#[cfg(test)]
mod tests;
