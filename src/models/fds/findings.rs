//! The finding builders: exhaustion, bad closes and double closes, uses
//! after close, bad fds, racing uses, ioctl EBADFs and closes of a
//! reused number (fd-close-reused).

use super::*;

pub(super) fn subject(fd: Fd, kind: FdKind) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("kind".into(), json!("fd"));
    m.insert("fd".into(), json!(fd));
    m.insert("fd_kind".into(), json!(kind.as_str()));
    m
}

pub(super) fn ev_note(role: impl Into<String>, ev: &Event) -> Evidence {
    Evidence::new(role, ev).with_note(site(ev))
}

pub(super) fn finding(
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

pub(super) fn sort_story(ev: &mut [Evidence]) {
    ev.sort_by(|a, b| story_order(&a.event, &b.event));
}

impl FdModel {
    pub(super) fn exhaustion(&mut self, p: &mut Proc, ev: &Ev) {
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
                *counts.entry(s.kind.as_str()).or_insert(0) += 1;
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
                .filter(|s| s.kind.as_str() == topkind)
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

    pub(super) fn bad_close(&mut self, p: &mut Proc, t: &mut Table, ev: &Ev, l: &mut dyn Listener) {
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
                self.o.release(p, t, l, fd, None, Release::Unseen);
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
            self.o.release(p, t, l, fd, None, Release::Unseen);
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
        if how == Release::Close && has_ev {
            self.reused_by_ebadf(p, t, ev, fd, &c);
        }
    }

    pub(super) fn double_close(
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
                kind = FdKind::Unknown;
            }
            Some(c) => {
                let c = c.borrow();
                let s = &c.slot;
                kind = s.kind;
                let mut m;
                if c.how == Release::Exec {
                    m = format!(
                        "{failed}: fd {fd} ({}) was closed by {} because it had close-on-exec \
                         set; an fd meant to survive exec was opened with O_CLOEXEC, or this \
                         close is stale",
                        s.kind,
                        short(&names, c.event.as_ref())
                    );
                } else if c.how == Release::Unseen || c.event.is_none() {
                    m = format!(
                        "{failed}: {} had already been closed by a call the trace cannot see \
                         (fclose, closedir, a raw syscall); two owners close this fd",
                        s.describe(&names)
                    );
                } else {
                    let ce = c.event.as_ref().expect("event");
                    let how = match c.how {
                        Release::CloseRange => "close_range",
                        Release::Dup2 => "dup2/dup3 onto it",
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
                    s.kind.as_str().into(),
                    s.root_origin.to_string(),
                    c.how.as_str().into(),
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
        let harmless = p.complete && !shared && !kind.is_gpu_object() && !kind.is_device();
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

    pub(super) fn bad_use(
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
            self.o.release(p, t, l, fd, None, Release::Unseen);
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
                s.kind.as_str().into(),
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
                s.kind.as_str().into(),
                s.root_origin.to_string(),
                name.clone(),
                c.how.as_str().into(),
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
                b.how == Release::Close && b.event.is_some()
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
    pub(super) fn stale_handover(&mut self, t: &Table, ev: &Ev, pid: Option<u32>, fd: Fd) {
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
            s.kind.as_str().into(),
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
    pub(super) fn bad_fd(&mut self, p: &Proc, t: &Table, ev: &Ev, fd: Fd) {
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
            subject(fd, FdKind::Unknown),
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
    pub(super) fn racing_use(&mut self, p: &Proc, t: &mut Table, fd: Fd, close: &Ev) {
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
            s.kind.as_str().into(),
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

    pub(super) fn ioctl_ebadf(
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
    pub(super) fn check_reused(&mut self, p: &Proc, t: &Table, fd: Fd, ev: &Ev) -> bool {
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
    pub(super) fn reused_by_ebadf(&mut self, p: &Proc, t: &Table, ev: &Ev, fd: Fd, c: &ClosedRef) {
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

/// Ownership by thread (no stacks): `close` (on thread A) ended the slot
/// `new`, made by thread B; A made or used the old incarnation `old`, and
/// nothing of `new` ran on A; `ebadf` is B's later EBADF on the number.
/// Some(why) when the close was meant for the old incarnation.
pub(super) fn thread_owners(
    old: &Slot,
    new: &Slot,
    close: &Event,
    ebadf: &Event,
) -> Option<String> {
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
pub(super) fn shared_callers<'a>(old: &'a Slot, new: &'a Slot) -> HashSet<Func<'a>> {
    let a = old.root.as_ref().or(old.creator.as_ref());
    let (Some(a), Some(b)) = (a, new.creator.as_ref()) else {
        return HashSet::default();
    };
    let fa = funcs(&a.h.stack, None);
    let fb = funcs(&b.h.stack, None);
    fa.intersection(&fb).copied().collect()
}

pub(super) fn reused_finding(
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
            old.kind.as_str().into(),
            old.root_origin.to_string(),
            s.kind.as_str().into(),
            s.root_origin.to_string(),
            if later.is_some() { "ebadf" } else { "stack" }.into(),
        ],
    )
}
