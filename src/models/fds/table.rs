//! The fd tables: what occupies each number (`Slot`), what a close left
//! behind (`Closed`), the per-process state (`Proc`), and the arenas the
//! model keeps them in (`Procs`, `Tables`); plus the fd kind a path names.

use super::*;

pub(super) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// What an fd refers to, as its path (or the call that made it) names it.
/// `as_str` is the name findings, fingerprints and the hooks show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FdKind {
    Dmabuf,
    Kfd,
    DrmRender,
    SyncFile,
    Accel,
    /// a path naming none of the above (a file, a pipe, a syncobj fd ...)
    Other,
    /// no path known yet
    Unknown,
}

impl FdKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FdKind::Dmabuf => "dmabuf",
            FdKind::Kfd => "kfd",
            FdKind::DrmRender => "drm-render",
            FdKind::SyncFile => "sync_file",
            FdKind::Accel => "accel",
            FdKind::Other => "other",
            FdKind::Unknown => "unknown",
        }
    }

    /// A GPU object the fd itself is (a buffer, a fence).
    pub fn is_gpu_object(self) -> bool {
        matches!(self, FdKind::Dmabuf | FdKind::SyncFile)
    }

    /// A GPU device node.
    pub fn is_device(self) -> bool {
        matches!(self, FdKind::Kfd | FdKind::DrmRender | FdKind::Accel)
    }

    /// The directory a device node of this kind lives in, for the kinds
    /// whose node a bare path prefix identifies.
    pub fn device_dir(self) -> Option<&'static [u8]> {
        match self {
            FdKind::Accel => Some(b"/dev/accel/"),
            FdKind::DrmRender => Some(b"/dev/dri/"),
            _ => None,
        }
    }
}

impl std::fmt::Display for FdKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// fd kind from a readlink / -y decoration; tolerant of ' (deleted)' and
/// -yy '<char M:m>' nesting a parser may have left in place.
#[inline(always)]
pub fn kind_of_path(path: Option<&[u8]>) -> FdKind {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return FdKind::Unknown;
    };
    // Only the head decides: the suffixes cut below start with `<`, `(` or
    // a space, none of which is in a prefix tested, so they never cut into
    // one.  A path that starts with ASCII other than a space is read as
    // bytes, without decoding it (a call per fd use).
    if path[0].is_ascii() && !py_space(char::from(path[0])) {
        return kind_of_head(path);
    }
    kind_of_decoded(path)
}

/// [`kind_of_path`] of a path that starts with a space or a byte past ASCII.
#[inline(never)]
fn kind_of_decoded(path: &[u8]) -> FdKind {
    let s = String::from_utf8_lossy(path);
    let mut p: &str = s.trim_matches(py_space);
    p = strip_dev_suffix(p);
    if let Some(r) = p.strip_suffix("(deleted)") {
        p = r.trim_end_matches(py_space);
    }
    kind_of_head(p.as_bytes())
}

/// The kind the start of a path names.
#[inline(always)]
pub(super) fn kind_of_head(p: &[u8]) -> FdKind {
    // (the prefixes tested start with `/d` or `an`: any other head, a
    // file's usual `/usr`, `/sys`, `/proc` or a `socket:`, is Other at
    // its first two bytes, without a comparison of each prefix)
    match p {
        [b'/', b'd', ..] | [b'a', b'n', ..] => {}
        _ => return FdKind::Other,
    }
    if p.starts_with(b"/dev/kfd") {
        FdKind::Kfd
    } else if p.starts_with(b"/dev/dri/renderD") {
        FdKind::DrmRender
    } else if p.starts_with(b"/dev/accel/") {
        FdKind::Accel
    } else if p.starts_with(b"/dmabuf:")
        || p.starts_with(b"anon_inode:dmabuf")
        || p.starts_with(b"anon_inode:[dmabuf")
    {
        FdKind::Dmabuf
    } else if p.starts_with(b"anon_inode:sync_file") || p.starts_with(b"anon_inode:[sync_file") {
        FdKind::SyncFile
    } else {
        FdKind::Other
    }
}

/// `<char [0-9]+:[0-9]+>$` removed.
pub(super) fn strip_dev_suffix(p: &str) -> &str {
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

#[inline]
pub(super) fn kind_of(path: Option<&Text>) -> FdKind {
    kind_of_path(path.map(|t| t.as_bytes()))
}

/// One fd number's current occupant.
#[derive(Debug, Clone)]
pub struct Slot {
    pub fd: Fd,
    pub generation: u64,
    pub kind: FdKind,
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
    pub(super) order: u64,
}

impl Slot {
    pub fn exported(&self) -> bool {
        EXPORT_ORIGINS.contains(&&*self.root_origin)
    }

    /// `fd 7 (dmabuf /dmabuf:, created by AMDKFD_IOC_EXPORT_DMABUF at f:12)`
    pub fn describe(&self, names: &Names) -> String {
        let mut first = self.kind.as_str().to_owned();
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

    pub(super) fn note(&mut self, role: String, ev: &Ev) {
        let notable = self.notable.get_or_insert_default();
        if notable.len() < 4 {
            notable.push((role, ev.clone()));
        }
    }

    pub(super) fn copy(&self, origin: Option<&Name>) -> Slot {
        Slot {
            origin: origin.cloned().unwrap_or_else(|| self.origin.clone()),
            prev: None,
            racing: None,
            ..self.clone()
        }
    }
}

/// How a number stopped holding its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    Close,
    CloseRange,
    /// dup2/dup3 onto it
    Dup2,
    /// close-on-exec at a successful execve
    Exec,
    /// a close the trace cannot see (the number turned up again, or an
    /// EBADF proved it closed)
    Unseen,
}

impl Release {
    /// The name findings' keys and the test hooks use.
    pub fn as_str(self) -> &'static str {
        match self {
            Release::Close => "close",
            Release::CloseRange => "close_range",
            Release::Dup2 => "dup2",
            Release::Exec => "exec",
            Release::Unseen => "unseen",
        }
    }
}

#[derive(Debug)]
pub struct Closed {
    pub slot: Box<Slot>,
    /// the call that closed it (None: an unseen close)
    pub event: Option<Ev>,
    pub how: Release,
    pub flagged: bool,
    pub image: u64,
    pub pid: Pid,
}

pub(super) type ClosedRef = Rc<RefCell<Closed>>;

/// The processes by pid in the order they were first seen (the end of the
/// trace ends them in that order), and how many of them were not seen from
/// their start (what a new process's `whole` asks): a process comes and
/// goes in O(1), whatever else is live.
#[derive(Default)]
pub(super) struct Procs {
    pub(super) map: Ordered<Pid, Box<Proc>>,
    /// entries that are not `complete`; one taken out by [`Procs::swap`]
    /// counts again when it is put back
    pub(super) incomplete: usize,
}

impl Procs {
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn contains_key(&self, pid: &Pid) -> bool {
        self.map.contains_key(pid)
    }

    pub(super) fn get(&self, pid: &Pid) -> Option<&Proc> {
        self.map.get(pid).map(|p| &**p)
    }

    pub(super) fn count(&mut self, p: &Proc, sign: isize) {
        if !p.complete {
            self.incomplete = self.incomplete.wrapping_add_signed(sign);
        }
    }

    /// Change a process in place (its `complete` counted again).
    pub(super) fn update<R>(&mut self, pid: &Pid, f: impl FnOnce(&mut Proc) -> R) -> Option<R> {
        let (place, mut p) = self.map.take(pid)?;
        self.count(&p, -1);
        let r = f(&mut p);
        self.count(&p, 1);
        self.map.put(*pid, Some(place), p);
        Some(r)
    }

    /// Insert or replace (a dict assignment: an existing key keeps its place).
    pub(super) fn insert(&mut self, pid: Pid, p: Box<Proc>) {
        self.count(&p, 1);
        if let Some(old) = self.map.insert(pid, p) {
            self.count(&old, -1);
        }
    }

    /// `with` in the place of `pid`'s process, which is returned (a handler
    /// works on it outside the map); it counts again when put back.
    pub(super) fn swap(&mut self, pid: &Pid, with: Box<Proc>) -> Box<Proc> {
        let slot = self.map.get_mut(pid).expect("present");
        let out = std::mem::replace(slot, with);
        self.count(&out, -1);
        out
    }

    /// [`Procs::swap`] for a process that has not ended; one that has
    /// (or none) leaves the map as it was and gives `with` back.
    pub(super) fn swap_live(&mut self, pid: &Pid, with: Box<Proc>) -> Result<Box<Proc>, Box<Proc>> {
        match self.map.get_mut(pid) {
            Some(slot) if !slot.ended => {
                let out = std::mem::replace(slot, with);
                self.count(&out, -1);
                Ok(out)
            }
            _ => Err(with),
        }
    }

    /// Put back what [`Procs::swap`] took out; returns the stand-in.
    pub(super) fn put_back(&mut self, pid: &Pid, p: Box<Proc>) -> Box<Proc> {
        self.count(&p, 1);
        let slot = self.map.get_mut(pid).expect("present");
        std::mem::replace(slot, p)
    }

    pub(super) fn remove(&mut self, pid: &Pid) {
        if let Some(p) = self.map.remove(pid) {
            self.count(&p, -1);
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Table {
    /// boxed: a table of 10^6 open fds holds 2^21 buckets, and an entry
    /// of a pointer, not of a whole slot, per bucket (memory per
    /// live fd)
    pub slots: HashMap<Fd, Box<Slot>>,
    pub closed: HashMap<Fd, ClosedRef>,
    pub(super) gens: HashMap<Fd, u64>,
    pub users: i64,
    pub(super) next_order: u64,
    /// one thread's own table (`unshare(CLONE_FILES)`, a thread cloned
    /// without CLONE_FILES, `close_range(CLOSE_RANGE_UNSHARE)` in a thread)
    pub(super) own_thread: bool,
}

impl Table {
    pub(super) fn copy(&self, origin: &Name) -> Table {
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

    pub(super) fn next_gen(&mut self, n: Fd) -> u64 {
        let g = self.gens.entry(n).or_insert(0);
        *g += 1;
        *g
    }

    pub(super) fn lowest_free(&self) -> Fd {
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

    pub(super) fn insert(&mut self, mut s: Slot) {
        self.next_order += 1;
        s.order = self.next_order;
        self.slots.insert(s.fd, Box::new(s));
    }
}

#[derive(Debug, Default)]
pub struct Proc {
    pub pid: Pid,
    pub(super) table: u64,
    pub(super) tids: HashSet<Option<u32>>,
    /// a fork child that has not exec'd
    pub forked: bool,
    /// saw fd-creating ioctls without their structs
    pub blind: bool,
    pub ioctl_allocs: u64,
    pub intent_allocs: u64,
    pub(super) exhaustion: Option<usize>,
    pub exit_snapshot: bool,
    pub ended: bool,
    pub complete: bool,
    pub image: u64,
    pub(super) first: bool,
    /// this image had a second thread (seen, or made by a thread clone):
    /// between two closes of one number another thread could have been
    /// handed it, so a double close may have closed someone else's fd
    pub(super) threaded: bool,
    /// first seen by a plain call of its own, no snapshot: under `strace -f`
    /// a fork child can run before strace prints its parent's clone result
    pub(super) early: bool,
    /// threads with a table of their own, by tid (the others share `table`)
    pub(super) tid_tables: HashMap<Option<u32>, u64>,
    /// the program it runs, as replay.rs Programs learns it (the header,
    /// execve, the parent's at fork)
    pub(super) exe: Option<Text>,
    /// `table` is the current event's thread's own table
    pub(super) swapped: bool,
    /// the current event gave its thread a table of its own
    pub(super) unshared: bool,
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

/// The fd tables by id: a process holds its table's id (CLONE_FILES shares
/// one); a handler takes its table out while it works on it.
#[derive(Default)]
pub(super) struct Tables(Vec<Option<Box<Table>>>);

impl Tables {
    #[inline]
    pub(super) fn get(&self, id: &u64) -> Option<&Table> {
        self.0.get(*id as usize)?.as_deref()
    }

    #[inline]
    pub(super) fn get_mut(&mut self, id: &u64) -> Option<&mut Table> {
        self.0.get_mut(*id as usize)?.as_deref_mut()
    }

    #[inline]
    pub(super) fn remove(&mut self, id: &u64) -> Option<Box<Table>> {
        self.0.get_mut(*id as usize)?.take()
    }

    #[inline]
    pub(super) fn insert(&mut self, id: u64, t: Box<Table>) {
        let i = id as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        self.0[i] = Some(t);
    }
}
