//! The intent of tests/test_svm_model.py's cheaper cases, in Rust (that file
//! runs all of them on the core through rocrtrace._engine.run_svm_model).

use super::*;
use crate::events::{Header, Intent, Ioctl, Mremap, Munmap, ProcessInfo};
use crate::rules::{Rule, Severity};
use std::borrow::Cow;

const X: u64 = 0x7F3A_1C20_0000;
const G: u32 = 0x1A2B;
const PAGE: u64 = 0x1000;

fn attr(t: u32, v: u32) -> Attr {
    Attr::new(t, v)
}

fn aip(g: u32) -> Attr {
    attr(kfd::ATTR_ACCESS_IN_PLACE, g)
}

fn no(g: u32) -> Attr {
    attr(NO_ACCESS, g)
}

/// The deregistration's revoke: NO_ACCESS, COHERENT and EXT_COHERENT cleared.
fn revoke() -> [Attr; 3] {
    [
        no(G),
        attr(kfd::ATTR_CLR_FLAGS, kfd::FLAG_COHERENT),
        attr(kfd::ATTR_CLR_FLAGS, kfd::FLAG_EXT_COHERENT),
    ]
}

fn fine() -> Vec<Attr> {
    vec![
        attr(kfd::ATTR_SET_FLAGS, kfd::FLAG_COHERENT),
        attr(kfd::ATTR_CLR_FLAGS, kfd::FLAG_EXT_COHERENT),
    ]
}

/// Builds events on one clock, fed in completion order.
struct Trace {
    events: Vec<Event>,
    now: f64,
}

impl Trace {
    fn new() -> Self {
        let mut t = Trace {
            events: Vec::new(),
            now: 1000.0,
        };
        t.push(
            1,
            Kind::ProcessInfo(ProcessInfo {
                ppid: None,
                exe: None,
                page_size: PAGE,
            }),
            1e-5,
            None,
        );
        t
    }

    fn push(&mut self, tid: u32, kind: Kind, dur: f64, at: Option<f64>) -> f64 {
        let time = at.unwrap_or(self.now);
        let n = self.events.len() as u64;
        let h = Header {
            line: n + 1,
            seq: n,
            pid: Some(42),
            tid: Some(tid),
            time: Some(time),
            dur: Some(dur),
            ret: Some(0),
            ..Header::default()
        };
        self.events.push(Event::new(h, kind));
        if at.is_none() {
            self.now = time + dur + 1e-5;
        }
        time
    }

    pub(super) fn svm(&mut self, tid: u32, start: u64, size: u64, attrs: &[Attr]) {
        let list = attrs
            .iter()
            .map(|a| Value::List(vec![Value::Int(a.ty.into()), Value::Int(a.value.into())]))
            .collect();
        let arg = Value::Struct(vec![
            (Cow::Borrowed("start_addr"), Value::UInt(start)),
            (Cow::Borrowed("size"), Value::Int(size as i64)),
            (Cow::Borrowed("op"), Value::Int(0)),
            (Cow::Borrowed("nattr"), Value::Int(attrs.len() as i64)),
            (Cow::Borrowed("attrs"), Value::List(list)),
        ]);
        let io = Ioctl {
            fd: 3,
            path: None,
            request: None,
            dir: None,
            type_: Some(kfd::TYPE_KFD),
            nr: Some(0x20),
            size: None,
            ioctl: Some("AMDKFD_IOC_SVM"),
            arg: Some(arg),
            out: None,
        };
        self.push(tid, Kind::Ioctl(io), 1e-5, None);
    }

    /// An intent call around what `body` issues.
    fn intent(
        &mut self,
        tid: u32,
        name: &'static str,
        args: Vec<(&'static str, u64)>,
        body: impl FnOnce(&mut Self),
    ) {
        let t0 = self.now;
        self.now += 1e-5;
        body(self);
        self.now += 1e-5;
        let t1 = self.now;
        call_at(self, tid, name, args, t0, t1);
    }

    fn run(mut self) -> SvmModel {
        let mut m = SvmModel::new(Options {
            clean_start: true,
            ..Options::default()
        });
        self.events.sort_by(|a, b| {
            (a.h.end().unwrap(), a.h.seq)
                .partial_cmp(&(b.h.end().unwrap(), b.h.seq))
                .unwrap()
        });
        for ev in &self.events {
            m.feed(ev);
        }
        m.finish();
        m
    }
}

fn rules(m: &SvmModel) -> Vec<(Rule, Option<String>)> {
    let mut v: Vec<_> = m
        .findings
        .iter()
        .map(|f| (f.rule, f.cause.clone()))
        .collect();
    v.sort();
    v
}

#[test]
fn effect_kinds() {
    assert_eq!(effect_of(&[aip(G)]).kind, EffKind::Registration);
    let reg = [vec![aip(G)], fine()].concat();
    assert_eq!(effect_of(&reg).kind, EffKind::Registration);
    let rev = effect_of(&[no(G), attr(kfd::ATTR_CLR_FLAGS, kfd::FLAG_COHERENT)]);
    assert_eq!(rev.kind, EffKind::Revoke);
    assert_eq!(
        (rev.taken.as_slice(), rev.cleared),
        (&[G][..], kfd::FLAG_COHERENT)
    );
    assert_eq!(
        effect_of(&[attr(kfd::ATTR_ACCESS, G)]).kind,
        EffKind::Application
    );
    assert_eq!(
        effect_of(&[attr(kfd::ATTR_CLR_FLAGS, 2)]).kind,
        EffKind::Registration
    );
    assert_eq!(effect_of(&[]).kind, EffKind::None);
    // later entries win
    let e = effect_of(&[no(G), attr(kfd::ATTR_ACCESS, G)]);
    assert_eq!((e.taken.len(), e.granted.as_slice()), (0, &[G][..]));
}

#[test]
fn shapes_read_like_python() {
    assert_eq!(shape_of(&[]), "none");
    assert_eq!(
        shape_of(&[no(1), no(2), attr(kfd::ATTR_CLR_FLAGS, 2)]),
        "NO_ACCESS*2+CLR_FLAGS(COHERENT)"
    );
    assert_eq!(shape_of(&[attr(0x99, 1)]), "0x99");
}

fn c1(buggy: bool, explicit: bool) -> SvmModel {
    let mut t = Trace::new();
    let reg = [fine(), vec![aip(G)]];
    let lock = |t: &mut Trace, tid: u32, ptr: u64, size: u64| {
        let body = |t: &mut Trace| {
            t.svm(tid, ptr, size, &reg[0]);
            t.svm(tid, ptr, size, &reg[1]);
        };
        if explicit {
            t.intent(
                tid,
                "hsa_amd_memory_lock",
                vec![("host_ptr", ptr), ("size", size)],
                body,
            );
        } else {
            body(t);
        }
    };
    lock(&mut t, 1, X, 0x8000);
    lock(&mut t, 2, X + 0x2000, 0x1000);
    lock(&mut t, 1, X + 0x3000, 0x1000);
    let revoke = revoke();
    let body = |t: &mut Trace| {
        if buggy {
            t.svm(1, X + 0x3000, 0x1000, &revoke);
        }
    };
    if explicit {
        t.intent(
            1,
            "hsa_amd_memory_unlock",
            vec![("host_ptr", X + 0x3000)],
            body,
        );
    } else {
        body(&mut t);
    }
    t.run()
}

#[test]
fn enclosing_range_over_revoke() {
    for explicit in [false, true] {
        let m = c1(true, explicit);
        assert_eq!(
            rules(&m),
            vec![
                (Rule::SvmOverRevoke, Some("enclosing-range".into())),
                (Rule::SvmCoherencyDowngrade, Some("enclosing-range".into())),
            ]
        );
        let over = m
            .findings
            .iter()
            .find(|f| f.rule == Rule::SvmOverRevoke)
            .unwrap();
        assert_eq!(over.subject["start"], format!("{:#x}", X + 0x3000));
        assert_eq!(over.subject["end"], format!("{:#x}", X + 0x4000));
        assert_eq!(over.details["victim"]["start"], format!("{X:#x}"));
        assert_eq!(over.evidence[0].role, "revoking call");
        let kind = if explicit { "explicit" } else { "registration" };
        assert_eq!(over.details["victim"]["kind"], kind);
        assert!(c1(false, explicit).findings.is_empty());
    }
}

#[test]
fn identical_findings_are_numbered() {
    // two identical revokes of one neighbour's shared page: two findings,
    // one fingerprint's ingredients, so occurrence=1 and occurrence=2
    let mut t = Trace::new();
    t.svm(1, X, 0x8000, &[aip(G)]);
    t.svm(1, X + 0x3000, 0x1000, &[aip(G)]);
    t.svm(1, X + 0x3000, 0x1000, &[no(G)]);
    t.svm(1, X + 0x3000, 0x1000, &[aip(G)]);
    t.svm(1, X + 0x3000, 0x1000, &[no(G)]);
    let m = t.run();
    let keys: Vec<&String> = m.findings.iter().filter_map(|f| f.key.last()).collect();
    assert!(keys.iter().any(|k| *k == "occurrence=1"), "{keys:?}");
    assert!(keys.iter().any(|k| *k == "occurrence=2"), "{keys:?}");
}

#[test]
fn unmap_of_registered_pages_and_mremap_shrink() {
    let mut t = Trace::new();
    t.svm(1, X, 0x4000, &[aip(G)]);
    let munmap = Kind::Munmap(Munmap {
        addr: X,
        length: 0x1000,
    });
    t.push(1, munmap, 1e-5, None);
    // shrink in place to 0x1800 bytes: the partial page stays mapped
    let mremap = Kind::Mremap(Mremap {
        old_addr: X + 0x1000,
        old_len: 0x3000,
        new_len: 0x1800,
        flags: 0,
        new_addr: None,
    });
    t.push(1, mremap, 1e-5, None);
    t.events.last_mut().unwrap().h.ret = Some((X + 0x1000) as i64);
    let m = t.run();
    let unmaps: Vec<_> = m
        .findings
        .iter()
        .filter(|f| f.rule == Rule::SvmUnmapRegistered)
        .collect();
    assert_eq!(unmaps.len(), 2);
    assert_eq!(unmaps[0].details["pages"], 1);
    assert_eq!(unmaps[1].details["pages"], 1); // page 3 only: page 2 is kept
    assert_eq!(unmaps[1].severity, Some(Severity::Note));
}

#[test]
fn bad_ranges() {
    let mut t = Trace::new();
    t.svm(1, X + 0x10, 0x1000, &[aip(G)]);
    t.svm(1, X, 0, &[aip(G)]);
    let m = t.run();
    let msgs: Vec<&str> = m.findings.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(
        msgs,
        vec![
            format!(
                "SET_ATTR of {:#x} size 0x1000 unaligned start (the kernel answers EINVAL)",
                X + 0x10
            ),
            format!("SET_ATTR of {X:#x} size 0x0 zero size (the kernel answers EINVAL)"),
        ]
    );
    assert_eq!(
        m.findings[0].key,
        vec!["unaligned start", "ACCESS_IN_PLACE"]
    );
}

#[test]
fn unmap_resets_pages_and_ends_claims() {
    let mut t = Trace::new();
    let mut grant = fine();
    grant.push(aip(G));
    t.svm(1, X, 0x2000, &grant);
    let munmap = Kind::Munmap(Munmap {
        addr: X,
        length: 0x2000,
    });
    t.push(1, munmap, 1e-5, None);
    // nothing left to hurt: the revoke only makes a new range
    t.svm(
        1,
        X,
        0x2000,
        &[no(G), attr(kfd::ATTR_CLR_FLAGS, kfd::FLAG_COHERENT)],
    );
    let m = t.run();
    let rules: Vec<_> = m.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::SvmUnmapRegistered]);
    let (_, p) = &m.procs[&Some(42)];
    assert_eq!(p.map.len(), 1);
    assert!(p.cover.is_empty(), "no claim is left on the pages");
}

#[test]
fn a_range_set_again_and_again_keeps_its_current_effect() {
    // 2,000 SET_ATTRs of two shapes on one range: one claim whose grants
    // are the distinct effects, not the history (work per call bounded by
    // live state; issue 37's 100k SET_ATTRs took 112 s)
    let mut t = Trace::new();
    let fine_ip = [fine(), vec![aip(G)]].concat();
    for i in 0..2000 {
        if i % 2 == 0 {
            t.svm(1, X, 4 * PAGE, &fine_ip);
        } else {
            t.svm(1, X, 4 * PAGE, &[aip(G)]);
        }
    }
    let m = t.run();
    let (_, p) = m.procs.values().next().expect("one process");
    let live = p.live();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].b().grants.len(), 2);
    assert_eq!(m.counts().set_attr, 2000);
}

/// Locks and unlocks of ever-new pointers leave nothing per pointer behind
/// (memory follows the live locks, SPEC 7): a claim unlocked is forgotten
/// at its unlock, not at the next unlock of its pointer (which never comes
/// when every pointer is new: +13 MB on the 1M-line benchmark log).
#[test]
fn unlocked_pointers_are_forgotten() {
    let mut t = Trace::new();
    let revoke = revoke();
    let lock = |t: &mut Trace, ptr: u64| {
        let args = vec![("host_ptr", ptr), ("size", 0x1000)];
        t.intent(1, "hsa_amd_memory_lock", args, |t| {
            t.svm(1, ptr, 0x1000, &fine());
            t.svm(1, ptr, 0x1000, &[aip(G)]);
        });
    };
    for i in 0..50u64 {
        let ptr = X + i * 0x10000;
        lock(&mut t, ptr);
        t.intent(1, "hsa_amd_memory_unlock", vec![("host_ptr", ptr)], |t| {
            t.svm(1, ptr, 0x1000, &revoke)
        });
    }
    lock(&mut t, X + 0x800000); // still locked at the end
    let m = t.run();
    let kept: Vec<usize> = m.procs.values().map(|(_, p)| p.locks.len()).collect();
    assert_eq!(kept, vec![1]);
    assert!(m.findings.is_empty());
}

/// The severities of the model's svm-over-revoke findings (None: the
/// rule's own, error).
fn over_revokes(m: &SvmModel) -> Vec<Severity> {
    m.findings
        .iter()
        .filter(|f| f.rule == Rule::SvmOverRevoke)
        .map(|f| f.severity.unwrap_or(Severity::Error))
        .collect()
}

/// Register and map `n` pages from `s` on thread `tid` (#6699's two calls).
fn reg(t: &mut Trace, tid: u32, s: u64, n: u64) {
    t.svm(tid, s, n * PAGE, &fine());
    t.svm(tid, s, n * PAGE, &[aip(G)]);
}

/// An intent call's line at `t0` lasting to `t1` (pushed where it stands:
/// `run` feeds in completion order).
fn call_at(
    t: &mut Trace,
    tid: u32,
    name: &'static str,
    args: Vec<(&'static str, u64)>,
    t0: f64,
    t1: f64,
) {
    let args = args
        .into_iter()
        .map(|(k, v)| (Cow::Borrowed(k), Value::UInt(v)))
        .collect();
    let ev = Kind::Intent(Box::new(Intent {
        args,
        outs: Vec::new(),
    }));
    t.push(tid, ev, t1 - t0, Some(t0));
    t.events.last_mut().unwrap().name = Cow::Borrowed(name);
}

/// A lock whose window registers and maps [ptr, ptr + size) at `t0`.
fn lock_at(t: &mut Trace, tid: u32, ptr: u64, size: u64, t0: f64) {
    t.now = t0 + 1e-6;
    t.svm(tid, ptr, size, &fine());
    t.svm(tid, ptr, size, &[aip(G)]);
    call_at(
        t,
        tid,
        "hsa_amd_memory_lock",
        vec![("host_ptr", ptr), ("size", size)],
        t0,
        t.now,
    );
}

/// A revoke whose unlock's line (written at its return) comes later is
/// given, until then, to the smallest claim containing it; when two do
/// (same size), the guess may be the wrong one, and the unlock gives that
/// claim back.  What other revokes took from it meanwhile, while the model
/// held it released, is then a live claim's loss, reported like any other.
#[test]
fn a_claim_given_back_by_an_unlock_keeps_what_was_taken_meanwhile() {
    let revoke = revoke();
    let p = |n: u64| X + n * PAGE;
    let t0 = 1000.0;
    let mut t = Trace::new();
    // tid 3 holds C = pages [8, 16) and begins to unlock it
    lock_at(&mut t, 3, p(8), 8 * PAGE, t0);
    // tid 1 holds B = [5, 22) and begins to unlock it
    lock_at(&mut t, 1, p(5), 17 * PAGE, t0 + 2e-4);
    // tid 2 locks V = [0, 17), as large as B and newer: the victim
    lock_at(&mut t, 2, p(0), 17 * PAGE, t0 + 4e-4);
    // B's first piece [5, 9): B and V both contain it, V is guessed
    t.now = t0 + 6e-4;
    t.svm(1, p(5), 4 * PAGE, &revoke);
    // C's revoke, its exact range: V is held released, not live, now
    t.now = t0 + 7e-4;
    t.svm(3, p(8), 8 * PAGE, &revoke);
    call_at(
        &mut t,
        3,
        "hsa_amd_memory_unlock",
        vec![("host_ptr", p(8))],
        t0 + 1e-4,
        t0 + 1e-3,
    );
    call_at(
        &mut t,
        1,
        "hsa_amd_memory_unlock",
        vec![("host_ptr", p(5))],
        t0 + 3e-4,
        t0 + 1.1e-3,
    );
    let m = t.run();
    let on_v = |at: f64| -> Vec<(String, String, Severity)> {
        m.findings
            .iter()
            .filter(|f| {
                f.rule == Rule::SvmOverRevoke
                    && f.details["victim"]["start"] == format!("{:#x}", p(0))
                    && f.event
                        .as_ref()
                        .and_then(|e| e.h.time)
                        .is_some_and(|x| (x - at).abs() < 1e-7)
            })
            .map(|f| {
                (
                    f.subject["start"].as_str().unwrap().to_string(),
                    f.subject["end"].as_str().unwrap().to_string(),
                    // (None: the rule's own, error)
                    f.severity.unwrap_or(Severity::Error),
                )
            })
            .collect()
    };
    let hex = |x: u64| format!("{x:#x}");
    // B's piece took [5, 9) from V, C's revoke the rest of C's pages
    assert_eq!(
        on_v(t0 + 6e-4),
        vec![(hex(p(5)), hex(p(9)), Severity::Error)]
    );
    assert_eq!(
        on_v(t0 + 7e-4),
        vec![(hex(p(9)), hex(p(16)), Severity::Error)]
    );
}

/// Two threads lock one pointer.  The first one's unlock begins while it is
/// the only holder (the runtime drops the entry and computes its revoke),
/// the second one's lock comes after (a new entry, registered and mapped
/// again) and its unlock too, both lines before the first unlock's, which
/// comes at its return: the first revoke, landing while the second lock
/// held the pages, took them from a live claim.
#[test]
fn a_late_lock_unlocked_before_the_first_unlock_line_is_still_a_new_claim() {
    let revoke = revoke();
    let size = 17 * PAGE;
    let t0 = 1000.0;
    for second_unlock_first in [true, false] {
        let mut t = Trace::new();
        lock_at(&mut t, 1, X, size, t0);
        // tid 1's unlock begins at t0 + 1e-4; tid 2 locks at t0 + 2e-4
        lock_at(&mut t, 2, X, size, t0 + 2e-4);
        // tid 1's revoke lands at t0 + 3e-4, tid 2's at t0 + 5e-4 (its
        // unlock began at t0 + 4e-4: the revoke of tid 1 came first)
        t.now = t0 + 3e-4;
        t.svm(1, X, size, &revoke);
        t.now = t0 + 5e-4;
        t.svm(2, X, size, &revoke);
        let (u2, u1) = if second_unlock_first {
            (t0 + 6e-4, t0 + 7e-4)
        } else {
            (t0 + 7e-4, t0 + 6e-4)
        };
        call_at(
            &mut t,
            2,
            "hsa_amd_memory_unlock",
            vec![("host_ptr", X)],
            t0 + 4e-4,
            u2,
        );
        call_at(
            &mut t,
            1,
            "hsa_amd_memory_unlock",
            vec![("host_ptr", X)],
            t0 + 1e-4,
            u1,
        );
        let m = t.run();
        let over: Vec<(f64, Severity)> = m
            .findings
            .iter()
            .filter(|f| f.rule == Rule::SvmOverRevoke)
            .map(|f| {
                (
                    f.event.as_ref().and_then(|e| e.h.time).unwrap(),
                    f.severity.unwrap_or(Severity::Error),
                )
            })
            .collect();
        assert_eq!(over.len(), 1, "{second_unlock_first}: {over:?}");
        assert!((over[0].0 - (t0 + 3e-4)).abs() < 1e-7, "{over:?}");
        assert_eq!(over[0].1, Severity::Error);
    }
}

/// A range registered again while its claim lived shows a holder leaving
/// without a revoke (a refcount, or a revoke its neighbours covered
/// whole): a revoke taking the range's pages later does not prove a holder
/// still used them (a note), where a range registered once gives an error.
/// Under a runtime that grows one entry per first page (a release revoke
/// reaching past what it released shows it), the same for a range whose
/// first page begins another live registration: the entry they share
/// outlives this one's holder.
#[test]
fn a_range_registered_twice_under_a_growing_runtime_is_not_proven_live() {
    let revoke = revoke();
    let y = X + 0x100 * PAGE;
    let severity = |twice: bool, grown: bool, partner: bool| -> Vec<Severity> {
        let mut t = Trace::new();
        if grown {
            // an entry of one page whose release revokes three
            reg(&mut t, 3, y, 1);
            t.svm(3, y, 3 * PAGE, &revoke);
        }
        reg(&mut t, 1, X, 4);
        if twice {
            reg(&mut t, 2, X, 4);
        }
        if partner {
            // another range of the same first page: the same entry
            reg(&mut t, 5, X, 1);
        }
        reg(&mut t, 4, X + 2 * PAGE, 1);
        t.svm(4, X + 2 * PAGE, PAGE, &revoke);
        over_revokes(&t.run())
    };
    assert_eq!(severity(true, true, false), vec![Severity::Note]);
    assert_eq!(severity(false, true, false), vec![Severity::Error]);
    assert_eq!(severity(true, false, false), vec![Severity::Note]);
    // registered once, but another range of its first page holds the entry
    assert_eq!(severity(false, true, true), vec![Severity::Note]);
    assert_eq!(severity(false, false, true), vec![Severity::Error]);
}

/// A runtime that subtracts the registrations it still counts issues
/// nothing for a deregistration its neighbours cover whole.  A registration
/// that others come to cover whole may so have ended without a trace, and
/// its deregistration may have begun (the runtime waiting for its lock)
/// any time after it was registered: a revoke taking its pages before the
/// cover came does not prove it live (a note).  Without the cover, an error.
#[test]
fn a_registration_others_came_to_cover_whole_may_have_ended_before() {
    let revoke = revoke();
    let severity = |covered: bool| -> Vec<Severity> {
        let mut t = Trace::new();
        reg(&mut t, 1, X, 4);
        reg(&mut t, 2, X + 3 * PAGE, 3);
        t.svm(1, X, 4 * PAGE, &revoke);
        if covered {
            reg(&mut t, 3, X + 2 * PAGE, 6);
        }
        over_revokes(&t.run())
    };
    assert_eq!(severity(false), vec![Severity::Error]);
    assert_eq!(severity(true), vec![Severity::Note]);
}

/// pin17's race: main (tid 1) registers A; thread 3 registers B, which
/// shares A's last page; thread 2's revoke of A (computed before B came,
/// issued late) takes B's first page; main releases B afterwards.  Main was
/// quiet since A's map, so its release of B may have begun before the
/// revoke landed: a note.  A `pthread_join` line (the capture logs the
/// program's joins) shows main in the program after the joined threads'
/// calls had returned: its release began after the revoke, an error.  A
/// failed join shows nothing.
#[test]
fn a_join_shows_a_release_began_after_the_joined_threads_calls() {
    let revoke = revoke();
    let b = X + 16 * PAGE;
    let severity = |join: Option<i64>| -> Vec<Severity> {
        let mut t = Trace::new();
        reg(&mut t, 1, X, 17);
        reg(&mut t, 3, b, 17);
        t.svm(2, X, 17 * PAGE, &revoke);
        if let Some(ret) = join {
            let at = t.push(1, Kind::Syscall(Default::default()), 1e-5, None);
            let ev = t.events.last_mut().unwrap();
            assert_eq!(ev.h.time, Some(at));
            ev.name = Cow::Borrowed("pthread_join");
            ev.h.ret = Some(ret);
        }
        t.svm(1, b, 17 * PAGE, &revoke);
        over_revokes(&t.run())
    };
    assert_eq!(severity(None), vec![Severity::Note]);
    assert_eq!(severity(Some(0)), vec![Severity::Error]);
    assert_eq!(severity(Some(3)), vec![Severity::Note]);
}

/// A revoke inside two registrations is given to the smaller one (SPEC
/// 4.3).  When it is not that claim's exact range it is a range minus what
/// others cover, and the larger one, made on the revoking thread, may as
/// well be the one it releases (its holder's own deregistration, the
/// smaller claim another thread's): not a proven victim, a note.  From a
/// third thread, the larger one stays a victim.
#[test]
fn a_subtracted_revoke_inside_its_own_threads_registration_may_be_its_release() {
    let revoke = revoke();
    let severity = |by: u32| -> Vec<Severity> {
        let mut t = Trace::new();
        reg(&mut t, 1, X + 3 * PAGE, 9);
        reg(&mut t, 2, X, 8);
        t.svm(by, X + 3 * PAGE, 4 * PAGE, &revoke);
        over_revokes(&t.run())
    };
    assert_eq!(severity(1), vec![Severity::Note]);
    assert_eq!(severity(3), vec![Severity::Error]);
}
