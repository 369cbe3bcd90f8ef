//! Processes and their tables: clone (shared or copied tables), exec
//! (close-on-exec), fd snapshots, exit, and what the end of a process
//! proves (fds open at exit, leaks).

use super::*;

impl FdModel {
    /// CLONE_FILES undone (`unshare`, `close_range(CLOSE_RANGE_UNSHARE)`):
    /// the calling thread gets a copy of the table it shared, from now on
    /// its own; the threads and processes it shared it with keep theirs.
    pub(super) fn unshare_files(&mut self, p: &mut Proc, ev: &Ev) {
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

    pub(super) fn on_clone(&mut self, p: &mut Proc, ev: &Ev) {
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
    pub(super) fn child_table(&mut self, p: &Proc, share_files: bool) -> u64 {
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
    pub(super) fn inherited(&mut self, ev: &Ev, cpid: Pid, table: u64) {
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
    pub(super) fn adopt(&mut self, p: &mut Proc, cpid: Pid, share_files: bool) -> Option<u64> {
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

    pub(super) fn on_exec(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
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
                self.o.release(p, &mut t, l, n, Some(ev), Release::Exec);
                self.o.hist(Some(&*t), ev, p.pid, n, || {
                    format!("fd {n} closed by exec (close-on-exec)")
                });
            }
        }
        self.put_table(p, t);
    }

    pub(super) fn on_snapshot(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
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
                self.o.release(p, &mut t, l, n, None, Release::Unseen);
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

    pub(super) fn on_exit(&mut self, p: &mut Proc, ev: &Ev, l: &mut dyn Listener) {
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

    pub(super) fn end(
        &mut self,
        p: &mut Proc,
        ev: Option<&Ev>,
        exited: bool,
        l: &mut dyn Listener,
    ) {
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
    pub(super) fn open_at_exit(&mut self, s: &Slot, ev: Option<&Ev>) {
        if s.gpu || s.kind.is_gpu_object() || s.kind.is_device() || s.fd <= 2 {
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
                s.kind.as_str().into(),
                s.root_origin.to_string(),
                made.name.to_string(),
            ],
        );
        self.o.emit(f);
    }

    pub(super) fn leak(
        &mut self,
        p: &Proc,
        s: &Slot,
        ev: Option<&Ev>,
        exited: bool,
        l: &dyn Listener,
    ) {
        if !(s.gpu || s.kind.is_gpu_object()) {
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
                s.kind.as_str().into(),
                s.root_origin.to_string(),
                if exited { "exited" } else { "trace-end" }.into(),
            ],
        );
        f.severity = Some(sev);
        f.details.insert("origin".into(), json!(&*s.root_origin));
        f.details.insert("exited".into(), json!(exited));
        self.o.emit(f);
    }
}

/// `unshare(CLONE_FILES|…)` or `unshare(0x400)` (-X raw): the flags of
/// an unshare line include CLONE_FILES.
pub(super) fn unshares_files(text: &[u8]) -> bool {
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

pub(super) fn use_path(s: &mut Slot, path: &Text) {
    if !path.0.is_empty() && s.kind == FdKind::Unknown {
        s.kind = kind_of(Some(path));
        s.path = Some(path.clone());
        s.gpu = s.gpu || s.kind.is_gpu_object();
    }
}
