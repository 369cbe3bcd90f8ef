//! Lexical primitives both the tokenizer and the value decoder read lines
//! with: byte access past the end, runs of a class, byte-class tables, C
//! character literals.  Below `tokens` and `values`, so neither depends on
//! the other for them.

pub fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

pub fn skip(s: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> usize {
    while i < s.len() && class(s[i]) {
        i += 1;
    }
    i
}

/// Whether `mark` marks a byte of `s` (the high bit of a byte of its
/// result), sixteen bytes a step on x86-64 (SSE2, which every x86-64
/// has): the marks of every step or-ed, the last sixteen bytes read once
/// more (overlapping) instead of a byte loop; `None` for a text shorter
/// than sixteen bytes.  The whole-line checks of every line (ASCII, ESC)
/// cost ~100 and ~80 instructions as std's and memchr's loops.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn any16(
    s: &[u8],
    mark: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> Option<bool> {
    use std::arch::x86_64::*;
    if s.len() < 16 {
        return None;
    }
    // SAFETY: every load reads s[k..k + 16] with k + 16 <= s.len()
    unsafe {
        let p = s.as_ptr();
        let mut acc = mark(_mm_loadu_si128(p.add(s.len() - 16).cast()));
        let mut k = 0;
        while k + 16 <= s.len() {
            acc = _mm_or_si128(acc, mark(_mm_loadu_si128(p.add(k).cast())));
            k += 16;
        }
        Some(_mm_movemask_epi8(acc) != 0)
    }
}

/// `s.is_ascii()`.
pub fn ascii(s: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some(high) = any16(s, |v| v) {
        return !high;
    }
    s.is_ascii()
}

/// Whether `s` holds an ESC (0x1b: an ANSI colour sequence).
pub fn has_esc(s: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64
        let esc = |v| unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(0x1b)) };
        if let Some(esc) = any16(s, esc) {
            return esc;
        }
    }
    memchr::memchr(0x1b, s).is_some()
}

/// The first byte of `s` that `mark` marks (the high bit of a byte of its
/// result), sixteen bytes a step on x86-64 (SSE2, which every x86-64
/// has), the last sixteen read overlapping; `None` for a text shorter than
/// sixteen bytes (the caller's byte loop then).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first16(
    s: &[u8],
    mark: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
) -> Option<Option<usize>> {
    use std::arch::x86_64::*;
    let n = s.len();
    if n < 16 {
        return None;
    }
    // SAFETY: every load reads s[k..k + 16] with k + 16 <= n
    unsafe {
        let p = s.as_ptr();
        let hits = |k: usize| _mm_movemask_epi8(mark(_mm_loadu_si128(p.add(k).cast()))) as u32;
        let mut k = 0;
        while k + 16 <= n {
            let m = hits(k);
            if m != 0 {
                return Some(Some(k + m.trailing_zeros() as usize));
            }
            k += 16;
        }
        // (the bytes before k are unmarked: the first mark of the last
        // sixteen is at k or after)
        let m = hits(n - 16);
        Some((m != 0).then(|| n - 16 + m.trailing_zeros() as usize))
    }
}

/// The first `b` in `s` (memchr's answer), by [`first16`] and a byte loop
/// under sixteen bytes: the tokens searched are short (an argument, a
/// line's body), and memchr's dispatch cost ~50 instructions a call.
pub fn find_byte(s: &[u8], b: u8) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64
        let is_b = |v| unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)) };
        if let Some(at) = first16(s, is_b) {
            return at;
        }
    }
    s.iter().position(|&c| c == b)
}

/// The first of `a`, `b` or `c` in `s` (memchr3's answer), as
/// [`find_byte`].
pub fn find_byte3(s: &[u8], a: u8, b: u8, c: u8) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of x86-64
        let is_one = |v| unsafe {
            let eq = |x: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(x as i8));
            _mm_or_si128(_mm_or_si128(eq(a), eq(b)), eq(c))
        };
        if let Some(at) = first16(s, is_one) {
            return at;
        }
    }
    s.iter().position(|&x| x == a || x == b || x == c)
}

/// A short text kept inline, at most `N` bytes (no allocation): a key of
/// the small tables that remember an answer for a recent text
/// (kfd_args' constants, syscalls::ioctl's struct layouts).
#[derive(Clone, Copy)]
pub struct Short<const N: usize> {
    bytes: [u8; N],
    len: u8,
}

impl<const N: usize> Short<N> {
    /// No text (equal to none but the empty one).
    pub const EMPTY: Self = Short {
        bytes: [0; N],
        len: 0,
    };

    /// `t` kept, or `None` when it is longer than `N` (or 255) bytes.
    pub fn new(t: &[u8]) -> Option<Self> {
        let len = u8::try_from(t.len())
            .ok()
            .filter(|&l| usize::from(l) <= N)?;
        let mut s = Self::EMPTY;
        s.bytes[..t.len()].copy_from_slice(t);
        s.len = len;
        Some(s)
    }

    /// Whether this is the text `t`.
    pub fn is(&self, t: &[u8]) -> bool {
        usize::from(self.len) == t.len() && self.bytes[..t.len()] == *t
    }
}

/// A byte's value as a hex digit, 0xFF for no digit.
pub const HEX_DIGIT: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut c = 0;
    while c < 10 {
        t[b'0' as usize + c] = c as u8;
        c += 1;
    }
    let mut c = 0;
    while c < 6 {
        t[b'a' as usize + c] = 10 + c as u8;
        t[b'A' as usize + c] = 10 + c as u8;
        c += 1;
    }
    t
};

/// The end of the hex digits from `i` and their value (wrapped past 16
/// digits: the caller takes at most 15).
pub fn hex_run(s: &[u8], mut i: usize) -> (usize, u64) {
    let mut v: u64 = 0;
    while let Some(&c) = s.get(i) {
        let x = HEX_DIGIT[c as usize];
        if x > 15 {
            break;
        }
        v = v.wrapping_shl(4) | u64::from(x);
        i += 1;
    }
    (i, v)
}

/// The end of the decimal digits from `i` and their value (wrapped past
/// 19 digits: the caller takes at most 19).
pub fn dec_run(s: &[u8], mut i: usize) -> (usize, u64) {
    let mut v: u64 = 0;
    while let Some(&c) = s.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        i += 1;
    }
    (i, v)
}

/// At `k`: the end of a C character literal.
pub(crate) fn char_end(s: &[u8], k: usize) -> Option<usize> {
    if at(s, k) != b'\'' {
        return None;
    }
    let c = at(s, k + 1);
    if k + 1 >= s.len() || c == b'\'' {
        return None;
    }
    if c != b'\\' {
        // one code point
        let w = utf8_width(s, k + 1);
        return (at(s, k + 1 + w) == b'\'').then_some(k + 2 + w);
    }
    let e = k + 2;
    if e >= s.len() {
        return None;
    }
    let mut cands: Vec<usize> = Vec::with_capacity(3);
    let c = s[e];
    if c == b'x' {
        let h = skip(s, e + 1, |c| c.is_ascii_hexdigit()).min(e + 3);
        for m in (e + 2..=h).rev() {
            cands.push(m);
        }
    } else if (b'0'..=b'7').contains(&c) {
        let o = skip(s, e, |c| (b'0'..=b'7').contains(&c)).min(e + 3);
        for m in (e + 1..=o).rev() {
            cands.push(m);
        }
    }
    // `.` (no newline: the pattern is not re.S)
    if c != b'\n' {
        cands.push(e + utf8_width(s, e));
    }
    cands
        .into_iter()
        .find(|&m| at(s, m) == b'\'')
        .map(|m| m + 1)
}

/// Bytes of the code point at `i` (a stray byte is one).
pub(crate) fn utf8_width(s: &[u8], i: usize) -> usize {
    let w = match at(s, i) {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    if w > 1
        && s.get(i..i + w)
            .is_some_and(|c| std::str::from_utf8(c).is_ok())
    {
        w
    } else {
        1
    }
}

/// A byte class as a table: every byte but those of `special`.
pub const fn all_but(special: &[u8]) -> [bool; 256] {
    let mut t = [true; 256];
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = false;
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::Short;

    #[test]
    fn a_short_text_is_itself_only() {
        let a = Short::<8>::new(b"AMDKFD").unwrap();
        assert!(a.is(b"AMDKFD"));
        for other in [&b"AMDKF"[..], b"AMDKFD_", b"AMDKFE", b""] {
            assert!(!a.is(other), "{other:?}");
        }
        assert!(Short::<8>::new(b"12345678").unwrap().is(b"12345678"));
        assert!(Short::<8>::new(b"123456789").is_none());
        assert!(Short::<8>::EMPTY.is(b""));
        assert!(!Short::<8>::EMPTY.is(b"\0"));
    }
}
