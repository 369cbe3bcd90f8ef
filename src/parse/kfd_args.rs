//! Typed decoders of the ioctl structs the capture library writes: for an
//! ioctl the catalogue lists in [`kfd::LOG_STRUCTS`], its argument
//! `{label=v, ...}` (and ` => {label=v, ...}`) read in one pass against the
//! labels the catalogue gives, in their order, straight into the trimmed
//! value the models read -- no generic tree built first and trimmed after,
//! no lookup of a field's name, one allocation a struct and a list.
//!
//! [`decode`] answers exactly what the general way (syscalls::ioctl's
//! `parse_value`, then the trim) answers, or `None` when the text leaves the
//! capture library's exact shape in any way (another order, other spacing,
//! a symbol no table knows, `...`, a pointer where a list was expected); the
//! caller then takes the general way.  Scalars go through the same number,
//! fd and constant readers the general way uses.  The differential tests
//! (kfd_args/tests.rs) compare the two ways on every fixture and on
//! mutations of its arguments.

use crate::events::{Name, Value};
use crate::kfd::{self, LogField, LogStruct, Shape};
use crate::parse::lex::{Short, dec_run, hex_run};
use crate::parse::tokens::deco_end;
use crate::parse::values::{parse_fd, parse_int};
use std::borrow::Cow;
use std::cell::Cell;

thread_local! {
    /// Off in the differential tests' general runs (see [`general_only`]).
    static ON: Cell<bool> = const { Cell::new(true) };
    /// Arguments [`decode`] answered (tests: that it ran).
    static TAKEN: Cell<u64> = const { Cell::new(0) };
}

/// `f` with the typed decoders off on this thread: every argument takes
/// the general way (the differential tests).
pub fn general_only<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(ON.with(|c| c.replace(false)));
    f()
}

/// Whether the typed decoders are on on this thread.
pub fn layout_on() -> bool {
    ON.with(Cell::get)
}

/// How many arguments [`decode`] answered on this thread so far.
pub fn taken() -> u64 {
    TAKEN.with(Cell::get)
}

/// The struct the capture library writes for this ioctl, when the typed
/// decoders are on.
pub fn layout(type_: Option<u8>, nr: Option<u8>, name: Option<&str>) -> Option<&'static LogStruct> {
    if !layout_on() {
        return None;
    }
    kfd::log_struct(type_?, nr?, name?)
}

/// (arg, out) of the argument token `tok` of an ioctl whose struct is `ls`,
/// as the general way trims them (nothing dropped: every member the text
/// holds is one the models may read), or `None`: take the general way.
/// The value [`decode_ahead`] kept for this text and struct is taken, not
/// read again.
pub fn decode(ls: &'static LogStruct, tok: &[u8]) -> Option<(Value, Option<Value>)> {
    let s = crate::parse::values::strip(tok);
    let kept = KEPT.with(|k| {
        let mut k = k.borrow_mut();
        if k.value.is_some() && k.ls == Some(key(ls)) && k.text == s {
            k.value.take()
        } else {
            None
        }
    });
    let (arg, out) = match kept {
        Some(v) => v,
        None => {
            let (e, arg, out) = decode_at(ls, s, 0)?;
            if e != s.len() {
                return None;
            }
            (arg, out)
        }
    };
    TAKEN.with(|t| t.set(t.get() + 1));
    Some((arg, out))
}

/// The argument `{…}` (or `{…} => {…}`) of an ioctl whose struct is `ls`
/// that starts at `s[a]`, read while the line is scanned: where it ends,
/// when [`decode`] answers its text; the value is kept for `decode` of that
/// text (one struct a thread: the next one read ahead replaces it), so the
/// struct is walked once.  `None`: the text leaves the capture library's
/// shape (the scan then checks it the general way) or is longer than
/// [`KEPT_MAX`].
pub fn decode_ahead(ls: &'static LogStruct, s: &[u8], a: usize) -> Option<usize> {
    let (e, arg, out) = decode_at(ls, s, a)?;
    if e - a > KEPT_MAX {
        return None;
    }
    KEPT.with(|k| {
        let mut k = k.borrow_mut();
        k.ls = Some(key(ls));
        k.text.clear();
        k.text.extend_from_slice(&s[a..e]);
        k.value = Some((arg, out));
    });
    Some(e)
}

/// The longest text [`decode_ahead`] keeps a value for.
const KEPT_MAX: usize = 4096;

/// What tells a struct of the catalogue from the others (a const's
/// address is not one: each use may make its own copy).
fn key(ls: &'static LogStruct) -> (u8, u8, &'static str) {
    (ls.type_, ls.nr, ls.name)
}

/// A value [`decode_ahead`] read, for [`decode`] of the same text.
struct Kept {
    ls: Option<(u8, u8, &'static str)>,
    text: Vec<u8>,
    value: Option<(Value, Option<Value>)>,
}

thread_local! {
    static KEPT: std::cell::RefCell<Kept> = const {
        std::cell::RefCell::new(Kept {
            ls: None,
            text: Vec::new(),
            value: None,
        })
    };
}

/// (end, arg, out) of the struct text from `s[a]`: `{…}` with the labels
/// of `ls.log_in`, then ` => {…}` with those of `ls.log_out` when the text
/// goes on with ` => `.
fn decode_at(ls: &LogStruct, s: &[u8], a: usize) -> Option<(usize, Value, Option<Value>)> {
    let mut c = Cursor { s, i: a };
    let arg = c.fields(ls.log_in)?;
    let out = if c.lit(b" => ").is_some() {
        Some(c.fields(ls.log_out)?)
    } else {
        None
    };
    Some((c.i, arg, out))
}

/// The longest name [`constant`] remembers.
const NAME_KEPT: usize = 48;
/// How many names [`constant`] remembers (a power of two).
const NAMES_KEPT: usize = 64;

/// A name [`constant`] remembers, and what the catalogue answered for it.
#[derive(Clone, Copy)]
struct KeptName {
    name: Short<NAME_KEPT>,
    value: Option<u64>,
}

thread_local! {
    /// (on the heap, made at the first name: a thread-local of its size
    /// would not fit the static TLS block the Python extension is loaded
    /// with)
    static NAMES: std::cell::RefCell<Vec<KeptName>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`kfd::constant_bytes`], remembered for recent names in a table
/// indexed by a cheap mix of the name's length and its first and last
/// eight bytes, and compared whole: a log's structs name a dozen
/// constants over and over (an SVM call five of them), and the
/// catalogue's hash map cost some 120 instructions a name.
fn constant(name: &[u8]) -> Option<u64> {
    let len = name.len();
    if !(8..=NAME_KEPT).contains(&len) {
        return kfd::constant_bytes(name);
    }
    let word = |k: usize| u64::from_le_bytes(name[k..k + 8].try_into().unwrap());
    let mix =
        (word(0) ^ word(len - 8).rotate_left(29) ^ len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let slot = (mix >> (64 - NAMES_KEPT.trailing_zeros())) as usize;
    NAMES.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_empty() {
            let empty = KeptName {
                name: Short::EMPTY,
                value: None,
            };
            t.resize(NAMES_KEPT, empty);
        }
        let e = &mut t[slot];
        if e.name.is(name) {
            return e.value;
        }
        let value = kfd::constant_bytes(name);
        if let Some(kept) = Short::new(name) {
            *e = KeptName { name: kept, value };
        }
        value
    })
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn lit(&mut self, l: &[u8]) -> Option<()> {
        if self.s[self.i..].starts_with(l) {
            self.i += l.len();
            Some(())
        } else {
            None
        }
    }

    /// `{label=v, ...}` with exactly these members, in this order.
    fn fields(&mut self, members: &[LogField]) -> Option<Value> {
        self.lit(b"{")?;
        let mut out: Vec<(Name, Value)> = Vec::with_capacity(members.len());
        for (k, m) in members.iter().enumerate() {
            if k > 0 {
                self.lit(b", ")?;
            }
            self.lit(m.label.as_bytes())?;
            self.lit(b"=")?;
            let v = match (m.shape, m.label) {
                // the members the trim reads a shape of (syscalls::ioctl)
                (Shape::List, "attrs") | (Shape::Structs(_), "device_ids_array") => return None,
                (Shape::Scalar, "attrs" | "device_ids_array") => return None,
                (Shape::Scalar, _) => self.scalar()?,
                (Shape::List, _) => self.list(|c| c.scalar())?,
                (Shape::Structs(labels), _) => self.list(|c| c.element(m.label, labels))?,
            };
            out.push((Cow::Borrowed(m.label), v));
        }
        self.lit(b"}")?;
        Some(Value::Struct(out))
    }

    /// `[e, ...]` (`[]` too) of `item`s; `...` (elements left out) is the
    /// general way's.
    fn list(&mut self, mut item: impl FnMut(&mut Self) -> Option<Value>) -> Option<Value> {
        self.lit(b"[")?;
        if self.lit(b"]").is_some() {
            return Some(Value::List(Vec::new()));
        }
        // (room for an SVM call's usual attributes at once: pushing onto
        // an empty list went through the grow path)
        let mut out = Vec::with_capacity(4);
        loop {
            out.push(item(self)?);
            if self.lit(b"]").is_some() {
                return Some(Value::List(out));
            }
            self.lit(b", ")?;
        }
    }

    /// An element of a flexible array: `{type=…, value=…}` of an SVM
    /// `attrs` is the pair the general way's trim makes of it.
    fn element(&mut self, label: &str, labels: &'static [&'static str]) -> Option<Value> {
        if label == "attrs" && labels == ["type", "value"] {
            // the usual element: the pair, with no struct made first
            self.lit(b"{type=")?;
            let t = self.scalar()?;
            self.lit(b", value=")?;
            let v = self.scalar()?;
            self.lit(b"}")?;
            return Some(Value::Pair(Box::new((t, v))));
        }
        self.lit(b"{")?;
        let mut fields: Vec<(Name, Value)> = Vec::with_capacity(labels.len());
        for (k, &l) in labels.iter().enumerate() {
            if k > 0 {
                self.lit(b", ")?;
            }
            self.lit(l.as_bytes())?;
            self.lit(b"=")?;
            fields.push((Cow::Borrowed(l), self.scalar()?));
        }
        self.lit(b"}")?;
        if label != "attrs" {
            return Some(Value::Struct(fields));
        }
        let get = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        Some(Value::Pair(Box::new((get("type")?, get("value")?))))
    }

    /// A scalar up to the `,`, `}` or `]` that ends it: a number, a symbol
    /// or `A|B` flags every part of which a table knows, or a decorated fd.
    fn scalar(&mut self) -> Option<Value> {
        // the usual one first: `0x` and hex digits, decimal digits or a name
        // of the catalogue, each read up to the first byte that is not one
        // of its own, which must be an end byte (then it is the first end
        // byte, as the general way finds it; no name of the catalogue is
        // NULL or holds a `|`)
        let s = self.s;
        let a = self.i;
        let end = |j: usize| matches!(s.get(j), Some(b',' | b'}' | b']'));
        let usual = match s.get(a) {
            Some(b'0') if s.get(a + 1) == Some(&b'x') => {
                let (j, v) = hex_run(s, a + 2);
                // values::short_int: 1 to 15 digits
                (end(j) && (1..=15).contains(&(j - a - 2))).then_some((j, Value::Int(v as i64)))
            }
            Some(b'0'..=b'9') => {
                let (j, v) = dec_run(s, a);
                // values::short_int: no leading zero, up to 19 digits
                let n = j - a;
                (end(j) && (n == 1 || s[a] != b'0') && n <= 19)
                    .then(|| Value::int(v.into()))
                    .flatten()
                    .map(|v| (j, v))
            }
            Some(b'A'..=b'Z' | b'a'..=b'z' | b'_') => {
                // (a name is long: one search for the end byte, and the
                // table's lookup of the whole text is its check)
                crate::parse::lex::find_byte3(&s[a..], b',', b'}', b']').and_then(|n| {
                    let v = Value::int(constant(&s[a..a + n])?.into())?;
                    Some((a + n, v))
                })
            }
            _ => None,
        };
        if let Some((j, v)) = usual {
            self.i = j;
            return Some(v);
        }
        self.scalar_slow()
    }

    /// [`Cursor::scalar`] byte by byte: flags, `NULL`, a decorated fd.
    #[cold]
    fn scalar_slow(&mut self) -> Option<Value> {
        let s = self.s;
        let a = self.i;
        let mut j = a;
        let mut plain = true; // [A-Za-z0-9_] only
        let mut bar = false;
        while j < s.len() {
            match s[j] {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' => {}
                b'|' => bar = true,
                b'-' => plain = false,
                b'<' => return self.fd(a, j),
                b',' | b'}' | b']' => break,
                _ => return None,
            }
            j += 1;
        }
        let text = &s[a..j];
        let &c = text.first()?;
        self.i = j;
        if c.is_ascii_alphabetic() || c == b'_' {
            if plain && !bar {
                // values::bare_name, without a Raw for a name no table knows
                if text == b"NULL" {
                    return Some(Value::Int(0));
                }
                return Value::int(kfd::constant_bytes(text)?.into());
            }
        } else if c.is_ascii_digit() || c == b'-' {
            if let Some(v) = parse_int(text) {
                return Value::int(v);
            }
        } else {
            return None;
        }
        if !plain {
            return None; // a `-` inside: the general way's
        }
        // values::parse_flags of parts without spaces, comments or shifts
        let mut total: i128 = 0;
        for part in text.split(|&c| c == b'|') {
            total |= parse_int(part).or_else(|| kfd::constant_bytes(part).map(i128::from))?;
        }
        Value::int(total)
    }

    /// `N<path>` whose `<` is at `lt`: the fd (values::parse_fd), when the
    /// decoration ends the scalar and holds nothing the general way reads
    /// otherwise (a bracket, a comment).
    #[cold]
    fn fd(&mut self, a: usize, lt: usize) -> Option<Value> {
        let s = self.s;
        let e = deco_end(s, lt)?;
        if !matches!(s.get(e), Some(b',' | b'}' | b']')) {
            return None;
        }
        let d = &s[lt..e];
        if d.iter().any(|c| matches!(c, b'{' | b'[')) || d.windows(2).any(|w| w == b"/*") {
            return None;
        }
        let text = &s[a..e];
        if !matches!(text.first(), Some(b'0'..=b'9' | b'-')) {
            return None;
        }
        let fd = parse_fd(text).0?;
        self.i = e;
        Value::int(fd)
    }
}

#[cfg(test)]
mod tests;
