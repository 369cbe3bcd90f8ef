//! The SVM model's findings, built at the end of the trace from its raw
//! records, and the
//! occurrence numbering it does itself (two different findings
//! never share a fingerprint).

use serde_json::{Map, Value as Json, json};

use crate::events::{Event, Kind, Text};
use crate::findings::{Evidence, Finding};
use crate::kfd;
use crate::models::common::hex;
use crate::models::svm_map::{Attr, access_name};
use crate::models::svm_records::{
    CLOCK_RES, CRef, Claim, ClaimKind, EPS, EffKind, Ev, GrantRef, Loss, Raw, RawKind, RecRef,
    Seen, attr_short, flags_text, opt_same, page_hex, same_ev, shape_of, shape_text,
    windows_overlap,
};
use crate::rules::{Rule, Severity};

/// A finding and the events it cites, kept shared until the numbering
/// (identity decides the fingerprint's evidence part).
struct Built {
    f: Finding,
    event: Ev,
    evidence: Vec<(String, Ev)>,
}

fn gpu_list(g: &[u32]) -> Vec<Json> {
    g.iter().map(|&x| Json::String(hex(x))).collect()
}

fn subject(start: String, end: String, gpus: &[u32]) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("kind".into(), "svm-range".into());
    m.insert("start".into(), start.into());
    m.insert("end".into(), end.into());
    m.insert("gpu_ids".into(), Json::Array(gpu_list(gpus)));
    m
}

fn time_json(t: Option<f64>) -> Json {
    t.and_then(serde_json::Number::from_f64)
        .map_or(Json::Null, Json::Number)
}

fn summary(c: &Claim, shift: u32, files: &[Text]) -> Json {
    let mut d = Map::new();
    d.insert("kind".into(), c.kind.name().into());
    d.insert("start".into(), page_hex(c.start, shift).into());
    d.insert("end".into(), page_hex(c.end, shift).into());
    d.insert("pages".into(), json!(c.end - c.start));
    d.insert("gpus".into(), Json::Array(gpu_list(&c.gpus)));
    d.insert("flags".into(), flags_text(c.flags).into());
    if let Some(p) = c.ptr {
        d.insert("ptr".into(), hex(p).into());
    }
    if let Some(ev) = c.born.as_ref().or(c.lock.as_ref()) {
        d.insert("file".into(), file_name(files, ev).into());
        d.insert("line".into(), json!(ev.h.line));
        d.insert("tid".into(), ev.h.tid.map_or(Json::Null, |t| json!(t)));
        d.insert("time".into(), time_json(ev.h.time));
    }
    Json::Object(d)
}

fn file_name(files: &[Text], ev: &Event) -> String {
    files
        .get(ev.h.file.0 as usize)
        .map_or_else(|| "-".to_owned(), |t| t.to_string_lossy().into_owned())
}

fn attrs_of_rec(rec: &RecRef) -> std::rc::Rc<[Attr]> {
    rec.r.borrow().attrs.clone()
}

/// The attribute list of a SET_ATTR event as the model read it.
fn event_attrs(ev: &Event) -> Vec<Attr> {
    let Kind::Ioctl(io) = &ev.kind else {
        return Vec::new();
    };
    let Some(list) = io
        .arg
        .as_ref()
        .and_then(|a| a.get("attrs"))
        .and_then(|v| v.as_list())
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|it| {
            let (t, v) = match it {
                crate::events::Value::List(p) if p.len() == 2 => (&p[0], &p[1]),
                crate::events::Value::Pair(p) => (&p.0, &p.1),
                _ => return None,
            };
            Some(Attr::new(t.as_u64()? as u32, v.as_u64()? as u32))
        })
        .collect()
}

fn arg_i128(ev: &Event, field: &str) -> i128 {
    match &ev.kind {
        Kind::Ioctl(io) => io
            .arg
            .as_ref()
            .and_then(|a| a.get(field))
            .and_then(|v| v.as_i128())
            .unwrap_or(0),
        _ => 0,
    }
}

pub(crate) fn build(raws: Vec<Raw>, files: &[Text]) -> Vec<Finding> {
    let mut new: Vec<Built> = Vec::new();
    for r in &raws {
        if r.dead {
            continue;
        }
        let live = match &r.kind {
            RawKind::Victim {
                rec,
                claim,
                loss,
                seen,
                ..
            } => liveness(rec, &claim.real().b(), loss, &seen.borrow()),
            _ => Live::Proven,
        };
        if live == Live::Not {
            continue; // not live when the SET_ATTR ran: nothing was hurt
        }
        new.push(build_one(r, live, files));
    }
    number(&mut new, files);
    new.into_iter()
        .map(|b| {
            let mut f = b.f;
            f.evidence = b
                .evidence
                .iter()
                .map(|(role, ev)| Evidence::new(role.clone(), ev))
                .collect();
            f
        })
        .collect()
}

/// What the trace proves of a victim's liveness when a SET_ATTR hurt it:
/// whether its claim's release may have begun before the call that hurt it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Live {
    /// registered before the call, released (if at all) after it landed
    Proven,
    /// its release had begun before the call: nothing was hurt
    Not,
    /// its release began while the call's window was open: the finding
    /// holds in one order only (a warning)
    Window,
    /// its release may have begun before the call landed: a note
    Unproven,
}

/// The victim's liveness when `rec` ran.  Its release began at the latest
/// when the unlock, revoke or unmap that ended it began (whatever its
/// line's place in the file), and, for a revoke issued without intent
/// calls, at the earliest when that thread's previous call ended: a
/// runtime computes a revoke under its lock and may issue it much later.
/// A revoke that left out pages of the victim that a claim `rec` releases
/// covers was computed while that claim was still registered, so before
/// `rec`: the victim's release began first.  The call itself landed
/// somewhere in its window: a release that began inside it leaves the
/// order open (a warning); one that may have begun before the call
/// although its ioctl came after is not proven (a note).
///
/// The converse reading of a revoke's range: a runtime that leaves out of
/// a revoke the pages its other registrations cover (the trace shows it
/// doing so) counted every registration in its table when it computed the
/// revoke.  If `rec` still took boundary pages it shares with the victim,
/// and the victim was in that table before `rec` can have been computed,
/// the victim had already left it: its release came first.
fn liveness(rec: &RecRef, victim: &Claim, loss: &Loss, seen: &Seen) -> Live {
    let live = liveness_by_windows(rec, victim);
    if matches!(live, Live::Window | Live::Unproven) && left_table_first(rec, victim, loss, seen) {
        return Live::Not;
    }
    if matches!(live, Live::Proven | Live::Window)
        && (maybe_released_before(rec, victim)
            || rec
                .r
                .borrow()
                .ambiguous
                .iter()
                .any(|c| std::ptr::eq(&*c.b(), victim)))
    {
        return Live::Unproven;
    }
    live
}

/// True when a revoke inside the victim's range that the model gave to
/// another claim (a late one, or a tie) was computed before `rec` landed:
/// it may have been the victim's own release.
fn maybe_released_before(rec: &RecRef, victim: &Claim) -> bool {
    let d = rec.r.borrow();
    let Some(landed) = d.event.h.end() else {
        return false;
    };
    victim
        .maybe_release
        .iter()
        .any(|&(after, seq)| seq != d.event.h.seq && after < landed - EPS)
}

/// True when `rec`, a release revoke of a runtime that subtracts its other
/// registrations, took only pages the victim shares with the claims it
/// released at their boundaries (no enclosing victim, no grown extent: the
/// geometry such a runtime's walk gets right), and the victim was in the
/// runtime's table before `rec` can have been computed: before the
/// releasing thread's previous call ended, or before the released claims
/// were registered, whichever is later.  A registration is in the table
/// once its register call has returned, which the start of its map shows.
fn left_table_first(rec: &RecRef, victim: &Claim, loss: &Loss, seen: &Seen) -> bool {
    let d = rec.r.borrow();
    if seen.subtracts == 0
        || d.eff.kind != EffKind::Revoke
        || d.unlock.is_some()
        || victim.kind != ClaimKind::Registration
        || d.released.is_empty()
    {
        return false;
    }
    let released: Vec<CRef> = d.released.iter().map(|c| c.real()).collect();
    if released
        .iter()
        .any(|c| c.b().kind != ClaimKind::Registration)
    {
        return false;
    }
    // the lost pages are boundary pages of the victim and of a released claim
    let edge = |pg: u64, a: u64, b: u64| pg == a || pg == b.wrapping_sub(1);
    let boundary = (loss.lo..loss.hi).all(|pg| {
        edge(pg, victim.start, victim.end)
            && released.iter().any(|c| {
                let c = c.b();
                c.start <= pg && pg < c.end && edge(pg, c.start, c.end)
            })
    });
    if !boundary || (victim.start < d.s && victim.end >= d.e) {
        return false;
    }
    // the victim was in the table: its map began after its register
    // returned.  A range registered again while the model still holds it
    // (its first release revoke not landed yet) is one claim with several
    // registrations; only the latest is known to be in the table from its
    // map on, since the earlier ones may have left before it came back
    let Some(born) = &victim.born else {
        return false;
    };
    let Some(first) = victim.grants.iter().find(|g| same_ev(&g.event, born)) else {
        return false;
    };
    let landed = d.event.h.end().unwrap_or(f64::INFINITY);
    let before: Vec<&GrantRef> = victim
        .grants
        .iter()
        .filter(|g| g.event.h.time.is_some_and(|t| t <= landed))
        .collect();
    let Some(k) = before
        .iter()
        .rposition(|g| g.gpus == first.gpus && g.flags == first.flags)
    else {
        return false;
    };
    let reg = &before[k].event;
    let Some(in_table) = before[k + 1..]
        .iter()
        .filter(|g| g.event.h.tid == reg.h.tid)
        .filter_map(|g| g.event.h.time)
        .reduce(f64::min)
    else {
        return false;
    };
    // ... before the revoke can have been computed
    let registered = released
        .iter()
        .filter_map(|c| c.b().born.as_ref().and_then(|e| e.h.end()))
        .reduce(f64::max);
    let computed_after = match (d.quiet_from, registered) {
        (Some(a), Some(b)) => a.max(b),
        (a, b) => match a.or(b) {
            Some(t) => t,
            None => return false,
        },
    };
    // (times are cut to the microsecond: a map logged in the same microsecond
    // as the end of that call may have begun after it)
    in_table + CLOCK_RES <= computed_after + EPS
}

/// True when the claim's range was registered again (a SET_ATTR shaped
/// like the one that made it) after `t`.
fn registered_since(c: &Claim, t: f64) -> bool {
    c.registrations > 1 && c.last_registered.is_some_and(|x| x >= t - EPS)
}

fn liveness_by_windows(rec: &RecRef, victim: &Claim) -> Live {
    let d = rec.r.borrow();
    // the pages are taken while the SET_ATTR itself runs: a victim whose
    // unlock began before it had been released, even if the unlock that
    // issued the SET_ATTR began earlier still (its revoke computed before
    // the victim's release, issued after it)
    let (Some(began), Some(landed)) = (d.event.h.time, d.event.h.end()) else {
        return Live::Proven; // no clock: file order, as replayed
    };
    if registered_since(victim, began - CLOCK_RES) {
        // the range was registered again once the call had begun (within
        // the clock's resolution: the order is open) while the
        // model still held it (one claim): the release the trace shows may
        // be that later holder's, and the earlier holder's (a silent
        // refcount drop, or a revoke still to land) is not seen
        return Live::Unproven;
    }
    if victim.release_after.is_some_and(|t| t >= landed - EPS) {
        return Live::Proven; // its release began after the call landed
    }
    if let Some((rs, re)) = victim.release_range
        && d.eff.kind == EffKind::Revoke
    {
        let left_out = [
            (victim.start, rs.min(victim.end)),
            (re.max(victim.start), victim.end),
        ];
        // (one registration only: of several, the revoke may be an earlier
        // one's, computed before the later one came back)
        let counted = victim.registrations == 1
            && d.released.iter().any(|c| {
                let c = c.real();
                let c = c.b();
                left_out
                    .iter()
                    .any(|&(a, b)| a < b && c.start < b && a < c.end)
            });
        if counted {
            return Live::Not;
        }
    }
    let Some(latest) = victim.release_began else {
        return Live::Proven; // never released in the trace (but see maybe_released_before)
    };
    if latest < began - EPS {
        Live::Not
    } else if victim.release_after.is_some_and(|t| t >= began - EPS) {
        Live::Window
    } else {
        Live::Unproven
    }
}

fn build_one(r: &Raw, live: Live, files: &[Text]) -> Built {
    match &r.kind {
        RawKind::Victim {
            over,
            rec,
            claim,
            loss,
            shift,
            seen,
            keyed,
        } => victim_finding(
            *over,
            rec,
            claim,
            loss,
            *shift,
            if claim.real().b().kind == ClaimKind::Registration
                && (seen.borrow().silent()
                    || claim.real().b().registrations > 1
                    || (*keyed && seen.borrow().grown > 0))
            {
                // its end is not seen: a runtime deregistering silently; a
                // range registered again while it lived, so a holder of it
                // left without a revoke (a refcount, or a revoke its
                // neighbours covered whole) and so may the last; or a
                // runtime keying its entries by first page, where another
                // registration of that page holds the entry after this
                // one's holder left
                Live::Unproven
            } else {
                live
            },
            files,
        ),
        RawKind::Stale { claim, res, shift } => {
            let c = claim.real();
            let c = c.b();
            let (gpus, lo, hi) = res;
            let ev = c
                .born
                .clone()
                .or(c.lock.clone())
                .expect("claims have an event");
            let msg = format!(
                "{} grants no GPU itself but covers {} page(s) left NO_ACCESS for GPU {} by an \
                 earlier revoke: the VA was reused without munmap and nothing re-granted it",
                c.label(*shift),
                hi - lo,
                gpus.iter().map(|&g| hex(g)).collect::<Vec<_>>().join(", ")
            );
            let mut evidence = vec![(
                "registration relying on default access".to_owned(),
                ev.clone(),
            )];
            if let Some(l) = &c.lock
                && !same_ev(l, &ev)
            {
                evidence.push(("locked by".into(), l.clone()));
            }
            for g in &c.getattr_seen {
                evidence.push(("GET_ATTR answered NO_ACCESS".into(), g.clone()));
            }
            if let Some(x) = &c.ended_by {
                evidence.push(("claim ended by".into(), x.clone()));
            }
            let mut f = Finding::new(Rule::SvmStaleNoAccess, msg, Some(&ev));
            f.subject = subject(page_hex(*lo, *shift), page_hex(*hi, *shift), gpus);
            f.key = vec![
                c.kind.name().to_owned(),
                format!("pages={}", c.end - c.start),
            ];
            let mut d = Map::new();
            d.insert("claim".into(), summary(&c, *shift, files));
            d.insert("pages".into(), json!(hi - lo));
            d.insert("gpus".into(), Json::Array(gpu_list(gpus)));
            d.insert(
                "get_attr_confirms".into(),
                Json::Bool(!c.getattr_seen.is_empty()),
            );
            f.details = d;
            Built {
                f,
                event: ev,
                evidence,
            }
        }
        RawKind::Unmap {
            claim,
            event,
            shift,
            locked,
            s,
            e,
            pages,
        } => {
            let c = claim.real();
            let c = c.b();
            let (lo, hi) = ((*s).max(c.start), (*e).min(c.end));
            let msg = format!(
                "{} removes {pages} page(s) of {} {}",
                event.name,
                c.label(*shift),
                if *locked {
                    "still locked: memory freed while registered"
                } else {
                    "whose deregistration is not visible (no intent calls): it may have ended \
                     without an ioctl"
                }
            );
            let mut evidence = vec![("this unmap".to_owned(), event.clone())];
            if let Some(l) = &c.lock {
                evidence.push(("locked by".into(), l.clone()));
            } else if let Some(b) = &c.born {
                evidence.push(("registered by".into(), b.clone()));
            }
            let mut f = Finding::new(Rule::SvmUnmapRegistered, msg, Some(event));
            f.subject = subject(page_hex(lo, *shift), page_hex(hi, *shift), &c.gpus);
            f.severity = Some(if *locked {
                Severity::Warning
            } else {
                Severity::Note
            });
            f.key = vec![
                c.kind.name().to_owned(),
                if *locked { "locked" } else { "inferred" }.to_owned(),
            ];
            let mut d = Map::new();
            d.insert("claim".into(), summary(&c, *shift, files));
            d.insert("pages".into(), json!(pages));
            f.details = d;
            Built {
                f,
                event: event.clone(),
                evidence,
            }
        }
        RawKind::Bad { event, why } => {
            let start = arg_i128(event, "start_addr");
            let size = arg_i128(event, "size");
            let msg = format!("SET_ATTR of {} size {} {why}", hex(start), hex(size));
            let mut f = Finding::new(Rule::SvmBadRange, msg, Some(event));
            f.subject = subject(hex(start), hex(start + size), &[]);
            f.key = vec![
                why.split(" (").next().unwrap_or("").to_owned(),
                shape_of(&event_attrs(event)),
            ];
            Built {
                f,
                event: event.clone(),
                evidence: vec![("this SET_ATTR".into(), event.clone())],
            }
        }
        RawKind::Mismatch {
            event,
            diffs,
            s,
            e,
            shift,
        } => {
            let mut parts = Vec::new();
            let mut names = Vec::new();
            for &(t_in, v_in, pt, pv, t_out, v_out) in diffs {
                let name = attr_short(t_in).map_or_else(|| t_in.to_string(), str::to_owned);
                if t_in == kfd::ATTR_ACCESS {
                    parts.push(format!(
                        "ACCESS for GPU {}: kernel {}, model {}",
                        hex(v_in),
                        access_name(t_out),
                        access_name(pt)
                    ));
                } else {
                    parts.push(format!("{name}: kernel {}, model {}", hex(v_out), hex(pv)));
                }
                names.push(name);
            }
            names.sort();
            let msg = format!(
                "GET_ATTR answer differs from the replayed model: {}",
                parts.join("; ")
            );
            let mut f = Finding::new(Rule::SvmModelMismatch, msg, Some(event));
            f.subject = subject(page_hex(*s, *shift), page_hex(*e, *shift), &[]);
            f.key = names;
            let mut d = Map::new();
            d.insert(
                "differences".into(),
                Json::Array(parts.into_iter().map(Json::String).collect()),
            );
            f.details = d;
            Built {
                f,
                event: event.clone(),
                evidence: vec![("this GET_ATTR".into(), event.clone())],
            }
        }
    }
}

fn victim_finding(
    over: bool,
    rec: &RecRef,
    claim: &CRef,
    loss: &Loss,
    sh: u32,
    live: Live,
    files: &[Text],
) -> Built {
    let victim_ref = claim.real();
    let victim = victim_ref.b();
    let d = rec.r.borrow();
    let ev = d.event.clone();
    let released_refs: Vec<CRef> = d.released.iter().map(CRef::real).collect();
    let released: Vec<std::cell::Ref<'_, Claim>> = released_refs.iter().map(|c| c.b()).collect();
    let (cause, order, culprit) = cause_of(rec, &victim, loss, &released);
    let ordered = order == "concurrent" || live == Live::Window;
    let cause = if ordered {
        Some("cross-thread-order")
    } else {
        cause
    };
    let attrs = attrs_of_rec(rec);
    let lost = if over {
        loss.gpus
            .iter()
            .map(|&g| hex(g))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        flags_text(loss.flags)
    };
    let rel = released
        .iter()
        .map(|c| c.label(sh))
        .collect::<Vec<_>>()
        .join(", ");
    let rel = if rel.is_empty() {
        "nothing".to_owned()
    } else {
        rel
    };
    let mut msg = format!(
        "SET_ATTR {} on [{}, {}) released {rel} but took {}{lost} from {} page(s) of live {}",
        shape_text(&attrs),
        page_hex(d.s, sh),
        page_hex(d.e, sh),
        if over { "GPU " } else { "" },
        loss.npages,
        victim.label(sh)
    );
    if let Some(b) = &victim.born
        && let Some(t) = b.h.tid
    {
        msg += &format!(" (granted on tid {t})");
    }
    if !over {
        msg += ": fine-grained pages made coarse-grained (stale reads, no fault)";
    }
    if let Some(c) = cause {
        msg += &format!(" [cause: {c}]");
    }
    if order == "concurrent" {
        msg += " [order: concurrent calls, the outcome depends on their order]";
    }
    // liveness: a release that may have begun before the call
    // landed (a revoke issued after the runtime's lock was dropped, a
    // runtime that deregisters without an ioctl) proves nothing
    if live == Live::Unproven {
        msg += " [liveness not proven: the victim's release may have begun before this \
                     call landed (a deregistration issued after its lock was dropped, or one \
                     that issues no ioctl)]";
    }
    let mut evidence: Vec<(String, Ev)> = vec![(
        if d.eff.kind == EffKind::Revoke {
            "revoking call"
        } else {
            "this SET_ATTR"
        }
        .to_owned(),
        ev.clone(),
    )];
    if let Some(u) = &d.unlock {
        evidence.push(("deregistration (unlock) it ran inside".into(), u.clone()));
    }
    for c in &released {
        let first = c.grants.first().map(|g| g.event.clone()).or(c.born.clone());
        if let Some(l) = &c.lock {
            evidence.push(("released claim: locked by".into(), l.clone()));
        }
        if let Some(f) = &first
            && !opt_same(Some(f), c.lock.as_ref())
        {
            evidence.push(("released claim: registered by".into(), f.clone()));
        }
    }
    if let Some(l) = &victim.lock {
        evidence.push(("victim claim: locked by".into(), l.clone()));
    }
    let mut shown = 0;
    for g in &victim.grants {
        if shown >= 4 {
            break;
        }
        let meets = g.gpus.iter().any(|x| loss.gpus.contains(x));
        if (over && (meets || victim.gpus.is_empty())) || g.flags & loss.flags != 0 {
            let raced = culprit.as_ref().is_some_and(|c| same_ev(c, &g.event));
            evidence.push((
                format!(
                    "victim claim: granted by{}",
                    if raced { " (the call that raced)" } else { "" }
                ),
                g.event.clone(),
            ));
            shown += 1;
        }
    }
    if shown == 0
        && let Some(b) = &victim.born
        && !opt_same(Some(b), victim.lock.as_ref())
    {
        evidence.push(("victim claim: registered by".into(), b.clone()));
    }
    let mut details = Map::new();
    details.insert("order".into(), order.into());
    details.insert(
        "released".into(),
        Json::Array(released.iter().map(|c| summary(c, sh, files)).collect()),
    );
    details.insert("victim".into(), summary(&victim, sh, files));
    details.insert("pages".into(), json!(loss.npages));
    details.insert(
        "gpus".into(),
        Json::Array(if over {
            gpu_list(&loss.gpus)
        } else {
            Vec::new()
        }),
    );
    details.insert(
        "flags".into(),
        if loss.flags != 0 {
            flags_text(loss.flags)
        } else {
            String::new()
        }
        .into(),
    );
    let mut kinds: Vec<&str> = released.iter().map(|c| c.kind.name()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let kinds = if kinds.is_empty() {
        "none".to_owned()
    } else {
        kinds.join("+")
    };
    let key = vec![
        cause.unwrap_or("-").to_owned(),
        shape_of(&attrs),
        victim.kind.name().to_owned(),
        kinds,
        format!("taken={}/{}", loss.npages, victim.end - victim.start),
        format!("revoke={}", d.e - d.s),
        format!(
            "released={}",
            released
                .iter()
                .map(|c| (c.end - c.start).to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    ];
    let rule = if over {
        Rule::SvmOverRevoke
    } else {
        Rule::SvmCoherencyDowngrade
    };
    let mut f = Finding::new(rule, msg, Some(&ev));
    if live == Live::Unproven {
        f.severity = Some(Severity::Note);
    } else if ordered {
        // holds in only one order of the calls: at most a warning
        f.severity = Some(Severity::Warning);
    }
    // one subject for both rules: the victim's pages, the gpus and flags taken
    f.subject = subject(page_hex(loss.lo, sh), page_hex(loss.hi, sh), &loss.gpus);
    f.cause = cause.map(str::to_owned);
    f.key = key;
    f.details = details;
    Built {
        f,
        event: ev,
        evidence,
    }
}

/// (cause, order, racing grant event) for one (SET_ATTR, victim).
fn cause_of(
    rec: &RecRef,
    victim: &Claim,
    loss: &Loss,
    released: &[std::cell::Ref<'_, Claim>],
) -> (Option<&'static str>, &'static str, Option<Ev>) {
    let d = rec.r.borrow();
    let ev = &d.event;
    let began = match &d.unlock {
        Some(u) => u.h.time,
        None => ev.h.time,
    };
    let mut grant_events: Vec<Option<Ev>> = victim
        .grants
        .iter()
        .filter(|g| {
            g.gpus.iter().any(|x| loss.gpus.contains(x))
                || g.flags & loss.flags != 0
                || victim.gpus.is_empty()
        })
        .map(|g| Some(g.event.clone()))
        .collect();
    if grant_events.is_empty() {
        grant_events.push(victim.born.clone().or(victim.lock.clone()));
    }
    let mut order = "certain";
    let mut culprit = None;
    let mut cross = false;
    for g in grant_events.into_iter().flatten() {
        if windows_overlap(&g, ev) {
            order = "concurrent";
        }
        if g.h.tid != ev.h.tid
            && g.h.time.is_some()
            && let Some(began) = began
        {
            let gend = g.h.end().unwrap_or(0.0);
            if gend > began + EPS || windows_overlap(&g, ev) {
                cross = true;
                culprit = Some(g.clone());
            }
        }
    }
    if d.eff.kind != EffKind::Revoke {
        return (None, order, culprit);
    }
    if cross {
        return (Some("cross-thread-order"), order, culprit);
    }
    if victim.start < d.s && victim.end >= d.e {
        return (Some("enclosing-range"), order, culprit);
    }
    // the revoke reaches past what it releases, onto the victim's pages
    let mut ranges: Vec<(u64, u64)> = released.iter().map(|c| (c.start, c.end)).collect();
    ranges.sort_unstable();
    let mut union: Vec<(u64, u64)> = Vec::new();
    for (a, b) in ranges {
        match union.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => union.push((a, b)),
        }
    }
    let mut covered: u64 = 0;
    for (a, b) in union {
        let (x, y) = (b.min(loss.hi), a.max(loss.lo));
        covered += x.saturating_sub(y);
    }
    if !released.is_empty() && covered < loss.hi - loss.lo {
        return (Some("grown-extent"), order, culprit);
    }
    let in_v = |pg: u64| pg == victim.start || pg == victim.end.wrapping_sub(1);
    let in_r = |pg: u64| pg == d.s || pg == d.e.wrapping_sub(1);
    if (loss.lo..loss.hi).all(|pg| in_v(pg) && in_r(pg)) {
        return (Some("shared-page"), order, culprit);
    }
    (None, order, culprit)
}

// --- occurrence numbering -------------------------------------------------------

/// findings.normalize_path: runs of digits become N.
fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !in_run {
                out.push('N');
                in_run = true;
            }
        } else {
            out.push(ch);
            in_run = false;
        }
    }
    out
}

/// Text as findings._digest sees it: the Python str (surrogateescape) with
/// each escaped byte a lone surrogate, encoded with surrogatepass and
/// decoded with replace (three U+FFFD).
fn digest_text(t: &[u8]) -> String {
    let mut out = String::new();
    for chunk in t.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push_str("\u{FFFD}\u{FFFD}\u{FFFD}");
        }
    }
    out
}

fn event_paths(ev: &Event) -> Vec<String> {
    let one = |p: &Option<Text>| p.iter().map(|t| digest_text(&t.0)).collect::<Vec<_>>();
    let out = match &ev.kind {
        Kind::Ioctl(io) => one(&io.path),
        Kind::Mmap(m) => one(&m.path),
        Kind::Exec(x) => one(&x.path),
        Kind::Close(c) => one(&c.path),
        Kind::Syscall(s) => s
            .paths
            .iter()
            .flatten()
            .map(|t| digest_text(&t.0))
            .collect(),
        Kind::FdCreate(f) => f
            .paths
            .iter()
            .flatten()
            .map(|t| digest_text(&t.0))
            .collect(),
        _ => Vec::new(),
    };
    out.iter().map(|p| normalize(p)).collect()
}

/// findings.stack_signature.
fn stack_signature(stack: &[crate::events::Frame], depth: usize) -> Vec<String> {
    stack
        .iter()
        .take(depth)
        .map(|fr| {
            let m = fr.module.rsplit('/').next().unwrap_or("");
            let f = fr
                .symbol
                .as_deref()
                .filter(|s| !s.is_empty())
                .or(fr.function.as_deref().filter(|s| !s.is_empty()));
            let mut s = match (f, fr.addr) {
                (Some(f), _) => format!("{m}!{f}"),
                (None, Some(a)) => format!("{m}+{a:#x}"),
                (None, None) => m.to_owned(),
            };
            if let (Some(src), Some(line)) = (fr.source.as_deref(), fr.source_line)
                && !src.is_empty()
                && line != 0
            {
                s += &format!("@{}:{line}", src.rsplit('/').next().unwrap_or(""));
            }
            s
        })
        .collect()
}

/// What findings.fingerprint hashes (program ""): its parts joined with
/// the digest's separator, so that equal digests are equal strings.
fn ingredients(b: &Built) -> String {
    let mut parts = vec![b.f.rule.id().to_owned()];
    parts.extend(b.f.key.iter().cloned());
    for (role, e) in &b.evidence {
        parts.push(format!(
            "{}:{}:{}",
            normalize(role),
            e.name,
            event_paths(e).join(",")
        ));
        if !e.h.stack.is_empty() && !same_ev(e, &b.event) {
            parts.push(format!("@{}", stack_signature(&e.h.stack, 2).join("|")));
        }
    }
    parts.extend(stack_signature(&b.event.h.stack, 4));
    parts.join("\u{1f}")
}

/// Findings that would share a fingerprint get `occurrence=N`, in trace
/// order (file name, line; stable).
fn number(new: &mut [Built], files: &[Text]) {
    let name = |b: &Built| -> Vec<u8> {
        files
            .get(b.event.h.file.0 as usize)
            .map(|t| t.0.to_vec())
            .unwrap_or_default()
    };
    let mut order: Vec<usize> = (0..new.len()).collect();
    order.sort_by_cached_key(|&i| (name(&new[i]), new[i].event.h.line));
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for i in order {
        let k = ingredients(&new[i]);
        match index.get(&k) {
            Some(&g) => groups[g].1.push(i),
            None => {
                index.insert(k.clone(), groups.len());
                groups.push((k, vec![i]));
            }
        }
    }
    for (_, same) in groups {
        if same.len() > 1 {
            for (n, i) in same.into_iter().enumerate() {
                new[i].f.key.push(format!("occurrence={}", n + 1));
            }
        }
    }
}
