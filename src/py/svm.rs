//! The SVM model's history rows as `rocrtrace show --addr` renders them.

use crate::models::svm::HistoryRow;
use crate::py::convert::{Files, event_to_py};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// SvmModel.history rows, (event, what, state), as `rocrtrace show --addr`
/// renders them.
pub fn history_to_py<'py>(
    py: Python<'py>,
    rows: &[HistoryRow],
    files: &Files,
) -> PyResult<Bound<'py, PyList>> {
    let history = PyList::empty(py);
    for row in rows {
        let state = PyDict::new(py);
        if row.pieces.is_empty() {
            state.set_item("pieces", "no SVM range")?;
        } else {
            let rows = PyList::empty(py);
            for r in &row.pieces {
                let d = PyDict::new(py);
                d.set_item("range", &r.range)?;
                match &r.access {
                    None => d.set_item("access", "default")?,
                    Some(acc) => {
                        let a = PyDict::new(py);
                        for (g, x) in acc {
                            a.set_item(g, x)?;
                        }
                        d.set_item("access", a)?;
                    }
                }
                d.set_item("flags", &r.flags)?;
                d.set_item("flags_clear", &r.flags_clear)?;
                d.set_item("preferred", r.preferred.as_deref())?;
                d.set_item("prefetch", r.prefetch.as_deref())?;
                d.set_item("granularity", r.granularity)?;
                rows.append(d)?;
            }
            state.set_item("pieces", rows)?;
        }
        if row.claims.is_empty() {
            state.set_item("claims", "none")?;
        } else {
            state.set_item("claims", PyList::new(py, &row.claims)?)?;
        }
        let ev = event_to_py(py, &row.event, files)?;
        history.append(PyTuple::new(
            py,
            [
                ev,
                PyString::new(py, &row.what).into_any(),
                state.into_any(),
            ],
        )?)?;
    }
    Ok(history)
}
