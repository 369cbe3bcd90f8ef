//! Evidence by reference, read back (SPEC 7): an event carries where its
//! line is in its input ([`Source`]), not a copy of it; when a report is
//! written, the texts of the events it cites are read back from their
//! inputs, each input opened once and read in the order of the offsets
//! (a seek for each line of a plain file, one pass of the decompressor
//! over a compressed one), so a report with 10^5 evidence lines stays
//! linear.
//!
//! Inputs that cannot be read twice (stdin, a pipe, a FIFO) never get here:
//! their events keep the text ([`Source::kept`]).  An input that changed
//! since it was read (its size or modification time differ), or is gone,
//! gives a note in the text's place, never another line's text.

use super::compress::{self, compression_of};
use super::lines::decode;
use super::open::{FileSpec, is_stream};
use crate::events::{Event, SPLIT_JOIN, Span, Text};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::time::SystemTime;

/// An input as it was when it was read: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    mtime: Option<SystemTime>,
}

impl Stamp {
    /// The stamp of a regular file now (None: not one, or gone).
    pub fn of(path: &str) -> Option<Stamp> {
        let m = fs::metadata(path).ok().filter(fs::Metadata::is_file)?;
        Some(Stamp {
            len: m.len(),
            mtime: m.modified().ok(),
        })
    }
}

/// What reading back needs of one input of a run (by [`crate::events::FileId`]).
#[derive(Debug, Clone)]
pub struct Origin {
    pub path: String,
    /// None: it cannot be read again (its events kept their text)
    pub stamp: Option<Stamp>,
}

/// The inputs of a run as they are before they are read.
pub fn origins(files: &[FileSpec]) -> Vec<Origin> {
    files
        .iter()
        .map(|f| Origin {
            path: f.path.clone(),
            stamp: (f.stream.is_none() && !is_stream(&f.path))
                .then(|| Stamp::of(&f.path))
                .flatten(),
        })
        .collect()
}

/// The UTF-8 byte order mark the reading drops before the first line
/// (compress.rs): a plain file's offsets start after it.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// How far a plain file is read past a wanted line for the wanted lines
/// after it: dense evidence costs one read a window, sparse one a line.
const WINDOW: usize = 256 << 10;

/// A line's bytes as the reader decoded them (`\xNN` for a byte that is
/// not UTF-8): the text the parser was fed.
fn text_of(bytes: &[u8]) -> Text {
    match std::str::from_utf8(bytes) {
        Ok(_) => Text::from(bytes),
        Err(_) => Text::from(decode(bytes).as_str()),
    }
}

/// The texts of `spans` (sorted by offset, no two overlapping) of one
/// input, in their order; Err: why none can be had.
fn read_spans(o: &Origin, spans: &[Span]) -> Result<Vec<Text>, String> {
    let changed = || "it changed since it was read".to_string();
    let stamp = o.stamp.ok_or("it can be read only once")?;
    match Stamp::of(&o.path) {
        None => return Err("it is gone".into()),
        Some(now) if now != stamp => return Err(changed()),
        Some(_) => {}
    }
    let why = |e: io::Error| super::why(&e);
    let mut f = File::open(&o.path).map_err(why)?;
    let head = compress::read_full(&mut f, compress::MAGIC_LEN).map_err(why)?;
    let mut out = Vec::with_capacity(spans.len());
    let short = || "it is shorter than when it was read".to_string();
    let mut fresh = false;
    match compression_of(&head) {
        None => {
            let base = if head.starts_with(BOM) { BOM.len() } else { 0 } as u64;
            // buf holds the file's bytes from `at`: this line's, and those
            // of the lines after it within a window
            let (mut buf, mut at) = (Vec::new(), 0u64);
            for (i, s) in spans.iter().enumerate() {
                let (off, len) = (base + s.off, s.len as usize);
                let end = off + len as u64;
                if off < at || end > at + buf.len() as u64 {
                    let last = spans[i..]
                        .iter()
                        .map(|t| base + t.off + u64::from(t.len))
                        .take_while(|&e| e - off <= WINDOW as u64)
                        .last()
                        .unwrap_or(end)
                        .max(end);
                    buf.clear();
                    buf.resize((last - off) as usize, 0);
                    let n = read_at(&f, &mut buf, off).map_err(why)?;
                    at = off;
                    if n < buf.len() {
                        return Err(short());
                    }
                }
                let from = (off - at) as usize;
                let b = &buf[from..from + len];
                fresh |= b.contains(&b'\n');
                out.push(text_of(b));
            }
        }
        Some(kind) => {
            let mut r = compress::decoder(Some(kind), head, f).map_err(str::to_string)?;
            let mut pos = 0u64;
            let mut b = Vec::new();
            for s in spans {
                let skip = s.off.checked_sub(pos).ok_or_else(changed)?;
                let got = io::copy(&mut (&mut r).take(skip), &mut io::sink()).map_err(why)?;
                if got < skip {
                    return Err(short());
                }
                b.resize(s.len as usize, 0);
                r.read_exact(&mut b).map_err(|_| short())?;
                pos = s.off + u64::from(s.len);
                fresh |= b.contains(&b'\n');
                out.push(text_of(&b));
            }
        }
    }
    // a line with a newline in it, or a stamp that moved while reading: a
    // file rewritten within the modification time's granularity, or now
    if fresh || Stamp::of(&o.path) != Some(stamp) {
        return Err(changed());
    }
    Ok(out)
}

/// Up to `buf.len()` bytes at `off` (fewer only at the end of the file).
fn read_at(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The note in the place of a text that cannot be read back.
fn note(o: &Origin, line: u64, why: &str) -> Text {
    Text::from(format!("[line {line} of {} cannot be read back: {why}]", o.path).as_str())
}

/// An input's spans, sorted, and their texts.
type Texts = (Vec<Span>, Vec<Text>);

/// The text of every event of `events` that refers to its line(s), read
/// back from `origins` (the run's inputs, by FileId) into the event's
/// [`Source::text`]; the events that kept their text are left alone.
pub fn fill<'a>(events: impl IntoIterator<Item = &'a mut Event>, origins: &[Origin]) {
    let mut evs: Vec<&mut Event> = events
        .into_iter()
        .filter(|e| e.h.src.by_reference())
        .collect();
    if evs.is_empty() {
        return;
    }
    // per input, the spans wanted, sorted and once each
    let mut wanted: HashMap<u32, Vec<Span>> = HashMap::new();
    for e in &evs {
        let w = wanted.entry(e.h.file.0).or_default();
        w.push(e.h.src.at);
        if e.h.src.resumed.is_some() {
            w.push(e.h.src.resumed);
        }
    }
    // per input: its spans and their texts, or why they cannot be had
    let mut got: HashMap<u32, Result<Texts, String>> = HashMap::new();
    for (file, mut spans) in wanted {
        spans.sort_unstable();
        spans.dedup();
        let read = match origins.get(file as usize) {
            Some(o) => read_spans(o, &spans),
            None => Err("its input is unknown".into()),
        };
        got.insert(file, read.map(|texts| (spans, texts)));
    }
    let unknown = Origin {
        path: "-".into(),
        stamp: None,
    };
    for e in &mut evs {
        let (file, src) = (e.h.file.0, &e.h.src);
        let text = match &got[&file] {
            Err(why) => note(
                origins.get(file as usize).unwrap_or(&unknown),
                e.h.line,
                why,
            ),
            Ok((spans, texts)) => {
                let of = |s: &Span| &texts[spans.binary_search(s).expect("read")];
                if src.resumed.is_some() {
                    let (a, b) = (of(&src.at).as_bytes(), of(&src.resumed).as_bytes());
                    Text::from([a, SPLIT_JOIN.as_bytes(), b].concat().as_slice())
                } else {
                    // shared with every event of this line
                    of(&src.at).clone()
                }
            }
        };
        e.h.src.text = Some(text);
    }
}
