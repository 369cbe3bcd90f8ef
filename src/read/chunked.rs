//! `--jobs N` on one file: its lines are read in batches (chunks), and
//! each batch's state-free parse (the dialect's pre-parse, strace's
//! `pre_parse`: tokenizing, the syscall's normalized event) runs on one of
//! N threads -- N - 1 workers and the parsing thread itself -- and the
//! batches come back in order for the parser's state-dependent rest (pids,
//! split calls, held events, frames) and the replay on the parsing thread.
//!
//! Why this and not parsers seeded per chunk and their results stitched
//! (the retired Python engine's way): what the pre-parse does reads no
//! parser state, so the result is the sequential parse whatever the cut
//! points -- inside an `<unfinished ...>`/`resumed` pair, a multi-line
//! record, a `#+` continuation, before a `+++`: there is nothing to stitch,
//! no case to fall back from, and it works on pipes too.  The reading
//! stays one pass with the sequential reader, so over-long lines, the
//! layout clean-up and what they count come out in the same order.
//!
//! Threads: the reader is a shared source, not a thread: a worker takes
//! the next batch from it (reads it, under its lock, in file order, with
//! its sequence number), pre-parses it and puts it in its place in the
//! order; the parsing thread takes the batches in order and, when the next
//! one is not ready yet, takes and pre-parses the source's next batch
//! itself rather than wait.  On two cores, `--jobs 2` is then two threads
//! that both stay busy (a reader thread and two workers beside the parsing
//! thread were four threads handing each batch over twice: 20,000 context
//! switches on a 2M-line log).
//!
//! Memory: at most [`IN_FLIGHT`] batches of [`BATCH_LINES`] lines taken
//! and not yet parsed, and the batches parsed since a worker last ran.

use super::InputError;
use super::lines::CleanLines;
use crate::events::{FileId, InputInfo, Span, Text};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

/// Files smaller than this are parsed on one thread.
pub const MIN_BYTES: u64 = 2 << 20;
/// Lines per batch.  Memory grows with it (a pre-parsed line with its
/// event is about 1 KB, and freed on another thread than made it): peak
/// RSS of --jobs 2 on a strace log was +8 MB at 128 lines, +22 MB at 512,
/// +44 MB at 2048.  On the 1M-line preload benchmark log (longer lines,
/// bigger events) --jobs 2 peaked at 63 MiB with 512, 55 with 256 and 52
/// with 128 (1.95 s at 256 against 2.19 s at 512; the 2M-line strace log
/// 1.34 s and 44 MiB either way).
pub const BATCH_LINES: usize = 256;
/// Bytes of text per batch at most (a batch of long lines ends sooner).
const BATCH_BYTES: usize = 1 << 20;
/// Batches taken from the source and not yet handed to the parse, at most.
pub const IN_FLIGHT: usize = 6;

/// One step of the sequential reading, in file order.
#[derive(Debug)]
pub enum Item {
    /// a line: its number, where its text is in the batch, and where it
    /// is in the input (nowhere: its events keep their text)
    Line(u64, u32, u32, Span),
    /// an over-long line (counted in info.lines only)
    Long,
    /// what reading counted into the file's info right here
    Counts(Box<InputInfo>),
    /// reading failed here
    Err(InputError),
    /// the end of the file
    End,
}

/// A run of items and, once pre-parsed, each line's pre-parse.
#[derive(Debug)]
pub struct Batch<P> {
    pub text: String,
    pub items: Vec<Item>,
    /// per item (None: not a complete call, or not a line)
    pub pre: Vec<Option<P>>,
    /// the worker that read and pre-parsed it (None: the parsing thread),
    /// which frees it once parsed
    owner: Option<usize>,
}

/// A pre-parse of one batch: per item, what of each line needs no
/// parser state (the dialect may carry state from line to line within the
/// batch: strace joins a resumed line with its entry there).
pub type PreParse<P> = fn(FileId, &Batch<P>) -> Vec<Option<P>>;

impl<P> Batch<P> {
    pub fn line(&self, start: u32, end: u32) -> &str {
        &self.text[start as usize..end as usize]
    }
}

/// What reading counted: into `info` in the order the sequential reader
/// counts it (the unparsed samples keep their order).
pub fn add_counts(info: &mut InputInfo, d: &InputInfo) {
    info.lines += d.lines;
    info.preamble += d.preamble;
    info.too_long += d.too_long;
    for (line, text) in &d.unparsed_samples {
        info.add_unparsed(*line, text.as_bytes());
    }
    info.unparsed += d.unparsed - d.unparsed_samples.len() as u64;
    info.ends_mid_line |= d.ends_mid_line;
    info.crlf |= d.crlf;
}

/// The reading: the sequential reader, counting into a scratch info that
/// becomes a [`Item::Counts`] wherever it changed.
struct Reader {
    lines: CleanLines,
    scratch: InputInfo,
    blank: InputInfo,
    /// flags already handed on (the reader reports them on every line)
    crlf: bool,
    mid: bool,
    done: bool,
    batch_lines: usize,
    /// bytes of text the last batch held
    text_size: usize,
    /// the next batch's number
    seq: u64,
}

impl Reader {
    fn counts(&mut self, items: &mut Vec<Item>) {
        let s = &self.scratch;
        let new_crlf = s.crlf && !self.crlf;
        let new_mid = s.ends_mid_line && !self.mid;
        if s.lines == 0
            && s.preamble == 0
            && s.too_long == 0
            && s.unparsed == 0
            && !new_crlf
            && !new_mid
        {
            return;
        }
        self.crlf |= s.crlf;
        self.mid |= s.ends_mid_line;
        let d = std::mem::replace(&mut self.scratch, self.blank.clone());
        items.push(Item::Counts(Box::new(d)));
    }

    /// The next batch and its number; None once the end or an error was
    /// read.
    fn batch<P>(&mut self, owner: Option<usize>) -> Option<(u64, Batch<P>)> {
        if self.done {
            return None;
        }
        let mut b = Batch {
            items: Vec::with_capacity(self.batch_lines + 2),
            // the last batch's size: growing the text from empty was a
            // fifth of the reading (reallocations and copies)
            text: String::with_capacity(self.text_size),
            pre: Vec::new(),
            owner,
        };
        while !self.done && b.items.len() < self.batch_lines && b.text.len() < BATCH_BYTES {
            let got = self.lines.next(&mut self.scratch);
            // the counts of reading a line come before the line
            let item = match got {
                Err(e) => {
                    self.done = true;
                    Item::Err(e)
                }
                Ok(None) => {
                    self.done = true;
                    Item::End
                }
                Ok(Some((_, None))) => Item::Long,
                Ok(Some((n, Some(t)))) => {
                    let s = b.text.len() as u32;
                    b.text.push_str(&t);
                    Item::Line(n, s, b.text.len() as u32, self.lines.span())
                }
            };
            self.counts(&mut b.items);
            b.items.push(item);
        }
        self.text_size = b.text.len().clamp(4096, BATCH_BYTES + 4096);
        self.seq += 1;
        Some((self.seq - 1, b))
    }
}

/// What the threads share besides the reading.
struct Order<P> {
    /// the batches from number `got` on, in order (None: taken, not yet
    /// pre-parsed)
    ready: VecDeque<Option<Batch<P>>>,
    /// the next batch the parse takes
    got: u64,
    /// batches taken from the source (or about to be) and not yet handed
    /// to the parse
    taken: usize,
    /// per worker, the batches parsed that it is to free
    spent: Vec<Vec<Batch<P>>>,
    /// the source gave its last batch
    read_all: bool,
    /// the parsing thread waits for batch `got`
    parse_waits: bool,
    /// workers waiting for room
    room_waits: usize,
    /// the parse is gone (nobody takes batches any more)
    gone: bool,
    /// a worker panicked
    failed: bool,
}

struct Shared<P> {
    source: Mutex<Reader>,
    order: Mutex<Order<P>>,
    /// batch `got` is ready (or a worker failed)
    ready: Condvar,
    /// room for a worker to take a batch (or the parse is gone)
    room: Condvar,
    file: FileId,
    pre: PreParse<P>,
    cap: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a panicking worker marks `failed`; what it held stays consistent
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<P> Shared<P> {
    /// The next batch from the source, pre-parsed by the calling thread,
    /// put in its place; false when the source had none left (the room
    /// `taken` counted for it given back).  `taken` was counted before.
    fn take_one(&self, owner: Option<usize>) -> bool {
        let got = lock(&self.source).batch(owner);
        let Some((seq, mut b)) = got else {
            let mut o = lock(&self.order);
            o.taken -= 1;
            o.read_all = true;
            return false;
        };
        b.pre = (self.pre)(self.file, &b);
        let last = matches!(b.items.last(), Some(Item::End | Item::Err(_)));
        let mut o = lock(&self.order);
        if last {
            o.read_all = true;
        }
        let at = (seq - o.got) as usize;
        while o.ready.len() <= at {
            o.ready.push_back(None);
        }
        o.ready[at] = Some(b);
        if at == 0 && o.parse_waits {
            self.ready.notify_one();
        }
        true
    }
}

/// Marks the order failed if its worker panics (the parse then fails too,
/// instead of waiting for a batch that never comes).
struct FailGuard<'a, P>(&'a Shared<P>);

impl<P> Drop for FailGuard<'_, P> {
    fn drop(&mut self) {
        if thread::panicking() {
            lock(&self.0.order).failed = true;
            self.0.ready.notify_all();
        }
    }
}

fn work<P>(sh: Arc<Shared<P>>, me: usize) {
    let _guard = FailGuard(&sh);
    loop {
        let spent = {
            let mut o = lock(&sh.order);
            loop {
                if o.gone || o.read_all {
                    return;
                }
                if o.taken < sh.cap {
                    break;
                }
                o.room_waits += 1;
                o = sh.room.wait(o).unwrap_or_else(|e| e.into_inner());
                o.room_waits -= 1;
            }
            o.taken += 1;
            std::mem::take(&mut o.spent[me])
        };
        // batches this worker made, freed here, not on the parsing thread
        // (whose work is the serial part), and by the thread that
        // allocated them
        drop(spent);
        if !sh.take_one(Some(me)) {
            return;
        }
    }
}

/// The batches of one file, read and pre-parsed by worker threads and the
/// parsing thread, handed out in file order.
pub struct Chunked<P> {
    sh: Arc<Shared<P>>,
    threads: Vec<JoinHandle<()>>,
    /// parsed batches on their way back to their workers
    spent: Vec<Batch<P>>,
    ended: bool,
    /// batches handed to the parse (a debug stat: how many the file was
    /// cut into, whichever thread pre-parsed each)
    pub chunks: u64,
}

impl<P: Send + 'static> Chunked<P> {
    /// `jobs` threads over `lines` (the file `file`'s): `jobs - 1` workers
    /// and the caller, each running `pre` on the lines of the batches it
    /// takes; the lines back when no worker can be started (the caller
    /// then parses on its own).
    #[allow(clippy::result_large_err)] // once per file
    pub fn new(
        lines: CleanLines,
        path: &str,
        file: FileId,
        jobs: usize,
        batch_lines: usize,
        pre: PreParse<P>,
    ) -> Result<Self, CleanLines> {
        let blank = InputInfo::new(Text::from(path));
        let workers = jobs.max(2) - 1;
        let sh = Arc::new(Shared {
            source: Mutex::new(Reader {
                lines,
                scratch: blank.clone(),
                blank,
                crlf: false,
                mid: false,
                done: false,
                batch_lines: batch_lines.max(1),
                text_size: 4096,
                seq: 0,
            }),
            order: Mutex::new(Order {
                ready: VecDeque::new(),
                got: 0,
                taken: 0,
                spent: (0..workers).map(|_| Vec::new()).collect(),
                read_all: false,
                parse_waits: false,
                room_waits: 0,
                gone: false,
                failed: false,
            }),
            ready: Condvar::new(),
            room: Condvar::new(),
            file,
            pre,
            cap: IN_FLIGHT,
        });
        let mut threads = Vec::new();
        for i in 0..workers {
            let sh = sh.clone();
            let spawned = thread::Builder::new()
                .name(format!("rocrtrace-parse-{i}"))
                .spawn(move || work(sh, i));
            match spawned {
                Ok(h) => threads.push(h),
                Err(_) => break,
            }
        }
        if threads.is_empty() {
            let sh = Arc::into_inner(sh).expect("no worker holds it");
            let r = sh.source.into_inner().unwrap_or_else(|e| e.into_inner());
            return Err(r.lines);
        }
        Ok(Chunked {
            sh,
            threads,
            spent: Vec::new(),
            ended: false,
            chunks: 0,
        })
    }

    /// The next batch in file order, its lines pre-parsed; None after the
    /// batch that held the end (or the read error).
    pub fn next_batch(&mut self) -> Option<Batch<P>> {
        if self.ended {
            return None;
        }
        let sh = &*self.sh;
        let mut o = lock(&sh.order);
        for b in self.spent.drain(..) {
            let w = b.owner.expect("a worker's batch");
            o.spent[w].push(b);
        }
        let b = loop {
            assert!(!o.failed, "a parse thread failed");
            if let Some(Some(_)) = o.ready.front() {
                break o.ready.pop_front().flatten().expect("ready");
            }
            if !o.read_all && o.taken < sh.cap {
                // rather than wait: this thread pre-parses the next batch
                o.taken += 1;
                drop(o);
                sh.take_one(None);
                o = lock(&sh.order);
                continue;
            }
            o.parse_waits = true;
            o = sh.ready.wait(o).unwrap_or_else(|e| e.into_inner());
            o.parse_waits = false;
        };
        o.got += 1;
        o.taken -= 1;
        // a waiting worker is woken once half the room is free, not for
        // each batch
        if o.room_waits > 0 && o.taken <= sh.cap / 2 {
            sh.room.notify_all();
        }
        drop(o);
        self.chunks += 1;
        self.ended = matches!(b.items.last(), Some(Item::End | Item::Err(_)));
        Some(b)
    }

    /// Hand back the batch [`Chunked::next_batch`] gave last, once parsed:
    /// the thread that made it frees it.
    pub fn recycle(&mut self, b: Batch<P>) {
        if b.owner.is_some() {
            self.spent.push(b);
        }
    }
}

impl<P> Drop for Chunked<P> {
    fn drop(&mut self) {
        // nobody takes results: the workers end at their next batch
        let read_all = {
            let mut o = lock(&self.sh.order);
            o.gone = true;
            o.read_all
        };
        self.sh.room.notify_all();
        if read_all {
            for h in self.threads.drain(..) {
                let _ = h.join();
            }
        }
        // else not joined: one may be blocked on a pipe that holds the
        // drop up; it ends once its read returns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::layout::Layout;
    use std::io::Read;
    use std::time::Duration;

    /// (line number, whether a worker pre-parsed it)
    type Tag = (u64, bool);

    fn on_worker() -> bool {
        thread::current()
            .name()
            .is_some_and(|n| n.starts_with("rocrtrace-parse"))
    }

    fn tags(b: &Batch<Tag>) -> Vec<Option<Tag>> {
        let w = on_worker();
        b.items
            .iter()
            .map(|it| match *it {
                Item::Line(n, ..) => Some((n, w)),
                _ => None,
            })
            .collect()
    }

    fn pre_plain(_: FileId, b: &Batch<Tag>) -> Vec<Option<Tag>> {
        tags(b)
    }

    /// A worker that is slow: the parsing thread pre-parses most batches.
    fn pre_slow_worker(_: FileId, b: &Batch<Tag>) -> Vec<Option<Tag>> {
        if on_worker() {
            thread::sleep(Duration::from_millis(2));
        }
        tags(b)
    }

    /// A reader that fails after `ok` bytes (a disk error, a broken
    /// stream), giving at most 100 bytes a read.
    struct Failing {
        data: Vec<u8>,
        at: usize,
        ok: usize,
    }

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.at >= self.ok {
                return Err(std::io::Error::other("the disk is gone"));
            }
            let n = buf.len().min(100).min(self.ok - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn text(n: usize) -> Vec<u8> {
        let mut s = String::new();
        for i in 1..=n {
            if i % 97 == 0 {
                s.push_str(&"x".repeat(300)); // over max_line
            } else {
                s.push_str(&format!("line {i}"));
            }
            s.push('\n');
        }
        s.into_bytes()
    }

    fn lines_of(r: Box<dyn Read + Send>) -> CleanLines {
        CleanLines::new(r, "t.log", Layout::default(), 200, 4096)
    }

    /// What the sequential reader gives: (line number, text) and None for
    /// an over-long line, then the error if any.
    fn sequential(r: Box<dyn Read + Send>) -> (Vec<Option<(u64, String)>>, Option<String>) {
        let mut cl = lines_of(r);
        let mut info = InputInfo::new(Text::from("t.log"));
        let mut out = Vec::new();
        loop {
            match cl.next(&mut info) {
                Ok(Some((n, Some(t)))) => out.push(Some((n, t.into_owned()))),
                Ok(Some((_, None))) => out.push(None),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(format!("{e:?}"))),
            }
        }
    }

    type Handed = (
        Vec<Option<(u64, String)>>,
        Option<String>,
        u64,
        usize,
        usize,
    );

    /// Every batch through `Chunked`, in the order it hands them out:
    /// (the items as [`sequential`] gives them, the error, batches, batches
    /// a worker pre-parsed, batches the parsing thread did).
    fn chunked(
        r: Box<dyn Read + Send>,
        jobs: usize,
        batch: usize,
        pre: PreParse<Tag>,
        slow_parse: bool,
    ) -> Handed {
        let mut c = Chunked::new(lines_of(r), "t.log", FileId(0), jobs, batch, pre)
            .unwrap_or_else(|_| panic!("threads start"));
        let (mut out, mut err, mut by_worker, mut by_me) = (Vec::new(), None, 0, 0);
        let mut batches = 0;
        while let Some(b) = c.next_batch() {
            batches += 1;
            assert_eq!(b.pre.len(), b.items.len());
            let mut worker = None;
            for (it, p) in b.items.iter().zip(&b.pre) {
                match *it {
                    Item::Line(n, s, e, _) => {
                        let &(pn, w) = p.as_ref().expect("each line pre-parsed");
                        assert_eq!(pn, n, "the pre-parse of its own line");
                        assert!(worker.is_none_or(|x| x == w), "one thread a batch");
                        worker = Some(w);
                        out.push(Some((n, b.line(s, e).to_string())));
                    }
                    Item::Long => out.push(None),
                    Item::Err(ref e) => err = Some(format!("{e:?}")),
                    Item::Counts(_) | Item::End => {}
                }
            }
            match worker {
                Some(true) => by_worker += 1,
                Some(false) => by_me += 1,
                None => {}
            }
            if slow_parse {
                thread::sleep(Duration::from_millis(1));
            }
            c.recycle(b);
        }
        assert!(c.next_batch().is_none(), "nothing after the end");
        assert_eq!(c.chunks, batches);
        (out, err, c.chunks, by_worker, by_me)
    }

    #[test]
    fn batches_come_in_file_order_whoever_pre_parses_them() {
        let data = text(3000);
        let (want, no_err) = sequential(Box::new(std::io::Cursor::new(data.clone())));
        assert!(no_err.is_none() && want.len() == 3000);
        for (jobs, batch) in [(2, 1), (2, 7), (3, 7), (2, 256), (4, 3)] {
            for (slow_worker, slow_parse) in [(false, false), (true, false), (false, true)] {
                let pre: PreParse<Tag> = if slow_worker {
                    pre_slow_worker
                } else {
                    pre_plain
                };
                let r = Box::new(std::io::Cursor::new(data.clone()));
                let (got, err, chunks, by_worker, by_me) = chunked(r, jobs, batch, pre, slow_parse);
                assert!(err.is_none());
                assert_eq!(got, want, "jobs {jobs}, batches of {batch}");
                // (an over-long line is two items: its counts, then it)
                let n = 3000u64.div_ceil(batch as u64);
                assert!(
                    chunks >= n && chunks <= (3000 + 2 * 30 + 1),
                    "{chunks} of {batch}"
                );
                if batch == 7 && jobs == 2 {
                    // a slow worker: the parsing thread does most; a slow
                    // parse: the worker does most
                    if slow_worker {
                        assert!(by_me > by_worker, "{by_me} {by_worker}");
                    } else if slow_parse {
                        assert!(by_worker > by_me, "{by_me} {by_worker}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_read_error_mid_file_ends_the_batches_after_the_lines_before_it() {
        let data = text(2000);
        for ok in [0, 1, 5000, 12_345] {
            let r = || {
                Box::new(Failing {
                    data: data.clone(),
                    at: 0,
                    ok,
                })
            };
            let (want, want_err) = sequential(r());
            assert!(want_err.is_some());
            for (jobs, batch) in [(2, 1), (3, 50)] {
                for pre in [pre_plain as PreParse<Tag>, pre_slow_worker] {
                    let (got, err, ..) = chunked(r(), jobs, batch, pre, false);
                    assert_eq!((&got, &err), (&want, &want_err), "{ok} {jobs} {batch}");
                }
            }
        }
    }

    /// The parse stops early (an error of its own, a consumer gone): the
    /// drop neither hangs nor leaves a worker waiting.
    #[test]
    fn an_early_drop_ends_the_workers() {
        let data = text(20_000);
        for jobs in [2, 3] {
            let r = Box::new(std::io::Cursor::new(data.clone()));
            let mut c = Chunked::new(lines_of(r), "t.log", FileId(0), jobs, 5, pre_plain)
                .unwrap_or_else(|_| panic!("threads start"));
            let b = c.next_batch().expect("a batch");
            c.recycle(b);
            // wait until the workers filled the room and sleep
            thread::sleep(Duration::from_millis(20));
            let sh = Arc::downgrade(&c.sh);
            drop(c);
            for _ in 0..200 {
                if sh.strong_count() == 0 {
                    break;
                }
                thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(sh.strong_count(), 0, "a worker still runs");
        }
    }
}
