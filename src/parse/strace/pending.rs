//! Calls strace printed in two halves: the `<unfinished ...>` entry waits
//! ([`Pending`], by tid in [`Inflight`]) for its `<... resumed>` line, and
//! the two are joined into one event.

use super::*;

/// A call waiting for its resumed line.
#[derive(Debug, Clone)]
pub struct Pending {
    /// the entry line's text, the call's name, its arguments, then where
    /// each argument ends (a u32 each, little-endian), in one allocation
    bytes: Vec<u8>,
    /// where the text ends in `bytes`
    text_end: usize,
    /// where the name ends in `bytes`, after the text
    name_end: usize,
    /// where the arguments end in `bytes`: the argument ends follow
    args_end: usize,
    pub line: u64,
    /// where the entry line is in the input (nowhere: its text is kept)
    pub at: Span,
    pub time: Option<f64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    /// made by a worker from line `line` alone and waiting as made
    /// ([`Parser::apply_entry`]): a worker that joined it with its resumed
    /// line made the event the parser would ([`super::pre::PreJoined`])
    pub(super) whole: bool,
}

impl Pending {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new<'a>(
        name: &str,
        text: &[u8],
        at: Span,
        args: impl ExactSizeIterator<Item = &'a [u8]> + std::clone::Clone,
        line: u64,
        time: Option<f64>,
        pid: Option<u32>,
        tid: Option<u32>,
    ) -> Self {
        let n = args.len();
        let len = text.len() + name.len() + args.clone().map(<[u8]>::len).sum::<usize>();
        let mut bytes = Vec::with_capacity(len + 4 * n);
        bytes.extend_from_slice(text);
        bytes.extend_from_slice(name.as_bytes());
        for a in args.clone() {
            bytes.extend_from_slice(a);
        }
        let args_end = bytes.len();
        let mut end = text.len() + name.len();
        for a in args {
            end += a.len();
            // (a line is far shorter than 4 GiB)
            bytes.extend_from_slice(&(end as u32).to_le_bytes());
        }
        Pending {
            bytes,
            text_end: text.len(),
            name_end: text.len() + name.len(),
            args_end,
            line,
            at,
            time,
            pid,
            tid,
            whole: false,
        }
    }

    /// The entry line's text.
    pub fn text(&self) -> &[u8] {
        &self.bytes[..self.text_end]
    }

    /// The entry line's text as an event's source.
    pub fn source(&self) -> Source {
        if self.at.is_some() {
            Source::at(self.at, Span::default())
        } else {
            Source::kept(self.text())
        }
    }

    /// The call's name.
    pub fn name(&self) -> &str {
        // (it was a &str when `new` copied it)
        std::str::from_utf8(&self.bytes[self.text_end..self.name_end]).unwrap_or_default()
    }

    /// The arguments the entry line gave.
    pub fn args(&self) -> impl ExactSizeIterator<Item = &[u8]> + std::clone::Clone {
        let ends = &self.bytes[self.args_end..];
        let end = move |i: usize| {
            let e: [u8; 4] = ends[4 * i..4 * i + 4].try_into().unwrap();
            u32::from_le_bytes(e) as usize
        };
        (0..ends.len() / 4).map(move |i| {
            let start = if i == 0 { self.name_end } else { end(i - 1) };
            &self.bytes[start..end(i)]
        })
    }

    /// The same call with another entry text (-ff: the execve's line in
    /// its old thread's file).
    pub(super) fn with_text(&self, text: &[u8]) -> Self {
        Pending::new(
            self.name(),
            text,
            Span::default(),
            self.args(),
            self.line,
            self.time,
            self.pid,
            self.tid,
        )
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
        let n = self.calls.put(tid, place, p);
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

/// The name an unfinished call waits under: clone3 by its number (strace
/// before it knew the name) is clone3.
pub(super) fn entry_name(name: &str) -> &str {
    if name == "syscall_0x1b3" || name == "syscall_435" {
        "clone3"
    } else {
        name
    }
}

fn is_clone_name(n: &str) -> bool {
    matches!(
        n,
        "clone" | "clone2" | "clone3" | "fork" | "vfork" | "syscall_0x1b3" | "syscall_435"
    )
}

/// A resumed call's whole argument list: its pending half's arguments
/// (borrowed from it), then the resumed line's (`cont`), a `=> …` of the
/// kernel's joined to the last argument before it.
pub(super) fn joined_args<'a>(
    p: Option<&'a Pending>,
    cont: Vec<Cow<'a, [u8]>>,
) -> Vec<Cow<'a, [u8]>> {
    join_args(p.map(Pending::args), cont)
}

/// [`joined_args`] of an entry's arguments, wherever they are kept.
pub(super) fn join_args<'a>(
    entry: Option<impl ExactSizeIterator<Item = &'a [u8]>>,
    cont: Vec<Cow<'a, [u8]>>,
) -> Vec<Cow<'a, [u8]>> {
    // built in the resumed half's own list (no second list a line): the
    // entry's arguments without its empty last ones, then the half's
    // without an empty first one, an entry's last argument and a first
    // `=> …` of the half made one
    let mut args = cont;
    if args.first().is_some_and(|c| c.is_empty()) {
        args.remove(0);
    }
    let Some(e) = entry else {
        return args;
    };
    // (the entry's arguments on the stack: a call has six at most)
    let mut inline: [&'a [u8]; 8] = [&[]; 8];
    let heap: Vec<&'a [u8]>;
    let n = e.len();
    let mut entry: &[&'a [u8]] = if n <= inline.len() {
        for (slot, a) in inline.iter_mut().zip(e) {
            *slot = a;
        }
        &inline[..n]
    } else {
        heap = e.collect();
        &heap
    };
    while entry.last().is_some_and(|a| a.is_empty()) {
        entry = &entry[..entry.len() - 1];
    }
    if let Some((&last, rest)) = entry.split_last()
        && args.first().is_some_and(|c0| c0.starts_with(b"=>"))
    {
        let mut joined = last.to_vec();
        joined.push(b' ');
        joined.extend_from_slice(&args[0]);
        args[0] = Cow::Owned(joined);
        entry = rest;
    }
    args.splice(0..0, entry.iter().map(|&a| Cow::Borrowed(a)));
    args
}

impl Parser {
    /// strace 5.2-6.1 with -z/-Z/-e status= cut a buffered line with
    /// ' <unfinished ...>' and printed the rest on the next line, unprefixed.
    pub(super) fn bare_resumed(&mut self, lineno: u64, line: &[u8], tid: Option<u32>) -> bool {
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

    pub(super) fn inflight_get(&self, tid: Option<u32>) -> Option<&Pending> {
        self.inflight.get(tid)
    }

    pub(super) fn inflight_pop(&mut self, tid: Option<u32>) -> Option<Pending> {
        self.inflight.pop(tid)
    }

    /// `inflight[tid] = p`: an existing key keeps its place.
    pub(super) fn inflight_set(&mut self, tid: Option<u32>, p: Pending) {
        self.inflight.set(tid, p);
    }

    /// An unfinished call: it waits for its resumed line.
    pub(super) fn start<'a>(
        &mut self,
        lineno: u64,
        line: &[u8],
        name: &str,
        args: impl ExactSizeIterator<Item = &'a [u8]> + std::clone::Clone,
        tid: Option<u32>,
        t: Option<f64>,
    ) {
        let at = self.fed.span_of(line);
        let p = Pending::new(entry_name(name), line, at, args, lineno, t, None, None);
        self.start_pending(p, tid);
    }

    /// An unfinished call's pending half (made by [`Pending::new`] with
    /// its tid and pid unknown, maybe on a worker: [`pre_parse`]) waits for
    /// its resumed line; a call the tid had waiting is left unfinished.
    pub(super) fn start_pending(&mut self, mut p: Pending, tid: Option<u32>) {
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
                old.source(),
                true,
            ) {
                self.emit(ev);
            }
        }
        p.pid = pid;
        p.tid = tid;
        self.inflight.push(tid, p);
        self.fresh = Some(tid);
    }

    pub(super) fn resumed(
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
            let at = self.fed.span_of(line);
            let again = Pending::new(&name, line, at, args, pl, pt, pid, tid);
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
    pub(super) fn take(&mut self, name: &str, tid: Option<u32>) -> Option<Pending> {
        let p = self.inflight_pop(tid);
        if p.is_none() && name == "execve" && self.expect_exec.contains(&tid) {
            self.expect_exec.remove(&tid);
        } else if p.is_none() {
            self.info.orphans += 1;
        }
        p
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_resumed(
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
        // the two lines joined in the parser's own buffer: the event
        // refers to both, or keeps a copy
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        let (text, src): (&[u8], Source) = match p {
            Some(p) => {
                joined.extend_from_slice(p.text());
                joined.extend_from_slice(SPLIT_JOIN.as_bytes());
                joined.extend_from_slice(line);
                let resumed = self.fed.span_of(line);
                let src = if p.at.is_some() && resumed.is_some() {
                    Source::at(p.at, resumed)
                } else {
                    Source::kept(&joined)
                };
                (&joined, src)
            }
            None => (line, self.fed.source(line)),
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
            src,
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
}
