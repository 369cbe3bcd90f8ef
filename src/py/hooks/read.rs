//! The reader's and the tinygrad parser's bindings, for the tests of reading
//! and parsing (tests/test_engine_read.py and others): nothing in the
//! product calls them.

use crate::events::{FileId, Format, InputInfo, Text};
use crate::parse::Builtin;
use crate::parse::detect::open_files;
use crate::parse::tinygrad;
use crate::parse::trace::Trace;
use crate::py::convert::{Files, event_to_py};
use crate::py::read::{err, info_to_py};
use crate::read::InputError;
use crate::read::lines::CHUNK;
use crate::read::lines::CleanLines;
use crate::read::open::FileSpec;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// `parse_tinygrad_lines(file, lines) -> (events, info)`: lines numbered
/// from 1 through the tinygrad parser, then finish(); the events numbered
/// (seq) in the order the parser gave them, as a trace numbers its events.
#[pyfunction]
pub fn parse_tinygrad_lines<'py>(
    py: Python<'py>,
    file: &str,
    lines: Vec<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut info = InputInfo::new(Text::from(file));
    info.format = Format::Tinygrad;
    let mut p = tinygrad::Parser::new(FileId(0), info);
    let mut evs = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        p.feed(i as u64 + 1, l, &mut evs);
    }
    p.finish(&mut evs);
    let files = Files::new([Text::from(file)]);
    let out = PyList::empty(py);
    for (seq, ev) in evs.iter_mut().enumerate() {
        crate::events::own(ev).h.seq = seq as u64;
        out.append(event_to_py(py, ev, &files)?)?;
    }
    PyTuple::new(py, [out.into_any(), info_to_py(py, &p.info)?])
}

/// What reading made of one file: detection, layout, lines, counts.
struct FileRead {
    path: String,
    format: Format,
    tid: Option<u32>,
    first: u64,
    prefix: String,
    quote: bool,
    layout_text: String,
    lines: Vec<(u64, Option<String>)>,
    info: InputInfo,
    error: Option<String>,
}

fn read_one(mut f: FileSpec, max_line: usize) -> FileRead {
    let mut info = InputInfo::new(Text::from(f.path.as_str()));
    info.format = f.format;
    info.layout = f.layout_text.as_str().into();
    let mut lines = Vec::new();
    let mut error = None;
    match f.open() {
        Err(e) => error = Some(e.0),
        Ok(r) => {
            let mut cl = CleanLines::new(r, &f.path, f.layout.clone(), max_line, CHUNK);
            loop {
                match cl.next(&mut info) {
                    Ok(Some((n, l))) => lines.push((n, l.map(|t| t.into_owned()))),
                    Ok(None) => break,
                    Err(e) => {
                        error = Some(e.0);
                        break;
                    }
                }
            }
        }
    }
    FileRead {
        path: f.path,
        format: f.format,
        tid: f.tid,
        first: f.layout.first,
        prefix: f.layout.prefix,
        quote: f.layout.quote,
        layout_text: f.layout_text,
        lines,
        info,
        error,
    }
}

/// `read_input(arg, input_format, max_line) -> [dict]`: the files of a
/// TRACE argument as the Rust reader opens them, each with path, format,
/// tid, first, prefix, quote, layout (text), lines [(n, text|None)], info
/// and error (a read error part-way, else None).  Raises ReadError where
/// opening fails.  The GIL is released (a FIFO's writer may be Python).
#[pyfunction]
#[pyo3(signature = (arg, input_format=None, max_line=1 << 20))]
pub fn read_input<'py>(
    py: Python<'py>,
    arg: &str,
    input_format: Option<&str>,
    max_line: usize,
) -> PyResult<Bound<'py, PyList>> {
    let arg = arg.to_string();
    let fmt = input_format.map(str::to_string);
    let got: Result<Vec<FileRead>, InputError> = py.detach(move || {
        let files = open_files(&arg, fmt.as_deref())?;
        Ok(files.into_iter().map(|f| read_one(f, max_line)).collect())
    });
    let out = PyList::empty(py);
    for f in got.map_err(err)? {
        let d = PyDict::new(py);
        d.set_item("path", &f.path)?;
        d.set_item("format", f.format.name())?;
        d.set_item("tid", f.tid)?;
        d.set_item("first", f.first)?;
        d.set_item("prefix", &f.prefix)?;
        d.set_item("quote", f.quote)?;
        d.set_item("layout", &f.layout_text)?;
        d.set_item("lines", f.lines)?;
        d.set_item("info", info_to_py(py, &f.info)?)?;
        d.set_item("error", f.error)?;
        out.append(d)?;
    }
    Ok(out)
}

/// `trace_events(arg, input_format=None, max_line, max_open) -> (events,
/// infos)` through the Rust Trace and its dialects; raises
/// ReadError with the first input error.
#[pyfunction]
#[pyo3(signature = (arg, input_format=None, max_line=1 << 20, max_open=64))]
pub fn trace_events<'py>(
    py: Python<'py>,
    arg: &str,
    input_format: Option<&str>,
    max_line: usize,
    max_open: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let arg = arg.to_string();
    let fmt = input_format.map(str::to_string);
    type Got = (Vec<crate::events::Event>, Vec<InputInfo>, Vec<String>);
    let got: Result<Got, InputError> = py.detach(move || {
        let files = open_files(&arg, fmt.as_deref())?;
        let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
        let mut t = Trace::new(&arg, files, max_line, Builtin);
        t.max_open = max_open;
        let infos = t.infos.clone();
        // (each event out of its `Rc`: the list crosses back to Python's thread)
        let evs: Result<Vec<_>, InputError> = t
            .events()
            .map(|r| r.map(std::rc::Rc::unwrap_or_clone))
            .collect();
        let infos = infos.borrow().clone();
        Ok((evs?, infos, paths))
    });
    let (evs, infos, paths) = got.map_err(err)?;
    let files = Files::new(paths.iter().map(|p| Text::from(p.as_str())));
    let out = PyList::empty(py);
    for ev in &evs {
        out.append(event_to_py(py, ev, &files)?)?;
    }
    let pinfos = PyList::empty(py);
    for i in &infos {
        pinfos.append(info_to_py(py, i)?)?;
    }
    PyTuple::new(py, [out.into_any(), pinfos.into_any()])
}
