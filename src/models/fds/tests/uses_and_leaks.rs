//! Closes, uses, leaks and the fds ioctl structs create and name, on events
//! built directly (the tests tests/test_model_fds.py had for them).

use super::*;

/// `e` as process `pid`'s (its only thread).
fn of(mut e: Event, pid: u32) -> Event {
    (e.h.pid, e.h.tid) = (Some(pid), Some(pid));
    e
}

fn model() -> FdModel {
    FdModel::new(None, false, Names::new(vec!["t.log".into()]))
}

fn fed(evs: &[Event]) -> FdModel {
    let mut m = model();
    for e in evs {
        m.feed(e);
    }
    m
}

fn rules(f: &[Finding]) -> Vec<Rule> {
    f.iter().map(|f| f.rule).collect()
}

fn severity(f: &Finding) -> Severity {
    f.severity.unwrap_or(f.rule.severity())
}

fn subject(f: &Finding) -> serde_json::Value {
    serde_json::Value::Object(f.subject.clone())
}

/// Whether evidence of `f` is the event `e` (its line).
fn cites(f: &Finding, e: &Event) -> bool {
    f.evidence.iter().any(|x| x.event.h.line == e.h.line)
}

#[test]
fn a_bad_close_of_a_never_seen_fd_is_a_bad_fd() {
    let mut b = B(0);
    let f = run(&[b.close(7, Some("EBADF"))]);
    // never seen open is fd-bad-fd, not a double close; a note here,
    // since this trace did not start at execve
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!((f.rule, severity(f)), (Rule::FdBadFd, Severity::Note));
    assert!(
        f.message
            .starts_with("close(7) failed with EBADF: the trace never saw fd 7 open"),
        "{}",
        f.message
    );
    let mut b = B(0);
    let f = run(&[b.exec(), b.close(7, Some("EBADF"))]);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!((f.rule, severity(f)), (Rule::FdBadFd, Severity::Warning));
    assert!(
        f.message.contains("was never open in this process"),
        "{}",
        f.message
    );
}

#[test]
fn a_successful_close_of_a_number_thought_closed_is_no_finding() {
    // strace cannot see ioctl-created fds: the kernel's 0 proves it was
    // re-created
    let mut b = B(0);
    let mut again = b.close(7, None);
    if let Kind::Close(c) = &mut again.kind {
        c.path = Some("/dmabuf:".into());
    }
    let evs = [
        b.open(7, "/etc/hosts"),
        b.close(7, None),
        b.ioctl(3, "AMDKFD_IOC_EXPORT_DMABUF", &[], &[]),
        again,
    ];
    assert!(run(&evs).is_empty());
}

#[test]
fn an_eintr_close_releases_the_fd() {
    let mut b = B(0);
    let mut m = fed(&[b.open(3, "/etc/hosts"), b.close(3, Some("EINTR"))]);
    assert!(m.lookup(Some(100), 3).is_none());
    // the number is free again
    m.feed(&b.open(3, "/etc/hosts"));
    m.feed(&b.close(3, None));
    assert_eq!(m.findings().count(), 0);
    m.feed(&b.close(3, Some("EBADF")));
    assert_eq!(rules(&m.take_findings()), [Rule::FdDoubleClose]);
}

#[test]
fn an_ioctl_on_a_closed_fd_is_a_use_after_close() {
    let mut b = B(0);
    let open = b.open(3, "/dev/kfd");
    let c = b.close(3, None);
    let u = b.ioctl_err(3, "AMDKFD_IOC_GET_VERSION", &[], "EBADF");
    let f = run(&[open, c.clone(), u.clone()]);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!(f.rule, Rule::FdUseAfterClose);
    assert_eq!(f.line, Some(u.h.line));
    assert_eq!(f.subject["fd_kind"], "kfd");
    assert!(cites(f, &c));
}

#[test]
fn an_import_of_a_closed_dmabuf_blames_the_inner_fd() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/dev/kfd"),
        b.export(3, 0x20, 7),
        b.close(7, None),
        b.ioctl_err(
            3,
            "AMDKFD_IOC_IMPORT_DMABUF",
            &[("dmabuf_fd", 7), ("gpu_id", 1), ("va_addr", 0)],
            "EBADF",
        ),
    ];
    let f = run(&evs);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!(
        subject(f),
        serde_json::json!({"kind": "fd", "fd": 7, "fd_kind": "dmabuf"})
    );
    assert!(
        f.message.contains("AMDKFD_IOC_EXPORT_DMABUF"),
        "{}",
        f.message
    );
}

#[test]
fn acquire_vm_uses_the_render_fd_it_names() {
    // ACQUIRE_VM names a render node inside its struct: a closed one is the
    // bad fd, not /dev/kfd; an open one is used (its last use moves)
    let vm = [("drm_fd", 4), ("gpu_id", 0x1A2B)];
    let mut b = B(0);
    let acq = b.ioctl(3, "AMDKFD_IOC_ACQUIRE_VM", &vm, &[]);
    let m = fed(&[
        b.open(3, "/dev/kfd"),
        b.open(4, "/dev/dri/renderD128"),
        acq.clone(),
    ]);
    assert_eq!(m.findings().count(), 0);
    let used = m.lookup(Some(100), 4).and_then(|s| s.last_use.as_ref());
    assert_eq!(used.map(|e| e.h.line), Some(acq.h.line));
    let evs = [
        b.open(3, "/dev/kfd"),
        b.open(4, "/dev/dri/renderD128"),
        b.close(4, None),
        b.ioctl_err(3, "AMDKFD_IOC_ACQUIRE_VM", &vm, "EBADF"),
    ];
    let f = run(&evs);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!(f.rule, Rule::FdUseAfterClose);
    assert_eq!(
        subject(f),
        serde_json::json!({"kind": "fd", "fd": 4, "fd_kind": "drm-render"})
    );
}

#[test]
fn a_leak_at_exit_is_a_warning_and_device_fds_are_no_leaks() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/dev/kfd"),
        b.open(4, "/dev/dri/renderD128"),
        b.open(5, "/dev/accel/accel0"),
        b.export(3, 0x30, 6),
        b.exit(),
    ];
    let f = run(&evs);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!((f.rule, severity(f)), (Rule::FdLeak, Severity::Warning));
    assert_eq!(
        subject(f),
        serde_json::json!({"kind": "fd", "fd": 6, "fd_kind": "dmabuf"})
    );
    assert!(
        f.message.contains("AMDKFD_IOC_EXPORT_DMABUF"),
        "{}",
        f.message
    );
    // the trace merely ends: a note
    let mut b = B(0);
    let f = run(&[b.open(3, "/dev/kfd"), b.export(3, 0x30, 6)]);
    let [f] = &f[..] else { panic!("{f:?}") };
    assert_eq!((f.rule, severity(f)), (Rule::FdLeak, Severity::Note));
}

#[test]
fn the_exit_snapshot_is_authoritative() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/dev/kfd"),
        b.export(3, 0x30, 6),
        b.export(3, 0x31, 7),
        // fd 6 absent: closed by a call the hook could not see; 9 unknown
        // to the model
        b.snapshot(
            When::Exit,
            &[(3, "/dev/kfd"), (7, "/dmabuf:"), (9, "/dmabuf:")],
        ),
        b.exit(),
    ];
    let f = run(&evs);
    let leaks: Vec<(i64, Severity, bool)> = f
        .iter()
        .filter(|f| f.rule == Rule::FdLeak)
        .map(|f| {
            let unknown = f.message.contains("creator is not in the trace");
            (f.subject["fd"].as_i64().unwrap(), severity(f), unknown)
        })
        .collect();
    assert_eq!(
        leaks,
        [(7, Severity::Warning, false), (9, Severity::Note, true)]
    );
}

#[test]
fn sync_file_and_prime_fds_leak() {
    let mut b = B(0);
    let evs = [
        b.open(4, "/dev/dri/renderD128"),
        b.ioctl(
            4,
            "DRM_IOCTL_PRIME_HANDLE_TO_FD",
            &[("handle", 1), ("flags", 0)],
            &[("fd", 5)],
        ),
        b.ioctl(
            5,
            "DMA_BUF_IOCTL_EXPORT_SYNC_FILE",
            &[("flags", 1)],
            &[("fd", 6)],
        ),
        b.exit(),
    ];
    let mut kinds: Vec<String> = run(&evs)
        .iter()
        .map(|f| f.subject["fd_kind"].as_str().unwrap().to_owned())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["dmabuf", "sync_file"]);
}

#[test]
fn udmabuf_returns_its_fd_and_a_heap_allocation_names_it_in_the_struct() {
    let mut b = B(0);
    let mut create = b.ioctl(3, "UDMABUF_CREATE", &[("memfd", 4), ("flags", 1)], &[]);
    create.h.ret = Some(9);
    let m = fed(&[
        b.open(3, "/dev/udmabuf"),
        create,
        b.open(4, "/dev/dma_heap/system"),
        b.ioctl(
            4,
            "DMA_HEAP_IOCTL_ALLOC",
            &[("len", 4096), ("fd_flags", O_CLOEXEC)],
            &[("fd", 10)],
        ),
    ]);
    let s = m.lookup(Some(100), 9).expect("fd 9");
    assert_eq!(s.kind, FdKind::Dmabuf);
    assert!(s.cloexec);
    assert_eq!(
        m.lookup(Some(100), 10).unwrap().origin,
        "DMA_HEAP_IOCTL_ALLOC"
    );
}

#[test]
fn an_export_strace_could_not_decode_is_no_double_close() {
    // strace shows no struct: the export's fd appears only at its close
    let mut b = B(0);
    let evs = [
        b.open(3, "/dev/kfd"),
        b.open(7, "/etc/hosts"),
        b.close(7, None),
        b.ioctl(3, "AMDKFD_IOC_EXPORT_DMABUF", &[], &[]),
        b.close_range(7, 7),
    ];
    assert!(run(&evs).is_empty());
}

#[test]
fn close_range_cloexec_marks_then_exec_closes() {
    let mut b = B(0);
    let mut cloexec = b.close_range(4, 10);
    if let Kind::CloseRange(r) = &mut cloexec.kind {
        r.flags = 4; // CLOSE_RANGE_CLOEXEC
    }
    let mut m = fed(&[b.open(3, "/etc/hosts"), b.open(4, "/etc/hosts"), cloexec]);
    assert!(m.lookup(Some(100), 4).unwrap().cloexec && !m.lookup(Some(100), 3).unwrap().cloexec);
    m.feed(&b.exec());
    assert!(m.lookup(Some(100), 4).is_none() && m.lookup(Some(100), 3).is_some());
}

#[test]
fn close_range_unshare_copies_a_shared_table() {
    let mut b = B(0);
    let mut unshare = of(b.close_range(3, 10), 200);
    if let Kind::CloseRange(r) = &mut unshare.kind {
        r.flags = 2; // CLOSE_RANGE_UNSHARE
    }
    let m = fed(&[b.open(3, "/etc/hosts"), b.clone_(200, true), unshare]);
    assert!(m.lookup(Some(200), 3).is_none());
    assert!(m.lookup(Some(100), 3).is_some());
}
