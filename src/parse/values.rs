//! The general argument scanner over bytes (for the lists the tokenizer's
//! well-formed language refuses), escapes, fd decorations, integers, flags,
//! `_IOC(…)` and `parse_value` into [`Value`].
//!
//! Lines are bytes (the front keeps them as str decoded with surrogateescape).
//! Python's `\s`, `\d`, `\w` and `str.strip()` are Unicode-aware; here they
//! are their ASCII meaning, which is the same on every ASCII line.  The
//! bracketed values go through [`tokens::bracketed`], as the tokenizer's do,
//! so that both paths give the same values.
//!
//! The argument scanner is in values/scan.rs, the one-pass parse of the
//! usual decoded struct in values/quick.rs.

use crate::events::{Name, Text, Value};
use crate::kfd::{self, FIELD_NAMES};
pub(crate) use crate::parse::lex::char_end;
use crate::parse::lex::utf8_width;
pub use crate::parse::lex::{all_but, at, skip};
use crate::parse::tokens::{self, Builder};
use memchr::{memchr, memmem};
use std::borrow::Cow;

mod scan;

use scan::{is_closer, is_opener, items};
pub use scan::{matching, scan_args, split_top};

/// `str.isspace()` / re's `\s` on ASCII (with the \x1c-\x1f separators)
pub fn is_ws(c: u8) -> bool {
    c == b' ' || (9..=13).contains(&c) || (0x1c..=0x1f).contains(&c)
}

/// re's `\w` on ASCII
pub fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

pub fn strip(s: &[u8]) -> &[u8] {
    let a = s.iter().take_while(|&&c| is_ws(c)).count();
    let mut b = s.len();
    while b > a && is_ws(s[b - 1]) {
        b -= 1;
    }
    &s[a..b]
}

pub fn lstrip(s: &[u8]) -> &[u8] {
    &s[s.iter().take_while(|&&c| is_ws(c)).count()..]
}

pub fn rstrip(s: &[u8]) -> &[u8] {
    let mut b = s.len();
    while b > 0 && is_ws(s[b - 1]) {
        b -= 1;
    }
    &s[..b]
}

pub fn contains(s: &[u8], needle: &[u8]) -> bool {
    find(s, needle).is_some()
}

/// The first `needle` in `s`.  The needles here are short and start with a
/// byte that is rare in a line; memmem would build a searcher per call,
/// which costs more than these searches.
pub fn find(s: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    if s.len() < needle.len() {
        return None;
    }
    memchr::memchr_iter(first, &s[..s.len() - rest.len()]).find(|&i| s[i + 1..].starts_with(rest))
}

/// `find(s, b"/*")` from the rare `*`: paths have a `/` at every step, and
/// a search from `/` stops at each.
pub fn comment_start(s: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'*', s)
        .find(|&i| i > 0 && s[i - 1] == b'/')
        .map(|i| i - 1)
}

pub fn rfind(s: &[u8], needle: &[u8]) -> Option<usize> {
    memmem::rfind(s, needle)
}

/// `str.split()`: runs of non-whitespace
pub fn split_ws(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    s.split(|&c| is_ws(c)).filter(|p| !p.is_empty())
}

// --- strings, decorations, comments -------------------------------------

/// Past the string whose quote is at `i` (and a `...`).
pub fn string_end(s: &[u8], i: usize) -> usize {
    let mut k = i + 1;
    loop {
        let Some(q) = memchr::memchr2(b'"', b'\\', &s[k.min(s.len())..]) else {
            return s.len();
        };
        k += q;
        if s[k] == b'\\' {
            if k + 1 >= s.len() {
                return s.len();
            }
            k += 2;
        } else {
            k += 1;
            if s[k..].starts_with(b"...") {
                k += 3;
            }
            return k;
        }
    }
}

/// The general decoration scan: past the decoration at `i`.
pub fn deco_end(s: &[u8], i: usize) -> usize {
    let n = s.len();
    let mut depth: i64 = 0;
    let mut j = i;
    loop {
        let Some(k) = s[j.min(n)..]
            .iter()
            .position(|&c| matches!(c, b'\\' | b'"' | b'<' | b'>'))
            .map(|q| j + q)
        else {
            return n;
        };
        match s[k] {
            b'\\' => j = k + 2,
            b'"' => j = string_end(s, k),
            b'<' => {
                depth += 1;
                j = k + 1;
            }
            _ => {
                if k > 0
                    && s[k - 1] == b'-'
                    && depth > 0
                    && k + 1 < n
                    && (s[k + 1].is_ascii_digit() || s[k + 1] == b'[')
                {
                    j = k + 1;
                    continue;
                }
                depth -= 1;
                j = k + 1;
                if depth <= 0 {
                    if s[j..].starts_with(b"(deleted)") {
                        j += 9;
                    }
                    return j;
                }
            }
        }
        if j >= n {
            return n;
        }
    }
}

/// Past the comment at `k`, nested ones counted.
pub fn comment_end(s: &[u8], k: usize) -> usize {
    let mut depth = 0;
    let mut j = k;
    while j + 1 < s.len() {
        if s[j] == b'/' && s[j + 1] == b'*' {
            depth += 1;
            j += 2;
        } else if s[j] == b'*' && s[j + 1] == b'/' {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else {
            j += 1;
        }
    }
    s.len()
}

fn skip_opaque(s: &[u8], k: usize, c: u8, flat: bool) -> usize {
    match c {
        b'"' => string_end(s, k),
        b'<' => {
            if at(s, k + 1) == b'<' {
                k + 2
            } else {
                deco_end(s, k)
            }
        }
        b'\'' => char_end(s, k).unwrap_or(k + 1),
        _ => {
            if flat {
                match find(&s[(k + 2).min(s.len())..], b"*/") {
                    Some(e) => k + 2 + e + 2,
                    None => s.len(),
                }
            } else {
                comment_end(s, k)
            }
        }
    }
}

// --- escapes ---------------------------------------------------------------

/// C escapes resolved to bytes, then bytes that are not
/// UTF-8 written `\xNN` (only when there was an escape).
pub fn unescape(text: &[u8]) -> Vec<u8> {
    if memchr(b'\\', text).is_none() {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    let n = text.len();
    while i < n {
        let c = text[i];
        if c != b'\\' || i + 1 >= n {
            out.push(c);
            i += 1;
            continue;
        }
        let e = i + 1;
        let d = text[e];
        if d == b'x' && at(text, e + 1).is_ascii_hexdigit() {
            let h = skip(text, e + 1, |c| c.is_ascii_hexdigit()).min(e + 3);
            out.push(
                u8::from_str_radix(std::str::from_utf8(&text[e + 1..h]).unwrap(), 16).unwrap(),
            );
            i = h;
        } else if (b'0'..=b'3').contains(&d)
            && (b'0'..=b'7').contains(&at(text, e + 1))
            && (b'0'..=b'7').contains(&at(text, e + 2))
        {
            out.push((d - b'0') * 64 + (text[e + 1] - b'0') * 8 + (text[e + 2] - b'0'));
            i = e + 3;
        } else if (b'0'..=b'7').contains(&d) {
            let o = skip(text, e, |c| (b'0'..=b'7').contains(&c)).min(e + 2);
            let mut v = 0u8;
            for &x in &text[e..o] {
                v = v * 8 + (x - b'0');
            }
            out.push(v);
            i = o;
        } else {
            let simple = match d {
                b'n' => Some(10),
                b't' => Some(9),
                b'r' => Some(13),
                b'v' => Some(11),
                b'f' => Some(12),
                b'a' => Some(7),
                b'b' => Some(8),
                b'e' => Some(27),
                b'\\' => Some(92),
                b'"' => Some(34),
                b'\'' => Some(39),
                b'?' => Some(63),
                _ => None,
            };
            match simple {
                Some(b) => {
                    out.push(b);
                    i = e + 1;
                }
                None => {
                    let w = utf8_width(text, e);
                    out.extend_from_slice(&text[e..e + w]);
                    i = e + w;
                }
            }
        }
    }
    // decode("utf-8", "backslashreplace")
    let mut res = Vec::with_capacity(out.len());
    for chunk in out.utf8_chunks() {
        res.extend_from_slice(chunk.valid().as_bytes());
        for b in chunk.invalid() {
            res.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    res
}

/// (text, truncated) of a quoted token.
pub fn parse_string(tok: &[u8]) -> (Vec<u8>, bool) {
    let trunc = tok.ends_with(b"...") && !tok.ends_with(b"\\\"...");
    let mut body = if trunc { &tok[..tok.len() - 3] } else { tok };
    if let Some(b) = body.strip_prefix(b"\"") {
        body = b;
    }
    if let Some(b) = body.strip_suffix(b"\"") {
        body = b;
    }
    (unescape(body), trunc)
}

/// The path of an fd decoration's inside (`/dev/kfd`, `/x (deleted)`,
/// nested `<char M:m>` / `<pid comm>` parts left out).
pub fn decoration_path(inner: &[u8]) -> Vec<u8> {
    let mut inner = inner;
    let mut deleted = false;
    if let Some(x) = inner.strip_suffix(b" (deleted)") {
        deleted = true;
        inner = x;
    }
    if memchr(b'<', inner).is_some() {
        let cut = if memchr(b'"', inner).is_none() {
            memchr(b'<', inner)
        } else {
            let mut cut = None;
            let mut j = 0;
            while j < inner.len() {
                let c = inner[j];
                if c == b'\\' {
                    j += 2;
                    continue;
                }
                if c == b'"' {
                    j = string_end(inner, j);
                    continue;
                }
                if c == b'<' {
                    cut = Some(j);
                    break;
                }
                j += 1;
            }
            cut
        };
        if let Some(cut) = cut
            && cut > 0
            && inner.ends_with(b">")
        {
            inner = &inner[..cut];
        }
    }
    let mut path = unescape(inner);
    if deleted {
        path.extend_from_slice(b" (deleted)");
    }
    path
}

/// Python's `int(text, 0)`: sign, whitespace, `0x`/`0o`/`0b`, underscores
/// between digits, no leading zero in a decimal other than zeros.
pub fn int0(text: &[u8]) -> Option<i128> {
    if let Some(v) = plain_signed(text) {
        return Some(v);
    }
    int0_long(text)
}

/// [`int0`] of any text.
fn int0_long(text: &[u8]) -> Option<i128> {
    let t = strip(text);
    let (neg, t) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) =
        if t.len() > 1 && t[0] == b'0' && matches!(t[1] | 0x20, b'x' | b'o' | b'b') {
            let r = match t[1] | 0x20 {
                b'x' => 16,
                b'o' => 8,
                _ => 2,
            };
            // an underscore may follow the prefix
            let d = &t[2..];
            (r, d.strip_prefix(b"_").unwrap_or(d))
        } else {
            (10, t)
        };
    if digits.is_empty() || digits[0] == b'_' || digits[digits.len() - 1] == b'_' {
        return None;
    }
    let mut v: i128 = 0;
    let mut prev_us = false;
    let mut nz = false;
    for &c in digits {
        if c == b'_' {
            if prev_us {
                return None;
            }
            prev_us = true;
            continue;
        }
        prev_us = false;
        let d = (c as char).to_digit(radix)? as i128;
        if d != 0 {
            nz = true;
        }
        v = v.checked_mul(radix as i128)?.checked_add(d)?;
    }
    if radix == 10 && digits[0] == b'0' && nz {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// (fd, path) of `3`, `0x3`, `3</dev/kfd<char 1:3>>`.
pub fn parse_fd(tok: &[u8]) -> (Option<i128>, Option<Vec<u8>>) {
    let Some(&c) = tok.first() else {
        return (None, None);
    };
    if !(c.is_ascii_digit() || c == b'-') {
        return (None, None);
    }
    let Some(lt) = memchr(b'<', tok) else {
        return (int0(tok), None);
    };
    if at(tok, lt + 1) == b'<' {
        return (None, None);
    }
    let Some(fd) = int0(&tok[..lt]) else {
        return (None, None);
    };
    let mut rest = &tok[lt..];
    let mut deleted = false;
    if let Some(r) = rest.strip_suffix(b"(deleted)") {
        rest = r;
        deleted = true;
    }
    if !rest.ends_with(b">") {
        return (Some(fd), None);
    }
    let mut path = decoration_path(&rest[1..rest.len() - 1]);
    if deleted && !path.ends_with(b" (deleted)") {
        path.extend_from_slice(b" (deleted)");
    }
    (Some(fd), Some(path))
}

/// `fd=3` -> (Some("fd"), "3").
pub fn strip_name(arg: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let Some(eq) = memchr(b'=', arg) else {
        return (None, arg);
    };
    if eq == 0 || eq > 40 {
        return (None, arg);
    }
    let name = &arg[..eq];
    if !(name[0].is_ascii_alphabetic() || name[0] == b'_') || !name.iter().all(|&c| is_word(c)) {
        return (None, arg);
    }
    if matches!(at(arg, eq + 1), b'=' | b'>') {
        return (None, arg);
    }
    (Some(name), &arg[eq + 1..])
}

/// Decimal, `0x` hex, `0644` octal (`-` allowed).
/// None also for numbers past i128.
pub fn parse_int(tok: &[u8]) -> Option<i128> {
    if let Some(v) = plain_signed(tok) {
        return Some(v);
    }
    parse_int_long(tok)
}

/// [`parse_int`] of any token.
fn parse_int_long(tok: &[u8]) -> Option<i128> {
    let tok = strip(tok);
    if tok.is_empty() {
        return None;
    }
    let neg = tok[0] == b'-';
    let t = if neg { &tok[1..] } else { tok };
    let hex = t.len() > 2 && t[0] == b'0' && t[1] == b'x';
    // the usual number (an address, a size, a small decimal) fits a u64:
    // check and sum its digits in one pass
    if let Some(v) = short_int(t, hex) {
        let v = i128::from(v?);
        return Some(if neg { -v } else { v });
    }
    let ok = if hex {
        t.len() - 2 <= 64 && t[2..].iter().all(u8::is_ascii_hexdigit)
    } else {
        !t.is_empty() && t.len() <= 64 && t.iter().all(u8::is_ascii_digit)
    };
    if !ok {
        return None;
    }
    let v = if hex {
        radix_value(&t[2..], 16)?
    } else if t.len() > 1 && t[0] == b'0' {
        radix_value(t, 8).or_else(|| radix_value(t, 10))?
    } else {
        radix_value(t, 10)?
    };
    Some(if neg { -v } else { v })
}

/// parse_int of the unsigned text `t` when it is hex of at most 15 digits
/// or a decimal of at most 19 without a leading zero: `Some(None)` when a
/// byte is no digit, `None` for every other text (the general way takes it).
fn short_int(t: &[u8], hex: bool) -> Option<Option<u64>> {
    if hex {
        let d = &t[2..];
        if d.len() > 15 {
            return None;
        }
        let mut v: u64 = 0;
        for &c in d {
            let x = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return Some(None),
            };
            v = v << 4 | u64::from(x);
        }
        return Some(Some(v));
    }
    if t.is_empty() || t.len() > 19 || (t[0] == b'0' && t.len() > 1) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        let x = c.wrapping_sub(b'0');
        if x > 9 {
            return Some(None);
        }
        v = v * 10 + u64::from(x);
    }
    Some(Some(v))
}

/// `i128::from_str_radix(digits, radix)` for non-empty ASCII digits:
/// `None` for a digit outside the radix or a value past i128::MAX.  Short
/// numbers (every address and size) are summed in a u64 without checks.
fn radix_value(d: &[u8], radix: u32) -> Option<i128> {
    let digit = |c: u8| (c as char).to_digit(radix);
    let fits_u64 = match radix {
        16 => 15,
        10 => 19,
        _ => 21,
    };
    if d.len() <= fits_u64 {
        let mut v: u64 = 0;
        for &c in d {
            v = v * u64::from(radix) + u64::from(digit(c)?);
        }
        return Some(v.into());
    }
    let mut v: i128 = 0;
    for &c in d {
        v = v.checked_mul(radix.into())?.checked_add(digit(c)?.into())?;
    }
    Some(v)
}

/// (value, comment) of `0x80084b01 /* NAME */`.
pub fn strip_comment(tok: &[u8]) -> (Cow<'_, [u8]>, Option<&[u8]>) {
    let Some(i) = comment_start(tok) else {
        return (Cow::Borrowed(tok), None);
    };
    let e = comment_end(tok, i);
    let closed = tok[..e].ends_with(b"*/") && e - i >= 4;
    let comment = strip(&tok[i + 2..if closed { e - 2 } else { e }]);
    let rest = if e >= tok.len() {
        Cow::Borrowed(strip(&tok[..i]))
    } else {
        let mut r = tok[..i].to_vec();
        r.extend_from_slice(&tok[e..]);
        Cow::Owned(strip(&r).to_vec())
    };
    (rest, Some(comment))
}

/// The name tables of parse_flags.
pub type Names = &'static [(&'static str, i128)];

fn flag_part(part: &[u8], names: Option<Names>) -> Option<i128> {
    if let Some(v) = parse_int(part) {
        return Some(v);
    }
    // (every name is UTF-8: bytes that are not match none, as before)
    if let Some(t) = names
        && let Some(&(_, v)) = t.iter().find(|x| x.0.as_bytes() == part)
    {
        return Some(v);
    }
    kfd::constant_bytes(part).map(i128::from)
}

/// `A|B|0x100` when every part is known.
pub fn parse_flags(tok: &[u8], names: Option<Names>) -> Option<i128> {
    let (tok, _) = strip_comment(tok);
    let mut total: i128 = 0;
    for part in tok.split(|&c| c == b'|') {
        let part = strip(part);
        if let Some(k) = find(part, b"<<") {
            let va = flag_part(strip(&part[..k]), names)?;
            let vb = flag_part(strip(&part[k + 2..]), names)?;
            if !(0..128).contains(&vb) {
                return None;
            }
            total |= va
                .checked_shl(vb as u32)
                .filter(|_| va.unsigned_abs().leading_zeros() as i128 > vb)?;
            continue;
        }
        total |= flag_part(part, names)?;
    }
    Some(total)
}

/// The request of `_IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x28)`.
pub fn parse_ioc(tok: &[u8]) -> Option<u32> {
    let inner = tok.strip_prefix(b"_IOC(")?.strip_suffix(b")")?;
    let parts: Vec<&[u8]> = inner.split(|&c| c == b',').map(strip).collect();
    if parts.len() != 4 {
        return None;
    }
    let mut d: i128 = 0;
    for p in parts[0].split(|&c| c == b'|') {
        let p = strip(p);
        d |= match p {
            b"_IOC_NONE" => 0,
            b"_IOC_WRITE" => 1,
            b"_IOC_READ" => 2,
            _ => parse_int(p)?,
        };
    }
    let t = parse_int(parts[1])?;
    let nr = parse_int(parts[2])?;
    let size = parse_int(parts[3])?;
    Some(kfd::ioc(
        (d & 3) as u8,
        (t & 0xFF) as u8,
        (nr & 0xFF) as u8,
        (size & 0x3FFF) as u16,
    ))
}

// --- values ------------------------------------------------------------------

mod quick;

pub const MAX_NESTING: isize = 64;
const MAX_CHAIN: usize = 8;

fn int_value(v: i128, text: &[u8]) -> Value {
    Value::int(v).unwrap_or_else(|| Value::Raw(Text::from(text)))
}

/// The value of the usual number token, read straight off: `0x` and 1 to
/// 15 hex digits, or 1 to 18 decimal digits without a leading zero (`0`
/// alone too), and nothing else, not even whitespace.  What [`value`]
/// makes of such a token by its longer way (no name, no comment, no
/// bracket, no string: [`parse_int`]'s short form, a value an i64 holds),
/// so `None` for any other token, which takes that way.  (An intent
/// call's addresses and sizes are such tokens, and the longer way cost
/// some 500 instructions each.)
fn plain_int(tok: &[u8]) -> Option<Value> {
    // (below 2^60: an i64)
    plain_u64(tok).map(|v| Value::Int(v as i64))
}

/// The value of the usual number token: `0x` and 1 to 15 hex digits, or 1
/// to 18 decimal digits without a leading zero (`0` alone too), and
/// nothing else; `None` for any other token.  Every reader of numbers here
/// ([`parse_int`], [`int0`], [`value`]) reads such a token as this value
/// (the tests compare them), and tries this first.
pub fn plain_u64(tok: &[u8]) -> Option<u64> {
    use crate::parse::lex::{dec_run, hex_run};
    let (end, v) = match tok {
        [b'0', b'x', d @ ..] if (1..=15).contains(&d.len()) => hex_run(tok, 2),
        [b'0'] => (1, 0),
        [b'1'..=b'9', ..] if tok.len() <= 18 => dec_run(tok, 0),
        _ => return None,
    };
    (end == tok.len()).then_some(v)
}

/// [`plain_u64`] after an optional `-`, signed.
fn plain_signed(tok: &[u8]) -> Option<i128> {
    match tok {
        [b'-', t @ ..] => plain_u64(t).map(|v| -i128::from(v)),
        t => plain_u64(t).map(i128::from),
    }
}

/// The value of `[N, N, ...]` (at least one N, each a [`plain_int`] token,
/// `, ` between them and nothing else): the list of their values, as the
/// general way reads it; `None` for any other token.  (An intent call's
/// agent and out-pointer lists are such tokens: `[0x5612a0]`.)
fn plain_list(tok: &[u8]) -> Option<Value> {
    let inner = tok.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let mut out = Vec::with_capacity(1);
    let mut rest = inner;
    loop {
        let (item, more) = match memchr(b',', rest) {
            Some(k) => (&rest[..k], Some(rest[k + 1..].strip_prefix(b" ")?)),
            None => (rest, None),
        };
        out.push(plain_int(item)?);
        match more {
            Some(m) => rest = m,
            None => return Some(Value::List(out)),
        }
    }
}

/// The value of an argument token (no name table: every caller passes none).
pub fn parse_value(tok: &[u8]) -> Value {
    if let Some(v) = plain_int(tok).or_else(|| plain_list(tok)) {
        return v;
    }
    if tok.len() > 4 * MAX_NESTING as usize && too_deep(tok) {
        return Value::Raw(Text::from(strip(tok)));
    }
    if let Some(v) = quick::quick(tok) {
        return v;
    }
    parse(tok, 0)
}

/// More than MAX_NESTING openers with no bracket between.
fn too_deep(tok: &[u8]) -> bool {
    // a run is at most all the openers: a token without that many (every
    // decoded struct) needs no byte-by-byte walk
    if memchr::memchr3_iter(b'(', b'{', b'[', tok)
        .nth(MAX_NESTING as usize)
        .is_none()
    {
        return false;
    }
    let mut run = 0;
    for &c in tok {
        if is_opener(c) {
            run += 1;
            if run > MAX_NESTING {
                return true;
            }
        } else if is_closer(c) {
            run = 0;
        }
    }
    false
}

fn parse(tok: &[u8], depth: isize) -> Value {
    if memchr::memchr2(b'{', b'[', tok).is_none() {
        return value(tok, 0);
    }
    match std::str::from_utf8(tok) {
        Ok(t) => {
            let mut b = Values;
            match tokens::bracketed(t, depth, MAX_NESTING, &mut b) {
                Ok(v) => v,
                Err(never) => match never {},
            }
        }
        // not ASCII: bracketed hands it to the general grammar whole
        Err(_) => value(tok, depth),
    }
}

/// Builds [`Value`]s for [`tokens::bracketed`].
struct Values;

impl<'a> Builder<'a> for Values {
    type Value = Value;
    type Error = std::convert::Infallible;

    fn scalar(&mut self, text: &'a str) -> Result<Value, Self::Error> {
        Ok(value(text.as_bytes(), 0))
    }

    fn general(&mut self, text: &'a str, depth: isize) -> Result<Value, Self::Error> {
        Ok(value(text.as_bytes(), depth))
    }

    fn text(&mut self, text: &'a str) -> Result<Value, Self::Error> {
        Ok(Value::Raw(Text::from(text)))
    }

    fn list(&mut self, items: impl ExactSizeIterator<Item = Value>) -> Result<Value, Self::Error> {
        Ok(Value::List(items.collect()))
    }

    fn dict(
        &mut self,
        fields: impl Iterator<Item = (&'a str, Value)>,
    ) -> Result<Value, Self::Error> {
        Ok(Value::Struct(dict_of(
            fields.map(|(k, v)| (k.as_bytes(), v)),
        )))
    }

    fn pair(&mut self, entry: Value, exit: Value) -> Result<Value, Self::Error> {
        Ok(Value::Pair(Box::new((entry, exit))))
    }

    // one stack per thread, not two allocations per struct (a nested walk,
    // through `general`, finds it taken and makes its own)
    fn stack(&mut self) -> Vec<Value> {
        let v = STACK.with(|c| c.take());
        if v.capacity() == 0 {
            Vec::with_capacity(32)
        } else {
            v
        }
    }

    fn unstack(&mut self, mut stack: Vec<Value>) {
        stack.clear();
        STACK.with(|c| c.replace(stack));
    }
}

thread_local! {
    static STACK: std::cell::Cell<Vec<Value>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A field name: static when it is one the decoders print (no allocation
/// for the usual struct), else its own copy.
pub fn field_name(k: &[u8]) -> Name {
    // the names of k's length, then the first byte before the whole name
    // (one compare of the bytes for the usual field, not a binary search's
    // several)
    if let Some(&start) = FIRST_OF_LEN.get(k.len())
        && start != NO_NAME
    {
        for &n in FIELD_NAMES[start as usize..]
            .iter()
            .take_while(|n| n.len() == k.len())
        {
            if n.as_bytes()[0] == k[0] && n.as_bytes() == k {
                return Cow::Borrowed(n);
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(k).into_owned())
}

const NO_NAME: u8 = u8::MAX;

/// The index in FIELD_NAMES of the first name of each length (NO_NAME for
/// none; the empty name is none).
const FIRST_OF_LEN: [u8; 33] = {
    assert!(FIELD_NAMES.len() < NO_NAME as usize);
    let mut t = [NO_NAME; 33];
    let mut i = FIELD_NAMES.len();
    while i > 0 {
        i -= 1;
        t[FIELD_NAMES[i].len()] = i as u8;
    }
    t[0] = NO_NAME;
    t
};

/// Dict-style keys: a repeated key keeps its first place, the last value.
fn dict_of<'k>(fields: impl Iterator<Item = (&'k [u8], Value)>) -> Vec<(Name, Value)> {
    // (the walk's fields come with their exact count: one allocation)
    let mut out: Vec<(Name, Value)> = Vec::with_capacity(fields.size_hint().0);
    for (k, v) in fields {
        let name = field_name(k);
        // two names from FIELD_NAMES are the same name iff the same entry
        let same = |n: &Name| match (n, &name) {
            (Cow::Borrowed(a), Cow::Borrowed(b)) => std::ptr::eq(*a, *b),
            _ => *n == name,
        };
        match out.iter_mut().find(|(n, _)| same(n)) {
            Some(slot) => slot.1 = v,
            None => out.push((name, v)),
        }
    }
    out
}

/// `value` of a bare name (`[A-Za-z_]\w*`), most scalars of a decoded
/// struct: of value's steps only the NULL test and parse_flags' constant
/// lookup can take it, so it goes there without the scans for comments,
/// fds, chains and `|`.
fn bare_name(tok: &[u8]) -> Value {
    if tok == b"NULL" {
        return Value::Int(0);
    }
    match kfd::constant_bytes(tok) {
        Some(v) => int_value(v.into(), tok),
        None => Value::Raw(Text::from(tok)),
    }
}

/// The value of `tok` at nesting `depth`.
fn value(tok: &[u8], depth: isize) -> Value {
    let tok = strip(tok);
    if let Some(v) = plain_int(tok) {
        return v;
    }
    value_long(tok, depth)
}

/// [`value`] of a stripped token the long way.
fn value_long(tok: &[u8], depth: isize) -> Value {
    if tok.is_empty() {
        return Value::Raw(Text::default());
    }
    if (tok[0].is_ascii_alphabetic() || tok[0] == b'_') && tok.iter().all(|&c| is_word(c)) {
        return bare_name(tok);
    }
    let stripped;
    let tok: &[u8] = if contains(tok, b"/*") {
        stripped = strip_comment(tok).0;
        if stripped.is_empty() {
            return Value::Raw(Text::default());
        }
        &stripped
    } else {
        tok
    };
    let c = tok[0];
    if c == b'{' || c == b'[' {
        if depth > MAX_NESTING {
            return Value::Raw(Text::from(tok));
        }
        let end = matching(tok, 0);
        let depth = depth + 1;
        if end == Some(tok.len() - 1) {
            let its = items(tok, tok.len() - 1);
            if c == b'[' {
                return Value::List(
                    its.iter()
                        .filter(|x| !x.is_empty() && &x[..] != b"...")
                        .map(|x| parse(x, depth))
                        .collect(),
                );
            }
            let mut fields: Vec<(&[u8], Value)> = Vec::new();
            for x in &its {
                if x.is_empty() || &x[..] == b"..." {
                    continue;
                }
                let (k, v) = strip_name(x);
                let Some(k) = k else { continue };
                fields.push((k, parse(v, depth)));
            }
            return Value::Struct(dict_of(fields.into_iter()));
        }
        if let Some(end) = end.filter(|&e| e > 0) {
            let rest = strip(&tok[end + 1..]);
            if let Some(r) = rest.strip_prefix(b"=>") {
                return Value::Pair(Box::new((parse(&tok[..end + 1], depth), parse(r, depth))));
            }
        }
        return Value::Raw(Text::from(tok));
    }
    if c == b'"' {
        return Value::Str(Text(parse_string(tok).0.into()));
    }
    if let Some(v) = parse_int(tok) {
        return int_value(v, tok);
    }
    if tok == b"NULL" {
        return Value::Int(0);
    }
    if (c.is_ascii_digit() || c == b'-')
        && memchr(b'<', tok).is_some()
        && let (Some(fd), _) = parse_fd(tok)
    {
        return int_value(fd, tok);
    }
    if tok.starts_with(b"_IOC(") {
        return match parse_ioc(tok) {
            Some(r) => Value::Int(r.into()),
            None => Value::Raw(Text::from(tok)),
        };
    }
    let first = find(tok, b" => ");
    let chain = match first {
        None => 0,
        Some(k) => 1 + memmem::find_iter(&tok[k + 4..], b" => ").count(),
    };
    if chain > 0 && chain <= MAX_CHAIN {
        let k = first.unwrap();
        return Value::Pair(Box::new((
            parse_value(&tok[..k]),
            parse_value(&tok[k + 4..]),
        )));
    }
    match parse_flags(tok, None) {
        Some(f) => int_value(f, tok),
        None => Value::Raw(Text::from(tok)),
    }
}

#[cfg(test)]
mod tests;
