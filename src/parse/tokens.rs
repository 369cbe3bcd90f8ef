//! The tokenizer for the common strace line shapes and for bracketed struct
//! values: the fast path of the strace grammar.
//!
//! [`scan_line`] takes a `-f -ttt` / `-f -tt` prefix followed by a complete
//! call, an unfinished call or a resumed call with a well-formed argument list
//! and a plain, decorated or error result, and refuses (`None`) everything
//! else, which the general grammar (grammar.rs, values.rs) then parses.  What
//! it returns must be exactly what the general grammar gives for the same
//! line.  tokens/tests.rs pins the tokens of each shape and refusal and
//! props.rs checks that a taken line re-joins from its tokens;
//! strace/fast_path.rs compares the two paths' events.
//!
//! The argument splitter accepts exactly the well-formed argument language
//! (strings, character literals, comments, `<<`, fd decorations without
//! quotes, escapes or `->`, and brackets nested at most [`MAX_DEPTH`] deep;
//! values.rs's `wf` is the general grammar's) with its possessive,
//! never-backtracking semantics; everything outside that language is refused
//! here, as that regex refuses it, and goes to the general scanner.
//!
//! Only ASCII text is taken: Python's `str.isspace`, `\s`, `\d` and `\w` are
//! Unicode-aware, and on ASCII they are the byte classes below.  All indices
//! are byte offsets into the line, so every slice of an ASCII `&str` taken at
//! them is a valid `&str`.

use crate::parse::lex::{all_but, char_end};
use memchr::{memchr, memchr2, memmem, memrchr};
use std::borrow::Cow;
use std::sync::LazyLock;

/// Bracket nesting of the well-formed language.
pub const MAX_DEPTH: usize = 6;

/// Digits of a return value the general grammar reads (grammar::result).
pub const MAX_DIGITS: usize = 64;

/// Which line shape [`scan_line`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `name(args) = result`
    Call = 0,
    /// `name(args <unfinished ...>`
    Unfinished = 1,
    /// `<... name resumed>args) = result`
    Resumed = 2,
}

/// A return value as strace printed it: `0x` and hex digits, or `-?\d+`
/// without leading zeros (text that Python's `int(text, 0)` accepts), at
/// most [`MAX_DIGITS`] digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Number<'a>(&'a str);

impl<'a> Number<'a> {
    pub fn text(&self) -> &'a str {
        self.0
    }

    /// The value, or `None` when it does not fit an `i128` (the caller makes
    /// its big integer from [`Number::text`]).
    pub fn value(&self) -> Option<i128> {
        match self.0.strip_prefix("0x") {
            // (at most 16 hex digits fit a u64: read without i128's parse)
            Some(hex) if hex.len() <= 16 => u64::from_str_radix(hex, 16).ok().map(i128::from),
            Some(hex) => i128::from_str_radix(hex, 16).ok(),
            // at most 18 digits: an i64's digit loop, not i128's parse
            None if self.0.len() <= 18 => {
                let (neg, digits) = match self.0.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, self.0),
                };
                if digits.is_empty() {
                    return None;
                }
                let mut v = 0i64;
                for &c in digits.as_bytes() {
                    if !c.is_ascii_digit() {
                        return None;
                    }
                    v = v * 10 + i64::from(c - b'0');
                }
                Some(i128::from(if neg { -v } else { v }))
            }
            None => self.0.parse().ok(),
        }
    }
}

/// What follows the closing `)`: `= ret[<path>] [ERRNO (text)] [<duration>]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome<'a> {
    /// `None` for `= ?`
    pub ret: Option<Number<'a>>,
    /// The errno name after `-1` or `?`
    pub err: Option<&'a str>,
    /// The path of a decorated fd result (`= 3</dev/kfd<char 238:0>>` -> `/dev/kfd`)
    pub ret_path: Option<&'a str>,
    /// `-T`'s `<seconds>`
    pub dur: Option<f64>,
}

/// The tokens of one line [`scan_line`] took.
#[derive(Debug, Clone, PartialEq)]
pub struct Scanned<'a> {
    pub kind: Kind,
    pub tid: u32,
    /// Seconds: since the epoch for `-ttt`, since midnight for `-tt`
    pub time: f64,
    pub name: &'a str,
    /// The top-level arguments, stripped of whitespace, as the event
    /// builder takes them (made once: copying the list was an allocation
    /// a line)
    pub args: Args<'a>,
    /// Where the argument text ends: the closing `)`, or for an unfinished
    /// call whose list never closes, the end of its text
    pub args_end: usize,
    /// `None` exactly for [`Kind::Unfinished`]
    pub outcome: Option<Outcome<'a>>,
}

/// A call's arguments, slices of its line (a builder may own one it
/// rewrites).
pub type Args<'a> = Vec<Cow<'a, [u8]>>;

/// An argument list done with, emptied, for another line's arguments:
/// the same allocation with another element lifetime (a list a line was
/// an allocation and a free a line; the parser keeps the last one and
/// hands it to [`scan_line_in`]).  A list longer than [`ARGS_KEPT_MAX`]
/// is dropped instead, so what is kept stays small.
pub fn reuse_args<'a, 'b>(v: Vec<Cow<'a, [u8]>>) -> Vec<Cow<'b, [u8]>> {
    if v.capacity() > ARGS_KEPT_MAX {
        return Vec::new();
    }
    let mut v = std::mem::ManuallyDrop::new(v);
    v.clear();
    let cap = v.capacity();
    // SAFETY: the buffer comes from a Vec of the same element type but for
    // its lifetime (same layout, same allocator), with its capacity, and
    // it holds no element (cleared above), so nothing of lifetime 'a can
    // be read through the new vector; the old one is never dropped.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<Cow<'b, [u8]>>(), 0, cap) }
}

/// The longest argument list [`reuse_args`] keeps.
const ARGS_KEPT_MAX: usize = 64;

/// Where a piece of `line` (a slice of it) lies in it.
fn span_of(line: &str, part: &[u8]) -> (usize, usize) {
    let s = part.as_ptr() as usize - line.as_ptr() as usize;
    debug_assert!(s + part.len() <= line.len(), "a token outside its line");
    (s, s + part.len())
}

/// A [`Scanned`] as places in its line rather than borrows of it, so that
/// it can cross to another thread beside the line's text (--jobs scans the
/// halves of split calls on a worker; the parser joins them in order).
#[derive(Debug, Clone, PartialEq)]
pub struct Spans {
    kind: Kind,
    tid: u32,
    time: f64,
    name: (usize, usize),
    args: Vec<(usize, usize)>,
    args_end: usize,
    outcome: Option<OutcomeSpans>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct OutcomeSpans {
    ret: Option<(usize, usize)>,
    err: Option<(usize, usize)>,
    ret_path: Option<(usize, usize)>,
    dur: Option<f64>,
}

impl Scanned<'_> {
    /// The places of this scan's tokens in `line`, the text it scanned.
    pub fn spans(&self, line: &str) -> Spans {
        let at = |p: &str| span_of(line, p.as_bytes());
        Spans {
            kind: self.kind,
            tid: self.tid,
            time: self.time,
            name: at(self.name),
            args: self.args.iter().map(|a| span_of(line, a)).collect(),
            args_end: self.args_end,
            outcome: self.outcome.map(|o| OutcomeSpans {
                ret: o.ret.map(|n| at(n.0)),
                err: o.err.map(at),
                ret_path: o.ret_path.map(at),
                dur: o.dur,
            }),
        }
    }
}

impl Spans {
    /// The scan again, borrowing `line`: the text [`Scanned::spans`] had.
    pub fn scanned<'a>(&self, line: &'a str) -> Scanned<'a> {
        let at = |(s, e): (usize, usize)| &line[s..e];
        Scanned {
            kind: self.kind,
            tid: self.tid,
            time: self.time,
            name: at(self.name),
            args: self
                .args
                .iter()
                .map(|&a| Cow::Borrowed(at(a).as_bytes()))
                .collect(),
            args_end: self.args_end,
            outcome: self.outcome.map(|o| Outcome {
                ret: o.ret.map(|r| Number(at(r))),
                err: o.err.map(at),
                ret_path: o.ret_path.map(at),
                dur: o.dur,
            }),
        }
    }
}

const UNFINISHED: &[u8] = b"<unfinished ...>";

/// Whether `<unfinished ...>)` is in `s`, found from its `u`, a byte a
/// call's text seldom has (one memchr over the usual line, where memmem's
/// searcher cost twice that).
fn has_unfinished_close(s: &[u8]) -> bool {
    let mut from = 0;
    while let Some(k) = crate::parse::lex::find_byte(&s[from..], b'u') {
        let i = from + k;
        if i > 0 && s[i - 1..].starts_with(UNFINISHED_CLOSE) {
            return true;
        }
        from = i + 1;
    }
    false
}
const UNFINISHED_CLOSE: &[u8] = b"<unfinished ...>)";

// memmem's searchers, built once (building one costs more than most searches)
static COMMENT_CLOSE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"*/"));

/// `str.isspace()` / `str.strip()` / re's `\s` on ASCII
fn is_ws(c: u8) -> bool {
    WS[c as usize]
}

/// [`is_ws`] as a table (a load, where the three tests were six
/// instructions: every argument is stripped at both ends)
const WS: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b == b' ' || (9 <= b && b <= 13) || (0x1c <= b && b <= 0x1f);
        c += 1;
    }
    t
};

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// `[\w#:]` as a table (a name's bytes: one load a byte, where the
/// ranges' tests were five instructions)
const NAME_CHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'#' | b':');
        c += 1;
    }
    t
};

fn is_opener(c: u8) -> bool {
    matches!(c, b'(' | b'{' | b'[')
}

fn is_closer(c: u8) -> bool {
    matches!(c, b')' | b'}' | b']')
}

/// The characters of the atom `[^"<>(){}\[\],/]++`
const PLAIN: [bool; 256] = all_but(b"\"<>(){}[],/");

/// [`PLAIN`] without `'`: in an argument list it starts a character literal
/// (the general grammar's atom; values.rs)
const ARG_PLAIN: [bool; 256] = {
    let mut t = PLAIN;
    t[b'\'' as usize] = false;
    t
};

/// The first index from `i` whose byte is not in `class` (a table), eight
/// bytes a test where eight are in it: a hex number, a flag name or a path
/// is one run of such bytes, and the byte loop's test and branch per byte
/// were the argument scan's main cost.
fn skip_table(s: &[u8], mut i: usize, class: &[bool; 256]) -> usize {
    while let Some(w) = s.get(i..i + 8) {
        let all = w.iter().fold(true, |ok, &c| ok & class[c as usize]);
        if !all {
            break;
        }
        i += 8;
    }
    skip(s, i, |c| class[c as usize])
}

/// `skip(s, i, class)` for a table, four bytes a step (a test and a
/// branch a byte, without the bound's test and the loop's jump each): the
/// runs an argument list is made of are mostly short, where
/// [`skip_table`]'s eight-byte test costs more than it saves.
#[inline(always)]
fn run_end(s: &[u8], mut i: usize, class: &[bool; 256]) -> usize {
    while let Some(w) = s.get(i..i + 4) {
        if !class[w[0] as usize] {
            return i;
        }
        if !class[w[1] as usize] {
            return i + 1;
        }
        if !class[w[2] as usize] {
            return i + 2;
        }
        if !class[w[3] as usize] {
            return i + 3;
        }
        i += 4;
    }
    skip(s, i, |c| class[c as usize])
}

/// The bytes of a decoration with no meaning to [`deco_end`].
const DECO_PLAIN: [bool; 256] = all_but(b"<>\"\\-");

/// The byte at `i`, or 0 past the end (0 is in none of the classes tested
/// with it).
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// The first index from `i` whose byte is not in `class`.
fn skip(s: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> usize {
    while i < s.len() && class(s[i]) {
        i += 1;
    }
    i
}

/// The end of `s[a..b]` without its trailing whitespace.
fn rstrip(s: &[u8], a: usize, mut b: usize) -> usize {
    while b > a && is_ws(s[b - 1]) {
        b -= 1;
    }
    b
}

/// `s[a..b]` without the whitespace at both ends, as indices.
fn strip(s: &[u8], a: usize, b: usize) -> (usize, usize) {
    let a = a + s[a..b].iter().take_while(|&&c| is_ws(c)).count();
    (a, rstrip(s, a, b))
}

/// Whether `/*` is in `s` (`/` is rare: cheaper than a substring search).
#[cfg(test)]
fn has_comment(s: &[u8]) -> bool {
    memchr::memchr_iter(b'/', s).any(|i| at(s, i + 1) == b'*')
}

/// End of `"(?:[^"\\]|\\.)*+"(?:\.\.\.)?` whose quote is at `i`.
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut k = i + 1;
    loop {
        // (a quote or a backslash: find_byte3 with the quote twice)
        k += crate::parse::lex::find_byte3(&s[k..], b'"', b'\\', b'"')?;
        if s[k] == b'\\' {
            // `.` matches no newline
            if k + 1 >= s.len() || s[k + 1] == b'\n' {
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

/// End of `<(?:[^<>"\\-]|-(?!>)|<(?:[^<>"\\-]|-(?!>))*+>)*+>(?:\(deleted\))?`
/// whose `<` is at `i`: an fd decoration, one nested `<…>` allowed.
pub fn deco_end(s: &[u8], i: usize) -> Option<usize> {
    let mut k = i + 1;
    let mut depth = 1;
    while k < s.len() {
        match s[k] {
            b'>' => {
                k += 1;
                depth -= 1;
                if depth == 0 {
                    if s[k..].starts_with(b"(deleted)") {
                        k += 9;
                    }
                    return Some(k);
                }
            }
            b'<' if depth == 2 => return None,
            b'<' => {
                depth += 1;
                k += 1;
            }
            b'"' | b'\\' => return None,
            b'-' if at(s, k + 1) == b'>' => return None,
            b'-' => k += 1,
            _ => k = skip_table(s, k + 1, &DECO_PLAIN),
        }
    }
    None
}

/// Where [`well_formed`] finds the end of a decoration: [`deco_end`]
/// itself, or [`Seen`] first.
trait Decos {
    fn end(&mut self, s: &[u8], i: usize) -> Option<usize>;
}

impl Decos for () {
    #[inline(always)]
    fn end(&mut self, s: &[u8], i: usize) -> Option<usize> {
        deco_end(s, i)
    }
}

/// The fd decorations the last lines' arguments began with
/// (`3</dev/kfd<char 238:0>>`): a trace names a few fds with their paths
/// on most of its lines, and one that starts with a decoration seen before
/// ends where that one ended ([`deco_end`]'s scan reads no byte past the
/// `>` that closes it, and none before its `<`), so its bytes are compared
/// instead of scanned again.  Kept by the parser (and a worker) from line
/// to line; what it holds changes no scan's result.
#[derive(Debug, Default)]
pub struct Seen {
    decos: [Vec<u8>; SEEN_SLOTS],
    /// the slot the next decoration goes to
    next: usize,
}

/// The decorations [`Seen`] keeps (the device fds a trace's ioctls name,
/// and the file an open, read and close name between them).
const SEEN_SLOTS: usize = 4;

/// The longest decoration [`Seen`] keeps.
const SEEN_MAX: usize = 96;

impl Decos for Seen {
    fn end(&mut self, s: &[u8], i: usize) -> Option<usize> {
        let rest = &s[i..];
        for d in &self.decos {
            if !d.is_empty() && rest.starts_with(d) {
                let k = i + d.len();
                return Some(if s[k..].starts_with(b"(deleted)") {
                    k + 9
                } else {
                    k
                });
            }
        }
        let k = deco_end(s, i)?;
        // the decoration without the `(deleted)` after it (it ends in `>`)
        let e = if s[k - 1] == b')' { k - 9 } else { k };
        if e - i <= SEEN_MAX {
            let d = &mut self.decos[self.next];
            d.clear();
            d.extend_from_slice(&s[i..e]);
            self.next = (self.next + 1) % SEEN_SLOTS;
        }
        Some(k)
    }
}

/// End of the possessive match of `(?:atom|nest)*+` from `j` (inside a
/// bracket group also `,`), nested groups allowed `left` deep.  The
/// recursion is bounded by `left`.
fn well_formed(s: &[u8], j: usize, left: usize, nested: bool) -> usize {
    well_formed_in(s, j, left, nested, &mut ())
}

/// [`well_formed`] with decorations found through `decos`.
fn well_formed_in<D: Decos>(
    s: &[u8],
    mut j: usize,
    left: usize,
    nested: bool,
    decos: &mut D,
) -> usize {
    while j < s.len() {
        let c = s[j];
        if ARG_PLAIN[c as usize] {
            j = run_end(s, j + 1, &ARG_PLAIN);
            continue;
        }
        match c {
            b'"' => match string_end(s, j) {
                Some(k) => j = k,
                None => return j,
            },
            // a character literal (`','` is one argument), else a lone `'`
            b'\'' => j = char_end(s, j).unwrap_or(j + 1),
            // `1<<16`: a shift, not a decoration
            b'<' if at(s, j + 1) == b'<' => j += 2,
            b'<' => match decos.end(s, j) {
                Some(k) => j = k,
                None => return j,
            },
            b'/' if at(s, j + 1) == b'*' => {
                // `/\*.*?\*/`: the first `*/`, with no newline before it
                let Some(e) = COMMENT_CLOSE.find(&s[j + 2..]).map(|e| j + 2 + e) else {
                    return j;
                };
                if memchr(b'\n', &s[j..e]).is_some() {
                    return j;
                }
                j = e + 2;
            }
            b'/' | b'>' => j += 1,
            b',' if nested => j += 1,
            _ => {
                if is_opener(c) && left > 0 {
                    let k = well_formed_in(s, j + 1, left - 1, true, decos);
                    if k < s.len() && is_closer(s[k]) {
                        j = k + 1;
                        continue;
                    }
                }
                return j;
            }
        }
    }
    j
}

/// The argument scan of `line[pos..n]` for a well-formed list: the stripped
/// arguments and the index of the closing `)` (`None`: the list never
/// closes); `None` when the text is outside the well-formed language.
/// `IOCTL`: the list is a complete ioctl call's, whose struct argument
/// [`typed_arg`] reads (a parameter of the type: the loop of every other
/// list is compiled without the test).
fn scan_args<'a, const IOCTL: bool>(
    line: &'a str,
    pos: usize,
    n: usize,
    mut args: Args<'a>,
    seen: &mut Seen,
) -> Option<(Args<'a>, Option<usize>)> {
    let s = &line.as_bytes()[..n];
    // sized for the six register arguments (pushing onto an empty Vec
    // went through grow_one for the first and again for the fifth), when
    // the list handed in is not
    args.reserve(6);
    let mut j = pos;
    loop {
        // (`, {`: the capture library's spacing; any other the general walk's)
        let typed = if IOCTL && args.len() == 2 && at(s, j + 1) == b'{' {
            typed_arg(s, j, &args)
        } else {
            None
        };
        let e = match typed {
            Some(e) => e,
            None => {
                // most arguments are one run of plain bytes (`3`, ` 4096`,
                // ` O_RDONLY|O_CLOEXEC`) up to their `,` or `)`, where the
                // walk would stop too: read the run here, and walk only
                // from a byte that is neither
                let e = run_end(s, j, &ARG_PLAIN);
                if e < n && matches!(s[e], b',' | b')') {
                    e
                } else {
                    well_formed_in(s, e, MAX_DEPTH, false, seen)
                }
            }
        };
        if e >= n {
            let (a, b) = strip(s, j, n);
            if b > a {
                args.push(Cow::Borrowed(&s[a..b]));
            }
            return Some((args, None));
        }
        let sep = s[e];
        if sep != b',' && sep != b')' {
            return None;
        }
        let (a, b) = strip(s, j, e);
        // `f()` has no argument; `f(, )` and `f(x, )` have an empty one
        if sep == b',' || b > a || !args.is_empty() {
            args.push(Cow::Borrowed(&s[a..b]));
        }
        if sep == b')' {
            return Some((args, Some(e)));
        }
        j = e + 1;
    }
}

/// Where the third argument of an ioctl, from `s[j]`, ends (its `,` or
/// `)`), when it is a struct the typed decoders read
/// (kfd_args::decode_ahead, which keeps its value for the event): then
/// [`well_formed_in`] would end it there too (the typed decoders read a
/// part of its language; tests/props.rs), and the struct is walked once.
/// `None`: the general walk decides, as it did.
fn typed_arg(s: &[u8], j: usize, args: &Args<'_>) -> Option<usize> {
    let a = skip(s, j, is_ws);
    if at(s, a) != b'{' {
        return None;
    }
    let ls = crate::parse::syscalls::scan_layout(&args[0], &args[1])?;
    let e = crate::parse::kfd_args::decode_ahead(ls, s, a)?;
    matches!(at(s, e), b',' | b')').then_some(e)
}

/// Exact powers of ten as f64 (10^22 is the largest).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The digits of `s` from `i`: where they end, and their value when there
/// are at most 19 (then it fits a u64).  Eight at a time where eight bytes
/// are digits (a timestamp is ten and six).
fn digit_run(s: &[u8], i: usize) -> (usize, Option<u64>) {
    let mut v = 0u64;
    let mut j = i;
    while let Some(w) = s.get(j..j + 8)
        && let Some(d) = eight_digits(w.try_into().unwrap())
    {
        v = v.wrapping_mul(100_000_000).wrapping_add(d);
        j += 8;
    }
    while j < s.len() && s[j].is_ascii_digit() {
        v = v.wrapping_mul(10).wrapping_add(u64::from(s[j] - b'0'));
        j += 1;
    }
    (j, (j - i <= 19).then_some(v))
}

/// The value of eight ASCII digits, None if one of the bytes is no digit
/// (the SWAR form of fast_float's parse_eight_digits_unrolled).
fn eight_digits(w: [u8; 8]) -> Option<u64> {
    const HI: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let v = u64::from_le_bytes(w);
    // each byte is 0x30..=0x39: its high nibble is 3, and adding 6 keeps it 3
    if v & HI != ZEROS || (v.wrapping_add(0x0606_0606_0606_0606) & HI) != ZEROS {
        return None;
    }
    let v = v - ZEROS;
    // pairs, then quads, then the eight (the first digit is the low byte)
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let lo = (v & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32));
    let hi = ((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32));
    Some(lo.wrapping_add(hi) >> 32)
}

/// The decimal `int.frac` (`k` digits after the dot) from its digit runs'
/// values, when that is exactly what from_str gives for its text: then it
/// is `n / 10^k` with `n` exact in a u64, and when `n < 2^53` and
/// `k <= 22` both are exact f64s and one IEEE division rounds their
/// quotient correctly, as from_str rounds.  None: ask from_str.  (from_str
/// was a hot spot at two calls a line, each a second pass over digits the
/// scan had just read.)
fn fixed(int: Option<u64>, frac: Option<u64>, k: usize) -> Option<f64> {
    const POW10_U64: [u64; 20] = {
        let mut t = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            t[i] = t[i - 1] * 10;
            i += 1;
        }
        t
    };
    let n = int?.checked_mul(*POW10_U64.get(k)?)?.checked_add(frac?)?;
    (n < 1 << 53 && k < POW10.len()).then(|| n as f64 / POW10[k])
}

/// `s[i..]`'s `\d{width}\.\d{6}` followed by no digit, the shapes strace
/// prints most (`-ttt`'s time: ten digits; `-T`'s duration: one): where it
/// ends and its value, what [`fixed`] makes of it (so from_str's), read in
/// two words of eight digits instead of a digit at a time.  None: another
/// shape (or a value past 2^53 microseconds), for [`seconds`].
/// (`width` a constant at every call: each width its own small function)
#[inline(always)]
fn usec(s: &[u8], i: usize, width: usize) -> Option<(usize, f64)> {
    match width {
        1 => usec_of::<1>(s, i),
        10 => usec_of::<10>(s, i),
        _ => None,
    }
}

/// [`usec`] of width `W`.
fn usec_of<const W: usize>(s: &[u8], i: usize) -> Option<(usize, f64)> {
    let width = W;
    // the digits as whole words: the int's (ten: eight, then two with the
    // six after the dot; one: with the six, a zero in front) and the
    // fraction's, the dot taken out, in one eight-digit read each
    let word = |k: usize| {
        s.get(k..k + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
    };
    let dot = i + width;
    let n = match width {
        1 => {
            // `d.ffffff`: "0" d f0..f5 (the dot was byte 1)
            let w = word(i)?;
            if (w >> 8) as u8 != b'.' {
                return None;
            }
            let digits = u64::from(b'0') | (w & 0xFF) << 8 | (w >> 16) << 16;
            eight_digits(digits.to_le_bytes())?
        }
        10 => {
            // `dddddddd` `dd.fffff` `f`: d8 d9 f0..f5 (the dot was byte 2)
            let hi = eight_digits(word(i)?.to_le_bytes())?;
            let w = word(i + 8)?;
            if (w >> 16) as u8 != b'.' {
                return None;
            }
            let f5 = u64::from(at(s, i + 16));
            let digits = (w & 0xFFFF) | ((w >> 8) & 0x00FF_FFFF_FFFF_0000) | f5 << 56;
            hi * 100_000_000 + eight_digits(digits.to_le_bytes())?
        }
        _ => return None,
    };
    if at(s, dot + 7).is_ascii_digit() {
        return None;
    }
    (n < 1 << 53).then(|| (dot + 7, n as f64 / POW10[6]))
}

/// `s[i..]`'s `\d+(\.\d*)?`, which the caller knows starts with a digit:
/// where it ends and its value (from_str's).
fn seconds(line: &str, i: usize) -> (usize, Option<f64>) {
    let s = line.as_bytes();
    if let Some((e, v)) = usec(s, i, if at(s, i + 1) == b'.' { 1 } else { 10 }) {
        return (e, Some(v));
    }
    let (e, int) = digit_run(s, i);
    let (e, v) = if at(s, e) == b'.' {
        let (f, frac) = digit_run(s, e + 1);
        (f, fixed(int, frac, f - e - 1))
    } else {
        (e, fixed(int, Some(0), 0))
    };
    (e, v.or_else(|| line[i..e].parse().ok()))
}

/// Whether Python's `int(text, 0)` takes this `-?\d+`: no leading zero
/// before another digit, except in a run of zeros.
fn decimal_ok(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
    !(digits.len() > 1 && digits[0] == b'0' && digits.iter().any(|&c| c != b'0'))
}

/// [`result`]'s answer for the usual result ` = N <S.UUUUUU>` or ` = N`
/// to the end of the text (N a decimal other than `-1` and without a sign
/// or a leading zero, or `0x` and hex digits; one digit of seconds), read
/// straight off; None: another shape, which [`result`] reads the long way.
/// (props.rs checks the two agree.)
fn plain_result(line: &str, pos: usize, n: usize) -> Option<Outcome<'_>> {
    let s = &line.as_bytes()[..n];
    if s.get(pos..pos + 3)? != b" = " {
        return None;
    }
    let v0 = pos + 3;
    let k = if at(s, v0) == b'0' && at(s, v0 + 1) == b'x' {
        let k = skip(s, v0 + 2, |c| c.is_ascii_hexdigit());
        if k == v0 + 2 || k - v0 - 2 > MAX_DIGITS {
            return None;
        }
        k
    } else {
        let k = skip(s, v0, |c| c.is_ascii_digit());
        if k == v0 || k - v0 > MAX_DIGITS || (k - v0 > 1 && s[v0] == b'0') {
            return None;
        }
        k
    };
    let mut out = Outcome {
        ret: Some(Number(&line[v0..k])),
        err: None,
        ret_path: None,
        dur: None,
    };
    if k == n {
        return Some(out);
    }
    if n != k + 11 || s[k] != b' ' || s[k + 1] != b'<' || s[n - 1] != b'>' {
        return None;
    }
    let (e, v) = usec(s, k + 2, 1)?;
    if e != n - 1 {
        return None;
    }
    out.dur = Some(v);
    Some(out)
}

/// `Parser._result` on `line[pos..n]`; `None` refuses the line.
fn result<'a>(line: &'a str, pos: usize, n: usize, seen: &mut Seen) -> Option<Outcome<'a>> {
    if let Some(o) = plain_result(line, pos, n) {
        return Some(o);
    }
    result_general(line, pos, n, seen)
}

/// [`result`] for any shape.
/// A decorated fd (`= 3</dev/kfd<char 238:0>>`) ends where `decos` says
/// (the decorations seen: the path an open returns is the one the next
/// lines' arguments name).
fn result_general<'a, D: Decos>(
    line: &'a str,
    pos: usize,
    n: usize,
    decos: &mut D,
) -> Option<Outcome<'a>> {
    let s = &line.as_bytes()[..n];
    let mut k = skip(s, pos, is_ws);
    if at(s, k) != b'=' {
        return None;
    }
    k = skip(s, k + 1, is_ws);
    let mut out = Outcome {
        ret: None,
        err: None,
        ret_path: None,
        dur: None,
    };
    let v0 = k;
    let unknown = at(s, k) == b'?';
    // the general grammar reads `0x[0-9a-f]{1,64}` and `-?\d{1,64}` not
    // run into hex (`30x1f`, `-0x10` are no number of its)
    if at(s, k) == b'0' && at(s, k + 1) == b'x' && at(s, k + 2).is_ascii_hexdigit() {
        k = skip(s, k + 2, |c| c.is_ascii_hexdigit());
        if k - v0 - 2 > MAX_DIGITS {
            return None;
        }
    } else if unknown {
        k += 1;
    } else {
        if at(s, k) == b'-' {
            k += 1;
        }
        let d0 = k;
        if !at(s, k).is_ascii_digit() {
            return None;
        }
        k = skip(s, k, |c| c.is_ascii_digit());
        if k - d0 > MAX_DIGITS
            || (at(s, k) == b'x' && at(s, k + 1).is_ascii_hexdigit())
            || !decimal_ok(&line[v0..k])
        {
            return None;
        }
    }
    let minus_one = &line[v0..k] == "-1";
    if !unknown {
        out.ret = Some(Number(&line[v0..k]));
        if at(s, k) == b'<' {
            let e = decos.end(s, k)?;
            // "(deleted)" takes the general grammar's other branches
            if s[e - 1] != b'>' || s[k..e - 1].ends_with(b"(deleted)") {
                return None;
            }
            // decoration_path(): up to a nested <char M:m> / <pid comm>
            let (c0, mut c1) = (k + 1, e - 1);
            if let Some(cut) = memchr(b'<', &s[c0..c1]).map(|q| c0 + q)
                && cut > c0
                && s[c1 - 1] == b'>'
            {
                c1 = cut;
            }
            out.ret_path = Some(&line[c0..c1]);
            k = e;
        }
    }
    // the rest: [error text] [<duration>]
    let rest = k;
    let mut end = n;
    if end > rest
        && s[end - 1] == b'>'
        && let Some(lt) = memrchr(b'<', &s[rest..end - 1]).map(|q| rest + q)
    {
        let d = &s[lt + 1..end - 1];
        let unavailable = d == b"unavailable";
        let secs = match d.first() {
            Some(c) if c.is_ascii_digit() => match seconds(line, lt + 1) {
                (e, v) if e == end - 1 => Some(v),
                _ => None,
            },
            _ => None,
        };
        if unavailable || secs.is_some() {
            if let Some(v) = secs {
                out.dur = Some(v?);
            }
            end = rstrip(s, rest, lt);
        }
    }
    // a result strace made up: the general grammar marks the event
    if end > rest && memchr::memmem::find(&s[rest..end], b"(INJECTED").is_some() {
        return None;
    }
    if unknown || minus_one {
        let s = &s[..end];
        let e0 = skip(s, rest, is_ws);
        let mut q = e0;
        if at(s, q).is_ascii_uppercase() {
            q = skip(s, q + 1, |c| {
                c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'
            });
        }
        if q - e0 >= 2 && (q == end || is_ws(s[q])) {
            out.err = Some(&line[e0..q]);
        } else if minus_one {
            return None; // "(errno N)" or nothing: the general grammar names it
        }
    }
    Some(out)
}

/// The tokens of a line of the common shapes (see the module's text), or
/// `None` for the general grammar.
pub fn scan_line(line: &str) -> Option<Scanned<'_>> {
    scan_line_in(line, Vec::new(), &mut Seen::default())
}

/// [`scan_line`] with an empty list for the arguments ([`reuse_args`])
/// and the decorations earlier lines had.
pub fn scan_line_in<'a>(line: &'a str, args: Args<'a>, seen: &mut Seen) -> Option<Scanned<'a>> {
    if !crate::parse::lex::ascii(line.as_bytes()) {
        return None;
    }
    let s = line.as_bytes();
    let n = s.len();
    let digit = |i: usize| at(s, i).is_ascii_digit();

    // the common prefix: (\d{1,7}) +(?:(\d{9,}\.\d+)|(\d\d):(\d\d):(\d\d\.\d+)) (?=[\w<+-])
    // the tid's value as its digits are read (at most seven: it fits)
    let mut k = 0;
    let mut tid = 0u32;
    while k < n && s[k].is_ascii_digit() {
        if k == 7 {
            return None;
        }
        tid = tid * 10 + u32::from(s[k] - b'0');
        k += 1;
    }
    if k == 0 || at(s, k) != b' ' {
        return None;
    }
    k = skip(s, k, |c| c == b' ');
    let t0 = k;
    let fast = usec(s, t0, 10);
    if fast.is_none() {
        k = skip(s, k, |c| c.is_ascii_digit());
    }
    // -ttt's usual ten digits and six: read at once
    let time = if let Some((e, v)) = fast {
        k = e;
        v
    } else if k - t0 >= 9 && at(s, k) == b'.' && digit(k + 1) {
        let (e, v) = seconds(line, t0);
        k = e;
        v?
    } else if k - t0 == 2
        && at(s, k) == b':'
        && digit(k + 1)
        && digit(k + 2)
        && at(s, k + 3) == b':'
        && digit(k + 4)
        && digit(k + 5)
        && at(s, k + 6) == b'.'
        && digit(k + 7)
    {
        let two = |i: usize| u32::from(s[i] - b'0') * 10 + u32::from(s[i + 1] - b'0');
        let (h, mi, f0) = (two(t0), two(k + 1), k + 4);
        let (e, sec) = seconds(line, f0);
        k = e;
        let sec = sec?;
        // int(h) * 3600 + int(mi) * 60 + float(sec)
        f64::from(h * 3600 + mi * 60) + sec
    } else {
        return None;
    };
    if k + 1 >= n || s[k] != b' ' {
        return None;
    }
    let body = k + 1;
    let sc = Scan {
        line,
        tid,
        time,
        args,
        seen,
    };
    match s[body] {
        b'<' => resumed(sc, body),
        c if is_name_start(c) => call(sc, body),
        _ => None, // +++, ---, a number: the general grammar
    }
}

/// What [`scan_line_in`] hands the shape it found at the line's body: the
/// line, its prefix's values, the list for the arguments and the
/// decorations seen.
struct Scan<'a, 's> {
    line: &'a str,
    tid: u32,
    time: f64,
    args: Args<'a>,
    seen: &'s mut Seen,
}

/// `<... name resumed>args) = result` from `body`.
fn resumed<'a>(sc: Scan<'a, '_>, body: usize) -> Option<Scanned<'a>> {
    let line = sc.line;
    let s = line.as_bytes();
    let n = s.len();
    if !s[body..].starts_with(b"<... ") {
        return None;
    }
    let n0 = body + 5;
    let n1 = run_end(s, n0, &NAME_CHAR);
    if n1 == n0 || !s[n1..].starts_with(b" resumed>") {
        return None;
    }
    let rest = &s[n1 + 9..];
    if rest.starts_with(b" <unfinished ...>)")
        || rest.starts_with(b"<unfinished ...>)")
        || rest.ends_with(UNFINISHED)
    {
        return None;
    }
    let (args, close) = scan_args::<false>(line, n1 + 9, n, sc.args, sc.seen)?;
    let close = close?;
    let outcome = result(line, close + 1, n, sc.seen)?;
    Some(Scanned {
        kind: Kind::Resumed,
        tid: sc.tid,
        time: sc.time,
        name: &line[n0..n1],
        args,
        args_end: close,
        outcome: Some(outcome),
    })
}

/// `name(args) = result` or `name(args <unfinished ...>` from `body`.
fn call<'a>(sc: Scan<'a, '_>, body: usize) -> Option<Scanned<'a>> {
    let line = sc.line;
    let s = line.as_bytes();
    let n = s.len();
    let n1 = run_end(s, body + 1, &NAME_CHAR);
    if at(s, n1) != b'(' {
        return None;
    }
    let args0 = n1 + 1;
    let mut end = n;
    let unfinished = s[body..].ends_with(b"...>");
    if unfinished {
        if !s[body..].ends_with(UNFINISHED) {
            return None; // <detached ...>, <pid changed to …>: the general grammar
        }
        end = rstrip(s, body, n - UNFINISHED.len());
        if end < args0 {
            return None;
        }
    }
    // (from the list: a name and its `(` hold no `<`, so every match
    // starts there; a `u` of the name is no longer tried)
    if has_unfinished_close(&s[args0..end]) {
        return None;
    }
    let (args, close) = if !unfinished && &s[body..n1] == b"ioctl" {
        scan_args::<true>(line, args0, end, sc.args, sc.seen)?
    } else {
        scan_args::<false>(line, args0, end, sc.args, sc.seen)?
    };
    let outcome = if unfinished {
        None
    } else {
        Some(result(line, close? + 1, end, sc.seen)?)
    };
    Some(Scanned {
        kind: if unfinished {
            Kind::Unfinished
        } else {
            Kind::Call
        },
        tid: sc.tid,
        time: sc.time,
        name: &line[body..n1],
        args,
        args_end: close.unwrap_or(end),
        outcome,
    })
}

// --- bracketed values: the value of a {…} or […] token ---------------------

/// How [`bracketed`] makes its values: [`Value`](crate::events::Value)s in
/// values.rs, a plain tree in the tests.  Every text handed over is a slice of the token.
pub trait Builder<'a> {
    type Value;
    type Error;
    /// A value with no bracket in it.
    fn scalar(&mut self, text: &'a str) -> Result<Self::Value, Self::Error>;
    /// Text outside the well-formed language, for the general grammar at
    /// `depth`.
    fn general(&mut self, text: &'a str, depth: isize) -> Result<Self::Value, Self::Error>;
    /// Text kept as it is (too deep, or trailing text after a group).
    fn text(&mut self, text: &'a str) -> Result<Self::Value, Self::Error>;
    /// `[…]`, without the empty and `...` elements.
    fn list(
        &mut self,
        items: impl ExactSizeIterator<Item = Self::Value>,
    ) -> Result<Self::Value, Self::Error>;
    /// `{name=value, …}`, in order (a later field of the same name wins).
    fn dict(
        &mut self,
        fields: impl Iterator<Item = (&'a str, Self::Value)>,
    ) -> Result<Self::Value, Self::Error>;
    /// `entry => exit`
    fn pair(&mut self, entry: Self::Value, exit: Self::Value) -> Result<Self::Value, Self::Error>;
    /// An empty stack for the elements a walk holds while it builds their
    /// group; [`Builder::unstack`] gets it back when the walk is done (a
    /// builder may keep it for the next token instead of allocating one).
    fn stack(&mut self) -> Vec<Self::Value> {
        Vec::with_capacity(32)
    }
    fn unstack(&mut self, _stack: Vec<Self::Value>) {}
}

/// The value of a token holding `{` or `[` at nesting `depth`: lists,
/// dicts and (entry, exit) pairs built here, scalars by
/// [`Builder::scalar`], anything outside the well-formed language by
/// [`Builder::general`]; deeper than `max_depth`: the text.  The recursion
/// is bounded by `max_depth - depth` (the caller bounds that).
///
/// One pass over the token ([`Groups::scan`]) finds every bracket group, its
/// closer and its top-level commas; the walk then reads each group's items
/// from that, so the work is linear in the token's length at any nesting
/// depth (the well-formed match per group and level it replaces was one scan
/// of the group's text per level).
pub fn bracketed<'a, B: Builder<'a>>(
    tok: &'a str,
    depth: isize,
    max_depth: isize,
    b: &mut B,
) -> Result<B::Value, B::Error> {
    if !tok.is_ascii() {
        return b.general(tok, depth);
    }
    // the scratch of the outermost call; a nested one (through
    // Builder::general back into here) gets its own
    let mut groups = SCRATCH.with(|c| c.take());
    groups.scan(tok.as_bytes());
    let mut keys = std::mem::take(&mut groups.keys);
    keys.clear();
    let values = b.stack();
    let mut walk = Walk {
        tok,
        max_depth,
        b,
        groups: &groups,
        values,
        keys,
    };
    let v = walk.value(0, tok.len(), depth);
    let Walk {
        b, values, keys, ..
    } = walk;
    b.unstack(values);
    groups.keys = keys;
    SCRATCH.with(|c| c.replace(groups));
    v
}

thread_local! {
    static SCRATCH: std::cell::Cell<Groups> = const { std::cell::Cell::new(Groups::new()) };
}

const NONE: u32 = u32::MAX;

/// The bracket groups of a token as the well-formed language reads them,
/// found in one left-to-right pass.  Nodes are the openers and the commas of
/// groups, in text order: for an opener, `close` is its closer (any closer
/// ends any group, as in the regex) or `NONE` when the group is outside the
/// language (an atom that does not end, no closer, or nested deeper than
/// [`MAX_DEPTH`]); `next` chains a group's commas from its opener.  The pass
/// stops at the first atom that does not end: every group open there is
/// outside the language, and groups after it are not scanned (the walk
/// matches those the two-pass way, which is the definition).
#[derive(Default)]
struct Groups {
    pos: Vec<u32>,
    close: Vec<u32>,
    next: Vec<u32>,
    /// the open groups: (opener node, height of its deepest child, last comma node)
    open: Vec<(u32, u32, u32)>,
    /// where the pass stopped (the text end, or the atom that did not end)
    scanned: usize,
    /// every `/*` of the token, strings included (has_comment's view)
    comments: Vec<u32>,
    /// the walk's stack of struct field names, as (start, end) in the
    /// token (kept here between tokens, with the rest of the scratch)
    keys: Vec<(u32, u32)>,
}

/// What [`Groups::find`] knows of the group at a position.
enum Found {
    /// (closer, first comma node)
    Group(usize, u32),
    /// outside the well-formed language
    Outside,
    /// not scanned (after the atom that stopped the pass)
    Unknown,
}

impl Groups {
    const fn new() -> Self {
        Groups {
            pos: Vec::new(),
            close: Vec::new(),
            next: Vec::new(),
            open: Vec::new(),
            scanned: 0,
            comments: Vec::new(),
            keys: Vec::new(),
        }
    }

    /// `has_comment(&tok[a..z])`
    fn has_comment(&self, a: usize, z: usize) -> bool {
        let i = self.comments.partition_point(|&p| (p as usize) < a);
        self.comments.get(i).is_some_and(|&p| p as usize + 1 < z)
    }

    /// The atoms of [`well_formed`], every group at once.
    fn scan(&mut self, s: &[u8]) {
        self.pos.clear();
        self.close.clear();
        self.next.clear();
        self.open.clear();
        self.comments.clear();
        self.comments.extend(
            memchr::memchr_iter(b'/', s)
                .filter(|&i| at(s, i + 1) == b'*')
                .map(|i| i as u32),
        );
        let mut j = 0;
        let stop = 'scan: loop {
            if j >= s.len() {
                break 'scan s.len();
            }
            let c = s[j];
            if ARG_PLAIN[c as usize] {
                j = skip_table(s, j + 1, &ARG_PLAIN);
                continue;
            }
            match c {
                b'"' => match string_end(s, j) {
                    Some(k) => j = k,
                    None => break 'scan j,
                },
                // well_formed's atoms: a character literal (`','` is no
                // comma, `'}'` no closer), else a lone `'`; `1<<16`, a shift
                b'\'' => j = char_end(s, j).unwrap_or(j + 1),
                b'<' if at(s, j + 1) == b'<' => j += 2,
                b'<' => match deco_end(s, j) {
                    Some(k) => j = k,
                    None => break 'scan j,
                },
                b'/' if at(s, j + 1) == b'*' => {
                    let Some(e) = COMMENT_CLOSE.find(&s[j + 2..]).map(|e| j + 2 + e) else {
                        break 'scan j;
                    };
                    if memchr(b'\n', &s[j..e]).is_some() {
                        break 'scan j;
                    }
                    j = e + 2;
                }
                b',' => {
                    if let Some(top) = self.open.last_mut() {
                        let node = self.pos.len() as u32;
                        let link = if top.2 == NONE { top.0 } else { top.2 };
                        self.next[link as usize] = node;
                        top.2 = node;
                        self.pos.push(j as u32);
                        self.close.push(NONE);
                        self.next.push(NONE);
                    }
                    j += 1;
                }
                b'(' | b'{' | b'[' => {
                    self.open.push((self.pos.len() as u32, 0, NONE));
                    self.pos.push(j as u32);
                    self.close.push(NONE);
                    self.next.push(NONE);
                    j += 1;
                }
                b')' | b'}' | b']' => {
                    // a closer outside every group is text between groups
                    if let Some((node, child, _)) = self.open.pop() {
                        let height = child + 1;
                        if height as usize <= MAX_DEPTH {
                            self.close[node as usize] = j as u32;
                        }
                        if let Some(parent) = self.open.last_mut() {
                            parent.1 = parent.1.max(height);
                        }
                    }
                    j += 1;
                }
                // `/` alone, `>`
                _ => j += 1,
            }
        };
        // the groups still open never close: outside the language (their
        // `close` is NONE already)
        self.open.clear();
        self.scanned = stop;
    }

    fn find(&self, a: usize) -> Found {
        if a >= self.scanned {
            return Found::Unknown;
        }
        match self.pos.binary_search(&(a as u32)) {
            Ok(i) if self.close[i] != NONE => Found::Group(self.close[i] as usize, self.next[i]),
            Ok(_) => Found::Outside,
            Err(_) => Found::Unknown,
        }
    }
}

/// One walk over a token.  The elements of the groups being built wait on
/// one stack (`values`, with `keys` for struct fields) instead of a vector
/// per group.
struct Walk<'a, 'b, B: Builder<'a>> {
    tok: &'a str,
    max_depth: isize,
    b: &'b mut B,
    groups: &'b Groups,
    values: Vec<B::Value>,
    keys: Vec<(u32, u32)>,
}

impl<'a, B: Builder<'a>> Walk<'a, '_, B> {
    /// parse_value of `tok[a..b]`: scalars as scalars, the rest by `value`.
    fn sub(&mut self, x0: usize, x1: usize, depth: isize) -> Result<B::Value, B::Error> {
        let t = &self.tok.as_bytes()[x0..x1];
        if memchr2(b'{', b'[', t).is_none() {
            self.b.scalar(&self.tok[x0..x1])
        } else {
            self.value(x0, x1, depth)
        }
    }

    /// The value of `tok[a0..b0]` at `depth`, for text holding a bracket.
    fn value(&mut self, a0: usize, b0: usize, depth: isize) -> Result<B::Value, B::Error> {
        let tok = self.tok;
        let whole = &tok[a0..b0];
        let (a, z) = strip(tok.as_bytes(), a0, b0);
        let s = &tok.as_bytes()[..z];
        if z - a < 2 || !matches!(s[a], b'{' | b'[') || self.groups.has_comment(a, z) {
            return self.b.general(whole, depth);
        }
        if depth > self.max_depth {
            return self.b.text(&tok[a..z]);
        }
        // _matching: the well-formed bracket group at a.  The one pass knows
        // it unless the group lies past where the pass stopped (or, never
        // for the ranges the walk makes, past z).
        let (end, mut comma) = match self.groups.find(a) {
            Found::Group(end, first) if end < z => (end, Some(first)),
            Found::Outside => return self.b.general(whole, depth),
            _ => {
                let end = well_formed(s, a + 1, MAX_DEPTH - 1, true);
                if end >= z || !is_closer(s[end]) {
                    return self.b.general(whole, depth);
                }
                (end, None)
            }
        };
        let depth = depth + 1;
        if end != z - 1 {
            let r = skip(s, end + 1, is_ws);
            if s[r..].starts_with(b"=>") {
                let entry = self.sub(a, end + 1, depth)?;
                let exit = self.sub(r + 2, z, depth)?;
                return self.b.pair(entry, exit);
            }
            return self.b.text(&tok[a..z]);
        }
        // _items: split the body at top-level commas, then the elements
        let is_list = s[a] == b'[';
        let body = &s[..end];
        let (v0, k0) = (self.values.len(), self.keys.len());
        let mut j = a + 1;
        loop {
            let e = match &mut comma {
                Some(node) if *node != NONE => {
                    let at = self.groups.pos[*node as usize] as usize;
                    *node = self.groups.next[*node as usize];
                    at
                }
                Some(_) => end,
                None => well_formed(body, j, MAX_DEPTH, false),
            };
            if e != end && body[e] != b',' {
                self.values.truncate(v0);
                self.keys.truncate(k0);
                return self.b.general(whole, depth - 1);
            }
            let (x0, x1) = strip(body, j, e);
            // empty items and "..." are skipped (an empty tail is not an item)
            if x1 > x0 && &body[x0..x1] != b"..." {
                if is_list {
                    let v = self.sub(x0, x1, depth)?;
                    self.values.push(v);
                } else if let Some(q) = field_name(&body[x0..x1]).map(|q| x0 + q) {
                    let v = self.sub(q + 1, x1, depth)?;
                    self.keys.push((x0 as u32, q as u32));
                    self.values.push(v);
                }
            }
            if e == end {
                break;
            }
            j = e + 1;
        }
        let values = self.values.drain(v0..);
        if is_list {
            self.b.list(values)
        } else {
            let keys = self
                .keys
                .drain(k0..)
                .map(|(x, q)| &tok[x as usize..q as usize]);
            self.b.dict(keys.zip(values))
        }
    }
}

/// strip_name: the length of the `name` of `name=value`
/// (`[A-Za-z_][A-Za-z0-9_]{0,39}=(?![=>])`), if the item has one.
fn field_name(x: &[u8]) -> Option<usize> {
    if !is_name_start(at(x, 0)) {
        return None;
    }
    let mut q = 1;
    while q < x.len() && q < 40 && (x[q].is_ascii_alphanumeric() || x[q] == b'_') {
        q += 1;
    }
    (at(x, q) == b'=' && !matches!(at(x, q + 1), b'=' | b'>')).then_some(q)
}

#[cfg(test)]
pub(crate) mod props;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod two_pass;
