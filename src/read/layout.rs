//! How a file's trace lines sit in it: a preamble before the first trace
//! line, and an
//! indentation or `> ` quoting on every line, removed before parsing.
//!
//! Which line is a trace line is the dialects' business (parse/mod.rs), so the
//! functions that need it take it as `is_trace`.

use super::lines::{ReadInfo, decode};

/// Detection looks at most this many lines.
pub const DETECT_PREAMBLE: usize = 100_000;
/// Lines the common prefix is taken over.
const PREFIX_LINES: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// the line number of the first trace line (1 = no preamble)
    pub first: u64,
    /// the indentation or quoting on every line
    pub prefix: String,
    pub quote: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            first: 1,
            prefix: String::new(),
            quote: false,
        }
    }
}

/// What clean-up makes of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleaned {
    /// a preamble line (counted in info.preamble and info.lines)
    Preamble,
    /// the line without its prefix (None: an over-long line)
    Line(Option<String>),
}

impl Layout {
    pub fn plain(&self) -> bool {
        self.first <= 1 && self.prefix.is_empty()
    }

    /// The line without this layout's prefix.
    pub fn unprefix<'a>(&self, line: &'a str) -> &'a str {
        if let Some(rest) = line.strip_prefix(self.prefix.as_str()) {
            return rest;
        }
        if self.quote && strip_quote_end(line).is_empty() {
            return "";
        }
        line
    }

    /// One line of clean_lines: a preamble line is dropped and counted (an
    /// over-long one is taken back out of the unparsed counts), any other
    /// loses the prefix.
    pub fn clean(&self, info: &mut ReadInfo, lineno: u64, line: Option<String>) -> Cleaned {
        if lineno < self.first {
            info.preamble += 1;
            if line.is_none() {
                info.too_long -= 1;
                info.unparsed -= 1;
                if info.unparsed_samples.last().is_some_and(|s| s.0 == lineno) {
                    info.unparsed_samples.pop();
                }
            }
            info.lines += 1;
            return Cleaned::Preamble;
        }
        match line {
            Some(text) if !self.prefix.is_empty() => {
                let rest = self.unprefix(&text);
                if rest.len() == text.len() {
                    Cleaned::Line(Some(text))
                } else {
                    Cleaned::Line(Some(rest.to_string()))
                }
            }
            other => Cleaned::Line(other),
        }
    }
}

/// Python's str.isspace, which is Rust's White_Space plus the four
/// information separators U+001C..U+001F.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

fn is_blank(line: &str) -> bool {
    line.chars().all(is_space)
}

/// `line.rstrip("> \t")`
fn strip_quote_end(line: &str) -> &str {
    line.trim_end_matches(['>', ' ', '\t'])
}

/// The longest prefix every line shares (that of the least and the
/// greatest line).
pub fn common_prefix<S: AsRef<str>>(lines: &[S]) -> String {
    let Some(a) = lines.iter().map(AsRef::as_ref).min() else {
        return String::new();
    };
    let b = lines.iter().map(AsRef::as_ref).max().unwrap_or(a);
    let n: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    a[..n].to_string()
}

/// `( +)(\d+)(?:\.\d+)? ` at the start of a line: (spaces, digits).
fn rel_time(line: &str) -> Option<(usize, usize)> {
    let b = line.as_bytes();
    let spaces = b.iter().take_while(|&&c| c == b' ').count();
    let digits = b[spaces..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if spaces == 0 || digits == 0 {
        return None;
    }
    let i = spaces + digits;
    if b.get(i) == Some(&b'.') {
        let frac = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if frac > 0 && b.get(i + 1 + frac) == Some(&b' ') {
            return Some((spaces, digits));
        }
        return None;
    }
    (b.get(i) == Some(&b' ')).then_some((spaces, digits))
}

/// strace -r: every line that starts with spaces and a number has it
/// right-aligned in six columns (`%6ld.%06ld`), so the spaces are part of
/// the timestamp, not an indentation.
pub fn relative_times<S: AsRef<str>>(lines: &[S]) -> bool {
    let mut seen = false;
    for ln in lines {
        if let Some((spaces, digits)) = rel_time(ln.as_ref()) {
            if spaces + digits != 6 {
                return false;
            }
            seen = true;
        }
    }
    seen
}

/// The leading characters of `pre` that are in `set`.
fn leading(pre: &str, set: &[char]) -> String {
    pre.chars().take_while(|c| set.contains(c)).collect()
}

/// (prefix, quoted) shared by every non-blank line: e-mail `>` quoting, or
/// leading blanks that are not strace -r's right-aligned timestamps.
pub fn find_prefix<S: AsRef<str>>(lines: &[S]) -> (String, bool) {
    let body: Vec<&str> = lines
        .iter()
        .map(AsRef::as_ref)
        .filter(|l| !is_blank(l))
        .collect();
    if body.is_empty() {
        return (String::new(), false);
    }
    if body.iter().all(|l| l.starts_with('>')) {
        // lines that are only '>' are quoted blank lines
        let quoted: Vec<&str> = body
            .iter()
            .copied()
            .filter(|l| !strip_quote_end(l).is_empty())
            .collect();
        return (leading(&common_prefix(&quoted), &['>', ' ', '\t']), true);
    }
    let pre = leading(&common_prefix(&body), &[' ', '\t']);
    if pre.is_empty() || relative_times(&body) {
        return (String::new(), false);
    }
    (pre, false)
}

/// The layout of lines from a file's start.
pub fn layout<S: AsRef<str>>(lines: &[S], is_trace: &dyn Fn(&str) -> bool) -> Layout {
    let lines: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
    let (mut pre, mut quote) = find_prefix(&lines[..lines.len().min(PREFIX_LINES)]);
    if pre.is_empty() {
        // an indented or quoted trace under a preamble that is not: the
        // prefix of the lines from the first one that needs it
        for (i, ln) in lines.iter().take(DETECT_PREAMBLE).enumerate() {
            if ln.starts_with([' ', '\t', '>'])
                && !is_trace(ln)
                && is_trace(ln.trim_start_matches([' ', '\t', '>']))
            {
                (pre, quote) = find_prefix(&lines[i..lines.len().min(i + PREFIX_LINES)]);
                break;
            }
        }
    }
    let mut lay = Layout {
        first: 1,
        prefix: pre,
        quote,
    };
    for (i, ln) in lines.iter().enumerate() {
        let ln = if lay.prefix.is_empty() {
            ln
        } else {
            lay.unprefix(ln)
        };
        if is_trace(ln) {
            lay.first = i as u64 + 1;
            break;
        }
    }
    lay
}

/// The layout of a file from its first bytes (the last line counts only
/// when `complete`, i.e. the file ends there).
pub fn layout_of(head: &[u8], complete: bool, is_trace: &dyn Fn(&str) -> bool) -> Layout {
    let text = decode(head);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if !complete && lines.len() > 1 {
        lines.pop();
    }
    lines.truncate(DETECT_PREAMBLE);
    let lines: Vec<&str> = lines
        .into_iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    layout(&lines, is_trace)
}
