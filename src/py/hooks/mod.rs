//! Entry points for the tests and benchmarks only, built with the `hooks`
//! feature (.ci/run and developer builds add it; the package leaves it
//! out): the fd, handle and SVM models and the readers and parsers fed from
//! Python, and the event conversions' round trip.

pub mod fds;
pub mod parse;
pub mod read;
pub mod svm;

use crate::py::convert::{Files, event_from_py, event_to_py};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// `roundtrip_events(events) -> events`: Python events through their Rust
/// form and back (the conversions' own test).
#[pyfunction]
pub fn roundtrip_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let mut files = Files::default();
    let out = PyList::empty(py);
    for ev in events.try_iter()? {
        let r = event_from_py(&ev?, &mut files)?;
        out.append(event_to_py(py, &r, &files)?)?;
    }
    Ok(out)
}
