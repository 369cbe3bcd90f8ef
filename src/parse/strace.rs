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
//!
//! Its parts, by concept: the split calls waiting for their resumed line
//! (pending.rs), which process a line is of (pids.rs), `-k` frames
//! (frames.rs), strace's own messages and the lines they cut
//! (diagnostics.rs), a call's event from its text (build.rs), the
//! state-free pre-parse of `--jobs` workers (pre.rs), and detection's
//! sniff of a strace line (sniff.rs).

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

mod build;
mod diagnostics;
mod frames;
mod pending;
mod pids;
mod pre;
mod sniff;

pub use build::{Built, Place, build_call};
use pending::joined_args;
pub use pending::{Inflight, Pending};
pub use pids::{Handover, SharedTgids, Tgids};
use pre::outcome_of;
pub use pre::{
    PreBuilt, PreCall, PreEntry, PreJoined, PreState, pre_parse, pre_parse_batch, pre_parse_in,
};
pub use sniff::{looks_like_trace_line, sniff, summary_table_lines};

const UNFINISHED: &[u8] = b"<unfinished ...>";
/// Events an unprefixed log's first process holds while its pid is not
/// known (glibc's set_tid_address at exec names it at once; an attached
/// `strace -p` may never): past this many the process is committed as "pid
/// unknown" for the rest of the log (`pidless`), so memory stays flat.
const NOPID_MAX: usize = 4096;

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

/// The line being fed and where it is in its input (nowhere: an input
/// that cannot be read again).  An event whose text is that very line
/// (the same bytes, not a copy or an edit of them) refers to it instead of
/// copying it (evidence by reference, [`Source`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fed {
    /// the line's address and length, compared, never read
    ptr: usize,
    len: usize,
    at: Span,
}

impl Fed {
    pub fn new(line: &[u8], at: Span) -> Self {
        Fed {
            ptr: line.as_ptr() as usize,
            len: line.len(),
            at,
        }
    }

    /// Where `text` is when it is the fed line itself.
    pub fn span_of(&self, text: &[u8]) -> Span {
        if self.at.is_some() && text.as_ptr() as usize == self.ptr && text.len() == self.len {
            self.at
        } else {
            Span::default()
        }
    }

    /// The source of an event whose text is `text`: the line by
    /// reference, else a copy.
    pub fn source(&self, text: &[u8]) -> Source {
        let at = self.span_of(text);
        if at.is_some() {
            Source::at(at, Span::default())
        } else {
            Source::kept(text)
        }
    }
}

fn float(t: &[u8]) -> Option<f64> {
    std::str::from_utf8(t).ok()?.parse().ok()
}

fn u32_of(t: &[u8]) -> Option<u32> {
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// A result value: an integer as written (decimal, `0x`, `0o`, `0b`), else an octal like `022`.
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
    /// the last call's argument list, emptied, for the next line's
    /// ([`tokens::reuse_args`])
    spare: tokens::Args<'static>,
    /// the decorations the last lines' arguments had (the tokenizer's)
    seen: tokens::Seen,
    /// where the next line fed is (set by [`Parser::at`])
    next_at: Span,
    /// the line being fed
    pub(crate) fed: Fed,
    /// false: every line goes to the general grammar (tests compare the
    /// two paths; see [`Parser::without_fast_path`])
    fast: bool,
    /// lines the fast path took (tests: that it ran, or did not)
    #[cfg(test)]
    pub(crate) taken: u64,
    /// resumed lines whose event a worker joined (tests: that it ran)
    #[cfg(test)]
    pub(crate) worker_joined: u64,
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
            spare: Vec::new(),
            seen: tokens::Seen::default(),
            next_at: Span::default(),
            fed: Fed::default(),
            fast: true,
            #[cfg(test)]
            taken: 0,
            #[cfg(test)]
            worker_joined: 0,
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

    /// Where the next line fed is in its input: the events whose text is
    /// that line refer to it (evidence by reference); a line fed without
    /// it is copied into the events it makes.
    pub fn at(&mut self, span: Span) {
        self.next_at = span;
    }

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
        self.fed = Fed::new(line, std::mem::take(&mut self.next_at));
        self.feed_line(lineno, line, text, pre);
        // (no event made later may take another buffer at this address
        // for this line)
        self.fed = Fed::default();
        self.drain(sink)
    }

    /// One line; what it completes waits in `out` for [`Self::drain`].
    fn feed_line(
        &mut self,
        lineno: u64,
        line: &[u8],
        text: Option<&str>,
        pre: Option<&mut PreCall>,
    ) {
        self.info.lines += 1;
        if line.is_empty() {
            return;
        }
        let c = line[0];
        if c == b' ' {
            if line.starts_with(b" > ") || line.starts_with(b" | ") {
                if line[1] == b'>' {
                    self.frame(line);
                }
                return;
            }
            if grammar::extra(line) {
                return;
            }
        }
        let fresh = self.fresh.take();
        let stripped;
        let mut text = text;
        // a pre-parse is made of a line without an ESC only (pre_parse_in
        // checked): the check is not made twice on the serial path
        debug_assert!(pre.is_none() || !crate::parse::lex::has_esc(line));
        let line: &[u8] = if pre.is_none() && crate::parse::lex::has_esc(line) {
            text = None;
            stripped = grammar::strip_ansi(line);
            if stripped.is_empty() {
                return;
            }
            &stripped
        } else {
            line
        };
        self.flush_hold();
        if c == b'#' {
            self.meta(lineno, line);
            return;
        }
        if let Some(s) = self.snapshot.take() {
            self.emit(s);
        }
        if self.fragment.is_some() && self.join_fragment(lineno, line) {
            return;
        }
        if self.in_summary && self.diagnostic(lineno, line) {
            return;
        }
        let parsed = match (pre, text) {
            (Some(PreCall::Call(p)), _) if self.fast => self.apply_pre(lineno, line, p),
            (Some(PreCall::Entry(e)), _) if self.fast => self.apply_entry(e),
            (Some(PreCall::Joined(j)), Some(text)) if self.fast => {
                self.apply_joined(lineno, line, text, j)
            }
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
                p.source(),
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

    // --- one line ------------------------------------------------------

    pub(crate) fn line(&mut self, lineno: u64, line: &[u8]) -> bool {
        self.line_text(lineno, line, None)
    }

    /// `line` with its text when it is known to be UTF-8.
    fn line_text(&mut self, lineno: u64, line: &[u8], text: Option<&str>) -> bool {
        if self.fast
            && let Some(text) = text.or_else(|| std::str::from_utf8(line).ok())
            && let Some(r) = tokens::scan_line_in(
                text,
                tokens::reuse_args(std::mem::take(&mut self.spare)),
                &mut self.seen,
            )
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
                let src = self.fed.source(line);
                if let Some(ev) = self.call_event(
                    &name, args, None, None, None, lineno, None, pid, tid, t, None, line, src, true,
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

    /// The state-dependent rest of an unfinished call [`pre_parse`] took:
    /// what `scanned` and `start` do around making its pending half.
    fn apply_entry(&mut self, e: &mut PreEntry) -> bool {
        let Some(p) = e.pending.take() else {
            return false;
        };
        #[cfg(test)]
        {
            self.taken += 1;
        }
        self.info.has_time = true;
        self.last_time = Some(e.time);
        let tid = self.who(Some(e.tid));
        let mut p = p;
        p.whole = true;
        self.start_pending(p, tid);
        true
    }

    /// A resumed line a worker joined with the entry it made
    /// ([`PreJoined`]): its event when that entry is the call waiting for
    /// the thread, else the line's half alone, as `scanned` takes it.
    fn apply_joined(&mut self, lineno: u64, line: &[u8], text: &str, j: &mut PreJoined) -> bool {
        let tid = self.scanned_head(j.time, j.dur, j.rpath, j.tid);
        if !self
            .inflight
            .get(tid)
            .is_some_and(|p| p.whole && p.line == j.entry_line)
        {
            let r = j.half.scanned(text);
            let res = outcome_of(r.outcome.as_ref()).expect("the worker read it");
            self.scanned_rest(lineno, line, r, res, tid);
            return true;
        }
        #[cfg(test)]
        {
            self.taken += 1;
            self.worker_joined += 1;
        }
        // what take and finish_resumed do around the event
        self.inflight_pop(tid);
        let pid = self.tgid_of(tid);
        if let Some(ev) = self.apply_built(j.entry_line, line, j.built.placed(), pid, tid) {
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
        let mut ev = self.counted(lineno, text, b)?;
        let e = own(&mut ev);
        e.h.pid = pid;
        e.h.tid = tid;
        Some(ev)
    }

    /// What building a call's event counted, into info; the event.
    #[inline(always)]
    fn counted(&mut self, lineno: u64, text: &[u8], b: Built) -> Option<Rc<Event>> {
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
        if b.spare.capacity() > 0 {
            self.spare = b.spare;
        }
        b.ev
    }

    /// A line the compiled tokenizer took; None when a
    /// number does not fit (the general path then decides).
    #[inline(always)]
    fn scanned(&mut self, lineno: u64, line: &[u8], r: tokens::Scanned<'_>) -> Option<bool> {
        let res = outcome_of(r.outcome.as_ref())?;
        let tid = self.scanned_head(r.time, res.dur.is_some(), res.rpath.is_some(), r.tid);
        self.scanned_rest(lineno, line, r, res, tid);
        Some(true)
    }

    /// What every line the tokenizer took counts, and its thread.
    #[inline(always)]
    fn scanned_head(&mut self, time: f64, dur: bool, rpath: bool, tid: u32) -> Option<u32> {
        self.info.has_time = true;
        self.last_time = Some(time);
        if dur {
            self.info.has_durations = true;
        }
        if rpath {
            self.info.has_decorations = true;
        }
        self.who(Some(tid))
    }

    /// [`Parser::scanned`] once its head is done.
    #[inline(always)]
    fn scanned_rest(
        &mut self,
        lineno: u64,
        line: &[u8],
        r: tokens::Scanned<'_>,
        res: Res,
        tid: Option<u32>,
    ) {
        let args = r.args;
        match r.kind {
            ScanKind::Call => {
                self.complete(lineno, line, r.name, args, res, false, tid, Some(r.time))
            }
            ScanKind::Unfinished => {
                self.start(
                    lineno,
                    line,
                    r.name,
                    args.iter().map(|a| &a[..]),
                    tid,
                    Some(r.time),
                );
                self.spare = tokens::reuse_args(args);
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
    }

    #[inline(always)]
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
        let src = self.fed.source(line);
        if let Some(mut ev) = self.call_event(
            name, args, ret, err, rpath, lineno, None, pid, tid, t, dur, line, src, false,
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

    #[inline(always)]
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
        src: Source,
        partial: bool,
    ) -> Option<Rc<Event>> {
        let b = build::build_call::<Rc<Event>>(
            self.file,
            name,
            args,
            ret,
            err,
            rpath,
            (line, end_line),
            (pid, tid),
            t,
            dur,
            text,
            src,
            partial,
        );
        self.counted(line, text, b)
    }

    /// Bookkeeping once a call completed: learn pids, clone children, hold
    /// exits for their frames.
    #[inline]
    fn after_call(&mut self, mut ev: Rc<Event>, mut tid: Option<u32>) {
        let ret = ev.h.ret.filter(|&r| r > 0);
        // (read only for a line of no known thread)
        let names_tid =
            tid.is_none() && matches!(&*ev.name, "set_tid_address" | "getpid" | "gettid");
        if names_tid && self.pidless && self.root_alias.is_none() {
            self.root_alias = ret.and_then(|r| u32::try_from(r).ok());
        } else if names_tid && let Some(r) = ret.and_then(|r| u32::try_from(r).ok()) {
            self.learn_root(r);
            let pid = self.tgid.get(&r).unwrap_or(Some(r));
            let e = own(&mut ev);
            e.h.tid = Some(r);
            e.h.pid = pid;
            tid = Some(r);
        }
        // (a call's kind says its name: normalize makes a Clone of
        // clone, clone2, clone3, fork and vfork alone, and an Exit of exit
        // and exit_group alone)
        if matches!(ev.kind, Kind::Clone(_))
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
        if matches!(ev.kind, Kind::Exit(_))
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
                src: self.fed.source(line),
                ..Default::default()
            },
            name: Cow::Borrowed(name),
            kind: Kind::Signal(Signal {
                signal: signal(&String::from_utf8_lossy(sig)),
            }),
        });
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
mod tests;
