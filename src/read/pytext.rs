//! What Python's str methods and int()/float() do with the text of a line,
//! where the line patterns (Python re syntax, see [`py_regex`]) match
//! Unicode: `\d` is any decimal digit (category Nd), which int() and float()
//! read as well, and `\s` is str.isspace (Unicode White_Space plus U+001C..U+001F).

use regex::Regex;
use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

/// str.isspace for one character.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// str.strip()
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `not s.strip()`
pub fn is_blank(s: &str) -> bool {
    s.chars().all(is_space)
}

/// Python re's character classes for str patterns, as regex crate classes
/// (`\s` without U+001C..U+001F, `\w` with marks, would differ).
pub const S: &str = r"[\s\x1c-\x1f]";
pub const NS: &str = r"[^\s\x1c-\x1f]";
pub const W: &str = r"[\p{L}\p{N}_]";

/// Letters and digits (`\w` less `_`) to write inside a class: `%W`.
const LN: &str = r"\p{L}\p{N}";

/// A pattern written with Python's `\s`, `\S`, `\w` spelled as the classes
/// above (`%s`, `%S`, `%w`; `%W` inside a class), compiled.
pub fn py_regex(pat: &str) -> Regex {
    Regex::new(&spelled(pat, W, LN)).expect("a valid pattern")
}

fn spelled(pat: &str, w: &str, ln: &str) -> String {
    pat.replace("%s", S)
        .replace("%S", NS)
        .replace("%w", w)
        .replace("%W", ln)
}

/// A [`py_regex`] pattern compiled on first use for the text it is asked
/// about.  An ASCII text is matched by the pattern with its classes
/// restricted to ASCII, on bytes, with Unicode off (`(?-u)`: `\d` is
/// `[0-9]`, `\s` is `[\t\n\v\f\r ]`, `%w` is `[0-9A-Za-z_]`, and a
/// negated class matches any other byte): every class of it takes the same
/// ASCII characters as the Unicode one, so on ASCII text the two find the
/// same match (tested: `sniff_ascii_agrees`), and the ASCII one compiles in
/// a small part of the time (Unicode classes are large automata: compiling
/// the strace sniff's cost more than reading a small trace).  The Unicode
/// pattern is compiled only when a text that is not ASCII is asked.
pub struct PyRegex {
    pat: String,
    ascii: OnceLock<regex::bytes::Regex>,
    unicode: OnceLock<Regex>,
}

impl PyRegex {
    pub fn new(pat: impl Into<String>) -> Self {
        PyRegex {
            pat: pat.into(),
            ascii: OnceLock::new(),
            unicode: OnceLock::new(),
        }
    }

    /// The (start, end) of the leftmost-first match in `s`.
    pub fn find(&self, s: &str) -> Option<(usize, usize)> {
        if s.is_ascii() {
            self.find_ascii(s)
        } else {
            self.find_unicode(s)
        }
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.find(s).is_some()
    }

    /// The match with the ASCII pattern (`s` ASCII).
    pub(crate) fn find_ascii(&self, s: &str) -> Option<(usize, usize)> {
        let re = self.ascii.get_or_init(|| {
            let p = format!("(?-u){}", spelled(&self.pat, r"[0-9A-Za-z_]", "0-9A-Za-z"));
            regex::bytes::Regex::new(&p).expect("a valid pattern")
        });
        re.find(s.as_bytes()).map(|m| (m.start(), m.end()))
    }

    /// The match with the Unicode pattern (any `s`).
    pub(crate) fn find_unicode(&self, s: &str) -> Option<(usize, usize)> {
        let re = self.unicode.get_or_init(|| py_regex(&self.pat));
        re.find(s).map(|m| (m.start(), m.end()))
    }
}

static ND: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\A\d\z").unwrap());

fn is_nd(c: char) -> bool {
    let mut b = [0u8; 4];
    ND.is_match(c.encode_utf8(&mut b))
}

/// The value of a decimal digit (Nd characters come in runs of ten, 0 to 9).
pub fn digit_value(c: char) -> Option<u32> {
    if c.is_ascii_digit() {
        return Some(c as u32 - '0' as u32);
    }
    if !is_nd(c) {
        return None;
    }
    let mut start = c as u32;
    while let Some(p) = start.checked_sub(1).and_then(char::from_u32) {
        if !is_nd(p) {
            break;
        }
        start -= 1;
    }
    Some((c as u32 - start) % 10)
}

/// The text with every decimal digit written in ASCII (what int() and
/// float() do first).
pub fn ascii_digits(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.chars()
            .map(|c| match digit_value(c) {
                Some(v) if !c.is_ascii() => char::from_digit(v, 10).unwrap(),
                _ => c,
            })
            .collect(),
    )
}

/// int(s) of `-?\d+` text; None beyond i128.
pub fn int(s: &str) -> Option<i128> {
    ascii_digits(s).parse().ok()
}

/// float(s) of `-?\d+(\.\d+)?` text.
pub fn float(s: &str) -> f64 {
    ascii_digits(s).parse().unwrap_or(f64::NAN)
}

/// A non-negative number in hex (`0x...`, any length) as u128 when it fits.
pub fn hex(digits: &str) -> Option<u128> {
    let d = digits.trim_start_matches('0');
    if d.len() > 32 {
        return None;
    }
    if d.is_empty() {
        return Some(0);
    }
    u128::from_str_radix(d, 16).ok()
}

/// int(s, 0) of `0x[0-9a-fA-F]+` or `\d+` text: None where Python raises
/// (a decimal with a leading zero), Some(None) where it does not fit u128.
pub fn int_base0(s: &str) -> Option<Option<u128>> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return Some(hex(h));
    }
    let a = ascii_digits(s);
    if a.len() > 1 && a.starts_with('0') && a.bytes().any(|b| b != b'0') {
        return None;
    }
    Some(a.parse().ok())
}

/// The first `n` characters of `s`.
pub fn head_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
