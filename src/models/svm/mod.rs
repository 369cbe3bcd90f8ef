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
//!
//! Here: the model's state (per process and shared), the helpers every
//! step uses, and `finish`.  The parts: `order` (the completion-order
//! buffer and the dispatch), `ioctl` (SET_ATTR / GET_ATTR as the kernel
//! saw them), `set_attr` (claims granted, released and robbed by a
//! SET_ATTR), `intents` (lock / unlock / svm_attributes_set correcting
//! that bookkeeping), `claims` (the claim lifecycle), `mapping` (mmap,
//! munmap, mremap) and `report` (history, counts, limits).  Each part
//! reads this module's scope with `use super::*`.

// Claims (CRef) sit in ordered sets keyed by their id, which never changes;
// what is mutable behind the RefCell is not part of the order.
#![allow(clippy::mutable_key_type)]

use foldhash::{HashMap, HashMapExt};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::rc::Rc;

use crate::events::{Event, Ioctl, Kind, Text, Value};
use crate::findings::Finding;
use crate::kfd;
use crate::models::common::hex;
use crate::models::svm_build;
use crate::models::svm_map::{
    Attr, CoverIndex, NO_ACCESS, PieceMap, Row, Run, State, SvmMap, mremap_unmaps,
};
use crate::models::svm_records::*;

mod claims;
mod intents;
mod ioctl;
mod mapping;
mod order;
mod report;
mod set_attr;
#[cfg(test)]
mod tests;

use claims::*;
use order::*;
pub use report::{HistoryRow, LIMITS};
use set_attr::*;

type Tid = Option<u32>;

struct Proc {
    pid: Option<u32>,
    shift: u32,
    map: SvmMap,
    cover: CoverIndex<CRef>,
    reg: HashMap<(u64, u64), CRef>,
    app: HashMap<(u64, u64), CRef>,
    by_ptr: HashMap<u64, CRef>,
    /// per pointer, its claims not unlocked yet, oldest first (at most
    /// [`LOCKS_PER_PTR`]): an unlock's line, written at its return, may
    /// come after a later lock of its pointer made the pointer's claim
    /// another (its own claim was released by inference meanwhile)
    locks: HashMap<u64, Vec<CRef>>,
    /// emptied lists of `locks`, for the next pointers (a program locks
    /// ever-new pointers: no list allocated a lock)
    lock_room: Vec<Vec<CRef>>,
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
    /// the latest registration claims a revoke of another range released
    /// (one that enclosed them, or the smallest one containing it): their
    /// own revoke (their range minus what others covered), issued late by
    /// another thread, may still come, even after their range was
    /// registered again
    ended_by_other: VecDeque<CRef>,
    /// claims a revoke released by inference in a process with intent
    /// calls, newest last (at most [`HELD_BACK`]), each with what later
    /// calls took from its pages: the revoke's unlock, whose line comes at
    /// its return, may show the revoke was another claim's, and then those
    /// were losses of a live claim (see `unrelease`)
    held_back: VecDeque<(CRef, Vec<(RecRef, Loss)>)>,
    /// threads whose last call was a revoke: when it was computed at the
    /// earliest, where its pieces so far began and ended, and the widest
    /// registration it released: a deregistration's pieces (its range
    /// minus what others cover, in ascending order) are issued one after
    /// another but computed together, before the first
    burst: HashMap<Tid, Burst>,
    /// the call being replayed was a revoke (its thread's burst goes on)
    in_burst: bool,
    /// room for the claims a SET_ATTR touches (empty between calls)
    touched: Vec<CRef>,
}

#[derive(Clone, Copy)]
struct Burst {
    quiet_from: Option<f64>,
    start: u64,
    end: u64,
    /// the ranges a registration may span for later pieces to be its own
    reach: (u64, u64),
}

/// Claims kept per pointer for the unlocks still to come: a pointer gets
/// a new claim only when its last one was released (by inference) before
/// being unlocked, and each such claim waits here for its unlock.
const LOCKS_PER_PTR: usize = 8;

/// Emptied lists of locks a process keeps for reuse (`Proc::lock_room`).
const LOCK_ROOM: usize = 16;

impl Proc {
    /// `c` is now the claim of the lock of `ptr` (a new one).
    fn add_lock(&mut self, ptr: u64, c: &CRef) {
        self.by_ptr.insert(ptr, c.clone());
        let room = &mut self.lock_room;
        let list = self
            .locks
            .entry(ptr)
            .or_insert_with(|| room.pop().unwrap_or_default());
        list.retain(|x| !x.b().unlocked);
        if list.len() == LOCKS_PER_PTR {
            list.remove(0);
        }
        list.push(c.clone());
    }

    /// `c`, a claim of `ptr`, is unlocked: no unlock is to come for it.
    fn forget_lock(&mut self, ptr: u64, c: &CRef) {
        if let Some(list) = self.locks.get_mut(&ptr) {
            list.retain(|x| x != c && !x.b().unlocked);
            if list.is_empty() {
                self.drop_locks(ptr);
            }
        }
    }

    /// The claim an unlock of `ptr` that began at `began` is for: the
    /// newest of the pointer's claims not unlocked yet whose lock began
    /// before it (a claim locked after the unlock began is not its own:
    /// the runtime had dropped the pointer's entry then).
    fn unlocked_claim(&mut self, ptr: u64, began: Option<f64>) -> Option<CRef> {
        let list = self.locks.get_mut(&ptr)?;
        list.retain(|x| !x.b().unlocked);
        let found = list
            .iter()
            .rev()
            .find(|c| {
                let locked = c.b().lock.as_ref().and_then(|l| l.h.time);
                !locked.zip(began).is_some_and(|(l, u)| l > u + EPS)
            })
            .cloned();
        if list.is_empty() {
            self.drop_locks(ptr);
        }
        found
    }

    /// Forget the (empty) list of `ptr`'s locks, its room kept.
    fn drop_locks(&mut self, ptr: u64) {
        if let Some(list) = self.locks.remove(&ptr)
            && self.lock_room.len() < LOCK_ROOM
        {
            debug_assert!(list.is_empty());
            self.lock_room.push(list);
        }
    }

    fn new(pid: Option<u32>, clean_start: bool, xnack: Option<bool>) -> Self {
        Proc {
            pid,
            shift: 12,
            map: SvmMap::new(clean_start),
            cover: CoverIndex::new(),
            reg: HashMap::new(),
            app: HashMap::new(),
            by_ptr: HashMap::new(),
            locks: HashMap::new(),
            lock_room: Vec::new(),
            recent: HashMap::new(),
            dereg: PieceMap::new(),
            xnack,
            retry: Vec::new(),
            allocs: HashMap::new(),
            userptr: HashMap::new(),
            legacy: false,
            seen: Rc::new(RefCell::new(Seen::default())),
            last_end: HashMap::new(),
            ended_by_other: VecDeque::new(),
            held_back: VecDeque::new(),
            burst: HashMap::new(),
            in_burst: false,
            touched: Vec::new(),
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

    /// The thread's recent records that `keep` keeps; the others are
    /// forgotten too (the thread's queue is left empty, its room kept for
    /// the next ones).
    fn recent_take(&mut self, tid: Tid, keep: impl FnMut(&RecRef) -> bool) -> Vec<RecRef> {
        match self.recent.get_mut(&tid) {
            Some(dq) => dq.drain(..).filter(keep).collect(),
            None => Vec::new(),
        }
    }
}

fn default_reliant(kind: ClaimKind, xnack: Option<bool>) -> bool {
    kind != ClaimKind::Application && xnack != Some(false)
}

/// The gpus a SET_ATTR taking `taken` can take from a claim of `kind` that
/// granted `granted`: those it granted, or, if it granted none and relies
/// on default access, every one taken.
fn wanted(granted: &[u32], kind: ClaimKind, xnack: Option<bool>, taken: &Gpus) -> Gpus {
    if !granted.is_empty() {
        g_inter(granted, taken)
    } else if default_reliant(kind, xnack) {
        taken.clone()
    } else {
        Vec::new()
    }
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
    let mut out = Vec::new();
    attrs_into(v, &mut out).then_some(out)
}

/// [`attrs_of`] into `out` (emptied first, in the room it has): whether
/// every entry is a pair of u32s.
fn attrs_into(v: Option<&Value>, out: &mut Vec<Attr>) -> bool {
    out.clear();
    let Some(v) = v else {
        return true;
    };
    let Some(items) = v.as_list() else {
        return false;
    };
    out.reserve(items.len());
    for it in items {
        let (t, x) = match it {
            Value::List(p) if p.len() == 2 => (&p[0], &p[1]),
            Value::Pair(p) => (&p.0, &p.1),
            _ => return false,
        };
        let pair = t
            .as_i128()
            .and_then(|t| u32::try_from(t).ok())
            .zip(x.as_i128().and_then(|x| u32::try_from(x).ok()));
        let Some((t, x)) = pair else {
            return false;
        };
        out.push(Attr::new(t, x));
    }
    true
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

/// An attribute list as its records share it, and its effect.
type Shape = (Rc<[Attr]>, Rc<Effect>);

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
    /// attribute list -> the list shared by the records of it, its effect
    effects: HashMap<Vec<Attr>, Shape>,
    /// the last two of them asked, the latest first
    last_effects: [Shape; 2],
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
    pending: Waiting,
    /// the latest entry time seen
    horizon: f64,
    arrivals: u64,
    /// room for a SET_ATTR's or GET_ATTR's attributes (empty between calls)
    attrs_room: Vec<Attr>,
    /// per process and thread, the completion key given to its latest
    /// event: one thread's records are written in the order its calls
    /// return, so its events keep their file order whatever their logged
    /// ends say
    /// (one map keyed by both: one lookup an event)
    thread_keys: HashMap<(Option<u32>, Option<u32>), f64>,
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
                last_effects: std::array::from_fn(|_| {
                    let none: Rc<[Attr]> = Rc::new([]);
                    (none, Rc::new(effect_of(&[])))
                }),
                seens: Vec::new(),
            },
            procs: HashMap::new(),
            proc_seq: 0,
            xnack: opts.xnack,
            clean_start: opts.clean_start,
            findings: Vec::new(),
            files: Vec::new(),
            cur: None,
            pending: Waiting::default(),
            horizon: f64::NEG_INFINITY,
            arrivals: 0,
            attrs_room: Vec::new(),
            thread_keys: HashMap::new(),
        }
    }

    /// The input files' names, by FileId.
    pub fn set_files(&mut self, names: Vec<Text>) {
        self.files = names;
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
}
