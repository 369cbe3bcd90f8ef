//! The strace line grammar's patterns as byte scans, each giving the match
//! its regular expression would (backtracking included).

use crate::parse::values::{at, find, is_word, is_ws, skip, split_ws};
use memchr::memmem;

fn digits(s: &[u8], i: usize) -> usize {
    skip(s, i, |c| c.is_ascii_digit())
}

fn ws(s: &[u8], i: usize) -> usize {
    skip(s, i, is_ws)
}

/// `line` with every `\x1b\[[0-9;]*[A-Za-z]` (an ANSI colour code) removed.
pub fn strip_ansi(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        if line[i] == 0x1b && at(line, i + 1) == b'[' {
            let k = skip(line, i + 2, |c| c.is_ascii_digit() || c == b';');
            if at(line, k).is_ascii_alphabetic() {
                i = k + 1;
                continue;
            }
        }
        out.push(line[i]);
        i += 1;
    }
    out
}

/// What the line prefix (pid, time) held.
#[derive(Debug, Default)]
pub struct Prefix<'a> {
    pub end: usize,
    pub pid: Option<&'a [u8]>,
    pub tod: Option<(&'a [u8], &'a [u8], &'a [u8])>,
    pub epoch: Option<&'a [u8]>,
    /// rel2, else rel
    pub rel: Option<&'a [u8]>,
}

/// `\d+(?:\.\d+)?` from i: its end (the fraction only with a digit).
fn number(s: &[u8], i: usize) -> usize {
    let k = digits(s, i);
    if at(s, k) == b'.' && at(s, k + 1).is_ascii_digit() {
        digits(s, k + 1)
    } else {
        k
    }
}

/// `\s+` at i: its end.
fn ws1(s: &[u8], i: usize) -> Option<usize> {
    let k = ws(s, i);
    (k > i).then_some(k)
}

/// `(<[^>]*>)?` then `\s+` (or `\]\s+` when `bracket`), at i.
fn comm_then(s: &[u8], i: usize, bracket: bool) -> Option<usize> {
    let tail = |k: usize| -> Option<usize> {
        if bracket {
            if at(s, k) != b']' {
                return None;
            }
            ws1(s, k + 1)
        } else {
            ws1(s, k)
        }
    };
    if at(s, i) == b'<'
        && let Some(g) = memchr::memchr(b'>', &s[i + 1..])
        && let Some(e) = tail(i + 1 + g + 1)
    {
        return Some(e);
    }
    tail(i)
}

pub fn prefix(s: &[u8]) -> Prefix<'_> {
    let mut p = Prefix::default();
    let mut i = 0;
    // [pid N<comm>] or N<comm>
    if s.starts_with(b"[pid") && is_ws(at(s, 4)) {
        let d0 = ws(s, 4);
        let d1 = digits(s, d0);
        if d1 > d0
            && d1 - d0 <= 10
            && let Some(e) = comm_then(s, d1, true)
        {
            p.pid = Some(&s[d0..d1]);
            i = e;
        }
    } else {
        let d1 = digits(s, 0);
        if d1 > 0
            && d1 <= 7
            && let Some(e) = comm_then(s, d1, false)
        {
            p.pid = Some(&s[..d1]);
            i = e;
        }
    }
    // [ctx:...]
    if at(s, i) == b'[' {
        let r = skip(s, i + 1, |c| c != b']' && !is_ws(c));
        if memchr::memchr(b':', &s[i + 1..r]).is_some()
            && let Some(close) = memchr::memchr(b']', &s[i + 1..]).map(|q| i + 1 + q)
            && let Some(e) = ws1(s, close + 1)
        {
            i = e;
        }
    }
    // time
    let dg = |k: usize| at(s, k).is_ascii_digit();
    let mut timed = false;
    if dg(i)
        && dg(i + 1)
        && at(s, i + 2) == b':'
        && dg(i + 3)
        && dg(i + 4)
        && at(s, i + 5) == b':'
        && dg(i + 6)
        && dg(i + 7)
    {
        let mut k = i + 8;
        if at(s, k) == b'.' && dg(k + 1) {
            k = digits(s, k + 1);
        }
        if let Some(e) = ws1(s, k) {
            p.tod = Some((&s[i..i + 2], &s[i + 3..i + 5], &s[i + 6..k]));
            i = e;
            timed = true;
        }
    }
    if !timed {
        let d1 = digits(s, i);
        if d1 - i >= 9 {
            let k = number(s, i);
            if let Some(e) = ws1(s, k) {
                p.epoch = Some(&s[i..k]);
                i = e;
                timed = true;
            }
        }
    }
    if !timed {
        let a = ws(s, i);
        let d1 = digits(s, a);
        if d1 > a && d1 - a <= 8 {
            let k = number(s, a);
            if let Some(e) = ws1(s, k) {
                p.rel = Some(&s[a..k]);
                i = e;
            }
        }
    }
    // (+ rel2)
    if s[i..].starts_with(b"(+") {
        let a = ws(s, i + 2);
        if dg(a) {
            let k = number(s, a);
            if at(s, k) == b')'
                && let Some(e) = ws1(s, k + 1)
            {
                p.rel = Some(&s[a..k]);
                i = e;
            }
        }
    }
    // [ scno]
    if at(s, i) == b'[' {
        let a = ws(s, i + 1);
        let k = skip(s, a, |c| c.is_ascii_digit() || c == b'?');
        if k > a
            && at(s, k) == b']'
            && let Some(e) = ws1(s, k + 1)
        {
            i = e;
        }
    }
    // [ip]
    if at(s, i) == b'[' {
        let k = skip(s, i + 1, |c| matches!(c, b'0'..=b'9' | b'a'..=b'f' | b'?'));
        let n = k - (i + 1);
        if (8..=16).contains(&n)
            && at(s, k) == b']'
            && let Some(e) = ws1(s, k + 1)
        {
            i = e;
        }
    }
    p.end = i;
    p
}

/// The syscall name at `body`'s start: its end (the `(` is after it).
pub fn name(body: &[u8]) -> Option<usize> {
    if body.starts_with(b"???(") {
        return Some(3);
    }
    let c = at(body, 0);
    if !(c.is_ascii_alphabetic() || c == b'_') {
        return None;
    }
    let k = skip(body, 1, |c| is_word(c) || c == b'#' || c == b':');
    (at(body, k) == b'(').then_some(k)
}

/// A `<... name resumed>` at `body`'s start: (name, end).
pub fn resumed(body: &[u8]) -> Option<(&[u8], usize)> {
    let b = body.strip_prefix(b"<... ")?;
    let k = if b.starts_with(b"??? resumed>") {
        3
    } else {
        let k = skip(b, 0, |c| is_word(c) || c == b'#' || c == b':');
        if k == 0 {
            return None;
        }
        k
    };
    if !b[k..].starts_with(b" resumed>") {
        return None;
    }
    Some((&b[..k], 5 + k + 9))
}

/// A plain result from `pos`: (value, duration).
pub fn plain_result(s: &[u8], pos: usize) -> Option<(&[u8], Option<&[u8]>)> {
    if !s[pos..].starts_with(b" = ") {
        return None;
    }
    let v0 = pos + 3;
    let hex_end = if s[v0..].starts_with(b"0x") {
        let k = skip(s, v0 + 2, |c| c.is_ascii_hexdigit());
        (k > v0 + 2 && k - v0 - 2 <= 64).then_some(k)
    } else {
        None
    };
    let tail = |k: usize| -> Option<Option<&[u8]>> {
        if k == s.len() {
            return Some(None);
        }
        // (?: <(\d+(?:\.\d*)?)>)?\Z
        if s[k..].starts_with(b" <") {
            let d0 = k + 2;
            let mut e = digits(s, d0);
            if e > d0 {
                if at(s, e) == b'.' {
                    e = digits(s, e + 1);
                }
                if at(s, e) == b'>' && e + 1 == s.len() {
                    return Some(Some(&s[d0..e]));
                }
            }
        }
        None
    };
    if let Some(k) = hex_end
        && let Some(d) = tail(k)
    {
        return Some((&s[v0..k], d));
    }
    let k = digits(s, v0);
    if k > v0 && k - v0 <= 64 {
        return tail(k).map(|d| (&s[v0..k], d));
    }
    None
}

/// The result from `pos`: (value text, end).
pub fn result(s: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let mut k = ws(s, pos);
    if at(s, k) != b'=' {
        return None;
    }
    k = ws(s, k + 1);
    let v0 = k;
    if s[k..].starts_with(b"0x") {
        let e = skip(s, k + 2, |c| c.is_ascii_hexdigit());
        if e > k + 2 && e - k - 2 <= 64 {
            return Some((&s[v0..e], e));
        }
    }
    let mut d0 = k;
    if at(s, k) == b'-' {
        d0 += 1;
    }
    let e = digits(s, d0);
    if e > d0 && e - d0 <= 64 && !(at(s, e) == b'x' && at(s, e + 1).is_ascii_hexdigit()) {
        return Some((&s[v0..e], e));
    }
    if at(s, k) == b'?' {
        return Some((&s[k..k + 1], k + 1));
    }
    None
}

/// The `<duration>` of a rest ending in `>`: (start, value).
pub fn duration(rest: &[u8]) -> Option<(usize, &[u8])> {
    let mut e = rest.len();
    while e > 0 && is_ws(rest[e - 1]) {
        e -= 1;
    }
    if e == 0 || rest[e - 1] != b'>' {
        return None;
    }
    let lt = memchr::memrchr(b'<', &rest[..e - 1])?;
    let d = &rest[lt + 1..e - 1];
    let ok = d == b"unavailable" || {
        let k = digits(d, 0);
        k > 0 && (k == d.len() || (d[k] == b'.' && digits(d, k + 1) == d.len()))
    };
    if !ok {
        return None;
    }
    let mut start = lt;
    while start > 0 && is_ws(rest[start - 1]) {
        start -= 1;
    }
    Some((start, d))
}

/// The errno name at `rest`'s start.
pub fn err_name(rest: &[u8]) -> Option<&[u8]> {
    let a = ws(rest, 0);
    if !at(rest, a).is_ascii_uppercase() {
        return None;
    }
    let k = skip(rest, a + 1, |c| {
        c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'
    });
    (k - a >= 2 && (k == rest.len() || is_ws(rest[k]))).then_some(&rest[a..k])
}

/// Whether a result's rest (after the value, before the duration) says
/// strace made the result up: `(INJECTED)` of `-e fault=` or
/// `-e inject=…:error=|retval=`, or `(INJECTED: args, retval)`.  Then the
/// kernel never ran the call.  `(INJECTED: args)` alone is a poke into the
/// arguments of a call that did run.
pub fn injected(rest: &[u8]) -> bool {
    let Some(i) = memchr::memmem::find(rest, b"(INJECTED") else {
        return false;
    };
    let group = &rest[i + 1..];
    let group = &group[..memchr::memchr(b')', group).unwrap_or(group.len())];
    group != b"INJECTED: args"
}

/// The number of an `(errno N)` at `rest`'s start.
pub fn errno_number(rest: &[u8]) -> Option<&[u8]> {
    let a = ws(rest, 0);
    let r = rest[a..].strip_prefix(b"(errno ")?;
    let k = digits(r, 0);
    (k > 0 && at(r, k) == b')').then_some(&r[..k])
}

/// The parts of a `-k` frame line.
pub struct FrameParts<'a> {
    pub obj: &'a [u8],
    pub sym: &'a [u8],
    pub addr: &'a [u8],
    pub src: Option<(&'a [u8], &'a [u8])>,
}

/// `(?: (\S+):(\d{1,10}))?\s*$` at k: the source part, or None for none;
/// Err when neither the group nor the plain end matches.
type Source<'a> = Option<(&'a [u8], &'a [u8])>;

fn frame_tail(s: &[u8], k: usize) -> Result<Source<'_>, ()> {
    if at(s, k) == b' ' {
        let a = k + 1;
        let run = skip(s, a, |c| !is_ws(c));
        // \S+ backtracks to the last ':' after which \d{1,10}\s*$ holds
        let mut q = run;
        while q > a {
            q -= 1;
            if s[q] == b':' && q > a {
                let d = digits(s, q + 1);
                if d > q + 1 && d - q - 1 <= 10 && ws(s, d) == s.len() {
                    return Ok(Some((&s[a..q], &s[q + 1..d])));
                }
            }
        }
    }
    if ws(s, k) == s.len() {
        Ok(None)
    } else {
        Err(())
    }
}

pub fn frame(s: &[u8]) -> Option<FrameParts<'_>> {
    if !s.starts_with(b" > ") {
        return None;
    }
    let n = s.len();
    let closers: Vec<usize> = memmem::find_iter(s, b") [0x").collect();
    for p in memchr::memchr_iter(b'(', &s[3..]).map(|q| 3 + q) {
        for &q in closers.iter().rev() {
            if q < p + 1 {
                break;
            }
            let a0 = q + 5;
            let a1 = skip(s, a0, |c| c.is_ascii_hexdigit());
            if a1 == a0 || at(s, a1) != b']' {
                continue;
            }
            if let Ok(src) = frame_tail(s, a1 + 1) {
                return Some(FrameParts {
                    obj: &s[3..p],
                    sym: &s[p + 1..q],
                    addr: &s[a0..a1],
                    src,
                });
            }
        }
    }
    let _ = n;
    None
}

/// A `-k` frame without a symbol: (obj, addr).
pub fn frame_bare(s: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    if !s.starts_with(b" > ") || s.len() < 4 || is_ws(s[3]) {
        return None;
    }
    for e in 4..=s.len() {
        if s[e..].starts_with(b" [0x") {
            let a0 = e + 4;
            let a1 = skip(s, a0, |c| c.is_ascii_hexdigit());
            if a1 > a0 && at(s, a1) == b']' && ws(s, a1 + 1) == s.len() {
                return Some((&s[3..e], Some(&s[a0..a1])));
            }
        }
        if ws(s, e) == s.len() {
            return Some((&s[3..e], None));
        }
    }
    None
}

/// The tail of a diagnostic from i: `(?:\[ )?Process (\d{1,10}) (attached|detached)…\s*\Z`.
fn diag_tail(s: &[u8], i: usize) -> Option<(&[u8], bool)> {
    let mut k = i;
    if s[k..].starts_with(b"[ ") {
        k += 2;
    }
    let r = s[k..].strip_prefix(b"Process ")?;
    let d = digits(r, 0);
    if d == 0 || d > 10 || at(r, d) != b' ' {
        return None;
    }
    let pid = &r[..d];
    let rest = &r[d + 1..];
    let (attached, mut j) = if rest.starts_with(b"attached") {
        (true, 8)
    } else if rest.starts_with(b"detached") {
        (false, 8)
    } else {
        return None;
    };
    if rest[j..].starts_with(b" with ") {
        let e = digits(rest, j + 6);
        if e > j + 6 && rest[e..].starts_with(b" threads") {
            j = e + 8;
        }
    }
    if rest[j..].starts_with(b" - interrupt to quit") {
        j += 20;
    }
    (ws(rest, j) == rest.len()).then_some((pid, attached))
}

/// `strace[\w.+-]*: ` at i: its end.
fn strace_name(s: &[u8], i: usize) -> Option<usize> {
    if !s[i..].starts_with(b"strace") {
        return None;
    }
    let k = skip(s, i + 6, |c| is_word(c) || matches!(c, b'.' | b'+' | b'-'));
    s[k..].starts_with(b": ").then_some(k + 2)
}

/// The first `Process N attached|detached` diagnostic in the line: (start,
/// pid, attached).
pub fn diag(s: &[u8]) -> Option<(usize, &[u8], bool)> {
    if let Some(e) = strace_name(s, 0)
        && let Some((pid, a)) = diag_tail(s, e)
    {
        return Some((0, pid, a));
    }
    if let Some((pid, a)) = diag_tail(s, 0) {
        return Some((0, pid, a));
    }
    for i in memmem::find_iter(s, b"strace") {
        if i == 0 {
            continue;
        }
        if let Some(e) = strace_name(s, i)
            && let Some((pid, a)) = diag_tail(s, e)
        {
            return Some((i, pid, a));
        }
    }
    None
}

fn path_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-' | b'/')
}

/// A strace diagnostic: the message and where it starts (program name
/// included).
/// (start, pid, attached) of a diagnostic
pub type Diag<'a> = (usize, &'a [u8], bool);

pub fn diag_match(line: &[u8]) -> Option<(Diag<'_>, usize)> {
    let dm = diag(line)?;
    let j = dm.0;
    if j == 0 {
        return Some((dm, 0));
    }
    let mut k = j;
    while k > 0 && path_char(line[k - 1]) {
        k -= 1;
    }
    if k == 0 && memchr::memchr(b'(', &line[..j]).is_none() {
        return Some((dm, 0));
    }
    let cand = &line[k..j];
    for i in 0..cand.len() {
        if (cand[i] == b'/' || cand[i..].starts_with(b"./") || cand[i..].starts_with(b"../"))
            && (i == 0 || !matches!(cand[i - 1], b'.' | b'/'))
        {
            return Some((dm, k + i));
        }
    }
    Some((dm, j))
}

/// Whether the line starts with strace's program name and `: ` (`strace: `,
/// `/usr/bin/strace: `): a diagnostic of strace itself.
pub fn diag_prefix(s: &[u8]) -> bool {
    let t = skip(s, 0, |c| {
        is_word(c) || matches!(c, b'.' | b'+' | b'-' | b'/')
    });
    if !s[t..].starts_with(b": ") {
        return false;
    }
    let tok = &s[..t];
    let (dirs, last) = match memchr::memrchr(b'/', tok) {
        Some(k) => (&tok[..k], &tok[k + 1..]),
        None => (&tok[..0], tok),
    };
    if find(last, b"strace").is_none() {
        return false;
    }
    if memchr::memrchr(b'/', tok).is_none() {
        return true;
    }
    // (?:\.{0,2}/)?(?:[\w.+-]+/)*: every directory named, the first may be
    // empty (a leading '/')
    dirs.split(|&c| c == b'/')
        .enumerate()
        .all(|(i, seg)| i == 0 || !seg.is_empty())
}

/// A `+++ exited with N +++` / `+++ killed by SIG +++` / superseded body.
pub enum Exited<'a> {
    Status(&'a [u8]),
    Killed(&'a [u8]),
    Superseded(&'a [u8]),
}

pub fn exited(body: &[u8]) -> Option<Exited<'_>> {
    let b = body.strip_prefix(b"+++ ")?;
    if let Some(r) = b.strip_prefix(b"exited with ") {
        let d0 = usize::from(at(r, 0) == b'-');
        let d = digits(r, d0);
        if d > d0 && d - d0 <= 20 && r[d..].starts_with(b" +++") {
            return Some(Exited::Status(&r[..d]));
        }
        return None;
    }
    if let Some(r) = b.strip_prefix(b"killed by ") {
        let w = skip(r, 0, is_word);
        if w == 0 {
            return None;
        }
        if r[w..].starts_with(b" (core dumped) +++") || r[w..].starts_with(b" +++") {
            return Some(Exited::Killed(&r[..w]));
        }
        return None;
    }
    if let Some(r) = b.strip_prefix(b"superseded by execve in pid ") {
        let d = digits(r, 0);
        if d > 0 && d <= 10 && r[d..].starts_with(b" +++") {
            return Some(Exited::Superseded(&r[..d]));
        }
    }
    None
}

/// A `--- SIG... ---` body: the signal name.
pub fn signal(body: &[u8]) -> Option<&[u8]> {
    let b = body.strip_prefix(b"--- ")?;
    if let Some(r) = b.strip_prefix(b"stopped by ") {
        let w = skip(r, 0, is_word);
        if w > 0 {
            return Some(&r[..w]);
        }
    }
    let w = skip(b, 0, is_word);
    (w > 0).then_some(&b[..w])
}

/// A `[ Process PID=N runs in ... mode. ]` body.
pub fn personality(body: &[u8]) -> bool {
    let Some(r) = body.strip_prefix(b"[ Process PID=") else {
        return false;
    };
    let d = digits(r, 0);
    d > 0 && r[d..].starts_with(b" runs in ") && find(&r[d + 9..], b" mode. ]").is_some()
}

/// The header of strace's summary table (`-c`, `-C`, `-w`, `-U` columns in
/// any order, `--syscall-limit`): only column titles, among them `calls`
/// or `syscall`.
pub fn summary_header(s: &[u8]) -> bool {
    const TITLES: &[&[u8]] = &[
        b"%",
        b"time",
        b"seconds",
        b"usecs/call",
        b"usecs/min",
        b"usecs/max",
        b"shortest",
        b"longest",
        b"calls",
        b"errors",
        b"syscall",
    ];
    let mut named = false;
    let mut n = 0;
    for t in split_ws(s) {
        if !TITLES.contains(&t) {
            return false;
        }
        named |= t == b"calls" || t == b"syscall";
        n += 1;
    }
    n >= 2 && named
}

/// A row of strace's summary table: the syscall's name (or `total`) and
/// numbers, in the header's column order (`-U` puts the name anywhere; an
/// empty `errors` cell leaves no token), or the line of dashes under the
/// header and above the total.
pub fn summary_row(s: &[u8]) -> bool {
    let (mut names, mut n, mut other) = (0, 0, false);
    for t in split_ws(s) {
        n += 1;
        if t.iter().all(|&c| c.is_ascii_digit() || c == b'.') {
            continue;
        }
        if (t[0].is_ascii_alphabetic() || t[0] == b'_')
            && t.iter().all(|&c| is_word(c) || c == b'#' || c == b':')
        {
            names += 1;
        } else {
            other = true;
        }
    }
    if n >= 2 && names == 1 && !other {
        return true;
    }
    // ^-+(?: -+)+\s*$
    let d = skip(s, 0, |c| c == b'-');
    if d == 0 {
        return false;
    }
    let mut k = d;
    let mut groups = 0;
    while at(s, k) == b' ' && at(s, k + 1) == b'-' {
        k = skip(s, k + 1, |c| c == b'-');
        groups += 1;
    }
    groups > 0 && ws(s, k) == s.len()
}

/// A line strace adds below a call's line (` VCPU:N<…`, ` * N bytes in
/// buffer N`, ` = N buffers in vector N`).
pub fn extra(s: &[u8]) -> bool {
    if let Some(r) = s.strip_prefix(b" VCPU:") {
        // `<`: the kvm_run struct before the run, `>`: after (strace 7)
        let d = digits(r, 0);
        return d > 0 && matches!(at(r, d), b'<' | b'>');
    }
    let tail = |r: &[u8], pre: &[u8], mid: &[u8]| -> bool {
        let Some(r) = r.strip_prefix(pre) else {
            return false;
        };
        let d = digits(r, 0);
        if d == 0 {
            return false;
        }
        let Some(r) = r[d..].strip_prefix(mid) else {
            return false;
        };
        let e = digits(r, 0);
        e > 0 && ws(r, e) == r.len()
    };
    tail(s, b" * ", b" bytes in buffer ") || tail(s, b" = ", b" buffers in vector ")
}

/// The `key=value` pairs of `s`, in order.
pub fn key_values(s: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if !is_word(s[i]) {
            i += 1;
            continue;
        }
        let r = skip(s, i, is_word);
        if at(s, r) == b'=' && r + 1 < s.len() && !is_ws(s[r + 1]) {
            let v = skip(s, r + 1, |c| !is_ws(c));
            out.push((&s[i..r], &s[r + 1..v]));
            i = v;
        } else {
            i = r;
        }
    }
    out
}

/// A module map line: (start, end, perms, offset, module, build_id).
#[allow(clippy::type_complexity)]
pub fn map(s: &[u8]) -> Option<(&[u8], &[u8], &[u8], &[u8], &[u8], Option<&[u8]>)> {
    let r = s.strip_prefix(b"#")?;
    let k = ws(r, 0);
    let r = r[k..].strip_prefix(b"map")?;
    let hex = |i: usize| skip(r, i, |c| c.is_ascii_hexdigit());
    let a = ws1(r, 0)?;
    let b = hex(a);
    if b == a || at(r, b) != b'-' {
        return None;
    }
    let c = hex(b + 1);
    if c == b + 1 {
        return None;
    }
    let d = ws1(r, c)?;
    let e = skip(r, d, |c| !is_ws(c));
    if e == d {
        return None;
    }
    let f = ws1(r, e)?;
    let g = hex(f);
    if g == f {
        return None;
    }
    let m0 = ws1(r, g)?;
    for m1 in m0..=r.len() {
        // (?:\s+build-id=([0-9a-fA-F]+))?\s*$
        let w = ws(r, m1);
        if w > m1 && r[w..].starts_with(b"build-id=") {
            let h0 = w + 9;
            let h1 = hex(h0);
            if h1 > h0 && ws(r, h1) == r.len() {
                return Some((
                    &r[a..b],
                    &r[b + 1..c],
                    &r[d..e],
                    &r[f..g],
                    &r[m0..m1],
                    Some(&r[h0..h1]),
                ));
            }
        }
        if w == r.len() {
            return Some((&r[a..b], &r[b + 1..c], &r[d..e], &r[f..g], &r[m0..m1], None));
        }
    }
    None
}

/// A `#+` continuation line: (tid text, k text, more, end).
pub fn cont(s: &[u8]) -> Option<(&[u8], &[u8], bool, usize)> {
    let r = s.strip_prefix(b"#+ ")?;
    let a = digits(r, 0);
    if a == 0 || at(r, a) != b' ' {
        return None;
    }
    let b = digits(r, a + 1);
    if b == a + 1 {
        return None;
    }
    let more = at(r, b) == b'+';
    let c = b + usize::from(more);
    if at(r, c) != b' ' {
        // `(\+?) ` backtracks: without the '+', a space must follow the digits
        return None;
    }
    Some((&r[..a], &r[a + 1..b], more, 3 + c + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        let p = prefix(b"1234 12:00:01.500 close(3) = 0");
        assert_eq!(p.pid, Some(&b"1234"[..]));
        assert_eq!(p.end, 18);
        let p = prefix(b"[pid  77<a b>] 1700000000.25 read(");
        assert_eq!(p.pid, Some(&b"77"[..]));
        assert_eq!(p.epoch, Some(&b"1700000000.25"[..]));
        let p = prefix(b"     0.000123 close(3) = 0");
        assert_eq!(p.rel, Some(&b"0.000123"[..]));
        let p = prefix(b"close(3) = 0");
        assert_eq!(p.end, 0);
    }

    #[test]
    fn diags() {
        assert!(diag(b"strace: Process 12 attached").is_some());
        assert!(diag(b"[ Process 12 detached ]").is_none());
        assert!(diag_prefix(b"/usr/bin/strace: oops"));
        assert!(diag_prefix(b"strace-6.1: x"));
        assert!(!diag_prefix(b"//strace: x"));
        let ((at, _, _), k) = diag_match(b"read(3, ../src/strace: Process 5 attached").unwrap();
        assert_eq!((at, k), (15, 8));
    }

    #[test]
    fn summary_tables_in_any_column_order() {
        // strace 7.2 -c, -w, -U (lines as it prints them)
        for h in [
            "% time     seconds  usecs/call     calls    errors syscall",
            "% time     seconds shortest  longest  usecs/call     calls    errors syscall",
            "syscall              calls    errors % time     seconds  usecs/call shortest  longest",
            "    calls syscall",
            "   errors syscall              calls",
            " longest shortest syscall",
        ] {
            assert!(summary_header(h.trim().as_bytes()), "{h}");
        }
        assert!(!summary_header(b"time seconds"));
        for r in [
            "  0.00    0.000000           0         1         1 access",
            "read                     1             0.00    0.000000           0 0.000000 0.000000",
            "ioctl                    1         1   0.00    0.000000           0 0.000000 0.000000",
            "          read                     1",
            "        1 ioctl                    1",
            "0.000152 0.000152 execve",
            "total                   36         2 100.00    0.000000           0 0.000000 0.000000",
            "---------------- --------- --------- ------ ----------- ----------- -------- --------",
        ] {
            assert!(summary_row(r.as_bytes()), "{r}");
        }
        for r in [
            "read write 1",
            "1 2",
            "close(3) = 0",
            "1 -x",
            "--- SIGCHLD ---",
        ] {
            assert!(!summary_row(r.as_bytes()), "{r}");
        }
    }

    #[test]
    fn frames() {
        let f = frame(b" > /lib/libc.so.6(__open+0x10) [0x1234] a.c:12").unwrap();
        assert_eq!(f.obj, b"/lib/libc.so.6");
        assert_eq!(f.sym, b"__open+0x10");
        assert_eq!(f.src, Some((&b"a.c"[..], &b"12"[..])));
        assert_eq!(
            frame_bare(b" > unexpected_backtracing_error [0x7f]")
                .unwrap()
                .1,
            Some(&b"7f"[..])
        );
    }
}
