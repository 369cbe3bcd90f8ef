//! The SET_ATTR path: what a call does to the claims it touches (the
//! registration or application claim it grants, the ones it releases, the
//! live ones it takes access or flags from: its victims).

use super::*;

const RECENT: usize = 256;
/// registration claims released by another's revoke kept for their own
const ENDED_BY_OTHER: usize = 64;
/// Claims held back at most (`Proc::held_back`), and the losses kept for each.
const HELD_BACK: usize = 32;
const HELD_LOSSES: usize = 32;

impl Shared {
    /// The effect of `attrs`, and the list as its records share it.
    fn effect(&mut self, attrs: &[Attr]) -> Shape {
        // (a program registers and revokes in turn: the last two lists
        // asked are compared before the table is hashed)
        if let Some(e) = self.last_effects.iter().find(|e| *e.0 == *attrs) {
            return e.clone();
        }
        let e = self.effect_of(attrs);
        self.last_effects.rotate_right(1);
        self.last_effects[0] = e.clone();
        e
    }

    fn effect_of(&mut self, attrs: &[Attr]) -> Shape {
        if let Some(e) = self.effects.get(attrs) {
            return e.clone();
        }
        if self.effects.len() > 1024 {
            self.effects.clear();
        }
        let e: Shape = (attrs.into(), Rc::new(effect_of(attrs)));
        self.effects.insert(attrs.to_vec(), e.clone());
        e
    }

    pub(super) fn set_attr(&mut self, p: &mut Proc, ev: Ev, s: u64, e: u64, attrs: &[Attr]) {
        let (shared, mut eff) = self.effect(attrs);
        if eff.kind == EffKind::Registration {
            let in_place = attrs.iter().any(|a| a.ty == kfd::ATTR_ACCESS_IN_PLACE);
            let flags = attrs
                .iter()
                .any(|a| a.ty == kfd::ATTR_SET_FLAGS || a.ty == kfd::ATTR_CLR_FLAGS);
            let mut seen = p.seen.borrow_mut();
            match (in_place, flags) {
                (false, true) => seen.reg_flags += 1,
                (true, false) => seen.map_in_place += 1,
                (true, true) if seen.split() => {
                    // the runtime registers and maps in two calls: one doing
                    // both is the program's own range
                    seen.app_combined += 1;
                    eff = Rc::new(Effect {
                        kind: EffKind::Application,
                        ..(*eff).clone()
                    });
                }
                (true, true) => seen.reg_combined += 1,
                (false, false) => {}
            }
        }
        let kind = eff.kind;
        self.rec_ids += 1;
        let attrs: Rc<[Attr]> = shared;
        let mut own = match kind {
            EffKind::Registration => p.reg.get(&(s, e)).cloned(),
            EffKind::Application => p.app.get(&(s, e)).cloned(),
            _ => None,
        };
        // (in the room the last call left: given back at the end)
        let mut touched = std::mem::take(&mut p.touched);
        p.cover.query_into(s, e, &mut touched);
        let mut released: Vec<CRef> = Vec::new();
        let mut ambiguous: Vec<CRef> = Vec::new();
        if kind == EffKind::Revoke {
            if let Some(app) = p.app.get(&(s, e)) {
                // the program's own NO_ACCESS on exactly its range, which
                // ends its own sub-ranges inside it too
                released.push(app.clone());
                for c in &touched {
                    let inner = {
                        let b = c.b();
                        b.kind == ClaimKind::Application && s <= b.start && b.end <= e
                    };
                    if inner && !released.contains(c) {
                        released.push(c.clone());
                    }
                }
            }
            if !touched.is_empty() {
                // a revoke of exactly the range of a registration another
                // revoke released, from another thread than the one that
                // made the claim containing it, is most likely that
                // registration's own, late: it releases the claims inside
                // it, not the one containing it (which it may still have
                // released: see `ambiguous`)
                let awaited = !p.reg.contains_key(&(s, e))
                    && p.ended_by_other.iter().any(|c| {
                        let b = c.b();
                        (b.start, b.end) == (s, e)
                    });
                let mut chosen: Option<(u64, u64)> = None;
                infer_release(s, e, &touched, |c| {
                    let keep = {
                        let b = c.b();
                        let inside = s <= b.start && b.end <= e;
                        if !inside {
                            chosen = Some((b.start, b.end));
                        }
                        inside || !awaited || !made_elsewhere(&b, &ev)
                    };
                    if keep {
                        released.push(c);
                    } else {
                        ambiguous.push(c);
                    }
                });
                // a revoke that is not the exact range of the claim
                // containing it that it released is a range minus what
                // others cover: another registration containing it, made
                // on the revoking thread, may as well be the one it
                // releases (seen in the emulation: a 9-page pin's own
                // release, the smallest claim around it another thread's)
                if let Some(range) = chosen
                    && range != (s, e)
                {
                    for c in &touched {
                        let other = {
                            let b = c.b();
                            b.kind == ClaimKind::Registration
                                && b.start <= s
                                && e <= b.end
                                && (b.start, b.end) != range
                                && !made_elsewhere(&b, &ev)
                        };
                        if other && !released.contains(c) && !ambiguous.contains(c) {
                            ambiguous.push(c.clone());
                        }
                    }
                }
            }
        }
        if kind == EffKind::Revoke
            && released
                .iter()
                .any(|c| c.b().kind != ClaimKind::Application)
        {
            let mut seen = p.seen.borrow_mut();
            if attrs.iter().any(|a| a.ty == kfd::ATTR_CLR_FLAGS) {
                seen.release_clr += 1;
            } else {
                seen.release_plain += 1;
            }
            if released.iter().any(|c| {
                let b = c.b();
                b.kind == ClaimKind::Registration
                    && b.start <= s
                    && e <= b.end
                    && (b.start, b.end) != (s, e)
            }) {
                seen.subtracts += 1;
            }
            // (pages of [s, e) no released registration covers; the
            // program's own NO_ACCESS on its range reaches past what it
            // held itself, not a grown extent)
            let regs = released
                .iter()
                .map(|c| c.b())
                .filter(|b| b.kind == ClaimKind::Registration)
                .map(|b| (b.start, b.end));
            let own = released
                .iter()
                .any(|c| c.b().kind == ClaimKind::Application);
            if !own && regs.clone().next().is_some() && !covers(regs, s, e) {
                seen.grown += 1;
            }
        }
        if kind == EffKind::Registration
            && own.is_none()
            && touched.iter().any(|c| c.b().kind != ClaimKind::Application)
        {
            p.seen.borrow_mut().reused += 1;
        }
        // a SET_ATTR of the program's own shape, or one lying wholly inside
        // an application claim that releases no registration, is the
        // program changing memory it owns: the claims it lies wholly inside
        // are not its victims
        let within = |c: &CRef| {
            let b = c.b();
            b.start <= s && e <= b.end
        };
        let own_change = kind == EffKind::Application
            || (touched
                .iter()
                .any(|c| c.b().kind == ClaimKind::Application && within(c))
                && released
                    .iter()
                    .all(|c| c.b().kind == ClaimKind::Application));
        // the runtime computed this call after the thread's previous one,
        // or, for a later piece of one deregistration's revoke (the next
        // revoke on the thread, after the previous piece, inside one
        // registration with it), with the first piece
        let piece = p.burst.get(&ev.h.tid).copied().filter(|b| {
            kind == EffKind::Revoke
                && s >= b.end
                && touched
                    .iter()
                    .map(|c| {
                        let c = c.b();
                        (c.kind, c.start, c.end)
                    })
                    .chain([(ClaimKind::Registration, b.reach.0, b.reach.1)])
                    .any(|(k, cs, ce)| k == ClaimKind::Registration && cs <= b.start && e <= ce)
        });
        let quiet_from = match piece {
            Some(b) => b.quiet_from,
            None => p.last_end.get(&ev.h.tid).copied(),
        };
        let mut losses: Vec<(CRef, Loss)> = Vec::new();
        let mut stale_pre: Vec<(CRef, Option<StaleRes>)> = Vec::new();
        let (taken, cleared) = (&eff.taken, eff.cleared);
        if !touched.is_empty() && (!taken.is_empty() || cleared != 0) {
            let mut near: Option<Run<'_, State>> = None;
            for c in &touched {
                if own.as_ref() == Some(c) || (own_change && within(c)) {
                    continue;
                }
                let (stale_gpus_nonempty, gpus_empty, ckind) = {
                    let b = c.b();
                    (!b.stale_gpus.is_empty(), b.gpus.is_empty(), b.kind)
                };
                if let Some(loss) = taken_from(p, &c.b(), taken, cleared, s, e, &mut near) {
                    losses.push((c.clone(), loss));
                }
                if stale_gpus_nonempty && gpus_empty && default_reliant(ckind, p.xnack) {
                    stale_pre.push((c.clone(), still_stale(p, &c.b())));
                }
            }
        }
        // what it takes from claims held back (released by inference, an
        // unlock still to come may give them back): losses if it does
        let held_losses = held_back_losses(p, s, e, taken, cleared, &released, &ambiguous);
        let rec: RecRef = Rc::new(RecCell {
            id: self.rec_ids,
            r: RefCell::new(RecData {
                event: ev.clone(),
                attrs: attrs.clone(),
                eff: eff.clone(),
                s,
                e,
                claim: None,
                grant: None,
                // (set below, once this call is done with it)
                released: Vec::new(),
                losses,
                stale_pre,
                unlock: None,
                quiet_from,
                ambiguous,
            }),
        });
        if kind == EffKind::Revoke {
            possible_releases(p, &ev, s, e, quiet_from, &touched, &released);
            record_burst(p, &ev, piece, s, e, quiet_from, &released);
        }
        for (i, loss) in held_losses {
            let list = &mut p.held_back[i].1;
            if list.len() < HELD_LOSSES {
                list.push((rec.clone(), loss));
            }
        }
        let hold = kind == EffKind::Revoke && p.seen.borrow().intents > 0;
        for c in &released {
            if c.b().live {
                if hold && !c.b().unlocked && c.b().kind != ClaimKind::Application {
                    p.held_back.retain(|(k, _)| !k.b().live && !k.b().unlocked);
                    if p.held_back.len() == HELD_BACK {
                        p.held_back.pop_front();
                    }
                    p.held_back.push_back((c.clone(), Vec::new()));
                }
                let pre = rec.r.borrow().pre(c);
                self.end(p, c, &ev, pre);
                let range = release_range(p, c, s, e, &released);
                let mut b = c.m();
                b.release_range = range;
                b.release_after = quiet_from;
                // (a revoke of exactly its range from another thread than
                // the one that made it may be a piece of another's too)
                if b.kind == ClaimKind::Registration
                    && ((b.start, b.end) != (s, e) || made_elsewhere(&b, &ev))
                {
                    if p.ended_by_other.len() == ENDED_BY_OTHER {
                        p.ended_by_other.pop_front();
                    }
                    p.ended_by_other.push_back(c.clone());
                }
            }
        }
        let noaccess_left = p.map.set_attr(s, e, &attrs);
        if !taken.is_empty() {
            if released
                .iter()
                .any(|c| c.b().kind != ClaimKind::Application)
            {
                p.dereg.apply(s, e, |_| true, Some(&true), false, |_| ());
            } else {
                p.dereg.delete(s, e);
            }
        }
        let victims: Vec<(CRef, Loss)> = rec
            .r
            .borrow()
            .losses
            .iter()
            .filter(|(c, _)| !released.contains(c))
            .cloned()
            .collect();
        for (c, loss) in victims {
            self.victim(p, &rec, &c, loss);
        }
        if kind == EffKind::Registration || kind == EffKind::Application {
            let new = own.is_none();
            let ck = if kind == EffKind::Registration {
                ClaimKind::Registration
            } else {
                ClaimKind::Application
            };
            let o = match own.take() {
                Some(o) => o,
                None => self.new_claim(p, ck, s, e, Some(ev.clone())),
            };
            let g = Rc::new(Grant {
                event: ev.clone(),
                gpus: eff.granted.clone(),
                flags: eff.set_,
            });
            {
                let mut ob = o.m();
                if kind == EffKind::Application && !new {
                    // the program's own range: what it takes from itself is not a loss
                    ob.grants = ob
                        .grants
                        .iter()
                        .map(|x| {
                            Rc::new(Grant {
                                event: x.event.clone(),
                                gpus: g_minus(&x.gpus, taken),
                                flags: x.flags & !cleared,
                            })
                        })
                        .collect();
                }
                // (a registration of a range the model still holds: the
                // runtime's refcount, or a late release not landed yet)
                if new {
                    ob.born_shape = Some(g.clone());
                }
                ob.count_registration(&g);
                ob.add_grant(g.clone());
                ob.recompute();
            }
            {
                let mut d = rec.r.borrow_mut();
                d.claim = Some(o.clone());
                d.grant = Some(g);
            }
            // (nothing NO_ACCESS on [s, e) at all: no gpu is)
            if new && kind == EffKind::Registration && noaccess_left {
                let st = self.noaccess_gpus(p, s, e);
                o.m().stale_gpus = st;
            }
            if kind == EffKind::Registration {
                // (the claims on [s, e) now: those it touched, and its own
                // if it made one: nothing else changed the index since)
                may_vanish(p, &ev, &touched, new.then_some(&o));
            }
        }
        if self.watch.is_some() && self.watched(p, s, e) {
            self.note_set_attr(p, &rec, &released);
        }
        rec.r.borrow_mut().released = released;
        let dq = p.recent.entry(ev.h.tid).or_default();
        if dq.len() >= RECENT {
            dq.pop_front();
        }
        dq.push_back(rec);
        touched.clear();
        p.touched = touched;
    }

    fn note_set_attr(&mut self, p: &Proc, rec: &RecRef, released: &[CRef]) {
        let d = rec.r.borrow();
        let mut what = format!(
            "SET_ATTR {} on {}-{} ({})",
            shape_text(&d.attrs),
            page_hex(d.s, p.shift),
            page_hex(d.e, p.shift),
            d.eff.kind.name()
        );
        if !released.is_empty() {
            what += "; releases ";
            what += &released
                .iter()
                .map(|c| format!("#{}", c.id()))
                .collect::<Vec<_>>()
                .join(", ");
        }
        if let Some(c) = &d.claim {
            what += &format!("; claim #{}", c.id());
        }
        for (c, loss) in &d.losses {
            if !released.contains(c) {
                what += &format!("; takes {} from live claim #{}", loss_text(loss), c.id());
            }
        }
        let (ev, s, e) = (d.event.clone(), d.s, d.e);
        drop(d);
        self.note(p, &ev, s, e, what);
    }

    /// The gpus NO_ACCESS now on the pages of [s, e) a deregistration
    /// took last (pieces walked in place, no copy of them).
    pub(super) fn noaccess_gpus(&self, p: &Proc, s: u64, e: u64) -> Gpus {
        let mut out: Gpus = Vec::new();
        for (ds, de, _) in p.dereg.walk_back(s, e) {
            let (a, b) = (ds.max(s), de.min(e));
            for (_, _, st) in p.map.pieces.walk_back(a, b) {
                for &(g, x) in &st.access {
                    if x == NO_ACCESS && !out.contains(&g) {
                        out.push(g);
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    pub(super) fn victim(&mut self, p: &Proc, rec: &RecRef, c: &CRef, loss: Loss) {
        for over in [true, false] {
            if (over && loss.gpus.is_empty()) || (!over && loss.flags == 0) {
                continue;
            }
            self.raw_by_rec
                .entry(rec.id)
                .or_default()
                .push(self.raws.len());
            self.raws.push(Raw {
                kind: RawKind::Victim {
                    over,
                    rec: rec.clone(),
                    claim: c.clone(),
                    loss: loss.clone(),
                    shift: p.shift,
                    seen: p.seen.clone(),
                    keyed: keyed(p, c),
                },
                dead: false,
            });
        }
    }
}

pub(crate) fn loss_text(loss: &Loss) -> String {
    let mut parts = Vec::new();
    if !loss.gpus.is_empty() {
        parts.push(format!(
            "gpu {}",
            loss.gpus
                .iter()
                .map(|&g| hex(g))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if loss.flags != 0 {
        parts.push(flags_text(loss.flags));
    }
    format!("{} on {} page(s)", parts.join(" and "), loss.npages)
}

/// The range of the revoke that released `c`, kept as evidence of what the
/// runtime still counted when it computed that revoke (`release_range`)
/// only when nothing else live explains the pages of `c` it left out: a
/// registration made since (the same range pinned again, a neighbour) is
/// what the runtime counted then, and says nothing about the claims
/// released before it.
pub(super) fn release_range(
    p: &Proc,
    c: &CRef,
    s: u64,
    e: u64,
    released: &[CRef],
) -> Option<(u64, u64)> {
    let (cs, ce) = {
        let b = c.b();
        (b.start, b.end)
    };
    let explained = [(cs, s.min(ce)), (e.max(cs), ce)]
        .iter()
        .filter(|(a, b)| a < b)
        .any(|&(a, b)| {
            p.cover.any(a, b, |o| {
                o != c && !released.contains(o) && o.b().kind == ClaimKind::Registration
            })
        });
    (!explained).then_some((s, e))
}

/// What a SET_ATTR on [s, e) taking `taken` and clearing `cleared` takes
/// from the claims held back (`Proc::held_back`, not live now and not
/// released by it), by their index there: what it would be a victim's
/// loss if the claim turns out live.
fn held_back_losses(
    p: &Proc,
    s: u64,
    e: u64,
    taken: &Gpus,
    cleared: u32,
    released: &[CRef],
    ambiguous: &[CRef],
) -> Vec<(usize, Loss)> {
    let mut out = Vec::new();
    if p.held_back.is_empty() || (taken.is_empty() && cleared == 0) {
        return out;
    }
    let mut near: Option<Run<'_, State>> = None;
    for (i, (k, _)) in p.held_back.iter().enumerate() {
        if released.contains(k) || ambiguous.contains(k) {
            continue;
        }
        let b = k.b();
        if b.live || b.unlocked || !b.pages.iter().any(|&(a, z)| a < e && s < z) {
            continue;
        }
        if let Some(loss) = taken_from(p, &b, taken, cleared, s, e, &mut near) {
            out.push((i, loss));
        }
    }
    out
}

/// What a SET_ATTR on [s, e) taking `taken` and clearing `cleared` takes
/// from claim `c` (`near`: the map's pieces there, found once by the first
/// claim that may lose something, walked in place).
fn taken_from<'m>(
    p: &'m Proc,
    c: &Claim,
    taken: &Gpus,
    cleared: u32,
    s: u64,
    e: u64,
    near: &mut Option<Run<'m, State>>,
) -> Option<Loss> {
    let want = Want::of(&c.gpus, c.kind, p.xnack, taken);
    let want = want.gpus();
    if want.is_empty() && c.flags & cleared == 0 {
        return None;
    }
    let near = near.get_or_insert_with(|| p.map.pieces.walk_run(s, e));
    loss_of(c, want, c.flags & cleared, s, e, near)
}

/// [`wanted`] without a set allocated: the gpus of `taken` a SET_ATTR can
/// take from a claim, on the stack when they are few (`taken` and a
/// claim's gpus are sorted sets, so their intersection is the same set
/// whichever is filtered).
struct Want {
    inline: [u32; WANT_INLINE],
    n: usize,
    /// all of them, when more than fit inline
    more: Vec<u32>,
}

const WANT_INLINE: usize = 8;

impl Want {
    fn of(granted: &[u32], kind: ClaimKind, xnack: Option<bool>, taken: &[u32]) -> Self {
        let mut w = Want {
            inline: [0; WANT_INLINE],
            n: 0,
            more: Vec::new(),
        };
        let pick = |g: &u32| {
            if !granted.is_empty() {
                granted.contains(g)
            } else {
                default_reliant(kind, xnack)
            }
        };
        for &g in taken.iter().filter(|g| pick(g)) {
            if w.n < WANT_INLINE {
                w.inline[w.n] = g;
            } else {
                if w.more.is_empty() {
                    w.more.extend_from_slice(&w.inline);
                }
                w.more.push(g);
            }
            w.n += 1;
        }
        w
    }

    fn gpus(&self) -> &[u32] {
        if self.n > WANT_INLINE {
            &self.more
        } else {
            &self.inline[..self.n]
        }
    }
}

/// Do the ranges `rs` cover [s, e) whole?
fn covers(rs: impl Iterator<Item = (u64, u64)> + Clone, s: u64, e: u64) -> bool {
    // (one range, the usual case: no sorted copy)
    let mut one = rs.clone();
    if let (Some((a, b)), None) = (one.next(), one.next()) {
        return s >= e || (a <= s && b >= e);
    }
    covers_walk(rs.collect(), s, e)
}

/// `covers` the general way: the ranges sorted, walked from s.
fn covers_walk(mut sorted: Vec<(u64, u64)>, s: u64, e: u64) -> bool {
    sorted.sort_unstable();
    let mut at = s;
    for (a, b) in sorted {
        if a > at {
            break;
        }
        at = at.max(b);
        if at >= e {
            return true;
        }
    }
    at >= e
}

/// Does another live registration of another range begin on the first
/// page of registration `c`?  In a runtime keying its entries by first
/// page, `c` joined its entry or it joined `c`'s: `c`'s end is silent
/// while the other holds it.
fn keyed(p: &Proc, c: &CRef) -> bool {
    let (start, end) = {
        let b = c.b();
        if b.kind != ClaimKind::Registration {
            return false;
        }
        (b.start, b.end)
    };
    p.cover.any(start, start + 1, |o| {
        o != c && {
            let b = o.b();
            b.kind == ClaimKind::Registration && b.start == start && b.end != end
        }
    })
}

/// The smallest registration claim containing [s, e), and every one lying
/// wholly inside it, each given to `found`.
fn infer_release(s: u64, e: u64, touched: &[CRef], mut found: impl FnMut(CRef)) {
    let mut regs = touched
        .iter()
        .filter(|c| c.b().kind != ClaimKind::Application);
    let first = regs.next();
    if regs.next().is_none() {
        // (one or none: no list made)
        if let Some(c) = first {
            let b = c.b();
            if (b.start <= s && b.end >= e) || (b.start >= s && b.end <= e) {
                drop(b);
                found(c.clone());
            }
        }
        return;
    }
    for c in infer_release_of(s, e, touched) {
        found(c);
    }
}

/// [`infer_release`] among two registration claims or more.
fn infer_release_of(s: u64, e: u64, touched: &[CRef]) -> Vec<CRef> {
    let regs: Vec<&CRef> = touched
        .iter()
        .filter(|c| c.b().kind != ClaimKind::Application)
        .collect();
    let mut out: Vec<CRef> = Vec::new();
    // ties (identical ranges, explicit claims only) go to the newest
    let containing = regs
        .iter()
        .filter(|c| {
            let b = c.b();
            b.start <= s && b.end >= e
        })
        .min_by_key(|c| {
            let b = c.b();
            (b.end - b.start, std::cmp::Reverse(c.id()))
        });
    if let Some(c) = containing {
        out.push((*c).clone());
    }
    for c in regs {
        let b = c.b();
        if b.start >= s && b.end <= e && !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// What claim `c` loses on [s, e): `want` the gpus it may lose, `want_flags`
/// the flags.  `near`: the map's pieces overlapping [s, e), unclipped
/// (in place).
fn loss_of(
    c: &Claim,
    want: &[u32],
    want_flags: u32,
    s: u64,
    e: u64,
    near: &Run<'_, State>,
) -> Option<Loss> {
    let want_any = !want.is_empty();
    if !want_any && want_flags == 0 {
        return None;
    }
    let mut lost_g: Gpus = Vec::new();
    let mut lost_f = 0u32;
    let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
    let mut n = 0u64;
    let mut add = |a: u64, b: u64| {
        lo = Some(lo.map_or(a, |x| x.min(a)));
        hi = Some(hi.map_or(b, |x| x.max(b)));
        n += b - a;
    };
    let add_gpus = |lost_g: &mut Gpus, gl: &mut dyn Iterator<Item = u32>| {
        for g in gl {
            if !lost_g.contains(&g) {
                lost_g.push(g);
            }
        }
    };
    for &(cs, ce) in &c.pages {
        let (a, b) = (cs.max(s), ce.min(e));
        if a >= b {
            continue;
        }
        let mut pos = a;
        for (ps0, pe0, st) in near.clone() {
            if !(ps0 < b && pe0 > a) {
                continue;
            }
            let (ps, pe) = (ps0.max(a), pe0.min(b));
            if pos < ps {
                // no range yet: default access, default flags
                let fl = want_flags & kfd::DEFAULT_SVM_FLAGS;
                if want_any || fl != 0 {
                    lost_f |= fl;
                    add_gpus(&mut lost_g, &mut want.iter().copied());
                    add(pos, ps);
                }
            }
            let mut gl = want
                .iter()
                .copied()
                .filter(|&g| st.access_of(g) != Some(NO_ACCESS));
            let fl = want_flags & !st.flags_clr;
            if fl != 0 || gl.clone().next().is_some() {
                lost_f |= fl;
                add_gpus(&mut lost_g, &mut gl);
                add(ps, pe);
            }
            pos = pe;
        }
        if pos < b {
            let fl = want_flags & kfd::DEFAULT_SVM_FLAGS;
            if want_any || fl != 0 {
                lost_f |= fl;
                add_gpus(&mut lost_g, &mut want.iter().copied());
                add(pos, b);
            }
        }
    }
    if lost_g.is_empty() && lost_f == 0 {
        return None;
    }
    lost_g.sort_unstable();
    Some(Loss {
        gpus: lost_g,
        flags: lost_f,
        lo: lo.unwrap_or(0),
        hi: hi.unwrap_or(0),
        npages: n,
    })
}

/// The earlier of two times, either of which may be unknown.
fn min_time(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// What a revoke tells of releases the model did not give it: the live
/// registrations containing it that it may have released (their range
/// minus what others covered), and the released ones whose own late
/// revoke it may be.
fn possible_releases(
    p: &mut Proc,
    ev: &Ev,
    s: u64,
    e: u64,
    quiet_from: Option<f64>,
    touched: &[CRef],
    released: &[CRef],
) {
    // a revoke inside a registration's range that released another
    // claim (the smallest one containing it, one of exactly its
    // range, a tie, or claims inside it) may have been that
    // registration's own, minus the pages others covered: its
    // release may have begun when this one was computed
    if let Some(t) = ev.h.time {
        let after = quiet_from.unwrap_or(t);
        for c in touched.iter().filter(|c| !released.contains(c)) {
            let mut b = c.m();
            if b.kind == ClaimKind::Registration && b.start <= s && e <= b.end {
                b.may_be_released(after, ev.h.seq);
            }
        }
    }
    // a revoke inside the range of a registration that another
    // revoke released (one enclosing it, or the smallest one
    // containing it) may be its own, minus what others covered,
    // computed when this thread's previous call ended and issued
    // late: its release may have begun then (whatever this one
    // releases besides)
    let t = ev.h.time;
    for c in &p.ended_by_other {
        // (most lie elsewhere: read before the list of released is)
        let inside = {
            let b = c.b();
            !b.live && b.start <= s && e <= b.end
        };
        if inside && !released.contains(c) {
            let mut b = c.m();
            b.release_began = min_time(b.release_began, t);
            b.release_after = min_time(b.release_after, quiet_from.or(t));
        }
    }
}

/// The revoke begins a burst of one deregistration's pieces on its thread,
/// or (`piece`) goes on with one: the next piece keeps when the first was
/// computed at the earliest.
fn record_burst(
    p: &mut Proc,
    ev: &Ev,
    piece: Option<Burst>,
    s: u64,
    e: u64,
    quiet_from: Option<f64>,
    released: &[CRef],
) {
    let reach = released
        .iter()
        .map(|c| {
            let c = c.b();
            (c.start, c.end)
        })
        .chain(piece.map(|b| b.reach))
        .max_by_key(|&(a, b)| b - a)
        .unwrap_or((s, e));
    let start = piece.map_or(s, |b| b.start);
    p.burst.insert(
        ev.h.tid,
        Burst {
            quiet_from,
            start,
            end: e,
            reach,
        },
    );
    p.in_burst = true;
}

/// After a registration of [s, e) (`touched`: the claims on it before it,
/// `made`: the claim it made, if new): a registration there (this one, or one
/// it overlaps) all of whose pages other live claims now cover may be
/// released silently from now on, by a runtime that revokes a range minus
/// what others still cover (nothing is left: no ioctl), so its release
/// may have begun when this registration ended: a possible release (seen
/// in the emulation: a victim "certainly live" to the end of the trace,
/// released by an unpin that issued nothing).
fn may_vanish(p: &mut Proc, ev: &Ev, touched: &[CRef], made: Option<&CRef>) {
    let Some(t) = ev.h.end() else { return };
    for c in touched.iter().chain(made) {
        let covered = {
            let b = c.b();
            b.live && b.kind == ClaimKind::Registration && covered_by_others(p, c, b.start, b.end)
        };
        if covered {
            // its deregistration, computed from now on, issues nothing; it
            // may have begun (the program called it, the runtime waited for
            // its lock) any time since the claim was last registered
            let since = c.b().last_registered.map_or(t, |r| r.min(t));
            c.m().may_be_released(since, ev.h.seq);
        }
    }
}

/// Whether every page of [s, e) is covered by a live registration (or
/// lock) other than `c`: what a subtracting runtime leaves out of `c`'s revoke.
fn covered_by_others(p: &Proc, c: &CRef, s: u64, e: u64) -> bool {
    // the pieces from the last back: each holds another, and each ends
    // where the one after it begins (the first at e, the last from s)
    let mut at = e;
    for (a, b, items) in p.cover.pieces_back(s, e) {
        let other = items.iter().any(|x| {
            let xb = x.b();
            x != c && xb.live && matches!(xb.kind, ClaimKind::Registration | ClaimKind::Explicit)
        });
        if !other || b.min(e) < at {
            return false;
        }
        at = a.max(s);
    }
    at <= s
}

/// True when the claim was made on another thread than `ev`'s.
fn made_elsewhere(c: &Claim, ev: &Ev) -> bool {
    c.born.as_ref().is_some_and(|r| r.h.tid != ev.h.tid)
}

#[cfg(test)]
mod shortcut_tests {
    use super::*;

    /// `Want` (on the stack, and past its inline room) is `wanted`'s set,
    /// for every kind and xnack mode.
    #[test]
    fn want_is_wanted() {
        let sets: Vec<Gpus> = vec![
            vec![],
            vec![3],
            vec![1, 3, 5],
            (0..12).collect(),
            (4..20).step_by(2).collect(),
        ];
        for granted in &sets {
            for taken in &sets {
                for kind in [
                    ClaimKind::Registration,
                    ClaimKind::Application,
                    ClaimKind::Explicit,
                ] {
                    for xnack in [None, Some(true), Some(false)] {
                        let w = Want::of(granted, kind, xnack, taken);
                        assert_eq!(
                            w.gpus(),
                            &wanted(granted, kind, xnack, taken)[..],
                            "{granted:?} {taken:?} {kind:?} {xnack:?}"
                        );
                    }
                }
            }
        }
    }

    /// `covers` of one range answers what the sorted walk answers.
    #[test]
    fn covers_one_range_is_the_walk() {
        let walk = |rs: &[(u64, u64)], s: u64, e: u64| covers_walk(rs.to_vec(), s, e);
        for a in 0..6u64 {
            for b in a..7 {
                for s in 0..6u64 {
                    for e in s..7 {
                        let one = [(a, b)];
                        assert_eq!(
                            covers(one.iter().copied(), s, e),
                            walk(&one, s, e),
                            "{a} {b} {s} {e}"
                        );
                    }
                }
            }
        }
    }
}
