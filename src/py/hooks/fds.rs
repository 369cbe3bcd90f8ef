//! `_engine.run_fd_models`: the compiled fd, handle and dma-buf models on
//! Python events (a constructed sequence through the models at once),
//! `_engine.FdModels`, the same models fed one event at a time and read
//! between events (the model tests), and `_engine.time_fd_models`, their
//! speed without the conversions.

use crate::events::{Event, FileId};
use crate::findings::{Finding, fold_programs};
use crate::models::common::{Ev, Names};
use crate::models::fds::{FdModel, Pid, Slot};
use crate::models::handles::{HandleModel, Options};
use crate::py::convert::{Files, event_from_py, event_to_py, finding_to_py, text_to_py};
use crate::replay::Programs;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::rc::Rc;

/// The models `run_fd_models` feeds: an fd model, with the handle model on
/// top unless `handles` is false; with the programs the trace runs, whose
/// repeats across processes fold as analyze folds them.
struct Models {
    m: Stack,
    programs: Programs,
}

enum Stack {
    Fds(Box<FdModel>),
    Handles(Box<HandleModel>),
}

impl Models {
    fn new(watch: Option<(Pid, i64)>, all_fds: bool, handles: bool, o: Options) -> Self {
        let fds = FdModel::new(watch, all_fds, Names::new(Vec::new()));
        let m = if handles {
            Stack::Handles(Box::new(HandleModel::new(fds, o)))
        } else {
            Stack::Fds(Box::new(fds))
        };
        Models {
            m,
            programs: Programs::default(),
        }
    }

    fn fds(&self) -> &FdModel {
        match &self.m {
            Stack::Fds(f) => f,
            Stack::Handles(h) => &h.fds,
        }
    }

    fn feed(&mut self, ev: &Ev) {
        match &mut self.m {
            Stack::Fds(f) => f.feed_rc(ev, &mut crate::models::fds::NoListener),
            Stack::Handles(h) => h.feed_rc(ev),
        }
        self.programs.feed(ev);
    }

    fn finish(&mut self) {
        match &mut self.m {
            Stack::Fds(f) => f.finish(),
            Stack::Handles(h) => h.finish(),
        }
    }

    /// The fd model's findings so far, folded as analyze folds them.
    fn fd_findings(&self) -> Vec<Finding> {
        let all = self.fds().findings().cloned().collect();
        fold_programs(all, |pid| self.programs.of(pid))
    }

    /// The handle and dma-buf models' findings so far, the same.
    fn handle_findings(&self) -> Vec<Finding> {
        let all = match &self.m {
            Stack::Fds(_) => Vec::new(),
            Stack::Handles(h) => h.findings().to_vec(),
        };
        fold_programs(all, |pid| self.programs.of(pid))
    }

    /// (the fd model's findings, the handle model's); their rules differ,
    /// so folding each list is folding both as analyze does
    fn take(&mut self) -> (Vec<Finding>, Vec<Finding>) {
        let (fds, handles) = match &mut self.m {
            Stack::Fds(f) => (f.take_findings(), Vec::new()),
            Stack::Handles(h) => (h.fds.take_findings(), h.take_findings()),
        };
        let of = |pid| self.programs.of(pid);
        (fold_programs(fds, of), fold_programs(handles, of))
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

/// `FdModels(watch_fd=None, all_fds=False, handles=True, reexport_threshold=3,
/// held_allocs=8, held_seconds=10.0, peak_min=32)`: the models of
/// `run_fd_models` fed one Python event at a time, so that the model tests
/// (tests/test_model_fds.py, test_model_handles.py) can read findings,
/// history and an fd number's occupant (`lookup`) between events.
#[pyclass(unsendable)]
pub struct FdModels {
    m: Models,
    files: Files,
}

#[pymethods]
impl FdModels {
    #[new]
    #[pyo3(signature = (watch_fd=None, all_fds=false, handles=true, reexport_threshold=3,
                        held_allocs=8, held_seconds=10.0, peak_min=32))]
    fn new(
        watch_fd: Option<(Option<u32>, i64)>,
        all_fds: bool,
        handles: bool,
        reexport_threshold: u64,
        held_allocs: i64,
        held_seconds: f64,
        peak_min: u64,
    ) -> Self {
        let o = options(reexport_threshold, held_allocs, held_seconds, peak_min);
        FdModels {
            m: Models::new(watch_fd, all_fds, handles, o),
            files: Files::default(),
        }
    }

    /// Feed one event (a rocrtrace event object).
    fn feed(&mut self, ev: &Bound<'_, PyAny>) -> PyResult<()> {
        let ev = event_from_py(ev, &mut self.files)?;
        sync_names(self.m.fds().names(), &self.files, ev.h.file);
        self.m.feed(&Rc::new(ev));
        Ok(())
    }

    /// End of the trace: what is still open is judged (leaks, held fds).
    fn finish(&mut self) {
        self.m.finish();
    }

    /// The fd model's findings so far.
    #[getter]
    fn findings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        findings_to_py(py, self.m.fd_findings().iter(), &self.files)
    }

    /// The handle and dma-buf models' findings so far (none without `handles`).
    #[getter]
    fn handle_findings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        findings_to_py(py, self.m.handle_findings().iter(), &self.files)
    }

    /// The watched fd's history rows, (event, what, state).
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (ev, what, state) in self.m.fds().history() {
            let row = (event_to_py(py, ev, &self.files)?, what, state.as_deref());
            out.append(row.into_pyobject(py)?)?;
        }
        Ok(out)
    }

    /// lookup(pid, fd) -> the number's current occupant as a dict (fd,
    /// generation, kind, origin, creator, root, root_origin, ofd, cloexec,
    /// path, gpu, last_use, uses, exported, prev), or None when it is free.
    /// `prev` is the number's previous occupant: {how, event, flagged, slot}
    /// with `slot` the same dict (its own `prev` None: never a chain).
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        pid: Option<u32>,
        fd: i64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.m
            .fds()
            .lookup(pid, fd)
            .map(|s| slot_to_py(py, s, &self.files, true))
            .transpose()
    }
}

fn findings_to_py<'a, 'py>(
    py: Python<'py>,
    fs: impl Iterator<Item = &'a Finding>,
    files: &Files,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for f in fs {
        out.append(finding_to_py(py, f, files)?)?;
    }
    Ok(out)
}

fn opt_event_to_py<'py>(
    py: Python<'py>,
    ev: Option<&Ev>,
    files: &Files,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    ev.map(|e| event_to_py(py, e, files)).transpose()
}

fn slot_to_py<'py>(
    py: Python<'py>,
    s: &Slot,
    files: &Files,
    with_prev: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("fd", s.fd)?;
    d.set_item("generation", s.generation)?;
    d.set_item("kind", s.kind.as_str())?;
    d.set_item("origin", &*s.origin)?;
    d.set_item("creator", opt_event_to_py(py, s.creator.as_ref(), files)?)?;
    d.set_item("root", opt_event_to_py(py, s.root.as_ref(), files)?)?;
    d.set_item("root_origin", &*s.root_origin)?;
    d.set_item("ofd", s.ofd)?;
    d.set_item("cloexec", s.cloexec)?;
    let path = s.path.as_ref().map(|p| text_to_py(py, &p.0)).transpose()?;
    d.set_item("path", path)?;
    d.set_item("gpu", s.gpu)?;
    d.set_item("last_use", opt_event_to_py(py, s.last_use.as_ref(), files)?)?;
    d.set_item("uses", s.uses)?;
    d.set_item("exported", s.exported())?;
    let prev = match (&s.prev, with_prev) {
        (Some(c), true) => {
            let c = c.borrow();
            let p = PyDict::new(py);
            p.set_item("how", c.how.as_str())?;
            p.set_item("event", opt_event_to_py(py, c.event.as_ref(), files)?)?;
            p.set_item("flagged", c.flagged)?;
            p.set_item("slot", slot_to_py(py, &c.slot, files, false)?)?;
            Some(p)
        }
        _ => None,
    };
    d.set_item("prev", prev)?;
    Ok(d)
}
