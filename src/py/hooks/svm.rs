//! The SVM model fed Python events one at a time (the model tests and the
//! SVM benchmark).

use crate::events::{FileId, Text};
use crate::models::svm::{Options, SvmModel};
use crate::py::convert::{Files, event_from_py, finding_to_py};
use crate::py::svm::history_to_py;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// `run_svm_model(events, watch_addr=None, xnack=None, clean_start=True)
/// -> (findings, limits, history, counts)`: the events (rocrtrace.events
/// objects, in completion order) through the Rust SvmModel.  `watch_addr`
/// is SvmModel's `watch`: (start, end[, pid]) in bytes.  `history` rows are
/// (event, what, state) as SvmModel.history has them; `counts` its counts.
#[pyfunction]
#[pyo3(signature = (events, watch_addr=None, xnack=None, clean_start=true))]
pub fn run_svm_model<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    watch_addr: Option<&Bound<'py, PyAny>>,
    xnack: Option<bool>,
    clean_start: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut opts = Options {
        xnack,
        clean_start,
        ..Options::default()
    };
    if let Some(w) = watch_addr.filter(|w| !w.is_none()) {
        let items: Vec<Bound<'py, PyAny>> = w.try_iter()?.collect::<PyResult<_>>()?;
        let start: u128 = items[0].extract()?;
        let end: u128 = items[1].extract()?;
        opts.watch = Some((start, end));
        if let Some(pid) = items.get(2).filter(|p| !p.is_none()) {
            opts.watch_pid = Some(Some(pid.extract()?));
        }
    }
    let mut model = SvmModel::new(opts);
    let mut files = Files::default();
    let mut names: Vec<Text> = Vec::new();
    for ev in events.try_iter()? {
        let ev = std::rc::Rc::new(event_from_py(&ev?, &mut files)?);
        let id = ev.h.file.0 as usize;
        while names.len() <= id {
            names.push(Text::from(files.name(FileId(names.len() as u32))));
        }
        model.feed_shared(&ev);
    }
    model.set_files(names);
    model.finish();
    let findings = PyList::empty(py);
    for f in &model.findings {
        findings.append(finding_to_py(py, f, &files)?)?;
    }
    let limits = PyList::new(py, model.limits().iter().map(|s| PyString::new(py, s)))?;
    let history = history_to_py(py, model.history(), &files)?;
    let c = model.counts();
    let counts = PyDict::new(py);
    counts.set_item("set_attr", c.set_attr)?;
    counts.set_item("get_attr", c.get_attr)?;
    counts.set_item("claims", c.claims)?;
    PyTuple::new(
        py,
        [
            findings.into_any(),
            limits.into_any(),
            history.into_any(),
            counts.into_any(),
        ],
    )
}

/// `time_svm_model(events, repeat=1) -> (seconds, findings)`: the Rust
/// SvmModel over the events `repeat` times (converted once, before the
/// clock starts); seconds is the wall time of the model runs, for
/// benchmarks/bench_svm.py (which also takes the thread's CPU time
/// around the call, a fairer clock on a loaded machine).
#[pyfunction]
#[pyo3(signature = (events, repeat=1))]
pub fn time_svm_model<'py>(events: &Bound<'py, PyAny>, repeat: usize) -> PyResult<(f64, usize)> {
    let mut files = Files::default();
    let evs: Vec<std::rc::Rc<crate::events::Event>> = events
        .try_iter()?
        .map(|e| event_from_py(&e?, &mut files).map(std::rc::Rc::new))
        .collect::<PyResult<_>>()?;
    let t = std::time::Instant::now();
    let mut found = 0;
    for _ in 0..repeat {
        let mut model = SvmModel::new(Options {
            clean_start: true,
            ..Options::default()
        });
        for ev in &evs {
            model.feed_shared(ev);
        }
        model.finish();
        found = model.findings.len();
    }
    Ok((t.elapsed().as_secs_f64(), found))
}
