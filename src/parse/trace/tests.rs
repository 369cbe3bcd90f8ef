//! A TRACE argument's files through their dialects: -ff files in parent
//! order with their threads' processes, and --jobs on one file.

use super::*;
use crate::read::layout::Layout;
use crate::read::open::FileSpec;
use std::collections::HashMap;

#[test]
fn parents_come_first_and_a_cycle_stops() {
    let spec = |tid| FileSpec {
        path: format!("t.{tid}"),
        format: Format::Strace,
        tid: Some(tid),
        layout: Layout::default(),
        layout_text: String::new(),
        stream: None,
    };
    let files = vec![spec(10000), spec(9999), spec(5), spec(6)];
    let mut parent = HashMap::new();
    parent.insert(10000, (9999, false));
    parent.insert(5, (6, true));
    parent.insert(6, (5, true));
    assert_eq!(parents_first(&files, &parent), [1, 0, 3, 2]);
}

/// -ff knowledge through a stand-in dialect (the strace parser is tested
/// in strace/): `clone N thread|process` lines make Clone events.
mod ff {
    use super::super::{Dialect, Dialects, Threads, ff_threads, parents_first};
    use crate::events::*;
    use crate::parse::detect::open_files;
    use crate::read::open::FileSpec;

    struct Clones(InputInfo);

    impl Dialect for Clones {
        fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<std::rc::Rc<Event>>) {
            self.0.lines += 1;
            let w: Vec<&str> = line.split(' ').collect();
            if let ["clone", n, how] = w[..] {
                let h = Header {
                    line: lineno,
                    ret: n.parse().ok(),
                    ..Default::default()
                };
                out.push(std::rc::Rc::new(Event::new(
                    h,
                    Kind::Clone(Clone {
                        child: n.parse().ok(),
                        thread: how == "thread",
                        share_files: false,
                        flags: 0,
                    }),
                )));
                self.0.events += 1;
            }
        }
        fn finish(&mut self, _: &mut Vec<std::rc::Rc<Event>>) {}
        fn info(&mut self) -> &mut InputInfo {
            &mut self.0
        }
    }

    struct Fake;

    impl Dialects for Fake {
        fn parser(
            &self,
            _: &FileSpec,
            _: FileId,
            info: InputInfo,
            _: Option<&Threads>,
        ) -> Option<Box<dyn Dialect>> {
            Some(Box::new(Clones(info)))
        }
    }

    #[test]
    fn threads_find_their_process_and_children_follow_parents() {
        let d = std::env::temp_dir().join(format!("rocrtrace-ff-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let w = |n: &str, s: &str| std::fs::write(d.join(n), s).unwrap();
        // 100 makes thread 101 and process 9999; 101 makes thread 102;
        // 9999 makes thread 10000; 7 and 8 name each other (a cycle)
        w(
            "t.100",
            "close(3) = 0\nclone 101 thread\nclone 9999 process\n",
        );
        w("t.101", "clone 102 thread\n");
        w("t.102", "close(1) = 0\n");
        w("t.10000", "close(1) = 0\n");
        // (a first line that is no trace line would be a preamble)
        w(
            "t.9999",
            "close(0) = 0\nclone 10000 thread\nexecve(\"/x\") = 0 <pid changed to 9999 ...>\n",
        );
        w("t.7", "clone 8 thread\n");
        w("t.8", "clone 7 thread\n");
        let files = open_files(&format!("{}/t.*", d.display()), Some("strace")).unwrap();
        let names: Vec<u32> = files.iter().map(|f| f.tid.unwrap()).collect();
        assert_eq!(names, [100, 10000, 101, 102, 7, 8, 9999]);
        let t = ff_threads(&files, 1 << 20, &Fake).unwrap();
        let tg = |x: u32| t.tgid_of.get(&x).expect("known");
        assert_eq!((tg(100), tg(101), tg(102)), (100, 100, 100));
        assert_eq!((tg(9999), tg(10000)), (9999, 9999));
        assert!(tg(7) == 7 || tg(7) == 8, "a cycle stops: {}", tg(7));
        assert_eq!(t.handover[&9999].0, 3);
        assert_eq!(t.parent[&9999], (100, false));
        let order: Vec<u32> = parents_first(&files, &t.parent)
            .into_iter()
            .map(|i| files[i].tid.unwrap())
            .collect();
        assert_eq!(order, [100, 9999, 10000, 101, 102, 8, 7]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn renamed_preload_logs_chain_by_their_headers() {
        let d = std::env::temp_dir().join(format!("rocrtrace-ppid-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let log = |name: &str, pid: u32, ppid: u32| {
            let text = format!(
                "# rocrtrace-log 1\n# pid={pid} ppid={ppid} exe=/x page_size=4096\n\
                 {pid}  1.000000 close(3) = 0 <0.000001>\n# exit status=0\n"
            );
            std::fs::write(d.join(name), text).unwrap();
        };
        // one capture renamed: parent and child
        log("a-parent.log", 100, 1);
        log("b-child.log", 101, 100);
        // two captures of one program: equal pids, never chained
        log("c-run1.log", 200, 1);
        log("d-run2.log", 200, 1);
        log("e-child.log", 201, 200);
        let r = crate::parse::detect::open_runs(d.to_str().unwrap(), None).unwrap();
        let names: Vec<Vec<String>> = r
            .runs
            .iter()
            .map(|run| {
                run.iter()
                    .map(|f| f.path.rsplit('/').next().unwrap().to_string())
                    .collect()
            })
            .collect();
        assert_eq!(
            names,
            vec![
                vec!["a-parent.log".to_string(), "b-child.log".to_string()],
                vec!["c-run1.log".to_string()],
                vec!["d-run2.log".to_string()],
                vec!["e-child.log".to_string()],
            ]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn runs_are_split_by_prefix_and_non_traces_skipped() {
        // SPEC 2: the files of one -ff or capture run share PREFIX.N; other
        // files are runs of their own; a non-trace beside them is skipped
        let d = std::env::temp_dir().join(format!("rocrtrace-runs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let w = |n: &str, s: &str| std::fs::write(d.join(n), s).unwrap();
        let line = "100   close(3) = 0\n";
        w("a.100", line);
        w("a.101", line);
        w("b.100", line);
        w("c.log", line);
        w("d.log", line);
        w("notes.json", "{}\n");
        let r = crate::parse::detect::open_runs(d.to_str().unwrap(), None).unwrap();
        let names: Vec<Vec<(String, Option<u32>)>> = r
            .runs
            .iter()
            .map(|run| {
                run.iter()
                    .map(|f| {
                        let n = f.path.rsplit('/').next().unwrap().to_string();
                        (n, f.tid)
                    })
                    .collect()
            })
            .collect();
        let s = |x: &str| x.to_string();
        assert_eq!(
            names,
            vec![
                vec![(s("a.100"), Some(100)), (s("a.101"), Some(101))],
                vec![(s("b.100"), None)],
                vec![(s("c.log"), None)],
                vec![(s("d.log"), None)],
            ]
        );
        assert_eq!(r.skipped.len(), 1);
        assert!(r.skipped[0].0.contains("notes.json"), "{}", r.skipped[0]);
        // a named file that is no trace is an error; a directory of none too
        let bad = d.join("notes.json");
        assert!(crate::parse::detect::open_runs(bad.to_str().unwrap(), None).is_err());
        let e = d.join("empty");
        std::fs::create_dir_all(&e).unwrap();
        std::fs::write(e.join("x.txt"), "hello\n").unwrap();
        assert!(crate::parse::detect::open_runs(e.to_str().unwrap(), None).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// --jobs on one file: the chunked reading gives the sequential parse
/// whatever the cut points (src/read/chunked.rs).
mod chunked {
    use super::super::Trace;
    use crate::events::*;
    use crate::parse::Builtin;
    use crate::parse::detect::open_files;
    use proptest::prelude::*;

    /// Lines that meet every case a cut can fall into.
    const STRACE: &[&str] = &[
        "strace: Process 42 attached",
        "42 1764435600.100000 openat(AT_FDCWD, \"/dev/kfd\", O_RDWR) = 3</dev/kfd> <0.000010>",
        "42 1764435600.110000 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
        "43 1764435600.120000 close(5) = 0",
        " > /lib/libc.so.6(close+0x14) [0x1234]",
        " > /lib/libc.so.6(__libc_start_main+0x80) [0x29d90]",
        "42 1764435600.130000 <... ioctl resumed>) = 0",
        "43 1764435600.140000 read(3</dev/kfd>, \"abc\", 3) = 3",
        "44 1764435600.150000 write(1, \"x\", 1strace: Process 45 attached",
        ") = 1",
        "45 1764435600.160000 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|CLONE_SIGHAND) = 46",
        "46 1764435600.170000 close(7) = -1 EBADF (Bad file descriptor)",
        "43 1764435600.180000 \x1b[31mclose(9) = 0\x1b[0m",
        "43 1764435600.190000 <... write resumed>) = 1",
        "garbage that parses as nothing",
        "",
        "42 1764435600.200000 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</dev/kfd>, 0x1000) = 0x7f0000",
        "42 1764435600.210000 exit_group(0) = ?",
        " > /lib/libc.so.6(_exit+0x1) [0x10]",
        "46 1764435600.220000 +++ exited with 0 +++",
        "42 1764435600.230000 +++ exited with 0 +++",
        "% time     seconds  usecs/call     calls    errors syscall",
        "100.00    0.000010           1        10           close",
    ];

    const PRELOAD: &[&str] = &[
        "# rocrtrace-log 2",
        "# pid=4242 ppid=1 exe=/bin/app page_size=4096 start=1764435600.0",
        "# fd-snapshot start",
        "# fd 3 /dev/kfd",
        "# fd 4 /dev/dri/renderD128",
        "# map 7f00-8f00 r-xp 0 /lib/libhsa.so build-id=abcd",
        "#+ 4242 1+ 4242 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, ",
        "4242 1764435600.15 close(8) = 0",
        "#+ 4242 2 size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "4242 1764435600.2 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x2000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "4243 1764435600.3 close(3) = 0",
        "# exit status=0",
    ];

    fn run(
        path: &str,
        jobs: usize,
        batch: usize,
        max_line: usize,
    ) -> (Vec<Event>, Vec<InputInfo>, u64) {
        let files = open_files(path, None).unwrap();
        let mut t = Trace::new(path, files, max_line, Builtin);
        t.jobs = jobs;
        t.batch_lines = batch;
        t.min_bytes = 0;
        let infos = t.infos.clone();
        let chunks = t.chunks.clone();
        let evs: Vec<Event> = t
            .events()
            .map(|r| std::rc::Rc::unwrap_or_clone(r.unwrap()))
            .collect();
        let infos = infos.borrow().clone();
        (evs, infos, chunks.get())
    }

    fn write(name: &str, data: &[u8]) -> String {
        let d = std::env::temp_dir().join(format!("rocrtrace-chunked-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, data).unwrap();
        p.display().to_string()
    }

    fn same_at_every_cut(path: &str, max_line: usize) {
        let (a, ai, n1) = run(path, 1, 4096, max_line);
        assert_eq!(n1, 0, "--jobs 1 does not chunk");
        assert!(!a.is_empty());
        for batch in [1, 2, 3, 5, 7, 4096] {
            for jobs in [2, 3] {
                let (b, bi, n) = run(path, jobs, batch, max_line);
                assert!(n > 0, "the chunked path ran");
                assert_eq!(a, b, "{path}: batch {batch} jobs {jobs}");
                assert_eq!(ai, bi, "{path}: batch {batch} jobs {jobs}");
            }
        }
    }

    #[test]
    fn strace_cuts_anywhere() {
        let p = write("s.log", (STRACE.join("\n") + "\n").as_bytes());
        same_at_every_cut(&p, 1 << 20);
        // over-long lines (counted while reading) among the parser's
        // unparsed ones, in line order
        same_at_every_cut(&p, 60);
    }

    #[test]
    fn preload_cuts_anywhere() {
        let p = write("p.log", PRELOAD.join("\n").as_bytes());
        same_at_every_cut(&p, 1 << 20);
    }

    #[test]
    fn crlf_bad_bytes_and_a_preamble_cut_anywhere() {
        let mut data = b"some banner\r\nmore banner\r\n".to_vec();
        for l in STRACE {
            data.extend_from_slice(l.as_bytes());
            data.extend_from_slice(b"\xff\r\n");
        }
        data.extend_from_slice(b"42 1764435600.3 close(1) = 0");
        let p = write("c.log", &data);
        same_at_every_cut(&p, 1 << 20);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn any_lines_any_cuts(
            picks in prop::collection::vec(0usize..(STRACE.len() + PRELOAD.len()), 1..40),
            batch in 1usize..6,
            max_line in prop_oneof![Just(1usize << 20), Just(70)],
        ) {
            let all: Vec<&str> = STRACE.iter().chain(PRELOAD).copied().collect();
            let text: Vec<&str> = picks.iter().map(|&i| all[i]).collect();
            let p = write("any.log", (text.join("\n") + "\n").as_bytes());
            let seq = {
                let files = open_files(&p, Some("strace")).unwrap();
                let mut t = Trace::new(&p, files, max_line, Builtin);
                t.min_bytes = 0;
                let infos = t.infos.clone();
                let evs: Vec<Result<Event, _>> = t.events().map(|r| r.map(std::rc::Rc::unwrap_or_clone)).collect();
                let i = infos.borrow().clone();
                (evs, i)
            };
            let files = open_files(&p, Some("strace")).unwrap();
            let mut t = Trace::new(&p, files, max_line, Builtin);
            t.jobs = 2;
            t.batch_lines = batch;
            t.min_bytes = 0;
            let infos = t.infos.clone();
            let evs: Vec<Result<Event, _>> = t.events().map(|r| r.map(std::rc::Rc::unwrap_or_clone)).collect();
            let i = infos.borrow().clone();
            prop_assert_eq!(&seq.0, &evs);
            prop_assert_eq!(&seq.1, &i);
        }
    }
}
