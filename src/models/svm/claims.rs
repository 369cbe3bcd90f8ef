//! The claim lifecycle: made, indexed, ended, revived, retired with its
//! process, and judged once for svm-stale-no-access.

use super::*;

impl Shared {
    pub(super) fn new_claim(
        &mut self,
        p: &mut Proc,
        kind: ClaimKind,
        s: u64,
        e: u64,
        born: Option<Ev>,
    ) -> CRef {
        self.ids += 1;
        self.counts.claims += 1;
        let c = CRef::new(self.ids, Claim::new(kind, s, e, born));
        p.cover.add(s, e, c.clone());
        match kind {
            ClaimKind::Registration => {
                p.reg.insert((s, e), c.clone());
            }
            ClaimKind::Application => {
                p.app.insert((s, e), c.clone());
            }
            ClaimKind::Explicit => {}
        }
        c
    }

    pub(super) fn unindex(&mut self, p: &mut Proc, c: &CRef) {
        // (the index orders claims by id: it never borrows the claim)
        let key = {
            let b = c.b();
            for &(s, e) in &b.pages {
                p.cover.remove(s, e, c);
            }
            (b.start, b.end)
        };
        if p.reg.get(&key) == Some(c) {
            p.reg.remove(&key);
        }
        if p.app.get(&key) == Some(c) {
            p.app.remove(&key);
        }
    }

    pub(super) fn end(&mut self, p: &mut Proc, c: &CRef, ev: &Ev, pre: Pre) {
        if !c.b().live {
            return;
        }
        self.judge_stale(p, c, pre);
        {
            let mut b = c.m();
            b.live = false;
            b.ended_by = Some(ev.clone());
            b.release_began = ev.h.time;
            b.release_after = ev.h.time;
            b.release_range = None;
        }
        self.unindex(p, c);
    }

    pub(super) fn revive(&mut self, p: &mut Proc, c: &CRef) {
        let (pages, kind, key) = {
            let mut b = c.m();
            if b.live || b.unlocked {
                return; // (an unlocked claim stays ended whoever revoked it)
            }
            b.live = true;
            b.ended_by = None;
            b.release_began = None;
            b.release_after = None;
            b.release_range = None;
            b.maybe_release.clear();
            (b.pages.clone(), b.kind, (b.start, b.end))
        };
        for (s, e) in pages {
            p.cover.add(s, e, c.clone());
        }
        if kind == ClaimKind::Registration {
            p.reg.entry(key).or_insert_with(|| c.clone());
        }
        if let Some(i) = self.stale.remove(&c.id()) {
            self.raws[i].dead = true;
        }
    }

    pub(super) fn drop_proc(&mut self, mut p: Proc, ev: &Ev) {
        for c in p.live() {
            self.judge_stale(&p, &c, Pre::Now);
            let mut b = c.m();
            b.live = false;
            b.ended_by = Some(ev.clone());
        }
        p.retry.clear();
    }

    /// svm-stale-no-access, once per claim, when it ends (or the trace does).
    pub(super) fn judge_stale(&mut self, p: &Proc, c: &CRef, pre: Pre) {
        {
            let b = c.b();
            if !b.gpus.is_empty()
                || b.stale_gpus.is_empty()
                || self.stale.contains_key(&c.id())
                || !default_reliant(b.kind, p.xnack)
            {
                return;
            }
        }
        let res = match pre {
            Pre::Now => still_stale(p, &c.b()),
            Pre::Was(r) => r,
        };
        if let Some(res) = res {
            self.stale.insert(c.id(), self.raws.len());
            self.raws.push(Raw {
                kind: RawKind::Stale {
                    claim: c.clone(),
                    res,
                    shift: p.shift,
                },
                dead: false,
            });
        }
    }
}

pub(super) fn still_stale(p: &Proc, c: &Claim) -> Option<StaleRes> {
    let mut gpus: Gpus = Vec::new();
    let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
    for &(cs, ce) in &c.pages {
        for (ps, pe, st) in p.map.overlapping(cs, ce) {
            let hit: Gpus = c
                .stale_gpus
                .iter()
                .copied()
                .filter(|&g| st.access_of(g) == Some(NO_ACCESS))
                .collect();
            if !hit.is_empty() {
                gpus = g_union(&gpus, &hit);
                lo = Some(lo.map_or(ps, |x| x.min(ps)));
                hi = Some(hi.map_or(pe, |x| x.max(pe)));
            }
        }
    }
    if gpus.is_empty() {
        None
    } else {
        Some((gpus, lo.unwrap_or(0), hi.unwrap_or(0)))
    }
}
