//! The event table (`rocrtrace events`, `stats`, `diff`) as columns, built
//! from Rust events and handed to pandas without one Python object per
//! event (src/py/table.rs); tests/engine/rowtable.py keeps the same table
//! built row by row, to compare with.
//!
//! Integer columns are values plus a null mask; a column holding a value
//! outside i64 (an mmap result above 2^63 as Python keeps it) becomes text,
//! as tests/engine/rowtable.py's reference does.  Text columns are dictionary-encoded: their
//! vocabularies (event kinds, syscall names, errnos, ioctl labels) are tiny.

use crate::events::{Event, FileId, Kind, Value};
use crate::kfd;
use std::collections::HashMap;

/// The columns in tables.ORDER.
pub const ORDER: &[&str] = &[
    "file",
    "line",
    "seq",
    "pid",
    "tid",
    "time",
    "dur",
    "event",
    "name",
    "ret",
    "err",
    "fd",
    "ioctl",
    "type",
    "nr",
    "size",
    "request",
    "length",
    "op",
    "nattr",
    "attr_shape",
];

/// A nullable integer column; values above i64::MAX are kept on the side.
#[derive(Debug, Default, Clone)]
pub struct IntCol {
    pub values: Vec<i64>,
    /// true where the value is missing
    pub null: Vec<bool>,
    /// (row, value) of the values above i64::MAX
    pub wide: Vec<(usize, u64)>,
}

impl IntCol {
    fn push(&mut self, v: Option<i128>) {
        match v {
            Some(x) => {
                if let Ok(i) = i64::try_from(x) {
                    self.values.push(i);
                } else {
                    self.wide.push((self.values.len(), x as u64));
                    self.values.push(0);
                }
                self.null.push(false);
            }
            None => {
                self.values.push(0);
                self.null.push(true);
            }
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct FloatCol {
    /// NaN where missing
    pub values: Vec<f64>,
}

/// A dictionary-encoded text column: -1 is missing.
#[derive(Debug, Default, Clone)]
pub struct TextCol {
    pub codes: Vec<i32>,
    pub categories: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, i32>,
}

impl TextCol {
    fn push(&mut self, v: Option<&[u8]>) {
        let code = match v {
            None => -1,
            Some(b) => match self.index.get(b) {
                Some(&c) => c,
                None => {
                    let c = self.categories.len() as i32;
                    self.categories.push(b.to_vec());
                    self.index.insert(b.to_vec(), c);
                    c
                }
            },
        };
        self.codes.push(code);
    }
}

/// The columns every table of events starts with: where and when the
/// event happened, what it is, its result and the fd it names.
#[derive(Debug, Default, Clone)]
pub struct HeadCols {
    pub rows: usize,
    pub file: TextCol,
    pub line: IntCol,
    pub pid: IntCol,
    pub tid: IntCol,
    pub time: FloatCol,
    pub dur: FloatCol,
    pub event: TextCol,
    pub name: TextCol,
    pub ret: IntCol,
    pub err: TextCol,
    pub fd: IntCol,
}

impl HeadCols {
    fn push(&mut self, ev: &Event, file: &[u8]) {
        let h = &ev.h;
        self.rows += 1;
        self.file.push(Some(file));
        self.line.push(Some(h.line.into()));
        self.pid.push(h.pid.map(Into::into));
        self.tid.push(h.tid.map(Into::into));
        self.time.values.push(h.time.unwrap_or(f64::NAN));
        self.dur.values.push(h.dur.unwrap_or(f64::NAN));
        self.event.push(Some(ev.kind.type_name().as_bytes()));
        self.name.push(Some(ev.name.as_bytes()));
        self.ret.push(h.ret.map(ret_value));
        self.err.push(h.err.as_deref().map(str::as_bytes));
        self.fd.push(fd_of(ev).map(Into::into));
    }
}

/// The event table's columns, filled one event at a time.
#[derive(Debug, Default, Clone)]
pub struct EventTable {
    pub head: HeadCols,
    pub seq: IntCol,
    pub ioctl: TextCol,
    pub type_: IntCol,
    pub nr: IntCol,
    pub size: IntCol,
    pub request: IntCol,
    pub length: IntCol,
    pub op: TextCol,
    pub nattr: IntCol,
    pub attr_shape: TextCol,
}

/// The `ret` register as the front holds it (negative only for errno
/// results; see py::convert::ret_to_py).
fn ret_value(r: i64) -> i128 {
    if r < -4095 {
        r as u64 as i128
    } else {
        r as i128
    }
}

impl EventTable {
    /// Add one event; `file` names its input.
    pub fn push(&mut self, ev: &Event, file: &[u8]) {
        self.head.push(ev, file);
        self.seq.push(Some(ev.h.seq.into()));
        let mut svm = (None, None, None);
        match &ev.kind {
            Kind::Ioctl(k) => {
                self.ioctl.push(Some(ioctl_label(k).as_bytes()));
                self.type_.push(k.type_.map(Into::into));
                self.nr.push(k.nr.map(Into::into));
                self.size.push(k.size.map(Into::into));
                self.request.push(k.request.map(Into::into));
                if (k.type_, k.nr) == (Some(kfd::TYPE_KFD), Some(0x20)) {
                    svm = svm_columns(k);
                }
            }
            _ => {
                self.ioctl.push(None);
                self.type_.push(None);
                self.nr.push(None);
                self.size.push(None);
                self.request.push(None);
            }
        }
        self.length.push(match &ev.kind {
            Kind::Mmap(k) => Some(k.length.into()),
            _ => None,
        });
        self.op.push(svm.0.as_deref().map(str::as_bytes));
        self.nattr.push(svm.1);
        self.attr_shape.push(svm.2.as_deref().map(str::as_bytes));
    }

    /// Add a stream of events whose files are named by `file_name`.
    pub fn extend<'a>(
        &mut self,
        events: impl IntoIterator<Item = &'a Event>,
        file_name: impl Fn(FileId) -> &'a [u8],
    ) {
        for ev in events {
            self.push(ev, file_name(ev.h.file));
        }
    }
}

/// The fd column: the fd an event names (tables' `fd`, events.event_record).
fn fd_of(ev: &Event) -> Option<i32> {
    match &ev.kind {
        Kind::Ioctl(k) => Some(k.fd),
        Kind::Close(k) => Some(k.fd),
        Kind::SetCloexec(k) => Some(k.fd),
        Kind::FdCreate(k) => k.fds.first().copied(),
        Kind::Mmap(k) => Some(k.fd),
        _ => None,
    }
}

/// What the perfetto report draws of every call (report/perfetto.py's
/// EventSink.add_columns), as columns: the calls' slices, the fd lifetimes
/// (created fds, closes), the buffer handles' lifetimes (creates, frees,
/// exports), the process names and ends.  Built only when that
/// format is asked for: `text` holds every event's source text.
#[derive(Debug, Default, Clone)]
pub struct CallTable {
    pub head: HeadCols,
    /// the ioctl's own name (None when unknown: the slice is named `name`)
    pub ioctl: TextCol,
    /// the first of `paths` when decorated, else `path`; ProcessInfo: `exe`
    pub path: TextCol,
    pub text: TextCol,
    /// Exit: `whole` (1/0); null for other kinds
    pub whole: IntCol,
    /// (row, fd, path) of every fd an FdCreate or an ioctl installed
    /// ([`ioctl_created_fds`]; an ioctl's fd has no path)
    pub created: Vec<(usize, i32, Option<Vec<u8>>)>,
    /// (row, op, family, handle) of every ioctl that made, exported or
    /// freed a buffer handle ([`ioctl_handle`])
    pub handles: Vec<(usize, HandleOp, HandleFamily, i128)>,
}

impl CallTable {
    pub fn push(&mut self, ev: &Event, file: &[u8]) {
        let row = self.head.rows;
        self.head.push(ev, file);
        let first = |paths: &[Option<crate::events::Text>]| {
            paths
                .first()
                .and_then(|p| p.as_ref())
                .map(|t| t.as_bytes().to_vec())
        };
        let (ioctl, path) = match &ev.kind {
            Kind::FdCreate(k) => (None, first(&k.paths)),
            Kind::Syscall(k) => (None, first(&k.paths)),
            Kind::Close(k) => (None, k.path.as_ref().map(|t| t.as_bytes().to_vec())),
            Kind::Ioctl(k) => (k.ioctl, k.path.as_ref().map(|t| t.as_bytes().to_vec())),
            Kind::Mmap(k) => (None, k.path.as_ref().map(|t| t.as_bytes().to_vec())),
            Kind::Exec(k) => (None, k.path.as_ref().map(|t| t.as_bytes().to_vec())),
            Kind::ProcessInfo(k) => (None, k.exe.as_ref().map(|t| t.as_bytes().to_vec())),
            _ => (None, None),
        };
        self.ioctl.push(ioctl.map(str::as_bytes));
        self.path.push(path.as_deref());
        self.text.push(Some(ev.h.text.as_bytes()));
        self.whole.push(match &ev.kind {
            Kind::Exit(k) => Some(k.whole.into()),
            _ => None,
        });
        if let Kind::FdCreate(k) = &ev.kind {
            for (i, &fd) in k.fds.iter().enumerate() {
                let p = k.paths.get(i).and_then(|p| p.as_ref());
                self.created
                    .push((row, fd, p.map(|t| t.as_bytes().to_vec())));
            }
        }
        if let Kind::Ioctl(k) = &ev.kind
            && ev.h.err.is_none()
        {
            for fd in ioctl_created_fds(k, ev.h.ret) {
                self.created.push((row, fd, None));
            }
        }
        if let Kind::Ioctl(k) = &ev.kind
            && let Some((op, family, h)) = ioctl_handle(k, ev.h.ok())
        {
            self.handles.push((row, op, family, h));
        }
    }
}

/// What an ioctl did to a buffer handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleOp {
    /// the kernel wrote a handle back: an allocation, a GEM create, an
    /// import (which returns the handle the file already holds for a buffer)
    Create,
    /// a dma-buf fd made of the handle (the row's created fd)
    Export,
    /// a free or GEM_CLOSE asked for, whatever its result
    Free,
}

/// Whose namespace a handle is in: KFD handles are per process, GEM
/// handles per DRM file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleFamily {
    Kfd,
    Gem,
}

impl HandleOp {
    pub fn as_str(self) -> &'static str {
        match self {
            HandleOp::Create => "create",
            HandleOp::Export => "export",
            HandleOp::Free => "free",
        }
    }
}

impl HandleFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            HandleFamily::Kfd => "KFD",
            HandleFamily::Gem => "GEM",
        }
    }
}

/// The buffer handle an ioctl made, exported or freed as the trace shows it
/// (every buffer handle gets its lifetime in the perfetto report),
/// read from the structs as the handle model reads them
/// (src/models/handles.rs): the `handle` the kernel wrote back of a
/// successful AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, AMDKFD_IOC_IMPORT_DMABUF,
/// GEM create (amdgpu, XDNA) or DRM_IOCTL_PRIME_FD_TO_HANDLE; the `handle`
/// argument of a successful AMDKFD_IOC_EXPORT_DMABUF or
/// DRM_IOCTL_PRIME_HANDLE_TO_FD; the `handle` argument of every
/// AMDKFD_IOC_FREE_MEMORY_OF_GPU and DRM_IOCTL_GEM_CLOSE (a refused free
/// is where a double free shows).  strace prints no structs: none there.
pub fn ioctl_handle(k: &crate::events::Ioctl, ok: bool) -> Option<(HandleOp, HandleFamily, i128)> {
    use crate::models::common::int_field;
    use HandleFamily::{Gem, Kfd};
    use HandleOp::{Create, Export, Free};
    let key = (k.type_?, k.nr?);
    let arg = int_field(k.arg.as_ref(), "handle");
    let out = int_field(k.out.as_ref(), "handle").filter(|_| ok);
    // DRM driver numbers are shared (amdgpu, XDNA): the name decides
    let name = k
        .ioctl
        .or_else(|| kfd::ioctl_name(key.0, key.1, k.path.as_ref().map(|p| p.as_bytes()), None));
    let (op, family, h) = if key == kfd::ALLOC_MEMORY_OF_GPU || key == kfd::IMPORT_DMABUF {
        (Create, Kfd, out)
    } else if key == kfd::FREE_MEMORY_OF_GPU {
        (Free, Kfd, arg)
    } else if key == kfd::EXPORT_DMABUF {
        (Export, Kfd, arg.filter(|_| ok))
    } else if matches!(
        name,
        Some("DRM_IOCTL_AMDGPU_GEM_CREATE" | "DRM_IOCTL_AMDXDNA_CREATE_BO")
    ) || key == kfd::PRIME_FD_TO_HANDLE
    {
        (Create, Gem, out)
    } else if key == kfd::PRIME_HANDLE_TO_FD {
        (Export, Gem, arg.filter(|_| ok))
    } else if key == kfd::GEM_CLOSE {
        (Free, Gem, arg)
    } else {
        return None;
    };
    Some((op, family, h?))
}

/// The fds an ioctl installed as the trace shows them (a dma-buf
/// export's fd gets its lifetime in the perfetto report): an fd field of
/// the struct the kernel wrote (`=> {dmabuf_fd=6}`, `{fd=…}`, `{anon_fd=…}`:
/// the kernel writes back only an fd it installed), or the result of a
/// udmabuf create, which returns its fd.  strace prints no structs, so its
/// logs show none.
pub fn ioctl_created_fds(k: &crate::events::Ioctl, ret: Option<i64>) -> Vec<i32> {
    use crate::kfd::fields::{ANON_FD, DMABUF_FD, FD};
    if matches!(
        (k.type_, k.nr),
        (Some(t), Some(n)) if (t, n) == kfd::UDMABUF_CREATE || (t, n) == kfd::UDMABUF_CREATE_LIST
    ) {
        return ret
            .and_then(|r| i32::try_from(r).ok())
            .filter(|&r| r >= 0)
            .into_iter()
            .collect();
    }
    let Some(out @ crate::events::Value::Struct(_)) = k.out.as_ref() else {
        return Vec::new();
    };
    [DMABUF_FD, FD, ANON_FD]
        .iter()
        .filter_map(|f| crate::models::common::fd_value(out.get(f)))
        .filter_map(|fd| i32::try_from(fd).ok())
        .filter(|&fd| fd >= 0)
        .collect()
}

/// The ioctl column: our name, else the request's (type, nr).
pub fn ioctl_label(k: &crate::events::Ioctl) -> String {
    if let Some(n) = k.ioctl {
        return n.to_owned();
    }
    match (k.type_, k.nr) {
        (Some(t), Some(n)) => format!("_IOC(type={t:#x}, nr={n:#x})"),
        _ => "ioctl(?)".to_owned(),
    }
}

/// Python's `str()` of a decoded value, for the op column.
fn py_str(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Str(t) | Value::Raw(t) => String::from_utf8_lossy(&t.0).into_owned(),
        Value::List(items) => {
            let parts: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Pair(p) => format!("({}, {})", py_repr(&p.0), py_repr(&p.1)),
        Value::Struct(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(k, x)| format!("'{k}': {}", py_repr(x)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

fn py_repr(v: &Value) -> String {
    match v {
        Value::Str(t) | Value::Raw(t) => format!("'{}'", String::from_utf8_lossy(&t.0)),
        _ => py_str(v),
    }
}

/// The SVM columns: op, nattr and shape of an AMDKFD_IOC_SVM call;
/// nattr from the request's size field when the struct was not decoded.
fn svm_columns(k: &crate::events::Ioctl) -> (Option<String>, Option<i128>, Option<String>) {
    let arg = k.arg.as_ref();
    let op = arg.and_then(|a| a.get("op"));
    let attrs = arg.and_then(|a| a.get("attrs"));
    let op_name = op.map(|o| match o.as_i128() {
        Some(0) => "SET_ATTR".to_owned(),
        Some(1) => "GET_ATTR".to_owned(),
        _ => py_str(o),
    });
    let mut nattr = arg.and_then(|a| a.get("nattr")).and_then(Value::as_i128);
    if nattr.is_none()
        && let Some(list) = attrs.and_then(Value::as_list)
    {
        nattr = Some(list.len() as i128);
    }
    if nattr.is_none()
        && let Some(s) = k.size
        && s >= 24
        && (s - 24) % 8 == 0
    {
        nattr = Some(((s - 24) / 8).into());
    }
    let shape = attrs
        .and_then(Value::as_list)
        .filter(|l| !l.is_empty())
        .map(attr_shape);
    (op_name, nattr, shape)
}

/// tables.attr_shape: `NO_ACCESS×2+CLR_FLAGS×2`, in the kernel's type order.
pub fn attr_shape(attrs: &[Value]) -> String {
    let mut counts: Vec<(i128, usize)> = Vec::new();
    for a in attrs {
        // (type, value): two-element lists, or pairs as the strace parser keeps them
        let t = match a {
            Value::Pair(p) => p.0.as_i128(),
            _ => a.as_list().and_then(|p| p.first()).and_then(Value::as_i128),
        };
        let Some(t) = t else {
            continue;
        };
        match counts.iter_mut().find(|c| c.0 == t) {
            Some(c) => c.1 += 1,
            None => counts.push((t, 1)),
        }
    }
    counts.sort();
    let parts: Vec<String> = counts
        .iter()
        .map(|&(t, n)| {
            let name = u32::try_from(t)
                .ok()
                .and_then(kfd::attr_name)
                .map(|s| s.trim_start_matches("KFD_IOCTL_SVM_ATTR_").to_owned())
                .unwrap_or_else(|| format!("ATTR_{t:#x}"));
            format!("{name}×{n}")
        })
        .collect();
    parts.join("+")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Header, Ioctl};
    use crate::models::testkit::{int_struct as fields, ioctl_kind};

    fn svm_ioctl(arg: Option<Value>, size: u64) -> Event {
        Event::new(
            Header::default(),
            Kind::Ioctl(Ioctl {
                fd: 3,
                path: None,
                request: None,
                dir: Some(3),
                type_: Some(kfd::TYPE_KFD),
                nr: Some(0x20),
                size: Some(size),
                ioctl: Some("AMDKFD_IOC_SVM"),
                arg,
                out: None,
            }),
        )
    }

    #[test]
    fn svm_shape_counts_types_in_kernel_order() {
        let pair = |t, v| Value::List(vec![Value::Int(t), Value::Int(v)]);
        let arg = Value::Struct(vec![
            ("op".into(), Value::Int(0)),
            (
                "attrs".into(),
                Value::List(vec![pair(6, 1), pair(4, 0), pair(6, 2)]),
            ),
        ]);
        let mut t = EventTable::default();
        t.push(&svm_ioctl(Some(arg), 48), b"x.log");
        assert_eq!(t.op.categories, vec![b"SET_ATTR".to_vec()]);
        assert_eq!(t.nattr.values, vec![3]);
        assert_eq!(
            t.attr_shape.categories,
            vec!["NO_ACCESS×1+CLR_FLAGS×2".as_bytes().to_vec()]
        );
    }

    #[test]
    fn strace_svm_nattr_from_size() {
        let mut t = EventTable::default();
        t.push(&svm_ioctl(None, 24 + 16), b"x.log");
        assert_eq!((t.nattr.values[0], t.nattr.null[0]), (2, false));
        assert_eq!(t.op.codes, vec![-1]);
    }

    #[test]
    fn call_table_keeps_created_fds_paths_and_exits() {
        use crate::events::{Exit, FdCreate, Text};
        let pipe = Event::new(
            Header {
                ret: Some(0),
                ..Default::default()
            },
            Kind::FdCreate(FdCreate {
                origin: "pipe".into(),
                fds: vec![3, 4],
                paths: vec![Some(Text::from("pipe:[1]")), None],
                cloexec: false,
                src_fd: None,
                replace: false,
                new_fd: None,
            }),
        );
        let exit = Event::new(
            Header::default(),
            Kind::Exit(Exit {
                whole: true,
                status: Some(0),
                signal: None,
            }),
        );
        let mut t = CallTable::default();
        t.push(&pipe, b"x");
        t.push(&exit, b"x");
        assert_eq!(t.head.rows, 2);
        assert_eq!(
            t.created,
            vec![(0, 3, Some(b"pipe:[1]".to_vec())), (0, 4, None)]
        );
        assert_eq!(t.path.codes, vec![0, -1]);
        assert_eq!((t.head.fd.values[0], t.head.fd.null[1]), (3, true));
        assert_eq!((t.whole.null[0], t.whole.values[1]), (true, 1));
    }

    /// A call of the catalogue's ioctl `name` on fd 3; `err`: it failed.
    fn ioctl_event(
        name: &'static str,
        arg: Option<Value>,
        out: Option<Value>,
        err: Option<&'static str>,
    ) -> Event {
        let h = Header {
            ret: Some(if err.is_some() { -1 } else { 0 }),
            err: err.map(Into::into),
            ..Default::default()
        };
        Event::new(h, ioctl_kind(3, name, arg, out))
    }

    #[test]
    fn call_table_keeps_fds_an_ioctl_installed() {
        let export = |out, err| ioctl_event("AMDKFD_IOC_EXPORT_DMABUF", None, out, err);
        let wrote = fields(&[("dmabuf_fd", 6)]);
        let mut t = CallTable::default();
        t.push(&export(wrote.clone(), None), b"x");
        // strace: no struct, no fd; a failed export installs none
        t.push(&export(None, None), b"x");
        t.push(&export(wrote, Some("EINVAL")), b"x");
        assert_eq!(t.created, vec![(0, 6, None)]);
    }

    #[test]
    fn call_table_keeps_what_ioctls_did_to_buffer_handles() {
        const KFD_H: i64 = 0x1a2b_0000_0000;
        type Call = (
            &'static str,
            &'static [(&'static str, i64)],
            &'static [(&'static str, i64)],
            Option<&'static str>,
        );
        let calls: [Call; 8] = [
            (
                "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
                &[("size", 4096)],
                &[("handle", KFD_H)],
                None,
            ),
            (
                "AMDKFD_IOC_EXPORT_DMABUF",
                &[("handle", KFD_H)],
                &[("dmabuf_fd", 6)],
                None,
            ),
            (
                "DRM_IOCTL_AMDXDNA_CREATE_BO",
                &[("size", 4096)],
                &[("handle", 1)],
                None,
            ),
            (
                "DRM_IOCTL_PRIME_HANDLE_TO_FD",
                &[("handle", 1)],
                &[("fd", 7)],
                None,
            ),
            ("DRM_IOCTL_GEM_CLOSE", &[("handle", 1)], &[], Some("EINVAL")),
            (
                "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
                &[("handle", KFD_H)],
                &[],
                None,
            ),
            // a failed allocation made nothing; other ioctls touch no handle
            (
                "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
                &[("size", 1)],
                &[("handle", 9)],
                Some("ENOMEM"),
            ),
            ("AMDKFD_IOC_MAP_MEMORY_TO_GPU", &[("handle", 9)], &[], None),
        ];
        let mut t = CallTable::default();
        for (name, arg, out, err) in calls {
            t.push(&ioctl_event(name, fields(arg), fields(out), err), b"x");
        }
        use HandleFamily::{Gem, Kfd};
        use HandleOp::{Create, Export, Free};
        let h = i128::from(KFD_H);
        assert_eq!(
            t.handles,
            vec![
                (0, Create, Kfd, h),
                (1, Export, Kfd, h),
                (2, Create, Gem, 1),
                (3, Export, Gem, 1),
                (4, Free, Gem, 1),
                (5, Free, Kfd, h),
            ]
        );
        assert_eq!(t.created, vec![(1, 6, None), (3, 7, None)]);
    }

    #[test]
    fn address_results_above_i64_are_wide() {
        let h = Header {
            ret: Some(0xffff_8000_0000_0000u64 as i64),
            ..Default::default()
        };
        let ev = Event::new(
            h,
            Kind::Munmap(crate::events::Munmap { addr: 0, length: 0 }),
        );
        let mut t = EventTable::default();
        t.push(&ev, b"x");
        assert_eq!(t.head.ret.wide, vec![(0, 0xffff_8000_0000_0000)]);
    }
}
