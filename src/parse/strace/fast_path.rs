//! The fast path against the general grammar: every line the tokenizer
//! takes ([`tokens::scan_line`] in `Parser::line_text`, and [`pre_parse`]
//! for --jobs) must give exactly the events and counts the general grammar
//! gives for it.  Each input is parsed three ways -- the fast path, the
//! pre-parse of --jobs, and a parser built [`Parser::without_fast_path`] --
//! and the events are compared one by one, with the line that gave each, and
//! then the file's whole [`InputInfo`].
//!
//! Inputs: every strace and preload fixture under fixtures/ (line by line
//! with no clean-up, each line alone, and the whole file through the reader,
//! which removes indentation, quoting and CRLF first), the line soups of
//! tokens/props.rs, and explicit regression lines.  PROPTEST_RNG_SEED fixes
//! the generated examples (.ci/run sets it), PROPTEST_CASES scales them.

use super::{Parser, PreState, pre_parse_in};
use crate::events::{Event, FileId, Format, InputInfo, Span, Text};
use crate::parse::Builtin;
use crate::parse::detect::open_files;
use crate::parse::tokens::{self, props};
use crate::parse::trace::{Dialect, Dialects, Threads, Trace};
use crate::read::InputError;
use crate::read::lines::decode;
use crate::read::open::FileSpec;
use proptest::prelude::*;
use std::path::Path;
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    /// `feed_text`, as the reader feeds a line
    Fast,
    /// `feed_pre` with the lines' [`pre_parse_in`] as one batch, as
    /// --jobs feeds them (split calls joined on the worker)
    Pre,
    /// `feed_pre` with each line's [`pre_parse`] alone (a batch's first
    /// line: a resumed half is the parser's thread's to join)
    PreAlone,
    /// `feed_text` to a parser without the fast path
    General,
}

/// What one way made of some lines: each event with the index of the line
/// whose feed gave it (the number of lines: `finish` gave it), the counts,
/// and how many lines the fast path took.
struct Run {
    events: Vec<(usize, Event)>,
    info: InputInfo,
    taken: u64,
    joined: u64,
}

fn parse(lines: &[String], way: Way) -> Run {
    let mut p = Parser::new(
        FileId(0),
        InputInfo::new(Text::from("t.log")),
        None,
        None,
        None,
    );
    if way == Way::General {
        p = p.without_fast_path();
    }
    let mut out = Vec::new();
    let mut events = Vec::new();
    // each line where it would be in a file of them: every way refers to
    // the same lines (evidence by reference); the lines as one worker's
    // batch (Way::Pre), or each its own
    let mut off = 0u64;
    let mut st = PreState::default();
    for (i, l) in lines.iter().enumerate() {
        let n = i as u64 + 1;
        let at = Span {
            off,
            len: l.len() as u32,
        };
        off += l.len() as u64 + 1;
        p.at(at);
        match way {
            Way::Pre => p.feed_pre(
                n,
                l,
                pre_parse_in(&mut st, FileId(0), n, l, at).as_mut(),
                &mut out,
            ),
            _ => p.feed_text(n, l, &mut out),
        }
        events.extend(out.drain(..).map(|e| (i, Rc::unwrap_or_clone(e))));
    }
    p.finish(&mut out);
    events.extend(out.drain(..).map(|e| (lines.len(), Rc::unwrap_or_clone(e))));
    Run {
        events,
        info: p.info,
        taken: p.taken,
        joined: p.worker_joined,
    }
}

/// What was compared, summed over inputs.
#[derive(Debug, Default)]
struct Counts {
    lines: u64,
    events: u64,
    /// lines the fast path (feed) took
    taken: u64,
    /// lines the pre-parse took
    pre_taken: u64,
    /// resumed lines whose event a worker joined (Way::Pre)
    joined: u64,
}

/// The three ways give the same events and counts for `lines`.
fn same(what: &str, lines: &[String], counts: &mut Counts) {
    let general = parse(lines, Way::General);
    assert_eq!(
        general.taken, 0,
        "{what}: the general parser took a line fast"
    );
    for way in [Way::Fast, Way::Pre, Way::PreAlone] {
        let got = parse(lines, way);
        let at = |n: usize| lines.get(n).map_or("(the end of the file)", |s| s.as_str());
        for (k, (g, f)) in general.events.iter().zip(&got.events).enumerate() {
            assert_eq!(
                g,
                f,
                "{what}: event {k}, general vs {way:?}; general's came at line {} {:?}, \
                 {way:?}'s at line {} {:?}",
                g.0 + 1,
                at(g.0),
                f.0 + 1,
                at(f.0)
            );
        }
        assert_eq!(
            general.events.len(),
            got.events.len(),
            "{what}: events, general vs {way:?}"
        );
        assert_eq!(general.info, got.info, "{what}: info, general vs {way:?}");
        match way {
            Way::Fast => counts.taken += got.taken,
            _ => counts.pre_taken += got.taken,
        }
        match way {
            Way::Pre => counts.joined += got.joined,
            _ => assert_eq!(got.joined, 0, "{what}: {way:?} joined on a worker"),
        }
    }
    counts.lines += lines.len() as u64;
    counts.events += general.events.len() as u64;
}

/// Each line alone (a fresh parser), then all of them in order.
fn same_each_and_all(what: &str, lines: &[String], counts: &mut Counts) {
    for (i, l) in lines.iter().enumerate() {
        same(
            &format!("{what} line {} alone", i + 1),
            std::slice::from_ref(l),
            counts,
        );
    }
    same(what, lines, counts);
}

// --- the fixtures ------------------------------------------------------

use crate::parse::fixtures::fixture_logs;

/// A file's lines as they are, the newline (and a CR before it) dropped.
fn raw_lines(p: &Path) -> Vec<String> {
    let data = std::fs::read(p).unwrap();
    let mut lines: Vec<String> = data
        .split(|&c| c == b'\n')
        .map(|l| decode(l.strip_suffix(b"\r").unwrap_or(l)))
        .collect();
    if data.ends_with(b"\n") {
        lines.pop();
    }
    lines
}

/// Builtin's strace and preload parsers, without the fast path.
struct GeneralOnly;

impl Dialects for GeneralOnly {
    fn parser(
        &self,
        spec: &FileSpec,
        file: FileId,
        info: InputInfo,
        threads: Option<&Threads>,
    ) -> Option<Box<dyn Dialect>> {
        assert_ne!(spec.format, Format::Tinygrad);
        let p = Parser::new(
            file,
            info,
            spec.tid,
            threads.map(|t| t.tgid_of.clone()),
            threads.map(|t| t.handover.clone()),
        );
        Some(Box::new(p.without_fast_path()))
    }
}

type Read = (Vec<Result<Event, InputError>>, Vec<InputInfo>);

/// A file through the reader (layout clean-up, --jobs when `jobs` > 1).
fn read<D: Dialects + 'static>(path: &str, dialects: D, jobs: usize) -> Read {
    let files = open_files(path, None).unwrap();
    let mut t = Trace::new(path, files, 1 << 20, dialects);
    t.jobs = jobs;
    t.batch_lines = 3;
    t.min_bytes = 0;
    let infos = t.infos.clone();
    let evs = t.events().map(|r| r.map(Rc::unwrap_or_clone)).collect();
    let infos = infos.borrow().clone();
    (evs, infos)
}

#[test]
fn fixtures_parse_alike_both_ways() {
    let mut counts = Counts::default();
    let mut files = 0;
    for p in fixture_logs() {
        let what = p
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display();
        let what = what.to_string();
        same_each_and_all(&what, &raw_lines(&p), &mut counts);

        let path = p.to_str().unwrap();
        let general = read(path, GeneralOnly, 1);
        assert!(
            general.0.iter().all(Result::is_ok),
            "{what}: {:?}",
            general.0
        );
        for jobs in [1, 2] {
            let fast = read(path, Builtin, jobs);
            for (k, (g, f)) in general.0.iter().zip(&fast.0).enumerate() {
                assert_eq!(g, f, "{what} read: event {k}, general vs --jobs {jobs}");
            }
            assert_eq!(general.0.len(), fast.0.len(), "{what} read: events");
            assert_eq!(general.1, fast.1, "{what} read: info, --jobs {jobs}");
        }
        counts.events += general.0.len() as u64;
        files += 1;
    }
    eprintln!("fixtures: {files} files, {counts:?}");
    // the comparison is worth something only if the fast path ran
    assert!(
        counts.taken > 1000 && counts.pre_taken > 500 && counts.joined > 0,
        "{counts:?}"
    );
}

// --- generated lines ---------------------------------------------------

const PRELOAD_HEAD: &[&str] = &[
    "# rocrtrace-log 1",
    "# pid=4242 ppid=1 exe=/bin/app page_size=4096 start=1764435600.0",
];

/// props.rs's lines, some with one of the general grammar's atoms its
/// pieces lack (a shift, character literals) written in.
fn soup_line() -> impl Strategy<Value = String> {
    let line = prop_oneof![props::lines(), props::mutated_lines()];
    let atom = prop::option::of((
        proptest::sample::select(&["<<", "'", "','", "'\\''"][..]),
        any::<prop::sample::Index>(),
    ));
    (line, atom).prop_map(|(mut line, atom)| {
        if let Some((a, at)) = atom {
            let mut i = at.index(line.len() + 1);
            while !line.is_char_boundary(i) {
                i -= 1;
            }
            line.insert_str(i, a);
        }
        line
    })
}

proptest! {
    // (no regression files: the failing input is in the test's output)
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    /// The soups, alone and a few in a row (an unfinished call and its
    /// resumed half may meet), in a strace log and in a preload log.
    #[test]
    fn soups_parse_alike_both_ways(
        lines in prop::collection::vec(soup_line(), 1..8),
        preload in any::<bool>(),
    ) {
        let mut counts = Counts::default();
        let mut all: Vec<String> = Vec::new();
        if preload {
            all.extend(PRELOAD_HEAD.iter().map(|s| s.to_string()));
        }
        all.extend(lines);
        same_each_and_all("soup", &all, &mut counts);
    }

    /// A line in two `#+` pieces of a preload record: the joined line goes
    /// through the same two paths.
    #[test]
    fn continued_soups_parse_alike_both_ways(
        line in soup_line(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut k = cut.index(line.len() + 1);
        while !line.is_char_boundary(k) {
            k -= 1;
        }
        let mut all: Vec<String> = PRELOAD_HEAD.iter().map(|s| s.to_string()).collect();
        all.push(format!("#+ 4242 1+ {}", &line[..k]));
        all.push(format!("#+ 4242 2 {}", &line[k..]));
        same("continued soup", &all, &mut Counts::default());
    }
}

/// Halves of split calls and what may come between them (another entry of
/// the thread, a resumed line of another name or with the kernel's `=>`,
/// an orphan, a process's end, a superseding exec, a line the fast path
/// refuses), for the worker's join of a resumed line with its entry
/// ([`super::PreJoined`]) against the parser's own.
const SPLIT_LINES: &[&str] = &[
    "4242  1764435600.000026 ioctl(3</dev/kfd<char 238:0>>, AMDKFD_IOC_WAIT_EVENTS, 0x7f02aa3300b <unfinished ...>",
    "4243  1764435600.000030 ioctl(3</dev/kfd<char 238:0>>, _IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x38), 0x7ffc <unfinished ...>",
    "4242  1764435600.000131 <... ioctl resumed>) = 0 <0.000131>",
    "4243  1764435600.000140 <... ioctl resumed>) = -1 EINTR (Interrupted system call) <0.000002>",
    "4242  1764435600.000150 <... ioctl resumed>) = 0",
    "4243  1764435600.000160 <... read resumed>\"ab\", 16) = 2 <0.000001>",
    "4242  1764435600.000170 read(5</tmp/f>, <unfinished ...>",
    "4242  1764435600.000180 <... read resumed>\"xy\", 16) = 2 <0.000009>",
    "4244  1764435600.000190 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0, stack=0x7f, stack_size=0x1000}, 88 <unfinished ...>",
    "4245  1764435600.000200 close(4) = 0",
    "4244  1764435600.000210 <... clone3 resumed> => {parent_tid=[4245]}, 88) = 4245",
    "4243  1764435600.000220 openat(AT_FDCWD, \"/dev/kfd\", O_RDWR <unfinished ...>",
    "4243  1764435600.000230 <... openat resumed>) = 6</dev/kfd<char 238:0>> <0.000010>",
    "4243  1764435600.000240 <... openat resumed>) = 99999999999999999999999999999999999999999",
    "4242  1764435600.000250 +++ exited with 0 +++",
    "4244  1764435600.000260 execve(\"/bin/true\", [\"true\"], 0x7ffd /* 1 var */ <unfinished ...>",
    "4242  1764435600.000270 <... execve resumed>) = 0",
    "4245  1764435600.000280 mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</dev/kfd>, 0 <unfinished ...>",
    "4245  1764435600.000290 <... mmap resumed>) = 0x7f0000000000 <0.000004>",
    "4245  1764435600.000300 <... mmap resumed>) = 0x7f0000000000 <unfinished ...>",
    "4242 1764435600.000310 ioctl(3, 0xc0184b20 <unfinished ...>",
    "4242 1764435600.000320 <... ioctl resumed>, 0x7ffc) = 0",
];

proptest! {
    /// Split calls in any order, as one batch of a worker and each line
    /// alone: the events the parser makes of them.
    #[test]
    fn split_calls_parse_alike_all_ways(
        lines in prop::collection::vec(prop::sample::select(SPLIT_LINES), 1..24),
    ) {
        let lines: Vec<String> = lines.into_iter().map(str::to_owned).collect();
        same("split calls", &lines, &mut Counts::default());
    }
}

/// The worker joins a resumed line with the entry of its batch, and the
/// parser takes its event only when that entry is the one waiting.
#[test]
fn split_calls_join_on_the_worker() {
    let all: Vec<String> = SPLIT_LINES.iter().map(|s| s.to_string()).collect();
    let mut counts = Counts::default();
    same_each_and_all("split calls", &all, &mut counts);
    // entries 0/2, 1/3, 6/7, 8/10, 11/12, 15/16 (another tid's execve:
    // the parser's), 17/18, 20/21 are pairs the batch has
    assert!(counts.joined >= 6, "{counts:?}");
}

/// Lines the fast path must take, each alone and all in a row, so the soups
/// are not the only check of the common shapes.
#[test]
fn common_shapes_parse_alike_both_ways() {
    let lines: Vec<String> = [
        "4242  1764435600.000026 openat(AT_FDCWD</work>, \"/dev/kfd\", O_RDWR) = 3</dev/kfd<char 238:0>> <0.000020>",
        "4242 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
        "4243 1764435600.2 close(5) = 0",
        "4242 1764435600.5 <... ioctl resumed>) = 0",
        "4242 10:00:01.250 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3</dev/kfd>, 0x1000) = 0x7f0000000000 <0.000004>",
        "4242 1764435600.6 close(9) = -1 EBADF (Bad file descriptor) <0.000001>",
        "4242 1764435600.7 umask(022) = 022",
        "4242 1764435600.8 getpid() = 4242",
        "4242 1764435600.9 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0, stack=0x7f, stack_size=0x1000}, 88 <unfinished ...>",
        "4244 1764435601.0 close(4) = 0",
        "4242 1764435601.1 <... clone3 resumed> => {parent_tid=[4244]}, 88) = 4244",
        "4242 1764435601.2 write(1, \"a, b)\", 5) = 5",
        "4242 1764435601.3 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
        "4242 1764435601.4 dup(7</tmp/x (deleted)>) = 8</tmp/x (deleted)>",
        "4242 1764435601.5 exit_group(0) = ?",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut counts = Counts::default();
    same_each_and_all("common shapes", &lines, &mut counts);
    assert!(counts.taken >= 2 * 12, "{counts:?}");
}

/// Results strace made up (`-e inject`, `-e fault`), as strace 6.1 prints
/// them: every way marks the same events, and only the poke of `args`
/// alone is a call that ran.
#[test]
fn injected_results_are_marked_alike_both_ways() {
    let lines: Vec<String> = [
        "4242 1764435600.1 openat(AT_FDCWD, \"/etc/hostname\", O_RDONLY) = 9 (INJECTED) <0.000004>",
        "4242 1764435600.2 close(3) = 0 (INJECTED)",
        "4242 1764435600.3 close(4) = -1 EBADF (Bad file descriptor) (INJECTED) <0.000002>",
        "4242 1764435600.4 write(2, \"x\", 1) = -1 EIO (Input/output error) (INJECTED) (DELAYED)",
        "4242 1764435600.5 write(1, \"Ai\\n\", 3) = 5 (INJECTED: args, retval)",
        "4242 1764435600.6 write(1, \"Ai\\n\", 3) = 3 (INJECTED: args)",
        "4242 1764435600.7 close(5) = -1 ENOTSUPP (Unknown error 524) (INJECTED)",
        "4242 1764435600.8 close(6) = -1 (errno 1000) (INJECTED)",
        "4242 1764435600.9 close(7) = 0",
    ]
    .map(str::to_owned)
    .to_vec();
    same_each_and_all("injected", &lines, &mut Counts::default());
    let r = parse(&lines, Way::Fast);
    let marks: Vec<bool> = r.events.iter().map(|(_, e)| e.h.injected).collect();
    assert_eq!(
        marks,
        [true, true, true, true, true, false, true, true, false]
    );
    assert_eq!(r.info.injected, 7);
    assert_eq!(r.events[0].1.h.ret, Some(9));
    assert_eq!(r.events[2].1.h.err.as_deref(), Some("EBADF"));
}

/// The fast path only reads lines; seen from outside, turning it off
/// changes nothing but this count.
#[test]
fn without_the_fast_path_no_line_is_taken_fast() {
    let l = vec!["42 1764435600.1 close(3) = 0".to_owned()];
    assert_eq!(parse(&l, Way::Fast).taken, 1);
    assert_eq!(parse(&l, Way::Pre).taken, 1);
    assert_eq!(parse(&l, Way::General).taken, 0);
    assert!(tokens::scan_line(&l[0]).is_some());
}

/// A parse of one line the general way: (events, unparsed).
fn general_alone(line: &str) -> (usize, u64) {
    let r = parse(&[line.to_owned()], Way::General);
    (r.events.len(), r.info.unparsed)
}

/// Lines on which the two paths once differed, each an unparsed line now
/// (strace prints no such result; neither path may guess at it).
#[test]
fn results_the_paths_once_read_differently() {
    let zeros = "0".repeat(70);
    let lines = [
        // the fast path read 30 (and -0) and dropped the rest; the general
        // grammar reads no number run into hex digits
        "4242  1764435600.000026 openat(AT_FDCWD</work>, \"/dev/kfd\", O_RDWR) = 30x1f</dev/kfd<char 238:0>> <0.000020>".to_owned(),
        "1 1764435600.1 close(3) = 30x1f".to_owned(),
        "1 1764435600.1 close(3) = -0x10".to_owned(),
        // the fast path read numbers of any length, the general grammar at
        // most 64 digits
        format!("1 1764435600.1 close(3) = 0x{zeros}1"),
        format!("1 1764435600.1 close(3) = {zeros}"),
        format!("1 1764435600.1 close(3) = -{zeros} <0.5>"),
        // past i128 the general grammar read no number, as for `= ?`; the
        // fast path took i128::MIN (and counted it unparsed)
        "1 1764435600.1 close(3) = -170141183460469231731687303715884105728".to_owned(),
        "1 1764435600.1 close(3) = 170141183460469231731687303715884105728 <0.5>".to_owned(),
        format!("1 1764435600.1 mmap(NULL, 4096) = 0x1{}", "0".repeat(32)),
    ];
    let mut counts = Counts::default();
    for l in &lines {
        same(l, std::slice::from_ref(l), &mut counts);
        assert_eq!(general_alone(l), (0, 1), "{l}");
    }
    // i128::MIN is the one it takes
    assert_eq!(counts.taken, 1, "{counts:?}");
}

#[test]
fn zz_seq() {
    let Ok(f) = std::env::var("DBG_SEQ") else {
        return;
    };
    let lines: Vec<String> = std::fs::read_to_string(f)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    for l in &lines {
        eprintln!("scan {l:?}: {:?}", tokens::scan_line(l));
    }
    for w in [Way::General, Way::Fast, Way::Pre] {
        let r = parse(&lines, w);
        for (i, e) in &r.events {
            eprintln!("{w:?} at {i}: {} {:?} ret={:?}", e.name, e.kind, e.h.ret);
        }
        eprintln!(
            "{w:?} unparsed={} {:?}",
            r.info.unparsed, r.info.unparsed_samples
        );
    }
    same("seq", &lines, &mut Counts::default());
}

/// Argument lists the fast path once split differently: the general
/// grammar's `<<` (a shift) and `'c'` (a character literal) atoms.
#[test]
fn arguments_the_paths_once_split_differently() {
    let lines = [
        // the fast path read `<<char 238:0>,>` as one fd decoration
        "4242  1764435600.000013 ioctl(<<char 238:0>,>) = 0",
        "1 1764435600.1 ioctl(3, 1<<2, <a>) = 0",
        // the fast path split `','` at its comma
        "1 1764435600.1 ioctl(3, ',', 1) = 0",
        "1 1764435600.1 ioctl(3, '\\'', 0x1) = 0",
    ];
    let mut counts = Counts::default();
    for l in lines.map(str::to_owned) {
        same(&l, std::slice::from_ref(&l), &mut counts);
    }
    assert_eq!(counts.taken, 4, "the fast path takes them: {counts:?}");
    // what the general grammar makes of them
    let r = parse(&[lines[0].to_owned(), lines[2].to_owned()], Way::General);
    let req = |k: usize| match &r.events[k].1.kind {
        crate::events::Kind::Ioctl(i) => i.ioctl,
        k => panic!("{k:?}"),
    };
    assert_eq!((req(0), req(1)), (Some(">"), Some("','")));
}
