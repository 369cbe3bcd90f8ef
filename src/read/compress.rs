//! Compression by magic bytes:
//! the first bytes of a stream are read once and replayed in front of it, so
//! stdin, a pipe or a FIFO is never re-opened or seeked.

use std::io::{self, Cursor, Read};

/// The compressions a trace file may come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Xz,
    Bzip2,
    Zstd,
}

/// Magic bytes, in the order they are tried.
const MAGIC: [(&[u8], Compression); 4] = [
    (b"\x1f\x8b", Compression::Gzip),
    (b"\xfd7zXZ\x00", Compression::Xz),
    (b"BZh", Compression::Bzip2),
    (b"\x28\xb5\x2f\xfd", Compression::Zstd),
];

/// The longest magic: how much of a stream detection reads.
pub const MAGIC_LEN: usize = 6;

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Bzip2 => "bzip2",
            Compression::Zstd => "zstd",
        }
    }
}

/// The compression a stream's first bytes announce, or None.
pub fn compression_of(head: &[u8]) -> Option<Compression> {
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, c)| c)
}

/// Up to `n` bytes (a pipe may return fewer per read).
pub fn read_full(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut out)?;
    Ok(out)
}

/// `raw` with its first bytes `head` (already read) put back in front.
pub type Replayed<R> = io::Chain<Cursor<Vec<u8>>, R>;

/// A reader of the decompressed bytes of `raw`, whose first bytes `head`
/// were read for detection.  Every decoder takes concatenated members or
/// streams, as Python's gzip, lzma and bz2 modules do.  Err: the one-line
/// reason (a zstd trace in a build without zstd).
pub fn decoder<R: Read + Send + 'static>(
    kind: Option<Compression>,
    head: Vec<u8>,
    raw: R,
) -> Result<Box<dyn Read + Send>, &'static str> {
    let replayed: Replayed<R> = Cursor::new(head).chain(raw);
    let inner: Box<dyn Read + Send> = match kind {
        None => Box::new(replayed),
        Some(Compression::Gzip) => Box::new(flate2::read::MultiGzDecoder::new(replayed)),
        Some(Compression::Xz) => Box::new(liblzma::read::XzDecoder::new_multi_decoder(replayed)),
        Some(Compression::Bzip2) => Box::new(bzip2::read::MultiBzDecoder::new(replayed)),
        Some(Compression::Zstd) => zstd_decoder(replayed)?,
    };
    Ok(Box::new(NoBom {
        inner,
        start: true,
        held: Vec::new(),
    }))
}

/// The UTF-8 byte order mark an editor may put before the first line.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The decompressed bytes without a leading byte order mark: a log saved
/// by an editor that adds one reads as the log it is (issue 37: a BOM
/// before `# rocrtrace-log 1` made a preload log read as strace).
struct NoBom {
    inner: Box<dyn Read + Send>,
    start: bool,
    /// bytes read while looking for the mark that were not one
    held: Vec<u8>,
}

impl Read for NoBom {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.start {
            let head = read_full(&mut self.inner, BOM.len())?;
            self.start = false;
            if head != BOM {
                self.held = head;
            }
        }
        if !self.held.is_empty() {
            let n = self.held.len().min(buf.len());
            buf[..n].copy_from_slice(&self.held[..n]);
            self.held.drain(..n);
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

#[cfg(feature = "zstd")]
fn zstd_decoder<R: Read + Send + 'static>(
    r: Replayed<R>,
) -> Result<Box<dyn Read + Send>, &'static str> {
    Ok(match zstd::stream::read::Decoder::new(r) {
        Ok(d) => Box::new(d),
        // only an allocation failure of the context; report it on read
        Err(e) => Box::new(Failing(Some(e))),
    })
}

#[cfg(not(feature = "zstd"))]
fn zstd_decoder<R: Read + Send + 'static>(
    _: Replayed<R>,
) -> Result<Box<dyn Read + Send>, &'static str> {
    Err("zstd-compressed, but this rocrtrace is built without zstd (decompress it first)")
}

#[cfg(feature = "zstd")]
/// A reader whose first read fails with the error it holds.
#[cfg(feature = "zstd")]
struct Failing(Option<io::Error>);

#[cfg(feature = "zstd")]
impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}
