//! dma-buf bookkeeping through the handle model that drives it: one
//! dmabuf-reexport per buffer, fd-held-open for an export kept after its
//! last use, and the linear peak of the fd-per-handle design.

use crate::events::{Event, FdSnapshot, Kind, When};
use crate::findings::Finding;
use crate::models::common::Names;
use crate::models::fds::FdModel;
use crate::models::handles::{HandleModel, Options};
use crate::models::testkit::T;
use crate::rules::{Rule, Severity};
use serde_json::json;

/// (the fd model's findings, the handle model's) after the events and the
/// trace's end.
fn replay(evs: &[Event]) -> (Vec<Finding>, Vec<Finding>) {
    let mut m = HandleModel::new(
        FdModel::new(None, false, Names::new(vec!["h.log".into()])),
        Options::default(),
    );
    for ev in evs {
        m.feed(ev);
    }
    m.finish();
    let fds = m.fds.findings().cloned().collect();
    (fds, m.findings().to_vec())
}

fn severity(f: &Finding) -> Severity {
    f.severity.unwrap_or(f.rule.severity())
}

/// The exit snapshot of the fds in `open` and the process's end.
fn exit(t: &mut T, open: &[i32]) -> [Event; 2] {
    let fds = open.iter().map(|&fd| (fd, "x".into())).collect();
    let mut snap = Event::new(
        t.h(None),
        Kind::FdSnapshot(FdSnapshot {
            when: When::Exit,
            fds,
        }),
    );
    snap.name = "fd_snapshot".into();
    [snap, t.exit()]
}

#[test]
fn a_buffer_exported_once_per_agent_is_one_reexport_note() {
    // VMM V0: each chunk is exported, imported and closed once per agent
    let mut t = T(0);
    let mut evs = vec![t.open(3, "/dev/kfd")];
    let renders = [4, 5, 6];
    for (i, r) in renders.iter().enumerate() {
        evs.push(t.open(*r, &format!("/dev/dri/renderD{}", 128 + i)));
    }
    for chunk in 0..2 {
        let h = 0x66a4_0000_0100 + chunk;
        evs.push(t.alloc(3, h));
        for &r in &renders {
            evs.push(t.export(3, h, 7));
            evs.push(t.fd_to_handle(r, 7, 0x40 + chunk));
            evs.push(t.close(7));
        }
    }
    evs.extend(exit(&mut t, &[0, 1, 2, 3, 4, 5, 6]));
    let (fds, handles) = replay(&evs);
    assert!(fds.is_empty(), "{fds:?}");
    let rules: Vec<Rule> = handles.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::DmabufReexport, Rule::DmabufReexport]);
    for f in &handles {
        assert_eq!(severity(f), Severity::Note);
        assert!(f.message.contains("3 times"), "{}", f.message);
        assert_eq!(f.subject["kind"], "handle");
        assert!(
            f.subject["handle"]
                .as_str()
                .unwrap()
                .starts_with("0x66a4000001"),
            "{:?}",
            f.subject
        );
        assert_eq!(f.details["exports"], 3);
        let roles: Vec<&str> = f.evidence.iter().map(|e| &*e.role).collect();
        assert_eq!(roles, ["first export", "export #3", "buffer created by"]);
    }
    // one finding per buffer, and the two alike (one fingerprint)
    assert_eq!(handles[0].key, handles[1].key);
    assert_eq!(
        handles[0].key,
        ["AMDKFD_IOC_EXPORT_DMABUF", "AMDKFD_IOC_EXPORT_DMABUF"]
    );
}

#[test]
fn exports_past_the_threshold_update_the_one_finding() {
    let mut t = T(0);
    let mut evs = vec![t.open(3, "/dev/kfd"), t.alloc(3, 0x100)];
    for _ in 0..5 {
        evs.push(t.export(3, 0x100, 4));
        evs.push(t.close(4));
    }
    let (_, handles) = replay(&evs);
    assert_eq!(handles.len(), 1);
    assert_eq!(handles[0].details["exports"], 5);
    assert!(
        handles[0].message.contains("5 times (threshold 3)"),
        "{}",
        handles[0].message
    );
}

#[test]
fn an_export_held_across_allocations_is_held_open_short_lived_ones_are_not() {
    let mut t = T(0);
    let mut evs = vec![
        t.open(3, "/dev/kfd"),
        t.alloc(3, 0x100),
        t.export(3, 0x100, 4),
    ];
    for i in 0..10 {
        evs.push(t.alloc(3, 0x200 + i));
        // exported and closed right away: fine
        evs.push(t.export(3, 0x200 + i, 5));
        evs.push(t.close(5));
    }
    evs.push(t.close(4));
    evs.extend(exit(&mut t, &[0, 1, 2, 3]));
    let (fds, handles) = replay(&evs);
    assert!(fds.is_empty(), "{fds:?}");
    let [f] = &handles[..] else {
        panic!("{handles:?}")
    };
    assert_eq!((f.rule, severity(f)), (Rule::FdHeldOpen, Severity::Note));
    assert_eq!(f.subject["fd"], 4);
    assert!(f.message.contains("10 allocation(s)"), "{}", f.message);
    assert_eq!(f.details["allocations_since_use"], 10);
    assert_eq!(f.key, ["held", "AMDKFD_IOC_EXPORT_DMABUF"]);
}

#[test]
fn at_most_five_held_exports_are_reported_and_the_peak_counts_the_rest() {
    // 40 buffers, each keeping its export open past 8 more allocations
    let mut t = T(0);
    let mut evs = vec![t.open(3, "/dev/kfd")];
    for i in 0..40 {
        evs.push(t.alloc(3, 0x1000 + i));
        evs.push(t.export(3, 0x1000 + i, 4 + i));
    }
    let open: Vec<i32> = (0..44).collect();
    evs.extend(exit(&mut t, &open));
    let (_, handles) = replay(&evs);
    let held: Vec<&Finding> = handles
        .iter()
        .filter(|f| f.subject.get("kind") == Some(&json!("fd")))
        .collect();
    assert_eq!(held.len(), 5);
    assert!(held.iter().all(|f| f.rule == Rule::FdHeldOpen));
    let peak: Vec<&Finding> = handles
        .iter()
        .filter(|f| f.subject.get("kind") == Some(&json!("process")))
        .collect();
    let [p] = &peak[..] else {
        panic!("{handles:?}")
    };
    assert_eq!(p.details["peak"], 40);
    assert_eq!(p.details["allocations"], 40);
    assert_eq!(p.details["fds_per_allocation"], 1.0);
    // held at exit: the 32 older than 8 allocations, 5 of them reported
    assert_eq!(p.details["held_open"], 32);
    assert!(
        p.message
            .contains("32 fds were held open long after their last use (5 reported"),
        "{}",
        p.message
    );
}

#[test]
fn the_fd_per_handle_design_peaks_linearly_until_the_table_is_full() {
    // VMM V2's handle_create: export, import, close, then keep a re-exported
    // fd: with 0-2, kfd, render and four others, 1015 numbers are left
    // under RLIMIT_NOFILE 1024
    let mut t = T(0);
    let mut evs = vec![t.open(3, "/dev/kfd"), t.open(4, "/dev/dri/renderD128")];
    for fd in 5..9 {
        evs.push(t.open(fd, "/etc/a"));
    }
    for i in 0..1015 {
        // the lowest free number
        let free = 9 + i;
        let (h, g) = (0x66a4_0000_0000 + i, 0x10 + i);
        evs.push(t.alloc(3, h));
        evs.push(t.export(3, h, free));
        evs.push(t.fd_to_handle(4, free, g));
        evs.push(t.close(free as i32));
        evs.push(t.prime_to_fd(4, g, free));
    }
    evs.push(t.alloc(3, 0x66a4_0010_0000));
    let mut full = t.export(3, 0x66a4_0010_0000, 0);
    full.h.ret = Some(-1);
    full.h.err = Some("EMFILE".into());
    if let Kind::Ioctl(io) = &mut full.kind {
        io.out = None;
    }
    evs.push(full);
    let (fds, handles) = replay(&evs);
    let ex: Vec<&Finding> = fds
        .iter()
        .filter(|f| f.rule == Rule::FdExhaustion)
        .collect();
    let [ex] = &ex[..] else { panic!("{fds:?}") };
    assert_eq!(ex.details["open_by_kind"]["dmabuf"], 1015);
    let peak: Vec<&Finding> = handles
        .iter()
        .filter(|f| f.rule == Rule::FdHeldOpen && f.subject.get("kind") == Some(&json!("process")))
        .collect();
    let [p] = &peak[..] else {
        panic!("{handles:?}")
    };
    assert_eq!(p.details["peak"], 1015);
    let per = p.details["fds_per_allocation"].as_f64().unwrap();
    assert!((0.9..=1.1).contains(&per), "{per}");
    assert!(p.message.contains("fd-per-handle"), "{}", p.message);
    // the trace ends without an exit: the kept fds are leak notes
    let leaks: Vec<Severity> = fds
        .iter()
        .filter(|f| f.rule == Rule::FdLeak)
        .map(severity)
        .collect();
    assert!(!leaks.is_empty() && leaks.iter().all(|s| *s == Severity::Note));
}

#[test]
fn a_few_dmabufs_open_at_once_are_no_peak() {
    // below peak_min (32) open at once: no process finding however linear
    let mut t = T(0);
    let mut evs = vec![t.open(3, "/dev/kfd")];
    for i in 0..31 {
        evs.push(t.alloc(3, 0x1000 + i));
        evs.push(t.export(3, 0x1000 + i, 4 + i));
    }
    let (_, handles) = replay(&evs);
    assert!(
        handles
            .iter()
            .all(|f| f.subject.get("kind") != Some(&json!("process"))),
        "{handles:?}"
    );
}
