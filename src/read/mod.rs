//! Bytes to lines: open a path or any reader,
//! decompress by magic bytes, split on `\n` into decoded lines with the
//! over-long, CRLF and last-line counts, and find and remove a file's layout
//! (preamble, indentation, `> ` quoting).  Which dialect a line is in, and
//! what its lines mean, is parse's: read asks it through
//! [`open::Detect`] and [`chunked::PreParse`], and imports nothing of it.

pub mod chunked;
pub mod compress;
pub mod layout;
pub mod lines;
pub mod merge;
pub mod open;
pub mod pyglob;
pub mod pytext;
pub mod spill;

#[cfg(test)]
mod tests;

use std::fmt;
use std::fs::File;
use std::io::{self, Read};

pub use compress::{Compression, compression_of};
pub use layout::Layout;
pub use lines::{LineReader, ReadInfo};

/// An input that cannot be opened, read or decompressed; Display is the one
/// line the CLI prints before exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// `rocrtrace: PATH: WHY`.
pub fn input_error(path: &str, why: &str) -> InputError {
    InputError(format!("rocrtrace: {path}: {why}"))
}

/// One line of at most 200 characters for a read or decompression error:
/// the OS's text without the " (os error N)" Rust adds.
pub fn why(e: &io::Error) -> String {
    let text = match e.raw_os_error() {
        Some(code) => {
            let full = io::Error::from_raw_os_error(code).to_string();
            match full.rfind(" (os error ") {
                Some(cut) => full[..cut].to_string(),
                None => full,
            }
        }
        None => e.to_string(),
    };
    let text = if text.is_empty() {
        format!("{:?}", e.kind())
    } else {
        text
    };
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(200)
        .collect()
}

/// A reader of `path`'s bytes (`-` = stdin), decompressed by magic bytes.
pub fn open_path(path: &str) -> Result<Box<dyn Read + Send>, InputError> {
    if path == "-" {
        return open_reader(path, io::stdin());
    }
    match File::open(path) {
        // Python's open() refuses a directory; Linux's opens it
        Ok(f) if f.metadata().is_ok_and(|m| m.is_dir()) => {
            Err(input_error(path, &why(&io::Error::from_raw_os_error(21))))
        }
        Ok(f) => open_reader(path, f),
        Err(e) => Err(input_error(path, &why(&e))),
    }
}

/// A reader of the bytes of `raw` (an open file, stdin, a pipe), named
/// `path` in errors, decompressed by its magic bytes.  Only the first
/// bytes are read here, and they are replayed, never seeked back.
pub fn open_reader<R: Read + Send + 'static>(
    path: &str,
    mut raw: R,
) -> Result<Box<dyn Read + Send>, InputError> {
    let head = compress::read_full(&mut raw, compress::MAGIC_LEN)
        .map_err(|e| input_error(path, &format!("read error: {}", why(&e))))?;
    let kind = compression_of(&head);
    compress::decoder(kind, head, raw).map_err(|why| input_error(path, why))
}
