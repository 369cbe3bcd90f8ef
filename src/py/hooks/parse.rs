//! `parse_lines`: the strace/preload parser on lines from Python, for the
//! tests of the parser alone (tests/test_engine_parse.py and others).

use crate::events::{FileId, InputInfo, Text};
use crate::parse::strace::{Parser, SharedTgids};
use crate::py::convert::{Files, event_to_py, text_from_py, text_to_py};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::collections::HashMap;

/// InputInfo as a dict of its Python fields.
fn info_to_py<'py>(py: Python<'py>, info: &InputInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("file", text_to_py(py, &info.file.0)?)?;
    d.set_item("format", info.format.name())?;
    d.set_item("lines", info.lines)?;
    d.set_item("events", info.events)?;
    d.set_item("unparsed", info.unparsed)?;
    let samples = PyList::empty(py);
    for (l, t) in &info.unparsed_samples {
        samples.append(PyTuple::new(
            py,
            [l.into_pyobject(py)?.into_any(), text_to_py(py, &t.0)?],
        )?)?;
    }
    d.set_item("unparsed_samples", samples)?;
    d.set_item("too_long", info.too_long)?;
    d.set_item("unfinished", info.unfinished)?;
    d.set_item("orphans", info.orphans)?;
    d.set_item("injected", info.injected)?;
    d.set_item("detached", info.detached)?;
    d.set_item("has_pids", info.has_pids)?;
    d.set_item("has_time", info.has_time)?;
    d.set_item("has_durations", info.has_durations)?;
    d.set_item("has_stacks", info.has_stacks)?;
    d.set_item("has_decorations", info.has_decorations)?;
    d.set_item("decoded_structs", info.decoded_structs)?;
    d.set_item("intent_calls", info.intent_calls)?;
    d.set_item("exit_seen", info.exit_seen)?;
    d.set_item("ends_mid_line", info.ends_mid_line)?;
    let header = PyDict::new(py);
    for (k, v) in &info.header {
        header.set_item(&**k, text_to_py(py, &v.0)?)?;
    }
    d.set_item("header", header)?;
    Ok(d)
}

/// parse_lines(fmt, file, lines, tid=None, tgid_of=None, handover=None) -> (events, info)
///
/// fmt is "strace" or "preload" (one grammar); lines are numbered from 1;
/// tid, tgid_of and handover ({tid: (line, text)}) are the Parser's; events
/// are rocrtrace.events objects numbered (seq) in the order the parser gave
/// them, as a trace numbers its events; info a dict of InputInfo's fields.
#[pyfunction]
#[pyo3(signature = (fmt, file, lines, tid=None, tgid_of=None, handover=None))]
pub fn parse_lines<'py>(
    py: Python<'py>,
    fmt: &str,
    file: &Bound<'py, PyAny>,
    lines: &Bound<'py, PyAny>,
    tid: Option<u32>,
    tgid_of: Option<HashMap<u32, u32>>,
    handover: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyTuple>> {
    if fmt != "strace" && fmt != "preload" {
        return Err(PyValueError::new_err(format!(
            "parse_lines: no parser for {fmt:?}"
        )));
    }
    let name: Text = text_from_py(file)?;
    let files = Files::new([name.clone()]);
    let handover = match handover {
        None => None,
        Some(d) => {
            let mut h = HashMap::new();
            for (k, v) in d.iter() {
                let (line, text): (u64, Bound<'py, PyAny>) = v.extract()?;
                h.insert(k.extract::<u32>()?, (line, text_from_py(&text)?.0.to_vec()));
            }
            Some(h)
        }
    };
    let mut p = Parser::new(
        FileId(0),
        InputInfo::new(name),
        tid,
        tgid_of.map(|m| std::sync::Arc::new(SharedTgids::new(m))),
        handover.map(std::sync::Arc::new),
    );
    let mut evs = Vec::new();
    for (i, line) in lines.try_iter()?.enumerate() {
        let t = text_from_py(&line?)?;
        p.feed(i as u64 + 1, &t.0, &mut evs);
    }
    p.finish(&mut evs);
    let out = PyList::empty(py);
    for (seq, ev) in evs.iter_mut().enumerate() {
        crate::events::own(ev).h.seq = seq as u64;
        out.append(event_to_py(py, ev, &files)?)?;
    }
    PyTuple::new(py, [out.into_any(), info_to_py(py, &p.info)?.into_any()])
}
