//! `analyze`, `events_table` and `history`: the whole engine behind three
//! calls (rocrtrace/engine.py is their Python side).  The work runs without
//! the GIL, several traces on threads of their own; only what the front
//! reports crosses over: findings (their evidence events), inputs, limits,
//! facts, programs, module maps, the event table's columns.

use super::convert::{EventCache, Files, event_to_py, finding_to_py_shared, text_to_py};
use super::read::{ReadError, info_to_py};
use super::table::{calls_to_py, table_to_py};
use crate::analyze::{self as engine, Options, TraceOut};
use crate::events::{Event, InputInfo, Text};
use crate::findings::Finding;
use crate::read::InputError;
use crate::replay::{Facts, Programs};
use crate::table::{CallTable, EventTable};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The prefix of the limits entry that says which registration behaviour
/// the trace shows (coverage.py reads it).
const SVM_RUNTIME: &str = "SVM runtime: ";

/// What one trace's analysis hands to Python (no Rc: it crosses threads).
struct Report {
    paths: Vec<String>,
    infos: Vec<InputInfo>,
    findings: Vec<Finding>,
    limits: Vec<&'static str>,
    behaviour: Option<String>,
    facts: Facts,
    programs: Programs,
    maps: Vec<Event>,
    table: Option<EventTable>,
    chunks: u64,
    /// files of the argument skipped as not traces (on its first report)
    skipped: Vec<String>,
}

impl From<TraceOut> for Report {
    fn from(t: TraceOut) -> Self {
        Report {
            paths: t.paths,
            infos: t.infos,
            findings: t.findings,
            limits: t.limits,
            behaviour: t.behaviour,
            facts: t.facts,
            programs: t.programs,
            maps: t.maps,
            table: t.table,
            chunks: t.chunks,
            skipped: Vec::new(),
        }
    }
}

fn input_err(e: InputError) -> PyErr {
    ReadError::new_err(e.0)
}

/// One TRACE argument run by run (runs kept apart): a report per
/// run, or the error of a run or of the argument; the skipped files go on
/// the first report.
fn apart(
    p: &str,
    o: &Options,
    on_event: Option<engine::OnEvent<'_>>,
) -> Vec<Result<Report, InputError>> {
    match engine::run_apart(p, o, on_event) {
        Err(e) => vec![Err(e)],
        Ok(out) => reports_of(out),
    }
}

/// A unit of the arguments ([`units`]): one argument run by run, or the
/// files several arguments name one by one, grouped into their runs.
fn apart_unit(
    unit: &[String],
    o: &Options,
    on_event: Option<engine::OnEvent<'_>>,
) -> Vec<Result<Report, InputError>> {
    match unit {
        [one] => apart(one, o, on_event),
        many => reports_of(engine::run_named(many, o, on_event)),
    }
}

/// The TRACE arguments as units of analysis: each argument, except that
/// arguments naming the files of one run one by one (PREFIX.N, as a shell
/// expands `trace.log.*`) are one unit, as the glob would be.
fn units(paths: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for p in paths {
        match crate::read::open::named_run_key(p) {
            Some(k) => match at.get(&k) {
                Some(&i) => out[i].push(p.clone()),
                None => {
                    at.insert(k, out.len());
                    out.push(vec![p.clone()]);
                }
            },
            None => out.push(vec![p.clone()]),
        }
    }
    out
}

/// Each run's report (the skipped files go on the first one), or its error.
fn reports_of(out: engine::RunsOut) -> Vec<Result<Report, InputError>> {
    let mut skipped: Vec<String> = out.skipped.into_iter().map(|e| e.0).collect();
    out.runs
        .into_iter()
        .map(|r| {
            r.map(|t| {
                let mut rep = Report::from(t);
                rep.skipped = std::mem::take(&mut skipped);
                rep
            })
        })
        .collect()
}

/// A run that could not be read, in the reports' place: `{"error": message}`.
fn error_dict(py: Python<'_>, e: InputError) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("error", e.0)?;
    Ok(d)
}

/// The reports into a Python list: an error raises ReadError, or with
/// `keep_going` becomes `{"error": message}` in its place (the CLI reports
/// the others, then the errors, and exits 2).
fn reports_to_py<'py>(
    py: Python<'py>,
    results: Vec<Result<Report, InputError>>,
    keep_going: bool,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok(rep) => out.append(report_to_py(py, &rep)?)?,
            Err(e) if keep_going => out.append(error_dict(py, e)?)?,
            Err(e) => return Err(input_err(e)),
        }
    }
    Ok(out)
}

/// Each trace on its own thread, at most `jobs` at once, results in
/// argument order (stable reports); one trace: its file parsed in chunks
/// on `jobs` threads.
fn run_all(paths: &[String], o: &Options) -> Vec<Result<Report, InputError>> {
    let units = units(paths);
    let paths = &units[..];
    let jobs = o.jobs;
    if jobs <= 1 || paths.len() <= 1 {
        return paths.iter().flat_map(|p| apart_unit(p, o, None)).collect();
    }
    // the traces are the parallel work: none of them is chunked as well
    let o = &Options {
        jobs: 1,
        ..o.clone()
    };
    let mut out: Vec<Option<Vec<Result<Report, InputError>>>> =
        (0..paths.len()).map(|_| None).collect();
    for (batch_no, batch) in paths.chunks(jobs).enumerate() {
        std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .iter()
                .map(|p| s.spawn(move || apart_unit(p, o, None)))
                .collect();
            for (i, h) in handles.into_iter().enumerate() {
                let r = h
                    .join()
                    .unwrap_or_else(|_| vec![Err(InputError("analysis thread panicked".into()))]);
                out[batch_no * jobs + i] = Some(r);
            }
        });
    }
    out.into_iter()
        .flat_map(|r| r.expect("every trace ran"))
        .collect()
}

fn report_to_py<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let files = Files::new(r.paths.iter().map(|p| Text::from(p.as_str())));
    let d = PyDict::new(py);
    let infos = PyList::empty(py);
    for i in &r.infos {
        infos.append(info_to_py(py, i)?)?;
    }
    d.set_item("inputs", infos)?;
    let found = PyList::empty(py);
    let mut shared = EventCache::new();
    for f in &r.findings {
        found.append(finding_to_py_shared(py, f, &files, &mut shared)?)?;
    }
    d.set_item("findings", found)?;
    d.set_item("limits", PyList::new(py, &r.limits)?)?;
    // what the coverage section shows of the runtime's behaviour
    let runtime = PyList::empty(py);
    if let Some(b) = &r.behaviour {
        runtime.append(format!("{SVM_RUNTIME}{b}"))?;
    }
    d.set_item("svm_runtime", runtime)?;
    d.set_item("facts", (r.facts.svm_ioctls, r.facts.gpu_calls))?;
    let exe = PyDict::new(py);
    for (pid, path) in r.programs.exes() {
        exe.set_item(pid, text_to_py(py, &path.0)?)?;
    }
    d.set_item("exe", exe)?;
    let maps = PyList::empty(py);
    for m in &r.maps {
        maps.append(event_to_py(py, m, &files)?)?;
    }
    d.set_item("maps", maps)?;
    if let Some(t) = &r.table {
        d.set_item("table", table_to_py(py, t)?)?;
    }
    d.set_item("chunks", r.chunks)?;
    d.set_item("skipped", PyList::new(py, &r.skipped)?)?;
    Ok(d)
}

/// The engine's options from a binding's arguments; `chunking=(lines per
/// chunk, smaller files not chunked)`: tests cut anywhere.
fn options(
    input_format: Option<String>,
    max_line: usize,
    all_fds: bool,
    table: bool,
    jobs: usize,
    chunking: Option<(usize, u64)>,
) -> Options {
    let mut o = Options {
        input_format,
        max_line,
        all_fds,
        table,
        jobs,
        ..Options::default()
    };
    if let Some((lines, min_bytes)) = chunking {
        o.batch_lines = lines.max(1);
        o.min_bytes = min_bytes;
    }
    o
}

/// Events between two calls of the progress callback.
const PROGRESS_EVERY: u64 = 1 << 16;

/// The traces one after the other, telling `progress.advance(n, file,
/// line)` every [`PROGRESS_EVERY`] events (the CLI's progress bar); each
/// file parsed in chunks on `jobs` threads.
fn run_with_progress(
    paths: &[String],
    o: &Options,
    progress: &Py<PyAny>,
) -> Vec<Result<Report, InputError>> {
    units(paths)
        .iter()
        .flat_map(|p| {
            let mut n = 0u64;
            let mut tick = |ev: &Event, files: &[String]| {
                n += 1;
                if n.is_multiple_of(PROGRESS_EVERY) {
                    let file = &files[ev.h.file.0 as usize];
                    // a failing progress bar must not fail the analysis
                    let _ = Python::attach(|py| {
                        progress.call_method1(py, "advance", (PROGRESS_EVERY, file, ev.h.line))
                    });
                }
            };
            apart_unit(p, o, Some(&mut tick))
        })
        .collect()
}

/// analyze(paths, input_format=None, max_line=1 MiB, all_fds=False,
/// table=False, jobs=1, progress=None, chunking=None) -> [per trace:
/// {inputs, findings, limits, facts, exe, maps, chunks[, table]}]; an input
/// error raises ReadError.  jobs > 1: several traces on threads of their
/// own, or one trace's file in chunks on that many threads.
#[pyfunction]
#[pyo3(signature = (paths, input_format=None, max_line=engine::MAX_LINE, all_fds=false,
                    table=false, jobs=1, progress=None, chunking=None, keep_going=false))]
#[allow(clippy::too_many_arguments)]
pub fn analyze<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    input_format: Option<String>,
    max_line: usize,
    all_fds: bool,
    table: bool,
    jobs: usize,
    progress: Option<Py<PyAny>>,
    chunking: Option<(usize, u64)>,
    keep_going: bool,
) -> PyResult<Bound<'py, PyList>> {
    let o = options(input_format, max_line, all_fds, table, jobs, chunking);
    let results = py.detach(|| match &progress {
        Some(bar) => run_with_progress(&paths, &o, bar),
        None => run_all(&paths, &o),
    });
    reports_to_py(py, results, keep_going)
}

/// analyze_events(path, on_event, ..., jobs=1, chunking=None) -> the same
/// as analyze for one trace (its report; a list of reports when its files
/// are several runs), calling on_event(ev) with every event as a
/// Python record (the slow path, for an API caller's callable; the perfetto
/// report takes columns from analyze_calls).
#[pyfunction]
#[pyo3(signature = (path, on_event, input_format=None, max_line=engine::MAX_LINE,
                    all_fds=false, table=false, jobs=1, chunking=None))]
#[allow(clippy::too_many_arguments)]
pub fn analyze_events<'py>(
    py: Python<'py>,
    path: String,
    on_event: Bound<'py, PyAny>,
    input_format: Option<String>,
    max_line: usize,
    all_fds: bool,
    table: bool,
    jobs: usize,
    chunking: Option<(usize, u64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let o = options(input_format, max_line, all_fds, table, jobs, chunking);
    let mut failed: Option<PyErr> = None;
    let mut files = Files::default();
    let mut cb = |ev: &Event, paths: &[String]| {
        if failed.is_some() {
            return;
        }
        if files.len() < paths.len() {
            files = Files::new(paths.iter().map(|p| Text::from(p.as_str())));
        }
        let r = event_to_py(py, ev, &files).and_then(|e| on_event.call1((e,)));
        if let Err(e) = r {
            failed = Some(e);
        }
    };
    let mut reps = apart(&path, &o, Some(&mut cb));
    if let Some(e) = failed {
        return Err(e);
    }
    if reps.len() == 1 {
        let rep = reps.pop().expect("one report");
        return Ok(report_to_py(py, &rep.map_err(input_err)?)?.into_any());
    }
    // several runs (kept apart): their reports
    Ok(reports_to_py(py, reps, false)?.into_any())
}

/// analyze_calls(paths, ...) -> the same as analyze, each trace's report
/// with `calls`: the columns the perfetto report draws (a CallTable), built
/// in the core while the trace replays (no Python object per event).
#[pyfunction]
#[pyo3(signature = (paths, input_format=None, max_line=engine::MAX_LINE, all_fds=false,
                    table=false, jobs=1, chunking=None, keep_going=false))]
#[allow(clippy::too_many_arguments)]
pub fn analyze_calls<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    input_format: Option<String>,
    max_line: usize,
    all_fds: bool,
    table: bool,
    jobs: usize,
    chunking: Option<(usize, u64)>,
    keep_going: bool,
) -> PyResult<Bound<'py, PyList>> {
    let o = options(input_format, max_line, all_fds, table, jobs, chunking);
    let results: Vec<Result<(Report, CallTable), InputError>> = py.detach(|| {
        let mut out = Vec::new();
        for p in &paths {
            let runs = match crate::parse::detect::open_runs(p, o.input_format.as_deref()) {
                Ok(r) => r,
                Err(e) => {
                    out.push(Err(e));
                    continue;
                }
            };
            let mut skipped: Vec<String> = runs.skipped.into_iter().map(|e| e.0).collect();
            for files in runs.runs {
                let mut calls = CallTable::default();
                let mut push = |ev: &Event, files: &[String]| {
                    calls.push(ev, files[ev.h.file.0 as usize].as_bytes());
                };
                out.push(engine::run_files(p, files, &o, Some(&mut push)).map(|r| {
                    let mut rep = Report::from(r);
                    rep.skipped = std::mem::take(&mut skipped);
                    (rep, calls)
                }));
            }
        }
        out
    });
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok((rep, calls)) => {
                let d = report_to_py(py, &rep)?;
                d.set_item("calls", calls_to_py(py, &calls)?)?;
                out.append(d)?;
            }
            Err(e) if keep_going => out.append(error_dict(py, e)?)?,
            Err(e) => return Err(input_err(e)),
        }
    }
    Ok(out)
}

/// events_table(paths, input_format=None, max_line=1 MiB, jobs=1,
/// chunking=None) -> (columns of every trace's events, [InputInfo]); jobs >
/// 1: each file in chunks on that many threads.
#[pyfunction]
#[pyo3(signature = (paths, input_format=None, max_line=engine::MAX_LINE, jobs=1,
                    chunking=None))]
pub fn events_table<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    input_format: Option<String>,
    max_line: usize,
    jobs: usize,
    chunking: Option<(usize, u64)>,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>)> {
    let o = options(input_format.clone(), max_line, false, false, jobs, chunking);
    let got: Result<(EventTable, Vec<InputInfo>), InputError> = py.detach(|| {
        let mut table = EventTable::default();
        let mut infos = Vec::new();
        for p in &paths {
            // run by run: each run's events in its own order
            let runs = crate::parse::detect::open_runs(p, input_format.as_deref())?;
            for files in runs.runs {
                let names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
                let trace = o.trace(p, files);
                let shared = trace.infos.clone();
                for ev in trace.events() {
                    let ev = ev?;
                    table.push(&ev, names[ev.h.file.0 as usize].as_bytes());
                }
                infos.extend(shared.borrow().iter().cloned());
            }
        }
        Ok((table, infos))
    });
    let (table, infos) = got.map_err(input_err)?;
    let pinfos = PyList::empty(py);
    for i in &infos {
        pinfos.append(info_to_py(py, i)?)?;
    }
    Ok((table_to_py(py, &table)?, pinfos))
}

/// event_batches(paths, on_batch, input_format=None, max_line=1 MiB,
/// jobs=1, chunking=None, batch_rows=65536) -> [InputInfo]: the event table
/// of every trace as events_table gives it, handed to `on_batch(columns)`
/// every `batch_rows` rows, so `events`, `stats` and `diff` hold one batch at
/// a time, not the table.  The reading runs without the GIL; each
/// call of on_batch takes it.
#[pyfunction]
#[pyo3(signature = (paths, on_batch, input_format=None, max_line=engine::MAX_LINE, jobs=1,
                    chunking=None, batch_rows=65536))]
#[allow(clippy::too_many_arguments)]
pub fn event_batches<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    on_batch: Py<PyAny>,
    input_format: Option<String>,
    max_line: usize,
    jobs: usize,
    chunking: Option<(usize, u64)>,
    batch_rows: usize,
) -> PyResult<Bound<'py, PyList>> {
    enum Stop {
        Input(InputError),
        Py(PyErr),
    }
    let o = options(input_format.clone(), max_line, false, false, jobs, chunking);
    let batch_rows = batch_rows.max(1);
    let hand = |table: &mut EventTable| -> Result<(), Stop> {
        let t = std::mem::take(table);
        Python::attach(|py| {
            let cols = table_to_py(py, &t)?;
            on_batch.call1(py, (cols,)).map(|_| ())
        })
        .map_err(Stop::Py)
    };
    let got: Result<Vec<InputInfo>, Stop> = py.detach(|| {
        let mut table = EventTable::default();
        let mut rows = 0usize;
        let mut infos = Vec::new();
        for p in &paths {
            // run by run: each run's events in its own order
            let runs =
                crate::parse::detect::open_runs(p, input_format.as_deref()).map_err(Stop::Input)?;
            for files in runs.runs {
                let names: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
                let trace = o.trace(p, files);
                let shared = trace.infos.clone();
                for ev in trace.events() {
                    let ev = ev.map_err(Stop::Input)?;
                    table.push(&ev, names[ev.h.file.0 as usize].as_bytes());
                    rows += 1;
                    if rows == batch_rows {
                        hand(&mut table)?;
                        rows = 0;
                    }
                }
                infos.extend(shared.borrow().iter().cloned());
            }
        }
        if rows > 0 {
            hand(&mut table)?;
        }
        Ok(infos)
    });
    let infos = match got {
        Ok(i) => i,
        Err(Stop::Input(e)) => return Err(input_err(e)),
        Err(Stop::Py(e)) => return Err(e),
    };
    let pinfos = PyList::empty(py);
    for i in &infos {
        pinfos.append(info_to_py(py, i)?)?;
    }
    Ok(pinfos)
}

/// history(path, input_format=None, watch_fd=None, watch_addr=None) ->
/// (rows, [InputInfo]): what the fd model (watch_fd = (pid, fd)) or the SVM
/// model (watch_addr = (start, end[, pid])) recorded, for `rocrtrace show`.
#[pyfunction]
#[pyo3(signature = (path, input_format=None, watch_fd=None, watch_addr=None))]
pub fn history<'py>(
    py: Python<'py>,
    path: String,
    input_format: Option<String>,
    watch_fd: Option<(Option<u32>, i64)>,
    watch_addr: Option<Vec<Option<u128>>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    let mut o = options(input_format, engine::MAX_LINE, false, false, 1, None);
    o.watch_fd = watch_fd;
    if let Some(w) = &watch_addr {
        let (Some(Some(s)), Some(Some(e))) = (w.first(), w.get(1)) else {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "watch_addr: (start, end[, pid])",
            ));
        };
        let pid = w.get(2).map(|p| p.map(|v| v as u32));
        o.watch_addr = Some((*s, *e, pid.filter(Option::is_some)));
    }
    // run by run: each run's history, one after the other
    let out = engine::run_apart(&path, &o, None).map_err(input_err)?;
    let rows = PyList::empty(py);
    let infos = PyList::empty(py);
    for t in out.runs {
        let t = t.map_err(input_err)?;
        let files = Files::new(t.paths.iter().map(|p| Text::from(p.as_str())));
        if watch_addr.is_some() {
            for row in super::svm::history_to_py(py, t.svm.history(), &files)?.iter() {
                rows.append(row)?;
            }
        } else {
            for (ev, what, state) in t.fds.history() {
                rows.append((event_to_py(py, ev, &files)?, what, state.as_deref()))?;
            }
        }
        for i in &t.infos {
            infos.append(info_to_py(py, i)?)?;
        }
    }
    Ok((rows, infos))
}
