//! Text -> events.  The dialects the core reads are listed once, here
//! ([`DIALECTS`]): each with its format (whose name `--input-format`
//! takes), the sniff beside its parser (does one cleaned line belong to
//! it), how detection claims a file for it, and its parser.  detect picks a
//! file's dialect; trace runs a TRACE argument's files through their
//! parsers and merges the events.  tokens is the tokenizer of the common
//! line shapes; strace (with preload's `#` lines), syscalls, values and
//! grammar parse every other shape; kfd_args reads the ioctl structs the
//! capture library writes against the catalogue's labels; tinygrad reads
//! tinygrad's `IOCTL=1` logs.  Detection, the input formats of the package
//! (`_engine.input_formats`) and [`Builtin`] all read the list.

pub mod detect;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod grammar;
pub mod kfd_args;
pub mod lex;
pub mod preload;
pub mod strace;
pub mod syscalls;
pub mod tinygrad;
pub mod tokens;
pub mod trace;
pub mod values;

use crate::events::{FileId, Format, InputInfo};
use crate::read::open::FileSpec;
use trace::{Dialect, Dialects, Threads};

/// How detection claims a file for a dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// the first line (a header) decides
    FirstLine,
    /// at least one line, and a third of the first lines, are its own
    Share,
}

/// Marks in `own` (one flag a line) the lines of `lines` that are a
/// dialect's own as a run.
pub type SniffRun = fn(lines: &[&str], own: &mut [bool]);

/// One dialect.
pub struct Spec {
    pub format: Format,
    /// does one (cleaned) line belong to it
    pub sniff: fn(&str) -> bool,
    /// a broad sniff (a whole grammar) may take lines of another dialect:
    /// the narrow sniffs are asked first
    pub broad: bool,
    /// lines of a run the line sniff does not take that are its own
    /// (strace's summary table)
    pub sniff_run: Option<SniffRun>,
    pub claim: Claim,
    /// its parser of one file
    pub parser: fn(&FileSpec, FileId, InputInfo, Option<&Threads>) -> Box<dyn Dialect>,
}

/// Every dialect, in the order the CLI lists them.
pub const DIALECTS: &[Spec] = &[
    Spec {
        format: Format::Strace,
        sniff: strace::sniff,
        broad: true,
        sniff_run: Some(strace::summary_table_lines),
        claim: Claim::Share,
        parser: strace_parser,
    },
    Spec {
        format: Format::Preload,
        sniff: preload::sniff,
        broad: false,
        sniff_run: None,
        claim: Claim::FirstLine,
        // the strace grammar with the preload `#` lines
        parser: strace_parser,
    },
    Spec {
        format: Format::Tinygrad,
        sniff: tinygrad::sniff,
        broad: false,
        sniff_run: None,
        claim: Claim::Share,
        parser: tinygrad::dialect,
    },
];

/// The dialects in the order their sniffs are asked: narrow first.
pub fn sniff_order() -> impl Iterator<Item = &'static Spec> {
    let narrow = DIALECTS.iter().filter(|d| !d.broad);
    narrow.chain(DIALECTS.iter().filter(|d| d.broad))
}

fn spec(format: Format) -> Option<&'static Spec> {
    DIALECTS.iter().find(|d| d.format == format)
}

/// The format a `--input-format` name forces.
pub fn format_of(name: &str) -> Option<Format> {
    DIALECTS
        .iter()
        .find(|d| d.format.name() == name)
        .map(|d| d.format)
}

/// The dialect one (cleaned) line belongs to, or None.
pub fn kind(line: &str) -> Option<Format> {
    sniff_order().find(|d| (d.sniff)(line)).map(|d| d.format)
}

pub fn is_trace(line: &str) -> bool {
    kind(line).is_some()
}

/// The parser of one strace or preload file: with the -ff knowledge when
/// the trace has several files.
fn strace_parser(
    spec: &FileSpec,
    file: FileId,
    info: InputInfo,
    threads: Option<&Threads>,
) -> Box<dyn Dialect> {
    Box::new(strace::Parser::new(
        file,
        info,
        spec.tid,
        threads.map(|t| t.tgid_of.clone()),
        threads.map(|t| t.handover.clone()),
    ))
}

/// Every dialect the core reads: the registry's parsers.
pub struct Builtin;

impl Dialects for Builtin {
    fn parser(
        &self,
        spec_: &FileSpec,
        file: FileId,
        info: InputInfo,
        threads: Option<&Threads>,
    ) -> Option<Box<dyn Dialect>> {
        // a format no dialect has (an unknown name forced through the API)
        // reads as strace, the grammar the preload dialect extends
        let d = spec(spec_.format).unwrap_or(&DIALECTS[0]);
        Some((d.parser)(spec_, file, info, threads))
    }
}
