//! Does a line belong to the strace grammar: [`sniff`] (detection's test,
//! asked after the narrow dialects'), [`looks_like_trace_line`] and the
//! summary table's lines.

use crate::parse::grammar;
use crate::read::pytext::{self, PyRegex};
use regex::Regex;
use std::sync::LazyLock;

type Find = fn(&PyRegex, &str) -> Option<(usize, usize)>;

struct Res {
    diag: PyRegex,
    prefix: PyRegex,
    name: PyRegex,
    resumed: PyRegex,
    exited: PyRegex,
    signal: PyRegex,
}

/// `[\w.+-]` and `[\w#:]` of Python re.
const WDOT: &str = r"[%W_.+\-]";
const WHASH: &str = r"[%W_#:]";

static ANSI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").unwrap());

static RE: LazyLock<Res> = LazyLock::new(|| Res {
    diag: PyRegex::new(format!(
        r"(?:strace{WDOT}*: |\A)(?:\[ )?Process (\d{{1,10}}) (attached|detached)(?: with \d+ threads)?(?: - interrupt to quit)?%s*\z"
    )),
    // the strace line prefix (every part optional: it always matches)
    prefix: PyRegex::new(concat!(
        r"\A(?:\[pid%s+(\d{1,10})(<[^>]*>)?\]%s+|(\d{1,7})(<[^>]*>)?%s+)?",
        r"(?:\[([^\]\s\x1c-\x1f]*:[^\]]*)\]%s+)?",
        r"(?:(\d\d:\d\d:\d\d(?:\.\d+)?)%s+|(\d{9,}(?:\.\d+)?)%s+|%s*(\d{1,8}(?:\.\d+)?)%s+)?",
        r"(?:\(\+%s*(\d+(?:\.\d+)?)\)%s+)?",
        r"(?:\[%s*([\d?]+)\]%s+)?",
        r"(?:\[([0-9a-f?]{8,16})\]%s+)?",
    )),
    name: PyRegex::new(format!(r"\A(?:[A-Za-z_]{WHASH}*|\?\?\?)\(")),
    resumed: PyRegex::new(format!(r"\A<\.\.\. (?:{WHASH}+|\?\?\?) resumed>")),
    exited: PyRegex::new(
        r"\A\+\+\+ (?:exited with (-?\d{1,20})|killed by (%w+)(?: \(core dumped\))?|superseded by execve in pid (\d{1,10})) \+\+\+",
    ),
    signal: PyRegex::new(r"\A--- (?:stopped by )?(?:SIG%w+|%w+)"),
});

/// Does this line belong to the strace grammar (or the preload dialect)?
pub fn looks_like_trace_line(line: &str) -> bool {
    looks(line, PyRegex::find)
}

/// [`looks_like_trace_line`] with the patterns matched by `find`.
fn looks(line: &str, find: Find) -> bool {
    if pytext::is_blank(line) {
        return false;
    }
    let cleaned;
    let line = if line.contains('\x1b') {
        cleaned = ANSI.replace_all(line, "");
        cleaned.as_ref()
    } else {
        line
    };
    if line.starts_with(" > ") || line.starts_with(" | ") {
        return true;
    }
    let is = |re: &PyRegex, s: &str| find(re, s).is_some();
    if line.starts_with("# rocrtrace-log")
        || is(&RE.diag, line)
        || grammar::diag_prefix(line.as_bytes())
    {
        // strace's own messages under any program name (`strace: `,
        // `/usr/bin/strace: poke_tcb: …`) are strace lines: a stderr
        // capture of only those is a strace log (SPEC 2)
        return true;
    }
    let end = find(&RE.prefix, line).map_or(0, |m| m.1);
    let body = &line[end..];
    if is(&RE.name, body) {
        // the name's '(' is in the body: any such line is a call
        return true;
    }
    is(&RE.resumed, body)
        || is(&RE.exited, body)
        || is(&RE.signal, body)
        || grammar::summary_header(body.trim().as_bytes())
}

/// A strace line (detection's test): a `#` line is none (the preload
/// dialect's `#` lines are its header's business).
pub fn sniff(line: &str) -> bool {
    let line = pytext::head_chars(line, 65536);
    !line.starts_with('#') && looks_like_trace_line(line)
}

/// strace's summary table (`-c`, `-C`, `-U`: a header of column titles,
/// dashes, rows of numbers and a syscall's name) is strace's own output:
/// its lines count as strace lines, so a log that is only the table (`strace
/// -c -o log`) is a strace log.
pub fn summary_table_lines(lines: &[&str], own: &mut [bool]) {
    let mut table = false;
    for (l, k) in lines.iter().zip(own.iter_mut()) {
        let b = l.trim().as_bytes();
        table = grammar::summary_header(b)
            || (table && grammar::summary_row(b))
            || b.starts_with(b"System call usage summary for ");
        *k = table;
    }
}

#[cfg(test)]
mod tests;
