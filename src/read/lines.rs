//! The streaming line splitter: `\n` only,
//! a `\r` before it dropped, bytes that are not UTF-8 written `\xNN`, lines
//! over `max_line` counted and skipped.  Memory: one read plus the longest
//! kept line, whatever the input.

use super::pytext;
use super::{InputError, input_error, why};
use crate::events::{InputInfo, Span};
use memchr::memchr;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read};

/// The read size.
pub const CHUNK: usize = 1 << 20;
/// The default `--max-line`.
pub const MAX_LINE: usize = 1 << 20;
/// events.py InputInfo: unparsed samples kept, and their length.
const SAMPLES: usize = 20;
const SAMPLE_CHARS: usize = 200;

/// The InputInfo fields reading and layout clean-up count into.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadInfo {
    pub file: String,
    pub lines: u64,
    pub unparsed: u64,
    /// (line number, its first 200 characters), the first 20
    pub unparsed_samples: Vec<(u64, String)>,
    pub too_long: u64,
    pub preamble: u64,
    pub ends_mid_line: bool,
    pub crlf: bool,
}

impl ReadInfo {
    pub fn new(file: &str) -> Self {
        ReadInfo {
            file: file.to_string(),
            ..Default::default()
        }
    }

    pub fn add_unparsed(&mut self, line: u64, text: &str) {
        self.unparsed += 1;
        if self.unparsed_samples.len() < SAMPLES {
            self.unparsed_samples
                .push((line, text.chars().take(SAMPLE_CHARS).collect()));
        }
    }
}

/// Bytes as UTF-8 with every byte that is not written `\xNN` (Python's
/// `decode("utf-8", "backslashreplace")`).
pub fn decode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Whether every byte is ASCII: the usual line's whole UTF-8 check, eight
/// bytes to a test (from_utf8 and is_ascii both cost about 1.5
/// instructions a byte on a line, this about half that).
fn ascii(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(8);
    let mut acc = 0u64;
    for w in &mut words {
        acc |= u64::from_le_bytes(w.try_into().unwrap());
    }
    let tail = words.remainder().iter().fold(0u8, |a, &c| a | c);
    (acc & 0x8080_8080_8080_8080) == 0 && tail < 0x80
}

/// The first `\n` in `hay`, and whether every byte before it is ASCII
/// (with no `\n`: whether every byte is): the line's end and its UTF-8
/// check in one pass, sixteen bytes to a step (SSE2, which every x86_64
/// has), where memchr then [`ascii`] read each line twice.
#[cfg(target_arch = "x86_64")]
fn newline(hay: &[u8]) -> (Option<usize>, bool) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut i = 0;
    let mut high = 0u32;
    // SAFETY: SSE2 is part of the x86_64 baseline; each load reads the 16
    // bytes hay[i..i + 16] (hay[i + 16 * j..], j < 4, below), inside `hay`
    // (unaligned loads)
    unsafe {
        let nl = _mm_set1_epi8(b'\n' as i8);
        // sixty-four bytes to a test while no `\n` is in them (one branch
        // where four were); the block that holds one goes by sixteens
        while i + 64 <= hay.len() {
            let p = hay.as_ptr().add(i).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            let (c, d) = (_mm_loadu_si128(p.add(2)), _mm_loadu_si128(p.add(3)));
            let eq = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(a, nl), _mm_cmpeq_epi8(b, nl)),
                _mm_or_si128(_mm_cmpeq_epi8(c, nl), _mm_cmpeq_epi8(d, nl)),
            );
            if _mm_movemask_epi8(eq) != 0 {
                break;
            }
            high |= _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d))) as u32;
            i += 64;
        }
        while i + 16 <= hay.len() {
            let v = _mm_loadu_si128(hay.as_ptr().add(i).cast::<__m128i>());
            let eq = _mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u32;
            let hi = _mm_movemask_epi8(v) as u32;
            if eq != 0 {
                let k = eq.trailing_zeros();
                let before = hi & ((1u32 << k) - 1);
                return (Some(i + k as usize), (high | before) == 0);
            }
            high |= hi;
            i += 16;
        }
    }
    for (j, &c) in hay[i..].iter().enumerate() {
        if c == b'\n' {
            return (Some(i + j), high == 0);
        }
        high |= u32::from(c >= 0x80);
    }
    (None, high == 0)
}

/// [`newline`] elsewhere: the `\n` alone (the line's bytes are checked
/// when its text is asked for).
#[cfg(not(target_arch = "x86_64"))]
fn newline(hay: &[u8]) -> (Option<usize>, bool) {
    (memchr(b'\n', hay), false)
}

/// The first 200 characters of an over-long line (at most four bytes
/// each), the same whichever read its end came in.
fn sample(bytes: &[u8]) -> String {
    decode(&bytes[..bytes.len().min(SAMPLE_CHARS * 4)])
        .chars()
        .take(SAMPLE_CHARS)
        .collect()
}

/// A line number and its text (None: an over-long line).
pub type Line<'a> = (u64, Option<Cow<'a, str>>);

/// (line number, text) for each line of a stream; text None for an
/// over-long line, which is counted in `info.too_long` and as unparsed.
pub struct LineReader<R> {
    r: R,
    pub info: ReadInfo,
    max_line: usize,
    chunk: usize,
    /// the bytes read are buf[..end]; past it, room a read may fill (kept:
    /// a Vec resized for each read zeroed a whole chunk every time)
    buf: Vec<u8>,
    end: usize,
    /// where the next line starts in buf
    start: usize,
    /// buf[start..scanned] holds no newline
    scanned: usize,
    lineno: u64,
    /// inside an over-long line: drop bytes up to the next newline
    skipping: bool,
    /// the last byte dropped so far (a `\r` right before the newline)
    skip_last: Option<u8>,
    eof: bool,
    /// the text of the current line
    cur: Cur,
    /// where buf[0] is in the stream
    base: u64,
    /// where the current line is in the stream
    span: Span,
}

/// Where the current line's text is.
enum Cur {
    None,
    /// buf[from..to], UTF-8 or decoded in text(); known to be ASCII
    /// (else checked there)
    Range(usize, usize, bool),
    /// decoded with `\xNN` escapes
    Owned(String),
}

impl<R: Read> LineReader<R> {
    pub fn new(r: R, info: ReadInfo, max_line: usize) -> Self {
        LineReader {
            r,
            info,
            max_line,
            chunk: CHUNK,
            buf: Vec::new(),
            end: 0,
            start: 0,
            scanned: 0,
            lineno: 0,
            skipping: false,
            skip_last: None,
            eof: false,
            cur: Cur::None,
            base: 0,
            span: Span::default(),
        }
    }

    /// Read in pieces of `n` bytes (tests; a merge of many files).
    pub fn chunk_size(mut self, n: usize) -> Self {
        self.chunk = n.max(1);
        self
    }

    /// The number of lines before the stream's first byte (a chunk of a
    /// larger file).
    pub fn start_line(mut self, n: u64) -> Self {
        self.lineno = n;
        self
    }

    /// The next line, None at the end of the stream.
    pub fn next_line(&mut self) -> Result<Option<(u64, Option<String>)>, InputError> {
        Ok(self.next_cow()?.map(|(n, t)| (n, t.map(Cow::into_owned))))
    }

    /// The next line borrowed from the read buffer when it is UTF-8 (the
    /// common case: no copy), None at the end of the stream.
    pub fn next_cow(&mut self) -> Result<Option<Line<'_>>, InputError> {
        Ok(match self.advance()? {
            None => None,
            Some((n, false)) => Some((n, None)),
            Some((n, true)) => Some((n, Some(self.text()))),
        })
    }

    /// Move to the next line: (its number, whether it has a text; false:
    /// an over-long line), None at the end.  Its text is [`Self::text`];
    /// `info` may be read and changed in between.
    pub fn advance(&mut self) -> Result<Option<(u64, bool)>, InputError> {
        self.cur = Cur::None;
        self.span = Span::default();
        loop {
            if let (Some(nl), ascii) = newline(&self.buf[self.scanned..self.end]) {
                let end = self.scanned + nl;
                let from = self.start;
                // (a line whose start an earlier read scanned: not known)
                let ascii = ascii && self.scanned == from;
                self.start = end + 1;
                self.scanned = self.start;
                return Ok(Some(self.take_line(from, end, ascii)));
            }
            self.scanned = self.end;
            if self.end - self.start > self.byte_bound() {
                let head = sample(&self.buf[self.start..self.end]);
                self.skip_last = self.buf[..self.end].last().copied();
                self.base += self.end as u64;
                self.end = 0;
                self.start = 0;
                self.scanned = 0;
                self.skipping = true;
                return Ok(Some(self.too_long(&head)));
            }
            if self.eof {
                return Ok(self.last_line());
            }
            self.fill()?;
        }
    }

    /// Where the line [`Self::advance`] moved to is in the stream (its
    /// bytes without the `\r` of a CRLF; nowhere for an over-long one).
    pub fn span(&self) -> Span {
        self.span
    }

    /// The text of the line [`Self::advance`] moved to ("" for an over-long
    /// one), borrowed from the buffer when it is UTF-8.
    pub fn text(&mut self) -> Cow<'_, str> {
        match std::mem::replace(&mut self.cur, Cur::None) {
            Cur::None => Cow::Borrowed(""),
            Cur::Owned(t) => Cow::Owned(t),
            Cur::Range(from, to, known) => {
                self.cur = Cur::Range(from, to, known);
                let bytes = &self.buf[from..to];
                if known || ascii(bytes) {
                    // SAFETY: ASCII is UTF-8.
                    return Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(bytes) });
                }
                match std::str::from_utf8(bytes) {
                    Ok(t) => Cow::Borrowed(t),
                    // take_line knew it fits however it decodes
                    Err(_) => Cow::Owned(decode(bytes)),
                }
            }
        }
    }

    /// Bytes without a newline beyond which a line is too long whatever
    /// follows.  max_line counts characters as Python does (a `\xNN` is four,
    /// a multi-byte character one), so a kept line has at most four bytes a
    /// character; one more may be the `\r` of a CRLF; and the sample must be
    /// the same as for a line seen whole.
    fn byte_bound(&self) -> usize {
        self.max_line
            .saturating_mul(4)
            .saturating_add(1)
            .max(SAMPLE_CHARS * 4)
    }

    /// A line whose `\n` has been seen: buf[from..to].
    /// `ascii`: every byte of it is known to be ASCII.
    fn take_line(&mut self, from: usize, mut to: usize, ascii: bool) -> (u64, bool) {
        if to > from && self.buf[to - 1] == b'\r' {
            to -= 1;
            self.info.crlf = true;
        }
        let max = self.max_line;
        let bytes = &self.buf[from..to];
        // more bytes than four per character: too long however it decodes
        if bytes.len() > max.saturating_mul(4) {
            let head = sample(bytes);
            return self.too_long(&head);
        }
        // (a line of 4 GiB and more, with a --max-line that allows it, is
        // nowhere: its events keep their text)
        let span = u32::try_from(to - from).map_or(Span::default(), |len| Span {
            off: self.base + from as u64,
            len,
        });
        if bytes.len() <= max / 4 {
            // at most four characters a byte: it fits however it decodes,
            // and is decoded (checked) once, in text()
            self.cur = Cur::Range(from, to, ascii);
            self.span = span;
            self.lineno += 1;
            return (self.lineno, true);
        }
        let fits = |t: &str| t.len() <= max || t.chars().count() <= max;
        match std::str::from_utf8(bytes) {
            Ok(t) if fits(t) => {
                self.cur = Cur::Range(from, to, ascii);
            }
            Ok(t) => {
                let t = pytext::head_chars(t, SAMPLE_CHARS).to_string();
                return self.too_long(&t);
            }
            Err(_) => {
                let text = decode(bytes);
                if !fits(&text) {
                    return self.too_long(&text);
                }
                self.cur = Cur::Owned(text);
            }
        }
        self.span = span;
        self.lineno += 1;
        (self.lineno, true)
    }

    fn too_long(&mut self, head: &str) -> (u64, bool) {
        self.lineno += 1;
        self.info.too_long += 1;
        self.info.add_unparsed(self.lineno, head);
        (self.lineno, false)
    }

    fn last_line(&mut self) -> Option<(u64, bool)> {
        if self.skipping {
            self.skipping = false;
            self.info.ends_mid_line = true;
            return None;
        }
        if self.start == self.end {
            return None;
        }
        self.info.ends_mid_line = true;
        let (from, end) = (self.start, self.end);
        self.start = end;
        self.scanned = end;
        Some(self.take_line(from, end, false))
    }

    /// Read one more piece onto buf (or past an over-long line's rest).
    fn fill(&mut self) -> Result<(), InputError> {
        if self.start > 0 {
            self.base += self.start as u64;
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        let have = self.end;
        if self.buf.len() < have + self.chunk {
            self.buf.resize(have + self.chunk, 0);
        }
        let n = loop {
            match self.r.read(&mut self.buf[have..have + self.chunk]) {
                Ok(n) => break n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(input_error(
                        &self.info.file,
                        &format!("read error: {}", why(&e)),
                    ));
                }
            }
        };
        self.end = have + n;
        if n == 0 {
            self.eof = true;
        } else if self.skipping {
            match memchr(b'\n', &self.buf[..self.end]) {
                Some(nl) => {
                    let before = if nl > 0 {
                        Some(self.buf[nl - 1])
                    } else {
                        self.skip_last
                    };
                    if before == Some(b'\r') {
                        self.info.crlf = true;
                    }
                    self.buf.copy_within(nl + 1..self.end, 0);
                    self.base += nl as u64 + 1;
                    self.end -= nl + 1;
                    self.skipping = false;
                }
                None => {
                    self.skip_last = self.buf[..self.end].last().copied();
                    self.base += self.end as u64;
                    self.end = 0;
                }
            }
            self.scanned = 0;
        }
        Ok(())
    }
}

impl<R: Read> Iterator for LineReader<R> {
    type Item = Result<(u64, Option<String>), InputError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}

/// newline finds memchr's `\n` and says ASCII only of ASCII bytes before
/// it, wherever the `\n` and the high bytes are (each place in the first
/// and last 16-byte steps and the tail, none, several).
#[cfg(test)]
#[test]
fn newline_is_memchr_and_ascii() {
    let mut seed: u64 = 11;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    // (past 64 bytes: the lines that go by whole 64-byte blocks first)
    for len in 0..260 {
        for _ in 0..60 {
            let mut v: Vec<u8> = (0..len).map(|_| b' ' + (next() % 95) as u8).collect();
            for _ in 0..next() % 3 {
                if len > 0 {
                    v[next() % len] = b'\n';
                }
            }
            for _ in 0..next() % 3 {
                if len > 0 {
                    v[next() % len] = [0x80, 0xc3, 0xff][next() % 3];
                }
            }
            let want_nl = memchr(b'\n', &v);
            let (nl, asc) = newline(&v);
            assert_eq!(nl, want_nl, "{v:?}");
            let before = &v[..want_nl.unwrap_or(len)];
            if asc {
                assert!(before.is_ascii(), "{v:?}");
            }
            #[cfg(target_arch = "x86_64")]
            assert_eq!(asc, before.is_ascii(), "{v:?}");
        }
    }
}

#[cfg(test)]
#[test]
fn ascii_is_is_ascii() {
    for len in 0..40 {
        let mut v: Vec<u8> = (0..len).map(|i| b' ' + (i * 7 % 95) as u8).collect();
        assert!(ascii(&v) && v.is_ascii());
        for pos in 0..len {
            for bad in [0x80, 0xc3, 0xff] {
                let keep = v[pos];
                v[pos] = bad;
                assert!(!ascii(&v), "{len} {pos} {bad}");
                v[pos] = keep;
            }
        }
    }
}

/// The lines of one file after reading and layout clean-up, counted into
/// the parser's info as the reader and the layout clean-up count them.
pub struct CleanLines {
    lr: LineReader<Box<dyn Read + Send>>,
    layout: super::Layout,
    /// where the last line [`Self::next`] gave is in the stream
    span: Span,
    /// whether to tell where lines are ([`Self::by_reference`])
    refer: bool,
}

impl CleanLines {
    pub fn new(
        r: Box<dyn Read + Send>,
        path: &str,
        layout: super::Layout,
        max_line: usize,
        chunk: usize,
    ) -> Self {
        CleanLines {
            lr: LineReader::new(r, ReadInfo::new(path), max_line).chunk_size(chunk),
            layout,
            span: Span::default(),
            refer: false,
        }
    }

    /// Tell where each line is ([`Self::span`]): for an input that can be
    /// read again, whose events refer to their lines.
    pub fn by_reference(mut self, yes: bool) -> Self {
        self.refer = yes;
        self
    }

    /// Where the text of the last line [`Self::next`] gave is in the
    /// decompressed stream: its bytes after the layout's prefix (nowhere
    /// for an over-long line, or a quoted blank one; nowhere unless
    /// [`Self::by_reference`]).
    pub fn span(&self) -> Span {
        if self.refer {
            self.span
        } else {
            Span::default()
        }
    }

    /// The next line to feed, borrowed from the read buffer where it can
    /// be (None text: an over-long line, to be counted in info.lines),
    /// Ok(None) at the end.
    pub fn next(&mut self, info: &mut InputInfo) -> Result<Option<Line<'_>>, InputError> {
        self.next_at(info).map(|l| l.map(|(n, t, _)| (n, t)))
    }

    /// [`Self::next`] and where the line is ([`Self::span`]).
    #[allow(clippy::type_complexity)]
    pub fn next_at(
        &mut self,
        info: &mut InputInfo,
    ) -> Result<Option<(u64, Option<Cow<'_, str>>, Span)>, InputError> {
        self.span = Span::default();
        loop {
            // the reader's counts move to info first (in line order)
            let got = self.lr.advance();
            self.sync(info);
            let Some((lineno, is_line)) = got? else {
                return Ok(None);
            };
            if lineno < self.layout.first && !self.layout.plain() {
                info.preamble += 1;
                if !is_line {
                    // an over-long preamble line
                    info.too_long -= 1;
                    info.unparsed -= 1;
                    if info.unparsed_samples.last().is_some_and(|s| s.0 == lineno) {
                        info.unparsed_samples.pop();
                    }
                }
                info.lines += 1;
                continue;
            }
            if !is_line {
                return Ok(Some((lineno, None, Span::default())));
            }
            let span = self.lr.span();
            let text = self.lr.text();
            let prefix = &self.layout.prefix;
            if prefix.is_empty() {
                let at = if self.refer { span } else { Span::default() };
                self.span = span;
                return Ok(Some((lineno, Some(text), at)));
            }
            let whole = text.len();
            let out: Cow<'_, str> = match text {
                Cow::Borrowed(t) => Cow::Borrowed(self.layout.unprefix(t)),
                Cow::Owned(t) => {
                    let rest = self.layout.unprefix(&t);
                    if rest.len() == t.len() {
                        Cow::Owned(t)
                    } else {
                        Cow::Owned(rest.to_string())
                    }
                }
            };
            // the prefix is ASCII (blanks, `>`): as many bytes in the
            // stream as in the text
            let cut = (whole - out.len()) as u32;
            if !out.is_empty() && cut <= span.len {
                self.span = Span {
                    off: span.off + u64::from(cut),
                    len: span.len - cut,
                };
            }
            let at = if self.refer {
                self.span
            } else {
                Span::default()
            };
            return Ok(Some((lineno, Some(out), at)));
        }
    }

    /// Move what the reader counted into the file's info, in line order.
    fn sync(&mut self, info: &mut InputInfo) {
        let r = &mut self.lr.info;
        if r.unparsed > 0 || r.too_long > 0 {
            info.too_long += std::mem::take(&mut r.too_long);
            let n = std::mem::take(&mut r.unparsed);
            let samples = std::mem::take(&mut r.unparsed_samples);
            let k = samples.len() as u64;
            for (line, text) in samples {
                info.add_unparsed(line, text.as_bytes());
            }
            info.unparsed += n - k;
        }
        info.ends_mid_line |= r.ends_mid_line;
        info.crlf |= r.crlf;
    }
}
