//! One trace through the whole engine: read its files, parse each in its
//! dialect, replay the merged stream through the models in order (fds with
//! handles, then SVM), and collect what the front needs to report: findings,
//! the inputs' accounting, the models' limits, the trace facts, the programs
//! and the module maps the symbolizer reads.

use crate::events::{Event, InputInfo, Kind, Text};
use crate::findings::{Finding, fold_programs};
use crate::models::common::Names;
use crate::models::fds::FdModel;
use crate::models::handles::{HandleModel, Options as HandleOptions};
use crate::models::svm::{Options as SvmOptions, SvmModel};
use crate::parse::Builtin;
use crate::parse::detect::{open_files, open_named, open_runs};
use crate::parse::trace::Trace;
use crate::read::InputError;
use crate::read::evidence::{self, Origin};
use crate::read::open::Runs;
use crate::replay::{Facts, Programs};
use crate::table::EventTable;
use std::rc::Rc;

/// The longest line read: longer lines are skipped and counted.
pub const MAX_LINE: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Options {
    pub input_format: Option<String>,
    pub max_line: usize,
    /// also report every fd still open at exit (--all-fds)
    pub all_fds: bool,
    /// `show --fd`: (pid, fd) whose history the fd model records
    pub watch_fd: Option<(Option<u32>, i64)>,
    /// `show --addr`: (start, end, pid) whose history the SVM model records
    pub watch_addr: Option<(u128, u128, Option<Option<u32>>)>,
    /// also build the event table
    pub table: bool,
    /// --jobs: threads that parse a one-file trace's chunks
    pub jobs: usize,
    /// lines per chunk (tests: cuts anywhere)
    pub batch_lines: usize,
    /// smaller files are parsed on one thread
    pub min_bytes: u64,
    /// files a merge of many holds open at once (more are merged in rounds)
    pub max_open: usize,
    /// events keep their text (a consumer of every event's text)
    pub keep_text: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            input_format: None,
            max_line: MAX_LINE,
            all_fds: false,
            watch_fd: None,
            watch_addr: None,
            table: false,
            jobs: 1,
            batch_lines: crate::read::chunked::BATCH_LINES,
            min_bytes: crate::read::chunked::MIN_BYTES,
            max_open: crate::parse::trace::open_budget(),
            keep_text: false,
        }
    }
}

impl Options {
    /// The trace of `arg`'s files, read as these options say.
    pub fn trace(&self, arg: &str, files: Vec<crate::read::open::FileSpec>) -> Trace<Builtin> {
        let mut t = Trace::new(arg, files, self.max_line, Builtin);
        t.jobs = self.jobs;
        t.batch_lines = self.batch_lines;
        t.min_bytes = self.min_bytes;
        t.max_open = self.max_open;
        t.keep_text = self.keep_text;
        t
    }
}

/// Everything the front reports about one trace.
pub struct TraceOut {
    pub paths: Vec<String>,
    pub infos: Vec<InputInfo>,
    /// the fd model's, the handle model's, then the SVM model's findings
    pub findings: Vec<Finding>,
    pub limits: Vec<&'static str>,
    /// the runtime's registration behaviour the SVM model read (coverage)
    pub behaviour: Option<String>,
    pub facts: Facts,
    pub programs: Programs,
    pub maps: Vec<Event>,
    pub table: Option<EventTable>,
    pub fds: FdModel,
    pub svm: SvmModel,
    /// chunks --jobs cut the file into (a debug stat; each pre-parsed on a
    /// worker, or on the parsing thread when the next was not ready)
    pub chunks: u64,
    /// the inputs as evidence is read back from them (by FileId)
    pub origins: Vec<Origin>,
}

/// The models in feeding order: the handle model (which feeds the fd model
/// it holds), then the SVM model.
struct Models {
    handles: HandleModel,
    svm: SvmModel,
}

/// Sees every event after the models, with the trace's file paths.
pub type OnEvent<'a> = &'a mut dyn FnMut(&Event, &[String]);

/// Analyze one TRACE argument as one run (its files merged).  `on_event`
/// sees every event after the models (the front's progress and perfetto
/// hooks).
pub fn run(arg: &str, o: &Options, on_event: Option<OnEvent<'_>>) -> Result<TraceOut, InputError> {
    let files = open_files(arg, o.input_format.as_deref())?;
    run_files(arg, files, o, on_event)
}

/// What one TRACE argument gives: each run's analysis (runs are replayed
/// apart) and the files skipped as not traces.
pub struct RunsOut {
    pub runs: Vec<Result<TraceOut, InputError>>,
    pub skipped: Vec<InputError>,
}

/// Analyze one TRACE argument run by run: its files split into runs
/// ([`open_runs`]), each replayed through models of its own, so equal pids
/// of two runs stay two processes.  Err: the argument itself cannot be
/// read (no file of it is a trace).
pub fn run_apart(
    arg: &str,
    o: &Options,
    on_event: Option<OnEvent<'_>>,
) -> Result<RunsOut, InputError> {
    let runs = open_runs(arg, o.input_format.as_deref())?;
    Ok(replay_runs(arg, runs, o, on_event))
}

/// Analyze files that several arguments name one by one, grouped into runs
/// across the arguments ([`open_named`]: a shell's expansion of
/// `trace.log.*` is one run, as the glob is); a file that cannot be read is
/// an error among the results and the others are analyzed.
pub fn run_named(paths: &[String], o: &Options, on_event: Option<OnEvent<'_>>) -> RunsOut {
    let (runs, errors) = open_named(paths.to_vec(), o.input_format.as_deref());
    let mut out = match runs {
        Some(r) => replay_runs(paths.first().map_or("", String::as_str), r, o, on_event),
        None => RunsOut {
            runs: Vec::new(),
            skipped: Vec::new(),
        },
    };
    out.runs.extend(errors.into_iter().map(Err));
    out
}

fn replay_runs(arg: &str, runs: Runs, o: &Options, mut on_event: Option<OnEvent<'_>>) -> RunsOut {
    let Runs { runs, skipped } = runs;
    let runs = runs
        .into_iter()
        .map(|files| {
            let hook: Option<OnEvent<'_>> = match on_event.as_mut() {
                Some(f) => Some(&mut **f),
                None => None,
            };
            run_files(arg, files, o, hook)
        })
        .collect();
    RunsOut { runs, skipped }
}

/// Analyze the files of one run.
pub fn run_files(
    arg: &str,
    files: Vec<crate::read::open::FileSpec>,
    o: &Options,
    mut on_event: Option<OnEvent<'_>>,
) -> Result<TraceOut, InputError> {
    let paths: Vec<String> = files.iter().map(|f| f.path.clone()).collect();
    let names = Names::new(paths.clone());
    let fds = FdModel::new(o.watch_fd, o.all_fds, names);
    // SvmModel's defaults: a trace starts with the process (clean_start)
    let mut svm_opts = SvmOptions {
        clean_start: true,
        ..SvmOptions::default()
    };
    if let Some((s, e, pid)) = o.watch_addr {
        svm_opts.watch = Some((s, e));
        svm_opts.watch_pid = pid;
    }
    let mut m = Models {
        handles: HandleModel::new(fds, HandleOptions::default()),
        svm: SvmModel::new(svm_opts),
    };
    m.svm
        .set_files(paths.iter().map(|p| Text::from(p.as_str())).collect());
    let mut programs = Programs::default();
    let mut facts = Facts::default();
    let mut maps = Vec::new();
    let mut table = o.table.then(EventTable::default);
    let origins = evidence::origins(&files);
    let trace = o.trace(arg, files);
    let infos = trace.infos.clone();
    let chunks = trace.chunks.clone();
    for ev in trace.events() {
        let ev: Rc<Event> = ev?;
        m.handles.feed_rc(&ev);
        m.svm.feed_shared(&ev);
        programs.feed(&ev);
        facts.feed(&ev);
        if let Kind::ModuleMap(_) = ev.kind {
            maps.push((*ev).clone());
        }
        if let Some(t) = table.as_mut() {
            t.push(&ev, paths[ev.h.file.0 as usize].as_bytes());
        }
        if let Some(f) = on_event.as_mut() {
            f(&ev, &paths);
        }
    }
    m.handles.finish();
    m.svm.finish();
    let mut findings = m.handles.fds.take_findings();
    findings.extend(m.handles.take_findings());
    findings.append(&mut m.svm.findings);
    // repeats across processes of one program (and the SVM model's, built
    // at its end) fold here; the models folded those within a process
    let mut findings = fold_programs(findings, |pid| programs.of(pid));
    // the texts of what the report cites, read back
    evidence::fill(
        findings.iter_mut().flat_map(|f| {
            f.event
                .iter_mut()
                .chain(f.evidence.iter_mut().map(|e| &mut e.event))
        }),
        &origins,
    );
    evidence::fill(maps.iter_mut(), &origins);
    let limits = m.svm.limits().to_vec();
    let behaviour = m.svm.behaviour();
    let infos = infos.borrow().clone();
    Ok(TraceOut {
        paths,
        infos,
        findings,
        limits,
        behaviour,
        facts,
        programs,
        maps,
        table,
        fds: m.handles.fds,
        svm: m.svm,
        chunks: chunks.get(),
        origins,
    })
}
