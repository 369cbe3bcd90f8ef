//! Intent calls: hsa_amd_memory_lock / unlock and
//! hsa_amd_svm_attributes_set, written at their return after the ioctls
//! they issued, correct the claim bookkeeping of the SET_ATTRs inside
//! their window (whose claim a grant belongs to, which release was whose).
//! The userptr allocations a lock may stand on are kept here too.

use super::*;

impl SvmModel {
    pub(super) fn alloc(&mut self, ev: &Event) {
        let Kind::Ioctl(io) = &ev.kind else { return };
        let flags = io
            .arg
            .as_ref()
            .and_then(|a| a.get("flags"))
            .and_then(Value::as_i128);
        let Some(flags) = flags else { return };
        if !ev.h.ok() || flags & i128::from(kfd::ALLOC_FLAG_USERPTR) == 0 {
            return;
        }
        let evr = rc(&mut self.cur, ev);
        let p = self.proc(ev.h.pid);
        let dq = p.allocs.entry(ev.h.tid).or_default();
        if dq.len() >= 16 {
            dq.pop_front();
        }
        dq.push_back(evr);
    }

    pub(super) fn lock(&mut self, ev: &Event) {
        let watching = self.sh.watch.is_some();
        let evr = rc(&mut self.cur, ev);
        let (sh, p) = self.split(ev.h.pid);
        p.seen.borrow_mut().intents += 1;
        let recs: Vec<RecRef> = p.recent_take(ev.h.tid, |r| {
            let d = r.r.borrow();
            d.eff.kind == EffKind::Registration && d.claim.is_some() && inside(&d.event, ev)
        });
        let userptr = p
            .allocs
            .remove(&ev.h.tid)
            .unwrap_or_default()
            .iter()
            .any(|a| inside(a, ev));
        let (ptr, size) = (arg_int(ev, "host_ptr"), arg_int(ev, "size"));
        let (Some(ptr), Some(size)) = (ptr, size) else {
            return;
        };
        // a failed lock registers nothing the runtime keeps
        if ev.h.ret != Some(0) || size <= 0 || ptr < 0 || ptr > u64::MAX.into() {
            return;
        }
        let (ptr, size) = (ptr as u64, size as u128);
        if recs.is_empty()
            && (userptr
                || p.userptr.contains_key(&ptr)
                || (p.legacy && !p.by_ptr.contains_key(&ptr)))
        {
            // the legacy path: a userptr buffer, a buffer handle
            // and no SVM claim
            p.legacy = p.legacy || userptr;
            let n = p.userptr.entry(ptr).or_insert(0);
            *n += 1;
            let n = *n;
            if watching {
                let (s, e) = p.pages(ptr.into(), size);
                let what = format!(
                    "lock {} size {}: a userptr buffer (refcount {n}), not an SVM claim",
                    hex(ptr),
                    hex(size as i128)
                );
                sh.note(p, &evr, s, e, what);
            }
            return;
        }
        let (s, e) = p.pages(ptr.into(), size);
        let mut target = p.by_ptr.get(&ptr).cloned();
        if target.as_ref().is_some_and(|t| !t.b().live) {
            target = None;
        }
        let joined = target.is_some();
        let target = match target {
            Some(t) => t,
            None => {
                let first = recs
                    .first()
                    .map(|r| r.r.borrow().claim.clone().unwrap().real());
                // (the grants of its window read in place: no list of them)
                let mine = |g: &GrantRef| {
                    recs.iter().any(|r| {
                        r.r.borrow()
                            .grant
                            .as_ref()
                            .is_some_and(|x| Rc::ptr_eq(x, g))
                    })
                };
                let adopt = first.as_ref().is_some_and(|f| {
                    let fc = f.b();
                    fc.kind == ClaimKind::Registration && fc.live && fc.grants.iter().all(mine)
                });
                let t = if adopt {
                    // the provisional claim becomes the lock's: findings
                    // already made about it follow the same object
                    let t = first.unwrap();
                    let key = (t.b().start, t.b().end);
                    if p.reg.get(&key) == Some(&t) {
                        p.reg.remove(&key);
                    }
                    t.m().kind = ClaimKind::Explicit;
                    t
                } else {
                    sh.ids += 1;
                    sh.counts.claims += 1;
                    let born = recs
                        .first()
                        .map_or_else(|| evr.clone(), |r| r.r.borrow().event.clone());
                    let t = CRef::new(sh.ids, Claim::new(ClaimKind::Explicit, s, e, Some(born)));
                    p.cover.add(s, e, t.clone());
                    let stale = sh.noaccess_gpus(p, s, e);
                    t.m().stale_gpus = stale;
                    t
                };
                {
                    let mut tc = t.m();
                    tc.ptr = Some(ptr);
                    tc.byte_end = Some(u128::from(ptr) + size);
                    tc.lock = Some(evr.clone());
                    tc.refcount = 0;
                }
                p.add_lock(ptr, &t);
                t
            }
        };
        target.m().refcount += 1;
        if joined && let Some(t) = ev.h.time {
            let mine: Vec<GrantRef> = recs
                .iter()
                .filter_map(|r| r.r.borrow().grant.clone())
                .collect();
            let mut tb = target.m();
            if tb.joins.len() == JOINS_KEPT {
                tb.joins.remove(0);
            }
            tb.joins.push((t, evr.clone(), mine));
        }
        // a second lock of the same pointer with another size widens the claim
        let be = (u128::from(ptr) + size).max(target.b().byte_end.unwrap_or(0));
        target.m().byte_end = Some(be);
        let (ns, ne) = p.pages(ptr.into(), be - u128::from(ptr));
        let (ts, te) = (target.b().start, target.b().end);
        let (ns, ne) = (ns.min(ts), ne.max(te));
        if (ns, ne) != (ts, te) {
            for (a, b) in [(ns, ts), (te, ne)] {
                if a < b {
                    p.cover.add(a, b, target.clone());
                    target.m().pages.push((a, b));
                }
            }
            let mut tc = target.m();
            tc.start = ns;
            tc.end = ne;
        }
        for r in &recs {
            let (src, grant, rs, re) = {
                let d = r.r.borrow();
                (d.claim.clone().unwrap().real(), d.grant.clone(), d.s, d.e)
            };
            if src == target {
                continue;
            }
            if let Some(g) = &grant {
                let mut sc = src.m();
                if let Some(i) = grant_in(&sc.grants, g) {
                    sc.grants.remove(i);
                    sc.recompute();
                }
            }
            if let Some(g) = grant {
                let mut tc = target.m();
                tc.count_registration(&g); // another lock's registration
                tc.grants.push(g);
            }
            r.r.borrow_mut().claim = Some(target.clone());
            let (ts, te) = (target.b().start, target.b().end);
            if rs < ts || re > te {
                p.cover.add(rs, re, target.clone());
                let mut tc = target.m();
                tc.pages.push((rs, re));
                tc.start = rs.min(ts);
                tc.end = re.max(te);
            }
            let retire = {
                let sc = src.b();
                sc.grants.is_empty() && sc.kind == ClaimKind::Registration
            };
            if retire {
                // retired, not ended: it was this lock's claim all along
                {
                    let mut sc = src.m();
                    sc.live = false;
                    sc.ended_by = Some(evr.clone());
                }
                sh.unindex(p, &src);
                src.m().alias = Some(target.clone());
            }
            if target.b().stale_gpus.is_empty() {
                let st = src.b().stale_gpus.clone();
                target.m().stale_gpus = st;
            }
        }
        target.m().recompute();
        if watching {
            let (ts, te, id, rc) = {
                let t = target.b();
                (t.start, t.end, target.id(), t.refcount)
            };
            let what = format!(
                "lock {} size {}: explicit claim #{id} (refcount {rc}, {} SET_ATTR(s) in its window)",
                hex(ptr),
                hex(size as i128),
                recs.len()
            );
            sh.note(p, &evr, ts, te, what);
        }
    }

    pub(super) fn unlock(&mut self, ev: &Event) {
        let evr = rc(&mut self.cur, ev);
        let (sh, p) = self.split(ev.h.pid);
        p.seen.borrow_mut().intents += 1;
        let recs: Vec<RecRef> = p.recent_take(ev.h.tid, |r| {
            let d = r.r.borrow();
            d.eff.kind == EffKind::Revoke && inside(&d.event, ev)
        });
        p.allocs.remove(&ev.h.tid);
        let ptr = arg_int(ev, "host_ptr").and_then(|x| u64::try_from(x).ok());
        let Some(ptr) = ptr else { return };
        if let Some(&n) = p.userptr.get(&ptr)
            && !p.by_ptr.contains_key(&ptr)
        {
            if ev.h.ret == Some(0) {
                if n > 1 {
                    p.userptr.insert(ptr, n - 1);
                } else {
                    p.userptr.remove(&ptr);
                }
            }
            return; // a userptr buffer: the handle model sees its FREE
        }
        if ev.h.ret != Some(0) {
            return;
        }
        // the newest claim of the pointer locked before this unlock began,
        // whichever claim the pointer has now: a lock that began after this
        // unlock began made a new claim (the runtime had dropped the old
        // one), and the old one, released meanwhile by a revoke as inferred
        // (and maybe revived), is this unlock's
        let Some(c) = p.unlocked_claim(ptr, ev.h.time) else {
            return;
        };
        // locks of the pointer that began after this unlock began, while it
        // was the only holder, joined an entry the runtime had already
        // dropped: they are a new claim, and what this unlock's revokes
        // took from it before they landed is a loss.  The holders when it
        // began: those now, less the locks that began after it, plus the
        // unlocks seen already that began after it (theirs: a late lock may
        // be unlocked before this unlock's line comes)
        let (late, after) = match ev.h.time {
            Some(u) => {
                let cb = c.b();
                let late: Vec<_> = cb.joins.iter().filter(|j| j.0 > u + EPS).cloned().collect();
                let after: Vec<Ev> = cb
                    .unlocks
                    .iter()
                    .filter(|x| x.h.time.is_some_and(|t| t > u + EPS))
                    .cloned()
                    .collect();
                (late, after)
            }
            None => (Vec::new(), Vec::new()),
        };
        let holders = c.b().refcount - late.len() as i64 + after.len() as i64;
        let fresh = (!late.is_empty() && holders == 1 && after.len() <= late.len())
            .then(|| sh.split_late_locks(p, &c, &late, &after, ptr));
        {
            let mut cb = c.m();
            cb.refcount -= 1;
            if cb.refcount > 0 && !cb.joins.is_empty() {
                if cb.unlocks.len() == JOINS_KEPT {
                    cb.unlocks.remove(0);
                }
                cb.unlocks.push(evr.clone());
            }
        }
        for r in &recs {
            sh.rebind(p, r, &c, &evr);
        }
        if let Some(n) = &fresh {
            for r in &recs {
                if let Some(loss) = late_loss(r, n, p.xnack) {
                    sh.victim(p, r, n, loss);
                }
            }
        }
        let mut ended = false;
        if c.b().refcount <= 0 {
            {
                let mut cb = c.m();
                cb.unlocked = true;
                cb.joins.clear();
                cb.unlocks.clear();
            }
            p.forget_lock(ptr, &c);
            // (nothing gives it back now)
            p.held_back.retain(|(k, _)| *k != c);
            if p.by_ptr.get(&ptr) == Some(&c) {
                p.by_ptr.remove(&ptr); // (not a claim split off it above)
            }
            if c.b().live {
                sh.end(p, &c, &evr, Pre::Now);
                ended = true;
            }
        }
        {
            // its release began with the unlock (the window as
            // the line says, wherever the line stands in the file)
            let mut b = c.m();
            if !b.live
                && let Some(t) = evr.h.time
            {
                b.release_began = Some(b.release_began.map_or(t, |x| x.min(t)));
                b.release_after = b.release_began;
            }
        }
        if sh.watch.is_some() {
            let (s, e, rc) = {
                let b = c.b();
                (b.start, b.end, b.refcount)
            };
            let what = format!(
                "unlock {}: claim #{} refcount {rc}{}",
                hex(ptr),
                c.id(),
                if ended { "; last unlock ends it" } else { "" }
            );
            sh.note(p, &evr, s, e, what);
        }
    }

    /// hsa_amd_svm_attributes_set: the SET_ATTRs inside its window are the
    /// program's own.
    pub(super) fn svm_intent(&mut self, ev: &Event) {
        let evr = self.sh.watch.map(|_| rc(&mut self.cur, ev));
        let (sh, p) = self.split(ev.h.pid);
        let recs: Vec<RecRef> = p.recent_take(ev.h.tid, |r| inside(&r.r.borrow().event, ev));
        p.allocs.remove(&ev.h.tid);
        for r in &recs {
            let (kind, has_claim) = {
                let d = r.r.borrow();
                (d.eff.kind, d.claim.is_some())
            };
            if kind == EffKind::Registration && has_claim {
                sh.make_application(p, r);
            } else if kind == EffKind::Revoke {
                // the caller's own NO_ACCESS is no deregistration
                let released = r.r.borrow().released.clone();
                let keep: Vec<CRef> = released
                    .into_iter()
                    .filter(|c| c.real().b().kind == ClaimKind::Application)
                    .collect();
                sh.unrelease(p, r, &keep);
                let (s, e) = {
                    let mut d = r.r.borrow_mut();
                    d.released = keep;
                    (d.s, d.e)
                };
                p.dereg.delete(s, e);
            }
        }
        // what the caller takes from a claim lying wholly inside the range it
        // names is what it asked for; one reached only by rounding outward
        // onto a shared page is a victim
        for r in &recs {
            let (rs, re) = {
                let d = r.r.borrow();
                (d.s, d.e)
            };
            let idx = sh.raw_by_rec.get(&r.id).cloned().unwrap_or_default();
            for i in idx {
                if let RawKind::Victim { claim, .. } = &sh.raws[i].kind {
                    let v = claim.real();
                    let vb = v.b();
                    if rs <= vb.start && vb.end <= re {
                        drop(vb);
                        sh.raws[i].dead = true;
                    }
                }
            }
        }
        if let Some(evr) = evr
            && !recs.is_empty()
        {
            let s = recs[0].r.borrow().s;
            let e = recs[recs.len() - 1].r.borrow().e;
            let what = format!(
                "hsa_amd_svm_attributes_set: {} SET_ATTR(s) are the program's own",
                recs.len()
            );
            sh.note(p, &evr, s, e, what);
        }
    }
}

impl Shared {
    /// Move the grants of `late` (locks that joined `c` after the runtime
    /// had dropped it) to a new explicit claim of the pointer.
    fn split_late_locks(
        &mut self,
        p: &mut Proc,
        c: &CRef,
        late: &[(f64, Ev, Vec<GrantRef>)],
        after: &[Ev],
        ptr: u64,
    ) -> CRef {
        let moved: Vec<GrantRef> = late.iter().flat_map(|j| j.2.iter().cloned()).collect();
        let (s, e, byte_end, shape) = {
            let mut cb = c.m();
            cb.grants
                .retain(|g| !moved.iter().any(|m| Rc::ptr_eq(m, g)));
            cb.recompute();
            // (the unlocks seen that began after the first unlock were the
            // late locks', not its)
            cb.refcount -= (late.len() - after.len()) as i64;
            cb.joins.clear();
            cb.unlocks.clear();
            (cb.start, cb.end, cb.byte_end, cb.born_shape.clone())
        };
        self.ids += 1;
        self.counts.claims += 1;
        let born = moved
            .first()
            .map_or_else(|| late[0].1.clone(), |g| g.event.clone());
        let n = CRef::new(self.ids, Claim::new(ClaimKind::Explicit, s, e, Some(born)));
        {
            let mut nb = n.m();
            nb.ptr = Some(ptr);
            nb.byte_end = byte_end;
            nb.lock = Some(late[0].1.clone());
            nb.refcount = (late.len() - after.len()) as i64;
            nb.born_shape = shape;
            nb.registrations = 1;
            nb.last_registered = moved.first().and_then(|g| g.event.h.time);
            nb.grants = moved;
            nb.recompute();
        }
        p.cover.add(s, e, n.clone());
        match after
            .iter()
            .max_by(|a, b| a.h.time.partial_cmp(&b.h.time).unwrap())
        {
            // unlocked as often as locked: it ended when the last began
            Some(last) if after.len() == late.len() => {
                n.m().unlocked = true;
                self.end(p, &n, last, Pre::Now);
            }
            _ => p.add_lock(ptr, &n),
        }
        n
    }

    /// Undo `rec`'s inferred releases of every claim not in `keep`.
    fn unrelease(&mut self, p: &mut Proc, rec: &RecRef, keep: &[CRef]) {
        let released = rec.r.borrow().released.clone();
        for k in released {
            if keep.contains(&k) {
                continue;
            }
            self.revive(p, &k);
            self.give_back(p, &k, rec);
            let loss = rec
                .r
                .borrow()
                .losses
                .iter()
                .find(|x| x.0 == k)
                .map(|x| x.1.clone());
            if let Some(loss) = loss {
                self.victim(p, rec, &k, loss);
            }
        }
    }

    /// `k`, released by `rec` as inferred, lived on (an intent call showed
    /// `rec` was not its release): what the calls since took from it, held
    /// back until now, were a live claim's losses.
    fn give_back(&mut self, p: &mut Proc, k: &CRef, rec: &RecRef) {
        let Some(i) = p.held_back.iter().position(|(c, _)| c == k) else {
            return;
        };
        let (_, losses) = p.held_back.remove(i).expect("an index of the list");
        if !k.b().live {
            return;
        }
        for (r, loss) in losses {
            if r.id != rec.id {
                self.victim(p, &r, k, loss);
            }
        }
    }

    /// A revoke inside an unlock's window releases that unlock's claim.
    fn rebind(&mut self, p: &mut Proc, rec: &RecRef, c: &CRef, unlock: &Ev) {
        rec.r.borrow_mut().unlock = Some(unlock.clone());
        let only_c = {
            let d = rec.r.borrow();
            d.released.len() == 1 && d.released[0] == *c
        };
        if only_c {
            return;
        }
        let old = rec.r.borrow().released.clone();
        self.unrelease(p, rec, std::slice::from_ref(c));
        if !old.contains(c) {
            let idx = self.raw_by_rec.get(&rec.id).cloned().unwrap_or_default();
            for i in idx {
                if let RawKind::Victim { claim, .. } = &self.raws[i].kind
                    && claim.real() == *c
                {
                    self.raws[i].dead = true;
                }
            }
            if c.b().live {
                let (pre, ev, s, e) = {
                    let d = rec.r.borrow();
                    (d.pre(c), d.event.clone(), d.s, d.e)
                };
                self.end(p, c, &ev, pre);
                let range = release_range(p, c, s, e, std::slice::from_ref(c));
                c.m().release_range = range;
            }
        }
        rec.r.borrow_mut().released = vec![c.clone()];
    }

    /// A registration-shaped SET_ATTR made by the program: its grant
    /// belongs to the application claim on that exact range.
    fn make_application(&mut self, p: &mut Proc, r: &RecRef) {
        let (c, rs, re, grant, rev) = {
            let d = r.r.borrow();
            (
                d.claim.clone().unwrap().real(),
                d.s,
                d.e,
                d.grant.clone(),
                d.event.clone(),
            )
        };
        if c.b().kind == ClaimKind::Application {
            return;
        }
        let mut app = p.app.get(&(rs, re)).cloned();
        let alone = {
            let b = c.b();
            b.kind == ClaimKind::Registration
                && b.start == rs
                && b.end == re
                && b.grants
                    .iter()
                    .all(|g| grant.as_ref().is_some_and(|x| Rc::ptr_eq(g, x)))
        };
        if app.is_none() && alone {
            // made by this call alone: the same claim, now the program's
            let key = (rs, re);
            if p.reg.get(&key) == Some(&c) {
                p.reg.remove(&key);
            }
            {
                let mut b = c.m();
                b.kind = ClaimKind::Application;
                b.stale_gpus = Vec::new();
            }
            p.app.insert(key, c.clone());
            r.r.borrow_mut().claim = Some(c);
            return;
        }
        if app.is_none() {
            app = Some(self.new_claim(p, ClaimKind::Application, rs, re, Some(rev.clone())));
        }
        let app = app.unwrap();
        if let Some(g) = &grant {
            let mut b = c.m();
            if let Some(i) = grant_in(&b.grants, g) {
                b.grants.remove(i);
                b.recompute();
            }
        }
        {
            let mut ab = app.m();
            if let Some(g) = grant {
                ab.grants.push(g);
            }
            ab.recompute();
        }
        r.r.borrow_mut().claim = Some(app.clone());
        let retire = {
            let b = c.b();
            b.grants.is_empty() && b.kind == ClaimKind::Registration && b.live
        };
        if retire {
            {
                let mut b = c.m();
                b.live = false;
                b.ended_by = Some(rev);
            }
            self.unindex(p, &c);
            c.m().alias = Some(app);
        }
    }
}

/// What revoke `r` took from `n` (a claim split off by late locks): the
/// gpus and flags of its grants made before the revoke landed, on the pages
/// they share.
fn late_loss(r: &RecRef, n: &CRef, xnack: Option<bool>) -> Option<Loss> {
    let d = r.r.borrow();
    if d.eff.kind != EffKind::Revoke {
        return None;
    }
    let landed = d.event.h.end()?;
    let nb = n.b();
    let before: Vec<&GrantRef> = nb
        .grants
        .iter()
        .filter(|g| g.event.h.time.is_some_and(|t| t < landed))
        .collect();
    if before.is_empty() {
        return None;
    }
    let mut granted: Gpus = Vec::new();
    let mut flags = 0;
    for g in &before {
        granted = g_union(&granted, &g.gpus);
        flags |= g.flags;
    }
    let gpus = wanted(&granted, nb.kind, xnack, &d.eff.taken);
    let flags = flags & d.eff.cleared;
    let (lo, hi) = (d.s.max(nb.start), d.e.min(nb.end));
    if lo >= hi || (gpus.is_empty() && flags == 0) {
        return None;
    }
    Some(Loss {
        gpus,
        flags,
        lo,
        hi,
        npages: hi - lo,
    })
}
