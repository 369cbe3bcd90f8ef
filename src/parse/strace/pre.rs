//! The pre-parse `--jobs` workers run: the part of a line that does not
//! depend on the parser's state, worked out on other threads.

use super::*;

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
    pub(super) tid: u32,
    pub(super) time: f64,
    pub(super) dur: bool,
    pub(super) rpath: bool,
    /// (its event by value: the parser puts it in its one `Rc`, so each
    /// event is allocated once, on the thread that keeps it)
    pub(super) built: Built<Event>,
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
        Fed::new(line, at).source(line),
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
    pub(super) fn placed(&mut self) -> Built {
        Built {
            ev: self.ev.take().map(Rc::new),
            decorated: self.decorated,
            unparsed: self.unparsed,
            intent: self.intent,
            decoded: self.decoded,
        }
    }
}
