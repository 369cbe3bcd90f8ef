//! Rust events and findings <-> the Python front's objects
//! (`rocrtrace.events`, `rocrtrace.findings`).
//!
//! Two uses: the findings the core hands to the reporters (their evidence
//! events become `rocrtrace.events.Event` records), and the tests that
//! build events with the vocabulary and run the core's models on them
//! (records in, Rust events out and back).  Per-event conversion is slow by
//! design of the boundary; the product path converts only what a finding
//! cites (and `show`'s history).

use crate::events::*;
use crate::findings::Finding;
use crate::kfd;
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value as Json;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The input files events refer to by [`FileId`]: Python events carry the
/// name itself.
#[derive(Debug, Default, Clone)]
pub struct Files {
    names: Vec<Text>,
    ids: HashMap<Text, u32>,
}

impl Files {
    pub fn new(names: impl IntoIterator<Item = Text>) -> Self {
        let mut f = Files::default();
        for n in names {
            f.id(&n);
        }
        f
    }

    /// The id of `name`, added when new.
    pub fn id(&mut self, name: &Text) -> FileId {
        if let Some(&i) = self.ids.get(name) {
            return FileId(i);
        }
        let i = self.names.len() as u32;
        self.names.push(name.clone());
        self.ids.insert(name.clone(), i);
        FileId(i)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, id: FileId) -> &[u8] {
        self.names.get(id.0 as usize).map_or(b"-", |t| &t.0)
    }
}

// --- text -----------------------------------------------------------------

/// Bytes as the Python front keeps log text: str decoded with surrogateescape.
pub fn text_to_py<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match std::str::from_utf8(b) {
        Ok(s) => Ok(PyString::new(py, s).into_any()),
        Err(_) => PyBytes::new(py, b).call_method1("decode", ("utf-8", "surrogateescape")),
    }
}

/// A Python str (surrogateescape-decoded) back to its bytes.
pub fn text_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Text> {
    let s = obj.cast::<PyString>()?;
    if let Ok(t) = s.to_str() {
        return Ok(Text::from(t));
    }
    let b = s.call_method1("encode", ("utf-8", "surrogateescape"))?;
    Ok(Text::from(b.cast::<PyBytes>()?.as_bytes()))
}

fn opt_text_to_py<'py>(py: Python<'py>, t: &Option<Text>) -> PyResult<Bound<'py, PyAny>> {
    match t {
        Some(t) => text_to_py(py, &t.0),
        None => Ok(py.None().into_bound(py)),
    }
}

fn opt_text_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<Text>> {
    if obj.is_none() {
        Ok(None)
    } else {
        text_from_py(obj).map(Some)
    }
}

// --- decoded struct values --------------------------------------------------

pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Str(t) | Value::Raw(t) => text_to_py(py, &t.0)?,
        Value::List(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(value_to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Struct(fields) => fields_to_py(py, fields)?.into_any(),
        Value::Pair(p) => {
            PyTuple::new(py, [value_to_py(py, &p.0)?, value_to_py(py, &p.1)?])?.into_any()
        }
    })
}

fn fields_to_py<'py>(py: Python<'py>, fields: &[(Name, Value)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, x) in fields {
        let v = match x {
            Value::List(items) if k == "attrs" => attrs_to_py(py, items)?,
            _ => value_to_py(py, x)?,
        };
        d.set_item(PyString::intern(py, k), v)?;
    }
    Ok(d)
}

/// SVM `attrs`: Python keeps (type, value) tuples, Rust two-element lists
/// (a tuple elsewhere is an `entry => exit` pair).
fn attrs_to_py<'py>(py: Python<'py>, items: &[Value]) -> PyResult<Bound<'py, PyAny>> {
    let l = PyList::empty(py);
    for x in items {
        match x {
            Value::List(p) => {
                let parts: PyResult<Vec<_>> = p.iter().map(|v| value_to_py(py, v)).collect();
                l.append(PyTuple::new(py, parts?)?)?
            }
            _ => l.append(value_to_py(py, x)?)?,
        }
    }
    Ok(l.into_any())
}

fn attrs_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut out = Vec::new();
    for x in obj.try_iter()? {
        let x = x?;
        out.push(match x.cast::<PyTuple>() {
            Ok(t) => Value::List(
                t.iter()
                    .map(|v| value_from_py(&v))
                    .collect::<PyResult<_>>()?,
            ),
            Err(_) => value_from_py(&x)?,
        });
    }
    Ok(Value::List(out))
}

/// Python values to [`Value`]: ints in [-2^63, 2^64) exactly, other ints as
/// their text; str, list, tuple (a pair), dict.  A dict field holding None
/// is left out (the models read a missing field and a None alike).
pub fn value_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Int(b.is_true() as i64));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Int(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::UInt(u));
        }
        return Ok(Value::Raw(Text::from(obj.str()?.to_str()?)));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::Str(text_from_py(obj)?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return fields_from_py(d).map(Value::Struct);
    }
    if let Ok(t) = obj.cast::<PyTuple>()
        && t.len() == 2
    {
        let a = value_from_py(&t.get_item(0)?)?;
        let b = value_from_py(&t.get_item(1)?)?;
        return Ok(Value::Pair(Box::new((a, b))));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for x in obj.try_iter()? {
            out.push(value_from_py(&x?)?);
        }
        return Ok(Value::List(out));
    }
    if obj.is_none() {
        return Ok(Value::Raw(Text::from("None")));
    }
    Ok(Value::Raw(Text::from(obj.str()?.to_str()?)))
}

fn fields_from_py(d: &Bound<'_, PyDict>) -> PyResult<Vec<(Name, Value)>> {
    let mut out = Vec::with_capacity(d.len());
    for (k, x) in d.iter() {
        if x.is_none() {
            continue;
        }
        let key: String = k.str()?.to_str()?.to_owned();
        let v = if key == "attrs" && x.is_instance_of::<PyList>() {
            attrs_from_py(&x)?
        } else {
            value_from_py(&x)?
        };
        out.push((Cow::Owned(key), v));
    }
    Ok(out)
}

pub fn json_to_py<'py>(py: Python<'py>, v: &Json) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Json::String(s) => PyString::new(py, s).into_any(),
        Json::Array(items) => {
            let l = PyList::empty(py);
            for x in items {
                l.append(json_to_py(py, x)?)?;
            }
            l.into_any()
        }
        Json::Object(m) => json_map_to_py(py, m)?.into_any(),
    })
}

pub fn json_map_to_py<'py>(
    py: Python<'py>,
    m: &serde_json::Map<String, Json>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, x) in m {
        d.set_item(k, json_to_py(py, x)?)?;
    }
    Ok(d)
}

// --- events -----------------------------------------------------------------

static EVENTS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RECORD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static FINDINGS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn module<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let m = cell.get_or_try_init(py, || py.import(name).map(|m| m.into_any().unbind()))?;
    Ok(m.bind(py).clone())
}

/// `rocrtrace.events.Event`, looked up once.
fn record_class<'py>(py: Python<'py>, m: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let c = RECORD.get_or_try_init(py, || m.getattr("Event").map(Bound::unbind))?;
    Ok(c.bind(py).clone())
}

fn frame_to_py<'py>(
    py: Python<'py>,
    ev: &Bound<'py, PyAny>,
    f: &Frame,
) -> PyResult<Bound<'py, PyAny>> {
    let kw = PyDict::new(py);
    kw.set_item("module", &*f.module)?;
    kw.set_item("symbol", f.symbol.as_deref())?;
    kw.set_item("sym_offset", f.sym_offset)?;
    kw.set_item("addr", f.addr)?;
    kw.set_item("function", f.function.as_deref())?;
    kw.set_item("source", f.source.as_deref())?;
    kw.set_item("source_line", f.source_line)?;
    ev.getattr("Frame")?.call((), Some(&kw))
}

fn frame_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Frame> {
    let s = |n: &str| -> PyResult<Option<Box<str>>> {
        let v = obj.getattr(n)?;
        Ok(if v.is_none() {
            None
        } else {
            Some(v.extract::<String>()?.into())
        })
    };
    let module: String = obj.getattr("module")?.extract()?;
    Ok(Frame {
        module: Arc::from(module),
        symbol: s("symbol")?,
        sym_offset: obj.getattr("sym_offset")?.extract()?,
        addr: obj.getattr("addr")?.extract()?,
        function: s("function")?,
        source: s("source")?,
        source_line: obj.getattr("source_line")?.extract()?,
    })
}

/// The `ret` register as Python holds it: results in [-4095, -1] are
/// errors (negative), any other value with the top bit set is an address
/// (mmap's result above 2^63), positive as strace printed it in hex.
pub fn ret_to_py(r: i64) -> i128 {
    if r < -4095 {
        r as u64 as i128
    } else {
        r as i128
    }
}

fn ret_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(i) = obj.extract::<i64>() {
        return Ok(Some(i));
    }
    let u: u64 = obj.extract()?;
    Ok(Some(u as i64))
}

fn fds_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i32>> {
    obj.try_iter()?.map(|x| x?.extract::<i32>()).collect()
}

fn paths_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Text>>> {
    obj.try_iter()?.map(|x| opt_text_from_py(&x?)).collect()
}

fn paths_to_py<'py>(py: Python<'py>, paths: &[Option<Text>]) -> PyResult<Bound<'py, PyTuple>> {
    let items: PyResult<Vec<_>> = paths.iter().map(|p| opt_text_to_py(py, p)).collect();
    PyTuple::new(py, items?)
}

/// A Rust event as the `rocrtrace.events.Event` record: its kind's name in
/// `event`, the header and the kind's fields (events.KINDS) as attributes,
/// set on an object made without `__init__` (no per-field Python code runs).
pub fn event_to_py<'py>(py: Python<'py>, ev: &Event, files: &Files) -> PyResult<Bound<'py, PyAny>> {
    let m = module(py, &EVENTS, "rocrtrace.events")?;
    let cls = record_class(py, &m)?;
    let o = cls.call_method1(intern!(py, "__new__"), (&cls,))?;
    macro_rules! set {
        ($k:literal, $v:expr $(,)?) => {{
            o.setattr(intern!(py, $k), $v)?;
        }};
    }
    let h = &ev.h;
    set!("file", text_to_py(py, files.name(h.file))?);
    set!("line", h.line);
    set!("end_line", h.end_line);
    set!("seq", h.seq);
    set!("pid", h.pid);
    set!("tid", h.tid);
    set!("time", h.time);
    set!("dur", h.dur);
    set!("ret", h.ret.map(ret_to_py));
    set!("err", h.err.as_deref());
    let frames: PyResult<Vec<_>> = h.stack.iter().map(|f| frame_to_py(py, &m, f)).collect();
    set!("stack", PyTuple::new(py, frames?)?);
    // (read back before: read/evidence.rs)
    set!("text", text_to_py(py, h.src.text())?);
    set!("partial", h.partial);
    set!("injected", h.injected);
    set!("name", &*ev.name);
    match &ev.kind {
        Kind::FdCreate(k) => {
            set!("origin", &*k.origin);
            set!("fds", PyTuple::new(py, &k.fds)?);
            set!("paths", paths_to_py(py, &k.paths)?);
            set!("cloexec", k.cloexec);
            set!("src_fd", k.src_fd);
            set!("replace", k.replace);
            set!("new_fd", k.new_fd);
        }
        Kind::Close(k) => {
            set!("fd", k.fd);
            set!("path", opt_text_to_py(py, &k.path)?);
        }
        Kind::CloseRange(k) => {
            set!("first", k.first);
            set!("last", k.last);
            set!("flags", k.flags);
        }
        Kind::SetCloexec(k) => {
            set!("fd", k.fd);
            set!("cloexec", k.cloexec);
        }
        Kind::Syscall(k) => {
            set!("fds", PyTuple::new(py, &k.fds)?);
            set!("paths", paths_to_py(py, &k.paths)?);
        }
        Kind::Ioctl(k) => {
            set!("fd", k.fd);
            set!("path", opt_text_to_py(py, &k.path)?);
            set!("request", k.request);
            set!("dir", k.dir);
            set!("type", k.type_);
            set!("nr", k.nr);
            set!("size", k.size);
            set!("ioctl", k.ioctl);
            set!(
                "arg",
                k.arg.as_ref().map(|v| value_to_py(py, v)).transpose()?,
            );
            set!(
                "out",
                k.out.as_ref().map(|v| value_to_py(py, v)).transpose()?,
            );
        }
        Kind::Mmap(k) => {
            set!("addr", k.addr);
            set!("length", k.length);
            set!("prot", k.prot);
            set!("flags", k.flags);
            set!("fd", k.fd);
            set!("path", opt_text_to_py(py, &k.path)?);
            set!("offset", k.offset);
        }
        Kind::Munmap(k) => {
            set!("addr", k.addr);
            set!("length", k.length);
        }
        Kind::Mremap(k) => {
            set!("old_addr", k.old_addr);
            set!("old_len", k.old_len);
            set!("new_len", k.new_len);
            set!("flags", k.flags);
            set!("new_addr", k.new_addr);
        }
        Kind::Clone(k) => {
            set!("child", k.child);
            set!("thread", k.thread);
            set!("share_files", k.share_files);
            set!("flags", k.flags);
        }
        Kind::Exec(k) => set!("path", opt_text_to_py(py, &k.path)?),
        Kind::Exit(k) => {
            set!("whole", k.whole);
            set!("status", k.status);
            set!("signal", k.signal.as_deref());
        }
        Kind::Signal(k) => set!("signal", &*k.signal),
        Kind::ProcessInfo(k) => {
            set!("ppid", k.ppid);
            set!("exe", opt_text_to_py(py, &k.exe)?);
            set!("page_size", k.page_size);
        }
        Kind::FdSnapshot(k) => {
            set!(
                "when",
                if k.when == When::Start {
                    "start"
                } else {
                    "exit"
                },
            );
            let d = PyDict::new(py);
            for (fd, p) in &k.fds {
                d.set_item(fd, text_to_py(py, &p.0)?)?;
            }
            set!("fds", d);
        }
        Kind::ModuleMap(k) => {
            set!("start", k.start);
            set!("end_addr", k.end_addr);
            set!("offset", k.offset);
            set!("perms", &*k.perms);
            set!("module", text_to_py(py, &k.module.0)?);
            set!("build_id", k.build_id.as_deref());
        }
        Kind::Intent(k) => {
            set!("args", fields_to_py(py, &k.args)?);
            set!("outs", fields_to_py(py, &k.outs)?);
        }
    }
    set!("event", PyString::intern(py, ev.kind.type_name()));
    Ok(o)
}

fn get<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    obj.getattr(name)
}

fn name_from_py(obj: &Bound<'_, PyAny>, known: fn(&str) -> Name) -> PyResult<Option<Name>> {
    if obj.is_none() {
        return Ok(None);
    }
    Ok(Some(known(obj.extract::<&str>()?)))
}

fn addr_from_py(obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    // models' tests may hand a negative "address"; keep its bit pattern
    match obj.extract::<u64>() {
        Ok(u) => Ok(u),
        Err(_) => Ok(obj.extract::<i64>()? as u64),
    }
}

fn opt_addr_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    if obj.is_none() {
        Ok(None)
    } else {
        addr_from_py(obj).map(Some)
    }
}

/// A `rocrtrace.events.Event` record (or any object with the record's
/// `event` and fields) as the Rust event it stands for.
pub fn event_from_py(obj: &Bound<'_, PyAny>, files: &mut Files) -> PyResult<Event> {
    let kind_name = obj
        .getattr(intern!(obj.py(), "event"))
        .map_err(|_| PyTypeError::new_err("not an event: it has no 'event' (kind) attribute"))?;
    let cls = kind_name.extract::<&str>()?;
    let stack: PyResult<Vec<Frame>> = get(obj, "stack")?
        .try_iter()?
        .map(|f| frame_from_py(&f?))
        .collect();
    let h = Header {
        file: files.id(&text_from_py(&get(obj, "file")?)?),
        line: get(obj, "line")?.extract()?,
        end_line: get(obj, "end_line")?.extract()?,
        seq: get(obj, "seq")?.extract()?,
        pid: get(obj, "pid")?.extract()?,
        tid: get(obj, "tid")?.extract()?,
        time: get(obj, "time")?.extract()?,
        dur: get(obj, "dur")?.extract()?,
        ret: ret_from_py(&get(obj, "ret")?)?,
        err: name_from_py(&get(obj, "err")?, errno)?,
        stack: stack?.into_boxed_slice(),
        src: Source {
            text: Some(text_from_py(&get(obj, "text")?)?),
            ..Source::default()
        },
        partial: get(obj, "partial")?.extract()?,
        injected: get(obj, "injected")?.extract()?,
    };
    let fd = |o: &Bound<'_, PyAny>| -> PyResult<i32> { get(o, "fd")?.extract() };
    let path = |o: &Bound<'_, PyAny>| opt_text_from_py(&get(o, "path")?);
    let kind = match cls {
        "FdCreate" => Kind::FdCreate(FdCreate {
            origin: Cow::Owned(get(obj, "origin")?.extract()?),
            fds: fds_from_py(&get(obj, "fds")?)?,
            paths: paths_from_py(&get(obj, "paths")?)?,
            cloexec: get(obj, "cloexec")?.is_truthy()?,
            src_fd: get(obj, "src_fd")?.extract()?,
            replace: get(obj, "replace")?.is_truthy()?,
            new_fd: get(obj, "new_fd")?.extract()?,
        }),
        "Close" => Kind::Close(Close {
            fd: fd(obj)?,
            path: path(obj)?,
        }),
        "CloseRange" => Kind::CloseRange(CloseRange {
            first: get(obj, "first")?.extract::<i64>()? as u32,
            last: get(obj, "last")?.extract::<i64>()? as u32,
            flags: get(obj, "flags")?.extract::<i64>()? as u32,
        }),
        "SetCloexec" => Kind::SetCloexec(SetCloexec {
            fd: fd(obj)?,
            cloexec: get(obj, "cloexec")?.is_truthy()?,
        }),
        "Syscall" => Kind::Syscall(Syscall {
            fds: fds_from_py(&get(obj, "fds")?)?,
            paths: paths_from_py(&get(obj, "paths")?)?,
        }),
        "Ioctl" => {
            let name = get(obj, "ioctl")?;
            let arg = get(obj, "arg")?;
            let out = get(obj, "out")?;
            Kind::Ioctl(Ioctl {
                fd: fd(obj)?,
                path: path(obj)?,
                request: get(obj, "request")?
                    .extract::<Option<i64>>()?
                    .map(|r| r as u32),
                dir: get(obj, "dir")?.extract()?,
                type_: get(obj, "type")?.extract()?,
                nr: get(obj, "nr")?.extract()?,
                size: get(obj, "size")?.extract()?,
                ioctl: if name.is_none() {
                    None
                } else {
                    kfd::static_name(name.extract::<&str>()?)
                },
                arg: if arg.is_none() {
                    None
                } else {
                    Some(value_from_py(&arg)?)
                },
                out: if out.is_none() {
                    None
                } else {
                    Some(value_from_py(&out)?)
                },
            })
        }
        "Mmap" => Kind::Mmap(Mmap {
            addr: opt_addr_from_py(&get(obj, "addr")?)?,
            length: addr_from_py(&get(obj, "length")?)?,
            prot: addr_from_py(&get(obj, "prot")?)?,
            flags: addr_from_py(&get(obj, "flags")?)?,
            fd: fd(obj)?,
            path: path(obj)?,
            offset: addr_from_py(&get(obj, "offset")?)?,
        }),
        "Munmap" => Kind::Munmap(Munmap {
            addr: addr_from_py(&get(obj, "addr")?)?,
            length: addr_from_py(&get(obj, "length")?)?,
        }),
        "Mremap" => Kind::Mremap(Mremap {
            old_addr: addr_from_py(&get(obj, "old_addr")?)?,
            old_len: addr_from_py(&get(obj, "old_len")?)?,
            new_len: addr_from_py(&get(obj, "new_len")?)?,
            flags: addr_from_py(&get(obj, "flags")?)?,
            new_addr: opt_addr_from_py(&get(obj, "new_addr")?)?,
        }),
        "Clone" => Kind::Clone(Clone {
            child: get(obj, "child")?.extract()?,
            thread: get(obj, "thread")?.is_truthy()?,
            share_files: get(obj, "share_files")?.is_truthy()?,
            flags: addr_from_py(&get(obj, "flags")?)?,
        }),
        "Exec" => Kind::Exec(Exec { path: path(obj)? }),
        "Exit" => Kind::Exit(Exit {
            whole: get(obj, "whole")?.is_truthy()?,
            status: get(obj, "status")?.extract()?,
            signal: name_from_py(&get(obj, "signal")?, signal)?,
        }),
        "Signal" => Kind::Signal(Signal {
            signal: signal(get(obj, "signal")?.extract::<&str>()?),
        }),
        "ProcessInfo" => Kind::ProcessInfo(ProcessInfo {
            ppid: get(obj, "ppid")?.extract()?,
            exe: opt_text_from_py(&get(obj, "exe")?)?,
            page_size: get(obj, "page_size")?.extract()?,
        }),
        "FdSnapshot" => {
            let when = get(obj, "when")?;
            let d = get(obj, "fds")?;
            let d = d.cast::<PyDict>()?;
            let mut fds = Vec::with_capacity(d.len());
            for (k, v) in d.iter() {
                fds.push((k.extract::<i32>()?, text_from_py(&v)?));
            }
            Kind::FdSnapshot(FdSnapshot {
                when: if when.extract::<&str>()? == "exit" {
                    When::Exit
                } else {
                    When::Start
                },
                fds,
            })
        }
        "ModuleMap" => Kind::ModuleMap(ModuleMap {
            start: addr_from_py(&get(obj, "start")?)?,
            end_addr: addr_from_py(&get(obj, "end_addr")?)?,
            offset: addr_from_py(&get(obj, "offset")?)?,
            perms: get(obj, "perms")?.extract::<String>()?.into(),
            module: text_from_py(&get(obj, "module")?)?,
            build_id: get(obj, "build_id")?
                .extract::<Option<String>>()?
                .map(Into::into),
        }),
        "Intent" => Kind::Intent(Box::new(Intent {
            args: fields_from_py(get(obj, "args")?.cast::<PyDict>()?)?,
            outs: fields_from_py(get(obj, "outs")?.cast::<PyDict>()?)?,
        })),
        other => return Err(PyTypeError::new_err(format!("not an event: {other}"))),
    };
    let name: String = get(obj, "name")?.extract()?;
    let name = match &kind {
        Kind::Syscall(_) | Kind::FdCreate(_) | Kind::Close(_) | Kind::Clone(_) | Kind::Exec(_) => {
            syscall(&name)
        }
        _ if name == kind.default_name() => Cow::Borrowed(kind.default_name()),
        _ => Cow::Owned(name),
    };
    Ok(Event { h, name, kind })
}

// --- findings ---------------------------------------------------------------

/// The Python record of each event already converted, by what makes an
/// event the same one (file, seq, line, name): an event several findings
/// cite (or one cites twice) is one object, as it is one event.  Identity
/// matters to the fingerprint (`e is not f.event`) and to the text report
/// (a call shown once, later mentions "(shown above)").
pub type EventCache<'py> = HashMap<(u32, u64, u64, Name), Bound<'py, PyAny>>;

fn shared_event_to_py<'py>(
    py: Python<'py>,
    ev: &Event,
    files: &Files,
    cache: &mut EventCache<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let key = (ev.h.file.0, ev.h.seq, ev.h.line, ev.name.clone());
    if let Some(o) = cache.get(&key) {
        return Ok(o.clone());
    }
    let o = event_to_py(py, ev, files)?;
    cache.insert(key, o.clone());
    Ok(o)
}

/// A Rust finding as `rocrtrace.findings.Finding` (fingerprint computed by
/// its constructor), its events converted once.
pub fn finding_to_py<'py>(
    py: Python<'py>,
    f: &Finding,
    files: &Files,
) -> PyResult<Bound<'py, PyAny>> {
    finding_to_py_shared(py, f, files, &mut EventCache::new())
}

/// [`finding_to_py`] with the events of earlier findings of the same
/// report in `cache`.
pub fn finding_to_py_shared<'py>(
    py: Python<'py>,
    f: &Finding,
    files: &Files,
    cache: &mut EventCache<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let m = module(py, &FINDINGS, "rocrtrace.findings")?;
    let event = f
        .event
        .as_ref()
        .map(|e| shared_event_to_py(py, e, files, cache))
        .transpose()?;
    let evidence = PyList::empty(py);
    for e in &f.evidence {
        let ev = shared_event_to_py(py, &e.event, files, cache)?;
        let kw = PyDict::new(py);
        kw.set_item("role", &e.role)?;
        kw.set_item("event", ev)?;
        kw.set_item("note", &e.note)?;
        evidence.append(m.getattr("Evidence")?.call((), Some(&kw))?)?;
    }
    let kw = PyDict::new(py);
    kw.set_item("rule", f.rule.id())?;
    kw.set_item("message", &f.message)?;
    kw.set_item("event", event)?;
    kw.set_item("subject", json_map_to_py(py, &f.subject)?)?;
    kw.set_item("evidence", evidence)?;
    if let Some(s) = f.severity {
        kw.set_item("severity", s.as_str())?;
    }
    kw.set_item("cause", f.cause.as_deref())?;
    kw.set_item("key", PyTuple::new(py, &f.key)?)?;
    kw.set_item("details", json_map_to_py(py, &f.details)?)?;
    if f.event.is_none() {
        if let Some(id) = f.file {
            kw.set_item("file", text_to_py(py, files.name(id))?)?;
        }
        kw.set_item("line", f.line)?;
    }
    m.getattr("Finding")?.call((), Some(&kw))
}
