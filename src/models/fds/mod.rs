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
//!
//! Here: the model, its dispatch and the call catalogue it consults.  The
//! parts: `table` (slots, tables, processes), `out` (findings, history and
//! the slot lifecycle), the handlers by family (`create`, `close`, `calls`,
//! `process`) and `findings` (the finding builders).  Each part reads this
//! module's scope with `use super::*`.

use super::buffer::BufRef;
use super::common::*;
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

mod calls;
mod close;
mod create;
mod findings;
mod out;
mod process;
mod table;
#[cfg(test)]
mod tests;

use close::*;
use findings::*;
pub use out::HistRow;
use out::*;
use process::*;
use table::*;
pub use table::{Closed, FdKind, Proc, Release, Slot, Table, kind_of_path};

pub use super::common::Pid;
pub type Fd = i64;

const CLOSE_RANGE_UNSHARE: u32 = 2;
const CLOSE_RANGE_CLOEXEC: u32 = 4;
const O_CLOEXEC: i128 = 0o2000000;
const MAP_ANONYMOUS: u64 = 0x20;

/// ioctls that install a new fd: (where the fd is: an `out` field, or None
/// for the return value; kind; origin).
fn creating_ioctl(key: kfd::Key) -> Option<(Option<&'static str>, FdKind, &'static str)> {
    Some(match key {
        kfd::EXPORT_DMABUF => (
            Some("dmabuf_fd"),
            FdKind::Dmabuf,
            "AMDKFD_IOC_EXPORT_DMABUF",
        ),
        kfd::PRIME_HANDLE_TO_FD => (Some("fd"), FdKind::Dmabuf, "DRM_IOCTL_PRIME_HANDLE_TO_FD"),
        kfd::DMA_HEAP_ALLOC => (Some("fd"), FdKind::Dmabuf, "DMA_HEAP_IOCTL_ALLOC"),
        kfd::SYNCOBJ_HANDLE_TO_FD => (
            Some("fd"),
            FdKind::SyncFile,
            "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD",
        ),
        kfd::DMABUF_EXPORT_SYNC_FILE => (
            Some("fd"),
            FdKind::SyncFile,
            "DMA_BUF_IOCTL_EXPORT_SYNC_FILE",
        ),
        kfd::SMI_EVENTS => (Some("anon_fd"), FdKind::Other, "AMDKFD_IOC_SMI_EVENTS"),
        kfd::UDMABUF_CREATE => (None, FdKind::Dmabuf, "UDMABUF_CREATE"),
        kfd::UDMABUF_CREATE_LIST => (None, FdKind::Dmabuf, "UDMABUF_CREATE_LIST"),
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

/// A close-all sweep (a program closing every number up to a limit, most of
/// them not open) is one note, not a finding per EBADF: a run of at least
/// SWEEP_MIN closes with mostly EBADF answers is one (`is_sweep`), and a
/// sweep's findings are dropped as it goes once it has SWEEP_SETTLED closes.
const SWEEP_MIN: u64 = 4;
const SWEEP_SETTLED: u64 = 4096;

const IOCTL_ORIGINS: [&str; 4] = ["AMDKFD_", "DRM_", "DMA_", "UDMABUF"];

/// What the handle model hears from the fd model (opens, releases, process
/// ends) and the describe_buffer hook it answers.
pub trait Listener {
    fn on_fd_open(&mut self, _p: &Proc, _s: &Slot, _ev: &Ev) {}
    fn on_fd_release(&mut self, _p: &Proc, _s: &Slot, _ev: Option<&Ev>, _how: Release) {}
    fn on_process_end(&mut self, _p: &Proc, _t: &Table, _ev: Option<&Ev>, _exited: bool) {}
    /// None: no hook installed
    fn describe_buffer(&self, _pid: Pid, _s: &Slot) -> Option<Option<String>> {
        None
    }
}

/// The plain fd model's listener: none.
pub struct NoListener;
impl Listener for NoListener {}

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
        let stand_in = self.spare.take().unwrap_or_default();
        let mut p = match self.procs.swap_live(&pid, stand_in) {
            Ok(p) => p,
            Err(stand_in) => {
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
                self.procs.swap(&pid, stand_in)
            }
        };
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

    #[inline(always)]
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
}
