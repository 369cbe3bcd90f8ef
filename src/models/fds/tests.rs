use super::*;
use crate::events::{Close, CloseRange, Exec, Exit, FdCreate, FdSnapshot, SetCloexec, When};
use crate::models::testkit;

const O_CLOEXEC: i64 = 0o2000000;

fn kp(p: &str) -> &'static str {
    kind_of_path(Some(p.as_bytes())).as_str()
}

/// kind_of_head's first-two-bytes dispatch names what the prefix tests
/// alone name, for every head around the prefixes (each prefix, its
/// every cut, a byte changed at each place, and unrelated heads).
#[test]
fn kind_of_head_is_its_prefix_tests() {
    fn by_prefix(p: &[u8]) -> FdKind {
        let has = |x: &[u8]| p.starts_with(x);
        if has(b"/dev/kfd") {
            FdKind::Kfd
        } else if has(b"/dev/dri/renderD") {
            FdKind::DrmRender
        } else if has(b"/dev/accel/") {
            FdKind::Accel
        } else if has(b"/dmabuf:") || has(b"anon_inode:dmabuf") || has(b"anon_inode:[dmabuf") {
            FdKind::Dmabuf
        } else if has(b"anon_inode:sync_file") || has(b"anon_inode:[sync_file") {
            FdKind::SyncFile
        } else {
            FdKind::Other
        }
    }
    let prefixes: [&[u8]; 9] = [
        b"/dev/kfd",
        b"/dev/dri/renderD128",
        b"/dev/accel/accel0",
        b"/dmabuf:x",
        b"anon_inode:dmabuf",
        b"anon_inode:[dmabuf]",
        b"anon_inode:sync_file",
        b"anon_inode:[sync_file]",
        b"/sys/class/kfd",
    ];
    let mut heads: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"/".to_vec(),
        b"a".to_vec(),
        b"socket:[1]".to_vec(),
    ];
    for p in prefixes {
        for cut in 0..=p.len() {
            heads.push(p[..cut].to_vec());
            for at in 0..cut {
                for b in [b'/', b'd', b'a', b'n', b'x'] {
                    let mut h = p[..cut].to_vec();
                    h[at] = b;
                    heads.push(h);
                }
            }
        }
    }
    for h in heads {
        assert_eq!(
            kind_of_head(&h),
            by_prefix(&h),
            "{:?}",
            String::from_utf8_lossy(&h)
        );
    }
}

#[test]
fn kind_of_path_is_tolerant() {
    assert_eq!(kp("/dmabuf:"), "dmabuf");
    assert_eq!(kp("/dmabuf:name (deleted)"), "dmabuf");
    assert_eq!(kp("anon_inode:dmabuf"), "dmabuf");
    assert_eq!(kp("anon_inode:sync_file"), "sync_file");
    assert_eq!(kp("/dev/kfd<char 238:0>"), "kfd");
    assert_eq!(kp("/dev/dri/renderD128"), "drm-render");
    assert_eq!(kp("/dev/accel/accel0"), "accel");
    assert_eq!(kp("/etc/hosts"), "other");
    assert_eq!(kind_of_path(None), FdKind::Unknown);
    assert_eq!(FdKind::Unknown.as_str(), "unknown");
}

struct B(u64);

impl B {
    fn h(&mut self, ret: Option<i64>, err: Option<&'static str>) -> Header {
        self.0 += 1;
        Header {
            line: self.0,
            seq: self.0,
            pid: Some(100),
            tid: Some(100),
            time: Some(1000.0 + self.0 as f64 * 0.001),
            ret,
            err: err.map(Cow::Borrowed),
            ..Default::default()
        }
    }

    fn open(&mut self, fd: i32, path: &str) -> Event {
        let k = FdCreate {
            origin: Cow::Borrowed("open"),
            fds: vec![fd],
            paths: vec![Some(path.into())],
            ..Default::default()
        };
        Event::new(self.h(Some(fd.into()), None), Kind::FdCreate(k))
    }

    fn close(&mut self, fd: i32, err: Option<&'static str>) -> Event {
        let ret = Some(if err.is_some() { -1 } else { 0 });
        Event::new(self.h(ret, err), Kind::Close(Close { fd, path: None }))
    }

    fn close_range(&mut self, first: u32, last: u32) -> Event {
        let k = CloseRange {
            first,
            last,
            flags: 0,
        };
        Event::new(self.h(Some(0), None), Kind::CloseRange(k))
    }

    fn ioctl(
        &mut self,
        fd: i32,
        name: &'static str,
        arg: &[(&'static str, i64)],
        out: &[(&'static str, i64)],
    ) -> Event {
        testkit::ioctl(self.h(Some(0), None), fd, name, arg, out)
    }

    /// An ioctl that failed with `err`.
    fn ioctl_err(
        &mut self,
        fd: i32,
        name: &'static str,
        arg: &[(&'static str, i64)],
        err: &'static str,
    ) -> Event {
        let mut e = self.ioctl(fd, name, arg, &[]);
        (e.h.ret, e.h.err) = (Some(-1), Some(Cow::Borrowed(err)));
        e
    }

    /// KFD buffer `handle` exported as dma-buf fd `fd`.
    fn export(&mut self, kfd_fd: i32, handle: i64, fd: i64) -> Event {
        self.ioctl(
            kfd_fd,
            "AMDKFD_IOC_EXPORT_DMABUF",
            &[("handle", handle), ("flags", O_CLOEXEC)],
            &[("dmabuf_fd", fd)],
        )
    }

    fn snapshot(&mut self, when: When, fds: &[(i32, &str)]) -> Event {
        let fds = fds.iter().map(|&(fd, p)| (fd, p.into())).collect();
        Event::new(
            self.h(None, None),
            Kind::FdSnapshot(FdSnapshot { when, fds }),
        )
    }

    fn exec(&mut self) -> Event {
        let k = Exec {
            path: Some("/bin/true".into()),
        };
        Event::new(self.h(Some(0), None), Kind::Exec(k))
    }

    fn clone_(&mut self, child: u32, share_files: bool) -> Event {
        let k = crate::events::Clone {
            child: Some(child),
            thread: false,
            share_files,
            flags: 0,
        };
        Event::new(self.h(Some(child.into()), None), Kind::Clone(k))
    }

    fn exit(&mut self) -> Event {
        let k = Exit {
            whole: true,
            status: Some(0),
            signal: None,
        };
        Event::new(self.h(None, None), Kind::Exit(k))
    }
}

fn run(evs: &[Event]) -> Vec<Finding> {
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in evs {
        m.feed(e);
    }
    m.finish();
    m.take_findings()
}

#[test]
fn calls_strace_made_up_change_and_use_nothing() {
    // strace -e inject=openat:retval=9: no fd 9 ever existed, so the
    // program's close of it fails; -e inject=close:retval=0 left fd 3
    // open for the close after it
    let injected = |mut e: Event| {
        e.h.injected = true;
        e
    };
    let mut b = B(0);
    let evs = [
        injected(b.open(9, "/etc/hostname")),
        b.close(9, Some("EBADF")),
        b.open(3, "/etc/hosts"),
        injected(b.close(3, None)),
        b.close(3, None),
        b.exit(),
    ];
    // what is left is the program's close of the fd strace told it it
    // had: a note that says so
    let f = run(&evs);
    let got: Vec<_> = f.iter().map(|f| (f.rule, f.severity, f.line)).collect();
    assert_eq!(got, [(Rule::FdBadFd, Some(Severity::Note), Some(2))]);
    assert!(
        f[0].message.contains("strace made that result up"),
        "{}",
        f[0].message
    );
    // a number a real call made since is judged as any other
    let mut b = B(0);
    let evs = [
        injected(b.open(9, "/etc/hostname")),
        b.open(9, "/etc/hosts"),
        b.close(9, None),
        b.close(9, Some("EBADF")),
    ];
    let f = run(&evs);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, Rule::FdDoubleClose);
    // (the same calls run by the kernel: double_close_names_the_first_close)
}

#[test]
fn f_setfd_failing_with_ebadf_is_a_probe() {
    // node at start: fcntl(N, F_SETFD, FD_CLOEXEC) for N = 3, 4, ...
    let setfd = |b: &mut B, fd: i32| {
        let k = SetCloexec { fd, cloexec: true };
        let mut e = Event::new(b.h(Some(-1), Some("EBADF")), Kind::SetCloexec(k));
        e.name = Cow::Borrowed("fcntl");
        e
    };
    let mut b = B(0);
    let evs = [
        b.open(3, "/usr/lib/libc.so.6"),
        b.close(3, None),
        setfd(&mut b, 3),
        setfd(&mut b, 4),
    ];
    assert!(run(&evs).is_empty());
}

#[test]
fn a_shell_saving_a_closed_fd_before_redirecting_onto_it_is_a_probe() {
    let dupfd = |b: &mut B, fd: i32| {
        let k = FdCreate {
            origin: Cow::Borrowed("dup"),
            src_fd: Some(fd),
            ..Default::default()
        };
        let mut e = Event::new(b.h(Some(-1), Some("EBADF")), Kind::FdCreate(k));
        e.name = Cow::Borrowed("fcntl");
        e
    };
    let dup2 = |b: &mut B, old: i32, new: i32| {
        let k = FdCreate {
            origin: Cow::Borrowed("dup"),
            fds: vec![new],
            paths: vec![None],
            src_fd: Some(old),
            replace: true,
            new_fd: Some(new),
            ..Default::default()
        };
        let mut e = Event::new(b.h(Some(new.into()), None), Kind::FdCreate(k));
        e.name = Cow::Borrowed("dup2");
        e
    };
    // fd 4 closed, then `exec 4>/dev/null` in dash
    let saved = |b: &mut B| {
        vec![
            b.open(4, "/etc/hosts"),
            b.close(4, None),
            b.open(3, "/dev/null"),
            dupfd(b, 4),
        ]
    };
    let mut b = B(0);
    let mut evs = saved(&mut b);
    evs.push(dup2(&mut b, 3, 4));
    assert!(run(&evs).is_empty());
    // the same fcntl followed by anything else: a use after close
    let mut b = B(0);
    let mut evs = saved(&mut b);
    evs.push(b.close(3, None));
    let f = run(&evs);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, Rule::FdUseAfterClose);
}

#[test]
fn a_double_close_is_an_error_where_the_number_could_have_been_reused() {
    let sev = |evs: &[Event]| {
        let f = run(evs);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, Rule::FdDoubleClose);
        (
            f[0].severity.unwrap_or(Severity::Error).as_str(),
            f[0].message.contains("harmless here"),
        )
    };
    let exec = |b: &mut B| {
        let k = Kind::Exec(crate::events::Exec {
            path: Some("/bin/sh".into()),
        });
        Event::new(b.h(Some(0), None), k)
    };
    let twice =
        |b: &mut B, path: &str| [b.open(3, path), b.close(3, None), b.close(3, Some("EBADF"))];
    // seen from exec, one thread, a file: the second close closed
    // nothing (bash's pipes)
    let mut b = B(0);
    let mut evs = vec![exec(&mut b)];
    evs.extend(twice(&mut b, "/etc/hosts"));
    assert_eq!(sev(&evs), ("warning", true));
    // seen in part: threads the trace does not show may have run
    let mut b = B(0);
    assert_eq!(sev(&twice(&mut b, "/etc/hosts")), ("error", false));
    // a second thread was running: it could have been handed fd 3
    let mut b = B(0);
    let mut evs = vec![exec(&mut b), b.open(4, "/etc/passwd")];
    evs[1].h.tid = Some(101);
    evs.extend(twice(&mut b, "/etc/hosts"));
    assert_eq!(sev(&evs), ("error", false));
    // a thread made, not yet seen
    let mut b = B(0);
    let mut evs = vec![exec(&mut b)];
    let k = Kind::Clone(crate::events::Clone {
        child: Some(101),
        thread: true,
        share_files: true,
        flags: 0,
    });
    evs.push(Event::new(b.h(Some(101), None), k));
    evs.extend(twice(&mut b, "/etc/hosts"));
    assert_eq!(sev(&evs), ("error", false));
    // a process made with CLONE_FILES shares the table
    let mut b = B(0);
    let mut evs = vec![exec(&mut b)];
    let k = Kind::Clone(crate::events::Clone {
        child: Some(200),
        thread: false,
        share_files: true,
        flags: 0,
    });
    evs.push(Event::new(b.h(Some(200), None), k));
    evs.extend(twice(&mut b, "/etc/hosts"));
    assert_eq!(sev(&evs), ("error", false));
    // a fork child (bash's subshell) that ran before strace printed its
    // parent's clone result is the parent's copy all the same, seen from
    // the parent's exec: its pipe closed twice is harmless too; the
    // child's calls are pid 200's, the clone (at `at`) the parent's
    let forked_late = |b: &mut B, first: Event, at: usize| {
        let mut evs = vec![exec(b), b.open(3, "pipe:[1]")];
        let k = Kind::Clone(crate::events::Clone {
            child: Some(200),
            thread: false,
            share_files: false,
            flags: 0,
        });
        let mut child = vec![first, b.close(3, None), b.close(3, Some("EBADF"))];
        for e in child.iter_mut() {
            (e.h.pid, e.h.tid) = (Some(200), Some(200));
        }
        child.insert(at, Event::new(b.h(Some(200), None), k));
        evs.extend(child);
        evs
    };
    let mut b = B(0);
    let mut first = Event::new(
        b.h(Some(0), None),
        Kind::Syscall(crate::events::Syscall::default()),
    );
    first.name = Cow::Borrowed("set_robust_list");
    assert_eq!(sev(&forked_late(&mut b, first, 1)), ("warning", true));
    // ... and when it made its own pipe before the clone result came
    // (bash's subshell, 20 ms ahead on a loaded machine): not adopted,
    // but seen from its start as every other process was
    let mut b = B(0);
    let first = b.close(5, None);
    assert_eq!(sev(&forked_late(&mut b, first, 3)), ("warning", true));
    // where some process was seen only in part, so is the newcomer
    let mut b = B(0);
    let mut evs = vec![b.open(3, "pipe:[1]")];
    let mut child = vec![
        b.close(5, None),
        b.close(3, None),
        b.close(3, Some("EBADF")),
    ];
    for e in child.iter_mut() {
        (e.h.pid, e.h.tid) = (Some(200), Some(200));
    }
    evs.extend(child);
    assert_eq!(sev(&evs).0, "error");
    // a dma-buf closed twice is the runtime bug, with one thread too
    let mut b = B(0);
    let mut evs = vec![exec(&mut b)];
    evs.extend(twice(&mut b, "/dmabuf:"));
    assert_eq!(sev(&evs), ("error", false));
}

#[test]
fn double_close_names_the_first_close() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/etc/hosts"),
        b.close(3, None),
        b.close(3, Some("EBADF")),
    ];
    let f = run(&evs);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].rule, Rule::FdDoubleClose);
    assert!(f[0].message.starts_with(
        "close(3) failed with EBADF: fd 3 (other /etc/hosts, created by openat at t.log:1) \
         was already closed by close at t.log:2"
    ));
    let roles: Vec<&str> = f[0].evidence.iter().map(|e| e.role.as_str()).collect();
    assert_eq!(
        roles,
        ["originally created by", "previous close", "this close"]
    );
    assert_eq!(
        f[0].key,
        ["double-close", "other", "open", "close", "close"]
    );
}

#[test]
fn close_all_sweep_is_one_note() {
    let mut b = B(0);
    let mut evs = vec![b.open(3, "/etc/hosts")];
    for fd in 3..40 {
        evs.push(b.close(fd, if fd == 3 { None } else { Some("EBADF") }));
    }
    evs.push(b.exit());
    let f = run(&evs);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].rule, f[0].severity),
        (Rule::FdBadFd, Some(Severity::Note))
    );
    assert_eq!(f[0].details["sweep"]["closes"], 37);
    assert_eq!(f[0].details["sweep"]["ebadf"], 36);
}

#[test]
fn repeated_findings_fold_into_their_first() {
    // 1,000 close(-1): one note "1000 times", the first and the last
    let mut b = B(0);
    let mut evs: Vec<Event> = (0..1000).map(|_| b.close(-1, Some("EBADF"))).collect();
    // the same wrong close of a never-open number, each in a run of
    // its own (a close run that proves no sweep): one finding too
    evs.push(b.open(3, "/etc/hosts"));
    for _ in 0..500 {
        evs.push(b.close(9, Some("EBADF")));
    }
    // a sweep after them (an fd made in between: a new run) is still
    // one note of its own
    evs.push(b.open(4, "/etc/passwd"));
    for fd in 10..50 {
        evs.push(b.close(fd, Some("EBADF")));
    }
    evs.push(b.exit());
    let f = run(&evs);
    let got: Vec<_> = f
        .iter()
        .map(|f| (f.rule.id(), f.line, f.details.get("occurrences").cloned()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("fd-bad-fd", Some(1), Some(json!(1000))),
            ("fd-bad-fd", Some(1002), Some(json!(500))),
            ("fd-bad-fd", Some(1503), None),
        ],
        "{f:#?}"
    );
    let last = f[0].evidence.last().expect("evidence");
    assert_eq!(
        (last.role.as_str(), last.event.h.line),
        ("the last of 1000", 1000)
    );
    assert!(f[2].details.contains_key("sweep"));
    // the model keeps one finding per kind, not one per call
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs[..1500] {
        m.feed(e);
    }
    assert!(m.o.findings.len() <= 3, "{}", m.o.findings.len());
}

#[test]
fn repeats_across_the_processes_of_one_program_fold_as_they_end() {
    // 300 fork children, each a close(-1) then its exit: one finding,
    // and never more than a few held while the trace runs
    let mut b = B(0);
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    let mut most = 0;
    for c in 0..300u32 {
        let pid = 200 + c;
        let k = Kind::Clone(crate::events::Clone {
            child: Some(pid),
            thread: false,
            share_files: false,
            flags: 0,
        });
        let mut evs = vec![Event::new(b.h(Some(pid.into()), None), k)];
        for mut e in [b.close(-1, Some("EBADF")), b.exit()] {
            (e.h.pid, e.h.tid) = (Some(pid), Some(pid));
            evs.push(e);
        }
        for e in &evs {
            m.feed(e);
        }
        most = most.max(m.o.findings.len());
    }
    m.finish();
    assert!(most <= 2, "{most} findings held");
    let f = m.take_findings();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].details["occurrences"], 300);
    let pids: Vec<_> = f[0].evidence.iter().map(|e| e.event.h.pid).collect();
    assert_eq!(pids, vec![Some(200), Some(499)]);
}

#[test]
fn close_range_over_free_numbers_is_not_a_double_close() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/a"),
        b.open(4, "/b"),
        b.close(4, None),
        b.close_range(3, u32::MAX),
        b.close_range(3, u32::MAX),
        b.close_range(3, 100),
    ];
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs {
        m.feed(e);
    }
    m.finish();
    assert!(m.take_findings().is_empty());
    // the process ended with the trace: nothing is kept for it
    assert!(m.procs.map.is_empty());
    let evs = [b.open(7, "/a"), b.close(7, None), b.close_range(7, 7)];
    let f = run(&evs);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message
            .starts_with("close_range(7, 7) closes fd 7 again")
    );
}

#[test]
fn a_live_fd_costs_a_small_slot() {
    // a slot per live fd, boxed in its table (a bucket is a pointer);
    // 192 bytes is one of the allocator's size classes (208 took 224)
    assert!(
        std::mem::size_of::<Slot>() <= 192,
        "{}",
        std::mem::size_of::<Slot>()
    );
    assert_eq!(std::mem::size_of::<Box<Slot>>(), 8);
}

#[test]
fn memory_follows_live_state() {
    let mut b = B(0);
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for i in 0..5000 {
        m.feed(&b.open(3 + i % 7, "/etc/hosts"));
        m.feed(&b.close(3 + i % 7, None));
    }
    let p = m.procs.get(&Some(100)).expect("the process");
    let t = m.tables.get(&p.table).expect("the process's table");
    assert!(t.slots.is_empty());
    assert_eq!(t.closed.len(), 7);
    // one previous occupant per number, never a chain
    assert!(t.closed.values().all(|c| {
        c.borrow()
            .slot
            .prev
            .as_ref()
            .is_none_or(|p| p.borrow().slot.prev.is_none())
    }));
}

#[test]
fn a_dmabuf_open_at_exit_is_a_leak() {
    let mut b = B(0);
    let evs = [b.open(5, "/dmabuf:"), b.exit()];
    let f = run(&evs);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].rule, f[0].severity),
        (Rule::FdLeak, Some(Severity::Warning))
    );
    assert_eq!(f[0].details["exited"], true);
}

// --- sweeps by shape, bounded ranges, owners by thread, thread tables ---------

fn sys(b: &mut B, name: &'static str, fds: Vec<i32>, err: Option<&'static str>) -> Event {
    let ret = Some(if err.is_some() { -1 } else { 0 });
    let mut e = Event::new(
        b.h(ret, err),
        Kind::Syscall(crate::events::Syscall {
            fds,
            paths: Vec::new(),
        }),
    );
    e.name = Cow::Borrowed(name);
    e
}

fn on(mut e: Event, tid: u32) -> Event {
    e.h.tid = Some(tid);
    e
}

fn dup2(b: &mut B, old: i32, new: i32) -> Event {
    let k = FdCreate {
        origin: Cow::Borrowed("dup2"),
        fds: vec![new],
        paths: vec![None],
        src_fd: Some(old),
        replace: true,
        new_fd: Some(new),
        ..Default::default()
    };
    let mut e = Event::new(b.h(Some(new.into()), None), Kind::FdCreate(k));
    e.name = Cow::Borrowed("dup2");
    e
}

fn counts(f: &[Finding]) -> Vec<(Rule, &'static str)> {
    let mut v: Vec<_> = f
        .iter()
        .map(|f| (f.rule, f.severity.map_or("default", Severity::as_str)))
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn a_sweep_with_calls_between_its_closes_is_one_note() {
    let mut b = B(0);
    let mut evs = vec![b.open(3, "/a"), b.open(4, "/b"), b.close(4, None)];
    for fd in 3..200 {
        evs.push(sys(&mut b, "readlink", vec![], Some("ENOENT")));
        evs.push(sys(&mut b, "fstat", vec![fd], Some("EBADF")));
        evs.push(sys(&mut b, "write", vec![1], None));
        evs.push(b.close(fd, if fd == 3 { None } else { Some("EBADF") }));
    }
    evs.push(b.exit());
    let f = run(&evs);
    assert_eq!(counts(&f), [(Rule::FdBadFd, "note")], "{f:?}");
    // (the close of 4 before it starts the run: 4, then 3, then 4 again
    // is no order, so the sweep proper is 4..199)
    assert_eq!(f[0].details["sweep"]["closes"], 196);
}

#[test]
fn a_descending_sweep_is_one_note() {
    let mut b = B(0);
    let mut evs = vec![b.open(3, "/a")];
    for fd in (3..300).rev() {
        evs.push(sys(&mut b, "fcntl", vec![fd], Some("EBADF")));
        evs.push(b.close(fd, if fd == 3 { None } else { Some("EBADF") }));
    }
    let f = run(&evs);
    assert_eq!(counts(&f), [(Rule::FdBadFd, "note")], "{f:?}");
    assert!(f[0].message.contains("decreasing"));
}

#[test]
fn a_created_fd_ends_a_run() {
    // the program's own four fds closed again, in order, with writes
    // between: the shape of a sweep (whatever the trace saw
    // of those numbers before), one note
    let mut b = B(0);
    let mut evs = vec![];
    for fd in 3..7 {
        evs.push(b.open(fd, "/a"));
    }
    for fd in 3..7 {
        evs.push(b.close(fd, None));
    }
    let again = evs.len();
    for fd in 3..7 {
        evs.push(sys(&mut b, "write", vec![1], None));
        evs.push(b.close(fd, Some("EBADF")));
    }
    evs.push(b.exit());
    assert_eq!(counts(&run(&evs)), [(Rule::FdBadFd, "note")]);
    // an fd created between the closes: no run, each is a double close
    let mut evs2 = evs[..again].to_vec();
    for fd in 3..7 {
        evs2.push(b.open(10, "/b"));
        evs2.push(b.close(fd, Some("EBADF")));
    }
    assert_eq!(counts(&run(&evs2)), [(Rule::FdDoubleClose, "default"); 4]);
    // a sweep whose closes are split by an open: the part after it
    // alone is still a sweep, the part before it too short to be one
    let mut evs = vec![b.open(3, "/a")];
    for fd in 3..6 {
        evs.push(b.close(fd, if fd == 3 { None } else { Some("EBADF") }));
    }
    evs.push(b.open(3, "/b"));
    for fd in 4..100 {
        evs.push(b.close(fd, Some("EBADF")));
    }
    let f = run(&evs);
    let sweeps = f.iter().filter(|f| f.details.contains_key("sweep")).count();
    assert_eq!(sweeps, 1, "{f:?}");
}

#[test]
fn a_listing_of_proc_self_fd_closed_number_by_number_is_a_sweep() {
    let mut b = B(0);
    let evs = [
        b.open(3, "/a"),
        b.open(4, "/b"),
        b.open(5, "/proc/self/fd"),
        sys(&mut b, "getdents64", vec![5], None),
        b.close(5, None),
        b.close(3, None),
        b.close(4, None),
        b.close(5, Some("EBADF")),
        b.exit(),
    ];
    let f = run(&evs);
    assert_eq!(counts(&f), [(Rule::FdBadFd, "note")], "{f:?}");
    assert!(f[0].message.contains("listing"));
    assert!(is_fd_listing(b"/proc/1234/fd"));
    assert!(is_fd_listing(b"/proc/self/task/12/fd/"));
    assert!(is_fd_listing(b"/dev/fd"));
    assert!(!is_fd_listing(b"/proc/self/fdinfo"));
    assert!(!is_fd_listing(b"/proc/self/fd/3"));
}

#[test]
fn a_bounded_close_range_after_an_open_ended_one_double_closes() {
    // valgrind's close_range test
    let mut b = B(0);
    let evs = [
        b.open(3, "/a"),
        b.close(3, None),
        b.close_range(3, u32::MAX),
        dup2(&mut b, 1, 5),
        dup2(&mut b, 2, 7),
        b.close_range(5, 7),
        b.close_range(5, 7),
        b.exit(),
    ];
    let f = run(&evs);
    let mut fds: Vec<_> = f.iter().map(|f| f.subject["fd"].as_i64()).collect();
    fds.sort_unstable();
    assert_eq!(fds, [Some(5), Some(7)], "{f:?}");
    assert!(f.iter().all(|f| f.rule == Rule::FdDoubleClose));
    // bounded pieces around kept fds and an open-ended one: a sweep
    let evs = [
        b.open(3, "/a"),
        b.open(4, "/b"),
        b.open(5, "/c"),
        b.close(4, None),
        b.close_range(3, 4),
        b.close_range(6, u32::MAX),
        b.exit(),
    ];
    assert!(run(&evs).is_empty());
    assert!(reaches_limit(1023) && reaches_limit(1048575) && reaches_limit(u32::MAX));
    assert!(!reaches_limit(7) && !reaches_limit(1000));
}

#[test]
fn a_stale_close_of_another_threads_new_fd_is_a_wrong_owner_without_stacks() {
    let mut b = B(0);
    let evs = [
        b.open(7, "/dev/null"),
        sys(&mut b, "read", vec![7], None),
        b.close(7, None),
        on(b.open(7, "/sys/class/kfd/kfd/topology/nodes/1/gpu_id"), 101),
        on(sys(&mut b, "read", vec![7], None), 101),
        b.close(7, None),
        on(sys(&mut b, "read", vec![7], Some("EBADF")), 101),
    ];
    let f = run(&evs);
    assert_eq!(
        counts(&f),
        [
            (Rule::FdCloseReused, "default"),
            (Rule::FdUseAfterClose, "default")
        ],
        "{f:?}"
    );
    // the same calls on one thread: nothing tells the owners apart
    let evs: Vec<Event> = evs.iter().map(|e| on(e.clone(), 100)).collect();
    assert_eq!(counts(&run(&evs)), [(Rule::FdUseAfterClose, "default")]);
}

#[test]
fn a_thread_that_unshares_its_fd_table_works_on_its_own_copy() {
    let mut b = B(0);
    let mut unshare = sys(&mut b, "unshare", vec![], None);
    unshare.h.src = "unshare(CLONE_FILES)".into();
    let evs = [
        b.open(3, "/dev/null"),
        on(sys(&mut b, "read", vec![3], None), 101),
        on(unshare, 101),
        on(b.close(3, None), 101),
        sys(&mut b, "read", vec![3], None),
        on(b.close(3, Some("EBADF")), 101),
        b.close(3, None),
    ];
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs[..5] {
        m.feed(e);
    }
    // the main thread's table still holds it
    assert!(m.lookup(Some(100), 3).is_some());
    for e in &evs[5..] {
        m.feed(e);
    }
    m.finish();
    let f = m.take_findings();
    // the thread's second close, of its own copy: the previous close
    // is its own, and the main thread's close after it is fine
    assert_eq!(counts(&f), [(Rule::FdDoubleClose, "default")], "{f:?}");
    assert_eq!(
        f[0].evidence
            .iter()
            .filter(|e| e.event.h.tid == Some(101))
            .count(),
        2
    );
    assert!(unshares_files(b"unshare(CLONE_FS|CLONE_FILES)"));
    assert!(unshares_files(b"unshare(0x400)"));
    assert!(unshares_files(b"unshare(0x600 /* CLONE_FS|CLONE_FILES */)"));
    assert!(!unshares_files(b"unshare(CLONE_NEWNS)"));
}

#[test]
fn a_thread_cloned_without_clone_files_or_unsharing_by_close_range_has_its_own_table() {
    let mut b = B(0);
    let clone = |b: &mut B, files: bool| {
        let k = crate::events::Clone {
            child: Some(101),
            thread: true,
            share_files: files,
            flags: 0,
        };
        Event::new(b.h(Some(101), None), Kind::Clone(k))
    };
    // clone(CLONE_VM|CLONE_THREAD|…) without CLONE_FILES
    let evs = [
        b.open(3, "/dev/null"),
        clone(&mut b, false),
        on(b.close(3, None), 101),
        sys(&mut b, "read", vec![3], None),
    ];
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs {
        m.feed(e);
    }
    let s = m.lookup(Some(100), 3).expect("the main thread's fd 3");
    assert_eq!(s.origin, "open"); // never closed, never re-seen
    // with CLONE_FILES the thread's close is the process's
    let evs = [
        b.open(3, "/dev/null"),
        clone(&mut b, true),
        on(b.close(3, None), 101),
    ];
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs {
        m.feed(e);
    }
    assert!(m.lookup(Some(100), 3).is_none());
    // close_range(3, 3, CLOSE_RANGE_UNSHARE) on a second thread
    let mut unshare = b.close_range(3, 3);
    if let Kind::CloseRange(k) = &mut unshare.kind {
        k.flags = CLOSE_RANGE_UNSHARE;
    }
    let evs = [
        b.open(3, "/dev/null"),
        on(sys(&mut b, "write", vec![1], None), 101),
        on(unshare, 101),
        sys(&mut b, "read", vec![3], None),
    ];
    let mut m = FdModel::new(None, false, Names::new(vec!["t.log".into()]));
    for e in &evs {
        m.feed(e);
    }
    assert_eq!(m.lookup(Some(100), 3).expect("open").origin, "open");
}

// uses, leaks and creators (their struct's fds), by concept
mod uses_and_leaks;
