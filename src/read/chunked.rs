//! `--jobs N` on one file: its lines are read in batches (chunks),
//! each batch's state-free parse (the dialect's pre-parse, strace's
//! `pre_parse`: tokenizing, the syscall's normalized event) runs on one of
//! N worker threads, and the
//! batches come back in order for the parser's state-dependent rest (pids,
//! split calls, held events, frames) and the replay on this thread.
//!
//! Why this and not parsers seeded per chunk and their results stitched
//! (the retired Python engine's way): what runs on a worker reads no
//! parser state, so the result is the sequential parse whatever the cut
//! points -- inside an `<unfinished ...>`/`resumed` pair, a multi-line
//! record, a `#+` continuation, before a `+++`: there is nothing to stitch,
//! no case to fall back from, and it works on pipes too.  The reading
//! stays one pass with the sequential reader, so over-long lines, the
//! layout clean-up and what they count come out in the same order.
//!
//! Threads: one reads, N pre-parse, this one parses the rest and replays.
//! Memory: at most `3 × N + 1` batches of [`BATCH_LINES`] lines in flight.

use super::InputError;
use super::lines::CleanLines;
use crate::events::{FileId, InputInfo, Span, Text};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
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

/// A run of items and, once a worker had it, each line's pre-parse.
#[derive(Debug)]
pub struct Batch<P> {
    pub text: String,
    pub items: Vec<Item>,
    /// per item (None: not a complete call, or not a line)
    pub pre: Vec<Option<P>>,
}

/// A worker's pre-parse of one batch: per item, what of each line needs no
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

/// The reading side: the sequential reader, counting into a scratch info
/// that becomes a [`Item::Counts`] wherever it changed.
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

    fn batch<P>(&mut self) -> Batch<P> {
        let mut b = Batch {
            items: Vec::with_capacity(self.batch_lines + 2),
            // the last batch's size: growing the text from empty was a
            // fifth of this thread's work (reallocations and copies)
            text: String::with_capacity(self.text_size),
            pre: Vec::new(),
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
        b
    }
}

/// The batches of one file, read on a thread of their own, pre-parsed by
/// worker threads, handed out in file order.
pub struct Chunked<P> {
    from: Vec<Receiver<Batch<P>>>,
    /// batches the parse is done with, back to the worker that had them
    spent: Vec<Sender<Batch<P>>>,
    threads: Vec<JoinHandle<()>>,
    got: usize,
    ended: bool,
    /// batches that went through a worker (a debug stat)
    pub chunks: u64,
}

fn work<P>(
    file: FileId,
    pre: PreParse<P>,
    jobs: Receiver<Batch<P>>,
    spent: Receiver<Batch<P>>,
    done: SyncSender<Batch<P>>,
) {
    // a spent batch (its text, what of its pre-parse the parse left) is
    // freed here, not on the parsing thread, whose work is the serial part
    let free = || while spent.try_recv().is_ok() {};
    for mut b in jobs {
        free();
        b.pre = pre(file, &b);
        free();
        if done.send(b).is_err() {
            return;
        }
    }
}

/// Batch k to worker k mod n; each worker's queue holds one, so the
/// reading stays a few batches ahead of the parse.
fn read<P>(
    lines: Receiver<CleanLines>,
    blank: InputInfo,
    batch_lines: usize,
    to: Vec<SyncSender<Batch<P>>>,
) {
    let Ok(lines) = lines.recv() else { return };
    let mut r = Reader {
        lines,
        scratch: blank.clone(),
        blank,
        crlf: false,
        mid: false,
        done: false,
        batch_lines,
        text_size: 4096,
    };
    let mut k = 0;
    while !r.done {
        if to[k % to.len()].send(r.batch()).is_err() {
            return; // the consumer is gone
        }
        k += 1;
    }
}

impl<P: Send + 'static> Chunked<P> {
    /// A reader thread and `jobs` workers over `lines` (the file `file`'s),
    /// each worker running `pre` on the lines of its batches; the lines
    /// back when no thread can be started (the caller then parses on its
    /// own).
    #[allow(clippy::result_large_err)] // once per file
    pub fn new(
        lines: CleanLines,
        path: &str,
        file: FileId,
        jobs: usize,
        batch_lines: usize,
        pre: PreParse<P>,
    ) -> Result<Self, CleanLines> {
        let mut to = Vec::new();
        let mut from = Vec::new();
        let mut spent = Vec::new();
        let mut threads = Vec::new();
        for i in 0..jobs.max(1) {
            let (jtx, jrx) = sync_channel(1);
            let (dtx, drx) = sync_channel(1);
            let (stx, srx) = channel();
            let spawned = thread::Builder::new()
                .name(format!("rocrtrace-parse-{i}"))
                .spawn(move || work(file, pre, jrx, srx, dtx));
            match spawned {
                Ok(h) => {
                    threads.push(h);
                    to.push(jtx);
                    from.push(drx);
                    spent.push(stx);
                }
                Err(_) => break,
            }
        }
        let (ltx, lrx) = sync_channel(1);
        let blank = InputInfo::new(Text::from(path));
        let batch_lines = batch_lines.max(1);
        let spawned = (!to.is_empty()).then(|| {
            thread::Builder::new()
                .name("rocrtrace-read".into())
                .spawn(move || read(lrx, blank, batch_lines, to))
        });
        let me = Chunked {
            from,
            spent,
            threads,
            got: 0,
            ended: false,
            chunks: 0,
        };
        match spawned {
            // the reader is not joined: blocked on a pipe it could hold a
            // drop up; it ends at its next hand-over once nobody takes it
            Some(Ok(_)) => {
                // the reader waits for its lines: it cannot be gone
                ltx.send(lines).expect("the reader thread runs");
                Ok(me)
            }
            _ => Err(lines),
        }
    }

    /// The next batch in file order, its lines pre-parsed; None after the
    /// batch that held the end (or the read error).
    pub fn next_batch(&mut self) -> Option<Batch<P>> {
        if self.ended {
            return None;
        }
        let n = self.from.len();
        let b = self.from[self.got % n]
            .recv()
            .expect("a parse thread failed");
        self.got += 1;
        self.chunks += 1;
        self.ended = matches!(b.items.last(), Some(Item::End | Item::Err(_)));
        Some(b)
    }

    /// Hand back the batch [`Chunked::next_batch`] gave last, once parsed:
    /// the worker that pre-parsed it frees it (a worker gone: freed here).
    pub fn recycle(&mut self, b: Batch<P>) {
        let n = self.spent.len();
        let _ = self.spent[(self.got + n - 1) % n].send(b);
    }
}

impl<P> Drop for Chunked<P> {
    fn drop(&mut self) {
        // nobody takes results: the workers end, then the reader
        self.from.clear();
        self.spent.clear();
        // (the workers only: see new)
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
