//! `_engine.run_fd_models`: the compiled fd, handle and dma-buf models on
//! Python events (the equality tests' entry, and `rocrtrace show --fd`'s
//! history rows), and `_engine.time_fd_models`, their speed without the
//! conversions.

use crate::events::{Event, FileId};
use crate::findings::Finding;
use crate::models::common::{Ev, Names};
use crate::models::fds::{FdModel, Pid};
use crate::models::handles::{HandleModel, Options};
use crate::py::convert::{Files, event_from_py, event_to_py, finding_to_py};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::rc::Rc;

/// The models `build_models` makes: an fd model, with the handle model on
/// top unless `handles` is false.
enum Models {
    Fds(Box<FdModel>),
    Handles(Box<HandleModel>),
}

impl Models {
    fn new(watch: Option<(Pid, i64)>, all_fds: bool, handles: bool, o: Options) -> Self {
        let fds = FdModel::new(watch, all_fds, Names::new(Vec::new()));
        if handles {
            Models::Handles(Box::new(HandleModel::new(fds, o)))
        } else {
            Models::Fds(Box::new(fds))
        }
    }

    fn fds(&self) -> &FdModel {
        match self {
            Models::Fds(f) => f,
            Models::Handles(h) => &h.fds,
        }
    }

    fn feed(&mut self, ev: &Ev) {
        match self {
            Models::Fds(f) => f.feed_rc(ev, &mut crate::models::fds::NoListener),
            Models::Handles(h) => h.feed_rc(ev),
        }
    }

    fn finish(&mut self) {
        match self {
            Models::Fds(f) => f.finish(),
            Models::Handles(h) => h.finish(),
        }
    }

    /// (the fd model's findings, the handle model's)
    fn take(&mut self) -> (Vec<Finding>, Vec<Finding>) {
        match self {
            Models::Fds(f) => (f.take_findings(), Vec::new()),
            Models::Handles(h) => (h.fds.take_findings(), h.take_findings()),
        }
    }
}

/// Names of the files seen so far, for the messages.
fn sync_names(names: &Names, files: &Files, id: FileId) {
    while names.len() <= id.0 as usize {
        let n = FileId(names.len() as u32);
        names.push(String::from_utf8_lossy(files.name(n)).into_owned());
    }
}

fn options(reexport_threshold: u64, held_allocs: i64, held_seconds: f64, peak_min: u64) -> Options {
    Options {
        reexport_threshold,
        held_allocs,
        held_seconds,
        peak_min,
    }
}

/// run_fd_models(events, watch_fd=None, all_fds=False, handles=True, finish=True, ...)
///     -> (fd findings, handle findings, history rows)
///
/// `watch_fd`: (pid or None, fd), as `rocrtrace show --fd`; history rows are
/// (event, what, state) as FdModel.history holds them.
#[pyfunction]
#[pyo3(signature = (events, watch_fd=None, all_fds=false, handles=true, finish=true,
                    reexport_threshold=3, held_allocs=8, held_seconds=10.0, peak_min=32))]
#[allow(clippy::too_many_arguments)]
pub fn run_fd_models<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    watch_fd: Option<(Option<u32>, i64)>,
    all_fds: bool,
    handles: bool,
    finish: bool,
    reexport_threshold: u64,
    held_allocs: i64,
    held_seconds: f64,
    peak_min: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let o = options(reexport_threshold, held_allocs, held_seconds, peak_min);
    let mut m = Models::new(watch_fd, all_fds, handles, o);
    let names = m.fds().names().clone();
    let mut files = Files::default();
    for ev in events.try_iter()? {
        let ev = event_from_py(&ev?, &mut files)?;
        sync_names(&names, &files, ev.h.file);
        m.feed(&Rc::new(ev));
    }
    if finish {
        m.finish();
    }
    let history = PyList::empty(py);
    for (ev, what, state) in m.fds().history() {
        let row = (event_to_py(py, ev, &files)?, what, state.as_deref());
        history.append(row.into_pyobject(py)?)?;
    }
    let (ff, hf) = m.take();
    let conv = |fs: Vec<Finding>| -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for f in &fs {
            out.append(finding_to_py(py, f, &files)?)?;
        }
        Ok(out)
    };
    (conv(ff)?, conv(hf)?, history).into_pyobject(py)
}

/// time_fd_models(events, repeat=1) -> (events fed, seconds by reference, seconds shared, findings)
///
/// The events are converted first; the times are the models' alone (fd and
/// handle models, as `analyze` stacks them), the best of `repeat` runs:
/// fed by reference (`feed(&Event)`, each event copied where the models keep
/// it) and already shared (`feed_rc`, as a pipeline that hands out
/// `Rc<Event>` would).
#[pyfunction]
#[pyo3(signature = (events, repeat=1))]
pub fn time_fd_models(
    events: &Bound<'_, PyAny>,
    repeat: u32,
) -> PyResult<(usize, f64, f64, usize)> {
    let mut files = Files::default();
    let mut evs: Vec<Event> = Vec::new();
    for ev in events.try_iter()? {
        evs.push(event_from_py(&ev?, &mut files)?);
    }
    let shared: Vec<Ev> = evs.iter().cloned().map(Rc::new).collect();
    let names = || {
        let n = Names::new(Vec::new());
        let max = evs.iter().map(|e| e.h.file.0).max().unwrap_or(0);
        sync_names(&n, &files, FileId(max));
        n
    };
    let (mut by_ref, mut by_rc, mut found) = (f64::INFINITY, f64::INFINITY, 0);
    for _ in 0..repeat.max(1) {
        let fds = FdModel::new(None, false, names());
        let t0 = std::time::Instant::now();
        let mut hm = HandleModel::new(fds, Options::default());
        for ev in &evs {
            hm.feed(ev);
        }
        hm.finish();
        by_ref = by_ref.min(t0.elapsed().as_secs_f64());
        found = hm.fds.findings().count() + hm.findings().len();
        let fds = FdModel::new(None, false, names());
        let t0 = std::time::Instant::now();
        let mut hm = HandleModel::new(fds, Options::default());
        for ev in &shared {
            hm.feed_rc(ev);
        }
        hm.finish();
        by_rc = by_rc.min(t0.elapsed().as_secs_f64());
    }
    Ok((evs.len(), by_ref, by_rc, found))
}
