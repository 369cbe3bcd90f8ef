//! The struct walk as it was before the one-pass group scan (two passes per
//! nesting level: the well-formed match of a group, then its items): the
//! definition the one-pass walk is tested equal to.

use super::{
    Builder, MAX_DEPTH, field_name, has_comment, is_closer, is_ws, skip, strip, well_formed,
};
use memchr::memchr2;

/// `tokens._value(tok, None, depth)` for a token holding `{` or `[`: lists,
/// dicts and (entry, exit) pairs built here, scalars by
/// [`Builder::scalar`], anything outside the well-formed language by
/// [`Builder::general`]; deeper than `max_depth`: the text.  The recursion
/// is bounded by `max_depth - depth` (the caller bounds that).
pub fn bracketed_two_pass<'a, B: Builder<'a>>(
    tok: &'a str,
    depth: isize,
    max_depth: isize,
    b: &mut B,
) -> Result<B::Value, B::Error> {
    if !tok.is_ascii() {
        return b.general(tok, depth);
    }
    let mut walk = Walk {
        tok,
        max_depth,
        b,
        // (room for the fields of a usual KFD struct and what it nests)
        values: Vec::with_capacity(32),
        keys: Vec::with_capacity(32),
    };
    walk.value(0, tok.len(), depth)
}

/// One walk over a token.  The elements of the groups being built wait on
/// one stack (`values`, with `keys` for struct fields) instead of a vector
/// per group.
struct Walk<'a, 'b, B: Builder<'a>> {
    tok: &'a str,
    max_depth: isize,
    b: &'b mut B,
    values: Vec<B::Value>,
    keys: Vec<&'a str>,
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

    /// `tokens._value(tok[a0..b0], None, depth)` for text holding a bracket.
    fn value(&mut self, a0: usize, b0: usize, depth: isize) -> Result<B::Value, B::Error> {
        let tok = self.tok;
        let whole = &tok[a0..b0];
        let (a, z) = strip(tok.as_bytes(), a0, b0);
        let s = &tok.as_bytes()[..z];
        if z - a < 2 || !matches!(s[a], b'{' | b'[') || has_comment(&s[a..]) {
            return self.b.general(whole, depth);
        }
        if depth > self.max_depth {
            return self.b.text(&tok[a..z]);
        }
        // _matching: the well-formed bracket group at a
        let end = well_formed(s, a + 1, MAX_DEPTH - 1, true);
        if end >= z || !is_closer(s[end]) {
            return self.b.general(whole, depth);
        }
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
            let e = well_formed(body, j, MAX_DEPTH, false);
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
                    self.keys.push(&tok[x0..q]);
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
            self.b.dict(self.keys.drain(k0..).zip(values))
        }
    }
}
