//! Which process a line is of: tid -> tgid ([`Tgids`], over the `-ff`
//! pre-pass's [`SharedTgids`]), the unprefixed root's pid once a line names
//! it, and the `+++` lines that end a thread or a process.

use super::*;

/// -ff: tid -> the `<pid changed to N ...>` execve line (number, text).
pub type Handover = HashMap<u32, (u64, Vec<u8>)>;

/// What the pre-pass over `-ff` files learned of every tid's process,
/// shared (read-only) by the parsers of all the files: no parser copies
/// it, so a file costs the same among ten files or 10^5.
#[derive(Debug, Default)]
pub struct SharedTgids {
    of: HashMap<u32, u32>,
    /// tgid -> its tids
    members: HashMap<u32, Vec<u32>>,
}

impl SharedTgids {
    pub fn new(of: HashMap<u32, u32>) -> Self {
        let mut members: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&t, &g) in &of {
            members.entry(g).or_default().push(t);
        }
        SharedTgids { of, members }
    }

    pub fn get(&self, tid: &u32) -> Option<u32> {
        self.of.get(tid).copied()
    }
}

/// tid -> tgid, and each group's tids: a whole process's exit forgets its
/// threads without a walk over every tid the file has seen.  Over a
/// [`SharedTgids`] base: this file's own changes, and the base's tids it
/// forgot.
#[derive(Debug, Default)]
pub struct Tgids {
    of: foldhash::HashMap<u32, Option<u32>>,
    members: foldhash::HashMap<u32, foldhash::HashSet<u32>>,
    base: Option<Arc<SharedTgids>>,
    gone: foldhash::HashSet<u32>,
}

impl Tgids {
    pub fn new(base: Option<Arc<SharedTgids>>) -> Self {
        Tgids {
            base,
            ..Default::default()
        }
    }

    /// None: unknown; Some(None): a thread whose parent's pending clone
    /// had no tid.
    pub fn get(&self, tid: &u32) -> Option<Option<u32>> {
        if let Some(&g) = self.of.get(tid) {
            return Some(g);
        }
        if self.gone.contains(tid) {
            return None;
        }
        self.base.as_ref()?.get(tid).map(Some)
    }

    pub fn contains_key(&self, tid: &u32) -> bool {
        self.get(tid).is_some()
    }

    pub fn insert(&mut self, tid: u32, g: Option<u32>) {
        if let Some(old) = self.of.insert(tid, g) {
            self.leave(tid, old);
        }
        if let Some(g) = g {
            self.members.entry(g).or_default().insert(tid);
        }
    }

    fn leave(&mut self, tid: u32, g: Option<u32>) {
        if let Some(g) = g
            && let Some(m) = self.members.get_mut(&g)
        {
            m.remove(&tid);
            if m.is_empty() {
                self.members.remove(&g);
            }
        }
    }

    pub fn remove(&mut self, tid: &u32) {
        if let Some(g) = self.of.remove(tid) {
            self.leave(*tid, g);
        }
        if self.base.as_ref().is_some_and(|b| b.of.contains_key(tid)) {
            self.gone.insert(*tid);
        }
    }

    /// Forget every tid of group `g`; returns them.
    pub fn remove_group(&mut self, g: u32) -> Vec<u32> {
        let mut tids: Vec<u32> = self
            .members
            .remove(&g)
            .map_or_else(Vec::new, |m| m.into_iter().collect());
        if let Some(b) = &self.base {
            // the base's, where this file has not moved or forgotten them
            for &t in b.members.get(&g).into_iter().flatten() {
                if !self.of.contains_key(&t) && !self.gone.contains(&t) {
                    tids.push(t);
                }
            }
        }
        for t in &tids {
            self.remove(t);
        }
        tids
    }
}

impl Parser {
    /// The first process's pid became known: fill in earlier events.
    pub(super) fn learn_root(&mut self, tid: u32) {
        if self.root.is_some() {
            return;
        }
        self.root = Some(tid);
        if !self.tgid.contains_key(&tid) {
            self.tgid.insert(tid, Some(tid));
        }
        self.live.insert(tid);
        let pid = self.tgid.get(&tid).unwrap_or(Some(tid));
        let threads: Vec<u32> = std::mem::take(&mut self.root_children)
            .into_iter()
            .filter_map(|(c, thread)| thread.then_some(c))
            .collect();
        for &c in &threads {
            self.tgid.insert(c, pid);
        }
        for ev in self.nopid.iter_mut().chain(self.hold.iter_mut()) {
            if ev.h.tid.is_none() {
                let e = own(ev);
                e.h.tid = Some(tid);
                e.h.pid = pid;
            } else if ev.h.tid.is_some_and(|t| threads.contains(&t)) {
                own(ev).h.pid = pid;
            }
        }
        let n = std::mem::take(&mut self.nopid);
        self.out.extend(n);
    }

    #[inline]
    pub(super) fn tgid_of(&mut self, tid: Option<u32>) -> Option<u32> {
        let tid = tid?;
        if self.fixed_tgid.is_some() {
            return self.fixed_tgid;
        }
        match self.tgid.get(&tid) {
            Some(Some(g)) => return Some(g),
            // a thread of the committed unknown-pid root
            Some(None) if self.pidless => return None,
            _ => {}
        }
        // A new tid: a child whose parent's clone has not returned yet.
        let mut g = Some(tid);
        if let Some((ptid, p)) = self.inflight.first_clone(Some(tid)) {
            let call = Call::new(
                Cow::Borrowed(p.name()),
                p.args().map(Cow::Borrowed).collect(),
            );
            if syscalls::clone_flags(&call) & syscalls::CLONE_THREAD != 0 {
                // tgid.get(ptid, ptid): a None parent tid is None
                g = ptid.and_then(|pt| self.tgid.get(&pt).unwrap_or(Some(pt)));
            }
        }
        self.tgid.insert(tid, g);
        self.live.insert(tid);
        g
    }

    /// tid of a prefix's pid (else the implied tracee); Err for a pid that
    /// is no u32 (the line is unparsed).
    #[inline]
    pub(super) fn who(&mut self, p: Option<u32>) -> Option<u32> {
        if let Some(tid) = p {
            self.info.has_pids = true;
            if self.pidless && self.root.is_none() && self.file_tid.is_none() {
                // the committed root's lines stay the unknown-pid process's
                if self.root_alias.is_none() && !self.tgid.contains_key(&tid) {
                    self.root_alias = Some(tid);
                }
                if self.root_alias == Some(tid) {
                    return None;
                }
                return Some(tid);
            }
            if self.root.is_none()
                && self.file_tid.is_none()
                && !self.nopid.is_empty()
                && !self.tgid.contains_key(&tid)
            {
                self.learn_root(tid);
            }
            return Some(tid);
        }
        if self.file_tid.is_some() {
            return self.file_tid;
        }
        if self.live.len() == 1 && self.root_children.is_empty() {
            return self.live.iter().next().copied();
        }
        self.root
    }

    pub(super) fn plus(
        &mut self,
        lineno: u64,
        line: &[u8],
        body: &[u8],
        p: Option<u32>,
        t: Option<f64>,
    ) -> bool {
        let Some(em) = grammar::exited(body) else {
            return false;
        };
        let (status, sig) = match em {
            Exited::Superseded(old) => {
                let tid = self.who(p);
                let Some(old) = u32_of(old) else {
                    return true;
                };
                if let Some(mut pend) = self.inflight_pop(Some(old)) {
                    pend.tid = tid;
                    self.inflight_set(tid, pend);
                } else if let Some((ol, otext)) = self
                    .handover
                    .as_ref()
                    .and_then(|h| h.get(&old).cloned())
                    .filter(|_| tid == self.file_tid)
                {
                    // -ff: the execve entry is in the old thread's file
                    let cut =
                        rfind(&otext, b"<pid changed to ").unwrap_or(otext.len().saturating_sub(1));
                    let mut entry = rstrip(&otext[..cut]).to_vec();
                    entry.extend_from_slice(b" <unfinished ...>");
                    if !self.line(ol, &entry) || self.inflight_get(tid).is_none() {
                        self.expect_exec.insert(tid);
                    } else if let Some(pp) = self.inflight.get_mut(tid) {
                        *pp = pp.with_text(&otext);
                    }
                    self.fresh = None;
                } else {
                    self.expect_exec.insert(tid);
                }
                self.tgid.remove(&old);
                self.live.remove(&old);
                return true;
            }
            Exited::Status(s) => (Some(s), None),
            Exited::Killed(k) => (None, Some(k)),
        };
        let status = match status {
            Some(s) => match std::str::from_utf8(s)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            {
                Some(v) => Some(v),
                None => return false,
            },
            None => None,
        };
        let tid = self.who(p);
        self.info.exit_seen = true;
        let pid = self.tgid_of(tid);
        let held = tid.and_then(|t| self.exit_hold.remove(&t));
        let whole = tid.is_some() && pid == tid;
        let ev = Event {
            h: Header {
                file: self.file,
                line: lineno,
                pid,
                tid,
                time: t.or(self.last_time),
                src: self.fed.source(line),
                ..Default::default()
            },
            name: Cow::Borrowed("exit"),
            kind: Kind::Exit(Exit {
                whole,
                status,
                signal: sig.map(|s| signal(&String::from_utf8_lossy(s))),
            }),
        };
        match held {
            Some(h) => {
                let id = self.push_hold(h);
                self.push_hold(ev);
                self.target = Some(id); // -k frames of exit calls follow '+++'
            }
            None => {
                self.push_hold(ev);
                self.target = None;
            }
        }
        if let Some(t) = tid {
            self.live.remove(&t);
            self.tgid.remove(&t);
            if whole {
                for k in self.tgid.remove_group(t) {
                    self.live.remove(&k);
                }
            }
        }
        true
    }
}
