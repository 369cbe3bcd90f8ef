//! Which dialect a file is in, from its first lines: each line goes to
//! the first dialect whose sniff takes it (the registry's order, narrow
//! sniffs first), then each dialect's claim decides.  [`Registry`] is what
//! opening files asks of the dialects, and [`open_files`], [`open_runs`]
//! and [`open_named`] open with it.

use super::{Claim, DIALECTS, sniff_order};
use crate::events::Format;
use crate::read::layout::Layout;
use crate::read::open::{self, Detect, FileSpec, Runs};
use crate::read::pytext;
use crate::read::{InputError, input_error};
use std::fmt::Write as _;

/// Detection looks at this many non-blank lines.
pub use crate::read::open::DETECT_LINES;

/// The dialect of a file, from the first lines after the preamble.
pub fn detect<S: AsRef<str>>(path: &str, lines: &[S], lay: &Layout) -> Result<Format, InputError> {
    let from = (lay.first as usize).saturating_sub(1).min(lines.len());
    let body: Vec<&str> = lines[from..]
        .iter()
        .map(|l| {
            let l = l.as_ref();
            if lay.prefix.is_empty() {
                l
            } else {
                lay.unprefix(l)
            }
        })
        .filter(|l| !pytext::is_blank(l))
        .take(DETECT_LINES)
        .collect();
    if body.is_empty() {
        if let Some(first) = lines
            .iter()
            .map(AsRef::as_ref)
            .find(|l| !pytext::is_blank(l))
        {
            return Err(not_a_log(path, first));
        }
        return Err(input_error(path, "empty (no lines)"));
    }
    let mut kinds: Vec<Option<Format>> = body.iter().map(|l| super::kind(l)).collect();
    let mut own = vec![false; body.len()];
    for d in DIALECTS {
        if let Some(run) = d.sniff_run {
            run(&body, &mut own);
            for (k, &mine) in kinds.iter_mut().zip(&own) {
                if mine && k.is_none() {
                    *k = Some(d.format);
                }
            }
        }
    }
    for d in DIALECTS.iter().filter(|d| d.claim == Claim::FirstLine) {
        if kinds[0] == Some(d.format) {
            return Ok(d.format);
        }
    }
    for d in sniff_order().filter(|d| d.claim == Claim::Share) {
        let good = kinds.iter().filter(|&&k| k == Some(d.format)).count();
        if good >= 1 && good * 3 >= body.len() {
            return Ok(d.format);
        }
    }
    Err(not_a_log(path, body[0]))
}

fn not_a_log(path: &str, line: &str) -> InputError {
    let names: Vec<&str> = DIALECTS.iter().map(|d| d.format.name()).collect();
    let (last, rest) = names.split_last().expect("a dialect");
    let list = if rest.is_empty() {
        last.to_string()
    } else {
        format!("{} or {last}", rest.join(", "))
    };
    input_error(
        path,
        &format!("not an {list} log (first line: {})", show(line)),
    )
}

/// What opening a file asks of the dialects: the registry's sniffs.
pub struct Registry;

impl Detect for Registry {
    fn is_trace(&self, line: &str) -> bool {
        super::is_trace(line)
    }
    fn detect(&self, path: &str, lines: &[String], lay: &Layout) -> Result<Format, InputError> {
        detect(path, lines, lay)
    }
    fn format_of(&self, name: &str) -> Option<Format> {
        super::format_of(name)
    }
}

/// [`open::open_files`] with the registry's dialects.
pub fn open_files(arg: &str, input_format: Option<&str>) -> Result<Vec<FileSpec>, InputError> {
    open::open_files(arg, input_format, &Registry)
}

/// [`open::open_runs`] with the registry's dialects.
pub fn open_runs(arg: &str, input_format: Option<&str>) -> Result<Runs, InputError> {
    open::open_runs(arg, input_format, &Registry)
}

/// [`open::open_named`] with the registry's dialects.
pub fn open_named(
    paths: Vec<String>,
    input_format: Option<&str>,
) -> (Option<Runs>, Vec<InputError>) {
    open::open_named(paths, input_format, &Registry)
}

/// `line[:60].encode("unicode_escape").decode("ascii")`
pub fn show(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars().take(60) {
        let u = c as u32;
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            ' '..='~' => out.push(c),
            _ if u < 0x100 => {
                let _ = write!(out, "\\x{u:02x}");
            }
            _ if u < 0x10000 => {
                let _ = write!(out, "\\u{u:04x}");
            }
            _ => {
                let _ = write!(out, "\\U{u:08x}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
