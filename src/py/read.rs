//! The reader's error and its InputInfo as Python sees them.

use crate::events::InputInfo;
use crate::parse::DIALECTS;
use crate::py::convert::text_to_py;
use crate::read::InputError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

create_exception!(
    _engine,
    ReadError,
    PyException,
    "An input the Rust reader cannot read or recognize; str() is inputs.InputError's line."
);

/// `input_formats() -> list[str]`: the dialects the core reads, as
/// `--input-format` names them (the registry, src/parse/mod.rs).
#[pyfunction]
pub fn input_formats() -> Vec<&'static str> {
    DIALECTS.iter().map(|d| d.format.name()).collect()
}

pub fn err(e: InputError) -> PyErr {
    ReadError::new_err(e.0)
}

/// An InputInfo as rocrtrace.events.InputInfo.
pub fn info_to_py<'py>(py: Python<'py>, i: &InputInfo) -> PyResult<Bound<'py, PyAny>> {
    let m = py.import("rocrtrace.events")?;
    let kw = PyDict::new(py);
    kw.set_item("file", text_to_py(py, i.file.as_bytes())?)?;
    kw.set_item("format", i.format.name())?;
    kw.set_item("lines", i.lines)?;
    kw.set_item("events", i.events)?;
    kw.set_item("unparsed", i.unparsed)?;
    let samples = PyList::empty(py);
    for (n, t) in &i.unparsed_samples {
        samples.append((n, text_to_py(py, t.as_bytes())?))?;
    }
    kw.set_item("unparsed_samples", samples)?;
    for (k, v) in [
        ("too_long", i.too_long),
        ("unfinished", i.unfinished),
        ("orphans", i.orphans),
        ("injected", i.injected),
        ("detached", i.detached),
        ("preamble", i.preamble),
    ] {
        kw.set_item(k, v)?;
    }
    for (k, v) in [
        ("has_pids", i.has_pids),
        ("has_time", i.has_time),
        ("has_durations", i.has_durations),
        ("has_stacks", i.has_stacks),
        ("has_decorations", i.has_decorations),
        ("decoded_structs", i.decoded_structs),
        ("intent_calls", i.intent_calls),
        ("exit_seen", i.exit_seen),
        ("ends_mid_line", i.ends_mid_line),
        ("crlf", i.crlf),
    ] {
        kw.set_item(k, v)?;
    }
    let header = PyDict::new(py);
    for (k, v) in &i.header {
        header.set_item(&**k, text_to_py(py, v.as_bytes())?)?;
    }
    kw.set_item("header", header)?;
    kw.set_item("layout", &*i.layout)?;
    m.getattr("InputInfo")?.call((), Some(&kw))
}
