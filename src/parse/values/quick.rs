//! The usual decoded struct in one pass: `{name=scalar, name=[{…}, …], …}`
//! and lists of such, nested a few levels, or `{…} => {…}` of two such,
//! with no strings, characters, comments, parentheses, other `=>` or
//! non-ASCII bytes (fd decorations are taken).  That is
//! most of a preload log's ioctl arguments, and for it the general way
//! (tokens::bracketed: the group scan, then the walk) does a lot of work
//! that cannot change the answer.
//!
//! [`quick`] answers exactly what [`super::parse_value`] answers, or `None`
//! when the token leaves that shape in any way (the caller then takes the
//! general way): every item a group of the general way would skip or treat
//! specially (empty, `...`, no `name=` in a struct, text after a nested
//! group, a closer of another kind) refuses the token rather than being
//! mimicked.  Scalars are [`super::value`]'s, as in the walk, and structs
//! go through [`super::dict_of`].  The tests below compare the two ways.

use super::{bare_name, dict_of, int_value, is_ws, parse_int, plain_int, value};
use crate::events::Value;
use crate::parse::tokens;

/// Groups nested deeper than this are left to the general way (the
/// structs decoded here nest two deep).
const MAX_LEVELS: usize = 4;

/// What a byte of a scalar is to the scan: a word byte (`\w`), other
/// text, the end of the item (a comma or a closer), or a byte that refuses
/// the token: an opener (a scalar holds no group here), the atoms of the
/// well-formed language other than brackets, commas and decorations
/// (strings, characters, `=>`, comments), parentheses, non-ASCII.
const WORD: u8 = 0;
const TEXT: u8 = 1;
const END: u8 = 2;
const REFUSE: u8 = 3;
/// `<`: an fd decoration, skipped whole as the group scan skips it
const DECO: u8 = 4;

const CLASS: [u8; 256] = {
    let mut t = [TEXT; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        if b.is_ascii_alphanumeric() || b == b'_' {
            t[c] = WORD;
        } else if c >= 0x80 {
            t[c] = REFUSE;
        }
        c += 1;
    }
    let refuse = b"\"'<>()/{[";
    let mut i = 0;
    while i < refuse.len() {
        t[refuse[i] as usize] = REFUSE;
        i += 1;
    }
    t[b'<' as usize] = DECO;
    t[b',' as usize] = END;
    t[b'}' as usize] = END;
    t[b']' as usize] = END;
    t
};

/// parse_value of `tok` when it is one group of the usual shape (with
/// whitespace around it), else `None`.
pub(super) fn quick(tok: &[u8]) -> Option<Value> {
    let mut i = 0;
    while i < tok.len() && is_ws(tok[i]) {
        i += 1;
    }
    if !matches!(tok.get(i), Some(b'{' | b'[')) {
        return None;
    }
    let mut q = Quick {
        s: tok,
        i,
        stack: STACK.with(|c| c.take()),
    };
    let v = q.group(0).and_then(|entry| {
        q.ws();
        if q.i == tok.len() {
            return Some(entry);
        }
        // `entry => exit` (what the kernel wrote back), both groups
        if !tok[q.i..].starts_with(b"=>") {
            return None;
        }
        q.i += 2;
        q.ws();
        if !matches!(tok.get(q.i), Some(b'{' | b'[')) {
            return None;
        }
        let exit = q.group(0)?;
        q.ws();
        (q.i == tok.len()).then(|| Value::Pair(Box::new((entry, exit))))
    });
    let mut stack = q.stack;
    stack.clear();
    STACK.with(|c| c.replace(stack));
    v
}

thread_local! {
    /// The elements (and for struct fields the name's place) of the groups
    /// being read, one stack for every token.
    static STACK: std::cell::Cell<Vec<(usize, usize, Value)>> =
        const { std::cell::Cell::new(Vec::new()) };
}

struct Quick<'a> {
    s: &'a [u8],
    i: usize,
    stack: Vec<(usize, usize, Value)>,
}

impl Quick<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && is_ws(self.s[self.i]) {
            self.i += 1;
        }
    }

    /// The group whose opener is at `i`; `i` ends past its closer.
    fn group(&mut self, level: usize) -> Option<Value> {
        if level >= MAX_LEVELS {
            return None;
        }
        let is_list = self.s[self.i] == b'[';
        let close = if is_list { b']' } else { b'}' };
        self.i += 1;
        self.ws();
        let base = self.stack.len();
        if self.s.get(self.i) == Some(&close) {
            // `[]` / `{}`: the one empty item the general way skips here
            self.i += 1;
        } else {
            loop {
                self.ws();
                let (k0, k1) = if is_list {
                    (0, 0)
                } else {
                    let q = self.name()?;
                    let k = (self.i, self.i + q);
                    self.i += q + 1;
                    k
                };
                let v = self.item(level, close, is_list)?;
                self.stack.push((k0, k1, v));
                match self.s.get(self.i) {
                    Some(b',') => self.i += 1,
                    Some(&c) if c == close => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        let s = self.s;
        let items = self.stack.drain(base..);
        Some(if is_list {
            Value::List(items.map(|x| x.2).collect())
        } else {
            Value::Struct(dict_of(items.map(|(a, b, v)| (&s[a..b], v))))
        })
    }

    /// tokens::field_name at `i`: the length of `name` in `name=value`
    /// (`[A-Za-z_][A-Za-z0-9_]{0,39}=(?![=>])`).
    fn name(&self) -> Option<usize> {
        let x = &self.s[self.i..];
        let at = |k: usize| x.get(k).copied().unwrap_or(0);
        if !(at(0).is_ascii_alphabetic() || at(0) == b'_') {
            return None;
        }
        let (mut q, lim) = (1, x.len().min(40));
        while q < lim && CLASS[x[q] as usize] == WORD {
            q += 1;
        }
        (at(q) == b'=' && !matches!(at(q + 1), b'=' | b'>')).then_some(q)
    }

    /// Past the fd decoration at `j`: tokens::deco_end, as the group scan
    /// calls it.  A bracket or `/*` in it would change how the general way
    /// reads the item (the value of a bracket, a group's comment test).
    #[cold]
    fn decoration(&self, j: usize) -> Option<usize> {
        let e = tokens::deco_end(self.s, j)?;
        let d = &self.s[j..e];
        if d.iter().any(|c| matches!(c, b'{' | b'[')) || d.windows(2).any(|w| w == b"/*") {
            return None;
        }
        Some(e)
    }

    /// The value from `i` (after `name=`, or a list item after its
    /// whitespace) up to the `,` or `close` that ends the item, where `i`
    /// is left: a nested group, or a scalar without brackets.
    fn item(&mut self, level: usize, close: u8, is_list: bool) -> Option<Value> {
        let v0 = self.i;
        self.ws();
        if matches!(self.s.get(self.i), Some(b'{' | b'[')) {
            let v = self.group(level + 1)?;
            self.ws();
            return Some(v);
        }
        let (mut j, mut kinds) = (self.i, WORD);
        loop {
            let k = CLASS[*self.s.get(j)? as usize];
            if k >= END {
                if k == DECO {
                    j = self.decoration(j)?;
                    kinds |= TEXT;
                    continue;
                }
                // a closer of another kind ends the group to the general way
                if k == REFUSE || (self.s[j] != b',' && self.s[j] != close) {
                    return None;
                }
                break;
            }
            kinds |= k;
            j += 1;
        }
        let mut end = j;
        while end > v0 && is_ws(self.s[end - 1]) {
            end -= 1;
        }
        let text = &self.s[v0..end];
        // a list skips an empty item and `...`: refused here
        if is_list && (text.is_empty() || text == b"...") {
            return None;
        }
        self.i = j;
        // the scan saw every byte: a bare name or a number needs none of
        // value's other steps (no comment, fd, chain or `(` can be in it)
        Some(match text.first() {
            Some(&c) if kinds == WORD && (c.is_ascii_alphabetic() || c == b'_') => bare_name(text),
            Some(_) if let Some(v) = plain_int(text) => v,
            Some(&c) if c.is_ascii_digit() || c == b'-' => match parse_int(text) {
                Some(v) => int_value(v, text),
                None => value(text, 0),
            },
            _ => value(text, 0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The general way's value of `tok` (parse_value without this module).
    fn general(tok: &[u8]) -> Value {
        super::super::parse(tok, 0)
    }

    #[test]
    fn usual_structs_match_the_general_way() {
        for tok in [
            "{start_addr=0x7f3a005c6000, size=0x11000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=3, attrs=[{type=KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, value=0x1a2b}, {type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=KFD_IOCTL_SVM_FLAG_COHERENT}]}",
            "[0x5612a0]",
            "[]",
            "{}",
            " { a=1 , b= [1, 2] } ",
            "{a=, b=NULL, c=-1, a=2}",
            "{flags=A|B, n=18446744073709551615, m=18446744073709551616}",
            "[[1], [2, [3]]]",
            "{x=[{y=[]}]}",
            "{va_addr=0, size=0x200000, flags=A|B} => {handle=0x1a2b00000001, mmap_offset=0x100000000}",
            "[1]=>[2]",
            "{handle=0x1a2b00000001, flags=O_CLOEXEC} => {dmabuf_fd=9</dmabuf:>}",
            "{fd=3</dev/kfd<char 238:0>>, x=1}",
            "{fd=3</x,y>(deleted), n=[4<a>]}",
        ] {
            let q = quick(tok.as_bytes());
            assert_eq!(q.as_ref(), Some(&general(tok.as_bytes())), "{tok}");
        }
    }

    #[test]
    fn other_shapes_are_refused() {
        for tok in [
            "0x10",
            "{a=\"x\"}",
            "{a=1, , b=2}",
            "[1, ...]",
            "{1, 2}",
            "{a=[1]]",
            "{a=1} => 3",
            "{a=1} =>",
            "{a=1} => {b=2} => {c=3}",
            "{a=1} = > {b=2}",
            "{a=f(1)}",
            "{a=1 /* c */}",
            "{a=[1] x}",
            "{a=[[[[1]]]]}",
            "{a=1",
            "{a=1} x",
            "{a==1}",
            "{fd=3<a/*b>}",
            "{fd=3<socket:[1]>}",
            "{fd=3<a->b>}",
            "{fd=3<a}",
            // not a field to the general way, which skips it
            "{ a = 1 , b=[1, 2] }",
        ] {
            assert_eq!(quick(tok.as_bytes()), None, "{tok}");
        }
    }

    /// Tokens of the usual shape, nested, with some items the general way
    /// skips or reads otherwise (empty, `...`, names with a space).
    fn shaped() -> impl Strategy<Value = String> {
        let scalar = prop_oneof![
            Just("0x1a2b"),
            Just("3"),
            Just("-1"),
            Just("007"),
            Just("NULL"),
            Just("KFD_IOCTL_SVM_FLAG_COHERENT"),
            Just("A|B"),
            Just(""),
            Just("..."),
            Just(" 7 "),
            Just("x y"),
            Just("0x"),
            Just("99999999999999999999999"),
            Just("3</dev/kfd>"),
            Just("9</dmabuf:>"),
            Just("4<a,b>"),
            Just("5<x"),
            Just("<<"),
            Just("6<a<b>>(deleted)"),
        ]
        .prop_map(String::from);
        scalar.prop_recursive(5, 48, 4, |inner| {
            let key = prop_oneof![
                Just("a"),
                Just("type"),
                Just("value"),
                Just("a b"),
                Just("")
            ];
            prop_oneof![
                proptest::collection::vec((key, inner.clone()), 0..4).prop_map(|f| {
                    let f: Vec<String> = f.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("{{{}}}", f.join(", "))
                }),
                proptest::collection::vec(inner, 0..4).prop_map(|xs| format!("[{}]", xs.join(","))),
            ]
        })
    }

    proptest! {
        #[test]
        fn same_on_shaped_tokens(
            tok in shaped(),
            pad in "[ \t]{0,2}",
            out in proptest::option::of((shaped(), "[ =>]{0,3}")),
        ) {
            let tok = match out {
                Some((o, arrow)) => format!("{pad}{tok}{pad}{arrow}{pad}{o}"),
                None => format!("{pad}{tok}{pad}"),
            };
            if let Some(v) = quick(tok.as_bytes()) {
                prop_assert_eq!(v, general(tok.as_bytes()));
            }
        }

        /// Whatever it takes, it answers as the general way does.
        #[test]
        fn same_as_the_general_way(tok in "[ {}\\[\\],=ab_0x1.|\\-]{0,40}") {
            if let Some(v) = quick(tok.as_bytes()) {
                prop_assert_eq!(v, general(tok.as_bytes()));
            }
        }

        #[test]
        fn same_on_struct_like_text(parts in proptest::collection::vec(
            prop_oneof![
                Just("{"), Just("}"), Just("["), Just("]"), Just(", "), Just(","),
                Just("a="), Just("type="), Just("value="), Just("0x1a2b"), Just("3"),
                Just("KFD_IOCTL_SVM_FLAG_COHERENT"), Just("NULL"), Just(" "), Just("..."),
                Just("x"), Just("="), Just("A|B"),
            ],
            0..24,
        )) {
            let tok = parts.concat();
            if let Some(v) = quick(tok.as_bytes()) {
                prop_assert_eq!(v, general(tok.as_bytes()));
            }
        }
    }
}
