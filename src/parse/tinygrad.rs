//! tinygrad's `IOCTL=1` log -> events.  Three line shapes: a named KFD
//! ioctl (`1.75 ms +   0.02 ms :  0 = AMDKFD_IOC_… field:value …`), a
//! timed generic ioctl (`… ms + … ms : ioctl idir=… …`) and an untimed one
//! (`ioctl idir=… size=… itype=… nr=… fd=… ret=…`), plus SVM attribute lines.
//!
//! Numbers beyond the fields' types: a struct field or SVM
//! attribute beyond u64 is kept as its text ([`Value::Raw`], the events.rs
//! convention); a `ret` beyond i64 or an `fd` beyond i32 cannot come from
//! the call, and the line is counted unparsed.

use crate::events::{
    Event, FileId, Header, InputInfo, Ioctl, Kind, Name, Span, Text, Value, errno,
};
use crate::kfd;
use crate::parse::strace::Fed;
use crate::parse::trace::{Dialect, Threads};
use crate::read::open::FileSpec;
use crate::read::pytext::{self, PyRegex, py_regex};
use regex::{Captures, Regex};
use std::borrow::Cow;
use std::rc::Rc;
use std::sync::LazyLock;

/// never trust nattr: it is data
pub const MAX_ATTRS: i128 = 64;

// The line patterns up to where their tails are plain rules: the
// tails (`[ \t]*(.*?)\s*\Z`, `(?: (.*?))?\s*\Z`) are trimmed by hand
// below, as the regex crate's capture engines are slow on them.
struct Res {
    named: Regex,
    timed_generic: Regex,
    generic: Regex,
    attr: Regex,
    field: Regex,
}

static RE: LazyLock<Res> = LazyLock::new(|| Res {
    named: py_regex(
        r"\A%s*(-?\d+(?:\.\d+)?) ms \+%s*(-?\d+(?:\.\d+)?) ms : %s*(-?\d{1,20}) = (AMDKFD_IOC_%w+)",
    ),
    timed_generic: py_regex(r"\A%s*(-?\d+(?:\.\d+)?) ms \+%s*(-?\d+(?:\.\d+)?) ms : ioctl "),
    generic: py_regex(
        r"\Aioctl idir=(\d{1,20}) size=(\d{1,20}) itype=(\d{1,20}) nr=(\d{1,20}) fd=(-?\d{1,20}) ret=(-?\d{1,20})",
    ),
    attr: py_regex(
        r"\A(\d{1,20}): (KFD_IOCTL_SVM_ATTR_%w+|\d{1,20})%s*: (0x[0-9a-fA-F]{1,64}|\d{1,20})%s*\z",
    ),
    // a field `(\w+):(<[^<>]*>|\S+)`: the first ':' splits it
    field: py_regex(r"%w+:(?:<[^<>]*>|%S+)"),
});

/// `0x[0-9a-fA-F]{1,64}\Z`
fn is_hex(v: &str) -> bool {
    v.strip_prefix("0x")
        .is_some_and(|d| (1..=64).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A named line's pieces: (ms, dur ms, ret, name, fields text).
struct NamedLine<'a> {
    ms: &'a str,
    dur: &'a str,
    ret: &'a str,
    name: &'a str,
    fields: &'a str,
}

/// A named KFD ioctl line.
fn named_line(line: &str) -> Option<NamedLine<'_>> {
    let c = RE.named.captures(line)?;
    let rest = &line[c.get(0)?.end()..];
    // `(.*?)` stops at a newline, `[ \t]*` and `\s*` take the blanks around
    if rest.contains('\n') {
        return None;
    }
    let fields = rest
        .trim_start_matches([' ', '\t'])
        .trim_end_matches(pytext::is_space);
    Some(NamedLine {
        ms: c.get(1)?.as_str(),
        dur: c.get(2)?.as_str(),
        ret: c.get(3)?.as_str(),
        name: c.get(4)?.as_str(),
        fields,
    })
}

/// A timed generic ioctl line: (ms, dur ms, body from "ioctl ").
fn timed_generic(line: &str) -> Option<(&str, &str, &str)> {
    let c = RE.timed_generic.captures(line)?;
    let end = c.get(0)?.end();
    let body = &line[end - "ioctl ".len()..];
    if body.contains('\n') {
        return None;
    }
    Some((c.get(1)?.as_str(), c.get(2)?.as_str(), body))
}

/// An untimed generic ioctl body: the six numbers and the path.
fn generic_line(body: &str) -> Option<([&str; 6], Option<&str>)> {
    let c = RE.generic.captures(body)?;
    let rest = &body[c.get(0)?.end()..];
    let path = if rest.chars().all(pytext::is_space) {
        None
    } else {
        let p = rest.strip_prefix(' ')?;
        if p.contains('\n') {
            return None;
        }
        Some(p.trim_end_matches(pytext::is_space))
    };
    let n = |i: usize| c.get(i).map_or("", |m| m.as_str());
    Some(([n(1), n(2), n(3), n(4), n(5), n(6)], path))
}

/// Fields the kernel writes, per request.
fn outputs(name: &str) -> &'static [&'static str] {
    match name {
        "AMDKFD_IOC_GET_VERSION" => &["major_version", "minor_version"],
        "AMDKFD_IOC_CREATE_QUEUE" => &["queue_id", "doorbell_offset"],
        "AMDKFD_IOC_CREATE_EVENT" => &[
            "event_page_offset",
            "event_trigger_data",
            "event_id",
            "event_slot_index",
        ],
        "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU" => &["handle", "mmap_offset"],
        "AMDKFD_IOC_MAP_MEMORY_TO_GPU" | "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU" => &["n_success"],
        "AMDKFD_IOC_IMPORT_DMABUF" => &["handle"],
        "AMDKFD_IOC_EXPORT_DMABUF" => &["dmabuf_fd"],
        "AMDKFD_IOC_GET_DMABUF_INFO" => &["size", "gpu_id", "metadata_size", "flags"],
        _ => &[],
    }
}

fn ms(text: &str) -> f64 {
    pytext::float(text) / 1000.0
}

/// A number as a Value: exact within [-2^63, 2^64), else the text.
fn value(v: Option<u128>, text: &str) -> Value {
    match v {
        Some(v) if v <= u64::MAX as u128 => Value::int(v as i128).expect("in range"),
        _ => Value::Raw(Text::from(text)),
    }
}

/// dict assignment: a key keeps its first place, the last value wins.
fn set(fields: &mut Vec<(Name, Value)>, k: &str, v: Value) {
    match fields.iter_mut().find(|(n, _)| n == k) {
        Some(slot) => slot.1 = v,
        None => fields.push((Cow::Owned(k.to_string()), v)),
    }
}

fn get<'a>(fields: &'a [(Name, Value)], k: &str) -> Option<&'a Value> {
    fields.iter().find(|(n, _)| n == k).map(|(_, v)| v)
}

/// Parse one tinygrad IOCTL=1 log; the same interface as every dialect's
/// parser (feed / finish).
pub struct Parser {
    file: FileId,
    pub info: InputInfo,
    /// an SVM line waiting for its attrs
    svm: Option<Event>,
    want: usize,
    out: Vec<Rc<Event>>,
    /// the line being fed, and where it is (strace::Parser::at)
    next_at: Span,
    fed: Fed,
}

impl Parser {
    pub fn new(file: FileId, info: InputInfo) -> Self {
        Parser {
            file,
            info,
            svm: None,
            want: 0,
            out: Vec::new(),
            next_at: Span::default(),
            fed: Fed::default(),
        }
    }

    /// Where the next line fed is in its input (strace::Parser::at).
    pub fn at(&mut self, span: Span) {
        self.next_at = span;
    }

    /// The events one line completes, appended to `out`.
    pub fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<Rc<Event>>) {
        self.fed = Fed::new(line.as_bytes(), std::mem::take(&mut self.next_at));
        self.feed_line(lineno, line, out);
        self.fed = Fed::default();
    }

    fn feed_line(&mut self, lineno: u64, line: &str, out: &mut Vec<Rc<Event>>) {
        self.info.lines += 1;
        if pytext::is_blank(line) {
            return self.drain(out);
        }
        if self.svm.is_some() {
            if line.starts_with(|c: char| !c.is_ascii() || c.is_ascii_digit())
                && let Some(am) = RE.attr.captures(line)
                && self.attr(&am)
            {
                return self.drain(out);
            }
            self.flush_svm();
        }
        if let Some(m) = named_line(line) {
            self.named(lineno, line, &m);
            return self.drain(out);
        }
        let (mut t, mut dur, mut body) = (None, None, line);
        if let Some((a, b, rest)) = timed_generic(line) {
            t = Some(ms(a));
            dur = Some(ms(b));
            body = rest;
        }
        if let Some((nums, path)) = generic_line(pytext::strip(body)) {
            self.generic(lineno, line, nums, path, t, dur);
            return self.drain(out);
        }
        self.unparsed(lineno, line);
        self.drain(out)
    }

    pub fn finish(&mut self, out: &mut Vec<Rc<Event>>) {
        self.flush_svm();
        self.drain(out)
    }

    fn drain(&mut self, out: &mut Vec<Rc<Event>>) {
        self.info.events += self.out.len() as u64;
        out.append(&mut self.out);
    }

    fn unparsed(&mut self, lineno: u64, line: &str) {
        self.info.add_unparsed(lineno, line.as_bytes());
    }

    fn header(
        &mut self,
        lineno: u64,
        line: &str,
        t: Option<f64>,
        dur: Option<f64>,
        ret: i64,
    ) -> Header {
        if t.is_some() {
            self.info.has_time = true;
        }
        if dur.is_some() {
            self.info.has_durations = true;
        }
        Header {
            file: self.file,
            line: lineno,
            time: t,
            dur,
            ret: Some(ret),
            err: (ret < 0).then(|| errno("EUNKNOWN")),
            src: self.fed.source(line.as_bytes()),
            ..Default::default()
        }
    }

    fn named(&mut self, lineno: u64, line: &str, m: &NamedLine) {
        let name = m.name;
        let mut fields: Vec<(Name, Value)> = Vec::new();
        let mut bad = false;
        for fm in RE.field.find_iter(m.fields) {
            let (k, v) = fm.as_str().split_once(':').unwrap_or_default();
            if is_hex(v) {
                set(&mut fields, k, value(pytext::hex(&v[2..]), v));
            } else if !v.starts_with('<') {
                // not what tinygrad prints: dropped, and said (a ctypes repr
                // of an array, `<...>`, is dropped silently: not data)
                bad = true;
            }
        }
        let Some(ret) = pytext::int(m.ret).and_then(|r| i64::try_from(r).ok()) else {
            return self.unparsed(lineno, line);
        };
        if bad {
            self.unparsed(lineno, line);
        }
        let ent = kfd::request_by_name(name);
        let (d, t, nr, mut size) = match ent {
            Some(r) => (Some(r.dir), r.type_, Some(r.nr), Some(r.size as u64)),
            None => (None, kfd::TYPE_KFD, None, None),
        };
        let outs = outputs(name);
        let (out_f, mut arg): (Vec<_>, Vec<_>) = fields
            .into_iter()
            .partition(|(k, _)| outs.contains(&k.as_ref()));
        let svm = nr.is_some_and(|n| (t, n) == kfd::SVM);
        let mut nattr = None;
        if svm {
            // AMDKFD_IOC_SVM carries 24 + 8*nattr: the size is data
            nattr = get(&arg, "nattr").and_then(Value::as_i128);
            if let Some(n) = nattr.filter(|n| (0..1 << 16).contains(n)) {
                size = Some(24 + 8 * n as u64);
            }
            set(&mut arg, "attrs", Value::List(Vec::new()));
        }
        let request = match (d, nr, size) {
            (Some(d), Some(nr), Some(size)) => Some(kfd::ioc(d, t, nr, (size & 0x3FFF) as u16)),
            _ => None,
        };
        let h = self.header(lineno, line, Some(ms(m.ms)), Some(ms(m.dur)), ret);
        self.info.decoded_structs = true;
        let ioctl = nr
            .and_then(|n| kfd::ioctl_name(t, n, Some(b"/dev/kfd"), None))
            .or_else(|| kfd::static_name(name));
        let ev = Event::new(
            h,
            Kind::Ioctl(Ioctl {
                fd: -1,
                path: Some(Text::from("/dev/kfd")),
                request,
                dir: d,
                type_: Some(t),
                nr,
                size,
                ioctl,
                arg: Some(Value::Struct(arg)),
                out: (!out_f.is_empty()).then_some(Value::Struct(out_f)),
            }),
        );
        if svm {
            self.want = match nattr {
                Some(n) if 0 < n && n <= MAX_ATTRS => n as usize,
                _ => 0,
            };
            if self.want > 0 {
                self.svm = Some(ev);
                return;
            }
            let mut ev = ev;
            svm_done(&mut ev);
            self.out.push(Rc::new(ev));
            return;
        }
        self.out.push(Rc::new(ev));
    }

    /// One attribute line of the pending SVM call; false when it is not the
    /// next one.
    fn attr(&mut self, am: &Captures) -> bool {
        let want = self.want;
        let Some(attrs) = self.svm.as_mut().and_then(attrs_of) else {
            return false;
        };
        if pytext::int(&am[1]) != Some(attrs.len() as i128) {
            return false;
        }
        let tname = &am[2];
        let ty = if tname.starts_with("KFD_IOCTL_SVM_ATTR_") {
            match kfd::ATTR_NAMES.iter().find(|x| x.1 == tname) {
                Some(x) => Value::Int(x.0 as i64),
                None => return false,
            }
        } else {
            value(pytext::int(tname).map(|v| v as u128), tname)
        };
        let Some(v) = pytext::int_base0(&am[3]) else {
            return false;
        };
        attrs.push(Value::List(vec![ty, value(v, &am[3])]));
        if attrs.len() >= want {
            let _ = attrs;
            self.flush_svm();
        }
        true
    }

    fn flush_svm(&mut self) {
        let Some(mut ev) = self.svm.take() else {
            return;
        };
        if attrs_of(&mut ev).is_some_and(|a| a.len() < self.want) {
            ev.h.partial = true; // the log lost attribute lines
        }
        svm_done(&mut ev);
        self.out.push(Rc::new(ev));
    }

    fn generic(
        &mut self,
        lineno: u64,
        line: &str,
        nums: [&str; 6],
        path: Option<&str>,
        t: Option<f64>,
        dur: Option<f64>,
    ) {
        let n = |i: usize| pytext::int(nums[i - 1]);
        let (idir, size, itype, nr) = (n(1), n(2), n(3), n(4));
        let fd = n(5).and_then(|v| i32::try_from(v).ok());
        let ret = n(6).and_then(|v| i64::try_from(v).ok());
        let path = path.filter(|p| !p.is_empty());
        let (Some(idir), Some(size), Some(itype), Some(nr), Some(fd), Some(ret)) =
            (idir, size, itype, nr, fd, ret)
        else {
            return self.unparsed(lineno, line);
        };
        if idir > 3 || size > 0x3FFF || itype > 0xFF || nr > 0xFF {
            return self.unparsed(lineno, line);
        }
        let (idir, size, itype, nr) = (idir as u8, size as u16, itype as u8, nr as u8);
        let h = self.header(lineno, line, t, dur, ret);
        if path.is_some() {
            self.info.has_decorations = true;
        }
        let pb = path.map(str::as_bytes);
        self.out.push(Rc::new(Event::new(
            h,
            Kind::Ioctl(Ioctl {
                fd,
                path: path.map(Text::from),
                request: Some(kfd::ioc(idir, itype, nr, size)),
                dir: Some(idir),
                type_: Some(itype),
                nr: Some(nr),
                size: Some(size as u64),
                ioctl: kfd::ioctl_name(itype, nr, pb, None),
                arg: None,
                out: None,
            }),
        )));
    }
}

fn ioctl_of(ev: &mut Event) -> Option<&mut Ioctl> {
    match &mut ev.kind {
        Kind::Ioctl(i) => Some(i),
        _ => None,
    }
}

fn attrs_of(ev: &mut Event) -> Option<&mut Vec<Value>> {
    let Some(Value::Struct(fields)) = ioctl_of(ev)?.arg.as_mut() else {
        return None;
    };
    match fields.iter_mut().find(|(k, _)| k == "attrs") {
        Some((_, Value::List(a))) => Some(a),
        _ => None,
    }
}

/// Printed after the call: for GET_ATTR the values are the answers.
fn svm_done(ev: &mut Event) {
    let Some(io) = ioctl_of(ev) else { return };
    let Some(arg @ Value::Struct(_)) = io.arg.as_ref() else {
        return;
    };
    if arg.get("op").and_then(Value::as_i128) == Some(kfd::SVM_OP_GET_ATTR as i128) {
        let attrs = arg.get("attrs").cloned().unwrap_or(Value::List(Vec::new()));
        io.out = Some(Value::Struct(vec![(Cow::Borrowed("attrs"), attrs)]));
    }
}

pub(crate) static SNIFF: LazyLock<PyRegex> = LazyLock::new(|| {
    PyRegex::new(r"\A(?:%s*-?\d+(?:\.\d+)? ms \+%s*-?\d+(?:\.\d+)? ms : |ioctl idir=)")
});

/// A tinygrad line (detection's test): a timed line or an `ioctl idir=`.
pub fn sniff(line: &str) -> bool {
    SNIFF.is_match(line)
}

impl Dialect for Parser {
    fn at(&mut self, span: Span) {
        Parser::at(self, span)
    }
    fn feed(&mut self, lineno: u64, line: &str, out: &mut Vec<Rc<Event>>) {
        Parser::feed(self, lineno, line, out)
    }
    fn finish(&mut self, out: &mut Vec<Rc<Event>>) {
        Parser::finish(self, out)
    }
    fn info(&mut self) -> &mut InputInfo {
        &mut self.info
    }
}

/// The parser of one tinygrad file (the registry's constructor).
pub fn dialect(
    _: &FileSpec,
    file: FileId,
    info: InputInfo,
    _: Option<&Threads>,
) -> Box<dyn Dialect> {
    Box::new(Parser::new(file, info))
}

/// Does a line have one of the shapes (tinygrad.looks_like_line)?
pub fn looks_like_line(line: &str) -> bool {
    named_line(line).is_some()
        || timed_generic(line).is_some()
        || generic_line(pytext::strip(line)).is_some()
}

#[cfg(test)]
mod tests;
