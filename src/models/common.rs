//! What the fd, handle and dma-buf models share: shared events, file names
//! for messages, stacks and owners.

use crate::events::{Event, Frame, Kind, Value};
use foldhash::HashSet;
use std::cell::RefCell;
use std::rc::Rc;

/// A process id as the models key on it: None in a trace without pids.
pub type Pid = Option<u32>;

/// An event a model keeps (a creator, a last use): shared, so that keeping
/// it costs no copy and "the same event" is [`Rc::ptr_eq`].
pub type Ev = Rc<Event>;

/// `a is b` for optional events.
pub fn same(a: Option<&Ev>, b: Option<&Ev>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Rc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The input file names messages print (`short`): events carry a FileId.
#[derive(Debug, Default)]
pub struct Names(RefCell<Vec<String>>);

impl Names {
    pub fn new(names: Vec<String>) -> Rc<Self> {
        Rc::new(Names(RefCell::new(names)))
    }

    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&self, name: String) {
        self.0.borrow_mut().push(name);
    }

    pub fn file(&self, ev: &Event) -> String {
        self.0
            .borrow()
            .get(ev.h.file.0 as usize)
            .cloned()
            .unwrap_or_else(|| "-".to_owned())
    }
}

/// Python's `str()` of an optional number (`None` when absent).
pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "None".to_owned(), |x| x.to_string())
}

/// Python's `f"{h:#x}"`: `0x1f`, `-0x1f`.
pub fn hex(v: impl Into<i128>) -> String {
    let v: i128 = v.into();
    if v < 0 {
        format!("-{:#x}", v.unsigned_abs())
    } else {
        format!("{v:#x}")
    }
}

/// `getattr(ev, "ioctl", None) or ev.name`.
pub fn call_name(ev: &Event) -> &str {
    if let Kind::Ioctl(io) = &ev.kind
        && let Some(n) = io.ioctl
    {
        return n;
    }
    &ev.name
}

/// `name at file:line`, or "(not in the trace)".
pub fn short(names: &Names, ev: Option<&Ev>) -> String {
    let Some(ev) = ev else {
        return "(not in the trace)".to_owned();
    };
    let mut name = call_name(ev);
    if name.is_empty() {
        name = ev.kind.type_name();
    }
    format!("{name} at {}:{}", names.file(ev), ev.h.line)
}

/// `(^|/)(libc|libpthread|ld-linux|libdl)[.-]` searched in a module path.
pub fn is_libc(module: &str) -> bool {
    let b = module.as_bytes();
    for pre in ["libc", "libpthread", "ld-linux", "libdl"] {
        let mut from = 0;
        while let Some(i) = module[from..].find(pre) {
            let at = from + i;
            if (at == 0 || b[at - 1] == b'/') && matches!(b.get(at + pre.len()), Some(b'.' | b'-'))
            {
                return true;
            }
            from = at + 1;
        }
    }
    false
}

/// The innermost frames that are not libc/loader wrappers.
pub fn frames_of(stack: &[Frame], depth: usize) -> impl Iterator<Item = &Frame> {
    stack.iter().filter(|f| !is_libc(&f.module)).take(depth)
}

/// The innermost frame outside libc, or "" when the event has no stack.
pub fn call_site(ev: Option<&Event>) -> String {
    let Some(ev) = ev else {
        return String::new();
    };
    if let Some(f) = frames_of(&ev.h.stack, 1).next() {
        return f.label();
    }
    ev.h.stack.first().map(Frame::label).unwrap_or_default()
}

pub fn site(ev: &Event) -> String {
    call_site(Some(ev))
}

/// `` (call site)`` for messages, nothing without a stack.
pub fn at(ev: Option<&Event>) -> String {
    let s = call_site(ev);
    if s.is_empty() { s } else { format!(" ({s})") }
}

fn base(module: &str) -> &str {
    module.rsplit('/').next().unwrap_or(module)
}

/// The component that owns a module: the ROCm runtime and its thunk are
/// one.
pub fn component(module: &str) -> String {
    let b = base(module);
    if b.contains("hsa-runtime") || b.contains("hsakmt") {
        return "runtime".into();
    }
    if b.starts_with("libdrm") {
        return "libdrm".into();
    }
    if b.contains("amd_smi") || b.contains("rocm_smi") || b.contains("amdsmi") {
        return "amd-smi".into();
    }
    if b.contains("amdhip") || b.contains("hipruntime") || b.contains("hip_runtime") {
        return "hip".into();
    }
    // re.sub(r"\.so(\.[0-9.]*)?$", "", base): the leftmost ".so" the rest fits
    let bytes = b.as_bytes();
    let mut i = 0;
    while let Some(j) = b[i..].find(".so") {
        let at = i + j;
        let rest = &bytes[at + 3..];
        if rest.is_empty()
            || (rest[0] == b'.' && rest.iter().all(|c| c.is_ascii_digit() || *c == b'.'))
        {
            return b[..at].to_owned();
        }
        i = at + 1;
    }
    b.to_owned()
}

pub type Func<'a> = (&'a str, &'a str);

fn func(f: &Frame) -> Option<Func<'_>> {
    let name = f
        .symbol
        .as_deref()
        .filter(|s| !s.is_empty())
        .or(f.function.as_deref().filter(|s| !s.is_empty()))?;
    Some((base(&f.module), name))
}

/// Functions of a stack's frames outside libc (all of them, or the
/// innermost `depth`).
pub fn funcs(stack: &[Frame], depth: Option<usize>) -> HashSet<Func<'_>> {
    let frs = stack.iter().filter(|f| !is_libc(&f.module));
    match depth {
        Some(d) if d > 0 => frs.take(d).filter_map(func).collect(),
        _ => frs.filter_map(func).collect(),
    }
}

pub fn comps(stack: &[Frame]) -> HashSet<String> {
    frames_of(stack, 3).map(|f| component(&f.module)).collect()
}

/// The component of an event's innermost frame outside libc.
pub fn owner(ev: Option<&Event>) -> Option<String> {
    frames_of(&ev?.h.stack, 1)
        .next()
        .map(|f| component(&f.module))
}

/// The evidence order of a story: (time or 0, seq, line).
pub fn story_order(a: &Event, b: &Event) -> std::cmp::Ordering {
    let ka = a.h.time.unwrap_or(0.0);
    let kb = b.h.time.unwrap_or(0.0);
    ka.partial_cmp(&kb)
        .unwrap_or(std::cmp::Ordering::Equal)
        .then(a.h.seq.cmp(&b.h.seq))
        .then(a.h.line.cmp(&b.h.line))
}

/// `isinstance(v, int) and not bool`: a struct field's number.
pub fn int_field(v: Option<&Value>, k: &str) -> Option<i128> {
    match v? {
        Value::Struct(_) => v?.get(k)?.as_i128(),
        _ => None,
    }
}

/// An fd from a decoded struct field or intent argument: an
/// int, a one-element list, `(fd, path)`, a dict's `fd`, or text like
/// `7</dmabuf:>`.
pub fn fd_value(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::UInt(_) => None,
        Value::List(l) => fd_value(l.first()),
        Value::Pair(p) => fd_value(Some(&p.0)),
        s @ Value::Struct(_) => fd_value(s.get("fd")),
        Value::Str(t) | Value::Raw(t) => leading_int(&t.to_string_lossy()),
    }
}

/// `re.match(r"\s*\[?(-?[0-9]+)", s)`.
fn leading_int(s: &str) -> Option<i64> {
    let s = s.trim_start_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
    let s = s.strip_prefix('[').unwrap_or(s);
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let end = s.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return None;
    }
    let v: i64 = s[..end].parse().ok()?;
    Some(if neg { -v } else { v })
}

/// `dict.get(k)` for a list of (name, value) pairs: the last of that name.
pub fn field<'a>(fields: &'a [(crate::events::Name, Value)], k: &str) -> Option<&'a Value> {
    fields.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_modules() {
        assert!(is_libc("/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(is_libc("libpthread-2.31.so"));
        assert!(is_libc("/lib64/ld-linux-x86-64.so.2"));
        assert!(!is_libc("/opt/rocm/lib/libcamera.so"));
        assert!(!is_libc("/x/mylibc.so"));
    }

    #[test]
    fn components() {
        assert_eq!(
            component("/opt/rocm/lib/libhsa-runtime64.so.1.2"),
            "runtime"
        );
        assert_eq!(component("/usr/lib/libdrm_amdgpu.so.1"), "libdrm");
        assert_eq!(component("/x/libfoo.so.1.2.3"), "libfoo");
        assert_eq!(component("a.so.so"), "a.so");
        assert_eq!(component("app"), "app");
    }

    #[test]
    fn fd_values() {
        assert_eq!(
            fd_value(Some(&Value::Str(" [7</dmabuf:>]".into()))),
            Some(7)
        );
        assert_eq!(fd_value(Some(&Value::Raw("-1".into()))), Some(-1));
        assert_eq!(fd_value(Some(&Value::Raw("x".into()))), None);
        assert_eq!(fd_value(Some(&Value::List(vec![Value::Int(5)]))), Some(5));
        assert_eq!(hex(-5), "-0x5");
        assert_eq!(hex(255), "0xff");
    }
}
