//! One TRACE argument: its files and their merged event stream.
//!
//! A dialect plugs in through [`Dialect`] (one parser per file: feed /
//! finish) and [`Dialects`] (which parser a file gets; the registry's is
//! parse/mod.rs's `Builtin`); the reading, the layout clean-up and the
//! merge are the same for every dialect.

use super::strace::{self, PreCall, SharedTgids};
use crate::events::{Event, FileId, Format, InputInfo, Kind, Span, Text, own};
use crate::read::chunked::{self, Chunked, Item};
use crate::read::lines::{CHUNK, CleanLines};
use crate::read::merge::{Key, Maker, Spill, Stream, bounded_merge};
use crate::read::open::{FileSpec, is_stream};
use crate::read::{InputError, input_error, open_path};
use std::cell::Cell;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

/// Files a -ff merge holds open at once (at most; see [`open_budget`]).
pub const MAX_OPEN: usize = 64;

/// Files a merge may hold open: [`MAX_OPEN`], or a quarter of the soft
/// RLIMIT_NOFILE where that is less (the interpreter's own fds and the
/// other traces of `--jobs` share the table), at least 2.
pub fn open_budget() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Max open files"))?;
            line["Max open files".len()..]
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        });
    match soft {
        Some(n) => MAX_OPEN
            .min(usize::try_from(n / 4).unwrap_or(MAX_OPEN))
            .max(2),
        None => MAX_OPEN,
    }
}
/// Read size per file while merging many files.
pub const MERGE_CHUNK: usize = 64 << 10;

/// A parser of one file of one dialect.
pub trait Dialect {
    /// Where the next line fed is in its input: the events whose text is
    /// that line refer to it (evidence by reference, strace::Fed keeps
    /// the account).  A dialect that ignores it builds its events with
    /// their text (`Source::kept`): the same evidence, a copy a line.
    fn at(&mut self, span: Span) {
        let _ = span;
    }
    /// The events line `lineno` completes, appended to `out`.
    fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<Rc<Event>>);
    /// `feed` with the line's pre-parse from a worker (--jobs), which the
    /// parser may take parts of.
    fn feed_pre(
        &mut self,
        lineno: u64,
        line: &str,
        pre: Option<&mut PreCall>,
        out: &mut Vec<Rc<Event>>,
    ) {
        let _ = pre;
        self.feed(lineno, line, out)
    }
    /// The events still pending at the end of the file.
    fn finish(&mut self, out: &mut Vec<Rc<Event>>);
    /// The file's counts, which reading adds to as well.
    fn info(&mut self) -> &mut InputInfo;
}

/// What -ff files tell about each other.
#[derive(Debug, Default, Clone)]
pub struct Threads {
    /// tid -> tgid (shared by every file's parser)
    pub tgid_of: Arc<SharedTgids>,
    /// tid -> the `<pid changed to N ...>` execve line (number, text)
    pub handover: Arc<strace::Handover>,
    /// tid -> (the tid whose clone/fork made it, made as a thread)
    pub parent: HashMap<u32, (u32, bool)>,
}

impl Dialect for strace::Parser {
    fn at(&mut self, span: Span) {
        strace::Parser::at(self, span)
    }
    fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<Rc<Event>>) {
        strace::Parser::feed_text(self, lineno, line, out)
    }
    fn feed_pre(
        &mut self,
        lineno: u64,
        line: &str,
        pre: Option<&mut PreCall>,
        out: &mut Vec<Rc<Event>>,
    ) {
        strace::Parser::feed_pre(self, lineno, line, pre, out)
    }
    fn finish(&mut self, out: &mut Vec<Rc<Event>>) {
        strace::Parser::finish(self, out)
    }
    fn info(&mut self) -> &mut InputInfo {
        &mut self.info
    }
}

/// Which parser each file gets.
pub trait Dialects {
    /// A parser for `spec` (its tid, and the -ff knowledge when the trace
    /// has several files), counting into `info`; None: no parser for it.
    fn parser(
        &self,
        spec: &FileSpec,
        file: FileId,
        info: InputInfo,
        threads: Option<&Threads>,
    ) -> Option<Box<dyn Dialect>>;
}

/// "a strace", "an …".
fn article(fmt: &str) -> String {
    let a = if fmt.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{a} {fmt}")
}

/// The events of one file, then its info into `infos[idx]`.
pub struct FileEvents {
    /// None while `chunked` reads the lines
    lines: Option<CleanLines>,
    chunked: Option<Chunked<PreCall>>,
    /// a read error the chunked reading met, after the events before it
    failed: Option<InputError>,
    /// where the chunk count goes
    chunks: Rc<Cell<u64>>,
    parser: Box<dyn Dialect>,
    out: VecDeque<Rc<Event>>,
    buf: Vec<Rc<Event>>,
    done: bool,
    finished: bool,
    path: String,
    fmt: &'static str,
    idx: usize,
    infos: Rc<RefCell<Vec<InputInfo>>>,
}

impl FileEvents {
    /// One batch of the chunked reading through the parser.
    fn feed_batch(&mut self, c: &mut Chunked<PreCall>) {
        let Some(mut b) = c.next_batch() else {
            // only after an end or an error, which ended the reading
            self.finished = true;
            return;
        };
        let mut pre = std::mem::take(&mut b.pre);
        for (item, pre) in b.items.iter().zip(&mut pre) {
            match *item {
                Item::Line(n, s, e, at) => {
                    self.parser.at(at);
                    self.parser
                        .feed_pre(n, b.line(s, e), pre.as_mut(), &mut self.buf)
                }
                Item::Long => self.parser.info().lines += 1,
                Item::Counts(ref d) => chunked::add_counts(self.parser.info(), d),
                Item::Err(ref e) => {
                    self.failed = Some(e.clone());
                    break;
                }
                Item::End => {
                    self.parser.finish(&mut self.buf);
                    self.finished = true;
                }
            }
        }
        b.pre = pre;
        c.recycle(b);
        self.chunks.set(c.chunks);
    }

    /// The parser's new events become the queue (`out` is empty here): the
    /// two trade buffers instead of moving each event across.
    fn take_buf(&mut self) {
        debug_assert!(self.out.is_empty());
        let empty = Vec::from(std::mem::take(&mut self.out));
        self.out = VecDeque::from(std::mem::replace(&mut self.buf, empty));
    }

    fn end(&mut self) -> Option<Result<Rc<Event>, InputError>> {
        self.done = true;
        let info = std::mem::take(self.parser.info());
        // a strace log of only strace's own messages (attach, detach, a
        // call cut short by a detach) is recognized, with no complete
        // event: a trace-incomplete note, not an unrecognized input
        let only_messages = self.fmt == "strace" && info.unparsed == 0;
        let bad = info.events == 0 && info.lines > info.preamble && !only_messages;
        self.infos.borrow_mut()[self.idx] = info;
        bad.then(|| {
            Err(input_error(
                &self.path,
                &format!("no line parses as {} log", article(self.fmt)),
            ))
        })
    }
}

impl Iterator for FileEvents {
    type Item = Result<Rc<Event>, InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(ev) = self.out.pop_front() {
                return Some(Ok(ev));
            }
            if self.done {
                return None;
            }
            if let Some(e) = self.failed.take() {
                self.done = true;
                let info = self.parser.info().clone();
                self.infos.borrow_mut()[self.idx] = info;
                return Some(Err(e));
            }
            if self.finished {
                // every event is out: the info is complete
                self.chunked = None;
                return self.end();
            }
            if let Some(mut c) = self.chunked.take() {
                self.feed_batch(&mut c);
                self.chunked = Some(c);
                self.take_buf();
                continue;
            }
            let lines = self.lines.as_mut().expect("lines or chunks");
            match lines.next_at(self.parser.info()) {
                Err(e) => {
                    self.done = true;
                    let info = self.parser.info().clone();
                    self.infos.borrow_mut()[self.idx] = info;
                    return Some(Err(e));
                }
                Ok(Some((_, None, _))) => self.parser.info().lines += 1,
                Ok(Some((lineno, Some(line), at))) => {
                    self.parser.at(at);
                    self.parser.feed(lineno, &line, &mut self.buf);
                    // the usual line makes one event or none: it goes out
                    // as it is (`out` is empty here), without the trade
                    match self.buf.len() {
                        0 => {}
                        1 => return self.buf.pop().map(Ok),
                        _ => self.take_buf(),
                    }
                }
                Ok(None) => {
                    self.parser.finish(&mut self.buf);
                    self.take_buf();
                    self.finished = true;
                }
            }
        }
    }
}

/// One TRACE argument.
pub struct Trace<D: Dialects> {
    pub arg: String,
    pub files: Vec<FileSpec>,
    /// per file, filled as its events are read
    pub infos: Rc<RefCell<Vec<InputInfo>>>,
    pub max_line: usize,
    /// tests: files a merge may hold open
    pub max_open: usize,
    /// the first file's FileId; the others follow
    pub first_id: u32,
    /// --jobs: threads that pre-parse a one-file trace's lines
    pub jobs: usize,
    /// lines per chunk of that (tests: any cut)
    pub batch_lines: usize,
    /// smaller plain files are not chunked
    pub min_bytes: u64,
    /// chunks --jobs cut its file into (whichever thread pre-parsed each)
    pub chunks: Rc<Cell<u64>>,
    /// events keep their text even where it can be read back (a consumer
    /// of every event's text: the perfetto report's calls)
    pub keep_text: bool,
    dialects: Rc<D>,
}

impl<D: Dialects + 'static> Trace<D> {
    pub fn new(arg: &str, files: Vec<FileSpec>, max_line: usize, dialects: D) -> Self {
        let infos = files
            .iter()
            .map(|f| {
                let mut i = InputInfo::new(Text::from(f.path.as_str()));
                i.format = f.format;
                i.layout = f.layout_text.as_str().into();
                i
            })
            .collect();
        Trace {
            arg: arg.to_string(),
            files,
            infos: Rc::new(RefCell::new(infos)),
            max_line,
            max_open: open_budget(),
            first_id: 0,
            jobs: 1,
            batch_lines: chunked::BATCH_LINES,
            min_bytes: chunked::MIN_BYTES,
            chunks: Rc::new(Cell::new(0)),
            keep_text: false,
            dialects: Rc::new(dialects),
        }
    }

    /// Whether --jobs cuts this (the trace's only) file: a strace or
    /// preload log, a pipe or a file of at least `min_bytes`.
    fn chunkable(&self, spec: &FileSpec) -> bool {
        self.jobs > 1
            && matches!(spec.format, Format::Strace | Format::Preload)
            && (spec.stream.is_some()
                || std::fs::metadata(&spec.path).is_ok_and(|m| m.len() >= self.min_bytes))
    }

    pub fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn file_events(
        &self,
        i: usize,
        spec: &mut FileSpec,
        threads: Option<&Threads>,
        chunk: usize,
        jobs: usize,
    ) -> Result<FileEvents, InputError> {
        let info = self.infos.borrow()[i].clone();
        // evidence by reference where the input can be read again
        let refer = !self.keep_text && spec.stream.is_none() && !is_stream(&spec.path);
        let r = spec.open()?;
        let fid = FileId(self.first_id + i as u32);
        let Some(parser) = self.dialects.parser(spec, fid, info, threads) else {
            return Err(input_error(
                &spec.path,
                &format!(
                    "the {} dialect is not ported to Rust yet",
                    spec.format.name()
                ),
            ));
        };
        // a small file of many gets a buffer its size, not a whole chunk
        // (zeroing 64 KiB for each of 10^5 files of a few lines dominated)
        let chunk = match std::fs::metadata(&spec.path) {
            Ok(m) if m.is_file() => chunk.min((m.len() as usize + 1).max(4096)),
            _ => chunk,
        };
        let lines = CleanLines::new(r, &spec.path, spec.layout.clone(), self.max_line, chunk)
            .by_reference(refer);
        let (lines, chunked) = if jobs > 1 {
            match Chunked::new(
                lines,
                &spec.path,
                fid,
                jobs,
                self.batch_lines,
                strace::pre_parse_batch,
            ) {
                Ok(c) => (None, Some(c)),
                Err(lines) => (Some(lines), None),
            }
        } else {
            (Some(lines), None)
        };
        Ok(FileEvents {
            lines,
            chunked,
            failed: None,
            chunks: self.chunks.clone(),
            parser,
            out: VecDeque::new(),
            buf: Vec::new(),
            done: false,
            finished: false,
            path: spec.path.clone(),
            fmt: spec.format.name(),
            idx: i,
            infos: self.infos.clone(),
        })
    }

    /// The merged stream in completion order; seq unique in the trace.
    /// Consumes the files (a pipe is read once).
    pub fn events(mut self) -> Box<dyn Iterator<Item = Result<Rc<Event>, InputError>>>
    where
        Event: Spill,
    {
        let mut files = std::mem::take(&mut self.files);
        if files.len() == 1 {
            let jobs = if self.chunkable(&files[0]) {
                self.jobs
            } else {
                1
            };
            let one = self.file_events(0, &mut files[0], None, CHUNK, jobs);
            return Box::new(with_seq(match one {
                Ok(evs) => Box::new(evs) as Box<dyn Iterator<Item = _>>,
                Err(e) => Box::new(std::iter::once(Err(e))),
            }));
        }
        let threads = match ff_threads(&files, self.max_line, &*self.dialects) {
            Ok(t) => Rc::new(t),
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let order = parents_first(&files, &threads.parent);
        let chunk = if files.len() <= 8 { CHUNK } else { MERGE_CHUNK };
        let mut slots: Vec<Option<FileSpec>> = files.into_iter().map(Some).collect();
        let me = Rc::new(self);
        let makers: Vec<Maker<Rc<Event>>> = order
            .into_iter()
            .enumerate()
            .map(|(pos, i)| {
                let mut spec = slots[i].take().expect("each file once");
                let me = me.clone();
                let threads = threads.clone();
                Box::new(move || -> Stream<Rc<Event>> {
                    match me.file_events(i, &mut spec, Some(&threads), chunk, 1) {
                        Ok(evs) => Box::new(keyed(evs, pos as u32)),
                        Err(e) => Box::new(std::iter::once(Err(e))),
                    }
                }) as Maker<Rc<Event>>
            })
            .collect();
        let merged = bounded_merge(makers, me.max_open);
        Box::new(with_seq(Box::new(merged.map(|r| r.map(|(_, ev)| ev)))))
    }
}

fn with_seq(
    evs: Box<dyn Iterator<Item = Result<Rc<Event>, InputError>>>,
) -> impl Iterator<Item = Result<Rc<Event>, InputError>> {
    let mut seq = 0;
    let mut failed = false;
    evs.map_while(move |r| {
        if failed {
            return None;
        }
        Some(match r {
            Ok(mut ev) => {
                own(&mut ev).h.seq = seq;
                seq += 1;
                Ok(ev)
            }
            Err(e) => {
                failed = true;
                Err(e)
            }
        })
    })
}

/// A file's events with their merge [`Key`]s.
fn keyed(evs: FileEvents, idx: u32) -> impl Iterator<Item = Result<(Key, Rc<Event>), InputError>> {
    let mut last = f64::NEG_INFINITY;
    let mut n = 0;
    evs.map(move |r| {
        r.map(|ev| {
            if let Some(end) = ev.h.end()
                && end > last
            {
                last = end;
            }
            n += 1;
            (Key { last, idx, n }, ev)
        })
    })
}

/// tid -> tgid for -ff files from a pre-pass over their clone lines, the
/// execve lines that end `<pid changed to N ...>`, and who made each tid.
pub fn ff_threads<D: Dialects + ?Sized>(
    files: &[FileSpec],
    max_line: usize,
    dialects: &D,
) -> Result<Threads, InputError> {
    let mut t = Threads::default();
    let tids: Vec<u32> = {
        let mut seen = HashSet::new();
        files
            .iter()
            .filter_map(|f| f.tid)
            .filter(|x| seen.insert(*x))
            .collect()
    };
    if tids.is_empty() {
        return Ok(t);
    }
    let mut handover = HashMap::new();
    for f in files {
        let Some(tid) = f.tid else { continue };
        if f.format != Format::Strace || f.stream.is_some() {
            continue;
        }
        let mut info = InputInfo::new(Text::from(f.path.as_str()));
        let r = open_path(&f.path)?;
        let Some(mut p) = dialects.parser(f, FileId(0), info.clone(), None) else {
            continue;
        };
        let mut lines = CleanLines::new(r, &f.path, f.layout.clone(), max_line, MERGE_CHUNK);
        let mut out = Vec::new();
        while let Some((lineno, line)) = lines.next(&mut info)? {
            let Some(line) = line else { continue };
            if line.contains("<pid changed to ") {
                handover.insert(tid, (lineno, line.as_bytes().to_vec()));
                continue;
            }
            if !line.contains("clone") && !line.contains("fork") && !line.contains("syscall_0x1b3")
            {
                continue;
            }
            p.feed(lineno, &line, &mut out);
            for ev in out.drain(..) {
                note_clone(&mut t.parent, &ev, tid);
            }
        }
        p.finish(&mut out);
        for ev in out.drain(..) {
            note_clone(&mut t.parent, &ev, tid);
        }
    }
    let mut tgid: HashMap<u32, u32> = HashMap::new();
    for &x in &tids {
        // walk up the thread parents without recursion; a cycle (two files
        // naming each other) stops at the first repeat
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut g = x;
        while !tgid.contains_key(&g) {
            match t.parent.get(&g) {
                Some(&(pr, true)) if !seen.contains(&g) => {
                    seen.insert(g);
                    chain.push(g);
                    g = pr;
                }
                _ => break,
            }
        }
        let root = *tgid.get(&g).unwrap_or(&g);
        tgid.insert(g, root);
        for c in chain {
            tgid.insert(c, root);
        }
    }
    t.tgid_of = Arc::new(SharedTgids::new(tgid));
    t.handover = Arc::new(handover);
    Ok(t)
}

fn note_clone(parent: &mut HashMap<u32, (u32, bool)>, ev: &Event, tid: u32) {
    if !matches!(ev.name.as_ref(), "clone" | "clone3" | "fork" | "vfork") {
        return;
    }
    let Some(ret) = ev.h.ret.filter(|&r| r > 0 && r != tid as i64) else {
        return;
    };
    let Ok(ret) = u32::try_from(ret) else { return };
    let thread = matches!(&ev.kind, Kind::Clone(c) if c.thread);
    parent.insert(ret, (tid, thread));
}

/// The files in merge order: each after the file of the tid that made it,
/// otherwise as listed.
pub fn parents_first(files: &[FileSpec], parent: &HashMap<u32, (u32, bool)>) -> Vec<usize> {
    let mut at: HashMap<u32, usize> = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if let Some(t) = f.tid {
            at.insert(t, i);
        }
    }
    let mut order = Vec::new();
    let mut placed = vec![false; files.len()];
    for i in 0..files.len() {
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut j = Some(i);
        while let Some(k) = j {
            if placed[k] || seen.contains(&k) {
                break; // a cycle stops
            }
            chain.push(k);
            seen.insert(k);
            j = files[k]
                .tid
                .and_then(|t| parent.get(&t))
                .and_then(|&(made_by, _)| at.get(&made_by).copied());
        }
        for &k in chain.iter().rev() {
            placed[k] = true;
            order.push(k);
        }
    }
    order
}

#[cfg(test)]
mod evidence_tests;
#[cfg(test)]
mod tests;
