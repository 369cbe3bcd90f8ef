//! The well-formed language: the argument scanner that splits a call's
//! arguments and a bracketed value's items at their top-level commas, a
//! possessive match of the line grammar's atoms and nested groups first,
//! then the general bracket walk for what that refuses.

use super::*;

/// `[^"<>(){}\[\],/']`
const PLAIN: [bool; 256] = all_but(b"\"<>(){}[],/'");

/// The atom alternatives after the plain run, at `j` (text ends at `end`).
fn wf_atom(s: &[u8], j: usize, end: usize) -> Option<usize> {
    let c = s[j];
    let s = &s[..end];
    match c {
        b'"' => {
            // "(?:[^"\\]|\\.)*+"(?:\.\.\.)?
            let mut k = j + 1;
            loop {
                let q = memchr::memchr2(b'"', b'\\', &s[k.min(end)..])?;
                k += q;
                if s[k] == b'\\' {
                    if k + 1 >= end || s[k + 1] == b'\n' {
                        return None;
                    }
                    k += 2;
                } else {
                    k += 1;
                    if s[k..].starts_with(b"...") {
                        k += 3;
                    }
                    return Some(k);
                }
            }
        }
        b'\'' => Some(char_end(s, j).unwrap_or(j + 1)),
        b'<' => {
            if at(s, j + 1) == b'<' {
                return Some(j + 2);
            }
            tokens::deco_end(s, j)
        }
        b'/' => {
            if at(s, j + 1) != b'*' {
                return Some(j + 1);
            }
            // /\*(?:[^*/]|\*(?!/)|/(?!\*))*+\*/
            let mut k = j + 2;
            while k < end {
                match s[k] {
                    b'*' if at(s, k + 1) == b'/' => return Some(k + 2),
                    b'/' if at(s, k + 1) == b'*' => return None,
                    _ => k += 1,
                }
            }
            None
        }
        b'>' => Some(j + 1),
        _ => None,
    }
}

pub(super) fn is_opener(c: u8) -> bool {
    matches!(c, b'(' | b'{' | b'[')
}

pub(super) fn is_closer(c: u8) -> bool {
    matches!(c, b')' | b'}' | b']')
}

/// The possessive match of `(?:atom|nest)*+` (inside a group also `,`)
/// from `j`, up to `end`.
fn wf(s: &[u8], mut j: usize, end: usize, left: usize, nested: bool) -> usize {
    while j < end {
        let c = s[j];
        if PLAIN[c as usize] {
            j = skip(&s[..end], j + 1, |c| PLAIN[c as usize]);
            continue;
        }
        if c == b',' {
            if nested {
                j += 1;
                continue;
            }
            return j;
        }
        if let Some(k) = wf_atom(s, j, end) {
            j = k;
            continue;
        }
        if is_opener(c) && left > 0 {
            let k = wf(s, j + 1, end, left - 1, true);
            if k < end && is_closer(s[k]) {
                j = k + 1;
                continue;
            }
        }
        return j;
    }
    j
}

const WF_DEPTH: usize = 6;

/// The stripped top-level arguments from `pos` and the
/// index of the closing `)` (None when it never closes).
pub fn scan_args(s: &[u8], pos: usize) -> (Vec<&[u8]>, Option<usize>) {
    let n = s.len();
    let mut args = Vec::new();
    let mut j = pos;
    loop {
        let e = wf(s, j, n, WF_DEPTH, false);
        if e >= n {
            let tail = strip(&s[j.min(n)..]);
            if !tail.is_empty() {
                args.push(tail);
            }
            return (args, None);
        }
        match s[e] {
            b',' => {
                args.push(strip(&s[j..e]));
                j = e + 1;
            }
            b')' => {
                let tail = strip(&s[j..e]);
                if !tail.is_empty() || !args.is_empty() {
                    args.push(tail);
                }
                return (args, Some(e));
            }
            _ => break,
        }
    }
    general_scan_args(s, pos)
}

fn general_scan_args(s: &[u8], pos: usize) -> (Vec<&[u8]>, Option<usize>) {
    let r = scan_args_once(s, pos, false);
    if r.1.is_none() && contains(s, b"/*") {
        let other = scan_args_once(s, pos, true);
        if other.1.is_some() {
            return other;
        }
    }
    r
}

/// The next bracket, comma or stray `>` from `j`.
fn next_structure(s: &[u8], mut j: usize, flat: bool) -> Option<(usize, u8)> {
    let n = s.len();
    while j < n {
        let c = s[j];
        match c {
            b'"' | b'<' | b'\'' => j = skip_opaque(s, j, c, flat),
            b'/' if at(s, j + 1) == b'*' => j = skip_opaque(s, j, c, flat),
            b',' | b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'>' => return Some((j, c)),
            _ => j += 1,
        }
    }
    None
}

fn scan_args_once(s: &[u8], pos: usize, flat: bool) -> (Vec<&[u8]>, Option<usize>) {
    if let Some(close) = memchr(b')', &s[pos.min(s.len())..]).map(|q| pos + q) {
        let seg = &s[pos..close];
        if !seg
            .iter()
            .any(|&c| matches!(c, b'"' | b'<' | b'{' | b'[' | b'('))
            && !contains(seg, b"/*")
        {
            let seg = strip(seg);
            let args = if seg.is_empty() {
                vec![]
            } else {
                seg.split(|&c| c == b',').map(strip).collect()
            };
            return (args, Some(close));
        }
    }
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut start = pos;
    let mut j = pos;
    while let Some((k, c)) = next_structure(s, j, flat) {
        j = k + 1;
        if is_opener(c) {
            depth += 1;
        } else if is_closer(c) {
            if depth > 0 {
                depth -= 1;
            } else if c == b')' {
                let tail = strip(&s[start..k]);
                if !tail.is_empty() || !args.is_empty() {
                    args.push(tail);
                }
                return (args, Some(k));
            }
        } else if c == b',' && depth == 0 {
            args.push(strip(&s[start..k]));
            start = k + 1;
        }
    }
    let tail = strip(&s[start.min(s.len())..]);
    if !tail.is_empty() {
        args.push(tail);
    }
    (args, None)
}

/// `s` split at top-level commas.
pub fn split_top(s: &[u8]) -> Vec<Vec<u8>> {
    let mut t = Vec::with_capacity(s.len() + 1);
    t.extend_from_slice(s);
    t.push(b')');
    let (args, _) = scan_args(&t, 0);
    args.into_iter().map(|a| a.to_vec()).collect()
}

/// The bracket closing the one at `i`.
pub fn matching(s: &[u8], i: usize) -> Option<usize> {
    if is_opener(at(s, i)) {
        let k = wf(s, i + 1, s.len(), WF_DEPTH - 1, true);
        if k < s.len() && is_closer(s[k]) {
            return Some(k);
        }
    }
    let mut depth = 0i64;
    let mut j = i;
    while let Some((k, c)) = next_structure(s, j, false) {
        j = k + 1;
        if is_opener(c) {
            depth += 1;
        } else if is_closer(c) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The items of the bracketed body `tok[1..end]`.
pub(super) fn items(tok: &[u8], end: usize) -> Vec<Cow<'_, [u8]>> {
    let mut out: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut j = 1;
    loop {
        let e = wf(tok, j, end, WF_DEPTH, false);
        if e == end {
            let tail = strip(&tok[j..e]);
            if !tail.is_empty() || !out.is_empty() {
                out.push(Cow::Borrowed(tail));
            }
            return out;
        }
        if tok[e] != b',' {
            break;
        }
        out.push(Cow::Borrowed(strip(&tok[j..e])));
        j = e + 1;
    }
    split_top(&tok[1..end])
        .into_iter()
        .map(Cow::Owned)
        .collect()
}
