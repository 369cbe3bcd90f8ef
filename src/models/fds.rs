//! The fd lifetime model: one fd table per process, replayed from events.
//!
//! It decides fd-double-close, fd-bad-fd, fd-close-reused,
//! fd-use-after-close, fd-leak, fd-open-at-exit (`all_fds`) and
//! fd-exhaustion.  The kernel's answer is the ground truth: only an EBADF
//! proves an fd was not open, so errors are only ever raised on EBADF
//! answers, never on the model's belief alone.
//!
//! Memory follows live state: open slots, and per fd number the last slot
//! that held it and the close that ended it.

use super::common::*;
use super::dmabuf::BufRef;
use crate::events::{Event, Header, Kind, Name, Text, When};
use crate::findings::{Evidence, Finding, Repeats};
use crate::kfd;
use crate::ordered::Ordered;
use crate::rules::{Rule, Severity};
type IndexMap<K, V> = indexmap::IndexMap<K, V, foldhash::fast::RandomState>;
use foldhash::{HashMap, HashSet};
use serde_json::{Map, Value as Json, json};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

pub type Pid = Option<u32>;
pub type Fd = i64;

const CLOSE_RANGE_UNSHARE: u32 = 2;
const CLOSE_RANGE_CLOEXEC: u32 = 4;
const O_CLOEXEC: i128 = 0o2000000;
const MAP_ANONYMOUS: u64 = 0x20;

const GPU_OBJECT_KINDS: [&str; 2] = ["dmabuf", "sync_file"];
const DEVICE_KINDS: [&str; 3] = ["kfd", "drm-render", "accel"];

/// ioctls that install a new fd: (where the fd is: an `out` field, or None
/// for the return value; kind; origin).
fn creating_ioctl(key: kfd::Key) -> Option<(Option<&'static str>, &'static str, &'static str)> {
    Some(match key {
        kfd::EXPORT_DMABUF => (Some("dmabuf_fd"), "dmabuf", "AMDKFD_IOC_EXPORT_DMABUF"),
        kfd::PRIME_HANDLE_TO_FD => (Some("fd"), "dmabuf", "DRM_IOCTL_PRIME_HANDLE_TO_FD"),
        kfd::DMA_HEAP_ALLOC => (Some("fd"), "dmabuf", "DMA_HEAP_IOCTL_ALLOC"),
        kfd::SYNCOBJ_HANDLE_TO_FD => (Some("fd"), "sync_file", "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD"),
        kfd::DMABUF_EXPORT_SYNC_FILE => (Some("fd"), "sync_file", "DMA_BUF_IOCTL_EXPORT_SYNC_FILE"),
        kfd::SMI_EVENTS => (Some("anon_fd"), "other", "AMDKFD_IOC_SMI_EVENTS"),
        kfd::UDMABUF_CREATE => (None, "dmabuf", "UDMABUF_CREATE"),
        kfd::UDMABUF_CREATE_LIST => (None, "dmabuf", "UDMABUF_CREATE_LIST"),
        _ => return None,
    })
}

/// Origins that export a buffer as a new dma-buf fd.
pub const EXPORT_ORIGINS: [&str; 5] = [
    "AMDKFD_IOC_EXPORT_DMABUF",
    "DRM_IOCTL_PRIME_HANDLE_TO_FD",
    "DMA_HEAP_IOCTL_ALLOC",
    "UDMABUF_CREATE",
    "UDMABUF_CREATE_LIST",
];

/// ioctls that take a second fd inside their struct (borrowed).
fn inner_fd_field(key: kfd::Key) -> Option<&'static str> {
    match key {
        kfd::IMPORT_DMABUF | kfd::GET_DMABUF_INFO => Some("dmabuf_fd"),
        kfd::PRIME_FD_TO_HANDLE | kfd::DMABUF_IMPORT_SYNC_FILE => Some("fd"),
        kfd::ACQUIRE_VM => Some("drm_fd"),
        _ => None,
    }
}

const ALLOC_IOCTLS: [&str; 3] = [
    "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
    "DRM_IOCTL_AMDGPU_GEM_CREATE",
    "DRM_IOCTL_AMDXDNA_CREATE_BO",
];
const ALLOC_INTENTS: [&str; 1] = ["hsa_amd_vmem_handle_create"];

fn handover_intent(name: &str) -> Option<&'static str> {
    match name {
        "hsa_amd_vmem_export_shareable_handle" => Some("dmabuf_fd"),
        "hsa_amd_portable_export_dmabuf" => Some("dmabuf"),
        _ => None,
    }
}

fn borrow_intent(name: &str) -> Option<&'static str> {
    match name {
        "hsa_amd_vmem_import_shareable_handle" => Some("dmabuf_fd"),
        "hsa_amd_portable_close_dmabuf" => Some("dmabuf"),
        _ => None,
    }
}

/// Syscalls that fail with EBADF for a valid fd opened in the wrong mode.
const MODE_EBADF: [&str; 19] = [
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "ftruncate",
    "fallocate",
    "sendfile",
    "copy_file_range",
    "splice",
    "flock",
    "fsync",
    "fdatasync",
    "mmap",
];

/// Calls that ask whether a number is open and expect EBADF as an answer.
const PROBES: [&str; 13] = [
    "fstat",
    "fstat64",
    "newfstatat",
    "fstatat64",
    "statx",
    "fstatfs",
    "fstatfs64",
    "fcntl",
    "fcntl64",
    "poll",
    "ppoll",
    "select",
    "pselect6",
];
const PROBE_SELECT: &str = "_newselect";

fn is_probe(name: &str) -> bool {
    PROBES.contains(&name) || name == PROBE_SELECT
}

/// A close-all sweep (SPEC 4.1).
const SWEEP_MIN: u64 = 4;
const SWEEP_SETTLED: u64 = 4096;

const IOCTL_ORIGINS: [&str; 4] = ["AMDKFD_", "DRM_", "DMA_", "UDMABUF"];

fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// fd kind from a readlink / -y decoration; tolerant of ' (deleted)' and
/// -yy '<char M:m>' nesting a parser may have left in place.
pub fn kind_of_path(path: Option<&[u8]>) -> &'static str {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return "unknown";
    };
    // Only the head decides: the suffixes cut below start with `<`, `(` or
    // a space, none of which is in a prefix tested, so they never cut into
    // one.  A path that starts with ASCII other than a space is read as
    // bytes, without decoding it (a call per fd use).
    if path[0].is_ascii() && !py_space(char::from(path[0])) {
        return kind_of_head(path);
    }
    let s = String::from_utf8_lossy(path);
    let mut p: &str = s.trim_matches(py_space);
    p = strip_dev_suffix(p);
    if let Some(r) = p.strip_suffix("(deleted)") {
        p = r.trim_end_matches(py_space);
    }
    kind_of_head(p.as_bytes())
}

/// The kind the start of a path names.
fn kind_of_head(p: &[u8]) -> &'static str {
    if p.starts_with(b"/dev/kfd") {
        "kfd"
    } else if p.starts_with(b"/dev/dri/renderD") {
        "drm-render"
    } else if p.starts_with(b"/dev/accel/") {
        "accel"
    } else if p.starts_with(b"/dmabuf:")
        || p.starts_with(b"anon_inode:dmabuf")
        || p.starts_with(b"anon_inode:[dmabuf")
    {
        "dmabuf"
    } else if p.starts_with(b"anon_inode:sync_file") || p.starts_with(b"anon_inode:[sync_file") {
        "sync_file"
    } else {
        "other"
    }
}

/// `<char [0-9]+:[0-9]+>$` removed.
fn strip_dev_suffix(p: &str) -> &str {
    let Some(body) = p.strip_suffix('>') else {
        return p;
    };
    let Some(i) = body.rfind("<char ") else {
        return p;
    };
    let nums = &body[i + 6..];
    let Some((a, b)) = nums.split_once(':') else {
        return p;
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    if digits(a) && digits(b) { &p[..i] } else { p }
}

fn kind_of(path: Option<&Text>) -> &'static str {
    kind_of_path(path.map(|t| t.as_bytes()))
}

/// One fd number's current occupant.
#[derive(Debug, Clone)]
pub struct Slot {
    pub fd: Fd,
    pub generation: u64,
    pub kind: &'static str,
    /// creator kind: open, dup, ioctl name, inherited ...
    pub origin: Name,
    /// the call that installed this number
    pub creator: Option<Ev>,
    /// the original creation through dup chains
    pub root: Option<Ev>,
    pub root_origin: Name,
    /// open file description (dup shares it)
    pub ofd: u64,
    pub cloexec: bool,
    pub path: Option<Text>,
    pub gpu: bool,
    pub last_use: Option<Ev>,
    pub uses: u64,
    pub allocs_at_use: u64,
    /// (role, event), at most 4: imports, hand-overs (boxed: most fds
    /// have none, and a slot is per live fd)
    pub notable: Option<Box<Vec<(String, Ev)>>>,
    pub prev: Option<Rc<RefCell<Closed>>>,
    /// the handle model's buffer identity (dup shares it)
    pub buffer: Option<BufRef>,
    /// an EBADF use while open: maybe a close in progress
    pub racing: Option<Ev>,
    /// insertion order in its table
    order: u64,
}

impl Slot {
    pub fn exported(&self) -> bool {
        EXPORT_ORIGINS.contains(&&*self.root_origin)
    }

    /// `fd 7 (dmabuf /dmabuf:, created by AMDKFD_IOC_EXPORT_DMABUF at f:12)`
    pub fn describe(&self, names: &Names) -> String {
        let mut first = self.kind.to_owned();
        if let Some(p) = &self.path {
            first.push(' ');
            first.push_str(&p.to_string_lossy());
        }
        let mut bits = vec![first];
        if self.origin == "unknown" {
            bits.push("creator not in the trace".into());
        } else if self.origin == "pre-existing" {
            bits.push("open before the trace started".into());
        }
        if let Some(c) = &self.creator {
            match &self.root {
                Some(r) if !Rc::ptr_eq(r, c) => bits.push(format!(
                    "a {} made by {} of the fd created by {}",
                    self.origin,
                    short(names, Some(c)),
                    short(names, Some(r))
                )),
                _ => bits.push(format!(
                    "{}created by {}",
                    if self.origin == "inherited" {
                        "inherited, "
                    } else {
                        ""
                    },
                    short(names, Some(c))
                )),
            }
        }
        format!("fd {} ({})", self.fd, bits.join(", "))
    }

    fn note(&mut self, role: String, ev: &Ev) {
        let notable = self.notable.get_or_insert_default();
        if notable.len() < 4 {
            notable.push((role, ev.clone()));
        }
    }

    fn copy(&self, origin: Option<&Name>) -> Slot {
        Slot {
            origin: origin.cloned().unwrap_or_else(|| self.origin.clone()),
            prev: None,
            racing: None,
            ..self.clone()
        }
    }
}

#[derive(Debug)]
pub struct Closed {
    pub slot: Box<Slot>,
    /// the call that closed it (None: an unseen close)
    pub event: Option<Ev>,
    /// close, close_range, dup2, exec, unseen
    pub how: &'static str,
    pub flagged: bool,
    pub image: u64,
    pub pid: Pid,
}

type ClosedRef = Rc<RefCell<Closed>>;

/// Closes (and close_range pieces) of monotone numbers on one thread, with
/// only calls that create no fd between them: a close-all sweep candidate
/// (SPEC 4.1).  Its closes' findings are held until it ends.
#[derive(Debug)]
struct Run {
    last: Fd,
    first_ev: Ev,
    last_ev: Ev,
    closes: u64,
    ebadf: u64,
    lo: Fd,
    hi: Fd,
    held: Option<Vec<usize>>,
    settled: bool,
    /// 1 ascending, -1 descending, 0 not known yet (one close)
    dir: i8,
    /// close_range pieces in the run
    ranges: u64,
    /// a piece reached the fd limit (`close_range(N, ~0U)`)
    open_ended: bool,
    /// an EBADF close of the fd a `/proc/self/fd` listing read and closed
    listing: bool,
}

impl Run {
    /// Whether a close of `n` continues the run: the next number in its
    /// direction (kept fds may be skipped).
    fn continues(&self, n: Fd) -> bool {
        match self.dir {
            0 => n != self.last && self.ranges == 0 || self.ranges > 0 && n > self.last,
            1 => n > self.last,
            _ => n < self.last,
        }
    }
}

/// The processes by pid in the order they were first seen (the end of the
/// trace ends them in that order), and how many of them were not seen from
/// their start (what a new process's `whole` asks): a process comes and
/// goes in O(1), whatever else is live.
#[derive(Default)]
struct Procs {
    map: Ordered<Pid, Box<Proc>>,
    /// entries that are not `complete`; one taken out by [`Procs::swap`]
    /// counts again when it is put back
    incomplete: usize,
}

impl Procs {
    fn len(&self) -> usize {
        self.map.len()
    }

    fn contains_key(&self, pid: &Pid) -> bool {
        self.map.contains_key(pid)
    }

    fn get(&self, pid: &Pid) -> Option<&Proc> {
        self.map.get(pid).map(|p| &**p)
    }

    fn count(&mut self, p: &Proc, sign: isize) {
        if !p.complete {
            self.incomplete = self.incomplete.wrapping_add_signed(sign);
        }
    }

    /// Change a process in place (its `complete` counted again).
    fn update<R>(&mut self, pid: &Pid, f: impl FnOnce(&mut Proc) -> R) -> Option<R> {
        let (place, mut p) = self.map.take(pid)?;
        self.count(&p, -1);
        let r = f(&mut p);
        self.count(&p, 1);
        self.map.put(*pid, Some(place), p);
        Some(r)
    }

    /// Insert or replace (a dict assignment: an existing key keeps its place).
    fn insert(&mut self, pid: Pid, p: Box<Proc>) {
        self.count(&p, 1);
        if let Some(old) = self.map.insert(pid, p) {
            self.count(&old, -1);
        }
    }

    /// `with` in the place of `pid`'s process, which is returned (a handler
    /// works on it outside the map); it counts again when put back.
    fn swap(&mut self, pid: &Pid, with: Box<Proc>) -> Box<Proc> {
        let slot = self.map.get_mut(pid).expect("present");
        let out = std::mem::replace(slot, with);
        self.count(&out, -1);
        out
    }

    /// Put back what [`Procs::swap`] took out; returns the stand-in.
    fn put_back(&mut self, pid: &Pid, p: Box<Proc>) -> Box<Proc> {
        self.count(&p, 1);
        let slot = self.map.get_mut(pid).expect("present");
        std::mem::replace(slot, p)
    }

    fn remove(&mut self, pid: &Pid) {
        if let Some(p) = self.map.remove(pid) {
            self.count(&p, -1);
        }
    }
}

type RunKey = (Pid, Option<u32>);

/// The open runs by (pid, tid) in the order they began (several ending at
/// once end in that order: their notes keep their place among equals), and
/// each process's own, found without a scan of every run (a process end is
/// O(its runs), whatever else is open).
#[derive(Debug, Default)]
struct Runs {
    map: Ordered<RunKey, Run>,
    of_pid: HashMap<Pid, HashSet<Option<u32>>>,
}

impl Runs {
    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn get(&self, key: &RunKey) -> Option<&Run> {
        self.map.get(key)
    }

    /// The run of `key` taken out, with its place for [`Runs::put`].
    fn take(&mut self, key: &RunKey) -> Option<(u64, Run)> {
        let out = self.map.take(key)?;
        if let Some(tids) = self.of_pid.get_mut(&key.0) {
            tids.remove(&key.1);
            if tids.is_empty() {
                self.of_pid.remove(&key.0);
            }
        }
        Some(out)
    }

    /// Put a run (back): `place` None starts a new one.
    fn put(&mut self, key: RunKey, place: Option<u64>, run: Run) {
        self.of_pid.entry(key.0).or_default().insert(key.1);
        self.map.put(key, place, run);
    }

    /// The keys of `pid`'s runs (every run's: None), in the order they began.
    fn keys(&self, pid: Option<Pid>) -> Vec<RunKey> {
        let Some(pid) = pid else {
            return self.map.keys();
        };
        let mut v: Vec<(u64, RunKey)> = self.of_pid.get(&pid).map_or_else(Vec::new, |tids| {
            tids.iter()
                .filter_map(|&t| Some((self.map.place(&(pid, t))?, (pid, t))))
                .collect()
        });
        v.sort_unstable_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    }
}

#[derive(Debug, Default, Clone)]
pub struct Table {
    /// boxed: a table of 10^6 open fds holds 2^21 buckets, and an entry
    /// of a pointer, not of a whole slot, per bucket (SPEC 7: memory per
    /// live fd)
    pub slots: HashMap<Fd, Box<Slot>>,
    pub closed: HashMap<Fd, ClosedRef>,
    gens: HashMap<Fd, u64>,
    pub users: i64,
    next_order: u64,
    /// one thread's own table (`unshare(CLONE_FILES)`, a thread cloned
    /// without CLONE_FILES, `close_range(CLOSE_RANGE_UNSHARE)` in a thread)
    own_thread: bool,
}

impl Table {
    fn copy(&self, origin: &Name) -> Table {
        Table {
            slots: self
                .slots
                .iter()
                .map(|(n, s)| (*n, Box::new(s.copy(Some(origin)))))
                .collect(),
            closed: self.closed.clone(),
            gens: self.gens.clone(),
            users: 0,
            next_order: self.next_order,
            own_thread: false,
        }
    }

    fn next_gen(&mut self, n: Fd) -> u64 {
        let g = self.gens.entry(n).or_insert(0);
        *g += 1;
        *g
    }

    fn lowest_free(&self) -> Fd {
        let mut n = 0;
        while self.slots.contains_key(&n) {
            n += 1;
        }
        n
    }

    /// The open numbers in their insertion order in the table (`order`).
    pub fn ordered(&self) -> Vec<Fd> {
        let mut v: Vec<(u64, Fd)> = self.slots.values().map(|s| (s.order, s.fd)).collect();
        v.sort_unstable();
        v.into_iter().map(|(_, n)| n).collect()
    }

    fn insert(&mut self, mut s: Slot) {
        self.next_order += 1;
        s.order = self.next_order;
        self.slots.insert(s.fd, Box::new(s));
    }
}

#[derive(Debug, Default)]
pub struct Proc {
    pub pid: Pid,
    table: u64,
    tids: HashSet<Option<u32>>,
    /// a fork child that has not exec'd
    pub forked: bool,
    /// saw fd-creating ioctls without their structs
    pub blind: bool,
    pub ioctl_allocs: u64,
    pub intent_allocs: u64,
    exhaustion: Option<usize>,
    pub exit_snapshot: bool,
    pub ended: bool,
    pub complete: bool,
    pub image: u64,
    first: bool,
    /// this image had a second thread (seen, or made by a thread clone):
    /// between two closes of one number another thread could have been
    /// handed it, so a double close may have closed someone else's fd
    threaded: bool,
    /// first seen by a plain call of its own, no snapshot: under `strace -f`
    /// a fork child can run before strace prints its parent's clone result
    early: bool,
    /// threads with a table of their own, by tid (the others share `table`)
    tid_tables: HashMap<Option<u32>, u64>,
    /// the program it runs, as replay.rs Programs learns it (the header,
    /// execve, the parent's at fork)
    exe: Option<Text>,
    /// `table` is the current event's thread's own table
    swapped: bool,
    /// the current event gave its thread a table of its own
    unshared: bool,
}

impl Proc {
    pub fn allocs(&self) -> u64 {
        if self.intent_allocs != 0 {
            self.intent_allocs
        } else {
            self.ioctl_allocs
        }
    }
}

/// What the handle model hears from the fd model (opens, releases, process
/// ends) and the describe_buffer hook it answers.
pub trait Listener {
    fn on_fd_open(&mut self, _p: &Proc, _s: &Slot, _ev: &Ev) {}
    fn on_fd_release(&mut self, _p: &Proc, _s: &Slot, _ev: Option<&Ev>, _how: &str) {}
    fn on_process_end(&mut self, _p: &Proc, _t: &Table, _ev: Option<&Ev>, _exited: bool) {}
    /// None: no hook installed
    fn describe_buffer(&self, _pid: Pid, _s: &Slot) -> Option<Option<String>> {
        None
    }
}

/// The plain fd model's listener: none.
pub struct NoListener;
impl Listener for NoListener {}

/// One row of `rocrtrace show --fd`: (event, what happened, the state after).
pub type HistRow = (Ev, String, Option<String>);

/// The parts of the model the handlers write: findings, history, the run
/// being closed.
struct Out {
    findings: Vec<Option<Finding>>,
    /// repeats of final findings, counted in their first
    repeats: Repeats,
    /// findings emitted now wait (a save probe's)
    hold: bool,
    /// each live process's first occurrences (folded across processes of
    /// its program when it ends)
    firsts: HashMap<Pid, Vec<usize>>,
    history: Vec<HistRow>,
    sink: Option<Run>,
    watch: Option<(Pid, Fd)>,
    all_fds: bool,
    ofd: u64,
    names: Rc<Names>,
}

/// The fd tables by id: a process holds its table's id (CLONE_FILES shares
/// one); a handler takes its table out while it works on it.
#[derive(Default)]
struct Tables(Vec<Option<Box<Table>>>);

impl Tables {
    fn get(&self, id: &u64) -> Option<&Table> {
        self.0.get(*id as usize)?.as_deref()
    }

    fn get_mut(&mut self, id: &u64) -> Option<&mut Table> {
        self.0.get_mut(*id as usize)?.as_deref_mut()
    }

    fn remove(&mut self, id: &u64) -> Option<Box<Table>> {
        self.0.get_mut(*id as usize)?.take()
    }

    fn insert(&mut self, id: u64, t: Box<Table>) {
        let i = id as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        self.0[i] = Some(t);
    }
}

pub struct FdModel {
    procs: Procs,
    /// a default Proc that stands in a process's place while it is handled
    spare: Option<Box<Proc>>,
    tables: Tables,
    next_table: u64,
    runs: Runs,
    save: Option<SaveProbe>,
    /// fd numbers a result strace made up announced (`dup2(3, 20) = 20
    /// (INJECTED)`), by the call that said so: the program believes in
    /// them, and its EBADF on one is the injection's doing
    phantoms: HashMap<(Pid, Fd), Ev>,
    o: Out,
    finished: bool,
}

/// `fcntl(N, F_DUPFD, 10) = -1 EBADF` then `dup2(X, N)`: a shell (dash,
/// ash) saving fd N before redirecting onto it, and learning it was not
/// open.  The fcntl's findings wait for that thread's next call: a dup2 or
/// dup3 onto N makes the fcntl a probe and takes them back.
struct SaveProbe {
    key: (Pid, Option<u32>),
    fd: Fd,
    held: std::ops::Range<usize>,
}

fn subject(fd: Fd, kind: &str) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("kind".into(), json!("fd"));
    m.insert("fd".into(), json!(fd));
    m.insert("fd_kind".into(), json!(kind));
    m
}

fn ev_note(role: impl Into<String>, ev: &Event) -> Evidence {
    Evidence::new(role, ev).with_note(site(ev))
}

fn finding(
    rule: Rule,
    msg: String,
    ev: Option<&Event>,
    subj: Map<String, Json>,
    evidence: Vec<Evidence>,
    key: Vec<String>,
) -> Finding {
    let mut f = Finding::new(rule, msg, ev);
    f.subject = subj;
    f.evidence = evidence;
    f.key = key;
    f
}

fn sort_story(ev: &mut [Evidence]) {
    ev.sort_by(|a, b| story_order(&a.event, &b.event));
}

fn fd_arg(ev: &Event) -> Fd {
    match &ev.kind {
        Kind::Close(c) => c.fd.into(),
        Kind::CloseRange(r) => r.first.into(),
        _ => 0,
    }
}

impl Out {
    fn watched(&self, pid: Pid, fd: Fd) -> bool {
        matches!(self.watch, Some((w, f)) if f == fd && (w.is_none() || w == pid))
    }

    fn hist(
        &mut self,
        t: Option<&Table>,
        ev: &Ev,
        pid: Pid,
        fd: Fd,
        what: impl FnOnce() -> String,
    ) {
        if !self.watched(pid, fd) {
            return;
        }
        let s = t.and_then(|t| t.slots.get(&fd));
        let mut state = match s {
            Some(s) => s.describe(&self.names),
            None => "not open".to_owned(),
        };
        if let Some(s) = s
            && let Some(u) = &s.last_use
        {
            state += &format!("; last use {}", short(&self.names, Some(u)));
        }
        self.history.push((ev.clone(), what(), Some(state)));
    }

    /// A close in a run is reported at once; if the run turns out to be a
    /// sweep its findings are taken back.  A final finding (outside a run)
    /// that repeats an earlier one is counted there (its index returned).
    fn emit(&mut self, f: Finding) -> Option<usize> {
        if let Some(run) = &mut self.sink {
            if run.settled {
                return None;
            }
            run.held
                .get_or_insert_with(Vec::new)
                .push(self.findings.len());
        } else if !self.hold {
            let all = &self.findings;
            if let Some(i) = self.repeats.fold(&f, all.len(), |i| all.get(i)?.as_ref()) {
                return Some(i);
            }
            self.first(&f, self.findings.len());
        }
        self.findings.push(Some(f));
        Some(self.findings.len() - 1)
    }

    /// `f`, at `i`, is a first occurrence of its process.
    fn first(&mut self, f: &Finding, i: usize) {
        if let Some(e) = &f.event {
            self.firsts.entry(e.h.pid).or_default().push(i);
        }
    }

    /// A process ended: its findings fold into those of ended processes of
    /// its program.
    fn end_process(&mut self, pid: Pid, program: Option<&Text>) {
        let Some(firsts) = self.firsts.remove(&pid) else {
            return;
        };
        let all = &self.findings;
        let folded = self
            .repeats
            .end_process(firsts, program.map(Text::as_bytes), |i| {
                all.get(i)?.as_ref()
            });
        for i in folded {
            self.findings[i] = None;
        }
        self.trim();
    }

    fn retract(&mut self, run: &mut Run) {
        if let Some(held) = run.held.take() {
            for i in held {
                self.findings[i] = None;
            }
            self.trim();
        }
    }

    /// Held findings that stay (a run that was no sweep, a save that was
    /// no probe): final now, and repeats too.
    fn settle(&mut self, held: impl IntoIterator<Item = usize>) {
        for i in held {
            let Some(f) = self.findings[i].take() else {
                continue;
            };
            let all = &self.findings;
            if self.repeats.fold(&f, i, |j| all.get(j)?.as_ref()).is_none() {
                self.first(&f, i);
                self.findings[i] = Some(f);
            }
        }
        self.trim();
    }

    /// Taken-back findings at the end hold no place.
    fn trim(&mut self) {
        while self.findings.last().is_some_and(Option::is_none) {
            self.findings.pop();
        }
    }

    fn new_ofd(&mut self) -> u64 {
        self.ofd += 1;
        self.ofd
    }

    fn short(&self, ev: Option<&Ev>) -> String {
        short(&self.names, ev)
    }

    fn file(&self, ev: &Event) -> String {
        self.names.file(ev)
    }

    // --- slot lifecycle -------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        ev: &Ev,
        fd: Fd,
        kind: &'static str,
        origin: Name,
        path: Option<Text>,
        cloexec: bool,
        src: Option<&Slot>,
        gpu: bool,
        what: impl FnOnce() -> String,
    ) {
        if t.slots.contains_key(&fd) {
            // The kernel handed out a number the model thought open: a close
            // happened that the trace could not see.
            self.release(p, t, l, fd, None, "unseen");
        }
        let closed = t.closed.remove(&fd);
        if let Some(c) = &closed {
            c.borrow_mut().slot.prev = None; // one generation back, not a chain
        }
        let made = if origin == "unknown" || origin == "pre-existing" {
            None
        } else {
            Some(ev.clone())
        };
        let generation = t.next_gen(fd);
        let s = match src {
            Some(src) => Slot {
                fd,
                generation,
                kind: if kind == "unknown" { src.kind } else { kind },
                origin,
                creator: made,
                root: src.root.clone(),
                root_origin: src.root_origin.clone(),
                ofd: src.ofd,
                cloexec,
                path: path.or_else(|| src.path.clone()),
                gpu: src.gpu || gpu,
                last_use: None,
                uses: 0,
                allocs_at_use: p.allocs(),
                notable: None,
                prev: closed,
                buffer: src.buffer.clone(),
                racing: None,
                order: 0,
            },
            None => Slot {
                fd,
                generation,
                kind,
                origin: origin.clone(),
                creator: made.clone(),
                root: made,
                root_origin: origin,
                ofd: self.new_ofd(),
                cloexec,
                path,
                gpu: gpu || GPU_OBJECT_KINDS.contains(&kind),
                last_use: None,
                uses: 0,
                allocs_at_use: p.allocs(),
                notable: None,
                prev: closed,
                buffer: None,
                racing: None,
                order: 0,
            },
        };
        t.insert(s);
        l.on_fd_open(p, &t.slots[&fd], ev);
        self.hist(Some(t), ev, p.pid, fd, what);
    }

    fn release(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: Option<&Ev>,
        how: &'static str,
    ) -> bool {
        let Some(s) = t.slots.remove(&fd) else {
            return false;
        };
        let c = Rc::new(RefCell::new(Closed {
            slot: s,
            event: ev.cloned(),
            how,
            flagged: false,
            image: p.image,
            pid: p.pid,
        }));
        t.closed.insert(fd, c.clone());
        l.on_fd_release(p, &c.borrow().slot, ev, how);
        true
    }

    /// A successful use proves the fd is open: reconcile the model.
    #[allow(clippy::too_many_arguments)]
    fn use_fd(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: &Ev,
        path: Option<&Text>,
        role: Option<String>,
    ) {
        let path = path.filter(|p| !p.0.is_empty());
        let pk = path.map(|p| kind_of(Some(p)));
        let mut present = false;
        if let Some(s) = t.slots.get_mut(&fd) {
            present = true;
            if path.is_some()
                && s.path.is_none()
                && IOCTL_ORIGINS.iter().any(|o| s.origin.starts_with(o))
            {
                // The creating ioctl is authoritative about what it installed
                s.path = path.cloned();
            } else if let Some(pk) = pk
                && pk != "unknown"
                && s.kind != "unknown"
                && s.kind != pk
                && !(s.kind == "other" && pk == "other")
            {
                // another kind of file holds this number now
                present = false;
            }
        }
        if !present
            && !t.slots.contains_key(&fd)
            && !matches!(ev.kind, Kind::Close(_))
            && let Some(c) = t.closed.get(&fd).cloned()
            && c.borrow()
                .event
                .as_deref()
                .is_some_and(|ce| began_before_end(ev, ce))
        {
            // It took its own reference to the file before another thread's
            // close released the number (a read on a fd being closed
            // completes): proof the fd was open when it began, not now.
            let mut c = c.borrow_mut();
            c.slot.last_use = Some(ev.clone());
            c.slot.uses += 1;
            let name = call_name(ev).to_owned();
            self.hist(Some(t), ev, p.pid, fd, || {
                format!(
                    "{name} began before another thread's close of fd {fd} ended: it held the file"
                )
            });
            return;
        }
        if !present {
            if t.slots.contains_key(&fd) {
                self.release(p, t, l, fd, None, "unseen");
            }
            self.install(
                p,
                t,
                l,
                ev,
                fd,
                pk.unwrap_or("unknown"),
                Cow::Borrowed("unknown"),
                path.cloned(),
                false,
                None,
                false,
                || format!("fd {fd} first seen in use; its creator is not in the trace"),
            );
        } else if let Some(s) = t.slots.get_mut(&fd)
            && s.kind == "unknown"
            && let Some(pk) = pk
        {
            s.kind = pk;
            s.path = path.cloned();
            s.gpu = s.gpu || GPU_OBJECT_KINDS.contains(&pk);
        }
        let allocs = p.allocs();
        let s = t.slots.get_mut(&fd).expect("installed");
        s.last_use = Some(ev.clone());
        s.uses += 1;
        s.allocs_at_use = allocs;
        if let Some(r) = role {
            s.note(r, ev);
        }
    }
}

impl FdModel {
    /// `watch`: (pid or None, fd) whose history `history()` records.
    pub fn new(watch: Option<(Pid, Fd)>, all_fds: bool, names: Rc<Names>) -> Self {
        FdModel {
            procs: Procs::default(),
            spare: None,
            tables: Tables::default(),
            next_table: 0,
            runs: Runs::default(),
            save: None,
            phantoms: HashMap::default(),
            o: Out {
                findings: Vec::new(),
                repeats: Repeats::default(),
                hold: false,
                firsts: HashMap::default(),
                history: Vec::new(),
                sink: None,
                watch,
                all_fds,
                ofd: 0,
                names,
            },
            finished: false,
        }
    }

    pub fn names(&self) -> &Rc<Names> {
        &self.o.names
    }

    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.o.findings.iter().flatten()
    }

    /// The findings made so far, newest first, to amend in place.
    pub fn findings_newest_mut(&mut self) -> impl Iterator<Item = &mut Finding> {
        self.o.findings.iter_mut().rev().flatten()
    }

    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.o.findings)
            .into_iter()
            .flatten()
            .collect()
    }

    pub fn history(&self) -> &[HistRow] {
        &self.o.history
    }

    pub fn history_mut(&mut self) -> &mut Vec<HistRow> {
        &mut self.o.history
    }

    pub fn watched(&self, pid: Pid, fd: Fd) -> bool {
        self.o.watched(pid, fd)
    }

    pub fn lookup(&self, pid: Pid, fd: Fd) -> Option<&Slot> {
        let p = self.procs.get(&pid)?;
        self.tables.get(&p.table)?.slots.get(&fd).map(|s| &**s)
    }

    pub fn lookup_mut(&mut self, pid: Pid, fd: Fd) -> Option<&mut Slot> {
        let p = self.procs.get(&pid)?;
        self.tables
            .get_mut(&p.table)?
            .slots
            .get_mut(&fd)
            .map(|s| &mut **s)
    }

    fn new_table(&mut self, t: Table) -> u64 {
        self.next_table += 1;
        self.tables.insert(self.next_table, Box::new(t));
        self.next_table
    }

    /// Feed one event (a copy is kept where the model needs it).
    pub fn feed(&mut self, ev: &Event) {
        self.feed_rc(&Rc::new(ev.clone()), &mut NoListener);
    }

    /// Feed a shared event, telling `l` (the handle model) about fds.
    pub fn feed_rc(&mut self, ev: &Ev, l: &mut dyn Listener) {
        if let Kind::FdCreate(c) = &ev.kind
            && ev.h.ok()
            && (ev.h.injected || !self.phantoms.is_empty())
        {
            for &fd in &c.fds {
                let key = (ev.h.pid, Fd::from(fd));
                if ev.h.injected {
                    self.phantoms.insert(key, ev.clone());
                } else {
                    self.phantoms.remove(&key);
                }
            }
        }
        if ev.h.injected {
            return; // the kernel never ran it: no fd changed, none was used
        }
        let pid = ev.h.pid;
        let live = self.procs.get(&pid).is_some_and(|p| !p.ended);
        if !live {
            let table = self.new_table(Table {
                users: 1,
                ..Default::default()
            });
            let p = Proc {
                pid,
                table,
                first: true,
                ..Default::default()
            };
            self.procs.insert(pid, Box::new(p));
        }
        let stand_in = self.spare.take().unwrap_or_default();
        let mut p = self.procs.swap(&pid, stand_in);
        // a process first met by a plain call while every other one was seen
        // from its start: a child (strace -f follows each from its first
        // call) whose clone result strace has not printed yet
        let whole = p.first && self.procs.len() > 1 && self.procs.incomplete == 0;
        if p.first {
            self.first_event(&mut p, ev, whole);
        }
        if ev.h.tid.is_some() {
            p.tids.insert(ev.h.tid);
            p.threaded |= p.tids.len() > 1;
        }
        if !self.runs.is_empty() {
            let key = (pid, ev.h.tid);
            if let Some(run) = self.runs.get(&key) {
                let ends = run_ends(run, ev);
                if ends {
                    self.end_run(key);
                }
            }
        }
        if let Some(sp) = self.save.take() {
            self.settle_save(sp, ev);
        }
        if matches!(ev.h.err.as_deref(), Some("EMFILE" | "ENFILE")) {
            self.exhaustion(&mut p, ev);
        }
        // a thread with a table of its own works on it (its exit ends the
        // process's shared one)
        let shared = p.table;
        let own = match &ev.kind {
            Kind::Exit(_) => None,
            _ => p.tid_tables.get(&ev.h.tid).copied(),
        };
        if let Some(tt) = own {
            p.table = tt;
            p.swapped = true;
        }
        match &ev.kind {
            Kind::ProcessInfo(pi) => {
                if let Some(exe) = pi.exe.as_ref().filter(|e| !e.0.is_empty()) {
                    p.exe = Some(exe.clone());
                }
            }
            Kind::Exec(x) if ev.h.ret == Some(0) => {
                if let Some(path) = x.path.as_ref().filter(|e| !e.0.is_empty()) {
                    p.exe = Some(path.clone());
                }
            }
            _ => {}
        }
        self.handle(&mut p, ev, l);
        if p.swapped || p.unshared {
            let mine = p.table;
            p.swapped = false;
            p.unshared = false;
            if matches!(ev.kind, Kind::Exec(_)) && ev.h.ok() {
                // execve ends every other thread: its table is the process's
                p.tid_tables.clear();
            } else {
                p.tid_tables.insert(ev.h.tid, mine);
                p.table = shared;
            }
        }
        if let Kind::Exit(k) = &ev.kind
            && !k.whole
        {
            p.tid_tables.remove(&ev.h.tid);
        }
        let ended = p.ended;
        self.spare = Some(self.procs.put_back(&pid, p));
        if ended {
            self.procs.remove(&pid);
        }
        #[cfg(test)]
        assert_eq!(
            self.procs.incomplete,
            self.procs.map.iter().filter(|(_, p)| !p.complete).count()
        );
    }

    fn first_event(&mut self, p: &mut Proc, ev: &Event, whole: bool) {
        p.first = false;
        match &ev.kind {
            Kind::Exec(_) if ev.h.err.is_none() => p.complete = true,
            Kind::Exec(_) | Kind::FdSnapshot(_) => {
                if matches!(ev.kind, Kind::Exec(_)) && self.procs.len() > 1 {
                    p.forked = true;
                }
            }
            Kind::ProcessInfo(pi) => {
                // a preload log per process: a child of a traced process
                let par = if pi.ppid == p.pid {
                    false // par is p
                } else {
                    self.procs.contains_key(&pi.ppid)
                };
                p.forked = par;
            }
            _ => {
                if self.procs.len() > 1 {
                    p.forked = true;
                    p.complete = whole;
                }
                p.early = true;
            }
        }
    }

    fn handle(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        match &ev.kind {
            Kind::FdCreate(_) => self.on_create(p, ev, l),
            Kind::Close(_) => self.on_close(p, ev, l),
            Kind::CloseRange(_) => self.on_close_range(p, ev, l),
            Kind::SetCloexec(_) => self.on_cloexec(p, ev, l),
            Kind::Syscall(_) => self.on_syscall(p, ev, l),
            Kind::Mmap(_) => self.on_mmap(p, ev, l),
            Kind::Ioctl(_) => self.on_ioctl(p, ev, l),
            Kind::Intent(_) => self.on_intent(p, ev),
            Kind::Clone(_) => self.on_clone(p, ev),
            Kind::Exec(_) => self.on_exec(p, ev, l),
            Kind::FdSnapshot(_) => self.on_snapshot(p, ev, l),
            Kind::Exit(_) => self.on_exit(p, ev, l),
            _ => {}
        }
    }

    /// The table of `p`, taken out of the arena while a handler works on it.
    fn take_table(&mut self, p: &Proc) -> Box<Table> {
        self.tables.remove(&p.table).unwrap_or_default()
    }

    fn put_table(&mut self, p: &Proc, t: Box<Table>) {
        self.tables.insert(p.table, t);
    }

    fn on_create(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::FdCreate(k) = &ev.kind else { return };
        let mut t = self.take_table(p);
        let mut src: Option<Slot> = None;
        if let Some(sf) = k.src_fd
            && k.origin != "pidfd_getfd"
        {
            if ev.h.err.as_deref() == Some("EBADF") {
                self.dup_ebadf(p, &mut t, ev, l);
                self.put_table(p, t);
                return;
            }
            if ev.h.ok() && sf >= 0 {
                self.o.use_fd(p, &mut t, l, sf.into(), ev, None, None);
                src = t.slots.get(&Fd::from(sf)).map(|s| (**s).clone());
            }
        }
        if ev.h.ok() {
            for (i, &fd) in k.fds.iter().enumerate() {
                if fd < 0 {
                    continue;
                }
                let fd = Fd::from(fd);
                let path = k.paths.get(i).cloned().flatten();
                if k.origin == "dup" {
                    if k.src_fd.map(Fd::from) == Some(fd) {
                        continue; // dup2(fd, fd): nothing changes
                    }
                    if k.replace && t.slots.contains_key(&fd) {
                        self.o.release(p, &mut t, l, fd, Some(ev), "dup2");
                        let name = &ev.name;
                        self.o.hist(Some(&*t), ev, p.pid, fd, || {
                            format!("{name} closed fd {fd} to reuse its number")
                        });
                    }
                    if let Some(src) = &src {
                        let kind = if path.is_some() {
                            kind_of(path.as_ref())
                        } else {
                            "unknown"
                        };
                        let (name, sfd) = (&ev.name, k.src_fd);
                        self.o.install(
                            p,
                            &mut t,
                            l,
                            ev,
                            fd,
                            kind,
                            Cow::Borrowed("dup"),
                            path,
                            k.cloexec,
                            Some(src),
                            false,
                            || format!("fd {fd} = {name} of fd {}", opt(sfd)),
                        );
                        continue;
                    }
                }
                let kind = kind_of(path.as_ref());
                let name = &ev.name;
                self.o.install(
                    p,
                    &mut t,
                    l,
                    ev,
                    fd,
                    kind,
                    k.origin.clone(),
                    path,
                    k.cloexec,
                    None,
                    false,
                    || format!("fd {fd} created by {name}"),
                );
            }
        }
        self.put_table(p, t);
    }

    /// Which fd a failing dup is about (SPEC 4.1).
    /// The thread that saved fd N with F_DUPFD makes its next call: a
    /// dup2/dup3 onto N takes the fcntl's findings back.
    fn settle_save(&mut self, sp: SaveProbe, ev: &Ev) {
        if sp.key != (ev.h.pid, ev.h.tid) {
            self.save = Some(sp);
            return;
        }
        let onto = match &ev.kind {
            Kind::FdCreate(k) if k.replace => k.new_fd.map(Fd::from),
            _ => None,
        };
        if onto != Some(sp.fd) {
            self.o.settle(sp.held);
            return;
        }
        for i in sp.held {
            self.o.findings[i] = None;
        }
        self.o.trim();
        if self.o.watched(ev.h.pid, sp.fd) {
            self.o.history.push((
                ev.clone(),
                format!(
                    "the fcntl before it saved fd {} before a redirection: a probe",
                    sp.fd
                ),
                None,
            ));
        }
    }

    fn dup_ebadf(&mut self, p: &mut Proc, t: &mut Table, ev: &Ev, l: &mut dyn Listener) {
        let Kind::FdCreate(k) = &ev.kind else { return };
        let old = Fd::from(k.src_fd.unwrap_or(0));
        let new = k.new_fd.map(Fd::from);
        if new.is_none() && old >= 0 && matches!(&*ev.name, "fcntl" | "fcntl64") {
            let start = self.o.findings.len();
            // kept apart from repeats until the probe is settled
            self.o.hold = true;
            self.dup_ebadf_judged(p, t, ev, old, new, l);
            self.o.hold = false;
            self.save = Some(SaveProbe {
                key: (ev.h.pid, ev.h.tid),
                fd: old,
                held: start..self.o.findings.len(),
            });
            return;
        }
        self.dup_ebadf_judged(p, t, ev, old, new, l);
    }

    fn dup_ebadf_judged(
        &mut self,
        p: &mut Proc,
        t: &mut Table,
        ev: &Ev,
        old: Fd,
        new: Option<Fd>,
        l: &mut dyn Listener,
    ) {
        if old < 0 {
            self.bad_fd(p, t, ev, old);
            return;
        }
        if let Some(n) = new
            && n < 0
        {
            self.bad_fd(p, t, ev, n);
            return;
        }
        if t.slots.contains_key(&old) {
            let name = &ev.name;
            self.o.hist(Some(t), ev, p.pid, old, || {
                format!("{name} failed with EBADF: about the new fd")
            });
            return;
        }
        if t.closed.contains_key(&old) {
            self.bad_use(p, t, ev, old, false, l);
        } else if new.is_none() {
            self.bad_fd(p, t, ev, old);
        }
    }

    fn on_close(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let fd = fd_arg(ev);
        let ebadf = ev.h.err.as_deref() == Some("EBADF");
        let mut t = self.take_table(p);
        if fd < 0 {
            if ebadf {
                self.bad_fd(p, &t, ev, fd);
            }
            self.put_table(p, t);
            return;
        }
        let key = (ev.h.pid, ev.h.tid);
        let (seq, mut run) = match self.runs.take(&key) {
            Some((seq, r)) => (Some(seq), r),
            None => (None, placeholder_run(ev)),
        };
        if run.closes + run.ranges > 0 && run.dir == 0 {
            run.dir = if fd > run.last { 1 } else { -1 };
        }
        run.last = fd;
        run.last_ev = ev.clone();
        run.closes += 1;
        if ebadf {
            run.ebadf += 1;
            if run.lo < 0 || fd < run.lo {
                run.lo = fd;
            }
            run.hi = run.hi.max(fd);
        }
        self.o.sink = Some(run);
        self.close(p, &mut t, ev, fd, l);
        let mut run = self.o.sink.take().expect("sink");
        if !run.settled && run.closes >= SWEEP_SETTLED && is_sweep(&run) {
            run.settled = true;
            self.o.retract(&mut run);
        }
        self.runs.put(key, seq, run);
        self.put_table(p, t);
    }

    fn end_run(&mut self, key: (Pid, Option<u32>)) {
        let Some((_, mut run)) = self.runs.take(&key) else {
            return;
        };
        if run.settled || is_sweep(&run) {
            self.o.retract(&mut run);
            if run.ebadf > 0 {
                self.sweep_note(&run);
            }
        } else {
            self.o.settle(run.held.take().into_iter().flatten());
        }
    }

    fn sweep_note(&mut self, run: &Run) {
        let (ev0, ev1) = (&run.first_ev, &run.last_ev);
        let (f0, f1) = (fd_arg(ev0), fd_arg(ev1));
        let order = if run.dir < 0 {
            "decreasing"
        } else {
            "increasing"
        };
        let ranges = if run.ranges > 0 {
            format!(" and {} close_range pieces", run.ranges)
        } else {
            String::new()
        };
        let shape = if run.listing {
            "; it closes the numbers a /proc/self/fd listing returned, and the listing's own fd, \
             already closed by closedir, is the one that fails"
        } else if run.open_ended {
            "; together they reach the fd limit"
        } else {
            ""
        };
        let msg = format!(
            "close-all sweep: {} closes{ranges} of {order} fd numbers ({f0} to {f1}) on one \
             thread, with no fd created in between{shape}; {} of them (fd {} the lowest, {} the \
             highest) failed with EBADF: not open. This is how a daemon or a child between fork \
             and execve drops the fds it may have inherited; the EBADF closes are not double \
             closes",
            run.closes, run.ebadf, run.lo, run.hi
        );
        let mut f = finding(
            Rule::FdBadFd,
            msg,
            Some(ev0),
            subject(f0, "unknown"),
            vec![
                ev_note("first close of the sweep", ev0),
                ev_note("last close of the sweep", ev1),
            ],
            vec!["sweep".into(), "close".into()],
        );
        f.severity = Some(Severity::Note);
        f.details.insert(
            "sweep".into(),
            json!({"closes": run.closes, "ebadf": run.ebadf, "first": f0, "last": f1}),
        );
        self.o.emit(f);
    }

    fn close(&mut self, p: &mut Proc, t: &mut Table, ev: &Ev, fd: Fd, l: &mut dyn Listener) {
        let Kind::Close(c) = &ev.kind else { return };
        if ev.h.err.as_deref() == Some("EBADF") {
            self.bad_close(p, t, ev, l);
            return;
        }
        if ev.h.ret.is_none() {
            // The kernel's answer is not in the trace: assume it closed
            self.o.release(p, t, l, fd, Some(ev), "close");
            self.o.hist(Some(t), ev, p.pid, fd, || {
                "close with no result in the trace".into()
            });
            return;
        }
        // Success, EINTR, EIO ...: Linux releases the number in every case but EBADF.
        if !t.slots.contains_key(&fd) || c.path.as_ref().is_some_and(|p| !p.0.is_empty()) {
            self.o.use_fd(p, t, l, fd, ev, c.path.as_ref(), None);
        }
        if t.slots[&fd].racing.is_some() {
            self.racing_use(p, t, fd, ev);
        }
        let flagged = self.check_reused(p, t, fd, ev);
        self.o.release(p, t, l, fd, Some(ev), "close");
        t.closed[&fd].borrow_mut().flagged = flagged;
        let err = ev.h.err.clone();
        self.o.hist(Some(t), ev, p.pid, fd, || {
            format!(
                "fd {fd} closed{}",
                err.map(|e| format!(" ({e}: released anyway)"))
                    .unwrap_or_default()
            )
        });
    }

    fn on_close_range(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::CloseRange(k) = &ev.kind else {
            return;
        };
        if !ev.h.ok() {
            return;
        }
        let (first, last) = (Fd::from(k.first), Fd::from(k.last));
        if k.flags & CLOSE_RANGE_UNSHARE != 0 {
            self.unshare_files(p, ev);
        }
        let mut t = self.take_table(p);
        if k.flags & CLOSE_RANGE_CLOEXEC != 0 {
            for n in t.ordered() {
                if first <= n && n <= last {
                    t.slots.get_mut(&n).expect("open").cloexec = true;
                    self.o.hist(Some(&*t), ev, p.pid, n, || {
                        format!("fd {n} marked close-on-exec by close_range")
                    });
                }
            }
            self.put_table(p, t);
            return;
        }
        let key = (ev.h.pid, ev.h.tid);
        let (seq, mut run) = match self.runs.take(&key) {
            Some((seq, r)) => (Some(seq), r),
            None => (None, placeholder_run(ev)),
        };
        if run.closes + run.ranges > 0 && run.dir == 0 {
            run.dir = 1;
        }
        run.last = last;
        run.last_ev = ev.clone();
        run.ranges += 1;
        let open_ended = reaches_limit(k.last);
        run.open_ended |= open_ended;
        self.o.sink = Some(run);
        let known = |n: &Fd| t.slots.contains_key(n) || t.closed.contains_key(n);
        let span = last - first + 1;
        if !p.blind
            && !open_ended
            && span <= 65536
            && (first..=last).filter(known).count() as Fd * 2 > span
        {
            // A bounded close_range over numbers most of which held fds the
            // trace saw names the fds it means to close, like close() does
            // (one over numbers that never held one is a sweep); the
            // findings wait for the run, which may turn out to be pieces of
            // a sweep around kept fds
            let mut ns: Vec<Fd> = t
                .closed
                .iter()
                .filter(|(n, c)| {
                    let c = c.borrow();
                    first <= **n
                        && **n <= last
                        && !t.slots.contains_key(n)
                        && c.event.is_some()
                        && (c.how == "close" || c.how == "close_range")
                        && c.pid == p.pid
                        && c.image == p.image
                })
                .map(|(n, _)| *n)
                .collect();
            ns.sort_unstable();
            for n in ns {
                let c = t.closed[&n].clone();
                self.double_close(p, &t, ev, n, Some(&c), l);
            }
        }
        for n in t.ordered() {
            if first <= n && n <= last {
                self.o.release(p, &mut t, l, n, Some(ev), "close_range");
                self.o.hist(Some(&*t), ev, p.pid, n, || {
                    format!("fd {n} closed by close_range({first}, {last})")
                });
            }
        }
        let run = self.o.sink.take().expect("sink");
        self.runs.put(key, seq, run);
        if open_ended {
            // nothing is left above it to close: the sweep is complete
            self.end_run(key);
        }
        self.put_table(p, t);
    }

    /// CLONE_FILES undone (`unshare`, `close_range(CLOSE_RANGE_UNSHARE)`):
    /// the calling thread gets a copy of the table it shared, from now on
    /// its own; the threads and processes it shared it with keep theirs.
    fn unshare_files(&mut self, p: &mut Proc, ev: &Ev) {
        if p.swapped {
            return; // its table is its own already
        }
        let others = p
            .tids
            .iter()
            .any(|x| *x != ev.h.tid && !p.tid_tables.contains_key(x));
        let Some(t) = self.tables.get_mut(&p.table) else {
            return;
        };
        if others {
            let mut c = t.copy(&Cow::Borrowed("inherited"));
            c.users = 1;
            c.own_thread = true;
            p.table = self.new_table(c);
            p.unshared = true;
        } else if t.users > 1 {
            t.users -= 1;
            let mut c = t.copy(&Cow::Borrowed("inherited"));
            c.users = 1;
            p.table = self.new_table(c);
        }
    }

    fn on_cloexec(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::SetCloexec(k) = &ev.kind else {
            return;
        };
        let fd = Fd::from(k.fd);
        if fd < 0 {
            return;
        }
        let mut t = self.take_table(p);
        let lost_in_exec = t.closed.get(&fd).is_some_and(|c| c.borrow().how == "exec");
        if ev.h.err.as_deref() == Some("EBADF") && lost_in_exec {
            // it was meant to survive the exec: opened O_CLOEXEC by mistake
            self.bad_use(p, &mut t, ev, fd, false, l);
        } else if ev.h.err.as_deref() == Some("EBADF") {
            // a probe, as F_GETFD is: node and daemons mark every number
            // from 3 up close-on-exec at start and expect EBADF for most
            if t.slots.contains_key(&fd) {
                self.o.release(p, &mut t, l, fd, None, "unseen");
            }
            self.o.hist(Some(&*t), ev, p.pid, fd, || {
                "F_SETFD probe: not open (EBADF)".to_string()
            });
        } else if ev.h.ok() {
            self.o.use_fd(p, &mut t, l, fd, ev, None, None);
            t.slots.get_mut(&fd).expect("open").cloexec = k.cloexec;
            let on = k.cloexec;
            self.o.hist(Some(&*t), ev, p.pid, fd, || {
                format!("close-on-exec {}", if on { "set" } else { "cleared" })
            });
        }
        self.put_table(p, t);
    }

    fn on_syscall(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Syscall(k) = &ev.kind else { return };
        if &*ev.name == "unshare" && ev.h.ok() && unshares_files(ev.h.text.as_bytes()) {
            self.unshare_files(p, ev);
            return;
        }
        let mut t = self.take_table(p);
        if ev.h.err.as_deref() == Some("EBADF") {
            let pos: Vec<Fd> = k
                .fds
                .iter()
                .map(|&f| Fd::from(f))
                .filter(|&f| f >= 0)
                .collect();
            if is_probe(&ev.name) {
                // the answer to a question, not a failed use
                for &fd in &pos {
                    if t.slots.contains_key(&fd) {
                        self.o.release(p, &mut t, l, fd, None, "unseen");
                    }
                    let name = &ev.name;
                    self.o.hist(Some(&*t), ev, p.pid, fd, || {
                        format!("{name} probe: not open (EBADF)")
                    });
                }
                self.put_table(p, t);
                return;
            }
            if let Some(&neg) = k.fds.iter().find(|&&f| f < 0) {
                self.bad_fd(p, &t, ev, neg.into());
                self.put_table(p, t);
                return;
            }
            let closed: Vec<Fd> = pos
                .iter()
                .copied()
                .filter(|f| !t.slots.contains_key(f) && t.closed.contains_key(f))
                .collect();
            if closed.len() == 1 {
                self.bad_use(p, &mut t, ev, closed[0], false, l);
            } else if closed.is_empty() && pos.len() == 1 {
                match t.slots.get_mut(&pos[0]) {
                    None => self.bad_fd(p, &t, ev, pos[0]),
                    Some(s) => {
                        if s.racing.is_none() {
                            // the wrong open mode, an O_PATH fd, or another
                            // thread's close still in progress: that close decides
                            s.racing = Some(ev.clone());
                        }
                    }
                }
            }
            self.put_table(p, t);
            return;
        }
        if ev.h.ok() {
            for (i, &fd) in k.fds.iter().enumerate() {
                if fd < 0 {
                    continue;
                }
                let fd = Fd::from(fd);
                let path = k.paths.get(i).and_then(|x| x.as_ref());
                self.o.use_fd(p, &mut t, l, fd, ev, path, None);
                let name = &ev.name;
                self.o
                    .hist(Some(&*t), ev, p.pid, fd, || format!("used by {name}"));
            }
        }
        self.put_table(p, t);
    }

    fn on_mmap(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Mmap(k) = &ev.kind else { return };
        if k.flags & MAP_ANONYMOUS != 0 {
            return;
        }
        let fd = Fd::from(k.fd);
        let ebadf = ev.h.err.as_deref() == Some("EBADF");
        let mut t = self.take_table(p);
        if fd < 0 {
            if ebadf {
                self.bad_fd(p, &t, ev, fd); // a file mapping of fd -1
            }
        } else if ebadf {
            self.bad_use(p, &mut t, ev, fd, true, l);
        } else if ev.h.ok() {
            self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || "mmap of this fd".into());
        }
        self.put_table(p, t);
    }

    fn on_ioctl(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Ioctl(k) = &ev.kind else { return };
        let key = match (k.type_, k.nr) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        };
        let arg = k
            .arg
            .as_ref()
            .filter(|v| matches!(v, crate::events::Value::Struct(_)));
        let inner = match (arg, key.and_then(inner_fd_field)) {
            (Some(a), Some(f)) => fd_value(a.get(f)),
            _ => None,
        };
        let mut t = self.take_table(p);
        if ev.h.err.as_deref() == Some("EBADF") {
            self.ioctl_ebadf(p, &mut t, ev, inner, l);
            self.put_table(p, t);
            return;
        }
        let fd = Fd::from(k.fd);
        if ev.h.ok()
            && let Some(ty) = k.type_
            && (ty == kfd::TYPE_KFD || ty == kfd::TYPE_DRM)
        {
            let name = match k.ioctl {
                Some(n) => Some(n),
                None => {
                    let path: Option<&[u8]> = match &k.path {
                        Some(pp) if !pp.0.is_empty() => Some(pp.as_bytes()),
                        _ => t.slots.get(&fd).and_then(|s| match s.kind {
                            "accel" => Some(&b"/dev/accel/"[..]),
                            "drm-render" => Some(&b"/dev/dri/"[..]),
                            _ => None,
                        }),
                    };
                    match k.nr {
                        Some(nr) => kfd::ioctl_name(ty, nr, path, None),
                        None => None,
                    }
                }
            };
            if name.is_some_and(|n| ALLOC_IOCTLS.contains(&n)) {
                p.ioctl_allocs += 1;
            }
        }
        if ev.h.ret.is_none() || ev.h.err.is_some() {
            if fd >= 0 && ev.h.ret.is_some() {
                // An ioctl that reached the driver proves its fd was open.
                self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            }
            self.put_table(p, t);
            return;
        }
        let label = k.ioctl.unwrap_or("ioctl");
        if fd >= 0 {
            self.o.use_fd(p, &mut t, l, fd, ev, k.path.as_ref(), None);
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || format!("{label} on this fd"));
        }
        if let Some(inner) = inner
            && inner >= 0
        {
            let role = (key == Some(kfd::IMPORT_DMABUF) || key == Some(kfd::PRIME_FD_TO_HANDLE))
                .then(|| "imported by".to_owned());
            self.o.use_fd(p, &mut t, l, inner, ev, None, role);
            self.o
                .hist(Some(&*t), ev, p.pid, inner, || format!("passed to {label}"));
        }
        let Some(key) = key else {
            self.put_table(p, t);
            return;
        };
        let Some((where_, mut kind, origin)) = creating_ioctl(key) else {
            self.put_table(p, t);
            return;
        };
        let newfd = match where_ {
            None => ev.h.ret,
            Some(w) => {
                let out = k
                    .out
                    .as_ref()
                    .filter(|v| matches!(v, crate::events::Value::Struct(_)));
                match out {
                    Some(out) => fd_value(out.get(w)),
                    None => {
                        // strace: the new fd is in a struct we cannot read.
                        p.blind = true;
                        if self.o.watch.is_some() {
                            let lf = t.lowest_free();
                            if self.o.watched(p.pid, lf) {
                                self.o.history.push((
                                    ev.clone(),
                                    format!(
                                        "{origin} probably created fd {lf} (lowest free number; \
                                         the struct is not in the trace)"
                                    ),
                                    None,
                                ));
                            }
                        }
                        self.put_table(p, t);
                        return;
                    }
                }
            }
        };
        let Some(newfd) = newfd.filter(|&f| f >= 0) else {
            self.put_table(p, t);
            return;
        };
        let num =
            |f: &str| -> Option<i128> { arg.and_then(|a| a.get(f)).and_then(|v| v.as_i128()) };
        // `arg.get("flags", 0)`, 0 when it is not an int
        let flags = num("flags").unwrap_or(0);
        let mut cloexec = true;
        if key == kfd::EXPORT_DMABUF || key == kfd::PRIME_HANDLE_TO_FD {
            cloexec = flags & O_CLOEXEC != 0;
        } else if key == kfd::DMA_HEAP_ALLOC {
            cloexec = match arg.and_then(|a| a.get("fd_flags")) {
                None => false,
                Some(v) => v.as_i128().is_some_and(|ff| ff & O_CLOEXEC != 0),
            };
        } else if key == kfd::UDMABUF_CREATE {
            cloexec = flags & 1 != 0;
        }
        if key == kfd::SYNCOBJ_HANDLE_TO_FD && flags & 1 == 0 {
            kind = "other"; // a syncobj fd, not a sync_file: still a GPU object
        }
        let gpu = kind != "other" || key == kfd::SYNCOBJ_HANDLE_TO_FD;
        self.o.install(
            p,
            &mut t,
            l,
            ev,
            newfd,
            kind,
            Cow::Borrowed(origin),
            None,
            cloexec,
            None,
            gpu,
            || format!("fd {newfd} created by {origin}"),
        );
        self.put_table(p, t);
    }

    fn on_intent(&mut self, p: &mut Proc, ev: &Ev) {
        let Kind::Intent(k) = &ev.kind else { return };
        if ALLOC_INTENTS.contains(&&*ev.name) && ev.h.ok() && ev.h.ret == Some(0) {
            p.intent_allocs += 1;
        }
        let mut t = self.take_table(p);
        if let Some(fld) = handover_intent(&ev.name)
            && ev.h.ret == Some(0)
        {
            let v = field(&k.outs, fld).or_else(|| field(&k.args, fld));
            if let Some(fd) = fd_value(v).filter(|&f| f >= 0) {
                if let Some(s) = t.slots.get_mut(&fd) {
                    s.note("handed to the caller by".into(), ev);
                } else if t.closed.contains_key(&fd) {
                    self.stale_handover(&t, ev, p.pid, fd);
                }
                let name = &ev.name;
                self.o.hist(Some(&*t), ev, p.pid, fd, || {
                    format!("{name} handed fd {fd} to its caller")
                });
            }
        }
        if let Some(fld) = borrow_intent(&ev.name)
            && let Some(fd) = fd_value(field(&k.args, fld)).filter(|&f| f >= 0)
        {
            if let Some(s) = t.slots.get_mut(&fd) {
                s.note(format!("passed to {} by", ev.name), ev);
            }
            let name = &ev.name;
            self.o
                .hist(Some(&*t), ev, p.pid, fd, || format!("passed to {name}"));
        }
        self.put_table(p, t);
    }

    fn on_clone(&mut self, p: &mut Proc, ev: &Ev) {
        let Kind::Clone(k) = &ev.kind else { return };
        let child: Option<i64> = k.child.map(i64::from).or(ev.h.ret);
        let Some(child) = child else { return };
        if k.thread && ev.h.ok() && child > 0 {
            p.threaded = true;
            if !k.share_files
                && let Ok(c) = u32::try_from(child)
                && let Some(t) = self.tables.get(&p.table)
            {
                // a thread without CLONE_FILES: a copy of the table, its own
                let mut c2 = t.copy(&Cow::Borrowed("inherited"));
                c2.users = 1;
                c2.own_thread = true;
                let id = self.new_table(c2);
                p.tid_tables.insert(Some(c), id);
            }
        }
        if !ev.h.ok() || child <= 0 || ev.h.pid.is_none() || k.thread {
            return;
        }
        let Ok(child) = u32::try_from(child) else {
            return;
        };
        let cpid = Some(child);
        if cpid == p.pid {
            return; // (a process cannot be its own child)
        }
        if let Some(table) = self.adopt(p, cpid, k.share_files) {
            self.inherited(ev, cpid, table);
            return;
        }
        if let Some(c) = self.procs.get(&cpid)
            && !c.ended
            && (self
                .tables
                .get(&c.table)
                .is_some_and(|t| !t.slots.is_empty())
                || !c.tids.is_empty())
        {
            // The child's own log came first (its start snapshot is the truth);
            // only lend it our creators for the numbers it holds.
            let ctid = c.table;
            let pt = self.tables.get(&p.table).cloned().unwrap_or_default();
            if let Some(ct) = self.tables.get_mut(&ctid) {
                for n in ct.ordered() {
                    let s = &ct.slots[&n];
                    if let Some(ps) = pt.slots.get(&n)
                        && (s.origin == "pre-existing" || s.origin == "unknown")
                    {
                        let order = s.order;
                        let mut copy = ps.copy(Some(&Cow::Borrowed("inherited")));
                        copy.order = order;
                        ct.slots.insert(n, Box::new(copy));
                    }
                }
            }
            return;
        }
        let table = self.child_table(p, k.share_files);
        let c = Proc {
            pid: cpid,
            table,
            forked: true,
            blind: p.blind,
            complete: p.complete,
            first: false,
            exe: p.exe.clone(),
            ..Default::default()
        };
        // (a dict assignment: an existing key keeps its place)
        self.procs.insert(cpid, Box::new(c));
        self.inherited(ev, cpid, table);
    }

    /// The table a clone gives its child: the parent's, shared
    /// (CLONE_FILES), or a copy of it.
    fn child_table(&mut self, p: &Proc, share_files: bool) -> u64 {
        if share_files {
            self.tables.get_mut(&p.table).expect("table").users += 1;
            return p.table;
        }
        let mut t = self
            .tables
            .get(&p.table)
            .expect("table")
            .copy(&Cow::Borrowed("inherited"));
        t.users = 1;
        self.new_table(t)
    }

    /// `show --fd`'s rows for what a clone's child inherited.
    fn inherited(&mut self, ev: &Ev, cpid: Pid, table: u64) {
        if self.o.watch.is_some() {
            let t = self.tables.remove(&table).expect("table");
            for n in t.ordered() {
                self.o.hist(Some(&*t), ev, cpid, n, || {
                    format!("fd {n} inherited by child {}", opt(cpid))
                });
            }
            self.tables.insert(table, t);
        }
    }

    /// A fork child whose first calls came before its parent's clone
    /// result (strace -f prints each call when it ends, and the child may
    /// run first): while those calls touched no fd, the child is exactly
    /// what the clone makes, a copy of the parent's table (or a share of
    /// it), seen from its start as far as the parent was.
    fn adopt(&mut self, p: &mut Proc, cpid: Pid, share_files: bool) -> Option<u64> {
        let c = self.procs.get(&cpid)?;
        let untouched = self
            .tables
            .get(&c.table)
            .is_some_and(|t| t.slots.is_empty() && t.closed.is_empty() && t.users == 1);
        if c.ended || !c.early || !untouched {
            return None;
        }
        let old = c.table;
        let table = self.child_table(p, share_files);
        self.tables.remove(&old);
        let (blind, complete, exe) = (p.blind, p.complete, &p.exe);
        self.procs.update(&cpid, |c| {
            c.table = table;
            c.early = false;
            c.forked = true;
            c.blind = blind;
            c.complete = complete;
            if c.exe.is_none() {
                c.exe.clone_from(exe);
            }
        });
        Some(table)
    }

    fn on_exec(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        if ev.h.err.is_some() || !matches!(ev.h.ret, None | Some(0)) {
            return;
        }
        p.forked = false;
        p.image += 1;
        // execve ends every other thread
        p.threaded = false;
        if ev.h.tid.is_some() {
            p.tids.clear();
            p.tids.insert(ev.h.tid);
        }
        let mut t = self.take_table(p);
        for n in t.ordered() {
            if t.slots[&n].cloexec {
                self.o.release(p, &mut t, l, n, Some(ev), "exec");
                self.o.hist(Some(&*t), ev, p.pid, n, || {
                    format!("fd {n} closed by exec (close-on-exec)")
                });
            }
        }
        self.put_table(p, t);
    }

    fn on_snapshot(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::FdSnapshot(k) = &ev.kind else {
            return;
        };
        // {int(k): v}: the last path of a repeated number, in its first place
        let mut snap: IndexMap<Fd, &Text> = IndexMap::default();
        for (n, path) in &k.fds {
            snap.insert(Fd::from(*n), path);
        }
        let mut t = self.take_table(p);
        // the exit snapshot adopts what no traced call created; the start
        // snapshot lists every fd the process begins with
        let exit = k.when == When::Exit;
        let (origin, adopted) = if exit {
            p.exit_snapshot = true;
            ("unknown", "open at exit, creator not in the trace")
        } else {
            p.complete = true;
            ("pre-existing", "open when the capture started")
        };
        for n in t.ordered() {
            if !snap.contains_key(&n) {
                // closed by a call the hook cannot see
                self.o.release(p, &mut t, l, n, None, "unseen");
                if exit {
                    self.o.hist(Some(&*t), ev, p.pid, n, || {
                        format!(
                            "fd {n} absent from the exit snapshot: closed by a call the capture \
                             could not see"
                        )
                    });
                }
            }
        }
        for (&n, &path) in &snap {
            if let Some(s) = t.slots.get_mut(&n) {
                use_path(s, path);
            } else {
                self.o.install(
                    p,
                    &mut t,
                    l,
                    ev,
                    n,
                    kind_of(Some(path)),
                    Cow::Borrowed(origin),
                    Some(path.clone()),
                    false,
                    None,
                    false,
                    || format!("fd {n} {adopted}"),
                );
            }
        }
        self.put_table(p, t);
    }

    fn on_exit(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::Exit(k) = &ev.kind else { return };
        if k.whole {
            self.end(p, Some(ev), true, l);
            return;
        }
        if ev.h.tid.is_some() {
            p.tids.remove(&ev.h.tid);
            if p.tids.is_empty() {
                self.end(p, Some(ev), true, l);
            }
        }
    }

    // --- process end ----------------------------------------------------------

    fn end(&mut self, p: &mut Proc, ev: Option<&Ev>, exited: bool, l: &mut dyn Listener) {
        if p.ended {
            return;
        }
        for key in self.runs.keys(Some(p.pid)) {
            self.end_run(key);
        }
        p.ended = true;
        // a thread with a table of its own held fds the shared table does
        // not show (and the other way round): what is left open is only a note
        let exited = exited && p.tid_tables.is_empty();
        let mut t = self.take_table(p);
        t.users -= 1;
        l.on_process_end(p, &t, ev, exited);
        if t.users <= 0 {
            let mut fds: Vec<Fd> = t.slots.keys().copied().collect();
            fds.sort_unstable();
            for n in fds {
                let s = &t.slots[&n];
                self.leak(p, s, ev, exited, l);
                if self.o.all_fds && exited {
                    self.open_at_exit(s, ev);
                }
            }
        } else {
            self.put_table(p, t);
        }
        self.o.end_process(p.pid, p.exe.as_ref());
    }

    /// The end of the trace: open runs judged, every process ended.
    pub fn finish(&mut self) {
        self.finish_with(&mut NoListener);
    }

    pub fn finish_with(&mut self, l: &mut dyn Listener) {
        if self.finished {
            return;
        }
        self.finished = true;
        for key in self.runs.keys(None) {
            self.end_run(key);
        }
        for pid in self.procs.map.keys() {
            if !self.procs.contains_key(&pid) {
                continue;
            }
            let stand_in = self.spare.take().unwrap_or_default();
            let mut p = self.procs.swap(&pid, stand_in);
            self.end(&mut p, None, false, l);
            let ended = p.ended;
            self.spare = Some(self.procs.put_back(&pid, p));
            if ended {
                self.procs.remove(&pid);
            }
        }
        self.o.repeats.finish_opt(&mut self.o.findings);
    }

    /// --all-fds: the fds the program made itself still open at exit.
    fn open_at_exit(&mut self, s: &Slot, ev: Option<&Ev>) {
        if s.gpu
            || GPU_OBJECT_KINDS.contains(&s.kind)
            || DEVICE_KINDS.contains(&s.kind)
            || s.fd <= 2
        {
            return;
        }
        if matches!(&*s.origin, "pre-existing" | "inherited" | "unknown") {
            return;
        }
        let Some(made) = &s.root else { return };
        let msg = format!(
            "{} was still open when the process exited; it was opened by {} at {}:{}{}",
            s.describe(&self.o.names),
            made.name,
            self.o.file(made),
            made.h.line,
            at(Some(made))
        );
        let mut evidence = vec![ev_note("created by", made)];
        if let Some(c) = &s.creator
            && !Rc::ptr_eq(c, made)
        {
            evidence.push(ev_note(format!("{} by", s.origin), c));
        }
        if let Some(e) = ev {
            evidence.push(Evidence::new("process exit", e));
        }
        let f = finding(
            Rule::FdOpenAtExit,
            msg,
            Some(made),
            subject(s.fd, s.kind),
            evidence,
            vec![
                s.kind.into(),
                s.root_origin.to_string(),
                made.name.to_string(),
            ],
        );
        self.o.emit(f);
    }

    fn leak(&mut self, p: &Proc, s: &Slot, ev: Option<&Ev>, exited: bool, l: &dyn Listener) {
        if !(s.gpu || GPU_OBJECT_KINDS.contains(&s.kind)) {
            return;
        }
        if s.origin == "pre-existing" || s.origin == "inherited" {
            return; // given to this process, not made by it
        }
        let unknown = s.origin == "unknown";
        let sev = if exited && !unknown {
            Severity::Warning
        } else {
            Severity::Note
        };
        let end = if exited {
            "when the process exited"
        } else {
            "when the trace ended (no process exit was seen, so this is only a note)"
        };
        let mut msg = format!("{} was still open {end}", s.describe(&self.o.names));
        match &s.last_use {
            Some(u) => msg += &format!("; last used by {}", self.o.short(Some(u))),
            None => msg += "; it was never used after it was created",
        }
        if let Some(Some(b)) = l.describe_buffer(p.pid, s)
            && !b.is_empty()
        {
            msg += &format!("; it is {b}");
        }
        if unknown {
            msg += "; its creator is not in the trace (an strace log cannot show fds made inside \
                    ioctl structs), so it may not have been made by this process";
        }
        let ev0 = s.root.as_ref().or(s.creator.as_ref());
        let mut evidence = Vec::new();
        if let Some(r) = &s.root {
            evidence.push(Evidence::new("created by", r));
        }
        if let Some(c) = &s.creator
            && !same(Some(c), s.root.as_ref())
        {
            evidence.push(Evidence::new(format!("{} by", s.origin), c));
        }
        if let Some(u) = &s.last_use
            && !same(Some(u), s.creator.as_ref())
        {
            evidence.push(Evidence::new("last used by", u));
        }
        if let Some(e) = ev {
            evidence.push(Evidence::new("process exit", e));
        }
        let offending = ev0.or(s.last_use.as_ref()).or(ev);
        let mut f = finding(
            Rule::FdLeak,
            msg,
            offending.map(|e| &**e),
            subject(s.fd, s.kind),
            evidence,
            vec![
                s.kind.into(),
                s.root_origin.to_string(),
                if exited { "exited" } else { "trace-end" }.into(),
            ],
        );
        f.severity = Some(sev);
        f.details.insert("origin".into(), json!(&*s.root_origin));
        f.details.insert("exited".into(), json!(exited));
        self.o.emit(f);
    }

    // --- findings -------------------------------------------------------------

    fn exhaustion(&mut self, p: &mut Proc, ev: &Ev) {
        if let Some(i) = p.exhaustion {
            if let Some(Some(f)) = self.o.findings.get_mut(i)
                && let Some(Json::Number(n)) = f.details.get("failed_calls")
            {
                let v = n.as_u64().unwrap_or(0) + 1;
                f.details.insert("failed_calls".into(), json!(v));
            }
            return;
        }
        let t = self.tables.get(&p.table);
        let mut counts: HashMap<&'static str, u64> = HashMap::default();
        if let Some(t) = t {
            for s in t.slots.values() {
                *counts.entry(s.kind).or_insert(0) += 1;
            }
        }
        let mut order: Vec<(&str, u64)> = counts.into_iter().collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let total: u64 = order.iter().map(|x| x.1).sum();
        let kinds = if order.is_empty() {
            "none visible".to_owned()
        } else {
            order
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let name = call_name(ev).to_owned();
        let err = ev.h.err.as_deref().unwrap_or("");
        let mut msg = format!(
            "{name} failed with {err}: the fd table is full. The trace shows {total} fds open at \
             that moment: {kinds}"
        );
        if let Some(&(top, n)) = order.first()
            && n * 2 > total
        {
            msg += &format!("; {top} fds fill it");
            if top == "dmabuf" {
                msg += " (dma-buf fds kept open per buffer: the VMM fd-per-handle design stops at \
                        RLIMIT_NOFILE, ~1015 handles at the default 1024)";
            }
        }
        if err == "ENFILE" {
            msg += "; ENFILE is the system-wide limit, so other processes share the blame";
        }
        let mut evidence = vec![Evidence::new("first failing call", ev)];
        let topkind = order.first().map_or("", |x| x.0);
        if let Some(t) = t {
            let oldest = t
                .slots
                .values()
                .filter(|s| s.kind == topkind)
                .min_by_key(|s| (s.creator.as_ref().map_or(-1, |c| c.h.seq as i128), s.fd));
            if let Some(s0) = oldest
                && let Some(c) = &s0.creator
            {
                evidence.push(Evidence::new(
                    format!(
                        "one of the {} {} fds was created by",
                        order[0].1, order[0].0
                    ),
                    c,
                ));
            }
        }
        let mut f = Finding::new(Rule::FdExhaustion, msg, Some(ev));
        f.subject.insert("kind".into(), json!("process"));
        f.evidence = evidence;
        f.key = vec![
            opt(ev.h.err.as_deref()),
            order.first().map_or("unknown", |x| x.0).to_owned(),
            name,
        ];
        let mut by_kind = Map::new();
        for (k, n) in &order {
            by_kind.insert((*k).into(), json!(n));
        }
        f.details
            .insert("open_by_kind".into(), Json::Object(by_kind));
        f.details.insert("open".into(), json!(total));
        f.details.insert("failed_calls".into(), json!(1));
        p.exhaustion = self.o.emit(f);
    }

    fn bad_close(&mut self, p: &mut Proc, t: &mut Table, ev: &Ev, l: &mut dyn Listener) {
        let fd = fd_arg(ev);
        let listing = t
            .slots
            .get(&fd)
            .map(|s| s.path.clone())
            .or_else(|| t.closed.get(&fd).map(|c| c.borrow().slot.path.clone()))
            .flatten()
            .is_some_and(|path| is_fd_listing(path.as_bytes()));
        if listing && let Some(run) = &mut self.o.sink {
            // closing each number a /proc/self/fd listing returned: the
            // listing's own fd, closed by closedir, is the one that fails
            run.listing = true;
            if t.slots.contains_key(&fd) {
                self.o.release(p, t, l, fd, None, "unseen");
            }
            self.o.hist(Some(t), ev, p.pid, fd, || {
                "close of the fd listing's own fd, already closed by closedir: part of a sweep"
                    .into()
            });
            return;
        }
        if p.forked
            && t.users <= 1
            && !t.slots.contains_key(&fd)
            && t.closed.get(&fd).is_some_and(|c| c.borrow().pid != p.pid)
        {
            // closed by the parent before the fork: the child's own table,
            // what it inherited, never held it
            self.bad_fd(p, t, ev, fd);
            return;
        }
        if t.slots.contains_key(&fd) {
            // The model thought it open: a close the trace cannot see came
            // first.  The kernel's EBADF is the proof.
            self.o.release(p, t, l, fd, None, "unseen");
            let c = t.closed.get(&fd).cloned();
            self.double_close(p, t, ev, fd, c.as_ref(), l);
            return;
        }
        let Some(c) = t.closed.get(&fd).cloned() else {
            self.bad_fd(p, t, ev, fd);
            return;
        };
        self.double_close(p, t, ev, fd, Some(&c), l);
        let (how, has_ev) = {
            let b = c.borrow();
            (b.how, b.event.is_some())
        };
        if how == "close" && has_ev {
            self.reused_by_ebadf(p, t, ev, fd, &c);
        }
    }

    fn double_close(
        &mut self,
        p: &Proc,
        t: &Table,
        ev: &Ev,
        fd: Fd,
        c: Option<&ClosedRef>,
        l: &dyn Listener,
    ) {
        let names = self.o.names.clone();
        let name = ev.name.to_string();
        let call = match &ev.kind {
            Kind::CloseRange(r) => format!("close_range({}, {})", r.first, r.last),
            _ => format!("{name}({fd})"),
        };
        let mut evidence = vec![ev_note("this close", ev)];
        let failed = if ev.h.err.as_deref() == Some("EBADF") {
            format!("{call} failed with EBADF")
        } else {
            format!("{call} closes fd {fd} again")
        };
        let (mut msg, key, kind);
        match c {
            None => {
                msg = format!(
                    "{failed}: fd {fd} was not open (no earlier close is visible; it was never \
                     created in this trace or was closed by a call the trace cannot see)"
                );
                key = vec!["bad-close".into(), "never-seen".into(), name.clone()];
                kind = "unknown";
            }
            Some(c) => {
                let c = c.borrow();
                let s = &c.slot;
                kind = s.kind;
                let mut m;
                if c.how == "exec" {
                    m = format!(
                        "{failed}: fd {fd} ({}) was closed by {} because it had close-on-exec \
                         set; an fd meant to survive exec was opened with O_CLOEXEC, or this \
                         close is stale",
                        s.kind,
                        short(&names, c.event.as_ref())
                    );
                } else if c.how == "unseen" || c.event.is_none() {
                    m = format!(
                        "{failed}: {} had already been closed by a call the trace cannot see \
                         (fclose, closedir, a raw syscall); two owners close this fd",
                        s.describe(&names)
                    );
                } else {
                    let ce = c.event.as_ref().expect("event");
                    let how = match c.how {
                        "close_range" => "close_range",
                        "dup2" => "dup2/dup3 onto it",
                        _ => "close",
                    };
                    m = format!(
                        "{failed}: {} was already closed by {how} at {}:{}{} and nothing \
                         re-created it. This close is at {}:{}{}. The first close may be the \
                         culprit: whoever closed it first may not have owned it",
                        s.describe(&names),
                        names.file(ce),
                        ce.h.line,
                        at(Some(ce)),
                        names.file(ev),
                        ev.h.line,
                        at(Some(ev))
                    );
                    evidence.push(ev_note("previous close", ce));
                }
                if let Some(r) = &s.root {
                    evidence.push(ev_note("originally created by", r));
                }
                if let Some(cr) = &s.creator
                    && !same(Some(cr), s.root.as_ref())
                {
                    evidence.push(ev_note(format!("{} by", s.origin), cr));
                }
                for (role, nev) in s.notable.iter().flat_map(|v| v.iter()) {
                    evidence.push(ev_note(role.clone(), nev));
                }
                if let Some(Some(b)) = l.describe_buffer(p.pid, s)
                    && !b.is_empty()
                {
                    m += &format!(". The fd is {b}");
                }
                if let Some((_, h)) = s
                    .notable
                    .iter()
                    .flat_map(|v| v.iter())
                    .find(|(r, _)| r.starts_with("handed"))
                {
                    m += &format!(
                        ". {} handed this fd to its caller, so two owners (the application and \
                         the runtime) each close it",
                        short(&names, Some(h))
                    );
                }
                msg = m;
                key = vec![
                    "double-close".into(),
                    s.kind.into(),
                    s.root_origin.to_string(),
                    c.how.into(),
                    name.clone(),
                ];
            }
        }
        sort_story(&mut evidence);
        // A GPU fd closed twice is the runtime bug this rule is for.  Any
        // other fd, in a process the trace saw from its start with one
        // thread and a table of its own: nothing could have been handed the
        // number between the closes, so the second one closed nothing (bash
        // closes its pipe ends twice).  Seen only in part, it may have had
        // threads the trace does not show.
        // (`t` is out of the arena while its handler runs)
        let shared = p.threaded && !t.own_thread || t.users > 1;
        let harmless = p.complete
            && !shared
            && !GPU_OBJECT_KINDS.contains(&kind)
            && !DEVICE_KINDS.contains(&kind);
        if harmless {
            msg += ". The trace saw this process from its start, with no other thread or \
                    process sharing its fd table, so nothing else can have been given the number \
                    in between: harmless here, but the two closes disagree about who owns the fd";
        }
        let mut f = finding(
            Rule::FdDoubleClose,
            msg,
            Some(ev),
            subject(fd, kind),
            evidence,
            key,
        );
        if harmless {
            f.severity = Some(Severity::Warning);
        }
        self.o.emit(f);
        self.o.hist(Some(t), ev, p.pid, fd, || {
            format!("{call} of a closed fd: double close")
        });
    }

    fn bad_use(
        &mut self,
        p: &mut Proc,
        t: &mut Table,
        ev: &Ev,
        fd: Fd,
        never_seen_ok: bool,
        l: &mut dyn Listener,
    ) {
        let names = self.o.names.clone();
        let name = call_name(ev).to_owned();
        let c = t.closed.get(&fd).cloned();
        let (msg, key, kind, evidence);
        if let Some(s) = t.slots.get_mut(&fd) {
            if MODE_EBADF.contains(&&*ev.name) && !matches!(ev.kind, Kind::Ioctl(_)) {
                // EBADF here may only mean the wrong open mode, or another
                // thread's close that completes later: the close decides
                if s.racing.is_none() {
                    s.racing = Some(ev.clone());
                }
                return;
            }
            self.o.release(p, t, l, fd, None, "unseen");
            let c = t.closed[&fd].clone();
            let c = c.borrow();
            let s = &c.slot;
            msg = format!(
                "{name} on fd {fd} failed with EBADF: {} was open in the model, so a close the \
                 trace cannot see (fclose, a raw syscall) ended it before this use",
                s.describe(&names)
            );
            key = vec![
                "use-after-close".into(),
                s.kind.into(),
                s.root_origin.to_string(),
                name.clone(),
                "unseen-close".into(),
            ];
            kind = s.kind;
            let mut e = vec![ev_note("this use", ev)];
            if let Some(r) = &s.root {
                e.push(ev_note("created by", r));
            }
            evidence = e;
        } else if let Some(cr) = &c {
            let c = cr.borrow();
            let s = &c.slot;
            kind = s.kind;
            let mut m = format!(
                "{name} on fd {fd} failed with EBADF: {} was closed by {}{} and nothing \
                 re-created it",
                s.describe(&names),
                short(&names, c.event.as_ref()),
                at(c.event.as_deref())
            );
            if let Some(u) = &s.last_use
                && !same(Some(u), c.event.as_ref())
            {
                m += &format!("; its last successful use was {}", short(&names, Some(u)));
            }
            msg = m;
            key = vec![
                "use-after-close".into(),
                s.kind.into(),
                s.root_origin.to_string(),
                name.clone(),
                c.how.into(),
            ];
            let mut e = vec![ev_note("this use", ev)];
            if let Some(ce) = &c.event {
                e.push(ev_note("closed by", ce));
            }
            if let Some(r) = &s.root {
                e.push(ev_note("created by", r));
            }
            evidence = e;
        } else {
            if never_seen_ok {
                self.bad_fd(p, t, ev, fd);
            }
            return;
        }
        let f = finding(
            Rule::FdUseAfterClose,
            msg,
            Some(ev),
            subject(fd, kind),
            evidence,
            key,
        );
        self.o.emit(f);
        self.o.hist(Some(t), ev, p.pid, fd, || {
            format!("{name} failed with EBADF: use after close")
        });
        if let Some(c) = c {
            let ok = {
                let b = c.borrow();
                b.how == "close" && b.event.is_some()
            };
            if ok {
                self.reused_by_ebadf(p, t, ev, fd, &c);
            }
        }
    }

    /// fd-use-after-close: a runtime call handed its caller an fd number the
    /// trace closed and nothing re-created (an exported handle's fd cached
    /// after its close): the caller's next use fails with EBADF, or hits
    /// whatever the number is reused for.
    fn stale_handover(&mut self, t: &Table, ev: &Ev, pid: Option<u32>, fd: Fd) {
        let Some(cr) = t.closed.get(&fd) else { return };
        let c = cr.borrow();
        let s = &c.slot;
        let names = &self.o.names;
        let name = call_name(ev).to_owned();
        let msg = format!(
            "{name} handed fd {fd} to its caller, but {} was closed by {}{} and nothing \
             re-created it: the caller holds a stale number (its use fails with EBADF, or hits \
             whatever next takes the number)",
            s.describe(names),
            short(names, c.event.as_ref()),
            at(c.event.as_deref())
        );
        let mut evidence = vec![ev_note("handed over by", ev)];
        if let Some(ce) = &c.event {
            evidence.push(ev_note("closed by", ce));
        }
        if let Some(r) = &s.root {
            evidence.push(ev_note("created by", r));
        }
        let key = vec![
            "use-after-close".into(),
            s.kind.into(),
            s.root_origin.to_string(),
            name.clone(),
            "handover".into(),
        ];
        let f = finding(
            Rule::FdUseAfterClose,
            msg,
            Some(ev),
            subject(fd, s.kind),
            evidence,
            key,
        );
        drop(c);
        self.o.emit(f);
        self.o.hist(Some(t), ev, pid, fd, || {
            format!("{name} handed the closed fd to its caller")
        });
    }

    /// fd-bad-fd: EBADF for a number that was never an open fd.
    fn bad_fd(&mut self, p: &Proc, t: &Table, ev: &Ev, fd: Fd) {
        let name = call_name(ev).to_owned();
        let is_close = matches!(ev.kind, Kind::Close(_));
        let call = if is_close {
            format!("{name}({fd})")
        } else {
            format!("{name} on fd {fd}")
        };
        let (sev, why, sort);
        if fd < 0 && is_close {
            // close(-1) is a no-op that correct programs do all the time
            sev = Severity::Note;
            why = format!(
                "{fd} is not an fd number: the close of an fd variable reset to -1 (or never \
                 set) does nothing"
            );
            sort = "negative-close";
        } else if fd < 0 {
            sev = Severity::Warning;
            why = format!(
                "{fd} is not an fd number: an fd variable reset to -1 (or an error return) was \
                 used as an fd anyway"
            );
            sort = "negative";
        } else if let Some(made) = self.phantoms.get(&(p.pid, fd)) {
            // the number came from a result strace made up: the program did
            // what it should with the fd it was told it had
            sev = Severity::Note;
            why = format!(
                "fd {fd} never existed: {} at {}:{} said it did, but strace made that result \
                 up (-e inject) and the kernel never ran the call",
                call_name(made),
                self.o.names.file(made),
                made.h.line
            );
            sort = "injected";
        } else if p.complete && !p.forked {
            sev = Severity::Warning;
            why = format!(
                "fd {fd} was never open in this process: the trace saw it from its start and \
                 nothing created that number (a stale or uninitialised fd variable)"
            );
            sort = "never-open";
        } else {
            sev = Severity::Note;
            why = format!(
                "the trace never saw fd {fd} open, but it {}",
                if p.forked {
                    "is a child between fork and execve, where closing numbers that may be \
                     inherited is normal"
                } else {
                    "did not see this process start, so the number may have been opened and \
                     closed before the trace began"
                }
            );
            sort = "never-seen";
        }
        let mut f = finding(
            Rule::FdBadFd,
            format!("{call} failed with EBADF: {why}"),
            Some(ev),
            subject(fd, "unknown"),
            vec![ev_note("this call", ev)],
            vec!["bad-fd".into(), sort.into(), name.clone()],
        );
        f.severity = Some(sev);
        self.o.emit(f);
        self.o.hist(Some(t), ev, p.pid, fd, || {
            format!("{name} failed with EBADF: not an open fd")
        });
    }

    /// A read/write that got EBADF while the model had the fd open, then a
    /// close of it by another thread that began before that call ended: a
    /// use after close across threads.
    fn racing_use(&mut self, p: &Proc, t: &mut Table, fd: Fd, close: &Ev) {
        let names = self.o.names.clone();
        let Some(s) = t.slots.get_mut(&fd) else {
            return;
        };
        let Some(u) = s.racing.take() else { return };
        if u.h.tid == close.h.tid || u.h.pid != close.h.pid {
            return;
        }
        let (ut, ct) = (u.h.time, close.h.time);
        if let (Some(_), Some(c), Some(_)) = (ut, ct, u.h.dur) {
            if c > u.h.end().expect("time") {
                return;
            }
        } else if u.h.file == close.h.file {
            // no durations: the close must be printed before the use finished
            if close.h.line > u.h.end_line.filter(|&x| x != 0).unwrap_or(u.h.line) {
                return;
            }
        } else {
            match (ut, ct) {
                (Some(a), Some(b)) if b <= a => {}
                _ => return,
            }
        }
        let s = &t.slots[&fd];
        let name = u.name.to_string();
        let msg = format!(
            "{name} on fd {} failed with EBADF on thread {}: another thread ({}) was closing {} \
             at {}:{}{}; the calls overlap, and the EBADF shows the close took the number \
             first. A use after close across threads",
            s.fd,
            opt(u.h.tid),
            opt(close.h.tid),
            s.describe(&names),
            names.file(close),
            close.h.line,
            at(Some(close))
        );
        let mut evidence = vec![ev_note("this use", &u), ev_note("closed by", close)];
        if let Some(r) = &s.root {
            evidence.push(ev_note("created by", r));
        }
        sort_story(&mut evidence);
        let key = vec![
            "use-after-close".into(),
            s.kind.into(),
            s.root_origin.to_string(),
            name.clone(),
            "concurrent-close".into(),
        ];
        let f = finding(
            Rule::FdUseAfterClose,
            msg,
            Some(&u),
            subject(s.fd, s.kind),
            evidence,
            key,
        );
        self.o.emit(f);
        self.o.hist(Some(t), &u, p.pid, fd, || {
            format!("{name} failed with EBADF: another thread's close")
        });
    }

    fn ioctl_ebadf(
        &mut self,
        p: &mut Proc,
        t: &mut Table,
        ev: &Ev,
        inner: Option<Fd>,
        l: &mut dyn Listener,
    ) {
        let Kind::Ioctl(k) = &ev.kind else { return };
        let outer = Fd::from(k.fd);
        let cand = [Some(outer), inner];
        let closed = cand
            .iter()
            .flatten()
            .copied()
            .find(|&f| f >= 0 && !t.slots.contains_key(&f) && t.closed.contains_key(&f));
        if let Some(c) = closed {
            self.bad_use(p, t, ev, c, false, l);
            return;
        }
        let outer_open =
            t.slots.contains_key(&outer) || k.path.as_ref().is_some_and(|p| !p.0.is_empty());
        if let Some(inner) = inner
            && inner >= 0
        {
            if outer_open {
                // the driver answered, so the device fd was fine: the inner fd is bad
                self.bad_use(p, t, ev, inner, true, l);
            } else if t.slots.contains_key(&inner) && outer >= 0 {
                self.bad_use(p, t, ev, outer, true, l);
            }
            return;
        }
        if outer_open {
            return; // the bad fd may be inside a struct the trace does not show
        }
        if outer >= 0 {
            self.bad_use(p, t, ev, outer, true, l);
        }
    }

    // fd-close-reused ------------------------------------------------------------

    /// Stack evidence at close time: the close comes from the old occupant's
    /// code and from nothing the new occupant ran.
    fn check_reused(&mut self, p: &Proc, t: &Table, fd: Fd, ev: &Ev) -> bool {
        let s = &t.slots[&fd];
        let Some(prev) = &s.prev else { return false };
        let Some(creator) = &s.creator else {
            return false;
        };
        if ev.h.stack.is_empty() || creator.h.stack.is_empty() {
            return false;
        }
        let pb = prev.borrow();
        let old = &pb.slot;
        if old.root_origin == s.root_origin && old.kind == s.kind {
            return false; // same kind of owner: stacks cannot tell them apart
        }
        let new_owner = owner(Some(creator));
        let close_comp = owner(Some(ev));
        let (Some(new_owner), Some(close_comp)) = (new_owner, close_comp) else {
            return false;
        };
        if close_comp == new_owner {
            return false;
        }
        if new_owner == "libdrm"
            && frames_of(&creator.h.stack, usize::MAX)
                .map(|f| component(&f.module))
                .find(|c| c != "libdrm")
                .is_some_and(|c| c == close_comp)
        {
            // libdrm's open calls (drmOpen*) hand the fd to their caller: a
            // render node the runtime had libdrm open is the runtime's
            return false;
        }
        let shared = shared_callers(old, s);
        let close_funcs: HashSet<Func> = funcs(&ev.h.stack, Some(2))
            .difference(&shared)
            .copied()
            .collect();
        let mut new_funcs = funcs(&creator.h.stack, None);
        if let Some(u) = &s.last_use
            && !Rc::ptr_eq(u, creator)
            && !Rc::ptr_eq(u, ev)
        {
            new_funcs.extend(funcs(&u.h.stack, None));
        }
        if !close_funcs.is_disjoint(&new_funcs) {
            return false;
        }
        let mut old_comps = HashSet::default();
        let mut old_funcs = HashSet::default();
        for e in [&old.root, &old.creator, &old.last_use]
            .into_iter()
            .flatten()
        {
            if same(Some(e), pb.event.as_ref()) {
                continue;
            }
            old_comps.extend(comps(&e.h.stack));
            old_funcs.extend(funcs(&e.h.stack, None));
        }
        if !old_comps.contains(&close_comp) && close_funcs.is_disjoint(&old_funcs) {
            return false;
        }
        if owner(old.root.as_deref().or(old.creator.as_deref())).as_ref() == Some(&new_owner) {
            return false; // one owner made both: the stacks cannot tell
        }
        let names = &self.o.names;
        let why = format!(
            "its call stack{} is in {close_comp}, the code that created and used the old fd, and \
             shares no frame with the code that created the new one{}",
            at(Some(ev)),
            at(Some(creator))
        );
        let f = reused_finding(names, ev, s, &pb, &why, None);
        drop(pb);
        self.o.emit(f);
        self.o.hist(Some(t), ev, p.pid, fd, || {
            "this close was meant for the previous fd (wrong owner)".into()
        });
        true
    }

    /// A later EBADF by the new occupant's own code: the close that ended it
    /// was meant for the previous occupant.
    fn reused_by_ebadf(&mut self, p: &Proc, t: &Table, ev: &Ev, fd: Fd, c: &ClosedRef) {
        let f = {
            let cb = c.borrow();
            let s = &cb.slot;
            let Some(prev) = &s.prev else { return };
            let Some(creator) = &s.creator else { return };
            if cb.flagged {
                return;
            }
            let Some(cev) = &cb.event else { return };
            let pb = prev.borrow();
            let by_thread = thread_owners(&pb.slot, s, cev, ev);
            let no_stacks =
                ev.h.stack.is_empty() || cev.h.stack.is_empty() || creator.h.stack.is_empty();
            if by_thread.is_some() || no_stacks {
                // Threads tell the owners apart, with or without stacks: the
                // new fd was made by another thread than the closer's, the
                // closer's thread made or used the old one, and the new
                // owner's own next use got EBADF
                let Some(why) = by_thread else {
                    return; // without stacks or threads the owners cannot be told apart
                };
                let names = &self.o.names;
                let why = format!(
                    "{why}; the new fd's owner (thread {}) later got EBADF at {}:{}, so it never \
                     closed it itself",
                    opt(ev.h.tid),
                    names.file(ev),
                    ev.h.line
                );
                let f = reused_finding(names, cev, s, &pb, &why, Some(ev));
                let cev = cev.clone();
                drop(pb);
                drop(cb);
                c.borrow_mut().flagged = true;
                self.o.emit(f);
                self.o.hist(Some(t), &cev, p.pid, fd, || {
                    "this close was meant for the previous fd (wrong owner)".into()
                });
                return;
            }
            let new_owner = owner(Some(creator));
            let shared = shared_callers(&pb.slot, s);
            let mine: HashSet<Func> = funcs(&ev.h.stack, Some(3))
                .difference(&shared)
                .copied()
                .collect();
            let last = s.last_use.as_ref().filter(|u| !Rc::ptr_eq(u, cev));
            let mut ow = funcs(&creator.h.stack, None);
            if let Some(u) = last {
                ow.extend(funcs(&u.h.stack, None));
            }
            let ow: HashSet<Func> = ow.difference(&shared).copied().collect();
            let closer: HashSet<Func> = funcs(&cev.h.stack, Some(3))
                .difference(&shared)
                .copied()
                .collect();
            let closer_comp = owner(Some(cev));
            if mine.is_disjoint(&ow) && owner(Some(ev)) != new_owner {
                return;
            }
            if !closer.is_disjoint(&ow) || !closer.is_disjoint(&mine) || closer_comp == new_owner {
                return;
            }
            let old = &pb.slot;
            let mut old_funcs = HashSet::default();
            let mut old_comps = HashSet::default();
            for e in [&old.root, &old.creator, &old.last_use]
                .into_iter()
                .flatten()
            {
                if !same(Some(e), pb.event.as_ref()) {
                    old_funcs.extend(funcs(&e.h.stack, None));
                    old_comps.extend(comps(&e.h.stack));
                }
            }
            if closer.is_disjoint(&old_funcs)
                && !closer_comp.as_ref().is_some_and(|c| old_comps.contains(c))
            {
                return;
            }
            let names = &self.o.names;
            let why = format!(
                "the new fd's owner{} later got EBADF at {}:{}, so it never closed it itself",
                at(Some(ev)),
                names.file(ev),
                ev.h.line
            );
            (
                reused_finding(names, cev, s, &pb, &why, Some(ev)),
                cev.clone(),
            )
        };
        c.borrow_mut().flagged = true;
        self.o.emit(f.0);
        self.o.hist(Some(t), &f.1, p.pid, fd, || {
            "this close was meant for the previous fd (wrong owner)".into()
        });
    }
}

fn placeholder_run(ev: &Ev) -> Run {
    Run {
        last: fd_arg(ev),
        first_ev: ev.clone(),
        last_ev: ev.clone(),
        closes: 0,
        ebadf: 0,
        lo: -1,
        hi: -1,
        held: None,
        settled: false,
        dir: 0,
        ranges: 0,
        open_ended: false,
        listing: false,
    }
}

/// `u` began before `close`, on another thread, ended: their windows overlap
/// (SPEC 4).  One strace file prints a call's entry when it happens, so a
/// split call's entry line says when it began; elsewhere only entry times
/// with the close's duration can say so.
fn began_before_end(u: &Event, close: &Event) -> bool {
    if u.h.tid == close.h.tid {
        return false;
    }
    let split = |h: &Header| h.end_line.filter(|&x| x != 0);
    if u.h.file == close.h.file && split(&u.h).is_some() {
        return u.h.line < split(&close.h).unwrap_or(close.h.line);
    }
    match (u.h.time, close.h.time, close.h.dur) {
        (Some(a), Some(b), Some(d)) => a < b + d,
        _ => false,
    }
}

/// Whether `ev`, on the run's thread, ends the run: a close out of its
/// order, a close_range that does not continue it, or a call that may have
/// created an fd (a number closed before and after it is not the same fd).
/// Calls that create no fd (a `readlink` of `/proc/self/fd/N`, an `fstat`
/// or `fcntl` probe, a `write` of a progress line) leave it going.
fn run_ends(run: &Run, ev: &Event) -> bool {
    match &ev.kind {
        Kind::Close(c) => !run.continues(Fd::from(c.fd)),
        Kind::CloseRange(r) => {
            ev.h.ok() && (r.flags & CLOSE_RANGE_CLOEXEC == 0) && {
                run.dir < 0 || Fd::from(r.first) <= run.last
            }
        }
        Kind::FdCreate(k) => ev.h.ok() || !k.fds.is_empty(),
        Kind::Ioctl(k) => {
            ev.h.ok()
                && match (k.type_, k.nr) {
                    (Some(a), Some(b)) => creating_ioctl((a, b)).is_some(),
                    _ => true,
                }
        }
        Kind::Syscall(_) | Kind::Mmap(_) | Kind::SetCloexec(_) | Kind::Intent(_) => false,
        _ => true,
    }
}

fn is_sweep(run: &Run) -> bool {
    run.open_ended
        || run.listing
        || run.closes >= SWEEP_MIN && run.ebadf >= 2 && run.ebadf * 2 > run.closes
}

/// `unshare(CLONE_FILES|…)` or `unshare(0x400)` (-X raw): the flags of
/// an unshare line include CLONE_FILES.
fn unshares_files(text: &[u8]) -> bool {
    let Some(i) = text.windows(8).position(|w| w == b"unshare(") else {
        return false;
    };
    let rest = &text[i + 8..];
    let end = rest.iter().position(|&c| c == b')').unwrap_or(rest.len());
    let arg = std::str::from_utf8(&rest[..end]).unwrap_or("");
    // names (`CLONE_FS|CLONE_FILES`, `-X verbose`'s comment) or a number
    arg.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|f| {
            f == "CLONE_FILES"
                || f.strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .or_else(|| f.parse::<u64>().ok())
                    .is_some_and(|v| v & 0x400 != 0)
        })
}

/// A directory that lists the process's own fds (`opendir("/proc/self/fd")`).
fn is_fd_listing(path: &[u8]) -> bool {
    let p = path.strip_suffix(b"/").unwrap_or(path);
    if p == b"/dev/fd" {
        return true;
    }
    let Some(rest) = p.strip_prefix(b"/proc/") else {
        return false;
    };
    let Some(who) = rest.strip_suffix(b"/fd") else {
        return false;
    };
    let word = |w: &[u8]| {
        w == b"self" || w == b"thread-self" || !w.is_empty() && w.iter().all(u8::is_ascii_digit)
    };
    match who.iter().position(|&c| c == b'/') {
        None => word(who),
        Some(i) => {
            // /proc/PID/task/TID/fd
            let (a, b) = (&who[..i], &who[i + 1..]);
            word(a) && b.strip_prefix(b"task/").is_some_and(word)
        }
    }
}

/// A bounded range that still reaches the fd limit (`sysconf(_SC_OPEN_MAX)
/// - 1` of a usual limit, or INT_MAX).
fn reaches_limit(last: u32) -> bool {
    last >= i32::MAX as u32 || last >= 1023 && (u64::from(last) + 1) % 1024 == 0
}

fn use_path(s: &mut Slot, path: &Text) {
    if !path.0.is_empty() && s.kind == "unknown" {
        s.kind = kind_of(Some(path));
        s.path = Some(path.clone());
        s.gpu = s.gpu || GPU_OBJECT_KINDS.contains(&s.kind);
    }
}

/// Ownership by thread (no stacks): `close` (on thread A) ended the slot
/// `new`, made by thread B; A made or used the old incarnation `old`, and
/// nothing of `new` ran on A; `ebadf` is B's later EBADF on the number.
/// Some(why) when the close was meant for the old incarnation.
fn thread_owners(old: &Slot, new: &Slot, close: &Event, ebadf: &Event) -> Option<String> {
    let creator = new.creator.as_ref()?;
    let (a, b) = (close.h.tid?, creator.h.tid?);
    if a == b || ebadf.h.tid != Some(b) || close.h.pid != ebadf.h.pid {
        return None;
    }
    if new
        .last_use
        .as_ref()
        .is_some_and(|u| u.h.tid == Some(a) && !std::ptr::eq(&**u, close))
    {
        return None; // the closer's thread used the new fd: it may own it
    }
    let old_made = old.root.as_ref().or(old.creator.as_ref())?;
    if old_made.h.tid == Some(b) {
        return None; // one thread made both: threads cannot tell
    }
    let on_a = [&old.root, &old.creator, &old.last_use]
        .into_iter()
        .flatten()
        .any(|e| e.h.tid == Some(a));
    on_a.then(|| {
        format!(
            "it ran on thread {a}, which made and used the old fd, while the new one was made on \
             thread {b}{}",
            at(Some(creator))
        )
    })
}

/// Functions on both creators' stacks (main() and other common callers).
fn shared_callers<'a>(old: &'a Slot, new: &'a Slot) -> HashSet<Func<'a>> {
    let a = old.root.as_ref().or(old.creator.as_ref());
    let (Some(a), Some(b)) = (a, new.creator.as_ref()) else {
        return HashSet::default();
    };
    let fa = funcs(&a.h.stack, None);
    let fb = funcs(&b.h.stack, None);
    fa.intersection(&fb).copied().collect()
}

fn reused_finding(
    names: &Names,
    ev: &Ev,
    s: &Slot,
    prev: &Closed,
    why: &str,
    later: Option<&Ev>,
) -> Finding {
    let old = &prev.slot;
    let msg = format!(
        "close({}) at {}:{} closed {}, but it was meant for the fd that held number {} before \
         ({}, created by {}, closed by {}): {why}. fdsan's wrong owner: the close of a stale \
         number took a bystander's fd",
        s.fd,
        names.file(ev),
        ev.h.line,
        s.describe(names),
        s.fd,
        old.kind,
        short(names, old.root.as_ref().or(old.creator.as_ref())),
        short(names, prev.event.as_ref())
    );
    let mut evidence = vec![ev_note("this close", ev)];
    if let Some(pe) = &prev.event {
        evidence.push(ev_note("the old fd was closed by", pe));
    }
    if let Some(r) = &old.root {
        evidence.push(ev_note("the old fd was created by", r));
    }
    if let Some(r) = &s.root {
        evidence.push(ev_note("the new fd was created by", r));
    }
    if let Some(l) = later {
        evidence.push(ev_note("the new owner's later EBADF", l));
    }
    finding(
        Rule::FdCloseReused,
        msg,
        Some(ev),
        subject(s.fd, s.kind),
        evidence,
        vec![
            old.kind.into(),
            old.root_origin.to_string(),
            s.kind.into(),
            s.root_origin.to_string(),
            if later.is_some() { "ebadf" } else { "stack" }.into(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Close, CloseRange, Exit, FdCreate, SetCloexec};

    fn kp(p: &str) -> &'static str {
        kind_of_path(Some(p.as_bytes()))
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
        assert_eq!(kind_of_path(None), "unknown");
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
        // between: the shape of a sweep (SPEC 4.1: whatever the trace saw
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
        unshare.h.text = "unshare(CLONE_FILES)".into();
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
}
