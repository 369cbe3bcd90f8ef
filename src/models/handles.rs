//! The buffer-handle model: KFD
//! handles per process and GEM handles per open file description of a DRM
//! node, and the dma-buf identity of exported fds (dmabuf.rs).
//!
//! bo-double-free is raised only on the kernel's own word: FREE_MEMORY_OF_GPU
//! and GEM_CLOSE answer EINVAL for a handle that is not live.

use super::buffer::{BufRef, Buffer, merge, resolve};
use super::common::*;
use super::dmabuf::DmabufTracker;
use super::fds::{Fd, FdModel, Listener, Pid, Proc, Release, Slot, Table};
use crate::events::{Event, Ioctl, Kind, Value};
use crate::findings::{Evidence, Finding, Repeats};
use crate::kfd;
use crate::models::inside::name_runtime_call;
use crate::rules::Rule;
use foldhash::{HashMap, HashSet};
use serde_json::json;
use std::rc::Rc;

/// freed handles remembered per model (bounded)
const FREED_MEMORY: usize = 4096;

const AMDGPU_GEM_CREATE: &str = "DRM_IOCTL_AMDGPU_GEM_CREATE";
const XDNA_CREATE_BO: &str = "DRM_IOCTL_AMDXDNA_CREATE_BO";

const INTERESTING: [kfd::Key; 9] = [
    kfd::ALLOC_MEMORY_OF_GPU,
    kfd::IMPORT_DMABUF,
    kfd::FREE_MEMORY_OF_GPU,
    kfd::EXPORT_DMABUF,
    kfd::PRIME_FD_TO_HANDLE,
    kfd::PRIME_HANDLE_TO_FD,
    kfd::GEM_CLOSE,
    kfd::AMDGPU_GEM_CREATE,
    kfd::XDNA_CREATE_BO,
];

/// Whose handle namespace a handle lives in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Scope {
    /// KFD handles: per process
    Kfd(Pid),
    /// GEM handles: per open file description (dup and fork share it)
    Ofd(u64),
    /// GEM handles of a DRM fd the fd model does not know
    Fd(Pid, Fd),
}

type Key = (Scope, i128);

/// The canonical name; DRM driver numbers are shared between amdgpu and
/// XDNA, so the fd's kind decides when the parser left the name out.
fn ioctl_name(io: &Ioctl, slot: Option<&Slot>) -> Option<&'static str> {
    if io.ioctl.is_some() {
        return io.ioctl;
    }
    let path: Option<&[u8]> = match &io.path {
        Some(p) => Some(p.as_bytes()),
        None => slot
            .and_then(|s| (s.kind.device_dir()).or_else(|| s.path.as_ref().map(|p| p.as_bytes()))),
    };
    kfd::ioctl_name(io.type_?, io.nr?, path, None)
}

#[derive(Debug, Clone)]
struct Handle {
    created: Ev,
    /// the creating ioctl's name
    how: String,
    buffer: BufRef,
    /// imports that returned this same handle
    imports: Vec<Ev>,
}

/// Live handles by namespace: a process's end drops its own namespaces
/// without a walk over every other process's handles.
#[derive(Default)]
struct Live {
    by: HashMap<Scope, HashMap<i128, Handle>>,
    /// the `Scope::Fd` namespaces of each process
    fds_of: HashMap<Pid, HashSet<Fd>>,
}

impl Live {
    fn get(&self, k: &Key) -> Option<&Handle> {
        self.by.get(&k.0)?.get(&k.1)
    }

    fn get_mut(&mut self, k: &Key) -> Option<&mut Handle> {
        self.by.get_mut(&k.0)?.get_mut(&k.1)
    }

    fn insert(&mut self, k: Key, h: Handle) {
        if let Scope::Fd(pid, fd) = k.0 {
            self.fds_of.entry(pid).or_default().insert(fd);
        }
        self.by.entry(k.0).or_default().insert(k.1, h);
    }

    fn remove(&mut self, k: &Key) -> Option<Handle> {
        let m = self.by.get_mut(&k.0)?;
        let h = m.remove(&k.1)?;
        if m.is_empty() {
            self.drop_scope(&k.0);
        }
        Some(h)
    }

    /// Forget a namespace and its handles.
    fn drop_scope(&mut self, scope: &Scope) {
        self.by.remove(scope);
        if let Scope::Fd(pid, fd) = scope
            && let Some(fds) = self.fds_of.get_mut(pid)
        {
            fds.remove(fd);
            if fds.is_empty() {
                self.fds_of.remove(pid);
            }
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by.values().map(HashMap::len).sum()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.by.is_empty()
    }
}

/// What the fd model's hooks reach: the dma-buf tracker and the live handles.
struct State {
    dmabuf: DmabufTracker,
    kfd_live: Live,
    gem_live: Live,
    freed: Freed,
    /// repeated bo-double-frees, counted in their first
    repeats: Repeats,
}

type FreedEntry = (Option<Handle>, Option<Ev>);

/// The freed handles, oldest first, bounded (an insertion-ordered map whose
/// re-freed entry moves to the end and whose oldest is dropped first): a
/// map and an order queue whose
/// stale entries are skipped and compacted, so every step is O(1) amortized.
#[derive(Default)]
struct Freed {
    map: HashMap<Key, (u64, FreedEntry)>,
    order: std::collections::VecDeque<(Key, u64)>,
    next: u64,
}

impl Freed {
    fn get(&self, k: &Key) -> Option<&FreedEntry> {
        self.map.get(k).map(|(_, v)| v)
    }

    fn remove(&mut self, k: &Key) {
        self.map.remove(k);
        self.compact();
    }

    /// `freed[k] = v`: a key already there keeps its place.
    fn set(&mut self, k: Key, v: FreedEntry) {
        if let Some(e) = self.map.get_mut(&k) {
            e.1 = v;
            return;
        }
        self.push(k, v);
    }

    /// `freed[k] = v; freed.move_to_end(k)`
    fn set_last(&mut self, k: Key, v: FreedEntry) {
        self.map.remove(&k);
        self.push(k, v);
        self.compact();
    }

    fn push(&mut self, k: Key, v: FreedEntry) {
        self.next += 1;
        self.order.push_back((k.clone(), self.next));
        self.map.insert(k, (self.next, v));
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    /// popitem(last=False)
    fn pop_oldest(&mut self) {
        while let Some((k, g)) = self.order.pop_front() {
            if self.map.get(&k).is_some_and(|e| e.0 == g) {
                self.map.remove(&k);
                return;
            }
        }
    }

    fn compact(&mut self) {
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order
                .retain(|(k, g)| map.get(k).is_some_and(|e| e.0 == *g));
        }
    }
}

impl Listener for State {
    fn on_fd_open(&mut self, p: &Proc, s: &Slot, ev: &Ev) {
        self.dmabuf.fd_open(p, s, ev);
    }

    fn on_fd_release(&mut self, p: &Proc, s: &Slot, ev: Option<&Ev>, how: Release) {
        self.dmabuf.fd_release(p, s, ev, how);
    }

    fn on_process_end(&mut self, p: &Proc, t: &Table, ev: Option<&Ev>, _exited: bool) {
        let order = t.ordered();
        let slots: Vec<&Slot> = if t.users <= 0 {
            order.iter().map(|n| &*t.slots[n]).collect()
        } else {
            Vec::new()
        };
        self.dmabuf.process_end(p, ev, &slots);
        self.kfd_live.drop_scope(&Scope::Kfd(p.pid));
        if t.users <= 0 {
            // GEM handles die with the last fd of their DRM file description
            let gone: HashSet<u64> = t.slots.values().map(|s| s.ofd).collect();
            for o in gone {
                self.gem_live.drop_scope(&Scope::Ofd(o));
            }
            let fds = self.gem_live.fds_of.get(&p.pid).cloned();
            for fd in fds.into_iter().flatten() {
                self.gem_live.drop_scope(&Scope::Fd(p.pid, fd));
            }
        }
    }

    fn describe_buffer(&self, _pid: Pid, s: &Slot) -> Option<Option<String>> {
        let Some(buf) = DmabufTracker::buffer_of(Some(s)) else {
            return Some(None);
        };
        let b = buf.borrow();
        let mut out = format!("the dma-buf of {}", b.label);
        if b.created.is_some() {
            out += &format!(
                " (created by {})",
                short(&self.dmabuf_names(), b.created.as_ref())
            );
        }
        Some(Some(out))
    }
}

impl State {
    fn dmabuf_names(&self) -> Rc<Names> {
        self.dmabuf.names()
    }
}

/// Thresholds of the dma-buf rules (HandleModel's keyword arguments).
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub reexport_threshold: u64,
    pub held_allocs: i64,
    pub held_seconds: f64,
    pub peak_min: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reexport_threshold: 3,
            held_allocs: 8,
            held_seconds: 10.0,
            peak_min: 32,
        }
    }
}

/// The handle model with the fd model it reads (fed through this one).
pub struct HandleModel {
    pub fds: FdModel,
    st: State,
    finished: bool,
}

fn struct_of(v: &Option<Value>) -> Option<&Value> {
    v.as_ref().filter(|v| matches!(v, Value::Struct(_)))
}

impl HandleModel {
    pub fn new(fds: FdModel, o: Options) -> Self {
        let names = fds.names().clone();
        HandleModel {
            fds,
            st: State {
                dmabuf: DmabufTracker::new(
                    names,
                    o.reexport_threshold,
                    o.held_allocs,
                    o.held_seconds,
                    o.peak_min,
                ),
                kfd_live: Live::default(),
                gem_live: Live::default(),
                freed: Freed::default(),
                repeats: Repeats::default(),
            },
            finished: false,
        }
    }

    /// The handle model's own findings (the fd model's are in `fds`).
    pub fn findings(&self) -> &[Finding] {
        &self.st.dmabuf.findings
    }

    pub fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.st.dmabuf.findings)
    }

    pub fn feed(&mut self, ev: &Event) {
        self.feed_rc(&Rc::new(ev.clone()));
    }

    pub fn feed_rc(&mut self, ev: &Ev) {
        self.fds.feed_rc(ev, &mut self.st);
        if let Kind::Intent(_) = ev.kind {
            // the fd and buffer findings made inside this runtime call
            let names = self.fds.names().clone();
            name_runtime_call(self.st.dmabuf.findings.iter_mut().rev(), ev, &names);
            name_runtime_call(self.fds.findings_newest_mut(), ev, &names);
        }
        if ev.h.injected {
            return; // the kernel never ran it (FdModel::feed_rc)
        }
        let Kind::Ioctl(io) = &ev.kind else { return };
        let (Some(ty), Some(nr)) = (io.type_, io.nr) else {
            return;
        };
        let key = (ty, nr);
        if !INTERESTING.contains(&key) {
            return;
        }
        let pid = ev.h.pid;
        let fd = Fd::from(io.fd);
        let dev = self.fds.lookup(pid, fd).cloned();
        let name = ioctl_name(io, dev.as_ref());
        let arg = struct_of(&io.arg);
        let out = struct_of(&io.out);
        let handle = |v: Option<&Value>| int_field(v, "handle");
        if key == kfd::ALLOC_MEMORY_OF_GPU {
            if let Some(h) = handle(out)
                && ev.h.ok()
            {
                self.create(
                    Scope::Kfd(pid),
                    h,
                    ev,
                    name,
                    format!("process {}", opt(pid)),
                    None,
                );
            }
        } else if key == kfd::IMPORT_DMABUF {
            if let Some(h) = handle(out)
                && ev.h.ok()
            {
                let src = self.source(pid, arg, "dmabuf_fd");
                self.create(
                    Scope::Kfd(pid),
                    h,
                    ev,
                    name,
                    format!("process {}", opt(pid)),
                    src,
                );
            }
        } else if key == kfd::FREE_MEMORY_OF_GPU {
            if let Some(h) = handle(arg) {
                self.free(
                    Scope::Kfd(pid),
                    h,
                    ev,
                    name,
                    format!("process {}", opt(pid)),
                );
            }
        } else if key == kfd::EXPORT_DMABUF {
            let nfd = out.and_then(|o| fd_value(o.get("dmabuf_fd")));
            self.export(Scope::Kfd(pid), handle(arg), ev, nfd, "KFD");
        } else if name == Some(AMDGPU_GEM_CREATE) || name == Some(XDNA_CREATE_BO) {
            if let Some(h) = handle(out)
                && ev.h.ok()
            {
                let scope = scope_of(pid, fd, dev.as_ref());
                self.create(scope, h, ev, name, where_(io, dev.as_ref()), None);
            }
        } else if key == kfd::PRIME_FD_TO_HANDLE {
            if let Some(h) = handle(out)
                && ev.h.ok()
            {
                let src = self.source(pid, arg, "fd");
                let scope = scope_of(pid, fd, dev.as_ref());
                self.create(scope, h, ev, name, where_(io, dev.as_ref()), src);
            }
        } else if key == kfd::PRIME_HANDLE_TO_FD {
            let nfd = out.and_then(|o| fd_value(o.get("fd")));
            self.export(scope_of(pid, fd, dev.as_ref()), handle(arg), ev, nfd, "GEM");
        } else if key == kfd::GEM_CLOSE
            && let Some(h) = handle(arg)
        {
            let scope = scope_of(pid, fd, dev.as_ref());
            self.free(scope, h, ev, name, where_(io, dev.as_ref()));
        }
    }

    /// The buffer of the fd a struct field names.
    fn source(&self, pid: Pid, arg: Option<&Value>, f: &str) -> Option<BufRef> {
        let fd = match arg {
            Some(a) => fd_value(a.get(f))?,
            None => -1,
        };
        DmabufTracker::buffer_of(self.fds.lookup(pid, fd))
    }

    fn note_history(&mut self, ev: &Ev, text: &str) {
        let h = self.fds.history_mut();
        if let Some(last) = h.last_mut()
            && Rc::ptr_eq(&last.0, ev)
        {
            last.1 = format!("{}; {text}", last.1);
        }
    }

    fn table(&mut self, scope: &Scope) -> &mut Live {
        if matches!(scope, Scope::Kfd(_)) {
            &mut self.st.kfd_live
        } else {
            &mut self.st.gem_live
        }
    }

    fn create(
        &mut self,
        scope: Scope,
        h: i128,
        ev: &Ev,
        name: Option<&str>,
        _where: String,
        src: Option<BufRef>,
    ) {
        let gemlabel = !matches!(scope, Scope::Kfd(_));
        let key = (scope, h);
        self.st.freed.remove(&key);
        if let Some(ent) = self.table(&key.0).get_mut(&key) {
            // Importing a buffer this file already holds returns its handle
            if ent.imports.len() < 3 {
                ent.imports.push(ev.clone());
            }
            ent.buffer = merge(Some(&ent.buffer), src.as_ref()).expect("buffer");
            return;
        }
        let kindlabel = if gemlabel { "GEM handle" } else { "KFD handle" };
        let buf = match &src {
            Some(s) => resolve(s),
            None => Buffer::new(
                format!("{kindlabel} {}", hex(h)),
                hex(h),
                ev.h.pid,
                Some(ev.clone()),
            ),
        };
        let label = buf.borrow().label.clone();
        self.table(&key.0).insert(
            key,
            Handle {
                created: ev.clone(),
                how: name.unwrap_or("ioctl").to_owned(),
                buffer: buf,
                imports: Vec::new(),
            },
        );
        let src_fd = match &ev.kind {
            Kind::Ioctl(io) => match struct_of(&io.arg) {
                Some(a) => match a.get("fd") {
                    Some(v) => fd_value(Some(v)),
                    None => fd_value(a.get("dmabuf_fd")),
                },
                None => None,
            },
            _ => None,
        };
        if let Some(sf) = src_fd
            && self.fds.watched(ev.h.pid, sf)
        {
            self.note_history(ev, &format!("imported as {kindlabel} {} ({label})", hex(h)));
        }
    }

    fn export(&mut self, scope: Scope, h: Option<i128>, ev: &Ev, fd: Option<Fd>, family: &str) {
        let Some(h) = h else { return };
        if !ev.h.ok() {
            return;
        }
        let key = (scope, h);
        let buf = match self.table(&key.0).get(&key) {
            Some(ent) => ent.buffer.clone(),
            None => {
                // created before the trace or by a call we do not decode
                let buf = Buffer::new(
                    format!("{family} handle {}", hex(h)),
                    hex(h),
                    ev.h.pid,
                    None,
                );
                let ent = Handle {
                    created: ev.clone(),
                    how: "unknown".into(),
                    buffer: buf.clone(),
                    imports: Vec::new(),
                };
                self.table(&key.0).insert(key.clone(), ent);
                buf
            }
        };
        let pid = ev.h.pid;
        match fd.filter(|&f| f >= 0) {
            Some(f) => {
                let slot = self.fds.lookup_mut(pid, f);
                self.st.dmabuf.exported(&buf, ev, slot);
            }
            None => self.st.dmabuf.exported(&buf, ev, None),
        }
        let resolved = resolve(&buf);
        if let Some(ent) = self.table(&key.0).get_mut(&key) {
            ent.buffer = resolved.clone();
        }
        if let Some(f) = fd
            && self.fds.watched(pid, f)
        {
            let (label, n) = {
                let b = resolved.borrow();
                (b.label.clone(), b.exports)
            };
            self.note_history(ev, &format!("the dma-buf of {label} (export #{n})"));
        }
    }

    fn free(&mut self, scope: Scope, h: i128, ev: &Ev, name: Option<&str>, where_: String) {
        let key = (scope, h);
        if ev.h.ok() {
            let ent = self.table(&key.0).remove(&key);
            self.st.freed.set_last(key, (ent, Some(ev.clone())));
            while self.st.freed.len() > FREED_MEMORY {
                self.st.freed.pop_oldest();
            }
            return;
        }
        let err = ev.h.err.as_deref();
        if matches!(
            err,
            Some("EBUSY" | "EINTR" | "EAGAIN" | "ERESTARTSYS" | "EPERM")
        ) {
            return; // still live (mapped, interrupted, the signal BO)
        }
        let prior = self.st.freed.get(&key).cloned();
        if err == Some("EINVAL") {
            if let Some(ent) = self.table(&key.0).remove(&key) {
                // freed where the trace cannot see: nothing to prove here
                self.st.freed.set(key, (Some(ent), None));
                return;
            }
            self.double_free(&key, ev, name, &where_, prior);
        } else if ev.h.ret.is_none() && prior.is_some() {
            self.double_free(&key, ev, name, &where_, prior);
        }
    }

    fn double_free(
        &mut self,
        key: &Key,
        ev: &Ev,
        name: Option<&str>,
        where_: &str,
        prior: Option<(Option<Handle>, Option<Ev>)>,
    ) {
        let names = self.fds.names().clone();
        let h = key.1;
        let name = name.unwrap_or("ioctl");
        let gem = !matches!(key.0, Scope::Kfd(_));
        let what = format!("{} handle {}", if gem { "GEM" } else { "KFD" }, hex(h));
        let res = match &ev.h.err {
            Some(e) => format!("failed with {e}"),
            None => "returned nothing the trace shows".to_owned(),
        };
        let mut msg = format!("{name}({what}) on {where_} {res}: ");
        let mut evidence = vec![Evidence::new("this free", ev).with_note(site(ev))];
        let (ent, prev) = prior.unwrap_or((None, None));
        match &prev {
            Some(pv) => {
                msg += &format!(
                    "the handle was already {} by {}{} and nothing re-created it {}",
                    if gem { "closed" } else { "freed" },
                    short(&names, Some(pv)),
                    at(Some(pv)),
                    if gem {
                        "in this DRM file"
                    } else {
                        "in this process"
                    }
                );
                evidence.push(Evidence::new("previous free", pv).with_note(site(pv)));
            }
            None => {
                msg += &format!(
                    "the {} holds no such handle (no earlier free is visible: it was never \
                     created in this trace, or freed by a call the trace cannot see)",
                    if gem { "DRM file" } else { "process" }
                );
            }
        }
        let mut selfimport = false;
        if let Some(ent) = &ent {
            if ent.how != "unknown" {
                msg += &format!(". It was created by {}", short(&names, Some(&ent.created)));
                evidence
                    .push(Evidence::new("created by", &ent.created).with_note(site(&ent.created)));
            }
            if let Some(imp) = ent.imports.first() {
                selfimport = true;
                msg += &format!(
                    "; {} imported a buffer this file already held and got the same handle {} \
                     back (one handle per buffer per DRM file), so one GEM_CLOSE ended the \
                     owner's and the importer's handle alike: the importer must not GEM_CLOSE a \
                     handle it does not own",
                    short(&names, Some(imp)),
                    hex(h)
                );
                for imp in &ent.imports {
                    evidence.push(
                        Evidence::new("import returned the same handle", imp).with_note(site(imp)),
                    );
                }
            }
        }
        msg += ". The first free may be the culprit: both call sites are shown";
        evidence.sort_by(|a, b| story_order(&a.event, &b.event));
        let mut f = Finding::new(Rule::BoDoubleFree, msg, Some(ev));
        f.subject.insert("kind".into(), json!("handle"));
        f.subject.insert("handle".into(), json!(hex(h)));
        f.evidence = evidence;
        f.key = vec![
            name.to_owned(),
            ent.as_ref().map_or("unknown", |e| &e.how).to_owned(),
            if selfimport { "self-import" } else { "plain" }.into(),
            if prev.is_some() {
                "known"
            } else {
                "never-seen"
            }
            .into(),
        ];
        let all = &self.st.dmabuf.findings;
        if self
            .st
            .repeats
            .fold(&f, all.len(), |i| all.get(i))
            .is_none()
        {
            self.st.dmabuf.findings.push(f);
        }
    }

    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.fds.finish_with(&mut self.st);
        self.st.repeats.finish(&mut self.st.dmabuf.findings);
    }
}

fn scope_of(pid: Pid, fd: Fd, dev: Option<&Slot>) -> Scope {
    match dev {
        Some(d) => Scope::Ofd(d.ofd),
        None => Scope::Fd(pid, fd),
    }
}

fn where_(io: &Ioctl, dev: Option<&Slot>) -> String {
    let path = io
        .path
        .as_ref()
        .filter(|p| !p.0.is_empty())
        .or(dev.and_then(|d| d.path.as_ref().filter(|p| !p.0.is_empty())))
        .map_or_else(
            || "a DRM node".to_owned(),
            |p| p.to_string_lossy().into_owned(),
        );
    format!("{path} (fd {})", io.fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::models::testkit::T;

    /// The handle model with its fd model, default options, on h.log.
    fn model() -> HandleModel {
        HandleModel::new(
            FdModel::new(None, false, Names::new(vec!["h.log".into()])),
            Options::default(),
        )
    }

    #[test]
    fn an_ended_process_leaves_nothing() {
        // a KFD buffer exported and freed, a GEM buffer created and closed:
        // while the process lives the model holds them, once it ended nothing
        let mut t = T(0);
        let mut m = model();
        let mut evs = t.exported();
        evs.push(t.ioctl(
            4,
            "DRM_IOCTL_AMDGPU_GEM_CREATE",
            &[("bo_size", 0x1000)],
            &[("handle", 7)],
        ));
        for ev in &evs {
            m.feed(ev);
        }
        assert_eq!((m.st.kfd_live.len(), m.st.gem_live.len()), (1, 1));
        assert!(m.st.dmabuf.live_processes() > 0);
        let evs = [
            t.close(5),
            t.ioctl(4, "DRM_IOCTL_GEM_CLOSE", &[("handle", 7)], &[]),
            t.ioctl(
                3,
                "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
                &[("handle", 0x100)],
                &[],
            ),
            t.exit(),
        ];
        for ev in &evs {
            m.feed(ev);
        }
        m.finish();
        assert!(m.findings().is_empty() && m.fds.findings().next().is_none());
        assert!(m.st.kfd_live.is_empty() && m.st.gem_live.is_empty());
        assert_eq!(m.st.dmabuf.live_processes(), 0);
    }

    /// fd-held-open for an export imported once and closed `gap` seconds
    /// after that import: the rule's findings, the close decorated with the
    /// fd's path (strace -y) or not.
    fn held_open_after(gap: f64, path: Option<&str>) -> Vec<Finding> {
        let mut t = T(0);
        let mut m = model();
        let mut evs = t.exported();
        evs.push(t.ioctl(
            4,
            "DRM_IOCTL_PRIME_FD_TO_HANDLE",
            &[("fd", 5)],
            &[("handle", 1)],
        ));
        let import_end = {
            let h = &evs[evs.len() - 1].h;
            h.time.unwrap() + h.dur.unwrap_or(0.0)
        };
        let mut close = t.close_path(5, path);
        close.h.time = Some(import_end + gap);
        let mut exit = t.exit();
        exit.h.time = Some(import_end + gap + 1e-4);
        evs.extend([close, exit]);
        for ev in &evs {
            m.feed(ev);
        }
        m.finish();
        m.findings()
            .iter()
            .filter(|f| f.rule == Rule::FdHeldOpen)
            .cloned()
            .collect()
    }

    #[test]
    fn an_export_closed_long_after_its_last_use_is_held_open() {
        // the close itself is no use: the gap runs from the import, whether
        // the close names the fd's path (strace -y) or not
        for path in [Some("/memfd:dmabuf (deleted)"), None] {
            let f = held_open_after(30.0, path);
            assert_eq!(f.len(), 1, "{path:?}");
            assert!(
                f[0].message
                    .contains("after its last use (DRM_IOCTL_PRIME_FD_TO_HANDLE at h.log:5)"),
                "{}",
                f[0].message
            );
            assert!(f[0].message.contains("30.0 s later"), "{}", f[0].message);
            // the import is the last use in the evidence, the close ends it
            let roles: Vec<&str> = f[0].evidence.iter().map(|e| &*e.role).collect();
            assert_eq!(roles, ["created by", "last used by", "closed by"]);
        }
        // closed within the threshold after the import: nothing held
        for path in [Some("/memfd:dmabuf (deleted)"), None] {
            assert!(held_open_after(1.0, path).is_empty(), "{path:?}");
        }
    }

    fn k(h: i128) -> Key {
        (Scope::Kfd(Some(1)), h)
    }

    #[test]
    fn freed_is_an_ordered_dict_with_move_to_end() {
        let mut f = Freed::default();
        for h in 0..3 {
            f.set_last(k(h), (None, None));
        }
        f.set(k(0), (None, None)); // an existing key keeps its place
        f.set_last(k(1), (None, None)); // moved to the end: 0, 2, 1
        f.pop_oldest();
        assert!(f.get(&k(0)).is_none() && f.get(&k(2)).is_some());
        f.pop_oldest();
        assert!(f.get(&k(2)).is_none() && f.get(&k(1)).is_some());
        // churn on one key stays bounded
        for _ in 0..10_000 {
            f.set_last(k(7), (None, None));
            f.remove(&k(7));
        }
        assert!(f.order.len() < 200, "{}", f.order.len());
        assert_eq!(f.len(), 1);
    }
}
