//! The pre-parse `--jobs` workers run: the part of a line that does not
//! depend on the parser's state, worked out on other threads.

use super::*;
use crate::read::chunked::{Batch, Item};

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
    /// an unfinished call (`<unfinished ...>`): its pending half, made
    Entry(PreEntry),
    /// the resumed half of a split call whose entry the worker made in the
    /// same batch: the joined event, built, for the parser's thread to
    /// take when that entry is the one waiting (else the half's scan)
    Joined(PreJoined),
    /// the resumed half of a split call: only its scan, since joining the
    /// halves needs the parser's pending calls
    Half(Box<tokens::Spans>),
}

/// A resumed line joined on a worker with the entry it made from line
/// `entry_line` (what `scanned` and `finish_resumed` make of the two).
#[derive(Debug)]
pub struct PreJoined {
    pub(super) entry_line: u64,
    pub(super) tid: u32,
    pub(super) time: f64,
    pub(super) dur: bool,
    pub(super) rpath: bool,
    pub(super) built: Built<Lone>,
    /// the half alone: when another entry waits for the tid
    pub(super) half: Box<tokens::Spans>,
}

/// What a worker keeps between the lines of one batch: the unfinished
/// calls it made, by the tid their line printed, so that a resumed line of
/// the same batch is joined to its entry there ([`PreJoined`]).
#[derive(Debug, Default)]
pub struct PreState<'a> {
    open: Vec<Open<'a>>,
    /// the two lines of a joined call
    joined: Vec<u8>,
    /// the last call's argument list, emptied, for the next line's
    spare: tokens::Args<'static>,
    /// the decorations the batch's last lines had (the tokenizer's)
    seen: tokens::Seen,
}

/// An unfinished call a worker made, waiting in its batch.
#[derive(Debug)]
struct Open<'a> {
    tid: u32,
    line: u64,
    text: &'a [u8],
    /// where the entry line is (nowhere: its text is kept)
    at: Span,
    time: f64,
    args: tokens::Args<'a>,
}

/// Unfinished calls a batch keeps at most (one a thread; past this the
/// oldest is forgotten: its resumed line is then a half alone).
const OPEN_MAX: usize = 64;

/// An unfinished call's pending half, made on a worker: the parser's
/// thread only names its thread and puts it with the others waiting.
#[derive(Debug)]
pub struct PreEntry {
    pub(super) tid: u32,
    pub(super) time: f64,
    /// (taken once, by the parser's thread)
    pub(super) pending: Option<Pending>,
}

#[derive(Debug)]
pub struct PreBuilt {
    pub(super) tid: u32,
    pub(super) time: f64,
    pub(super) dur: bool,
    pub(super) rpath: bool,
    /// (its event by value: the parser puts it in its one `Rc`, so each
    /// event is allocated once, on the thread that keeps it)
    pub(super) built: Built<Lone>,
}

/// A scanned line's result as the parser keeps it: None when its return
/// value fits no register (the line is unparsed).
pub(super) fn outcome_of(o: Option<&tokens::Outcome<'_>>) -> Option<Res> {
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
pub fn pre_parse(file: FileId, lineno: u64, text: &str, at: Span) -> Option<PreCall> {
    pre_parse_in(&mut PreState::default(), file, lineno, text, at)
}

/// A --jobs worker's pre-parse of one batch (read::chunked::PreParse):
/// its lines in order, a resumed line joined with its entry when the batch
/// had it.
pub fn pre_parse_batch(file: FileId, b: &Batch<PreCall>) -> Vec<Option<PreCall>> {
    let mut st = PreState::default();
    b.items
        .iter()
        .map(|it| match *it {
            Item::Line(n, s, e, at) => pre_parse_in(&mut st, file, n, b.line(s, e), at),
            _ => None,
        })
        .collect()
}

/// [`pre_parse`] of the lines of one batch, in order, with what the
/// batch's earlier lines left in `st`: a resumed line is joined with its
/// entry when the batch had it.
pub fn pre_parse_in<'a>(
    st: &mut PreState<'a>,
    file: FileId,
    lineno: u64,
    text: &'a str,
    at: Span,
) -> Option<PreCall> {
    let line = text.as_bytes();
    let &c = line.first()?;
    if !c.is_ascii_digit() || crate::parse::lex::has_esc(line) {
        return None;
    }
    let spare = tokens::reuse_args(std::mem::take(&mut st.spare));
    let r = tokens::scan_line_in(text, spare, &mut st.seen)?;
    match r.kind {
        ScanKind::Call => {}
        ScanKind::Unfinished => {
            // what `scanned` and `start` make of it before the state enters
            let args = r.args.iter().map(|a| &a[..]);
            let name = pending::entry_name(r.name);
            let p = Pending::new(name, line, at, args, lineno, Some(r.time), None, None);
            st.open.retain(|o| o.tid != r.tid);
            if st.open.len() == OPEN_MAX {
                st.open.remove(0);
            }
            st.open.push(Open {
                tid: r.tid,
                line: lineno,
                text: line,
                at,
                time: r.time,
                args: r.args,
            });
            return Some(PreCall::Entry(PreEntry {
                tid: r.tid,
                time: r.time,
                pending: Some(p),
            }));
        }
        ScanKind::Resumed => {
            let half = Box::new(r.spans(text));
            let Some(k) = st.open.iter().position(|o| o.tid == r.tid) else {
                return Some(PreCall::Half(half));
            };
            let o = st.open.remove(k);
            return Some(join(st, file, (lineno, at), line, o, r, half));
        }
    }
    let res = outcome_of(r.outcome.as_ref())?;
    let place = (lineno, None, r.time, None);
    let src = Fed::new(line, at).source(line);
    let (mut built, has_dur, has_rpath) = build_res(file, r.name, r.args, res, place, line, src);
    st.spare = std::mem::take(&mut built.spare);
    Some(PreCall::Call(PreBuilt {
        tid: r.tid,
        time: r.time,
        dur: has_dur,
        rpath: has_rpath,
        built,
    }))
}

impl Built<Lone> {
    /// A worker's event in its `Rc`, on the parser's thread (taken out of
    /// the batch: the one copy of it).
    pub(super) fn placed(&mut self) -> Built {
        Built {
            ev: self.ev.take().map(Lone::rc),
            decorated: self.decorated,
            unparsed: self.unparsed,
            intent: self.intent,
            decoded: self.decoded,
            spare: Vec::new(),
        }
    }
}

/// A resumed line's event joined with the entry `o` of its batch, as
/// `finish_resumed` makes it when `o` is the call waiting; the half alone
/// when the parser's thread is to decide (a result no register holds, a
/// line to count unparsed).
fn join<'a>(
    st: &mut PreState<'a>,
    file: FileId,
    (lineno, at): (u64, Span),
    line: &[u8],
    o: Open<'a>,
    r: tokens::Scanned<'a>,
    half: Box<tokens::Spans>,
) -> PreCall {
    let Some(res) = outcome_of(r.outcome.as_ref()) else {
        return PreCall::Half(half);
    };
    let args = pending::join_args(Some(o.args.iter().map(|a| &a[..])), r.args);
    st.joined.clear();
    st.joined.extend_from_slice(o.text);
    st.joined.extend_from_slice(SPLIT_JOIN.as_bytes());
    st.joined.extend_from_slice(line);
    let src = if o.at.is_some() && at.is_some() {
        Source::at(o.at, at)
    } else {
        Source::kept(&st.joined)
    };
    // a resumed call without -T's duration lasted from entry to return
    let place = (
        o.line,
        Some(lineno),
        o.time,
        Some((r.time - o.time).max(0.0)),
    );
    let (built, has_dur, has_rpath) = build_res(file, r.name, args, res, place, &st.joined, src);
    if built.unparsed {
        return PreCall::Half(half);
    }
    PreCall::Joined(PreJoined {
        entry_line: o.line,
        tid: r.tid,
        time: r.time,
        dur: has_dur,
        rpath: has_rpath,
        built,
        half,
    })
}

/// [`build_call`] of a scanned call with its result: the event (not
/// partial) and whether the result had a duration and a decorated path.
/// `place`: its first line, the resumed line, its time, and the duration
/// when the result gives none.
fn build_res(
    file: FileId,
    name: &str,
    args: Vec<Cow<'_, [u8]>>,
    res: Res,
    place: (u64, Option<u64>, f64, Option<f64>),
    text: &[u8],
    src: Source,
) -> (Built<Lone>, bool, bool) {
    let Res {
        ret,
        err,
        rpath,
        dur,
        ..
    } = res;
    let (line, end_line, t, otherwise) = place;
    let flags = (dur.is_some(), rpath.is_some());
    let dur = dur.or(otherwise);
    let built = build_call(
        file,
        name,
        args,
        ret,
        err,
        rpath,
        (line, end_line),
        (None, None),
        Some(t),
        dur,
        text,
        src,
        false,
    );
    (built, flags.0, flags.1)
}
