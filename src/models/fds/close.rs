//! close and close_range, FD_CLOEXEC, and the runs of closes that may be
//! a close-all sweep (their findings held until the run ends).

use super::*;

/// Closes (and close_range pieces) of monotone numbers on one thread, with
/// only calls that create no fd between them: a close-all sweep candidate.
/// Its closes' findings are held until it ends.
#[derive(Debug)]
pub(super) struct Run {
    pub(super) last: Fd,
    pub(super) first_ev: Ev,
    pub(super) last_ev: Ev,
    pub(super) closes: u64,
    pub(super) ebadf: u64,
    pub(super) lo: Fd,
    pub(super) hi: Fd,
    pub(super) held: Option<Vec<usize>>,
    pub(super) settled: bool,
    /// 1 ascending, -1 descending, 0 not known yet (one close)
    pub(super) dir: i8,
    /// close_range pieces in the run
    pub(super) ranges: u64,
    /// a piece reached the fd limit (`close_range(N, ~0U)`)
    pub(super) open_ended: bool,
    /// an EBADF close of the fd a `/proc/self/fd` listing read and closed
    pub(super) listing: bool,
}

impl Run {
    /// Whether a close of `n` continues the run: the next number in its
    /// direction (kept fds may be skipped).
    pub(super) fn continues(&self, n: Fd) -> bool {
        match self.dir {
            0 => n != self.last && self.ranges == 0 || self.ranges > 0 && n > self.last,
            1 => n > self.last,
            _ => n < self.last,
        }
    }
}

pub(super) type RunKey = (Pid, Option<u32>);

/// The open runs by (pid, tid) in the order they began (several ending at
/// once end in that order: their notes keep their place among equals), and
/// each process's own, found without a scan of every run (a process end is
/// O(its runs), whatever else is open).
#[derive(Debug, Default)]
pub(super) struct Runs {
    pub(super) map: Ordered<RunKey, Run>,
    pub(super) of_pid: HashMap<Pid, HashSet<Option<u32>>>,
}

impl Runs {
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(super) fn get(&self, key: &RunKey) -> Option<&Run> {
        self.map.get(key)
    }

    /// The run of `key` taken out, with its place for [`Runs::put`].
    pub(super) fn take(&mut self, key: &RunKey) -> Option<(u64, Run)> {
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
    pub(super) fn put(&mut self, key: RunKey, place: Option<u64>, run: Run) {
        self.of_pid.entry(key.0).or_default().insert(key.1);
        self.map.put(key, place, run);
    }

    /// The keys of `pid`'s runs (every run's: None), in the order they began.
    pub(super) fn keys(&self, pid: Option<Pid>) -> Vec<RunKey> {
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

impl FdModel {
    pub(super) fn on_close(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
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

    pub(super) fn end_run(&mut self, key: (Pid, Option<u32>)) {
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

    pub(super) fn sweep_note(&mut self, run: &Run) {
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
            subject(f0, FdKind::Unknown),
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

    pub(super) fn close(
        &mut self,
        p: &mut Proc,
        t: &mut Table,
        ev: &Ev,
        fd: Fd,
        l: &mut dyn Listener,
    ) {
        let Kind::Close(c) = &ev.kind else { return };
        if ev.h.err.as_deref() == Some("EBADF") {
            self.bad_close(p, t, ev, l);
            return;
        }
        if ev.h.ret.is_none() {
            // The kernel's answer is not in the trace: assume it closed
            self.o.release(p, t, l, fd, Some(ev), Release::Close);
            self.o.hist(Some(t), ev, p.pid, fd, || {
                "close with no result in the trace".into()
            });
            return;
        }
        // Success, EINTR, EIO ...: Linux releases the number in every case but EBADF.
        if !t.slots.contains_key(&fd) || c.path.as_ref().is_some_and(|p| !p.0.is_empty()) {
            self.o.reconcile(p, t, l, fd, ev, c.path.as_ref());
        }
        if t.slots[&fd].racing.is_some() {
            self.racing_use(p, t, fd, ev);
        }
        let flagged = self.check_reused(p, t, fd, ev);
        self.o.release(p, t, l, fd, Some(ev), Release::Close);
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

    pub(super) fn on_close_range(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
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
                        && (c.how == Release::Close || c.how == Release::CloseRange)
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
                self.o
                    .release(p, &mut t, l, n, Some(ev), Release::CloseRange);
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

    pub(super) fn on_cloexec(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
        let Kind::SetCloexec(k) = &ev.kind else {
            return;
        };
        let fd = Fd::from(k.fd);
        if fd < 0 {
            return;
        }
        let mut t = self.take_table(p);
        let lost_in_exec = t
            .closed
            .get(&fd)
            .is_some_and(|c| c.borrow().how == Release::Exec);
        if ev.h.err.as_deref() == Some("EBADF") && lost_in_exec {
            // it was meant to survive the exec: opened O_CLOEXEC by mistake
            self.bad_use(p, &mut t, ev, fd, false, l);
        } else if ev.h.err.as_deref() == Some("EBADF") {
            // a probe, as F_GETFD is: node and daemons mark every number
            // from 3 up close-on-exec at start and expect EBADF for most
            if t.slots.contains_key(&fd) {
                self.o.release(p, &mut t, l, fd, None, Release::Unseen);
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
}

pub(super) fn fd_arg(ev: &Event) -> Fd {
    match &ev.kind {
        Kind::Close(c) => c.fd.into(),
        Kind::CloseRange(r) => r.first.into(),
        _ => 0,
    }
}

pub(super) fn placeholder_run(ev: &Ev) -> Run {
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

/// Whether `ev`, on the run's thread, ends the run: a close out of its
/// order, a close_range that does not continue it, or a call that may have
/// created an fd (a number closed before and after it is not the same fd).
/// Calls that create no fd (a `readlink` of `/proc/self/fd/N`, an `fstat`
/// or `fcntl` probe, a `write` of a progress line) leave it going.
pub(super) fn run_ends(run: &Run, ev: &Event) -> bool {
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

pub(super) fn is_sweep(run: &Run) -> bool {
    run.open_ended
        || run.listing
        || run.closes >= SWEEP_MIN && run.ebadf >= 2 && run.ebadf * 2 > run.closes
}

/// A directory that lists the process's own fds (`opendir("/proc/self/fd")`).
pub(super) fn is_fd_listing(path: &[u8]) -> bool {
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
pub(super) fn reaches_limit(last: u32) -> bool {
    last >= i32::MAX as u32 || last >= 1023 && (u64::from(last) + 1) % 1024 == 0
}
