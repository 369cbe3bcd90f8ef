//! The event table handed to pandas as columns (tables.frame_from_columns):
//! integer columns as (values, null mask, wide values) buffers, floats as a
//! buffer, text dictionary-encoded as (codes, categories).

use super::convert::{Files, event_from_py, text_to_py};
use crate::table::{CallTable, EventTable, FloatCol, IntCol, ORDER, TextCol};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // plain-old-data slices (i64, f64, i32, bool) viewed as their bytes
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn int_col<'py>(py: Python<'py>, c: &IntCol) -> PyResult<Bound<'py, PyTuple>> {
    let wide = PyList::empty(py);
    for &(row, v) in &c.wide {
        wide.append((row, v))?;
    }
    PyTuple::new(
        py,
        [
            "int".into_pyobject(py)?.into_any(),
            PyBytes::new(py, bytes_of(&c.values)).into_any(),
            PyBytes::new(py, bytes_of(&c.null)).into_any(),
            wide.into_any(),
        ],
    )
}

fn float_col<'py>(py: Python<'py>, c: &FloatCol) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            "float".into_pyobject(py)?.into_any(),
            PyBytes::new(py, bytes_of(&c.values)).into_any(),
        ],
    )
}

fn text_col<'py>(py: Python<'py>, c: &TextCol) -> PyResult<Bound<'py, PyTuple>> {
    let cats = PyList::empty(py);
    for b in &c.categories {
        cats.append(text_to_py(py, b)?)?;
    }
    PyTuple::new(
        py,
        [
            "text".into_pyobject(py)?.into_any(),
            PyBytes::new(py, bytes_of(&c.codes)).into_any(),
            cats.into_any(),
        ],
    )
}

/// The columns of `t` by name, in tables.ORDER.
pub fn table_to_py<'py>(py: Python<'py>, t: &EventTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for &name in ORDER {
        let col = match name {
            "file" => text_col(py, &t.head.file)?,
            "line" => int_col(py, &t.head.line)?,
            "seq" => int_col(py, &t.seq)?,
            "pid" => int_col(py, &t.head.pid)?,
            "tid" => int_col(py, &t.head.tid)?,
            "time" => float_col(py, &t.head.time)?,
            "dur" => float_col(py, &t.head.dur)?,
            "event" => text_col(py, &t.head.event)?,
            "name" => text_col(py, &t.head.name)?,
            "ret" => int_col(py, &t.head.ret)?,
            "err" => text_col(py, &t.head.err)?,
            "fd" => int_col(py, &t.head.fd)?,
            "ioctl" => text_col(py, &t.ioctl)?,
            "type" => int_col(py, &t.type_)?,
            "nr" => int_col(py, &t.nr)?,
            "size" => int_col(py, &t.size)?,
            "request" => int_col(py, &t.request)?,
            "length" => int_col(py, &t.length)?,
            "op" => text_col(py, &t.op)?,
            "nattr" => int_col(py, &t.nattr)?,
            _ => text_col(py, &t.attr_shape)?,
        };
        d.set_item(name, col)?;
    }
    Ok(d)
}

/// The perfetto sink's columns ([`CallTable`]) by name, the created fds as
/// `created`: [(row, fd, path or None)], the buffer handles as `handles`:
/// [(row, "create" | "export" | "free", "KFD" | "GEM", handle)].
pub fn calls_to_py<'py>(py: Python<'py>, t: &CallTable) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", t.head.rows)?;
    for (name, col) in [
        ("file", &t.head.file),
        ("event", &t.head.event),
        ("name", &t.head.name),
        ("ioctl", &t.ioctl),
        ("err", &t.head.err),
        ("path", &t.path),
        ("text", &t.text),
    ] {
        d.set_item(name, text_col(py, col)?)?;
    }
    for (name, col) in [
        ("line", &t.head.line),
        ("pid", &t.head.pid),
        ("tid", &t.head.tid),
        ("ret", &t.head.ret),
        ("fd", &t.head.fd),
        ("whole", &t.whole),
    ] {
        d.set_item(name, int_col(py, col)?)?;
    }
    d.set_item("time", float_col(py, &t.head.time)?)?;
    d.set_item("dur", float_col(py, &t.head.dur)?)?;
    let created = PyList::empty(py);
    for (row, fd, path) in &t.created {
        let p = match path {
            Some(b) => text_to_py(py, b)?,
            None => py.None().into_bound(py),
        };
        created.append((row, fd, p))?;
    }
    d.set_item("created", created)?;
    let handles = PyList::empty(py);
    for (row, op, family, h) in &t.handles {
        handles.append((row, op.as_str(), family.as_str(), h))?;
    }
    d.set_item("handles", handles)?;
    Ok(d)
}

/// `table_of_events(events) -> columns`: the table of Python events (the
/// equality test against tables.events_frame).
#[pyfunction]
pub fn table_of_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut files = Files::default();
    let mut evs = Vec::new();
    for ev in events.try_iter()? {
        evs.push(event_from_py(&ev?, &mut files)?);
    }
    let mut t = EventTable::default();
    t.extend(&evs, |id| files.name(id));
    table_to_py(py, &t)
}
