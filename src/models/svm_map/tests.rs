//! The SVM interval map against a brute-force per-page oracle (as
//! tests/test_svm_map.py checks the model through `_engine`).  The oracle
//! keeps, per page, the kernel state and
//! the id of the svm_range the page belongs to, and implements the kernel's
//! range rules literally: gaps become new default ranges, a range the
//! attributes change is cut at the SET_ATTR boundaries (head and tail keep
//! their attributes), a range they leave equal is left whole, PREFETCH_LOC
//! always counts as a change, munmap forgets pages and splits what it cuts,
//! nothing ever merges.  PROPTEST_RNG_SEED fixes the examples (.ci/run sets
//! it), PROPTEST_CASES scales them.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const N: u64 = 48;
const SHIFT: u32 = 12;
const PS: u64 = 1 << SHIFT;
const GPUS: [u32; 3] = [0x11, 0x22, 0x33];

/// The oracle's state: access by gpu, flags known set / known clear,
/// preferred, prefetch, granularity.
type OState = (
    BTreeMap<u32, u32>,
    u32,
    u32,
    Option<u32>,
    Option<u32>,
    Option<u32>,
);

fn odefault() -> OState {
    (
        BTreeMap::new(),
        0x3,
        !0x3,
        Some(0xFFFF_FFFF),
        Some(0xFFFF_FFFF),
        Some(9),
    )
}

fn oapply(st: &OState, attrs: &[Attr]) -> OState {
    let (mut acc, mut fs, mut fc, mut pref, mut pf, mut gran) = st.clone();
    for a in attrs {
        let v = a.value;
        match a.ty {
            2..=4 => {
                acc.insert(v, a.ty);
            }
            5 => (fs, fc) = (fs | v, fc & !v),
            6 => (fs, fc) = (fs & !v, fc | v),
            0 => pref = Some(v),
            1 => pf = Some(v),
            7 => gran = if v <= 0x3F { Some(v) } else { None },
            _ => {}
        }
    }
    (acc, fs, fc, pref, pf, gran)
}

fn as_ostate(st: &PageState) -> OState {
    (
        st.access.iter().copied().collect(),
        st.flags_set,
        st.flags_clr,
        st.preferred,
        st.prefetch,
        st.granularity,
    )
}

struct Oracle {
    state: Vec<Option<OState>>,
    rid: Vec<Option<u64>>,
    next: u64,
}

impl Oracle {
    fn new() -> Self {
        Oracle {
            state: vec![None; N as usize],
            rid: vec![None; N as usize],
            next: 0,
        }
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn set_attr(&mut self, s: u64, e: u64, attrs: &[Attr]) {
        let prefetch = attrs.iter().any(|a| a.ty == 1);
        let (s, e) = (s as usize, e as usize);
        let mut p = s;
        while p < e {
            let r = self.rid[p];
            let mut q = p;
            while q < e && self.rid[q] == r {
                q += 1;
            }
            match r {
                None => {
                    let nid = self.id();
                    for i in p..q {
                        self.rid[i] = Some(nid);
                        self.state[i] = Some(oapply(&odefault(), attrs));
                    }
                }
                Some(_) => {
                    let old = self.state[p].clone().unwrap();
                    let new = oapply(&old, attrs);
                    if new != old || prefetch {
                        // the part inside [s, e) becomes its own range
                        let nid = self.id();
                        for i in p..q {
                            self.rid[i] = Some(nid);
                            self.state[i] = Some(new.clone());
                        }
                    }
                }
            }
            p = q;
        }
    }

    fn unmap(&mut self, s: u64, e: u64) {
        let (s, e) = (s.min(N) as usize, e.min(N) as usize);
        if s >= e {
            return;
        }
        for i in s..e {
            self.rid[i] = None;
            self.state[i] = None;
        }
        // a range cut in two by the unmap: the tail is a range of its own
        let n = N as usize;
        if e < n && s > 0 && self.rid[e].is_some() && self.rid[s - 1] == self.rid[e] {
            let (old, nid) = (self.rid[e], self.id());
            let mut i = e;
            while i < n && self.rid[i] == old {
                self.rid[i] = Some(nid);
                i += 1;
            }
        }
    }

    /// Bytes to pages: every page any byte of [a, a + len) lies on.
    fn unmap_bytes(&mut self, a: u64, len: u64) {
        let s = a / PS;
        let e = (a + len).div_ceil(PS);
        self.unmap(s, e);
    }

    /// mremap as the kernel does it: in place it keeps the start and cuts
    /// or grows the tail; moved, the target is replaced and the source gone.
    fn mremap(&mut self, old: u64, old_len: u64, new_len: u64, ret: u64) {
        if ret == old {
            // the kernel page-aligns both lengths (mm/mremap.c)
            let keep = new_len.div_ceil(PS) * PS;
            if keep < old_len {
                self.unmap_bytes(old + keep, old_len - keep);
            }
        } else {
            self.unmap_bytes(ret, new_len);
            self.unmap_bytes(old, old_len);
        }
    }

    fn pieces(&self) -> Vec<(u64, u64, OState)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < N as usize {
            let r = self.rid[i];
            let mut j = i;
            while j < N as usize && self.rid[j] == r {
                j += 1;
            }
            if r.is_some() {
                out.push((i as u64, j as u64, self.state[i].clone().unwrap()));
            }
            i = j;
        }
        out
    }
}

#[derive(Debug, Clone)]
enum Op {
    Set(u64, u64, Vec<Attr>),
    Unmap(u64, u64),
    /// old address, old length, new length, result (bytes)
    Mremap(u64, u64, u64, u64),
}

fn attr() -> impl Strategy<Value = Attr> {
    prop_oneof![
        (2u32..=4, prop::sample::select(GPUS.to_vec())),
        (
            5u32..=6,
            prop::sample::select(vec![0x1u32, 0x2, 0x80, 0x40, 0x82])
        ),
        (
            0u32..=1,
            prop::sample::select(vec![0u32, 0x11, 0xFFFF_FFFF])
        ),
        (Just(7u32), prop_oneof![0u32..=12, 0x3Eu32..=0x41]),
        // a type the kernel would refuse: the map changes nothing for it
        (Just(8u32), Just(1u32)),
    ]
    .prop_map(|(ty, value)| Attr { ty, value })
}

fn span() -> impl Strategy<Value = (u64, u64)> {
    (0..N, 1u64..=16).prop_map(|(s, n)| (s, (s + n).min(N)))
}

/// A length in bytes, sometimes not a whole number of pages.
fn bytes() -> impl Strategy<Value = u64> {
    (0u64..=12, prop_oneof![Just(0u64), 1..PS]).prop_map(|(p, r)| p * PS + r)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (span(), prop::collection::vec(attr(), 1..=4)).prop_map(|((s, e), a)| Op::Set(s, e, a)),
        1 => span().prop_map(|(s, e)| Op::Unmap(s, e)),
        1 => (0..N, bytes(), bytes(), prop_oneof![Just(None), (0..N).prop_map(Some)]).prop_map(
            |(old, ol, nl, to)| {
                let old = old * PS;
                Op::Mremap(old, ol.max(1), nl.max(1), to.map_or(old, |p| p * PS))
            }
        ),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn run(m: &mut SvmMap, o: &mut Oracle, op: &Op) {
    match op {
        Op::Set(s, e, a) => {
            m.set_attr(*s, *e, a);
            o.set_attr(*s, *e, a);
        }
        Op::Unmap(s, e) => {
            let (s, e) = pages(*s * PS, (*e - *s) * PS, SHIFT);
            m.unmap(s, e);
            o.unmap(s, e);
        }
        Op::Mremap(old, ol, nl, ret) => {
            for (s, e) in mremap_unmaps(*old, *ol, *nl, *ret, SHIFT) {
                m.unmap(s, e);
            }
            o.mremap(*old, *ol, *nl, *ret);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// Identical pieces (same split points, never merged) and the same state
    /// on every page, after every operation.
    #[test]
    fn map_matches_page_oracle(ops in prop::collection::vec(op(), 1..30)) {
        let (mut m, mut o) = (SvmMap::new(true), Oracle::new());
        for op in &ops {
            run(&mut m, &mut o, op);
            m.check();
            let got: Vec<_> = m.pieces.iter().map(|(s, e, st)| (s, e, as_ostate(st))).collect();
            prop_assert_eq!(got, o.pieces());
            for page in 0..N {
                prop_assert_eq!(m.state(page).map(as_ostate), o.state[page as usize].clone());
            }
        }
    }

    /// GET_ATTR answers as the kernel computes them over the pages.
    #[test]
    fn get_attr_prediction_matches_oracle(
        ops in prop::collection::vec(op(), 1..20),
        queries in prop::collection::vec((span(), prop::sample::select(GPUS.to_vec())), 1..5),
    ) {
        let (mut m, mut o) = (SvmMap::new(true), Oracle::new());
        for op in &ops {
            run(&mut m, &mut o, op);
        }
        for ((s, e), gpu) in queries {
            let states: Vec<OState> = (s..e).filter_map(|i| o.state[i as usize].clone()).collect();
            let query = [Attr::new(2, gpu), Attr::new(5, 0), Attr::new(6, 0), Attr::new(7, 0), Attr::new(0, 0)];
            for xnack in [false, true] {
                let pred = m.predict(s, e, &query, Some(xnack));
                if states.is_empty() {
                    prop_assert_eq!(pred[0], Some((if xnack { 2 } else { 4 }, gpu, u32::MAX)));
                    prop_assert_eq!(pred[1].map(|p| (p.0, p.1)), Some((5, 0x3)));
                    prop_assert_eq!(pred[3].map(|p| (p.0, p.1)), Some((7, 9)));
                    continue;
                }
                let has = |x: &OState, kind: u32| match x.0.get(&gpu) {
                    Some(&a) => a == kind,
                    None => kind == 2 && xnack,
                };
                let want = if states.iter().all(|x| has(x, 2)) {
                    2
                } else if states.iter().all(|x| has(x, 3)) {
                    3
                } else {
                    4
                };
                prop_assert_eq!(pred[0], Some((want, gpu, u32::MAX)));
                let and = states.iter().fold(u32::MAX, |a, x| a & x.1);
                let or = states.iter().fold(0, |a, x| a | x.1);
                prop_assert_eq!(pred[1], Some((5, and, u32::MAX)));
                prop_assert_eq!(pred[2].map(|p| p.1), Some(!or));
                let grans: Option<Vec<u32>> = states.iter().map(|x| x.5).collect();
                prop_assert_eq!(pred[3].map(|p| p.1), grans.map(|g| g.into_iter().min().unwrap()));
                let prefs: BTreeSet<Option<u32>> = states.iter().map(|x| x.3).collect();
                let want_pref = if prefs.len() == 1 { *prefs.first().unwrap() } else { Some(0xFFFF_FFFF) };
                prop_assert_eq!(pred[4].map(|p| p.1), want_pref);
            }
            // XNACK unknown: never guess an answer that depends on default access
            let pred = m.predict(s, e, &query, None);
            let defaulted = states.iter().any(|x| !x.0.contains_key(&gpu));
            let any_not_access = states.iter().any(|x| matches!(x.0.get(&gpu), Some(3 | 4)));
            if states.is_empty() || (defaulted && !any_not_access) {
                prop_assert_eq!(pred[0], None);
            } else {
                prop_assert!(pred[0].is_some());
            }
        }
    }

    /// update_coalesce in one walk is update then coalesce, on maps of small
    /// values with gaps, pieces touching [s, e) and pieces sticking out.
    #[test]
    fn update_coalesce_is_update_then_coalesce(
        cuts in prop::collection::vec((0u64..N, 1u64..6, 0u8..4), 0..12),
        ops in prop::collection::vec((span(), 0u8..4, any::<bool>()), 1..8),
    ) {
        let mut m: PieceMap<u8> = PieceMap::new();
        for (s, len, v) in cuts {
            m.apply(s, (s + len).min(N), |_| v, Some(&v), true, |_| ());
        }
        for ((s, e), add, gaps) in ops {
            let f = |v: &u8| (v + add) % 4;
            let fill = gaps.then_some(&0u8);
            let mut want = m.clone();
            want.apply(s, e, f, fill, false, |_| ());
            want.coalesce(s, e, |v| *v == 0);
            m.update_coalesce(s, e, f, fill, |v| *v == 0);
            prop_assert_eq!(&m, &want);
        }
    }

    /// The cover index answers what the live items' ranges say, and merges
    /// back as items leave.
    #[test]
    fn cover_index_matches_sets(ops in prop::collection::vec((any::<bool>(), span(), 0u32..=5), 1..30)) {
        let mut idx = CoverIndex::new();
        let mut live: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for (add, (s, e), item) in ops {
            if add && !live.contains_key(&item) {
                idx.add(s, e, item);
                live.insert(item, (s, e));
            } else if !add && let Some((a, b)) = live.remove(&item) {
                idx.remove(a, b, &item);
            }
            for page in 0..N {
                let want: Vec<u32> =
                    live.iter().filter(|(_, (a, b))| *a <= page && page < *b).map(|(k, _)| *k).collect();
                prop_assert_eq!(idx.query(page, page + 1), want);
            }
            // ranges: every item on any of their pages, in order, once
            for qs in 0..N {
                for qe in qs + 1..=N {
                    let want: Vec<u32> =
                        live.iter().filter(|(_, (a, b))| *a < qe && qs < *b).map(|(k, _)| *k).collect();
                    prop_assert_eq!(idx.query(qs, qe), want);
                }
            }
            // no empty pieces, no two touching equal ones
            let pieces: Vec<_> = idx.pieces.iter().collect();
            for w in pieces.windows(2) {
                prop_assert!(!(w[0].1 == w[1].0 && w[0].2 == w[1].2));
            }
            prop_assert!(pieces.iter().all(|p| !p.2.is_empty()));
        }
        prop_assert!(idx.len() <= 2 * live.len() + 1);
    }

    /// The cover index is a set of items per page: an item added on
    /// overlapping ranges is there once, a removal takes it off exactly the
    /// pages it names (a claim's parts, an unmap's cut), whatever else
    /// added it there.
    #[test]
    fn cover_index_is_a_set_per_page(ops in prop::collection::vec((any::<bool>(), span(), 0u32..=4), 1..40)) {
        let mut idx = CoverIndex::new();
        let mut pages: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); N as usize];
        for (add, (s, e), item) in ops {
            for page in &mut pages[s as usize..e as usize] {
                if add {
                    page.insert(item);
                } else {
                    page.remove(&item);
                }
            }
            if add {
                idx.add(s, e, item);
            } else {
                idx.remove(s, e, &item);
            }
            for qs in 0..N {
                for qe in qs + 1..=(qs + 8).min(N) {
                    let want: BTreeSet<u32> =
                        pages[qs as usize..qe as usize].iter().flatten().copied().collect();
                    prop_assert_eq!(idx.query(qs, qe), want.into_iter().collect::<Vec<_>>());
                }
            }
            let pieces: Vec<_> = idx.pieces.iter().collect();
            for w in pieces.windows(2) {
                prop_assert!(!(w[0].1 == w[1].0 && w[0].2 == w[1].2));
            }
            prop_assert!(pieces.iter().all(|p| !p.2.is_empty()));
            // the pieces are the runs of pages holding one non-empty set
            // (so however a change is made, the index is the same)
            let mut runs: Vec<(u64, u64, Vec<u32>)> = Vec::new();
            for (page, set) in pages.iter().enumerate() {
                let (page, set): (u64, Vec<u32>) = (page as u64, set.iter().copied().collect());
                match runs.last_mut() {
                    Some(r) if r.1 == page && r.2 == set => r.1 = page + 1,
                    _ if set.is_empty() => {}
                    _ => runs.push((page, page + 1, set)),
                }
            }
            let got: Vec<(u64, u64, Vec<u32>)> =
                pieces.iter().map(|(s, e, v)| (*s, *e, v.to_vec())).collect();
            prop_assert_eq!(got, runs);
            idx.pieces.check_chunks();
        }
    }
}

fn a(ty: u32, value: u32) -> Attr {
    Attr::new(ty, value)
}

#[test]
fn set_attr_splits_and_never_merges() {
    let mut m = SvmMap::new(true);
    m.set_attr(0, 10, &[a(IN_PLACE, 0x11)]);
    m.set_attr(4, 6, &[a(NO_ACCESS, 0x11)]);
    let bounds: Vec<_> = m.pieces.iter().map(|(s, e, _)| (s, e)).collect();
    assert_eq!(bounds, [(0, 4), (4, 6), (6, 10)]);
    // granting back what the head and tail have: three pieces still
    m.set_attr(4, 6, &[a(IN_PLACE, 0x11)]);
    assert_eq!(m.len(), 3);
    assert!(
        m.pieces
            .iter()
            .all(|(_, _, st)| st.access == [(0x11, IN_PLACE)])
    );
    // a SET_ATTR that changes nothing leaves the piece whole
    m.set_attr(1, 2, &[a(IN_PLACE, 0x11)]);
    assert_eq!(m.len(), 3);
    assert_eq!(
        m.pieces
            .overlapping(1, 2)
            .iter()
            .map(|p| (p.0, p.1))
            .collect::<Vec<_>>(),
        [(0, 4)]
    );
    // ... unless it carries PREFETCH_LOC, which always re-migrates
    m.set_attr(1, 2, &[a(kfd::ATTR_PREFETCH_LOC, 0xFFFF_FFFF)]);
    let bounds: Vec<_> = m.pieces.iter().map(|(s, e, _)| (s, e)).collect();
    assert_eq!(bounds, [(0, 1), (1, 2), (2, 4), (4, 6), (6, 10)]);
}

#[test]
fn gaps_get_defaults_or_nothing_known() {
    let mut m = SvmMap::new(true);
    m.set_attr(2, 4, &[a(NO_ACCESS, 0x22)]);
    let st = m.state(3).unwrap();
    assert_eq!((st.flags_set, st.flags_clr), (0x3, !0x3));
    assert_eq!((st.preferred, st.granularity), (Some(0xFFFF_FFFF), Some(9)));
    assert_eq!(st.access_of(0x22), Some(NO_ACCESS));
    assert_eq!(m.state(1), None);
    assert_eq!(m.state(4), None);

    let mut m = SvmMap::new(false);
    m.set_attr(2, 4, &[a(kfd::ATTR_CLR_FLAGS, 0x2)]);
    let st = m.state(2).unwrap();
    assert_eq!((st.flags_set, st.flags_clr), (0, 0x2));
    assert_eq!(
        (st.preferred, st.prefetch, st.granularity),
        (None, None, None)
    );
}

#[test]
fn flags_known_set_and_cleared_follow_array_order() {
    let st = PageState::default_state().apply(&[
        a(kfd::ATTR_CLR_FLAGS, 0x3),
        a(kfd::ATTR_SET_FLAGS, 0x81),
        a(ACCESS, 0x11),
        a(IN_PLACE, 0x11),
        a(ACCESS, 0x22),
        a(kfd::ATTR_GRANULARITY, 0x40),
    ]);
    assert_eq!(st.flags_set, 0x81);
    assert_eq!(st.flags_clr, !0x81);
    assert_eq!(st.access, [(0x11, IN_PLACE), (0x22, ACCESS)]);
    // past 0x3f the kernel may have clamped: unknown
    assert_eq!(st.granularity, None);
    assert_eq!(
        st.apply(&[a(kfd::ATTR_GRANULARITY, 0x3F)]).granularity,
        Some(0x3F)
    );
    // an unknown flag state stays unknown for the bits nobody touched
    let st = PageState::unknown().apply(&[a(kfd::ATTR_SET_FLAGS, 0x1)]);
    assert_eq!((st.flags_set, st.flags_clr), (0x1, 0));
}

#[test]
fn unmap_forgets_pages_and_keeps_heads_and_tails() {
    let mut m = SvmMap::new(true);
    m.set_attr(0, 10, &[a(ACCESS, 0x11)]);
    m.unmap(3, 5);
    let bounds: Vec<_> = m.pieces.iter().map(|(s, e, _)| (s, e)).collect();
    assert_eq!(bounds, [(0, 3), (5, 10)]);
    // the VA comes back clean
    m.set_attr(3, 5, &[a(kfd::ATTR_PREFERRED_LOC, 0)]);
    assert_eq!(m.state(3).unwrap().access, []);
    assert_eq!(m.state(2).unwrap().access, [(0x11, ACCESS)]);
    assert_eq!(m.len(), 3);
    assert_eq!(
        m.overlapping(2, 6)
            .iter()
            .map(|p| (p.0, p.1))
            .collect::<Vec<_>>(),
        [(2, 3), (3, 5), (5, 6)]
    );
    // empty ranges change nothing, find nothing
    let pieces = |m: &SvmMap| -> Vec<_> {
        m.pieces
            .iter()
            .map(|(s, e, st)| (s, e, st.clone()))
            .collect()
    };
    let before = pieces(&m);
    m.set_attr(4, 4, &[a(NO_ACCESS, 0x11)]);
    assert_eq!(pieces(&m), before);
    assert!(m.overlapping(4, 4).is_empty());
    assert_eq!(m.len(), 3);
}

#[test]
fn pages_round_out_and_mremap_takes_what_the_model_takes() {
    assert_eq!(pages(0x1000, 0x1000, 12), (1, 2));
    assert_eq!(pages(0x1001, 0x1000, 12), (1, 3));
    assert_eq!(pages(0x1000, 1, 12), (1, 2));
    // an end past 2^64 bytes is still the right page
    assert_eq!(
        pages(u64::MAX - 0xFFF, 0x2000, 12),
        (0xF_FFFF_FFFF_FFFF, 0x10_0000_0000_0001)
    );
    // shrunk in place: the tail
    assert_eq!(
        mremap_unmaps(0x10000, 0x4000, 0x1000, 0x10000, 12),
        [(0x11, 0x14)]
    );
    // grown in place: nothing
    assert!(mremap_unmaps(0x10000, 0x1000, 0x4000, 0x10000, 12).is_empty());
    // moved: the target, then the source
    assert_eq!(
        mremap_unmaps(0x10000, 0x2000, 0x3000, 0x40000, 12),
        [(0x40, 0x43), (0x10, 0x12)]
    );
}

#[test]
fn cover_index_merges_back() {
    let mut idx = CoverIndex::new();
    idx.add(0, 10, 1u32);
    idx.add(4, 6, 2);
    assert_eq!(idx.len(), 3);
    assert_eq!(idx.query(5, 6), vec![1, 2]);
    assert_eq!(idx.query(0, 4), vec![1]);
    assert_eq!(idx.query(0, 10), vec![1, 2]);
    idx.remove(4, 6, &2);
    assert_eq!(idx.len(), 1);
    idx.remove(0, 10, &1);
    assert!(idx.is_empty());
    assert!(idx.query(0, 10).is_empty());
}

#[test]
fn many_pieces_stay_apart_and_are_found() {
    // (speed is measured by benchmarks/, not here)
    let mut m = SvmMap::new(true);
    for i in (0..200_000).step_by(2) {
        m.set_attr(i, i + 1, &[a(IN_PLACE, 0x11)]);
    }
    assert_eq!(m.len(), 100_000);
    let found = (0..200_000).filter(|&i| m.state(i).is_some()).count();
    assert_eq!(found, 100_000);
    assert_eq!(m.overlapping(10, 20).len(), 5);
}

#[test]
fn flag_short_names_are_the_header_names_without_prefix() {
    assert_eq!(FLAG_SHORT.len(), kfd::SVM_FLAG_NAMES.len());
    for (&(b, short), &(bit, long)) in FLAG_SHORT.iter().zip(kfd::SVM_FLAG_NAMES) {
        assert_eq!(b, bit);
        assert_eq!(long.strip_prefix("KFD_IOCTL_SVM_FLAG_"), Some(short));
    }
}

#[test]
fn describe_reads_like_the_python() {
    let mut m = SvmMap::new(true);
    m.set_attr(
        1,
        3,
        &[
            a(IN_PLACE, 0x11),
            a(kfd::ATTR_CLR_FLAGS, 0x2),
            a(NO_ACCESS, 0x22),
        ],
    );
    m.set_attr(3, 4, &[a(kfd::ATTR_GRANULARITY, 0x40)]);
    let rows = m.describe(0, 10, 12);
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert_eq!(r.range, "0x1000-0x3000");
    assert_eq!(
        r.access,
        Some(vec![
            ("0x11".to_owned(), "ACCESS_IN_PLACE".to_owned()),
            ("0x22".to_owned(), "NO_ACCESS".to_owned())
        ])
    );
    assert_eq!(r.flags, "HOST_ACCESS");
    assert_eq!(
        r.flags_clear,
        "COHERENT|HIVE_LOCAL|GPU_RO|GPU_EXEC|GPU_READ_MOSTLY|GPU_ALWAYS_MAPPED|EXT_COHERENT"
    );
    assert_eq!(r.preferred.as_deref(), Some("0xffffffff"));
    assert_eq!(r.granularity, Some(9));
    let r = &rows[1];
    assert_eq!(
        (r.range.as_str(), &r.access, r.granularity),
        ("0x3000-0x4000", &None, None)
    );
    // clipped to the range asked about
    assert_eq!(m.describe(2, 3, 12)[0].range, "0x2000-0x3000");
    let m = SvmMap::new(false);
    assert!(m.describe(0, 10, 12).is_empty());
}

#[test]
fn mremap_shrink_to_a_partial_page_keeps_it() {
    // new_len 0x1800 is page-aligned to 0x2000: page 0x11 stays mapped and
    // only 0x12..0x14 go (`mremap_unmaps`, as the kernel does it)
    assert_eq!(
        mremap_unmaps(0x10000, 0x4000, 0x1800, 0x10000, 12),
        [(0x12, 0x14)]
    );
    // lengths that are equal once page-aligned: nothing unmapped
    assert!(mremap_unmaps(0x10000, 0x2000, 0x1800, 0x10000, 12).is_empty());
}

// --- PieceMap against a page array: per page the id of its piece and the
// piece's value, so
// equal neighbours stay apart until coalesce merges them.

const PM: u64 = 64;

#[derive(Default)]
struct PageRef {
    pages: Vec<Option<(u64, u8)>>,
    next: u64,
}

impl PageRef {
    fn new() -> Self {
        PageRef {
            pages: vec![None; (PM + 16) as usize],
            next: 0,
        }
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn paint(&mut self, s: u64, e: u64, v: Option<(u64, u8)>) {
        for p in s..e {
            self.pages[p as usize] = v;
        }
    }

    /// Runs of pages with one id: (start, end, value).
    fn pieces(&self) -> Vec<(u64, u64, u8)> {
        let mut out: Vec<(u64, u64, u8)> = Vec::new();
        let mut last: Option<u64> = None;
        for (p, slot) in self.pages.iter().enumerate() {
            let p = p as u64;
            match slot {
                Some((id, v)) if last == Some(*id) && out.last().is_some_and(|x| x.1 == p) => {
                    out.last_mut().unwrap().1 = p + 1;
                    let _ = v;
                }
                Some((id, v)) => {
                    out.push((p, p + 1, *v));
                    last = Some(*id);
                }
                None => last = None,
            }
        }
        out
    }

    fn overlapping(&self, s: u64, e: u64) -> Vec<(u64, u64, u8)> {
        self.pieces()
            .into_iter()
            .filter(|p| s < e && p.0 < e && p.1 > s)
            .collect()
    }

    fn get(&self, page: u64) -> Option<u8> {
        self.pages.get(page as usize)?.map(|x| x.1)
    }

    fn update(&mut self, s: u64, e: u64, f: impl Fn(u8) -> u8, fill: Option<u8>, always: bool) {
        let mut pos = s;
        for (ps, pe, v) in self.overlapping(s, e) {
            if let Some(fv) = fill
                && pos < ps
            {
                let id = self.id();
                self.paint(pos, ps, Some((id, f(fv))));
            }
            let (nv, hi) = (f(v), pe.min(e));
            if always || nv != v {
                let id = self.id();
                self.paint(ps.max(s), hi, Some((id, nv)));
                self.retag(hi, pe, v);
            }
            pos = hi;
        }
        if let Some(fv) = fill
            && pos < e
        {
            let id = self.id();
            self.paint(pos, e, Some((id, f(fv))));
        }
    }

    fn delete(&mut self, s: u64, e: u64) -> Vec<(u64, u64, u8)> {
        let out = self
            .overlapping(s, e)
            .into_iter()
            .map(|(ps, pe, v)| (ps.max(s), pe.min(e), v))
            .collect();
        if s < e {
            if let Some(&(ps, pe, v)) = self.overlapping(s, e).last()
                && ps < s
                && pe > e
            {
                self.retag(e, pe, v); // the tail of a piece cut in two
            }
            self.paint(s, e, None);
        }
        out
    }

    /// A split's tail is a piece of its own: a fresh id, so that merging
    /// its head with a neighbour later cannot reach it.
    fn retag(&mut self, s: u64, e: u64, v: u8) {
        if s < e {
            let id = self.id();
            self.paint(s, e, Some((id, v)));
        }
    }

    fn coalesce(&mut self, s: u64, e: u64, drop: impl Fn(u8) -> bool) {
        let mut prev: Option<(u64, u64, u8)> = None; // the run so far, its id at .0
        for (ps, pe, v) in self.overlapping(s.saturating_sub(1), e + 1) {
            if drop(v) {
                self.paint(ps, pe, None);
                prev = None;
                continue;
            }
            match prev {
                Some((rs, re, rv)) if re == ps && rv == v => {
                    let id = self.pages[rs as usize].unwrap().0;
                    self.paint(ps, pe, Some((id, v)));
                    prev = Some((rs, pe, v));
                }
                _ => prev = Some((ps, pe, v)),
            }
        }
    }
}

/// A value map for the ops: some values kept equal.
fn pm_fn(x: u8) -> impl Fn(u8) -> u8 {
    move |v| if x < 3 { (v + x) % 3 } else { x - 3 }
}

#[derive(Debug, Clone)]
enum PmOp {
    Update(u64, u64, u8, bool, bool),
    Delete(u64, u64),
    Coalesce(u64, u64),
    UpCo(u64, u64, u8, bool),
    Query(u64, u64),
}

fn pm_span() -> impl Strategy<Value = (u64, u64)> {
    (0..PM, 0u64..12).prop_map(|(s, n)| (s, s + n))
}

fn pm_op() -> impl Strategy<Value = PmOp> {
    prop_oneof![
        (pm_span(), 0u8..5, any::<bool>(), any::<bool>())
            .prop_map(|((s, e), x, f, a)| PmOp::Update(s, e, x, f, a)),
        pm_span().prop_map(|(s, e)| PmOp::Delete(s, e)),
        // merging is asked of non-empty ranges only (CoverIndex's)
        pm_span().prop_map(|(s, e)| PmOp::Coalesce(s, e + 1)),
        (pm_span(), 0u8..5, any::<bool>()).prop_map(|((s, e), x, f)| PmOp::UpCo(s, e + 1, x, f)),
        // reversed and empty ranges in queries find nothing
        (0..PM, 0u64..12, any::<bool>()).prop_map(|(s, n, back)| PmOp::Query(
            s,
            if back { s.saturating_sub(n) } else { s + n }
        )),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn piece_map_matches_page_array(ops in prop::collection::vec(pm_op(), 1..60)) {
        let (mut m, mut r) = (PieceMap::<u8>::new(), PageRef::new());
        for op in &ops {
            match *op {
                PmOp::Update(s, e, x, fill, always) => {
                    let got = m.apply(s, e, |v| pm_fn(x)(*v), fill.then_some(&1), always, <[_]>::to_vec);
                    r.update(s, e, pm_fn(x), fill.then_some(1), always);
                    // what replaced the overlapped pieces is what the map now holds
                    // there (heads and tails may stick out of [s, e))
                    let now: Vec<_> = m.iter().map(|(s, e, v)| (s, e, *v)).collect();
                    prop_assert!(got.iter().all(|p| now.contains(p)), "{:?} {:?}", got, now);
                }
                PmOp::Delete(s, e) => prop_assert_eq!(m.delete(s, e), r.delete(s, e)),
                PmOp::Coalesce(s, e) => {
                    m.coalesce(s, e, |v| *v == 2);
                    r.coalesce(s, e, |v| v == 2);
                }
                PmOp::UpCo(s, e, x, fill) => {
                    m.update_coalesce(s, e, |v| pm_fn(x)(*v), fill.then_some(&0), |v| *v == 2);
                    r.update(s, e, pm_fn(x), fill.then_some(0), false);
                    r.coalesce(s, e, |v| v == 2);
                }
                PmOp::Query(s, e) => {
                    prop_assert_eq!(m.overlapping(s, e), r.overlapping(s, e));
                    prop_assert_eq!(m.get(s).copied(), r.get(s));
                    // from the last back, and whether any, the same pieces
                    let mut back: Vec<_> = m.walk_back(s, e).map(|(a, b, v)| (a, b, *v)).collect();
                    back.reverse();
                    prop_assert_eq!(&back, &r.overlapping(s, e));
                    prop_assert_eq!(m.any_in(s, e), !back.is_empty());
                }
            }
            m.check_chunks();
            let got: Vec<_> = m.iter().map(|(s, e, v)| (s, e, *v)).collect();
            prop_assert_eq!(got, r.pieces());
            prop_assert_eq!(m.len(), r.pieces().len());
        }
    }
}

#[test]
fn piece_map_many_pieces_against_the_page_array() {
    // a long seeded run (test_piece_map_many_blocks): thousands of updates
    // and deletes over a wide range
    let mut seed = 3u64;
    let mut rnd = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut m = PieceMap::<u8>::new();
    let mut r = PageRef {
        pages: vec![None; 2100],
        next: 0,
    };
    for i in 0..3000 {
        let s = rnd(2000);
        let e = s + [1, 1, 2, 5, 30][rnd(5) as usize];
        let k = rnd(10);
        if k < 6 {
            let x = rnd(5) as u8;
            m.apply(s, e, |v| pm_fn(x)(*v), Some(&1), x == 4, |_| ());
            r.update(s, e, pm_fn(x), Some(1), x == 4);
        } else if k < 8 {
            assert_eq!(m.delete(s, e), r.delete(s, e));
        } else {
            m.update_coalesce(s, e, |v| pm_fn(1)(*v), None, |v| *v == 0);
            r.update(s, e, pm_fn(1), None, false);
            r.coalesce(s, e, |v| v == 0);
        }
        m.check_chunks();
        if i % 100 == 0 {
            let got: Vec<_> = m.iter().map(|(s, e, v)| (s, e, *v)).collect();
            assert_eq!(got, r.pieces());
        }
    }
    let got: Vec<_> = m.iter().map(|(s, e, v)| (s, e, *v)).collect();
    assert_eq!(got, r.pieces());
    assert!(m.len() > 100, "{}", m.len());
}
