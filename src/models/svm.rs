//! SVM replay: the per-process range map, the claims on it, and the SVM
//! rules.  tests/test_engine_svm.py checks that a trace
//! analyzed whole and its events fed through `run_svm_model` give the same
//! findings and history.
//!
//! Events arrive in completion order.  Intent calls (hsa_amd_memory_lock /
//! unlock, hsa_amd_svm_attributes_set) are written at their return, after
//! the ioctls they issued, so the model decides with what it knows when an
//! ioctl completes and corrects the claim bookkeeping when the enclosing
//! intent call arrives; findings are built in `finish()` because of that
//! (svm_build.rs).
//!
//! Identity matters where the model asks "the same one": events, claims,
//! grants and SET_ATTR records are shared (`Rc`) and compared by pointer or
//! by their unique id.

// Claims (CRef) sit in ordered sets keyed by their id, which never changes;
// what is mutable behind the RefCell is not part of the order.
#![allow(clippy::mutable_key_type)]

use foldhash::{HashMap, HashMapExt};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::rc::Rc;

use crate::events::{Event, Kind, Text, Value};
use crate::findings::Finding;
use crate::kfd;
use crate::models::common::hex;
use crate::models::svm_build;
use crate::models::svm_map::{
    Attr, CoverIndex, NO_ACCESS, PieceMap, Row, State, SvmMap, mremap_unmaps,
};
use crate::models::svm_records::*;

const LOCKS: [&str; 2] = ["hsa_amd_memory_lock", "hsa_amd_memory_lock_to_pool"];
const UNLOCK: &str = "hsa_amd_memory_unlock";
const SVM_SET: &str = "hsa_amd_svm_attributes_set";
const RETRY_ERRNOS: [&str; 5] = [
    "EINTR",
    "EAGAIN",
    "ERESTARTSYS",
    "ERESTARTNOINTR",
    "ERESTARTNOHAND",
];
const MAP_FIXED: u64 = 0x10;
const RECENT: usize = 256;
/// Completion order: a record the capture wrote late (its thread
/// descheduled between the return and the write) is replayed where its
/// window ends, if it arrives within this much trace time after a call
/// that began later ...
const REORDER_SECS: f64 = 1.0;
/// ... and while fewer than this many SVM-relevant events wait (memory
/// stays bounded whatever the trace's rate).
const REORDER_MAX: usize = 8192;

pub const LIMITS: [&str; 5] = [
    "SVM: without intent calls, two registrations with identical page ranges are \
     indistinguishable (they are one claim)",
    "SVM: a deregistration that issues no ioctl (the baseline runtime always; the fixed ones \
     when survivors cover the buffer or it holds no whole page) leaves its claim looking \
     alive until its pages are unmapped or revoked",
    "SVM: NO_ACCESS racing in-flight SDMA copies (clr #6724) needs copy-completion events, \
     which an ioctl trace does not have",
    "SVM: ranges created by GPU retry faults (XNACK on) appear without an ioctl; GET_ATTR \
     answers over them may differ from the model (svm-model-mismatch notes)",
    "SVM: a SET_ATTR that failed late (ENOMEM, migration errors) may have committed its \
     attributes; the model assumes it did not",
];

/// One `show --addr` row: the event, what the model did, its state after
/// (the pieces on the watched pages, empty: "no SVM range"; the claims on
/// them, empty: "none").
#[derive(Debug, Clone)]
pub struct HistoryRow {
    pub event: Ev,
    pub what: String,
    pub pieces: Vec<Row>,
    pub claims: Vec<String>,
}

type Tid = Option<u32>;

struct Proc {
    pid: Option<u32>,
    shift: u32,
    map: SvmMap,
    cover: CoverIndex<CRef>,
    reg: HashMap<(u64, u64), CRef>,
    app: HashMap<(u64, u64), CRef>,
    by_ptr: HashMap<u64, CRef>,
    recent: HashMap<Tid, VecDeque<RecRef>>,
    /// pages whose access a deregistration took last
    dereg: PieceMap<bool>,
    xnack: Option<bool>,
    /// failed EINTR/EAGAIN SET_ATTR awaiting its retry, in insertion order
    retry: Vec<(Tid, Ev)>,
    allocs: HashMap<Tid, VecDeque<Ev>>,
    userptr: HashMap<u64, u64>,
    legacy: bool,
    seen: Rc<RefCell<Seen>>,
    /// each thread's last call's end, in completion order
    last_end: HashMap<Tid, f64>,
}

impl Proc {
    fn new(pid: Option<u32>, clean_start: bool, xnack: Option<bool>) -> Self {
        Proc {
            pid,
            shift: 12,
            map: SvmMap::new(clean_start),
            cover: CoverIndex::new(),
            reg: HashMap::new(),
            app: HashMap::new(),
            by_ptr: HashMap::new(),
            recent: HashMap::new(),
            dereg: PieceMap::new(),
            xnack,
            retry: Vec::new(),
            allocs: HashMap::new(),
            userptr: HashMap::new(),
            legacy: false,
            seen: Rc::new(RefCell::new(Seen::default())),
            last_end: HashMap::new(),
        }
    }

    fn pages(&self, addr: u128, size: u128) -> (u64, u64) {
        let ps = 1u128 << self.shift;
        (
            (addr >> self.shift) as u64,
            ((addr + size + ps - 1) >> self.shift) as u64,
        )
    }

    fn live(&self) -> Vec<CRef> {
        let mut out: BTreeSet<CRef> = BTreeSet::new();
        for (_, _, v) in self.cover.pieces.iter() {
            out.extend(v.iter().cloned());
        }
        out.into_iter().collect()
    }

    fn recent_pop(&mut self, tid: Tid) -> VecDeque<RecRef> {
        self.recent.remove(&tid).unwrap_or_default()
    }
}

fn default_reliant(kind: ClaimKind, xnack: Option<bool>) -> bool {
    kind != ClaimKind::Application && xnack != Some(false)
}

fn noaccess(st: &State) -> bool {
    st.access.iter().any(|a| a.1 == NO_ACCESS)
}

/// Logs give entry times and durations to the microsecond, each cut
/// separately, so a call nested in another may seem to end up to one
/// microsecond after it (never to begin before it); epoch seconds parsed to
/// a double carry ~0.24 us of noise on top.
pub(crate) const NESTED_SLACK: f64 = 1.5e-6;

/// `ev` ran inside `outer`'s window (both on one thread).  One thread's
/// records are written in the order its calls return, so a call that began
/// after `outer` began and whose record comes before `outer`'s returned
/// before it: nested, whatever its logged end says (clocks read on two
/// cpus of a VM have been seen tens of microseconds apart).
pub(crate) fn inside(ev: &Event, outer: &Event) -> bool {
    match (ev.h.time, outer.h.time) {
        (Some(t), Some(ot)) => {
            let (e, oe) = (ev.h.end().unwrap_or(t), outer.h.end().unwrap_or(ot));
            let returned_first = ev.h.file == outer.h.file
                && ev.h.pid == outer.h.pid
                && ev.h.tid == outer.h.tid
                && ev.h.line < outer.h.line;
            t >= ot - EPS && (returned_first || (t <= oe + EPS && e <= oe + NESTED_SLACK + EPS))
        }
        // no clock: everything since the thread's last intent call
        _ => true,
    }
}

/// A decoded int field: `None` missing, `Some(None)` present but no int.
fn int_of(v: Option<&Value>) -> Option<Option<i128>> {
    v.map(Value::as_i128)
}

/// An `attrs` list as (type, value) pairs; `None` when an entry is not a
/// pair of u32s (no kernel attribute: the model leaves such a call alone).
fn attrs_of(v: Option<&Value>) -> Option<Vec<Attr>> {
    let Some(v) = v else {
        return Some(Vec::new());
    };
    let items = v.as_list()?;
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        let (t, x) = match it {
            Value::List(p) if p.len() == 2 => (&p[0], &p[1]),
            Value::Pair(p) => (&p.0, &p.1),
            _ => return None,
        };
        let t = u32::try_from(t.as_i128()?).ok()?;
        let x = u32::try_from(x.as_i128()?).ok()?;
        out.push(Attr::new(t, x));
    }
    Some(out)
}

fn arg_int(ev: &Event, field: &str) -> Option<i128> {
    match &ev.kind {
        Kind::Intent(i) => i
            .args
            .iter()
            .rev()
            .find(|(k, _)| k == field)
            .and_then(|(_, v)| v.as_i128()),
        _ => None,
    }
}

/// Model-wide state the per-process steps share.
pub(crate) struct Shared {
    watch: Option<(u128, u128)>,
    watch_pid: Option<Option<u32>>,
    pub history: Vec<HistoryRow>,
    pub raws: Vec<Raw>,
    /// rec id -> indexes of the victim raws made about it
    raw_by_rec: HashMap<u64, Vec<usize>>,
    /// claim id -> its svm-stale-no-access raw (one per claim)
    stale: HashMap<u64, usize>,
    ids: u64,
    rec_ids: u64,
    pub counts: Counts,
    effects: HashMap<Vec<Attr>, Rc<Effect>>,
    /// every process's runtime behaviour, in the order they appeared
    seens: Vec<Rc<RefCell<Seen>>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub set_attr: u64,
    pub get_attr: u64,
    pub claims: u64,
}

/// Replays AMDKFD_IOC_SVM with mmap/munmap/mremap and intent calls.
pub struct SvmModel {
    sh: Shared,
    procs: HashMap<Option<u32>, (u64, Proc)>,
    proc_seq: u64,
    xnack: Option<bool>,
    clean_start: bool,
    /// findings, once `finish` ran
    pub findings: Vec<Finding>,
    /// the input files' names by FileId (details name them; numbering
    /// sorts by them)
    files: Vec<Text>,
    /// the event being fed, shared once something keeps it
    cur: Option<Ev>,
    /// events waiting for their turn in completion order
    pending: BinaryHeap<Reverse<Pending>>,
    /// the latest entry time seen
    horizon: f64,
    arrivals: u64,
    /// per process and thread, the completion key given to its latest
    /// event: one thread's records are written in the order its calls
    /// return, so its events keep their file order whatever their logged
    /// ends say
    thread_keys: HashMap<Option<u32>, HashMap<Option<u32>, f64>>,
}

/// An event waiting in the completion-order buffer: ordered by the end of
/// its window, then by arrival.
struct Pending {
    end: f64,
    n: u64,
    ev: Ev,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.end.total_cmp(&o.end).then(self.n.cmp(&o.n))
    }
}

/// The events the SVM model reads; every other one passes it by.
fn relevant(ev: &Event) -> bool {
    match &ev.kind {
        Kind::Ioctl(io) => {
            let key = (io.type_, io.nr);
            [kfd::SVM, kfd::ALLOC_MEMORY_OF_GPU, kfd::SET_XNACK_MODE]
                .iter()
                .any(|k| key == (Some(k.0), Some(k.1)))
        }
        Kind::Intent(_)
        | Kind::Munmap(_)
        | Kind::Mremap(_)
        | Kind::Mmap(_)
        | Kind::ProcessInfo(_)
        | Kind::Exit(_)
        | Kind::Exec(_) => true,
        _ => false,
    }
}

/// The event being fed as the model keeps it: the caller's own `Rc` when
/// it gave one ([`SvmModel::feed_shared`]), else one copy, made once.
fn rc(cur: &mut Option<Ev>, ev: &Event) -> Ev {
    cur.get_or_insert_with(|| Rc::new(ev.clone())).clone()
}

/// How the model is set up (SvmModel's keyword arguments).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// (start, end[, pid]) in bytes: record every event touching those
    /// pages in `history`
    pub watch: Option<(u128, u128)>,
    pub watch_pid: Option<Option<u32>>,
    /// the XNACK mode when known from elsewhere
    pub xnack: Option<bool>,
    /// false for traces attached mid-run
    pub clean_start: bool,
}

impl SvmModel {
    pub const LIMITS: [&'static str; 5] = LIMITS;

    pub fn new(opts: Options) -> Self {
        SvmModel {
            sh: Shared {
                watch: opts.watch,
                watch_pid: opts.watch_pid,
                history: Vec::new(),
                raws: Vec::new(),
                raw_by_rec: HashMap::new(),
                stale: HashMap::new(),
                ids: 0,
                rec_ids: 0,
                counts: Counts::default(),
                effects: HashMap::new(),
                seens: Vec::new(),
            },
            procs: HashMap::new(),
            proc_seq: 0,
            xnack: opts.xnack,
            clean_start: opts.clean_start,
            findings: Vec::new(),
            files: Vec::new(),
            cur: None,
            pending: BinaryHeap::new(),
            horizon: f64::NEG_INFINITY,
            arrivals: 0,
            thread_keys: HashMap::new(),
        }
    }

    /// The input files' names, by FileId.
    pub fn set_files(&mut self, names: Vec<Text>) {
        self.files = names;
    }

    pub fn limits(&self) -> &'static [&'static str] {
        &LIMITS
    }

    pub fn history(&self) -> &[HistoryRow] {
        &self.sh.history
    }

    pub fn counts(&self) -> Counts {
        self.sh.counts
    }

    /// The runtime behaviour the whole trace shows (every process's
    /// together), as the coverage section says it.
    pub fn behaviour(&self) -> Option<String> {
        let mut all = Seen::default();
        for s in &self.sh.seens {
            all.add(&s.borrow());
        }
        all.describe()
    }

    fn proc(&mut self, pid: Option<u32>) -> &mut Proc {
        self.split(pid).1
    }

    /// The shared state and the process `pid` (made when new).
    fn split(&mut self, pid: Option<u32>) -> (&mut Shared, &mut Proc) {
        let (clean, xnack) = (self.clean_start, self.xnack);
        let seq = &mut self.proc_seq;
        let sh = &mut self.sh;
        let p = &mut self
            .procs
            .entry(pid)
            .or_insert_with(|| {
                *seq += 1;
                let p = Proc::new(pid, clean, xnack);
                sh.seens.push(p.seen.clone());
                (*seq, p)
            })
            .1;
        (sh, p)
    }

    pub fn feed(&mut self, ev: &Event) {
        if relevant(ev) {
            self.feed_shared(&Rc::new(ev.clone()));
        }
    }

    /// `feed` for an event the caller already shares: what the model keeps
    /// of it (records, evidence) is this `Rc`, not a copy.
    ///
    /// Events are replayed in order of completion: each waits
    /// until a call that began more than `REORDER_SECS` after its window
    /// ended has arrived (or the buffer is full), so a record written late
    /// takes its place by its window, not by its line.  An event without a
    /// clock, and a process's start, exec or exit, replays everything
    /// before it first, then itself.
    pub fn feed_shared(&mut self, ev: &Ev) {
        if !relevant(ev) {
            return;
        }
        // a process's start, exec and exit close what came before them
        let barrier = matches!(
            ev.kind,
            Kind::ProcessInfo(_) | Kind::Exit(_) | Kind::Exec(_)
        );
        let Some(t) = ev.h.time.filter(|_| !barrier) else {
            self.drain(f64::INFINITY);
            self.replay(ev);
            if matches!(ev.kind, Kind::Exit(_)) {
                self.thread_keys.remove(&ev.h.pid);
            }
            return;
        };
        self.arrivals += 1;
        // an intent call completes after the calls nested in it, even where
        // their logged ends seem later by the microsecond cuts
        let slack = if matches!(ev.kind, Kind::Intent(_)) {
            NESTED_SLACK
        } else {
            0.0
        };
        let last = self
            .thread_keys
            .entry(ev.h.pid)
            .or_default()
            .entry(ev.h.tid)
            .or_insert(f64::NEG_INFINITY);
        let end = (ev.h.end().unwrap_or(t) + slack).max(*last);
        *last = end;
        self.pending.push(Reverse(Pending {
            end,
            n: self.arrivals,
            ev: ev.clone(),
        }));
        self.horizon = self.horizon.max(t);
        self.drain(self.horizon - REORDER_SECS);
    }

    /// Replay the waiting events that ended before `upto`, and the oldest
    /// ones beyond the buffer's bound.
    fn drain(&mut self, upto: f64) {
        while let Some(Reverse(top)) = self.pending.peek() {
            if top.end >= upto && self.pending.len() <= REORDER_MAX {
                break;
            }
            let Reverse(p) = self.pending.pop().expect("peeked");
            self.replay(&p.ev);
        }
    }

    fn replay(&mut self, ev: &Ev) {
        self.cur = Some(ev.clone());
        self.feed_one(ev);
        self.cur = None;
        if let Some(end) = ev.h.end()
            && let Some((_, p)) = self.procs.get_mut(&ev.h.pid)
        {
            p.last_end.insert(ev.h.tid, end);
        }
    }

    fn feed_one(&mut self, ev: &Event) {
        if ev.h.injected {
            return; // the kernel never ran it: no range changed
        }
        match &ev.kind {
            Kind::Ioctl(io) => {
                let key = (io.type_, io.nr);
                if key == (Some(kfd::SVM.0), Some(kfd::SVM.1)) {
                    self.svm(ev);
                } else if key
                    == (
                        Some(kfd::ALLOC_MEMORY_OF_GPU.0),
                        Some(kfd::ALLOC_MEMORY_OF_GPU.1),
                    )
                {
                    self.alloc(ev);
                } else if key == (Some(kfd::SET_XNACK_MODE.0), Some(kfd::SET_XNACK_MODE.1))
                    && ev.h.ok()
                {
                    let mut v = io
                        .out
                        .as_ref()
                        .and_then(|o| o.get("xnack_enabled"))
                        .and_then(Value::as_i128);
                    if v.is_none()
                        && let Some(a) = io.arg.as_ref().and_then(|a| a.get("xnack_enabled"))
                        && let Some(x) = a.as_i128()
                        && x >= 0
                    {
                        v = Some(x);
                    }
                    if let Some(v) = v
                        && v >= 0
                    {
                        self.proc(ev.h.pid).xnack = Some(v != 0);
                    }
                }
            }
            Kind::Intent(_) => {
                let name = &*ev.name;
                if name == UNLOCK {
                    self.unlock(ev);
                } else if LOCKS.contains(&name) {
                    self.lock(ev);
                } else if name == SVM_SET {
                    self.svm_intent(ev);
                } else if let Some((_, p)) = self.procs.get_mut(&ev.h.pid) {
                    p.recent.remove(&ev.h.tid);
                    p.allocs.remove(&ev.h.tid);
                }
            }
            Kind::Munmap(m) if ev.h.ok() && m.length != 0 => {
                let evr = rc(&mut self.cur, ev);
                let (sh, p) = self.split(ev.h.pid);
                let (s, e) = p.pages(m.addr.into(), m.length.into());
                sh.unmap(p, &evr, s, e);
            }
            Kind::Mremap(_) => self.mremap(ev),
            Kind::Mmap(m) => {
                if ev.h.ok()
                    && m.flags & MAP_FIXED != 0
                    && m.length != 0
                    && let Some((_, p)) = self.procs.get_mut(&ev.h.pid)
                {
                    let ret = ev.h.ret_u64().unwrap_or(0);
                    let (s, e) = p.pages(ret.into(), m.length.into());
                    self.sh.unmap(p, &rc(&mut self.cur, ev), s, e);
                }
            }
            Kind::ProcessInfo(pi) => {
                let p = self.proc(ev.h.pid);
                if pi.page_size != 0 && pi.page_size & (pi.page_size - 1) == 0 {
                    p.shift = pi.page_size.trailing_zeros();
                }
            }
            Kind::Exit(x) => {
                if x.whole
                    && let Some((_, p)) = self.procs.remove(&ev.h.pid)
                {
                    self.sh.drop_proc(p, &rc(&mut self.cur, ev));
                }
            }
            Kind::Exec(_) => {
                if ev.h.ok()
                    && let Some((_, p)) = self.procs.remove(&ev.h.pid)
                {
                    self.sh.drop_proc(p, &rc(&mut self.cur, ev));
                }
            }
            _ => {}
        }
    }

    pub fn finish(&mut self) {
        self.drain(f64::INFINITY);
        let mut procs: Vec<&mut (u64, Proc)> = self.procs.values_mut().collect();
        procs.sort_by_key(|x| x.0);
        for (_, p) in procs {
            let retry = std::mem::take(&mut p.retry);
            for (_, ev) in retry {
                let why = format!(
                    "failed with {} and was not retried",
                    ev.h.err.as_deref().unwrap_or("None")
                );
                self.sh.bad(p, &ev, &why);
            }
            for c in p.live() {
                self.sh.judge_stale(p, &c, Pre::Now);
            }
        }
        let new = svm_build::build(std::mem::take(&mut self.sh.raws), &self.files);
        self.findings.extend(new);
    }

    // --- SVM ioctl --------------------------------------------------------

    fn svm(&mut self, ev: &Event) {
        let Kind::Ioctl(io) = &ev.kind else { return };
        let Some(arg) = io.arg.as_ref() else { return };
        let Value::Struct(fields) = arg else { return };
        if fields.is_empty() || arg.get("op").is_none() {
            return; // strace: no struct, nothing to replay
        }
        let op = arg.get("op").and_then(Value::as_i128);
        let start = int_of(arg.get("start_addr")).unwrap_or(Some(0));
        let size = int_of(arg.get("size")).unwrap_or(Some(0));
        let attrs = attrs_of(arg.get("attrs"));
        let pid = ev.h.pid;
        self.proc(pid);
        let (Some(start), Some(size), Some(attrs)) = (start, size, attrs) else {
            return; // no kernel SVM call: not a replayable one
        };
        if start < 0 || size < 0 {
            return;
        }
        let (start, size) = (start as u128, size as u128);
        let p = &mut self.procs.get_mut(&pid).unwrap().1;
        let sh = &mut self.sh;
        let mask = (1u128 << p.shift) - 1;
        if op == Some(kfd::SVM_OP_GET_ATTR.into()) {
            sh.counts.get_attr += 1;
            let out = io.out.as_ref().and_then(|o| o.get("attrs"));
            if ev.h.ok()
                && out.and_then(Value::as_list).is_some_and(|l| !l.is_empty())
                && size != 0
                && (start | size) & mask == 0
                && let Some(answered) = attrs_of(out)
            {
                let s = (start >> p.shift) as u64;
                let e = ((start + size) >> p.shift) as u64;
                sh.get_attr(p, &rc(&mut self.cur, ev), s, e, &attrs, &answered);
            }
            return;
        }
        if op != Some(kfd::SVM_OP_SET_ATTR.into()) {
            return;
        }
        sh.counts.set_attr += 1;
        let tid = ev.h.tid;
        let evr = rc(&mut self.cur, ev);
        if let Some(i) = p.retry.iter().position(|x| x.0 == tid) {
            let (_, prev) = p.retry.remove(i);
            let prev_arg = match &prev.kind {
                Kind::Ioctl(pio) => pio.arg.as_ref(),
                _ => None,
            };
            if prev_arg != io.arg.as_ref() {
                let why = format!(
                    "failed with {} and was not retried",
                    prev.h.err.as_deref().unwrap_or("None")
                );
                sh.bad(p, &prev, &why);
            }
        }
        if !ev.h.ok() {
            match ev.h.err.as_deref() {
                Some(err) if RETRY_ERRNOS.contains(&err) => {
                    // a retry with the same arguments is not a finding
                    p.retry.push((tid, evr));
                }
                Some(err) => {
                    let why = format!("failed with {err}");
                    sh.bad(p, &evr, &why);
                }
                None => {}
            }
            return;
        }
        if size == 0 || start & mask != 0 || size & mask != 0 {
            let why = if size == 0 {
                "zero size"
            } else if start & mask != 0 {
                "unaligned start"
            } else {
                "unaligned size"
            };
            sh.bad(p, &evr, &format!("{why} (the kernel answers EINVAL)"));
            return;
        }
        let s = (start >> p.shift) as u64;
        let e = ((start + size) >> p.shift) as u64;
        sh.set_attr(p, evr, s, e, attrs);
    }

    // --- intent calls -----------------------------------------------------

    fn alloc(&mut self, ev: &Event) {
        let Kind::Ioctl(io) = &ev.kind else { return };
        let flags = io
            .arg
            .as_ref()
            .and_then(|a| a.get("flags"))
            .and_then(Value::as_i128);
        let Some(flags) = flags else { return };
        if !ev.h.ok() || flags & i128::from(kfd::ALLOC_FLAG_USERPTR) == 0 {
            return;
        }
        let evr = rc(&mut self.cur, ev);
        let p = self.proc(ev.h.pid);
        let dq = p.allocs.entry(ev.h.tid).or_default();
        if dq.len() >= 16 {
            dq.pop_front();
        }
        dq.push_back(evr);
    }

    fn lock(&mut self, ev: &Event) {
        let watching = self.sh.watch.is_some();
        let evr = rc(&mut self.cur, ev);
        let (sh, p) = self.split(ev.h.pid);
        p.seen.borrow_mut().intents += 1;
        let recs: Vec<RecRef> = p
            .recent_pop(ev.h.tid)
            .into_iter()
            .filter(|r| {
                let d = r.r.borrow();
                d.eff.kind == EffKind::Registration && d.claim.is_some() && inside(&d.event, ev)
            })
            .collect();
        let userptr = p
            .allocs
            .remove(&ev.h.tid)
            .unwrap_or_default()
            .iter()
            .any(|a| inside(a, ev));
        let (ptr, size) = (arg_int(ev, "host_ptr"), arg_int(ev, "size"));
        let (Some(ptr), Some(size)) = (ptr, size) else {
            return;
        };
        // a failed lock registers nothing the runtime keeps
        if ev.h.ret != Some(0) || size <= 0 || ptr < 0 || ptr > u64::MAX.into() {
            return;
        }
        let (ptr, size) = (ptr as u64, size as u128);
        if recs.is_empty()
            && (userptr
                || p.userptr.contains_key(&ptr)
                || (p.legacy && !p.by_ptr.contains_key(&ptr)))
        {
            // the legacy path: a userptr buffer, a buffer handle
            // and no SVM claim
            p.legacy = p.legacy || userptr;
            let n = p.userptr.entry(ptr).or_insert(0);
            *n += 1;
            let n = *n;
            if watching {
                let (s, e) = p.pages(ptr.into(), size);
                let what = format!(
                    "lock {} size {}: a userptr buffer (refcount {n}), not an SVM claim",
                    hex(ptr),
                    hex(size as i128)
                );
                sh.note(p, &evr, s, e, what);
            }
            return;
        }
        let (s, e) = p.pages(ptr.into(), size);
        let mut target = p.by_ptr.get(&ptr).cloned();
        if target.as_ref().is_some_and(|t| !t.b().live) {
            target = None;
        }
        let joined = target.is_some();
        let target = match target {
            Some(t) => t,
            None => {
                let first = recs
                    .first()
                    .map(|r| r.r.borrow().claim.clone().unwrap().real());
                let mine: Vec<GrantRef> = recs
                    .iter()
                    .filter_map(|r| r.r.borrow().grant.clone())
                    .collect();
                let adopt = first.as_ref().is_some_and(|f| {
                    let fc = f.b();
                    fc.kind == ClaimKind::Registration
                        && fc.live
                        && fc.grants.iter().all(|g| grant_in(&mine, g).is_some())
                });
                let t = if adopt {
                    // the provisional claim becomes the lock's: findings
                    // already made about it follow the same object
                    let t = first.unwrap();
                    let key = (t.b().start, t.b().end);
                    if p.reg.get(&key) == Some(&t) {
                        p.reg.remove(&key);
                    }
                    t.m().kind = ClaimKind::Explicit;
                    t
                } else {
                    sh.ids += 1;
                    sh.counts.claims += 1;
                    let born = recs
                        .first()
                        .map_or_else(|| evr.clone(), |r| r.r.borrow().event.clone());
                    let t = CRef::new(sh.ids, Claim::new(ClaimKind::Explicit, s, e, Some(born)));
                    p.cover.add(s, e, t.clone());
                    let stale = sh.noaccess_gpus(p, s, e, None);
                    t.m().stale_gpus = stale;
                    t
                };
                {
                    let mut tc = t.m();
                    tc.ptr = Some(ptr);
                    tc.byte_end = Some(u128::from(ptr) + size);
                    tc.lock = Some(evr.clone());
                    tc.refcount = 0;
                }
                p.by_ptr.insert(ptr, t.clone());
                t
            }
        };
        target.m().refcount += 1;
        if joined && let Some(t) = ev.h.time {
            let mine: Vec<GrantRef> = recs
                .iter()
                .filter_map(|r| r.r.borrow().grant.clone())
                .collect();
            target.m().joins.push((t, evr.clone(), mine));
        }
        // a second lock of the same pointer with another size widens the claim
        let be = (u128::from(ptr) + size).max(target.b().byte_end.unwrap_or(0));
        target.m().byte_end = Some(be);
        let (ns, ne) = p.pages(ptr.into(), be - u128::from(ptr));
        let (ts, te) = (target.b().start, target.b().end);
        let (ns, ne) = (ns.min(ts), ne.max(te));
        if (ns, ne) != (ts, te) {
            for (a, b) in [(ns, ts), (te, ne)] {
                if a < b {
                    p.cover.add(a, b, target.clone());
                    target.m().pages.push((a, b));
                }
            }
            let mut tc = target.m();
            tc.start = ns;
            tc.end = ne;
        }
        for r in &recs {
            let (src, grant, rs, re) = {
                let d = r.r.borrow();
                (d.claim.clone().unwrap().real(), d.grant.clone(), d.s, d.e)
            };
            if src == target {
                continue;
            }
            if let Some(g) = &grant {
                let mut sc = src.m();
                if let Some(i) = grant_in(&sc.grants, g) {
                    sc.grants.remove(i);
                    sc.recompute();
                }
            }
            if let Some(g) = grant {
                let mut tc = target.m();
                // another lock's registration of the claim's range
                if tc.born_shape.as_ref() == Some(&(g.gpus.clone(), g.flags)) {
                    tc.registrations += 1;
                    tc.last_registered = match (tc.last_registered, g.event.h.time) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                }
                tc.grants.push(g);
            }
            r.r.borrow_mut().claim = Some(target.clone());
            let (ts, te) = (target.b().start, target.b().end);
            if rs < ts || re > te {
                p.cover.add(rs, re, target.clone());
                let mut tc = target.m();
                tc.pages.push((rs, re));
                tc.start = rs.min(ts);
                tc.end = re.max(te);
            }
            let retire = {
                let sc = src.b();
                sc.grants.is_empty() && sc.kind == ClaimKind::Registration
            };
            if retire {
                // retired, not ended: it was this lock's claim all along
                {
                    let mut sc = src.m();
                    sc.live = false;
                    sc.ended_by = Some(evr.clone());
                }
                sh.unindex(p, &src);
                src.m().alias = Some(target.clone());
            }
            if target.b().stale_gpus.is_empty() {
                let st = src.b().stale_gpus.clone();
                target.m().stale_gpus = st;
            }
        }
        target.m().recompute();
        if watching {
            let (ts, te, id, rc) = {
                let t = target.b();
                (t.start, t.end, target.id(), t.refcount)
            };
            let what = format!(
                "lock {} size {}: explicit claim #{id} (refcount {rc}, {} SET_ATTR(s) in its window)",
                hex(ptr),
                hex(size as i128),
                recs.len()
            );
            sh.note(p, &evr, ts, te, what);
        }
    }

    fn unlock(&mut self, ev: &Event) {
        let evr = rc(&mut self.cur, ev);
        let (sh, p) = self.split(ev.h.pid);
        p.seen.borrow_mut().intents += 1;
        let recs: Vec<RecRef> = p
            .recent_pop(ev.h.tid)
            .into_iter()
            .filter(|r| {
                let d = r.r.borrow();
                d.eff.kind == EffKind::Revoke && inside(&d.event, ev)
            })
            .collect();
        p.allocs.remove(&ev.h.tid);
        let ptr = arg_int(ev, "host_ptr").and_then(|x| u64::try_from(x).ok());
        let Some(ptr) = ptr else { return };
        if let Some(&n) = p.userptr.get(&ptr)
            && !p.by_ptr.contains_key(&ptr)
        {
            if ev.h.ret == Some(0) {
                if n > 1 {
                    p.userptr.insert(ptr, n - 1);
                } else {
                    p.userptr.remove(&ptr);
                }
            }
            return; // a userptr buffer: the handle model sees its FREE
        }
        let Some(c) = p.by_ptr.get(&ptr).cloned() else {
            return;
        };
        if ev.h.ret != Some(0) {
            return;
        }
        // a claim made by a lock that began after this unlock began is not
        // this unlock's: the pointer's earlier claim (ended by the revoke
        // inside this unlock, as inferred) was, and the lock came after the
        // runtime had dropped it (the line of an unlock is written at its
        // return, after a lock of the same pointer on another thread)
        let made_after = c
            .b()
            .lock
            .as_ref()
            .and_then(|l| l.h.time)
            .zip(ev.h.time)
            .is_some_and(|(l, u)| l > u + EPS);
        if made_after {
            return;
        }
        // locks of the pointer that began after this unlock began, while it
        // was the only holder, joined an entry the runtime had already
        // dropped: they are a new claim, and what this unlock's revokes
        // took from it before they landed is a loss
        let late = match ev.h.time {
            Some(u) => {
                let mut cb = c.m();
                cb.joins.retain(|j| j.0 > u + EPS);
                cb.joins.clone()
            }
            None => Vec::new(),
        };
        let fresh = (!late.is_empty() && c.b().refcount == 1 + late.len() as i64)
            .then(|| sh.split_late_locks(p, &c, &late, ptr));
        c.m().refcount -= 1;
        for r in &recs {
            sh.rebind(p, r, &c, &evr);
        }
        if let Some(n) = &fresh {
            for r in &recs {
                if let Some(loss) = late_loss(r, n, p.xnack) {
                    sh.victim(p, r, n, loss);
                }
            }
        }
        let mut ended = false;
        if c.b().refcount <= 0 {
            c.m().unlocked = true;
            if p.by_ptr.get(&ptr) == Some(&c) {
                p.by_ptr.remove(&ptr); // (not a claim split off it above)
            }
            if c.b().live {
                sh.end(p, &c, &evr, Pre::Now);
                ended = true;
            }
        }
        {
            // its release began with the unlock (the window as
            // the line says, wherever the line stands in the file)
            let mut b = c.m();
            if !b.live
                && let Some(t) = evr.h.time
            {
                b.release_began = Some(b.release_began.map_or(t, |x| x.min(t)));
                b.release_after = b.release_began;
            }
        }
        if sh.watch.is_some() {
            let (s, e, rc) = {
                let b = c.b();
                (b.start, b.end, b.refcount)
            };
            let what = format!(
                "unlock {}: claim #{} refcount {rc}{}",
                hex(ptr),
                c.id(),
                if ended { "; last unlock ends it" } else { "" }
            );
            sh.note(p, &evr, s, e, what);
        }
    }

    /// hsa_amd_svm_attributes_set: the SET_ATTRs inside its window are the
    /// program's own.
    fn svm_intent(&mut self, ev: &Event) {
        let evr = self.sh.watch.map(|_| rc(&mut self.cur, ev));
        let (sh, p) = self.split(ev.h.pid);
        let recs: Vec<RecRef> = p
            .recent_pop(ev.h.tid)
            .into_iter()
            .filter(|r| inside(&r.r.borrow().event, ev))
            .collect();
        p.allocs.remove(&ev.h.tid);
        for r in &recs {
            let (kind, has_claim) = {
                let d = r.r.borrow();
                (d.eff.kind, d.claim.is_some())
            };
            if kind == EffKind::Registration && has_claim {
                sh.make_application(p, r);
            } else if kind == EffKind::Revoke {
                // the caller's own NO_ACCESS is no deregistration
                let released = r.r.borrow().released.clone();
                let keep: Vec<CRef> = released
                    .into_iter()
                    .filter(|c| c.real().b().kind == ClaimKind::Application)
                    .collect();
                sh.unrelease(p, r, &keep);
                let (s, e) = {
                    let mut d = r.r.borrow_mut();
                    d.released = keep;
                    (d.s, d.e)
                };
                p.dereg.delete(s, e);
            }
        }
        // what the caller takes from a claim lying wholly inside the range it
        // names is what it asked for; one reached only by rounding outward
        // onto a shared page is a victim
        for r in &recs {
            let (rs, re) = {
                let d = r.r.borrow();
                (d.s, d.e)
            };
            let idx = sh.raw_by_rec.get(&r.id).cloned().unwrap_or_default();
            for i in idx {
                if let RawKind::Victim { claim, .. } = &sh.raws[i].kind {
                    let v = claim.real();
                    let vb = v.b();
                    if rs <= vb.start && vb.end <= re {
                        drop(vb);
                        sh.raws[i].dead = true;
                    }
                }
            }
        }
        if let Some(evr) = evr
            && !recs.is_empty()
        {
            let s = recs[0].r.borrow().s;
            let e = recs[recs.len() - 1].r.borrow().e;
            let what = format!(
                "hsa_amd_svm_attributes_set: {} SET_ATTR(s) are the program's own",
                recs.len()
            );
            sh.note(p, &evr, s, e, what);
        }
    }

    // --- munmap / mremap --------------------------------------------------

    fn mremap(&mut self, ev: &Event) {
        let Kind::Mremap(m) = &ev.kind else { return };
        if !ev.h.ok() {
            return;
        }
        let Some((_, p)) = self.procs.get_mut(&ev.h.pid) else {
            return;
        };
        let evr = rc(&mut self.cur, ev);
        let ret = ev.h.ret_u64().unwrap_or(0);
        // shrunk in place, the tail past the page-aligned new length; moved,
        // the target then the source
        for (s, e) in mremap_unmaps(m.old_addr, m.old_len, m.new_len, ret, p.shift) {
            self.sh.unmap(p, &evr, s, e);
        }
    }
}

impl Shared {
    fn effect(&mut self, attrs: &[Attr]) -> Rc<Effect> {
        if let Some(e) = self.effects.get(attrs) {
            return e.clone();
        }
        if self.effects.len() > 1024 {
            self.effects.clear();
        }
        let e = Rc::new(effect_of(attrs));
        self.effects.insert(attrs.to_vec(), e.clone());
        e
    }

    fn new_claim(
        &mut self,
        p: &mut Proc,
        kind: ClaimKind,
        s: u64,
        e: u64,
        born: Option<Ev>,
    ) -> CRef {
        self.ids += 1;
        self.counts.claims += 1;
        let c = CRef::new(self.ids, Claim::new(kind, s, e, born));
        p.cover.add(s, e, c.clone());
        match kind {
            ClaimKind::Registration => {
                p.reg.insert((s, e), c.clone());
            }
            ClaimKind::Application => {
                p.app.insert((s, e), c.clone());
            }
            ClaimKind::Explicit => {}
        }
        c
    }

    fn unindex(&mut self, p: &mut Proc, c: &CRef) {
        let (pages, key) = {
            let b = c.b();
            (b.pages.clone(), (b.start, b.end))
        };
        for (s, e) in pages {
            p.cover.remove(s, e, c);
        }
        if p.reg.get(&key) == Some(c) {
            p.reg.remove(&key);
        }
        if p.app.get(&key) == Some(c) {
            p.app.remove(&key);
        }
    }

    fn watched(&self, p: &Proc, s: u64, e: u64) -> bool {
        let Some((w0, w1)) = self.watch else {
            return false;
        };
        if let Some(wp) = self.watch_pid
            && p.pid != wp
        {
            return false;
        }
        let (ws, we) = watch_pages(w0, w1, p.shift);
        u128::from(s) < we && ws < u128::from(e)
    }

    fn note(&mut self, p: &Proc, ev: &Ev, s: u64, e: u64, what: String) {
        if !self.watched(p, s, e) {
            return;
        }
        let (w0, w1) = self.watch.unwrap();
        let (ws, we) = watch_pages(w0, w1, p.shift);
        let (ws, we) = (
            u64::try_from(ws).unwrap_or(u64::MAX),
            u64::try_from(we).unwrap_or(u64::MAX),
        );
        let claims = p
            .cover
            .query(ws, we)
            .into_iter()
            .map(|c| {
                let b = c.b();
                let gpus = b.gpus.iter().map(|&g| hex(g)).collect::<Vec<_>>();
                let gpus = if gpus.is_empty() {
                    "none".to_owned()
                } else {
                    gpus.join(",")
                };
                format!(
                    "#{} {} gpus {gpus} flags {}",
                    c.id(),
                    b.label(p.shift),
                    flags_text(b.flags)
                )
            })
            .collect();
        self.history.push(HistoryRow {
            event: ev.clone(),
            what,
            pieces: p.map.describe(ws, we, p.shift),
            claims,
        });
    }

    fn drop_proc(&mut self, mut p: Proc, ev: &Ev) {
        for c in p.live() {
            self.judge_stale(&p, &c, Pre::Now);
            let mut b = c.m();
            b.live = false;
            b.ended_by = Some(ev.clone());
        }
        p.retry.clear();
    }

    fn bad(&mut self, p: &Proc, ev: &Ev, why: &str) {
        self.raws.push(Raw {
            kind: RawKind::Bad {
                event: ev.clone(),
                why: why.to_owned(),
            },
            dead: false,
        });
        if self.watch.is_none() {
            return;
        }
        let (start, size) = match &ev.kind {
            Kind::Ioctl(io) => (
                io.arg
                    .as_ref()
                    .and_then(|a| a.get("start_addr"))
                    .and_then(Value::as_i128)
                    .unwrap_or(0),
                io.arg
                    .as_ref()
                    .and_then(|a| a.get("size"))
                    .and_then(Value::as_i128)
                    .unwrap_or(0),
            ),
            _ => (0, 0),
        };
        let s = (start.max(0) >> p.shift) as u64;
        let n = ((size.max(0) >> p.shift) as u64).max(1);
        self.note(
            p,
            ev,
            s,
            s.saturating_add(n),
            format!("svm-bad-range: SET_ATTR {why}"),
        );
    }

    fn set_attr(&mut self, p: &mut Proc, ev: Ev, s: u64, e: u64, attrs: Vec<Attr>) {
        let mut eff = self.effect(&attrs);
        if eff.kind == EffKind::Registration {
            let in_place = attrs.iter().any(|a| a.ty == kfd::ATTR_ACCESS_IN_PLACE);
            let flags = attrs
                .iter()
                .any(|a| a.ty == kfd::ATTR_SET_FLAGS || a.ty == kfd::ATTR_CLR_FLAGS);
            let mut seen = p.seen.borrow_mut();
            match (in_place, flags) {
                (false, true) => seen.reg_flags += 1,
                (true, false) => seen.map_in_place += 1,
                (true, true) if seen.split() => {
                    // the runtime registers and maps in two calls: one doing
                    // both is the program's own range
                    seen.app_combined += 1;
                    eff = Rc::new(Effect {
                        kind: EffKind::Application,
                        ..(*eff).clone()
                    });
                }
                (true, true) => seen.reg_combined += 1,
                (false, false) => {}
            }
        }
        let kind = eff.kind;
        self.rec_ids += 1;
        let attrs: Rc<[Attr]> = attrs.into();
        let mut own = match kind {
            EffKind::Registration => p.reg.get(&(s, e)).cloned(),
            EffKind::Application => p.app.get(&(s, e)).cloned(),
            _ => None,
        };
        let touched = p.cover.query(s, e);
        let mut released: Vec<CRef> = Vec::new();
        if kind == EffKind::Revoke {
            if let Some(app) = p.app.get(&(s, e)) {
                // the program's own NO_ACCESS on exactly its range, which
                // ends its own sub-ranges inside it too
                released.push(app.clone());
                for c in &touched {
                    let inner = {
                        let b = c.b();
                        b.kind == ClaimKind::Application && s <= b.start && b.end <= e
                    };
                    if inner && !released.contains(c) {
                        released.push(c.clone());
                    }
                }
            }
            if !touched.is_empty() {
                released.extend(infer_release(s, e, &touched));
            }
        }
        if kind == EffKind::Revoke
            && released
                .iter()
                .any(|c| c.b().kind != ClaimKind::Application)
        {
            let mut seen = p.seen.borrow_mut();
            if attrs.iter().any(|a| a.ty == kfd::ATTR_CLR_FLAGS) {
                seen.release_clr += 1;
            } else {
                seen.release_plain += 1;
            }
            if released.iter().any(|c| {
                let b = c.b();
                b.kind == ClaimKind::Registration
                    && b.start <= s
                    && e <= b.end
                    && (b.start, b.end) != (s, e)
            }) {
                seen.subtracts += 1;
            }
        }
        if kind == EffKind::Registration
            && own.is_none()
            && touched.iter().any(|c| c.b().kind != ClaimKind::Application)
        {
            p.seen.borrow_mut().reused += 1;
        }
        // a SET_ATTR of the program's own shape, or one lying wholly inside
        // an application claim that releases no registration, is the
        // program changing memory it owns: the claims it lies wholly inside
        // are not its victims
        let within = |c: &CRef| {
            let b = c.b();
            b.start <= s && e <= b.end
        };
        let own_change = kind == EffKind::Application
            || (touched
                .iter()
                .any(|c| c.b().kind == ClaimKind::Application && within(c))
                && released
                    .iter()
                    .all(|c| c.b().kind == ClaimKind::Application));
        // the runtime computed this call after the thread's previous one
        let quiet_from = p.last_end.get(&ev.h.tid).copied();
        let mut losses: Vec<(CRef, Loss)> = Vec::new();
        let mut stale_pre: Vec<(CRef, Option<StaleRes>)> = Vec::new();
        let (taken, cleared) = (&eff.taken, eff.cleared);
        if !touched.is_empty() && (!taken.is_empty() || cleared != 0) {
            let mut near: Option<Vec<(u64, u64, State)>> = None;
            for c in &touched {
                if own.as_ref() == Some(c) || (own_change && within(c)) {
                    continue;
                }
                let (want, cflags, stale_gpus_nonempty, gpus_empty, ckind) = {
                    let b = c.b();
                    let want = if !b.gpus.is_empty() {
                        g_inter(&b.gpus, taken)
                    } else if default_reliant(b.kind, p.xnack) {
                        taken.clone()
                    } else {
                        Vec::new()
                    };
                    (
                        want,
                        b.flags,
                        !b.stale_gpus.is_empty(),
                        b.gpus.is_empty(),
                        b.kind,
                    )
                };
                if !want.is_empty() || cflags & cleared != 0 {
                    let near = near.get_or_insert_with(|| p.map.pieces.overlapping(s, e));
                    if let Some(loss) = loss_of(&c.b(), want, cflags & cleared, s, e, near) {
                        losses.push((c.clone(), loss));
                    }
                }
                if stale_gpus_nonempty && gpus_empty && default_reliant(ckind, p.xnack) {
                    stale_pre.push((c.clone(), still_stale(p, &c.b())));
                }
            }
        }
        let rec: RecRef = Rc::new(RecCell {
            id: self.rec_ids,
            r: RefCell::new(RecData {
                event: ev.clone(),
                attrs: attrs.clone(),
                eff: eff.clone(),
                s,
                e,
                claim: None,
                grant: None,
                released: released.clone(),
                losses,
                stale_pre,
                unlock: None,
                quiet_from,
            }),
        });
        for c in &released {
            if c.b().live {
                let pre = rec.r.borrow().pre(c);
                self.end(p, c, &ev, pre);
                let range = release_range(p, c, s, e, &released);
                let mut b = c.m();
                b.release_range = range;
                b.release_after = quiet_from;
            }
        }
        let after = p.map.set_attr(s, e, &attrs);
        if !taken.is_empty() {
            if released
                .iter()
                .any(|c| c.b().kind != ClaimKind::Application)
            {
                p.dereg.update(s, e, |_| true, Some(&true), false);
            } else {
                p.dereg.delete(s, e);
            }
        }
        let victims: Vec<(CRef, Loss)> = rec
            .r
            .borrow()
            .losses
            .iter()
            .filter(|(c, _)| !released.contains(c))
            .cloned()
            .collect();
        for (c, loss) in victims {
            self.victim(p, &rec, &c, loss);
        }
        if kind == EffKind::Registration || kind == EffKind::Application {
            let new = own.is_none();
            let ck = if kind == EffKind::Registration {
                ClaimKind::Registration
            } else {
                ClaimKind::Application
            };
            let o = match own.take() {
                Some(o) => o,
                None => self.new_claim(p, ck, s, e, Some(ev.clone())),
            };
            let g = Rc::new(Grant {
                event: ev.clone(),
                gpus: eff.granted.clone(),
                flags: eff.set_,
            });
            {
                let mut ob = o.m();
                if kind == EffKind::Application && !new {
                    // the program's own range: what it takes from itself is not a loss
                    ob.grants = ob
                        .grants
                        .iter()
                        .map(|x| {
                            Rc::new(Grant {
                                event: x.event.clone(),
                                gpus: g_minus(&x.gpus, taken),
                                flags: x.flags & !cleared,
                            })
                        })
                        .collect();
                }
                // (a registration of a range the model still holds: the
                // runtime's refcount, or a late release not landed yet)
                let shape = (g.gpus.clone(), g.flags);
                if new {
                    ob.born_shape = Some(shape.clone());
                }
                if ob.born_shape.as_ref() == Some(&shape) {
                    ob.registrations += 1;
                    ob.last_registered = ev.h.time;
                }
                ob.add_grant(g.clone());
                ob.recompute();
            }
            {
                let mut d = rec.r.borrow_mut();
                d.claim = Some(o.clone());
                d.grant = Some(g);
            }
            if new && kind == EffKind::Registration {
                let st = self.noaccess_gpus(p, s, e, Some(&after));
                o.m().stale_gpus = st;
            }
        }
        if self.watch.is_some() && self.watched(p, s, e) {
            self.note_set_attr(p, &rec, &released);
        }
        let dq = p.recent.entry(ev.h.tid).or_default();
        if dq.len() >= RECENT {
            dq.pop_front();
        }
        dq.push_back(rec);
    }

    fn note_set_attr(&mut self, p: &Proc, rec: &RecRef, released: &[CRef]) {
        let d = rec.r.borrow();
        let mut what = format!(
            "SET_ATTR {} on {}-{} ({})",
            shape_text(&d.attrs),
            page_hex(d.s, p.shift),
            page_hex(d.e, p.shift),
            d.eff.kind.name()
        );
        if !released.is_empty() {
            what += "; releases ";
            what += &released
                .iter()
                .map(|c| format!("#{}", c.id()))
                .collect::<Vec<_>>()
                .join(", ");
        }
        if let Some(c) = &d.claim {
            what += &format!("; claim #{}", c.id());
        }
        for (c, loss) in &d.losses {
            if !released.contains(c) {
                what += &format!("; takes {} from live claim #{}", loss_text(loss), c.id());
            }
        }
        let (ev, s, e) = (d.event.clone(), d.s, d.e);
        drop(d);
        self.note(p, &ev, s, e, what);
    }

    fn noaccess_gpus(&self, p: &Proc, s: u64, e: u64, after: Option<&[(u64, u64, State)]>) -> Gpus {
        let mut out: Gpus = Vec::new();
        if let Some(after) = after
            && !after
                .iter()
                .any(|(ps, pe, st)| *ps < e && *pe > s && noaccess(st))
        {
            // nothing NO_ACCESS on [s, e) at all
            return out;
        }
        for (ds, de, _) in p.dereg.overlapping(s, e) {
            let (a, b) = (ds.max(s), de.min(e));
            let states: Vec<State> = match after {
                None => p.map.overlapping(a, b).into_iter().map(|x| x.2).collect(),
                Some(after) => after
                    .iter()
                    .filter(|(ps, pe, _)| *ps < b && *pe > a)
                    .map(|x| x.2.clone())
                    .collect(),
            };
            for st in states {
                for &(g, x) in &st.access {
                    if x == NO_ACCESS && !out.contains(&g) {
                        out.push(g);
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// svm-stale-no-access, once per claim, when it ends (or the trace does).
    fn judge_stale(&mut self, p: &Proc, c: &CRef, pre: Pre) {
        {
            let b = c.b();
            if !b.gpus.is_empty()
                || b.stale_gpus.is_empty()
                || self.stale.contains_key(&c.id())
                || !default_reliant(b.kind, p.xnack)
            {
                return;
            }
        }
        let res = match pre {
            Pre::Now => still_stale(p, &c.b()),
            Pre::Was(r) => r,
        };
        if let Some(res) = res {
            self.stale.insert(c.id(), self.raws.len());
            self.raws.push(Raw {
                kind: RawKind::Stale {
                    claim: c.clone(),
                    res,
                    shift: p.shift,
                },
                dead: false,
            });
        }
    }

    fn end(&mut self, p: &mut Proc, c: &CRef, ev: &Ev, pre: Pre) {
        if !c.b().live {
            return;
        }
        self.judge_stale(p, c, pre);
        {
            let mut b = c.m();
            b.live = false;
            b.ended_by = Some(ev.clone());
            b.release_began = ev.h.time;
            b.release_after = ev.h.time;
            b.release_range = None;
        }
        self.unindex(p, c);
    }

    fn revive(&mut self, p: &mut Proc, c: &CRef) {
        let (pages, kind, key) = {
            let mut b = c.m();
            if b.live || b.unlocked {
                return; // (an unlocked claim stays ended whoever revoked it)
            }
            b.live = true;
            b.ended_by = None;
            b.release_began = None;
            b.release_after = None;
            b.release_range = None;
            (b.pages.clone(), b.kind, (b.start, b.end))
        };
        for (s, e) in pages {
            p.cover.add(s, e, c.clone());
        }
        if kind == ClaimKind::Registration {
            p.reg.entry(key).or_insert_with(|| c.clone());
        }
        if let Some(i) = self.stale.remove(&c.id()) {
            self.raws[i].dead = true;
        }
    }

    fn victim(&mut self, p: &Proc, rec: &RecRef, c: &CRef, loss: Loss) {
        for over in [true, false] {
            if (over && loss.gpus.is_empty()) || (!over && loss.flags == 0) {
                continue;
            }
            self.raw_by_rec
                .entry(rec.id)
                .or_default()
                .push(self.raws.len());
            self.raws.push(Raw {
                kind: RawKind::Victim {
                    over,
                    rec: rec.clone(),
                    claim: c.clone(),
                    loss: loss.clone(),
                    shift: p.shift,
                    seen: p.seen.clone(),
                },
                dead: false,
            });
        }
    }

    /// Move the grants of `late` (locks that joined `c` after the runtime
    /// had dropped it) to a new explicit claim of the pointer.
    fn split_late_locks(
        &mut self,
        p: &mut Proc,
        c: &CRef,
        late: &[(f64, Ev, Vec<GrantRef>)],
        ptr: u64,
    ) -> CRef {
        let moved: Vec<GrantRef> = late.iter().flat_map(|j| j.2.iter().cloned()).collect();
        let (s, e, byte_end, shape) = {
            let mut cb = c.m();
            cb.grants
                .retain(|g| !moved.iter().any(|m| Rc::ptr_eq(m, g)));
            cb.recompute();
            cb.refcount -= late.len() as i64;
            cb.joins.clear();
            (cb.start, cb.end, cb.byte_end, cb.born_shape.clone())
        };
        self.ids += 1;
        self.counts.claims += 1;
        let born = moved
            .first()
            .map_or_else(|| late[0].1.clone(), |g| g.event.clone());
        let n = CRef::new(self.ids, Claim::new(ClaimKind::Explicit, s, e, Some(born)));
        {
            let mut nb = n.m();
            nb.ptr = Some(ptr);
            nb.byte_end = byte_end;
            nb.lock = Some(late[0].1.clone());
            nb.refcount = late.len() as i64;
            nb.born_shape = shape;
            nb.registrations = 1;
            nb.last_registered = moved.first().and_then(|g| g.event.h.time);
            nb.grants = moved;
            nb.recompute();
        }
        p.cover.add(s, e, n.clone());
        p.by_ptr.insert(ptr, n.clone());
        n
    }

    /// Undo `rec`'s inferred releases of every claim not in `keep`.
    fn unrelease(&mut self, p: &mut Proc, rec: &RecRef, keep: &[CRef]) {
        let released = rec.r.borrow().released.clone();
        for k in released {
            if keep.contains(&k) {
                continue;
            }
            self.revive(p, &k);
            let loss = rec
                .r
                .borrow()
                .losses
                .iter()
                .find(|x| x.0 == k)
                .map(|x| x.1.clone());
            if let Some(loss) = loss {
                self.victim(p, rec, &k, loss);
            }
        }
    }

    /// A revoke inside an unlock's window releases that unlock's claim.
    fn rebind(&mut self, p: &mut Proc, rec: &RecRef, c: &CRef, unlock: &Ev) {
        rec.r.borrow_mut().unlock = Some(unlock.clone());
        let old = rec.r.borrow().released.clone();
        if old.len() == 1 && old[0] == *c {
            return;
        }
        self.unrelease(p, rec, std::slice::from_ref(c));
        if !old.contains(c) {
            let idx = self.raw_by_rec.get(&rec.id).cloned().unwrap_or_default();
            for i in idx {
                if let RawKind::Victim { claim, .. } = &self.raws[i].kind
                    && claim.real() == *c
                {
                    self.raws[i].dead = true;
                }
            }
            if c.b().live {
                let (pre, ev, s, e) = {
                    let d = rec.r.borrow();
                    (d.pre(c), d.event.clone(), d.s, d.e)
                };
                self.end(p, c, &ev, pre);
                let range = release_range(p, c, s, e, std::slice::from_ref(c));
                c.m().release_range = range;
            }
        }
        rec.r.borrow_mut().released = vec![c.clone()];
    }

    /// A registration-shaped SET_ATTR made by the program: its grant
    /// belongs to the application claim on that exact range.
    fn make_application(&mut self, p: &mut Proc, r: &RecRef) {
        let (c, rs, re, grant, rev) = {
            let d = r.r.borrow();
            (
                d.claim.clone().unwrap().real(),
                d.s,
                d.e,
                d.grant.clone(),
                d.event.clone(),
            )
        };
        if c.b().kind == ClaimKind::Application {
            return;
        }
        let mut app = p.app.get(&(rs, re)).cloned();
        let alone = {
            let b = c.b();
            b.kind == ClaimKind::Registration
                && b.start == rs
                && b.end == re
                && b.grants
                    .iter()
                    .all(|g| grant.as_ref().is_some_and(|x| Rc::ptr_eq(g, x)))
        };
        if app.is_none() && alone {
            // made by this call alone: the same claim, now the program's
            let key = (rs, re);
            if p.reg.get(&key) == Some(&c) {
                p.reg.remove(&key);
            }
            {
                let mut b = c.m();
                b.kind = ClaimKind::Application;
                b.stale_gpus = Vec::new();
            }
            p.app.insert(key, c.clone());
            r.r.borrow_mut().claim = Some(c);
            return;
        }
        if app.is_none() {
            app = Some(self.new_claim(p, ClaimKind::Application, rs, re, Some(rev.clone())));
        }
        let app = app.unwrap();
        if let Some(g) = &grant {
            let mut b = c.m();
            if let Some(i) = grant_in(&b.grants, g) {
                b.grants.remove(i);
                b.recompute();
            }
        }
        {
            let mut ab = app.m();
            if let Some(g) = grant {
                ab.grants.push(g);
            }
            ab.recompute();
        }
        r.r.borrow_mut().claim = Some(app.clone());
        let retire = {
            let b = c.b();
            b.grants.is_empty() && b.kind == ClaimKind::Registration && b.live
        };
        if retire {
            {
                let mut b = c.m();
                b.live = false;
                b.ended_by = Some(rev);
            }
            self.unindex(p, &c);
            c.m().alias = Some(app);
        }
    }

    // --- GET_ATTR ---------------------------------------------------------

    fn get_attr(
        &mut self,
        p: &mut Proc,
        ev: &Ev,
        s: u64,
        e: u64,
        asked: &[Attr],
        answered: &[Attr],
    ) {
        let pred = p.map.predict(s, e, asked, p.xnack);
        let mut diffs = Vec::new();
        for ((a_in, a_out), pr) in asked.iter().zip(answered).zip(&pred) {
            let (t_in, v_in, t_out, v_out) = (a_in.ty, a_in.value, a_out.ty, a_out.value);
            if t_in == kfd::ATTR_ACCESS && t_out == NO_ACCESS {
                for c in p.cover.query(s, e) {
                    let mut b = c.m();
                    if b.stale_gpus.contains(&v_in) && b.getattr_seen.len() < 3 {
                        b.getattr_seen.push(ev.clone());
                    }
                }
            }
            let Some((pt, pv, known)) = *pr else { continue };
            if pt != t_out || (pv ^ v_out) & known != 0 {
                diffs.push((t_in, v_in, pt, pv, t_out, v_out));
            }
        }
        let n = diffs.len();
        if n > 0 {
            self.raws.push(Raw {
                kind: RawKind::Mismatch {
                    event: ev.clone(),
                    diffs,
                    s,
                    e,
                    shift: p.shift,
                },
                dead: false,
            });
        }
        if self.watch.is_some() && self.watched(p, s, e) {
            let parts: Vec<String> = answered
                .iter()
                .map(|a| {
                    let name = attr_short(a.ty).map_or_else(|| a.ty.to_string(), str::to_owned);
                    let val = match a.ty {
                        kfd::ATTR_ACCESS => "ACCESS".to_owned(),
                        kfd::ATTR_ACCESS_IN_PLACE => "ACCESS_IN_PLACE".to_owned(),
                        NO_ACCESS => "NO_ACCESS".to_owned(),
                        _ => hex(a.value),
                    };
                    format!("{name}={val}")
                })
                .collect();
            let mut desc = format!("GET_ATTR {}", parts.join(", "));
            if n > 0 {
                desc += &format!("; differs from the model on {n} attribute(s)");
            }
            self.note(p, ev, s, e, desc);
        }
    }

    // --- munmap -----------------------------------------------------------

    fn unmap(&mut self, p: &mut Proc, ev: &Ev, s: u64, e: u64) {
        if s >= e {
            return;
        }
        let hit = p.cover.query(s, e);
        let had_range = p.map.pieces.any_in(s, e);
        let mut notes = Vec::new();
        for c in &hit {
            let (locked, kind, cut) = {
                let b = c.b();
                (
                    b.kind == ClaimKind::Explicit && b.refcount > 0,
                    b.kind,
                    cut_count(&b.pages, s, e),
                )
            };
            if locked || kind == ClaimKind::Registration {
                self.raws.push(Raw {
                    kind: RawKind::Unmap {
                        claim: c.clone(),
                        event: ev.clone(),
                        shift: p.shift,
                        locked,
                        s,
                        e,
                        pages: cut,
                    },
                    dead: false,
                });
            }
            notes.push(format!("#{}", c.id()));
            let pages = c.b().pages.clone();
            let mut left = Vec::new();
            for (cs, ce) in pages {
                if ce <= s || cs >= e {
                    left.push((cs, ce));
                    continue;
                }
                p.cover.remove(cs.max(s), ce.min(e), c);
                if cs < s {
                    left.push((cs, s));
                }
                if ce > e {
                    left.push((e, ce));
                }
            }
            if left.is_empty() {
                self.judge_stale(p, c, Pre::Now);
                {
                    let mut b = c.m();
                    b.live = false;
                    b.ended_by = Some(ev.clone());
                    b.release_began = ev.h.time;
                    b.release_after = ev.h.time;
                    b.pages = Vec::new();
                }
                self.unindex(p, c);
            } else {
                c.m().pages = left;
            }
        }
        p.map.unmap(s, e);
        p.dereg.delete(s, e);
        if (had_range || !hit.is_empty()) && self.watch.is_some() {
            let mut what = format!(
                "unmap {}-{}: SVM attributes forgotten",
                page_hex(s, p.shift),
                page_hex(e, p.shift)
            );
            if !notes.is_empty() {
                what += &format!("; removes pages of claims {}", notes.join(", "));
            }
            self.note(p, ev, s, e, what);
        }
    }
}

fn watch_pages(w0: u128, w1: u128, shift: u32) -> (u128, u128) {
    (w0 >> shift, w1.div_ceil(1u128 << shift))
}

fn cut_count(pages: &[(u64, u64)], s: u64, e: u64) -> u64 {
    pages
        .iter()
        .map(|&(cs, ce)| ce.min(e).saturating_sub(cs.max(s)))
        .sum()
}

pub(crate) fn loss_text(loss: &Loss) -> String {
    let mut parts = Vec::new();
    if !loss.gpus.is_empty() {
        parts.push(format!(
            "gpu {}",
            loss.gpus
                .iter()
                .map(|&g| hex(g))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if loss.flags != 0 {
        parts.push(flags_text(loss.flags));
    }
    format!("{} on {} page(s)", parts.join(" and "), loss.npages)
}

/// The smallest registration claim containing [s, e), and every one lying
/// wholly inside it.
/// What revoke `r` took from `n` (a claim split off by late locks): the
/// gpus and flags of its grants made before the revoke landed, on the pages
/// they share.
fn late_loss(r: &RecRef, n: &CRef, xnack: Option<bool>) -> Option<Loss> {
    let d = r.r.borrow();
    if d.eff.kind != EffKind::Revoke {
        return None;
    }
    let landed = d.event.h.end()?;
    let nb = n.b();
    let before: Vec<&GrantRef> = nb
        .grants
        .iter()
        .filter(|g| g.event.h.time.is_some_and(|t| t < landed))
        .collect();
    if before.is_empty() {
        return None;
    }
    let mut granted: Gpus = Vec::new();
    let mut flags = 0;
    for g in &before {
        granted = g_union(&granted, &g.gpus);
        flags |= g.flags;
    }
    let gpus = if !granted.is_empty() {
        g_inter(&granted, &d.eff.taken)
    } else if default_reliant(nb.kind, xnack) {
        d.eff.taken.clone()
    } else {
        Vec::new()
    };
    let flags = flags & d.eff.cleared;
    let (lo, hi) = (d.s.max(nb.start), d.e.min(nb.end));
    if lo >= hi || (gpus.is_empty() && flags == 0) {
        return None;
    }
    Some(Loss {
        gpus,
        flags,
        lo,
        hi,
        npages: hi - lo,
    })
}

/// The range of the revoke that released `c`, kept as evidence of what the
/// runtime still counted when it computed that revoke (`release_range`)
/// only when nothing else live explains the pages of `c` it left out: a
/// registration made since (the same range pinned again, a neighbour) is
/// what the runtime counted then, and says nothing about the claims
/// released before it.
fn release_range(p: &Proc, c: &CRef, s: u64, e: u64, released: &[CRef]) -> Option<(u64, u64)> {
    let (cs, ce) = {
        let b = c.b();
        (b.start, b.end)
    };
    let explained = [(cs, s.min(ce)), (e.max(cs), ce)]
        .iter()
        .filter(|(a, b)| a < b)
        .any(|&(a, b)| {
            p.cover
                .query(a, b)
                .iter()
                .any(|o| o != c && !released.contains(o) && o.b().kind == ClaimKind::Registration)
        });
    (!explained).then_some((s, e))
}

fn infer_release(s: u64, e: u64, touched: &[CRef]) -> Vec<CRef> {
    let regs: Vec<&CRef> = touched
        .iter()
        .filter(|c| c.b().kind != ClaimKind::Application)
        .collect();
    if regs.len() < 2 {
        if let Some(c) = regs.first() {
            let b = c.b();
            if (b.start <= s && b.end >= e) || (b.start >= s && b.end <= e) {
                return vec![(*c).clone()];
            }
        }
        return Vec::new();
    }
    let mut out: Vec<CRef> = Vec::new();
    // ties (identical ranges, explicit claims only) go to the newest
    let containing = regs
        .iter()
        .filter(|c| {
            let b = c.b();
            b.start <= s && b.end >= e
        })
        .min_by_key(|c| {
            let b = c.b();
            (b.end - b.start, std::cmp::Reverse(c.id()))
        });
    if let Some(c) = containing {
        out.push((*c).clone());
    }
    for c in regs {
        let b = c.b();
        if b.start >= s && b.end <= e && !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// What claim `c` loses on [s, e): `want` the gpus it may lose, `want_flags`
/// the flags.  `near`: the map's pieces overlapping [s, e), unclipped.
fn loss_of(
    c: &Claim,
    want: Gpus,
    want_flags: u32,
    s: u64,
    e: u64,
    near: &[(u64, u64, State)],
) -> Option<Loss> {
    if want.is_empty() && want_flags == 0 {
        return None;
    }
    let mut lost_g: Gpus = Vec::new();
    let mut lost_f = 0u32;
    let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
    let mut n = 0u64;
    let mut add = |lost_g: &mut Gpus, gl: &[u32], a: u64, b: u64| {
        for g in gl {
            if !lost_g.contains(g) {
                lost_g.push(*g);
            }
        }
        lo = Some(lo.map_or(a, |x| x.min(a)));
        hi = Some(hi.map_or(b, |x| x.max(b)));
        n += b - a;
    };
    for &(cs, ce) in &c.pages {
        let (a, b) = (cs.max(s), ce.min(e));
        if a >= b {
            continue;
        }
        let mut pos = a;
        for (ps0, pe0, st) in near {
            if !(*ps0 < b && *pe0 > a) {
                continue;
            }
            let (ps, pe) = ((*ps0).max(a), (*pe0).min(b));
            if pos < ps {
                // no range yet: default access, default flags
                let fl = want_flags & kfd::DEFAULT_SVM_FLAGS;
                if !want.is_empty() || fl != 0 {
                    lost_f |= fl;
                    add(&mut lost_g, &want, pos, ps);
                }
            }
            let gl: Gpus = want
                .iter()
                .copied()
                .filter(|&g| st.access_of(g) != Some(NO_ACCESS))
                .collect();
            let fl = want_flags & !st.flags_clr;
            if !gl.is_empty() || fl != 0 {
                lost_f |= fl;
                add(&mut lost_g, &gl, ps, pe);
            }
            pos = pe;
        }
        if pos < b {
            let fl = want_flags & kfd::DEFAULT_SVM_FLAGS;
            if !want.is_empty() || fl != 0 {
                lost_f |= fl;
                add(&mut lost_g, &want, pos, b);
            }
        }
    }
    if lost_g.is_empty() && lost_f == 0 {
        return None;
    }
    lost_g.sort_unstable();
    Some(Loss {
        gpus: lost_g,
        flags: lost_f,
        lo: lo.unwrap_or(0),
        hi: hi.unwrap_or(0),
        npages: n,
    })
}

fn still_stale(p: &Proc, c: &Claim) -> Option<StaleRes> {
    let mut gpus: Gpus = Vec::new();
    let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
    for &(cs, ce) in &c.pages {
        for (ps, pe, st) in p.map.overlapping(cs, ce) {
            let hit: Gpus = c
                .stale_gpus
                .iter()
                .copied()
                .filter(|&g| st.access_of(g) == Some(NO_ACCESS))
                .collect();
            if !hit.is_empty() {
                gpus = g_union(&gpus, &hit);
                lo = Some(lo.map_or(ps, |x| x.min(ps)));
                hi = Some(hi.map_or(pe, |x| x.max(pe)));
            }
        }
    }
    if gpus.is_empty() {
        None
    } else {
        Some((gpus, lo.unwrap_or(0), hi.unwrap_or(0)))
    }
}

#[cfg(test)]
#[path = "svm_tests.rs"]
mod tests;
