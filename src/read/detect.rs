//! Which dialect a file is in, and [`looks_like_trace_line`], the cheap test
//! detection uses.

use super::layout::Layout;
use super::pytext::{self, py_regex};
use super::{InputError, input_error};
use crate::events::Format;
use crate::parse::grammar;
use regex::Regex;
use std::fmt::Write as _;
use std::sync::LazyLock;

/// Detection looks at this many non-blank lines.
pub const DETECT_LINES: usize = 50;

struct Res {
    tinygrad: Regex,
    ansi: Regex,
    diag: Regex,
    prefix: Regex,
    name: Regex,
    resumed: Regex,
    exited: Regex,
    signal: Regex,
}

/// `[\w.+-]` and `[\w#:]` of Python re.
const WDOT: &str = r"[\p{L}\p{N}_.+\-]";
const WHASH: &str = r"[\p{L}\p{N}_#:]";

static RE: LazyLock<Res> = LazyLock::new(|| Res {
    tinygrad: py_regex(r"\A(?:%s*-?\d+(?:\.\d+)? ms \+%s*-?\d+(?:\.\d+)? ms : |ioctl idir=)"),
    ansi: Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").unwrap(),
    diag: py_regex(&format!(
        r"(?:strace{WDOT}*: |\A)(?:\[ )?Process (\d{{1,10}}) (attached|detached)(?: with \d+ threads)?(?: - interrupt to quit)?%s*\z"
    )),
    // the strace line prefix (every part optional: it always matches)
    prefix: py_regex(concat!(
        r"\A(?:\[pid%s+(\d{1,10})(<[^>]*>)?\]%s+|(\d{1,7})(<[^>]*>)?%s+)?",
        r"(?:\[([^\]\s\x1c-\x1f]*:[^\]]*)\]%s+)?",
        r"(?:(\d\d:\d\d:\d\d(?:\.\d+)?)%s+|(\d{9,}(?:\.\d+)?)%s+|%s*(\d{1,8}(?:\.\d+)?)%s+)?",
        r"(?:\(\+%s*(\d+(?:\.\d+)?)\)%s+)?",
        r"(?:\[%s*([\d?]+)\]%s+)?",
        r"(?:\[([0-9a-f?]{8,16})\]%s+)?",
    )),
    name: py_regex(&format!(r"\A(?:[A-Za-z_]{WHASH}*|\?\?\?)\(")),
    resumed: py_regex(&format!(r"\A<\.\.\. (?:{WHASH}+|\?\?\?) resumed>")),
    exited: py_regex(
        r"\A\+\+\+ (?:exited with (-?\d{1,20})|killed by (%w+)(?: \(core dumped\))?|superseded by execve in pid (\d{1,10})) \+\+\+",
    ),
    signal: py_regex(r"\A--- (?:stopped by )?(?:SIG%w+|%w+)"),
});

/// Does this line belong to the strace grammar (or the preload dialect)?
pub fn looks_like_trace_line(line: &str) -> bool {
    if pytext::is_blank(line) {
        return false;
    }
    let cleaned;
    let line = if line.contains('\x1b') {
        cleaned = RE.ansi.replace_all(line, "");
        cleaned.as_ref()
    } else {
        line
    };
    if line.starts_with(" > ") || line.starts_with(" | ") {
        return true;
    }
    if line.starts_with("# rocrtrace-log")
        || RE.diag.is_match(line)
        || grammar::diag_prefix(line.as_bytes())
    {
        // strace's own messages under any program name (`strace: `,
        // `/usr/bin/strace: poke_tcb: …`) are strace lines: a stderr
        // capture of only those is a strace log (SPEC 2)
        return true;
    }
    let end = RE.prefix.find(line).map_or(0, |m| m.end());
    let body = &line[end..];
    if RE.name.is_match(body) {
        // the name's '(' is in the body: any such line is a call
        return true;
    }
    RE.resumed.is_match(body)
        || RE.exited.is_match(body)
        || RE.signal.is_match(body)
        || grammar::summary_header(body.trim().as_bytes())
}

/// The dialect one (cleaned) line belongs to, or None.
pub fn kind(line: &str) -> Option<Format> {
    if line.starts_with("# rocrtrace-log") {
        return Some(Format::Preload);
    }
    if RE.tinygrad.is_match(line) {
        return Some(Format::Tinygrad);
    }
    let line = pytext::head_chars(line, 65536);
    if line.starts_with('#') {
        return None;
    }
    looks_like_trace_line(line).then_some(Format::Strace)
}

pub fn is_trace(line: &str) -> bool {
    kind(line).is_some()
}

/// The format's name as the CLI spells it.
pub fn format_name(f: Format) -> &'static str {
    match f {
        Format::Unknown => "unknown",
        Format::Strace => "strace",
        Format::Preload => "preload",
        Format::Tinygrad => "tinygrad",
    }
}

pub fn format_of(name: &str) -> Option<Format> {
    Some(match name {
        "strace" => Format::Strace,
        "preload" => Format::Preload,
        "tinygrad" => Format::Tinygrad,
        _ => return None,
    })
}

/// strace | preload | tinygrad, from the first lines after the preamble.
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
    let mut kinds: Vec<Option<Format>> = body.iter().map(|l| kind(l)).collect();
    summary_tables(&body, &mut kinds);
    if kinds[0] == Some(Format::Preload) {
        return Ok(Format::Preload);
    }
    for fmt in [Format::Tinygrad, Format::Strace] {
        let good = kinds.iter().filter(|&&k| k == Some(fmt)).count();
        if good >= 1 && good * 3 >= body.len() {
            return Ok(fmt);
        }
    }
    Err(not_a_log(path, body[0]))
}

/// strace's summary table (`-c`, `-C`, `-U`: a header of column titles,
/// dashes, rows of numbers and a syscall's name) is strace's own output:
/// its lines count as strace lines, so a log that is only the table (`strace
/// -c -o log`) is a strace log.
fn summary_tables(body: &[&str], kinds: &mut [Option<Format>]) {
    let mut table = false;
    for (l, k) in body.iter().zip(kinds.iter_mut()) {
        let b = l.trim().as_bytes();
        table = grammar::summary_header(b)
            || (table && grammar::summary_row(b))
            || b.starts_with(b"System call usage summary for ");
        if table && k.is_none() {
            *k = Some(Format::Strace);
        }
    }
}

fn not_a_log(path: &str, line: &str) -> InputError {
    input_error(
        path,
        &format!(
            "not an strace, preload or tinygrad log (first line: {})",
            show(line)
        ),
    )
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
