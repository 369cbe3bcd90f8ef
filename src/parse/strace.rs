//! The strace line grammar (and the preload dialect, which is strace plus
//! `#` lines, in preload.rs) -> normalized events.
//!
//! One [`Parser`] reads one file line by line.  Events come out in
//! completion order for that file: a split call is emitted at its resumed
//! line.  Events are held back until the next line that is not a stack
//! frame so `-k` frames can be attached first; the event frames would go to
//! is held back too (its frames come on the lines after it), so each event
//! comes out with its frames, a little later.
//!
//! All the parser's state is in its fields (nothing global), so a parser
//! can be seeded mid-file.

use crate::events::*;
use crate::ordered::Ordered;
use crate::parse::grammar::{self, Exited};
use crate::parse::syscalls::{self, Call};
use crate::parse::tokens::{self, Kind as ScanKind};
use crate::parse::values::{
    self, contains, decoration_path, find, lstrip, parse_int, rfind, rstrip, scan_args, strip,
    strip_name,
};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

pub const TEXT_MAX: usize = 300;
const UNFINISHED: &[u8] = b"<unfinished ...>";
/// Events an unprefixed log's first process holds while its pid is not
/// known (glibc's set_tid_address at exec names it at once; an attached
/// `strace -p` may never): past this many the process is committed as "pid
/// unknown" for the rest of the log (`pidless`), so memory stays flat.
const NOPID_MAX: usize = 4096;

/// A call waiting for its resumed line (strace._Pending).
#[derive(Debug, Clone)]
pub struct Pending {
    /// the entry line's text, the call's name, then its arguments, in one
    /// allocation
    bytes: Vec<u8>,
    /// where the text ends in `bytes`
    text_end: usize,
    /// where the name ends in `bytes`, after the text
    name_end: usize,
    /// where each argument ends in `bytes`, after the name
    arg_ends: Vec<usize>,
    pub line: u64,
    pub time: Option<f64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
}

impl Pending {
    fn new<'a>(
        name: &str,
        text: &[u8],
        args: impl ExactSizeIterator<Item = &'a [u8]> + std::clone::Clone,
        line: u64,
        time: Option<f64>,
        pid: Option<u32>,
        tid: Option<u32>,
    ) -> Self {
        let len = text.len() + name.len() + args.clone().map(<[u8]>::len).sum::<usize>();
        let mut bytes = Vec::with_capacity(len);
        bytes.extend_from_slice(text);
        bytes.extend_from_slice(name.as_bytes());
        let mut arg_ends = Vec::with_capacity(args.len());
        for a in args {
            bytes.extend_from_slice(a);
            arg_ends.push(bytes.len());
        }
        Pending {
            bytes,
            text_end: text.len(),
            name_end: text.len() + name.len(),
            arg_ends,
            line,
            time,
            pid,
            tid,
        }
    }

    /// The entry line's text.
    pub fn text(&self) -> &[u8] {
        &self.bytes[..self.text_end]
    }

    /// The call's name.
    pub fn name(&self) -> &str {
        // (it was a &str when `new` copied it)
        std::str::from_utf8(&self.bytes[self.text_end..self.name_end]).unwrap_or_default()
    }

    /// The arguments the entry line gave.
    pub fn args(&self) -> impl ExactSizeIterator<Item = &[u8]> + std::clone::Clone {
        (0..self.arg_ends.len()).map(|i| {
            let start = if i == 0 {
                self.name_end
            } else {
                self.arg_ends[i - 1]
            };
            &self.bytes[start..self.arg_ends[i]]
        })
    }

    /// The same call with another entry text (-ff: the execve's line in
    /// its old thread's file).
    fn with_text(&self, text: &[u8]) -> Self {
        Pending::new(
            self.name(),
            text,
            self.args(),
            self.line,
            self.time,
            self.pid,
            self.tid,
        )
    }
}

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

/// The calls waiting for their resumed line, by tid, in the order they
/// began, with the clone-like ones apart (a new tid asks for the oldest).
#[derive(Debug, Default)]
pub struct Inflight {
    calls: Ordered<Option<u32>, Pending>,
    clones: std::collections::BTreeMap<u64, Option<u32>>,
}

impl Inflight {
    pub fn get(&self, tid: Option<u32>) -> Option<&Pending> {
        self.calls.get(&tid)
    }

    pub fn get_mut(&mut self, tid: Option<u32>) -> Option<&mut Pending> {
        self.calls.get_mut(&tid)
    }

    pub fn pop(&mut self, tid: Option<u32>) -> Option<Pending> {
        let (n, p) = self.calls.take(&tid)?;
        self.clones.remove(&n);
        Some(p)
    }

    /// `inflight[tid] = p`: an existing key keeps its place.
    pub fn set(&mut self, tid: Option<u32>, p: Pending) {
        let place = self.calls.take(&tid).map(|(n, _)| n);
        self.put(tid, place, p);
    }

    /// A new call at the end (one `tid` had is replaced).
    pub fn push(&mut self, tid: Option<u32>, p: Pending) {
        if let Some((n, _)) = self.calls.take(&tid) {
            self.clones.remove(&n);
        }
        self.put(tid, None, p);
    }

    fn put(&mut self, tid: Option<u32>, place: Option<u64>, p: Pending) {
        if let Some(n) = place {
            self.clones.remove(&n);
        }
        let clone = is_clone_name(p.name());
        self.calls.put(tid, place, p);
        let n = self.calls.place(&tid).expect("put");
        if clone {
            self.clones.insert(n, tid);
        }
    }

    /// The oldest clone-like call of a tid other than `not`.
    pub fn first_clone(&self, not: Option<u32>) -> Option<(Option<u32>, &Pending)> {
        self.clones
            .values()
            .find(|&&t| t != not)
            .map(|&t| (t, self.calls.get(&t).expect("indexed")))
    }

    /// Every call, in the order they began; none is left.
    pub fn drain(&mut self) -> Vec<(Option<u32>, Pending)> {
        self.clones.clear();
        self.calls.drain()
    }
}

/// A call's result as the line prints it.
struct Res {
    ret: Option<i128>,
    err: Option<Name>,
    rpath: Option<Vec<u8>>,
    dur: Option<f64>,
    /// `(INJECTED)`: strace's `-e inject`/`-e fault` made the result up
    /// and the kernel never ran the call
    injected: bool,
}

impl Res {
    fn plain(ret: Option<i128>, dur: Option<f64>) -> Res {
        Res {
            ret,
            err: None,
            rpath: None,
            dur,
            injected: false,
        }
    }
}

fn is_clone_name(n: &str) -> bool {
    matches!(
        n,
        "clone" | "clone2" | "clone3" | "fork" | "vfork" | "syscall_0x1b3" | "syscall_435"
    )
}

/// `text[:TEXT_MAX]` in code points.
pub fn cut_text(t: &[u8]) -> Text {
    // a code point is at least a byte: a short line, or an ASCII head, is
    // cut without decoding
    if t.len() <= TEXT_MAX {
        return Text::from(t);
    }
    if t[..TEXT_MAX].is_ascii() {
        return Text::from(&t[..TEXT_MAX]);
    }
    Text::from(&t[..cut_chars(t, TEXT_MAX)])
}

fn float(t: &[u8]) -> Option<f64> {
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn u32_of(t: &[u8]) -> Option<u32> {
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// A result value (strace._number): int(val, 0), else an octal like `022`.
/// `val` is a number text the grammar read (never `?`): one past i128 is
/// held as i128's end, which no register holds either, so the line is
/// unparsed as the fast path makes it (not a `?` result).
fn number(val: &[u8]) -> Option<i128> {
    values::int0(val)
        .or_else(|| parse_int(val))
        .or(Some(if val.starts_with(b"-") {
            i128::MIN
        } else {
            i128::MAX
        }))
}

/// Parse one file (strace.Parser).  `file_tid` is the thread of a `-ff`
/// file (from its name); `tgid_of` a map tid -> tgid known from elsewhere.
#[derive(Debug)]
pub struct Parser {
    pub info: InputInfo,
    pub file: FileId,
    pub file_tid: Option<u32>,
    /// tid -> tgid; None: a thread whose parent's pending clone has no
    /// tid (foldhash: looked up on every line, where SipHash showed)
    pub tgid: Tgids,
    /// preload: the header pid
    pub fixed_tgid: Option<u32>,
    /// tid -> pending call, in insertion order
    pub inflight: Inflight,
    pub live: foldhash::HashSet<u32>,
    /// the only tracee before any prefix
    pub root: Option<u32>,
    /// children (tid, a thread?) the root cloned before its tid was known:
    /// the root is live beside them, so an unprefixed line is still its
    pub root_children: Vec<(u32, bool)>,
    /// events waiting to learn the root pid
    pub nopid: Vec<Rc<Event>>,
    /// the root's events went out with no pid (NOPID_MAX): it stays the
    /// process of unknown pid, whatever names it later
    pub pidless: bool,
    /// the tid a later prefix or getpid gave that pidless root: its lines
    /// stay the unknown-pid process's
    pub root_alias: Option<u32>,
    /// events waiting for -k frames
    pub hold: Vec<Rc<Event>>,
    pub out: Vec<Rc<Event>>,
    /// where frames go: the id (in `seq` until released) of an event
    pub target: Option<u64>,
    /// tid -> exit/exit_group event, in insertion order
    pub exit_hold: Ordered<u32, Rc<Event>>,
    /// tids whose execve resumes elsewhere
    pub expect_exec: HashSet<Option<u32>>,
    pub rel_sum: f64,
    /// (line, text) cut by a diagnostic
    pub fragment: Option<(u64, Vec<u8>)>,
    /// the fragment's process detached after it: at the end of the file
    /// it is a call strace detached from, not an unparsed line
    pub fragment_detached: bool,
    pub in_summary: bool,
    pub snapshot: Option<Event>,
    pub last_time: Option<f64>,
    /// tid text -> (line, pieces) of a `#+` record, in insertion order
    pub cont: Vec<(Vec<u8>, u64, Vec<Vec<u8>>)>,
    /// the tid of an unfinished call on the last line
    pub fresh: Option<Option<u32>>,
    /// -ff: tid -> (line, text) of an execve whose thread became the leader
    pub handover: Option<Arc<Handover>>,
    next_id: u64,
    modules: HashMap<Vec<u8>, Arc<str>>,
    /// a split call's two lines, joined for its event's text
    joined: Vec<u8>,
    /// false: every line goes to the general grammar (tests compare the
    /// two paths; see [`Parser::without_fast_path`])
    fast: bool,
    /// lines the fast path took (tests: that it ran, or did not)
    #[cfg(test)]
    pub(crate) taken: u64,
}

impl Parser {
    pub fn new(
        file: FileId,
        info: InputInfo,
        tid: Option<u32>,
        tgid_of: Option<Arc<SharedTgids>>,
        handover: Option<Arc<Handover>>,
    ) -> Self {
        Parser {
            info,
            file,
            file_tid: tid,
            tgid: Tgids::new(tgid_of),
            fixed_tgid: None,
            inflight: Inflight::default(),
            live: Default::default(),
            root: tid,
            root_children: Vec::new(),
            nopid: Vec::new(),
            pidless: false,
            root_alias: None,
            hold: Vec::new(),
            out: Vec::new(),
            target: None,
            exit_hold: Ordered::default(),
            expect_exec: HashSet::new(),
            rel_sum: 0.0,
            fragment: None,
            fragment_detached: false,
            in_summary: false,
            snapshot: None,
            last_time: None,
            cont: Vec::new(),
            fresh: None,
            handover,
            next_id: 1,
            modules: HashMap::new(),
            joined: Vec::new(),
            fast: true,
            #[cfg(test)]
            taken: 0,
        }
    }

    /// The parser with the tokenizer's fast path off: every line is parsed
    /// by the general grammar, which the fast path must equal (the
    /// differential tests, strace/fast_path.rs).  Not for production: the
    /// events are the same, only slower.
    #[doc(hidden)]
    pub fn without_fast_path(mut self) -> Self {
        self.fast = false;
        self
    }

    // --- driving -------------------------------------------------------

    /// Parse one line (without its newline); completed events go to `sink`.
    pub fn feed(&mut self, lineno: u64, line: &[u8], sink: &mut Vec<Rc<Event>>) {
        self.feed_any(lineno, line, None, None, sink)
    }

    /// [`Parser::feed`] of a line known to be UTF-8 (the reader decoded
    /// it): it is not checked again.
    pub fn feed_text(&mut self, lineno: u64, line: &str, sink: &mut Vec<Rc<Event>>) {
        self.feed_any(lineno, line.as_bytes(), Some(line), None, sink)
    }

    /// [`Parser::feed`] with the line's state-free part already worked
    /// out by [`pre_parse`] (on another thread, --jobs): the result is the
    /// same as `feed`'s, whatever the parser's state.
    pub fn feed_pre(
        &mut self,
        lineno: u64,
        line: &str,
        pre: Option<&mut PreCall>,
        sink: &mut Vec<Rc<Event>>,
    ) {
        self.feed_any(lineno, line.as_bytes(), Some(line), pre, sink)
    }

    fn feed_any(
        &mut self,
        lineno: u64,
        line: &[u8],
        text: Option<&str>,
        pre: Option<&mut PreCall>,
        sink: &mut Vec<Rc<Event>>,
    ) {
        self.info.lines += 1;
        if line.is_empty() {
            return self.drain(sink);
        }
        let c = line[0];
        if c == b' ' {
            if line.starts_with(b" > ") || line.starts_with(b" | ") {
                if line[1] == b'>' {
                    self.frame(line);
                }
                return self.drain(sink);
            }
            if grammar::extra(line) {
                return self.drain(sink);
            }
        }
        let fresh = self.fresh.take();
        let stripped;
        let mut pre = pre;
        let mut text = text;
        let line: &[u8] = if memchr::memchr(0x1b, line).is_some() {
            // pre_parse saw the line before this: it made nothing of it
            pre = None;
            text = None;
            stripped = grammar::strip_ansi(line);
            if stripped.is_empty() {
                return self.drain(sink);
            }
            &stripped
        } else {
            line
        };
        self.flush_hold();
        if c == b'#' {
            self.meta(lineno, line);
            return self.drain(sink);
        }
        if let Some(s) = self.snapshot.take() {
            self.emit(s);
        }
        if self.fragment.is_some() && self.join_fragment(lineno, line) {
            return self.drain(sink);
        }
        if self.in_summary && self.diagnostic(lineno, line) {
            return self.drain(sink);
        }
        let parsed = match (pre, text) {
            (Some(PreCall::Call(p)), _) if self.fast => self.apply_pre(lineno, line, p),
            // line_text with the scan it would make
            (Some(PreCall::Half(h)), Some(text)) if self.fast => self
                .scanned(lineno, line, h.scanned(text))
                .unwrap_or_else(|| self.line_general(lineno, line)),
            (_, text) => self.line_text(lineno, line, text),
        };
        if !parsed
            && !self.diagnostic(lineno, line)
            && !fresh.is_some_and(|t| self.bare_resumed(lineno, line, t))
        {
            self.info.add_unparsed(lineno, line);
            self.salvage(lineno, line);
        }
        self.drain(sink)
    }

    /// An ioctl line whose argument does not parse (a struct strace cut or
    /// garbled) is still an ioctl on its fd, with its request and result:
    /// the line is counted unparsed, the call is kept (issue 33).
    fn salvage(&mut self, lineno: u64, line: &[u8]) {
        let m = grammar::prefix(line);
        let body = &line[m.end..];
        let Some(rest) = body.strip_prefix(b"ioctl(") else {
            return;
        };
        // the result: after the last `) = ` of the line
        let Some(close) = rfind(rest, b") = ") else {
            return;
        };
        let mut args = rest[..close].splitn(3, |&c| c == b',');
        let (Some(fd), Some(req)) = (args.next(), args.next()) else {
            return;
        };
        let (fd, req) = (strip(fd), strip(req));
        let plain = |t: &[u8]| {
            !t.is_empty()
                && t.iter()
                    .all(|&c| !matches!(c, b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'"'))
        };
        if !plain(req) || fd.is_empty() || memchr::memchr3(b'(', b'{', b'"', fd).is_some() {
            return;
        }
        let mut fixed = line[..m.end].to_vec();
        fixed.extend_from_slice(b"ioctl(");
        fixed.extend_from_slice(fd);
        fixed.extend_from_slice(b", ");
        fixed.extend_from_slice(req);
        fixed.extend_from_slice(b", ");
        // the argument as strace prints an address it could not read
        fixed.extend_from_slice(b"0");
        fixed.extend_from_slice(&rest[close..]);
        // counted once, as the line it is
        let (n, k) = (self.info.unparsed, self.info.unparsed_samples.len());
        let had_fragment = self.fragment.is_some();
        self.line(lineno, &fixed);
        if !had_fragment && self.fragment.take().is_some() {
            // the rebuilt line is no call either: nothing to keep
            self.fragment_detached = false;
        }
        self.info.unparsed = n;
        self.info.unparsed_samples.truncate(k);
    }

    /// A call the log ends inside of (strace killed while printing it, as
    /// strace's own -DD test does, or a log copied while being written):
    /// the call never completed, like one left `<unfinished ...>`, and it
    /// is kept as such.  False when the text is no call's start, or has a
    /// result (`) = `): a whole line whose brackets do not close is a bad
    /// line, not a cut one.
    fn cut_by_the_end(&mut self, lineno: u64, text: &[u8]) -> bool {
        if rfind(text, b") = ").is_some() {
            return false;
        }
        let mut entry = rstrip(text).to_vec();
        entry.extend_from_slice(b" <unfinished ...>");
        self.fresh = None;
        self.line(lineno, &entry) && self.fresh.take().is_some()
    }

    /// strace 5.2-6.1 with -z/-Z/-e status= cut a buffered line with
    /// ' <unfinished ...>' and printed the rest on the next line, unprefixed.
    fn bare_resumed(&mut self, lineno: u64, line: &[u8], tid: Option<u32>) -> bool {
        let Some(p) = self.inflight_get(tid) else {
            return false;
        };
        if memchr::memchr(b'=', line).is_none() {
            return false;
        }
        let mut body = format!("<... {} resumed>", p.name()).into_bytes();
        body.extend_from_slice(line);
        let pidtext = if self.info.has_pids { tid } else { None };
        self.resumed(lineno, line, &body, pidtext, None)
    }

    /// End of file: unfinished calls become partial events.
    pub fn finish(&mut self, sink: &mut Vec<Rc<Event>>) {
        for (_, first, parts) in std::mem::take(&mut self.cont) {
            self.info.add_unparsed(first, &parts.concat());
        }
        if let Some((l, t)) = self.fragment.take() {
            let cut_by_detach = grammar::diag_match(&t).is_some_and(|((_, _, a), _)| !a);
            if std::mem::take(&mut self.fragment_detached) || cut_by_detach {
                self.info.detached += 1;
            } else if !self.cut_by_the_end(l, &t) {
                self.info.add_unparsed(l, &t);
                self.salvage(l, &t);
            }
        }
        self.flush_hold();
        if let Some(s) = self.snapshot.take() {
            self.emit(s);
        }
        for (tid, p) in self.inflight.drain() {
            self.info.unfinished += 1;
            let args = p.args().map(Cow::Borrowed).collect();
            if let Some(ev) = self.call_event(
                p.name(),
                args,
                None,
                None,
                None,
                p.line,
                None,
                p.pid,
                tid,
                p.time,
                None,
                p.text(),
                true,
            ) {
                self.emit(ev);
            }
        }
        for (_, ev) in self.exit_hold.drain() {
            self.emit(ev);
        }
        self.flush_hold();
        if !self.nopid.is_empty() {
            let n = std::mem::take(&mut self.nopid);
            self.out.extend(n);
        }
        self.target = None;
        self.drain(sink);
    }

    fn drain(&mut self, sink: &mut Vec<Rc<Event>>) {
        if self.out.is_empty() {
            return;
        }
        // the target event may still get frames: it and what follows wait
        let keep = match self.target {
            Some(id) => self
                .out
                .iter()
                .rposition(|e| e.h.seq == id)
                .unwrap_or(self.out.len()),
            None => self.out.len(),
        };
        if keep == 0 {
            return;
        }
        self.info.events += keep as u64;
        for ev in &mut self.out[..keep] {
            own(ev).h.seq = 0;
        }
        if keep == self.out.len() && sink.is_empty() {
            // the usual case: the buffers trade places, no event moves
            std::mem::swap(sink, &mut self.out);
        } else {
            sink.extend(self.out.drain(..keep));
        }
    }

    // inlined: the hot path's calls stay one function
    #[inline(always)]
    fn emit(&mut self, ev: impl Into<Rc<Event>>) {
        let mut ev = ev.into();
        own(&mut ev).h.seq = self.next_id;
        self.target = Some(self.next_id);
        self.next_id += 1;
        self.hold.push(ev);
    }

    /// An event into `hold` without making it the target.
    #[inline(always)]
    fn push_hold(&mut self, ev: impl Into<Rc<Event>>) -> u64 {
        let mut ev = ev.into();
        if ev.h.seq == 0 {
            own(&mut ev).h.seq = self.next_id;
            self.next_id += 1;
        }
        let id = ev.h.seq;
        self.hold.push(ev);
        id
    }

    fn flush_hold(&mut self) {
        if self.hold.is_empty() {
            return;
        }
        let wait = !self.pidless
            && self.root.is_none()
            && self.file_tid.is_none()
            && self.fixed_tgid.is_none()
            && (!self.nopid.is_empty() || self.hold.iter().any(|e| e.h.tid.is_none()));
        if wait {
            let hold = std::mem::take(&mut self.hold);
            for ev in hold {
                if ev.h.tid.is_none() || !self.nopid.is_empty() {
                    self.nopid.push(ev);
                } else {
                    self.out.push(ev);
                }
            }
            if self.nopid.len() > NOPID_MAX {
                let n = std::mem::take(&mut self.nopid);
                self.out.extend(n);
                self.pidless = true;
            }
        } else if self.out.is_empty() {
            // the buffers trade places: no event moves, nothing allocated
            std::mem::swap(&mut self.out, &mut self.hold);
        } else {
            self.out.append(&mut self.hold);
        }
    }

    /// The first process's pid became known: fill in earlier events.
    fn learn_root(&mut self, tid: u32) {
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

    // --- identity ------------------------------------------------------

    fn inflight_get(&self, tid: Option<u32>) -> Option<&Pending> {
        self.inflight.get(tid)
    }

    fn inflight_pop(&mut self, tid: Option<u32>) -> Option<Pending> {
        self.inflight.pop(tid)
    }

    /// `inflight[tid] = p`: an existing key keeps its place.
    fn inflight_set(&mut self, tid: Option<u32>, p: Pending) {
        self.inflight.set(tid, p);
    }

    fn tgid_of(&mut self, tid: Option<u32>) -> Option<u32> {
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
    fn who(&mut self, p: Option<u32>) -> Option<u32> {
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

    // --- one line ------------------------------------------------------

    pub(crate) fn line(&mut self, lineno: u64, line: &[u8]) -> bool {
        self.line_text(lineno, line, None)
    }

    /// `line` with its text when it is known to be UTF-8.
    fn line_text(&mut self, lineno: u64, line: &[u8], text: Option<&str>) -> bool {
        if self.fast
            && let Some(text) = text.or_else(|| std::str::from_utf8(line).ok())
            && let Some(r) = tokens::scan_line(text)
            && let Some(done) = self.scanned(lineno, line, r)
        {
            return done;
        }
        self.line_general(lineno, line)
    }

    /// `line` through the general grammar.
    fn line_general(&mut self, lineno: u64, line: &[u8]) -> bool {
        let m = grammar::prefix(line);
        if m.end == line.len() {
            return false;
        }
        let pid = match m.pid {
            Some(p) => match u32_of(p) {
                Some(v) => Some(v),
                None => return false, // a pid past u32: no tid Linux has
            },
            None => None,
        };
        let mut t = if let Some((h, mi, s)) = m.tod {
            let hm = u32_of(h).unwrap_or(0) * 3600 + u32_of(mi).unwrap_or(0) * 60;
            float(s).map(|s| f64::from(hm) + s)
        } else {
            m.epoch.and_then(float)
        };
        if let Some(rel) = m.rel.and_then(float) {
            self.rel_sum += rel;
            if t.is_none() {
                t = Some(self.rel_sum);
            }
        }
        let body = &line[m.end..];
        if let Some(t) = t {
            self.info.has_time = true;
            self.last_time = Some(t);
        }
        match body[0] {
            b'<' => {
                if body.starts_with(b"<... ") {
                    return self.resumed(lineno, line, body, pid, t);
                }
                false
            }
            b'+' if body.starts_with(b"+++ ") => self.plus(lineno, line, body, pid, t),
            b'-' if body.starts_with(b"--- ") => self.signal(lineno, line, body, pid, t),
            b'[' if grammar::personality(body) => true,
            _ => match grammar::name(body) {
                Some(ne) => self.call(lineno, line, body, ne, pid, t),
                None => false,
            },
        }
    }

    fn call(
        &mut self,
        lineno: u64,
        line: &[u8],
        body: &[u8],
        name_end: usize,
        p: Option<u32>,
        t: Option<f64>,
    ) -> bool {
        let name = String::from_utf8_lossy(&body[..name_end]).into_owned();
        let end = name_end + 1;
        let mut body: Cow<'_, [u8]> = Cow::Borrowed(body);
        let mut unfinished = false;
        let mut never = false;
        if body.ends_with(b"...>") {
            if body.ends_with(UNFINISHED) {
                let k = rfind(&body, UNFINISHED).unwrap();
                body = Cow::Owned(rstrip(&body[..k]).to_vec());
                unfinished = true;
            } else if body.ends_with(b"<detached ...>") {
                let k = rfind(&body, b"<detached ...>").unwrap();
                let b = rstrip(&body[..k]).to_vec();
                let tid = self.who(p);
                self.info.detached += 1;
                let (args, _) = scan_args(&b, end.min(b.len()));
                let args = args.into_iter().map(Cow::Borrowed).collect();
                let pid = self.tgid_of(tid);
                if let Some(ev) = self.call_event(
                    &name, args, None, None, None, lineno, None, pid, tid, t, None, line, true,
                ) {
                    self.emit(ev);
                }
                return true;
            } else if let Some(k) = rfind(&body, b"<pid changed to ") {
                if let Some(h) = &self.handover
                    && self.file_tid.is_some_and(|ft| h.contains_key(&ft))
                {
                    return true; // the leader's file completes this execve
                }
                body = Cow::Owned(rstrip(&body[..k]).to_vec());
                unfinished = true;
            }
        }
        if contains(&body, b"<unfinished ...>)") {
            let b = replace(&body, b" <unfinished ...>)", b")");
            body = Cow::Owned(replace(&b, b"<unfinished ...>)", b")"));
            never = true;
        }
        let body = body;
        let (args, close) = scan_args(&body, end.min(body.len()));
        let tid = self.who(p);
        if unfinished {
            self.start(lineno, line, &name, args.iter().copied(), tid, t);
            return true;
        }
        let Some(close) = close else {
            // cut short: by a diagnostic or the program's own output
            if self.fragment.is_none() {
                self.fragment = Some((lineno, line.to_vec()));
                self.fragment_detached = false;
                return true;
            }
            return false;
        };
        let Some(res) = self.result(&body, close + 1) else {
            return false;
        };
        let args = args.into_iter().map(Cow::Borrowed).collect();
        self.complete(lineno, line, &name, args, res, never, tid, t);
        true
    }

    /// The state-dependent rest of a complete call [`pre_parse`] took: what
    /// `scanned` and `complete` do around `call_event`, in their order.
    fn apply_pre(&mut self, lineno: u64, line: &[u8], p: &mut PreBuilt) -> bool {
        #[cfg(test)]
        {
            self.taken += 1;
        }
        self.info.has_time = true;
        self.last_time = Some(p.time);
        if p.dur {
            self.info.has_durations = true;
        }
        if p.rpath {
            self.info.has_decorations = true;
        }
        let tid = self.who(Some(p.tid));
        let pid = self.tgid_of(tid);
        if let Some(ev) = self.apply_built(lineno, line, p.built.placed(), pid, tid) {
            self.after_call(ev, tid);
        }
        true
    }

    /// What building a call's event counted, into info; the event gets its
    /// pid and tid.
    #[inline(always)]
    fn apply_built(
        &mut self,
        lineno: u64,
        text: &[u8],
        b: Built,
        pid: Option<u32>,
        tid: Option<u32>,
    ) -> Option<Rc<Event>> {
        if b.decorated {
            self.info.has_decorations = true;
        }
        if b.unparsed {
            self.info.add_unparsed(lineno, text);
        }
        if b.intent {
            self.info.intent_calls = true;
        }
        if b.decoded {
            self.info.decoded_structs = true;
        }
        let mut ev = b.ev?;
        let e = own(&mut ev);
        e.h.pid = pid;
        e.h.tid = tid;
        Some(ev)
    }

    /// A line the compiled tokenizer took (strace._scanned); None when a
    /// number does not fit (the general path then decides).
    fn scanned(&mut self, lineno: u64, line: &[u8], r: tokens::Scanned<'_>) -> Option<bool> {
        let res = outcome_of(r.outcome.as_ref())?;
        self.info.has_time = true;
        self.last_time = Some(r.time);
        if res.dur.is_some() {
            self.info.has_durations = true;
        }
        if res.rpath.is_some() {
            self.info.has_decorations = true;
        }
        let tid = self.who(Some(r.tid));
        let args = r.args;
        match r.kind {
            ScanKind::Call => {
                self.complete(lineno, line, r.name, args, res, false, tid, Some(r.time))
            }
            ScanKind::Unfinished => {
                let args = args.iter().map(|a| &a[..]);
                self.start(lineno, line, r.name, args, tid, Some(r.time));
            }
            ScanKind::Resumed => {
                let p = self.take(r.name, tid);
                let args = joined_args(p.as_ref(), args);
                let (p, t) = (p.as_ref(), Some(r.time));
                self.finish_resumed(lineno, line, r.name, args, res, false, p, tid, t);
            }
        }
        #[cfg(test)]
        {
            self.taken += 1;
        }
        Some(true)
    }

    /// An unfinished call: it waits for its resumed line.
    fn start<'a>(
        &mut self,
        lineno: u64,
        line: &[u8],
        name: &str,
        args: impl ExactSizeIterator<Item = &'a [u8]> + std::clone::Clone,
        tid: Option<u32>,
        t: Option<f64>,
    ) {
        let name = if name == "syscall_0x1b3" || name == "syscall_435" {
            "clone3"
        } else {
            name
        };
        let pid = self.tgid_of(tid);
        if let Some(old) = self.inflight_pop(tid) {
            self.info.unfinished += 1;
            let oargs = old.args().map(Cow::Borrowed).collect();
            if let Some(ev) = self.call_event(
                old.name(),
                oargs,
                None,
                None,
                None,
                old.line,
                None,
                old.pid,
                tid,
                old.time,
                None,
                old.text(),
                true,
            ) {
                self.emit(ev);
            }
        }
        let p = Pending::new(name, line, args, lineno, t, pid, tid);
        self.inflight.push(tid, p);
        self.fresh = Some(tid);
    }

    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        lineno: u64,
        line: &[u8],
        name: &str,
        args: Vec<Cow<'_, [u8]>>,
        res: Res,
        never: bool,
        tid: Option<u32>,
        t: Option<f64>,
    ) {
        let Res {
            ret,
            err,
            rpath,
            dur,
            injected,
        } = res;
        let pid = self.tgid_of(tid);
        if let Some(mut ev) = self.call_event(
            name, args, ret, err, rpath, lineno, None, pid, tid, t, dur, line, false,
        ) {
            if never {
                own(&mut ev).h.ret = None;
            }
            if injected {
                own(&mut ev).h.injected = true;
                self.info.injected += 1;
            }
            self.after_call(ev, tid);
        }
    }

    /// (ret, err, ret_path, dur) of the text after the closing ')'; None
    /// when there is no `= …`.
    fn result(&mut self, body: &[u8], pos: usize) -> Option<Res> {
        if let Some((val, d)) = grammar::plain_result(body, pos) {
            let Some(d) = d else {
                return Some(Res::plain(number(val), None));
            };
            self.info.has_durations = true;
            return Some(Res::plain(number(val), float(d)));
        }
        let (val, e) = grammar::result(body, pos)?;
        let mut rest = &body[e..];
        let mut rpath = None;
        let mut err: Option<Name> = None;
        let mut ret = None;
        if val != b"?" {
            ret = number(val);
            if rest.starts_with(b"<") {
                let e = values::deco_end(rest, 0);
                let mut inner = &rest[1..e];
                if inner.ends_with(b"(deleted)") && !inner.ends_with(b" (deleted)") {
                    inner = &inner[..inner.len() - 9];
                    if let Some(i) = inner.strip_suffix(b">") {
                        inner = i;
                    }
                    let mut p = decoration_path(inner);
                    p.extend_from_slice(b" (deleted)");
                    rpath = Some(p);
                } else {
                    rpath = Some(decoration_path(inner.strip_suffix(b">").unwrap_or(inner)));
                }
                rest = &rest[e..];
                self.info.has_decorations = true;
            }
        }
        let mut dur = None;
        if rest.ends_with(b">")
            && let Some((start, d)) = grammar::duration(rest)
        {
            if d != b"unavailable" {
                dur = float(d);
                self.info.has_durations = true;
            }
            rest = &rest[..start];
        }
        if ret == Some(-1) || ret.is_none() {
            if let Some(e) = grammar::err_name(rest) {
                err = Some(errno(&String::from_utf8_lossy(e)));
            } else if ret == Some(-1) {
                err = Some(match grammar::errno_number(rest) {
                    Some(n) => Cow::Owned(format!("ERRNO_{}", String::from_utf8_lossy(n))),
                    None => Cow::Borrowed("EUNKNOWN"),
                });
            }
        }
        let injected = grammar::injected(rest);
        Some(Res {
            ret,
            err,
            rpath,
            dur,
            injected,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn call_event(
        &mut self,
        name: &str,
        args: Vec<Cow<'_, [u8]>>,
        ret: Option<i128>,
        err: Option<Name>,
        rpath: Option<Vec<u8>>,
        line: u64,
        end_line: Option<u64>,
        pid: Option<u32>,
        tid: Option<u32>,
        t: Option<f64>,
        dur: Option<f64>,
        text: &[u8],
        partial: bool,
    ) -> Option<Rc<Event>> {
        let b = build_call::<Rc<Event>>(
            self.file, name, args, ret, err, rpath, line, end_line, t, dur, text, partial,
        );
        self.apply_built(line, text, b, pid, tid)
    }

    /// Bookkeeping once a call completed: learn pids, clone children, hold
    /// exits for their frames.
    fn after_call(&mut self, mut ev: Rc<Event>, mut tid: Option<u32>) {
        let name = ev.name.clone();
        let ret = ev.h.ret.filter(|&r| r > 0);
        if tid.is_none()
            && self.pidless
            && self.root_alias.is_none()
            && matches!(&*name, "set_tid_address" | "getpid" | "gettid")
        {
            self.root_alias = ret.and_then(|r| u32::try_from(r).ok());
        } else if tid.is_none()
            && matches!(&*name, "set_tid_address" | "getpid" | "gettid")
            && let Some(r) = ret.and_then(|r| u32::try_from(r).ok())
        {
            self.learn_root(r);
            let pid = self.tgid.get(&r).unwrap_or(Some(r));
            let e = own(&mut ev);
            e.h.tid = Some(r);
            e.h.pid = pid;
            tid = Some(r);
        }
        if matches!(&*name, "clone" | "clone2" | "clone3" | "fork" | "vfork")
            && let Some(child) = ret.and_then(|r| u32::try_from(r).ok())
        {
            let parent_g = ev.h.pid.or(tid);
            let thread = matches!(&ev.kind, Kind::Clone(c) if c.thread);
            match parent_g {
                Some(g) if thread => self.tgid.insert(child, Some(g)),
                // a thread of the committed unknown-pid root is of that process
                None if thread && self.pidless => self.tgid.insert(child, None),
                _ => self.tgid.insert(child, Some(child)),
            };
            if parent_g.is_none()
                && self.root.is_none()
                && self.fixed_tgid.is_none()
                && !self.pidless
            {
                // the unprefixed root's child: its events wait with the
                // root's (flush_hold) until a prefix names the root
                self.root_children.push((child, thread));
            }
            self.live.insert(child);
        }
        if matches!(&*name, "exit" | "exit_group")
            && ev.h.ret.is_none()
            && let Some(t) = tid
        {
            if let Some(old) = self.exit_hold.remove(&t) {
                self.emit(old);
            }
            self.exit_hold.push(t, ev);
            return;
        }
        self.emit(ev);
    }

    fn resumed(
        &mut self,
        lineno: u64,
        line: &[u8],
        body: &[u8],
        pid: Option<u32>,
        t: Option<f64>,
    ) -> bool {
        let Some((name, e)) = grammar::resumed(body) else {
            return false;
        };
        let name = String::from_utf8_lossy(name);
        let mut rest = &body[e..];
        let mut never = false;
        if rest.starts_with(b" <unfinished ...>)") {
            rest = &rest[17..];
            never = true;
        } else if rest.starts_with(b"<unfinished ...>)") {
            rest = &rest[16..];
            never = true;
        }
        let mut again = false;
        if rest.ends_with(UNFINISHED) {
            let k = rfind(rest, UNFINISHED).unwrap();
            rest = rstrip(&rest[..k]);
            again = true;
        }
        let (cont, close) = scan_args(rest, 0);
        let tid = self.who(pid);
        let cont = cont.into_iter().map(Cow::Borrowed).collect();
        let p = self.take(&name, tid);
        let args = joined_args(p.as_ref(), cont);
        if again {
            // resumed then cut again (rare): keep waiting
            let pid = self.tgid_of(tid);
            let (pl, pt) = match &p {
                Some(p) => (p.line, p.time),
                None => (lineno, t),
            };
            let args = args.iter().map(|a| &a[..]);
            let again = Pending::new(&name, line, args, pl, pt, pid, tid);
            self.inflight_set(tid, again);
            return true;
        }
        let Some(close) = close else {
            return false;
        };
        let Some(res) = self.result(rest, close + 1) else {
            return false;
        };
        self.finish_resumed(lineno, line, &name, args, res, never, p.as_ref(), tid, t);
        true
    }

    /// The pending half of a resumed call, or None (an orphan, or an
    /// execve another file began).
    fn take(&mut self, name: &str, tid: Option<u32>) -> Option<Pending> {
        let p = self.inflight_pop(tid);
        if p.is_none() && name == "execve" && self.expect_exec.contains(&tid) {
            self.expect_exec.remove(&tid);
        } else if p.is_none() {
            self.info.orphans += 1;
        }
        p
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_resumed(
        &mut self,
        lineno: u64,
        line: &[u8],
        name: &str,
        args: Vec<Cow<'_, [u8]>>,
        res: Res,
        never: bool,
        p: Option<&Pending>,
        tid: Option<u32>,
        t: Option<f64>,
    ) {
        let Res {
            ret,
            err,
            rpath,
            mut dur,
            injected,
        } = res;
        let start = match p {
            Some(p) => p.time,
            None => t,
        };
        if dur.is_none()
            && p.is_some()
            && let (Some(s), Some(t)) = (start, t)
        {
            dur = Some((t - s).max(0.0));
        }
        // the two lines joined in the parser's own buffer: the event keeps
        // its cut copy
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        let text: &[u8] = match p {
            Some(p) => {
                joined.extend_from_slice(p.text());
                joined.extend_from_slice(" … ".as_bytes());
                joined.extend_from_slice(line);
                &joined
            }
            None => line,
        };
        let first = p.map_or(lineno, |p| p.line);
        let pid = self.tgid_of(tid);
        let ev = self.call_event(
            name,
            args,
            ret,
            err,
            rpath,
            first,
            Some(lineno),
            pid,
            tid,
            start,
            dur,
            text,
            p.is_none(),
        );
        self.joined = joined;
        if let Some(mut ev) = ev {
            if never {
                own(&mut ev).h.ret = None;
            }
            if injected {
                own(&mut ev).h.injected = true;
                self.info.injected += 1;
            }
            self.after_call(ev, tid);
        }
    }

    fn plus(
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
                text: cut_text(line),
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

    fn signal(
        &mut self,
        lineno: u64,
        line: &[u8],
        body: &[u8],
        p: Option<u32>,
        t: Option<f64>,
    ) -> bool {
        let Some(sig) = grammar::signal(body) else {
            return false;
        };
        let tid = self.who(p);
        let name = if body.starts_with(b"--- stopped by") {
            "stopped"
        } else {
            "signal"
        };
        let pid = self.tgid_of(tid);
        self.emit(Event {
            h: Header {
                file: self.file,
                line: lineno,
                pid,
                tid,
                time: t,
                text: cut_text(line),
                ..Default::default()
            },
            name: Cow::Borrowed(name),
            kind: Kind::Signal(Signal {
                signal: signal(&String::from_utf8_lossy(sig)),
            }),
        });
        true
    }

    // --- frames, diagnostics, fragments ----------------------------------

    fn module(&mut self, m: &[u8]) -> Arc<str> {
        if let Some(a) = self.modules.get(m) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(String::from_utf8_lossy(m).as_ref());
        if self.modules.len() < 4096 {
            self.modules.insert(m.to_vec(), a.clone());
        }
        a
    }

    fn frame(&mut self, line: &[u8]) {
        self.info.has_stacks = true;
        let fr = if let Some(fm) = grammar::frame(line) {
            let mut sym = fm.sym;
            let mut off = None;
            if let Some(plus) = rfind(sym, b"+0x") {
                let hex = &sym[plus + 3..];
                if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) {
                    off = Some(u64::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).ok());
                    sym = &sym[..plus];
                } else if hex.is_empty() {
                    sym = &sym[..plus];
                }
            }
            let Some(addr) = u64::from_str_radix(std::str::from_utf8(fm.addr).unwrap(), 16).ok()
            else {
                return;
            };
            let mut fr = Frame::new(self.module(fm.obj));
            fr.symbol = (!sym.is_empty()).then(|| String::from_utf8_lossy(sym).into());
            fr.sym_offset = off.flatten();
            fr.addr = Some(addr);
            if let Some((src, l)) = fm.src {
                fr.source = Some(String::from_utf8_lossy(src).into());
                fr.source_line = u32_of(l);
            }
            fr
        } else {
            let Some((obj, a)) = grammar::frame_bare(line) else {
                return;
            };
            let mut fr = Frame::new(self.module(obj));
            fr.addr = a.and_then(|a| u64::from_str_radix(std::str::from_utf8(a).unwrap(), 16).ok());
            fr
        };
        let Some(id) = self.target else { return };
        let ev = self
            .hold
            .iter_mut()
            .rev()
            .chain(self.out.iter_mut().rev())
            .chain(self.nopid.iter_mut().rev())
            .find(|e| e.h.seq == id);
        if let Some(ev) = ev {
            let ev = own(ev);
            let mut st = std::mem::take(&mut ev.h.stack).into_vec();
            st.push(fr);
            ev.h.stack = st.into_boxed_slice();
        }
    }

    /// strace's own stderr messages; a diagnostic glued to the end of a cut
    /// trace line leaves the front part as a fragment.
    fn diagnostic(&mut self, lineno: u64, line: &[u8]) -> bool {
        let s = strip(line);
        if self.in_summary {
            if grammar::summary_row(line) || s.is_empty() {
                return true;
            }
            self.in_summary = false;
        }
        if (s.starts_with(b"%") && contains(s, b"calls") && contains(s, b"syscall"))
            || grammar::summary_header(s)
        {
            self.in_summary = true;
            return true;
        }
        if s.starts_with(b"System call usage summary for ") {
            // -c on a multi-personality run: one table per personality
            return true;
        }
        if let Some(((_, pid, attached), at)) = grammar::diag_match(line) {
            self.diag_pid(pid, attached);
            let front = &line[..at];
            if !strip(front).is_empty() {
                if self.fragment.is_none() {
                    self.fragment = Some((lineno, front.to_vec()));
                    self.fragment_detached = !attached;
                } else {
                    return false;
                }
            }
            return true;
        }
        if grammar::diag_prefix(line)
            || s.starts_with(b"strace: ")
            || s.starts_with(b"[ Process PID=")
        {
            return true;
        }
        s.starts_with(b"<detached ...>") || s.starts_with(b"<unfinished ...>")
    }

    fn diag_pid(&mut self, pid: &[u8], attached: bool) {
        // \d{1,10}: a pid past u32 is no process this log can name
        if let Some(p) = u32_of(pid) {
            if attached {
                self.live.insert(p);
            } else {
                self.live.remove(&p);
            }
        }
    }

    /// Join a cut line with its continuation; true when consumed.
    fn join_fragment(&mut self, lineno: u64, line: &[u8]) -> bool {
        let st = lstrip(line);
        if grammar::diag_prefix(st)
            || (st.starts_with(b"Process ") && grammar::diag(line).is_some())
        {
            if let Some((_, pid, a)) = grammar::diag(line) {
                self.diag_pid(pid, a);
                self.fragment_detached |= !a;
            }
            return true; // the fragment waits for its continuation
        }
        let mut cont = matches!(line[0], b' ' | b')' | b',');
        if !cont {
            let pm = grammar::prefix(line);
            let body = &line[pm.end..];
            cont = !(grammar::name(body).is_some()
                || body.starts_with(b"<... ")
                || body.starts_with(b"+++")
                || body.starts_with(b"---"));
        }
        let (fl, ftext) = self.fragment.take().unwrap();
        self.fragment_detached = false;
        if !cont {
            self.info.add_unparsed(fl, &ftext);
            self.salvage(fl, &ftext);
            return false;
        }
        let joined = if line.starts_with(b" <") {
            let mut j = rstrip(&ftext).to_vec();
            j.push(b' ');
            j.extend_from_slice(lstrip(line));
            j
        } else {
            let mut j = ftext.clone();
            j.extend_from_slice(line);
            j
        };
        if !self.line(fl, &joined) {
            self.info.add_unparsed(fl, &ftext);
            self.info.add_unparsed(lineno, line);
            self.salvage(fl, &joined);
        }
        true
    }

    // --- preload '#' lines: preload.rs ---------------------------------

    pub(crate) fn emit_event(&mut self, ev: impl Into<Rc<Event>>) {
        self.emit(ev);
    }

    pub(crate) fn flush_snapshot(&mut self) {
        if let Some(s) = self.snapshot.take() {
            self.emit(s);
        }
    }
}

/// A call's event as its text alone makes it (no pid or tid yet), and what
/// building it counts into the file's info.  `E` is where the event is
/// placed: in its `Rc` on the parser's thread, by value on a worker's
/// (--jobs), whose batch crosses threads.
#[derive(Debug)]
pub struct Built<E = Rc<Event>> {
    pub ev: Option<E>,
    pub decorated: bool,
    pub unparsed: bool,
    pub intent: bool,
    pub decoded: bool,
}

/// The part of a line the compiled tokenizer takes that does not depend
/// on the parser's state (--jobs: worked out on other threads, in any
/// order).
// (a complete call's event by value, not boxed: the parser's thread moves
// it into its one Rc; a box would be a second allocation an event)
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum PreCall {
    /// a complete call: its event, built
    Call(PreBuilt),
    /// one half of a split call (`<unfinished ...>`, `resumed>`): only its
    /// scan, since joining the halves needs the parser's pending calls
    Half(Box<tokens::Spans>),
}

#[derive(Debug)]
pub struct PreBuilt {
    tid: u32,
    time: f64,
    dur: bool,
    rpath: bool,
    /// (its event by value: the parser puts it in its one `Rc`, so each
    /// event is allocated once, on the thread that keeps it)
    built: Built<Event>,
}

/// A scanned line's result as the parser keeps it: None when its return
/// value fits no register (the line is unparsed).
fn outcome_of(o: Option<&tokens::Outcome<'_>>) -> Option<Res> {
    let Some(o) = o else {
        return Some(Res::plain(None, None));
    };
    let ret = match &o.ret {
        Some(n) => Some(n.value()?),
        None => None,
    };
    let rpath = o.ret_path.map(|p| p.as_bytes().to_vec());
    Some(Res {
        ret,
        err: o.err.map(errno),
        rpath,
        dur: o.dur,
        injected: false,
    })
}

/// What [`Parser::feed`] would make of `line` through the compiled
/// tokenizer, as far as no state enters: a complete call's event, a split
/// call's scan; None for every other line (feed then does all the work).
pub fn pre_parse(file: FileId, lineno: u64, text: &str) -> Option<PreCall> {
    let line = text.as_bytes();
    let &c = line.first()?;
    if !c.is_ascii_digit() || memchr::memchr(0x1b, line).is_some() {
        return None;
    }
    let r = tokens::scan_line(text)?;
    if r.kind != ScanKind::Call {
        return Some(PreCall::Half(Box::new(r.spans(text))));
    }
    let Res {
        ret,
        err,
        rpath,
        dur,
        ..
    } = outcome_of(r.outcome.as_ref())?;
    let args = r.args;
    let (has_dur, has_rpath) = (dur.is_some(), rpath.is_some());
    let built = build_call(
        file,
        r.name,
        args,
        ret,
        err,
        rpath,
        lineno,
        None,
        Some(r.time),
        dur,
        line,
        false,
    );
    Some(PreCall::Call(PreBuilt {
        tid: r.tid,
        time: r.time,
        dur: has_dur,
        rpath: has_rpath,
        built,
    }))
}

impl Built<Event> {
    /// A worker's event in its `Rc`, on the parser's thread (taken out of
    /// the batch: the one copy of it).
    fn placed(&mut self) -> Built {
        Built {
            ev: self.ev.take().map(Rc::new),
            decorated: self.decorated,
            unparsed: self.unparsed,
            intent: self.intent,
            decoded: self.decoded,
        }
    }
}

/// Where [`build_call`] puts the event it makes.
pub trait Place: Sized {
    fn place(ev: Event) -> Self;
}

/// In its `Rc` at once: the parser's thread builds the event where it
/// stays, and the calls after it move a pointer.
impl Place for Rc<Event> {
    #[inline(always)]
    fn place(ev: Event) -> Self {
        Rc::new(ev)
    }
}

/// By value: a worker's (--jobs), for the parser's thread to place.
impl Place for Event {
    #[inline(always)]
    fn place(ev: Event) -> Self {
        ev
    }
}

#[allow(clippy::too_many_arguments)]
pub fn build_call<E: Place>(
    file: FileId,
    name: &str,
    mut args: Vec<Cow<'_, [u8]>>,
    ret: Option<i128>,
    err: Option<Name>,
    rpath: Option<Vec<u8>>,
    line: u64,
    end_line: Option<u64>,
    t: Option<f64>,
    dur: Option<f64>,
    text: &[u8],
    partial: bool,
) -> Built<E> {
    let mut b = Built {
        ev: None,
        decorated: false,
        unparsed: false,
        intent: false,
        decoded: false,
    };
    let mut names = Vec::new();
    if !args.is_empty() {
        // only a word can be `name=` (the loop below takes no other)
        let named = |a: &[u8]| {
            a.first().is_some_and(u8::is_ascii_alphabetic) && memchr::memchr(b'=', a).is_some()
        };
        if args.iter().any(|a| named(a)) {
            for (i, a) in args.iter_mut().enumerate() {
                // (the first byte before the scan: a struct, an fd or a
                // number has no name)
                if named(a) {
                    let (k, v) = match a {
                        Cow::Borrowed(b) => {
                            let (k, v) = strip_name(b);
                            (k.map(Cow::Borrowed), Cow::Borrowed(v))
                        }
                        Cow::Owned(o) => {
                            let (k, v) = strip_name(o);
                            (k.map(|k| Cow::Owned(k.to_vec())), Cow::Owned(v.to_vec()))
                        }
                    };
                    if let Some(k) = k {
                        names.push((i, k));
                        *a = v;
                    }
                }
            }
        }
        let a0 = &args[0];
        if !a0.is_empty() && a0[0].is_ascii_digit() && memchr::memchr(b'<', a0).is_some() {
            b.decorated = true;
        }
    }
    let mut call = Call::new(Cow::Borrowed(name), args);
    call.ret = ret;
    call.err = err.clone();
    call.ret_path = rpath;
    call.names = names;
    let n = syscalls::normalize(&mut call);
    let mut overflow = call.overflow;
    let hret = match ret {
        None => None,
        Some(r) => match i64::try_from(r) {
            Ok(v) => Some(v),
            Err(_) => match u64::try_from(r) {
                Ok(u) => Some(u as i64),
                Err(_) => {
                    overflow = true;
                    None
                }
            },
        },
    };
    // the line is unparsed once, whichever of the two it is
    b.unparsed = call.malformed || overflow;
    if overflow {
        // a number no register or field of this call holds
        return b;
    }
    if name.starts_with("hsa_") {
        b.intent = true;
    } else if name == "ioctl"
        && let Kind::Ioctl(i) = &n.kind
        && i.arg.is_some()
    {
        b.decoded = true;
    }
    let h = Header {
        file,
        line,
        end_line,
        seq: 0,
        pid: None,
        tid: None,
        time: t,
        dur,
        ret: hret,
        err,
        stack: Box::new([]),
        text: cut_text(text),
        partial,
        injected: false,
    };
    b.ev = Some(E::place(Event {
        h,
        name: n.name,
        kind: n.kind,
    }));
    b
}

/// A resumed call's whole argument list: its pending half's arguments
/// (borrowed from it), then the resumed line's (`cont`), a `=> …` of the
/// kernel's joined to the last argument before it.
fn joined_args<'a>(p: Option<&'a Pending>, cont: Vec<Cow<'a, [u8]>>) -> Vec<Cow<'a, [u8]>> {
    let mut args: Vec<Cow<'a, [u8]>> = match p {
        Some(p) => {
            let mut a = Vec::with_capacity(p.arg_ends.len() + cont.len());
            a.extend(p.args().map(Cow::Borrowed));
            a
        }
        None => Vec::with_capacity(cont.len()),
    };
    while args.last().is_some_and(|a| a.is_empty()) {
        args.pop();
    }
    let mut cont = cont.into_iter().peekable();
    if cont.peek().is_some_and(|c| c.is_empty()) {
        cont.next();
    }
    if !args.is_empty()
        && let Some(c0) = cont.peek()
        && c0.starts_with(b"=>")
    {
        let c0 = cont.next().unwrap();
        let last = args.last_mut().unwrap();
        let mut joined = last.to_vec();
        joined.push(b' ');
        joined.extend_from_slice(&c0);
        *last = Cow::Owned(joined);
    }
    args.extend(cont);
    args
}

fn replace(s: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(k) = find(&s[i..], from) {
        out.extend_from_slice(&s[i..i + k]);
        out.extend_from_slice(to);
        i += k + from.len();
    }
    out.extend_from_slice(&s[i..]);
    out
}

#[cfg(test)]
mod fast_path;
#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> (Vec<Rc<Event>>, InputInfo) {
        let mut p = Parser::new(FileId(0), InputInfo::new("t.log".into()), None, None, None);
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            p.feed(i as u64 + 1, l.as_bytes(), &mut out);
        }
        p.finish(&mut out);
        (out, p.info)
    }

    #[test]
    fn a_process_exit_forgets_its_threads_and_no_other() {
        // 100 made threads 101 and 102 and a child 200 with a thread 201;
        // 100 exits; then 101 and 102 are new processes, 201 still 200's
        let thread = "clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|\
                      CLONE_SYSVSEM, exit_signal=0}, 88)";
        let fork = "clone(child_stack=NULL, flags=SIGCHLD)";
        let lines = [
            format!("100 {thread} = 101"),
            format!("100 {thread} = 102"),
            format!("100 {fork} = 200"),
            format!("200 {thread} = 201"),
            "100 +++ exited with 0 +++".into(),
            "101 close(3) = 0".into(),
            "102 close(3) = 0".into(),
            "201 close(3) = 0".into(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (evs, _) = parse(&lines);
        let who: Vec<_> = evs[evs.len() - 3..]
            .iter()
            .map(|e| (e.h.tid, e.h.pid))
            .collect();
        assert_eq!(
            who,
            vec![
                (Some(101), Some(101)),
                (Some(102), Some(102)),
                (Some(201), Some(200))
            ]
        );
        // the same over what an -ff pre-pass shares: its tids forgotten too
        let base = SharedTgids::new([(101, 100), (102, 100), (201, 200)].into());
        let mut t = Tgids::new(Some(Arc::new(base)));
        t.insert(103, Some(100));
        t.insert(102, Some(102)); // this file saw 102 become its own
        let mut gone = t.remove_group(100);
        gone.sort_unstable();
        assert_eq!(gone, vec![101, 103]);
        assert_eq!(t.get(&101), None);
        assert_eq!(t.get(&102), Some(Some(102)));
        assert_eq!(t.get(&201), Some(Some(200)));
    }

    #[test]
    fn split_call_is_emitted_at_its_resumed_line() {
        let (evs, info) = parse(&[
            "42 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7f <unfinished ...>",
            "43 1764435600.2 close(5) = 0",
            "42 1764435600.5 <... ioctl resumed>) = 0",
        ]);
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].name, "close");
        let e = &evs[1];
        assert_eq!((e.h.line, e.h.end_line, e.h.tid), (1, Some(3), Some(42)));
        assert!((e.h.dur.unwrap() - 0.4).abs() < 1e-6);
        assert!(
            e.h.text
                .as_bytes()
                .windows(5)
                .any(|w| w == " … ".as_bytes())
        );
        let Kind::Ioctl(i) = &e.kind else { panic!() };
        assert_eq!(i.ioctl, Some("AMDKFD_IOC_WAIT_EVENTS"));
        assert_eq!((info.unfinished, info.orphans, info.events), (0, 0, 2));
    }

    #[test]
    fn unfinished_at_the_end_and_orphans_are_counted() {
        let (evs, info) = parse(&[
            "42 1764435600.1 read(3, <unfinished ...>",
            "43 1764435600.2 <... write resumed>) = 1",
        ]);
        assert_eq!(info.unfinished, 1);
        assert_eq!(info.orphans, 1);
        assert!(evs.iter().all(|e| e.h.partial));
    }

    #[test]
    fn frames_go_to_their_call_and_exit_frames_follow_plus() {
        let (evs, info) = parse(&[
            "42 close(3) = 0",
            " > /lib/libc.so.6(close+0x14) [0x1234]",
            "42 exit_group(0) = ?",
            "42 +++ exited with 0 +++",
            " > /lib/libc.so.6(_exit+0x1) [0x10]",
        ]);
        assert!(info.has_stacks && info.exit_seen);
        assert_eq!(evs.len(), 3);
        assert_eq!(evs[0].h.stack[0].symbol.as_deref(), Some("close"));
        assert_eq!(evs[0].h.stack[0].sym_offset, Some(0x14));
        assert_eq!(evs[1].name, "exit_group");
        assert_eq!(evs[1].h.stack.len(), 1);
        assert!(matches!(
            evs[2].kind,
            Kind::Exit(Exit {
                whole: true,
                status: Some(0),
                ..
            })
        ));
    }

    #[test]
    fn unprefixed_past_learns_the_root_pid() {
        let (evs, info) = parse(&["close(3) = 0", "getpid() = 77", "close(4) = 0"]);
        assert!(!info.has_pids);
        assert!(
            evs.iter()
                .all(|e| e.h.tid == Some(77) && e.h.pid == Some(77))
        );
    }

    #[test]
    fn unprefixed_lines_after_a_clone_stay_the_roots() {
        // strace -f to stderr prefixes lines only once a second tracee is
        // attached: before that, an unprefixed line is the root's, not the
        // child's the clone just named, and a thread of the root joins it
        // once a prefix names the root
        let (evs, _) = parse(&[
            "clone3({flags=CLONE_VM|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD}, 88) = 43",
            "read(3, \"\\0\", 1) = 1",
            "strace: Process 43 attached",
            "[pid    43] close(3) = 0",
            "[pid    42] read(3, 0x7ffd00000000, 1) = -1 EBADF (Bad file descriptor)",
        ]);
        let who: Vec<_> = evs.iter().map(|e| (e.h.pid, e.h.tid)).collect();
        let (r, t) = ((Some(42), Some(42)), (Some(42), Some(43)));
        assert_eq!(who, [r, r, t, r]);
    }

    #[test]
    fn clone_children_join_their_process() {
        let (evs, _) = parse(&[
            "42 clone(child_stack=0x1, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|CLONE_SIGHAND) = 43",
            "43 close(3) = 0",
        ]);
        assert_eq!((evs[1].h.pid, evs[1].h.tid), (Some(42), Some(43)));
    }

    #[test]
    fn diagnostics_and_summaries_are_not_unparsed() {
        let (_, info) = parse(&[
            "strace: Process 42 attached",
            "% time     seconds  usecs/call     calls    errors syscall",
            "------ ----------- ----------- --------- --------- ----------------",
            "100.00    0.000010           1        10           close",
            "nonsense here",
        ]);
        assert_eq!(info.unparsed, 1);
        assert_eq!(info.unparsed_samples[0].0, 5);
    }

    #[test]
    fn preload_header_snapshots_maps_and_continuations() {
        let (evs, info) = parse(&[
            "# rocrtrace-log 2",
            "# pid=4242 ppid=1 exe=/bin/app page_size=4096 start=1764435600.0",
            "# fd-snapshot start",
            "# fd 3 /dev/kfd",
            "# fd 4 /dev/dri/renderD128",
            "# map 7f00-8f00 r-xp 0 /lib/libhsa.so build-id=abcd",
            "#+ 4242 1+ 4242 1764435600.1 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, ",
            "#+ 4242 2 size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0",
            "# exit status=0",
        ]);
        assert_eq!(info.unparsed, 0, "{:?}", info.unparsed_samples);
        assert_eq!(info.header[0].0.as_ref(), "version");
        assert!(info.decoded_structs && info.exit_seen);
        let kinds: Vec<&str> = evs.iter().map(|e| e.kind.type_name()).collect();
        assert_eq!(
            kinds,
            ["ProcessInfo", "FdSnapshot", "ModuleMap", "Ioctl", "Exit"]
        );
        let Kind::FdSnapshot(s) = &evs[1].kind else {
            panic!()
        };
        assert_eq!(s.fds.len(), 2);
        let Kind::Ioctl(i) = &evs[3].kind else {
            panic!()
        };
        assert_eq!(i.size, Some(24));
        assert_eq!(evs[3].h.line, 7);
        assert!(evs.iter().all(|e| e.h.pid == Some(4242)));
    }

    #[test]
    fn results_errors_and_decorations() {
        let (evs, info) = parse(&[
            "42 openat(AT_FDCWD, \"/x\", O_RDONLY) = -1 ENOENT (No such file) <0.000010>",
            "42 close(9) = -1 (errno 512)",
            "42 umask(022) = 022",
            "42 dup(3</a\\74b>) = 4</a\\74b>",
        ]);
        assert!(info.has_durations && info.has_decorations);
        assert_eq!(evs[0].h.err.as_deref(), Some("ENOENT"));
        assert_eq!(evs[1].h.err.as_deref(), Some("ERRNO_512"));
        assert_eq!(evs[2].h.ret, Some(0o22));
        let Kind::FdCreate(f) = &evs[3].kind else {
            panic!()
        };
        assert_eq!(f.paths, vec![Some(Text::from("/a<b"))]);
    }
}
