//! What the handlers write (`Out`): findings, held and folded repeats,
//! the watched fd's history; and the slot lifecycle every handler goes
//! through (install, release, a use reconciling the model).

use super::*;

/// One row of `rocrtrace show --fd`: (event, what happened, the state after).
pub type HistRow = (Ev, String, Option<String>);

/// The parts of the model the handlers write: findings, history, the run
/// being closed.
pub(super) struct Out {
    pub(super) findings: Vec<Option<Finding>>,
    /// repeats of final findings, counted in their first
    pub(super) repeats: Repeats,
    /// findings emitted now wait (a save probe's)
    pub(super) hold: bool,
    /// each live process's first occurrences (folded across processes of
    /// its program when it ends)
    pub(super) firsts: HashMap<Pid, Vec<usize>>,
    pub(super) history: Vec<HistRow>,
    pub(super) sink: Option<Run>,
    pub(super) watch: Option<(Pid, Fd)>,
    pub(super) all_fds: bool,
    pub(super) ofd: u64,
    pub(super) names: Rc<Names>,
}

impl Out {
    pub(super) fn watched(&self, pid: Pid, fd: Fd) -> bool {
        matches!(self.watch, Some((w, f)) if f == fd && (w.is_none() || w == pid))
    }

    pub(super) fn hist(
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
    pub(super) fn emit(&mut self, f: Finding) -> Option<usize> {
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
    pub(super) fn first(&mut self, f: &Finding, i: usize) {
        if let Some(e) = &f.event {
            self.firsts.entry(e.h.pid).or_default().push(i);
        }
    }

    /// A process ended: its findings fold into those of ended processes of
    /// its program.
    pub(super) fn end_process(&mut self, pid: Pid, program: Option<&Text>) {
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

    pub(super) fn retract(&mut self, run: &mut Run) {
        if let Some(held) = run.held.take() {
            for i in held {
                self.findings[i] = None;
            }
            self.trim();
        }
    }

    /// Held findings that stay (a run that was no sweep, a save that was
    /// no probe): final now, and repeats too.
    pub(super) fn settle(&mut self, held: impl IntoIterator<Item = usize>) {
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
    pub(super) fn trim(&mut self) {
        while self.findings.last().is_some_and(Option::is_none) {
            self.findings.pop();
        }
    }

    pub(super) fn new_ofd(&mut self) -> u64 {
        self.ofd += 1;
        self.ofd
    }

    pub(super) fn short(&self, ev: Option<&Ev>) -> String {
        short(&self.names, ev)
    }

    pub(super) fn file(&self, ev: &Event) -> String {
        self.names.file(ev)
    }

    // --- slot lifecycle -------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    pub(super) fn install(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        ev: &Ev,
        fd: Fd,
        kind: FdKind,
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
            self.release(p, t, l, fd, None, Release::Unseen);
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
                kind: if kind == FdKind::Unknown {
                    src.kind
                } else {
                    kind
                },
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
                gpu: gpu || kind.is_gpu_object(),
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

    pub(super) fn release(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: Option<&Ev>,
        how: Release,
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

    /// A successful use proves the fd is open: reconcile the model, and
    /// count the use.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn use_fd(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: &Ev,
        path: Option<&Text>,
        role: Option<String>,
    ) {
        // the usual use: of an fd the model holds, whose path (if the
        // trace shows one) changes nothing (what `reconcile` would find)
        if let Some(s) = t.slots.get_mut(&fd)
            && path.filter(|x| !x.0.is_empty()).is_none_or(|x| {
                s.kind != FdKind::Unknown
                    && (s.path.is_some() || !IOCTL_ORIGINS.iter().any(|o| s.origin.starts_with(o)))
                    && kind_of(Some(x)) == s.kind
            })
        {
            count_use(s, p.allocs(), ev, role);
            return;
        }
        self.use_fd_rest(p, t, l, fd, ev, path, role);
    }

    /// [`Out::use_fd`] of an fd the model does not hold as the use shows it.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn use_fd_rest(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: &Ev,
        path: Option<&Text>,
        role: Option<String>,
    ) {
        let allocs = p.allocs();
        let count = |s: &mut Slot, role: Option<String>| count_use(s, allocs, ev, role);
        if !t.slots.contains_key(&fd)
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
        self.reconcile(p, t, l, fd, ev, path);
        count(t.slots.get_mut(&fd).expect("installed"), role);
    }

    /// What a successful call naming `fd` proves without being a use of it:
    /// the fd is open (installed when the model did not know it), and its
    /// path, when the trace shows one, says what it is.  A close reconciles
    /// this way: it is no use, and fd-held-open measures from the last use
    /// before it.
    pub(super) fn reconcile(
        &mut self,
        p: &Proc,
        t: &mut Table,
        l: &mut dyn Listener,
        fd: Fd,
        ev: &Ev,
        path: Option<&Text>,
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
                && pk != FdKind::Unknown
                && s.kind != FdKind::Unknown
                && s.kind != pk
            {
                // another kind of file holds this number now
                present = false;
            }
        }
        if !present {
            if t.slots.contains_key(&fd) {
                self.release(p, t, l, fd, None, Release::Unseen);
            }
            self.install(
                p,
                t,
                l,
                ev,
                fd,
                pk.unwrap_or(FdKind::Unknown),
                Cow::Borrowed("unknown"),
                path.cloned(),
                false,
                None,
                false,
                || format!("fd {fd} first seen in use; its creator is not in the trace"),
            );
        } else if let Some(s) = t.slots.get_mut(&fd)
            && s.kind == FdKind::Unknown
            && let Some(pk) = pk
        {
            s.kind = pk;
            s.path = path.cloned();
            s.gpu = s.gpu || pk.is_gpu_object();
        }
    }
}

/// A use of the fd in `s`: the last one, counted, with the allocations
/// its process had made by then (and its role, when it has one).
#[inline]
fn count_use(s: &mut Slot, allocs: u64, ev: &Ev, role: Option<String>) {
    s.last_use = Some(ev.clone());
    s.uses += 1;
    s.allocs_at_use = allocs;
    if let Some(r) = role {
        s.note(r, ev);
    }
}

/// `u` began before `close`, on another thread, ended: their windows
/// overlap, and of two calls whose windows overlap either may have acted
/// first.  One strace file prints a call's entry when it happens, so a
/// split call's entry line says when it began; elsewhere only entry times
/// with the close's duration can say so.
pub(super) fn began_before_end(u: &Event, close: &Event) -> bool {
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
