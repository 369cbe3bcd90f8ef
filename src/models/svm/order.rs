//! The completion-order buffer and the dispatch: the events the model
//! reads, held until their turn and replayed to the step each calls for.

use super::*;

const LOCKS: [&str; 2] = ["hsa_amd_memory_lock", "hsa_amd_memory_lock_to_pool"];

const UNLOCK: &str = "hsa_amd_memory_unlock";

const SVM_SET: &str = "hsa_amd_svm_attributes_set";

const MAP_FIXED: u64 = 0x10;

/// Completion order: a record the capture wrote late (its thread
/// descheduled between the return and the write) is replayed where its
/// window ends, if it arrives within this much trace time after a call
/// that began later ...
const REORDER_SECS: f64 = 1.0;

/// ... and while fewer than this many SVM-relevant events wait (memory
/// stays bounded whatever the trace's rate).
const REORDER_MAX: usize = 8192;

/// An event waiting in the completion-order buffer: ordered by the end of
/// its window, then by arrival.
pub(super) struct Pending {
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

/// The completion-order buffer: the waiting events, smallest (end, arrival)
/// first.  Records arrive nearly in that order (a thread's keys never go
/// back; threads interleave by a few calls), so most go to the back of a
/// sorted run or a few places before it, and the smallest is its front:
/// no heap's log n sift for each.  One that would go further back (a
/// record written very late, a file fed after another) waits in a heap
/// beside it; the smallest is the lesser of the two fronts, so events come
/// out in exactly the order one heap gives (the keys are all distinct).
#[derive(Default)]
pub(super) struct Waiting {
    run: VecDeque<Pending>,
    late: BinaryHeap<Reverse<Pending>>,
}

/// How far from the back of the sorted run an event is put in place.
const RUN_REACH: usize = 32;

impl Waiting {
    pub(super) fn len(&self) -> usize {
        self.run.len() + self.late.len()
    }

    fn push(&mut self, p: Pending) {
        let n = self.run.len();
        let mut at = n;
        while at > 0 && n - at < RUN_REACH && self.run[at - 1] > p {
            at -= 1;
        }
        if at == n {
            self.run.push_back(p);
        } else if at == 0 || self.run[at - 1] < p {
            self.run.insert(at, p);
        } else {
            self.late.push(Reverse(p));
        }
    }

    /// The smallest waiting event's end.
    fn first_end(&self) -> Option<f64> {
        match (self.run.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => Some(if a < b { a.end } else { b.end }),
            (Some(a), None) => Some(a.end),
            (None, Some(Reverse(b))) => Some(b.end),
            (None, None) => None,
        }
    }

    fn pop(&mut self) -> Option<Pending> {
        let from_run = match (self.run.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => a < b,
            (a, _) => a.is_some(),
        };
        if from_run {
            self.run.pop_front()
        } else {
            self.late.pop().map(|Reverse(p)| p)
        }
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
        Kind::Syscall(_) => is_join(ev),
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

/// The program's own wait for a thread's end (the preload capture logs
/// `pthread_join`): its thread was in the program when it returned, after
/// every call of the joined thread had returned, not inside a runtime call
/// between computing a revoke and issuing it.  Replayed for the thread's
/// last end only (a release that follows began after it).
fn is_join(ev: &Event) -> bool {
    ev.h.ret == Some(0) && ev.h.err.is_none() && ev.name == "pthread_join"
}

/// The event being fed as the model keeps it: the caller's own `Rc` when
/// it gave one ([`SvmModel::feed_shared`]), else one copy, made once.
pub(super) fn rc(cur: &mut Option<Ev>, ev: &Event) -> Ev {
    cur.get_or_insert_with(|| Rc::new(ev.clone())).clone()
}

impl SvmModel {
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
                let pid = ev.h.pid;
                self.thread_keys.retain(|k, _| k.0 != pid);
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
            .entry((ev.h.pid, ev.h.tid))
            .or_insert(f64::NEG_INFINITY);
        let end = (ev.h.end().unwrap_or(t) + slack).max(*last);
        *last = end;
        self.pending.push(Pending {
            end,
            n: self.arrivals,
            ev: ev.clone(),
        });
        self.horizon = self.horizon.max(t);
        self.drain(self.horizon - REORDER_SECS);
    }

    /// Replay the waiting events that ended before `upto`, and the oldest
    /// ones beyond the buffer's bound.
    pub(super) fn drain(&mut self, upto: f64) {
        while let Some(end) = self.pending.first_end() {
            if end >= upto && self.pending.len() <= REORDER_MAX {
                break;
            }
            let p = self.pending.pop().expect("peeked");
            self.replay(&p.ev);
        }
    }

    fn replay(&mut self, ev: &Ev) {
        self.cur = Some(ev.clone());
        self.feed_one(ev);
        self.cur = None;
        if let Some((_, p)) = self.procs.get_mut(&ev.h.pid) {
            if let Some(end) = ev.h.end() {
                p.last_end.insert(ev.h.tid, end);
            }
            if !std::mem::take(&mut p.in_burst) && !p.burst.is_empty() {
                p.burst.remove(&ev.h.tid);
            }
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
                // a process with no range, claim or deregistered page: the
                // unmap forgets nothing and notes nothing (the usual munmap
                // of a program that never touched SVM)
                if p.map.is_empty() && p.cover.is_empty() && p.dereg.is_empty() {
                    return;
                }
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
}

#[cfg(test)]
mod waiting_tests {
    use super::*;
    use crate::events::{Header, Syscall};

    /// The buffer gives back exactly the order one heap gives, whatever the
    /// arrival order: nearly sorted, far back (past the run's reach), ties
    /// of the end broken by arrival, pops in between.
    #[test]
    fn waiting_pops_in_heap_order() {
        let ev: Ev = Rc::new(Event::new(
            Header::default(),
            Kind::Syscall(Syscall::default()),
        ));
        let mut seed: u64 = 7;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..40 {
            let (mut w, mut h) = (Waiting::default(), BinaryHeap::new());
            let mut clock = 0.0f64;
            for n in 0..2000u64 {
                clock += (next() % 10) as f64;
                let back = match next() % 20 {
                    0 => (next() % 5000) as f64, // written very late
                    1..=9 => (next() % 40) as f64,
                    _ => 0.0,
                };
                // whole numbers: ends repeat, arrival breaks the tie
                let end = (clock - back).max(0.0) + (round % 3) as f64;
                w.push(Pending {
                    end,
                    n,
                    ev: ev.clone(),
                });
                h.push(Reverse(Pending {
                    end,
                    n,
                    ev: ev.clone(),
                }));
                assert_eq!(w.len(), h.len());
                while next() % 3 == 0 || w.len() > 300 {
                    let Some(Reverse(want)) = h.pop() else { break };
                    assert_eq!(w.first_end(), Some(want.end));
                    let got = w.pop().expect("as many as the heap");
                    assert_eq!((got.end, got.n), (want.end, want.n));
                }
            }
            while let Some(Reverse(want)) = h.pop() {
                let got = w.pop().expect("as many as the heap");
                assert_eq!((got.end, got.n), (want.end, want.n));
            }
            assert!(w.pop().is_none() && w.first_end().is_none());
        }
    }
}
