use super::*;

fn parse(lines: &[&str]) -> (Vec<Rc<Event>>, InputInfo) {
    let mut p = Parser::new(FileId(0), InputInfo::new("t.log".into()), None, None, None);
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        p.feed(i as u64 + 1, l.as_bytes(), &mut out);
    }
    p.finish(&mut out);
    (out, p.info)
}

#[test]
fn a_process_exit_forgets_its_threads_and_no_other() {
    // 100 made threads 101 and 102 and a child 200 with a thread 201;
    // 100 exits; then 101 and 102 are new processes, 201 still 200's
    let thread = "clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|\
                  CLONE_SYSVSEM, exit_signal=0}, 88)";
    let fork = "clone(child_stack=NULL, flags=SIGCHLD)";
    let lines = [
        format!("100 {thread} = 101"),
        format!("100 {thread} = 102"),
        format!("100 {fork} = 200"),
        format!("200 {thread} = 201"),
        "100 +++ exited with 0 +++".into(),
        "101 close(3) = 0".into(),
        "102 close(3) = 0".into(),
        "201 close(3) = 0".into(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (evs, _) = parse(&lines);
    let who: Vec<_> = evs[evs.len() - 3..]
        .iter()
        .map(|e| (e.h.tid, e.h.pid))
        .collect();
    assert_eq!(
        who,
        vec![
            (Some(101), Some(101)),
            (Some(102), Some(102)),
            (Some(201), Some(200))
        ]
    );
    // the same over what an -ff pre-pass shares: its tids forgotten too
    let base = SharedTgids::new([(101, 100), (102, 100), (201, 200)].into());
    let mut t = Tgids::new(Some(Arc::new(base)));
    t.insert(103, Some(100));
    t.insert(102, Some(102)); // this file saw 102 become its own
    let mut gone = t.remove_group(100);
    gone.sort_unstable();
    assert_eq!(gone, vec![101, 103]);
    assert_eq!(t.get(&101), None);
    assert_eq!(t.get(&102), Some(Some(102)));
    assert_eq!(t.get(&201), Some(Some(200)));
}

#[test]
fn split_call_is_emitted_at_its_resumed_line() {
    let (evs, info) = parse(&[
        "42 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
        "43 1764435600.2 close(5) = 0",
        "42 1764435600.5 <... ioctl resumed>) = 0",
    ]);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0].name, "close");
    let e = &evs[1];
    assert_eq!((e.h.line, e.h.end_line, e.h.tid), (1, Some(3), Some(42)));
    assert!((e.h.dur.unwrap() - 0.4).abs() < 1e-6);
    assert!(e.h.src.text().windows(5).any(|w| w == " … ".as_bytes()));
    let Kind::Ioctl(i) = &e.kind else { panic!() };
    assert_eq!(i.ioctl, Some("AMDKFD_IOC_WAIT_EVENTS"));
    assert_eq!((info.unfinished, info.orphans, info.events), (0, 0, 2));
}

#[test]
fn unfinished_at_the_end_and_orphans_are_counted() {
    let (evs, info) = parse(&[
        "42 1764435600.1 read(3, <unfinished ...>",
        "43 1764435600.2 <... write resumed>) = 1",
    ]);
    assert_eq!(info.unfinished, 1);
    assert_eq!(info.orphans, 1);
    assert!(evs.iter().all(|e| e.h.partial));
}

#[test]
fn frames_go_to_their_call_and_exit_frames_follow_plus() {
    let (evs, info) = parse(&[
        "42 close(3) = 0",
        " > /lib/libc.so.6(close+0x14) [0x1234]",
        "42 exit_group(0) = ?",
        "42 +++ exited with 0 +++",
        " > /lib/libc.so.6(_exit+0x1) [0x10]",
    ]);
    assert!(info.has_stacks && info.exit_seen);
    assert_eq!(evs.len(), 3);
    assert_eq!(evs[0].h.stack[0].symbol.as_deref(), Some("close"));
    assert_eq!(evs[0].h.stack[0].sym_offset, Some(0x14));
    assert_eq!(evs[1].name, "exit_group");
    assert_eq!(evs[1].h.stack.len(), 1);
    assert!(matches!(
        evs[2].kind,
        Kind::Exit(Exit {
            whole: true,
            status: Some(0),
            ..
        })
    ));
}

#[test]
fn unprefixed_past_learns_the_root_pid() {
    let (evs, info) = parse(&["close(3) = 0", "getpid() = 77", "close(4) = 0"]);
    assert!(!info.has_pids);
    assert!(
        evs.iter()
            .all(|e| e.h.tid == Some(77) && e.h.pid == Some(77))
    );
}

#[test]
fn unprefixed_lines_after_a_clone_stay_the_roots() {
    // strace -f to stderr prefixes lines only once a second tracee is
    // attached: before that, an unprefixed line is the root's, not the
    // child's the clone just named, and a thread of the root joins it
    // once a prefix names the root
    let (evs, _) = parse(&[
        "clone3({flags=CLONE_VM|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD}, 88) = 43",
        "read(3, \"\\0\", 1) = 1",
        "strace: Process 43 attached",
        "[pid    43] close(3) = 0",
        "[pid    42] read(3, 0x7ffd00000000, 1) = -1 EBADF (Bad file descriptor)",
    ]);
    let who: Vec<_> = evs.iter().map(|e| (e.h.pid, e.h.tid)).collect();
    let (r, t) = ((Some(42), Some(42)), (Some(42), Some(43)));
    assert_eq!(who, [r, r, t, r]);
}

#[test]
fn clone_children_join_their_process() {
    let (evs, _) = parse(&[
        "42 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|CLONE_SIGHAND) = 43",
        "43 close(3) = 0",
    ]);
    assert_eq!((evs[1].h.pid, evs[1].h.tid), (Some(42), Some(43)));
}

#[test]
fn diagnostics_and_summaries_are_not_unparsed() {
    let (_, info) = parse(&[
        "strace: Process 42 attached",
        "% time     seconds  usecs/call     calls    errors syscall",
        "------ ----------- ----------- --------- --------- ----------------",
        "100.00    0.000010           1        10           close",
        "nonsense here",
    ]);
    assert_eq!(info.unparsed, 1);
    assert_eq!(info.unparsed_samples[0].0, 5);
}

#[test]
fn preload_header_snapshots_maps_and_continuations() {
    let (evs, info) = parse(&[
        "# rocrtrace-log 2",
        "# pid=4242 ppid=1 exe=/bin/app page_size=4096 start=1764435600.0",
        "# fd-snapshot start",
        "# fd 3 /dev/kfd",
        "# fd 4 /dev/dri/renderD128",
        "# map 7f00-8f00 r-xp 0 /lib/libhsa.so build-id=abcd",
        "#+ 4242 1+ 4242 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, ",
        "#+ 4242 2 size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "# exit status=0",
    ]);
    assert_eq!(info.unparsed, 0, "{:?}", info.unparsed_samples);
    assert_eq!(info.header[0].0.as_ref(), "version");
    assert!(info.decoded_structs && info.exit_seen);
    let kinds: Vec<&str> = evs.iter().map(|e| e.kind.type_name()).collect();
    assert_eq!(
        kinds,
        ["ProcessInfo", "FdSnapshot", "ModuleMap", "Ioctl", "Exit"]
    );
    let Kind::FdSnapshot(s) = &evs[1].kind else {
        panic!()
    };
    assert_eq!(s.fds.len(), 2);
    let Kind::Ioctl(i) = &evs[3].kind else {
        panic!()
    };
    assert_eq!(i.size, Some(24));
    assert_eq!(evs[3].h.line, 7);
    assert!(evs.iter().all(|e| e.h.pid == Some(4242)));
}

#[test]
fn results_errors_and_decorations() {
    let (evs, info) = parse(&[
        "42 openat(AT_FDCWD, \"/x\", O_RDONLY) = -1 ENOENT (No such file) <0.000010>",
        "42 close(9) = -1 (errno 512)",
        "42 umask(022) = 022",
        "42 dup(3</a\\74b>) = 4</a\\74b>",
    ]);
    assert!(info.has_durations && info.has_decorations);
    assert_eq!(evs[0].h.err.as_deref(), Some("ENOENT"));
    assert_eq!(evs[1].h.err.as_deref(), Some("ERRNO_512"));
    assert_eq!(evs[2].h.ret, Some(0o22));
    let Kind::FdCreate(f) = &evs[3].kind else {
        panic!()
    };
    assert_eq!(f.paths, vec![Some(Text::from("/a<b"))]);
}
