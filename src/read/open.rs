//! A TRACE argument -> its files, each with its format, layout and -ff tid.
//! Which dialect a line or a file is in is the dialects' business
//! (the registry in parse/mod.rs): the functions that need it take it as a [`Detect`].

use super::compress::{self, Compression};
use super::layout::{self, DETECT_PREAMBLE, Layout};
use super::lines::decode;
use super::pytext;
use super::{InputError, input_error, why};
use crate::events::Format;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Cursor, ErrorKind, Read};
use std::path::Path;

/// Detection reads at most this much of a file.
pub const DETECT_BYTES: usize = 8 << 20;
/// Detection looks at this many non-blank lines.
pub const DETECT_LINES: usize = 50;

/// What opening a file asks of the dialects.
pub trait Detect {
    /// Does this (cleaned) line belong to a dialect?
    fn is_trace(&self, line: &str) -> bool;
    /// The dialect of a file from its first lines and their layout.
    fn detect(&self, path: &str, lines: &[String], lay: &Layout) -> Result<Format, InputError>;
    /// The dialect a `--input-format` name forces.
    fn format_of(&self, name: &str) -> Option<Format>;
}
const HEAD_READ: usize = 1 << 16;
const HEAD_LONG: usize = 1 << 20;

/// One file of a TRACE: what detection found, and for a pipe, FIFO or
/// stdin the one stream there is (its head replayed in front).
pub struct FileSpec {
    pub path: String,
    pub format: Format,
    pub tid: Option<u32>,
    pub layout: Layout,
    /// `_layout_text`: "" or "indented by 4 column(s)" ...
    pub layout_text: String,
    pub stream: Option<Box<dyn Read + Send>>,
}

impl FileSpec {
    /// The decompressed bytes of the file, from its start.
    pub fn open(&mut self) -> Result<Box<dyn Read + Send>, InputError> {
        if let Some(s) = self.stream.take() {
            return Ok(s);
        }
        if is_stream(&self.path) {
            return Err(input_error(&self.path, "a pipe can be read only once"));
        }
        super::open_path(&self.path)
    }
}

fn is_file(p: &str) -> bool {
    fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// stdin, a pipe, a FIFO, /dev/fd/N: anything that cannot be opened twice
/// or seeked.
pub fn is_stream(path: &str) -> bool {
    path == "-" || !is_file(path)
}

/// os.path.join(dir, name)
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The files a TRACE argument names.
pub fn expand(arg: &str) -> Result<Vec<String>, InputError> {
    if arg == "-" {
        return Ok(vec!["-".into()]);
    }
    if fs::metadata(arg).is_ok_and(|m| m.is_dir()) {
        let rd = fs::read_dir(arg).map_err(|e| input_error(arg, &why(&e)))?;
        let mut names: Vec<String> = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| input_error(arg, &why(&e)))?;
            names.push(ent.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        let paths: Vec<String> = names
            .iter()
            .filter(|n| !n.starts_with('.'))
            .map(|n| join(arg, n))
            .filter(|p| is_file(p))
            .collect();
        if paths.is_empty() {
            return Err(input_error(arg, "empty directory"));
        }
        return Ok(paths);
    }
    if Path::new(arg).exists() {
        return Ok(vec![arg.into()]);
    }
    if arg.contains(['*', '?', '[']) {
        let mut paths: Vec<String> = super::pyglob::glob(arg)
            .into_iter()
            .filter(|p| is_file(p))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(input_error(arg, "no files match"));
        }
        return Ok(paths);
    }
    Err(input_error(arg, "no such file or directory"))
}

/// Path without a compression suffix.
fn strip_compression(path: &str) -> &str {
    for suf in [".gz", ".xz", ".bz2", ".zst"] {
        if let Some(p) = path.strip_suffix(suf) {
            return p;
        }
    }
    path
}

/// The tid an -ff file's name ends in (`\.(\d+)$`).
fn ff_tid(path: &str) -> Option<u32> {
    let p = strip_compression(path);
    let p = p.strip_suffix('\n').unwrap_or(p);
    let tail = p.len()
        - p.trim_end_matches(|c: char| pytext::digit_value(c).is_some())
            .len();
    let digits = &p[p.len() - tail..];
    if digits.is_empty() || !p[..p.len() - tail].ends_with('.') {
        return None;
    }
    pytext::int(digits).and_then(|v| u32::try_from(v).ok())
}

/// Up to `n` bytes (a pipe may return fewer per read), as Python's
/// buffered read(n) returns them.
fn read_up_to(r: &mut dyn Read, n: usize) -> io::Result<Vec<u8>> {
    let mut out = vec![0; n];
    let mut have = 0;
    while have < n {
        match r.read(&mut out[have..]) {
            Ok(0) => break,
            Ok(k) => have += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.truncate(have);
    Ok(out)
}

/// The decompressed stream of `raw`, and whether it is compressed.
fn open_kind(
    path: &str,
    mut raw: Box<dyn Read + Send>,
) -> Result<(Box<dyn Read + Send>, bool), InputError> {
    let head = compress::read_full(&mut raw, compress::MAGIC_LEN)
        .map_err(|e| input_error(path, &format!("read error: {}", why(&e))))?;
    let kind: Option<Compression> = compress::compression_of(&head);
    let r = compress::decoder(kind, head, raw).map_err(|w| input_error(path, w))?;
    Ok((r, kind.is_some()))
}

/// What `_head` read: the first lines, whether the stream ended, the bytes.
pub struct Head {
    pub lines: Vec<String>,
    pub ended: bool,
    pub data: Vec<u8>,
    /// blank lines before the first other line: neither in `lines` nor in
    /// `data`, nor counted against the detection budget (a trace after
    /// megabytes of blank lines is still detected, in bounded memory)
    pub lead_blank: u64,
}

/// The first lines of a stream for detection: until
/// DETECT_LINES lines that could be trace lines, DETECT_PREAMBLE lines or
/// DETECT_BYTES.  `first`: the size of the first read (an uncompressed
/// file's MAGIC_LEN bytes, replayed after the compression check, come back
/// as a read of their own).
pub fn head(
    path: &str,
    r: &mut dyn Read,
    first: Option<usize>,
    det: &dyn Detect,
) -> Result<Head, InputError> {
    let mut first = first;
    let mut read = |r: &mut dyn Read| {
        let n = first.take().unwrap_or(HEAD_READ);
        read_up_to(r, n).map_err(|e| input_error(path, &format!("cannot read: {}", why(&e))))
    };
    let mut data: Vec<u8> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut nonblank = 0;
    let mut ended = false;
    let mut lead_blank = 0u64;
    let mut leading = true;
    while data.len() < DETECT_BYTES {
        let part = read(r)?;
        if part.is_empty() {
            ended = true;
            break;
        }
        data.extend_from_slice(&part);
        buf.extend_from_slice(&part);
        let Some(cut) = memchr::memrchr(b'\n', &buf) else {
            if buf.len() > HEAD_LONG {
                // an over-long line: keep its head for detection
                lines.push(decode(&buf[..65536]));
                buf.clear();
                loop {
                    // skip to its end inside the detection budget
                    let part = read(r)?;
                    if part.is_empty() {
                        ended = true;
                        break;
                    }
                    data.extend_from_slice(&part);
                    if let Some(nl) = memchr::memchr(b'\n', &part) {
                        buf = part[nl + 1..].to_vec();
                        break;
                    }
                    if data.len() >= DETECT_BYTES {
                        break;
                    }
                }
                if ended {
                    break;
                }
            }
            continue;
        };
        let mut dropped = 0;
        for raw in buf[..cut].split(|&b| b == b'\n') {
            if leading
                && raw
                    .iter()
                    .all(|&c| matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c))
            {
                lead_blank += 1;
                dropped += raw.len() + 1;
                continue;
            }
            leading = false;
            let mut ln = decode(raw);
            if ln.ends_with('\r') {
                ln.pop();
            }
            let counts =
                !pytext::is_blank(&ln) && det.is_trace(ln.trim_start_matches([' ', '\t', '>']));
            if ln.len() > HEAD_LONG {
                ln = pytext::head_chars(&ln, HEAD_LONG).to_string();
            }
            lines.push(ln);
            if counts {
                nonblank += 1;
            }
        }
        buf.drain(..=cut);
        // (while leading, data starts with the blank lines just counted)
        data.drain(..dropped);
        if nonblank >= DETECT_LINES || lines.len() >= DETECT_PREAMBLE {
            break;
        }
    }
    if ended && !buf.is_empty() {
        let mut ln = decode(&buf);
        if ln.ends_with('\r') {
            ln.pop();
        }
        lines.push(ln);
    }
    Ok(Head {
        lines,
        ended,
        data,
        lead_blank,
    })
}

/// The layout as messages describe it: "quoted with '>'", "indented by N
/// column(s)", or nothing.
pub fn layout_text(lay: &Layout) -> String {
    if lay.prefix.is_empty() {
        return String::new();
    }
    if lay.quote {
        return format!("quoted with {}", py_repr(pytext::strip(&lay.prefix)));
    }
    let n = lay.prefix.chars().count();
    let tabs = lay.prefix.chars().filter(|&c| c == '\t').count();
    format!(
        "indented by {n} {}",
        if tabs == n { "tab(s)" } else { "column(s)" }
    )
}

/// repr() of a str of '>', ' ' and '\t' (what a quoting prefix holds).
fn py_repr(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// The files of one TRACE argument, detected.
/// `input_format`: None or "auto" detects; a forced format skips detection
/// only.
pub fn open_files(
    arg: &str,
    input_format: Option<&str>,
    det: &dyn Detect,
) -> Result<Vec<FileSpec>, InputError> {
    let paths = expand(arg)?;
    let forced = input_format.filter(|f| *f != "auto");
    let several = paths.len() > 1;
    let mut files = Vec::new();
    for path in paths {
        files.push(open_one(path, forced, several, det)?.0);
    }
    Ok(files)
}

/// (pid, ppid) of a preload log's `# pid=N ppid=M` header line.
fn preload_ids<S: AsRef<str>>(lines: &[S]) -> Option<(u32, u32)> {
    let line = lines
        .iter()
        .take(16)
        .map(AsRef::as_ref)
        .find(|l| l.starts_with("# pid="))?;
    let field = |key: &str| {
        line[1..]
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .and_then(|v| v.parse::<u32>().ok())
    };
    Some((field("pid=")?, field("ppid=")?))
}

/// One file of a TRACE argument, detected; `several`: the argument has
/// more than one file (an strace file's name then gives its -ff tid).
/// With it, a preload log's (pid, ppid).
fn open_one(
    path: String,
    forced: Option<&str>,
    several: bool,
    det: &dyn Detect,
) -> Result<(FileSpec, Option<(u32, u32)>), InputError> {
    let streaming = is_stream(&path);
    if !streaming && fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
        return Err(input_error(&path, "empty file"));
    }
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(io::stdin())
    } else {
        match File::open(&path) {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_dir()) => {
                return Err(input_error(&path, &why(&io::Error::from_raw_os_error(21))));
            }
            Ok(f) => Box::new(f),
            Err(e) => return Err(input_error(&path, &why(&e))),
        }
    };
    let (mut stream, compressed) = open_kind(&path, raw)?;
    let first = (!compressed).then_some(compress::MAGIC_LEN);
    let h = head(&path, stream.as_mut(), first, det)?;
    if h.data.is_empty() && h.lead_blank == 0 {
        return Err(input_error(&path, "empty"));
    }
    let mut lay = layout::layout(&h.lines, &|l| det.is_trace(l));
    let format = match forced {
        Some(f) => det.format_of(f).unwrap_or(Format::Unknown),
        None => det.detect(&path, &h.lines, &lay)?,
    };
    if h.lead_blank > 0 {
        // the skipped blank lines come before the head's lines
        lay.first += h.lead_blank;
    }
    let ids = if format == Format::Preload {
        preload_ids(&h.lines)
    } else {
        None
    };
    let lead = h.lead_blank;
    let keep: Option<Box<dyn Read + Send>> = streaming.then(|| {
        // the leading blank lines replayed as empty lines
        let blank = io::repeat(b'\n').take(lead);
        Box::new(blank.chain(Cursor::new(h.data)).chain(stream)) as Box<dyn Read + Send>
    });
    let tid = if several && format == Format::Strace {
        ff_tid(&path)
    } else {
        None
    };
    Ok((
        FileSpec {
            layout_text: layout_text(&lay),
            path,
            format,
            tid,
            layout: lay,
            stream: keep,
        },
        ids,
    ))
}

/// The runs of one TRACE argument (SPEC 2): the files of one `strace -ff`
/// run (`PREFIX.TID`) or of one capture run (`PREFIX.PID`) share their
/// PREFIX and form one run; any other file is a run of its own.  Runs are
/// replayed apart: equal pids in two runs are two processes.
pub struct Runs {
    pub runs: Vec<Vec<FileSpec>>,
    /// files a directory or glob expanded to that are not traces, skipped
    /// (a note each)
    pub skipped: Vec<InputError>,
}

/// The run a file belongs to: its PREFIX when its name ends in `.N`
/// (compression suffix aside), else the whole path (a run of its own).
fn run_key(path: &str) -> &str {
    if ff_tid(path).is_some() {
        let p = strip_compression(path);
        let p = p.trim_end_matches(|c: char| pytext::digit_value(c).is_some());
        return p.strip_suffix('.').unwrap_or(p);
    }
    path
}

/// Preload logs named otherwise than PREFIX.PID (renamed, copied) still
/// form one run when their headers chain them: a log whose ppid is the pid
/// of exactly one other log joins that log's run.  Two captures of one
/// program (equal pids) never chain: their children have two candidates.
fn join_by_parent(runs: &mut [Vec<FileSpec>], ids: &[Option<(u32, u32)>]) {
    let n = runs.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    // pid -> the logs with that pid (linear in the number of logs)
    let mut by_pid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        if let Some((pid, _)) = *id {
            by_pid.entry(pid).or_default().push(i);
        }
    }
    for (i, id) in ids.iter().enumerate() {
        let Some((pid, ppid)) = *id else { continue };
        if ppid == pid {
            continue;
        }
        // exactly one parent candidate, and no other log with this log's
        // pid (a second capture)
        let (Some([j]), Some([_])) = (
            by_pid.get(&ppid).map(Vec::as_slice),
            by_pid.get(&pid).map(Vec::as_slice),
        ) else {
            continue;
        };
        let (a, b) = (root(&mut parent, i), root(&mut parent, *j));
        parent[a.max(b)] = a.min(b);
    }
    for i in 0..n {
        let r = root(&mut parent, i);
        if r != i {
            let moved = std::mem::take(&mut runs[i]);
            runs[r].extend(moved);
        }
    }
}

/// [`open_files`] split into runs; a file a directory or glob expanded to
/// that cannot be opened or recognized is skipped (unless no file there
/// is a trace: then the first error).
pub fn open_runs(
    arg: &str,
    input_format: Option<&str>,
    det: &dyn Detect,
) -> Result<Runs, InputError> {
    let paths = expand(arg)?;
    let expanded = paths.len() > 1 || paths.first().is_some_and(|p| p != arg);
    let (runs, mut errors) = group_runs(paths, input_format, expanded, det);
    match runs {
        Some(r) if errors.is_empty() => Ok(r),
        Some(_) | None => Err(errors.swap_remove(0)),
    }
}

/// The files of several arguments that name one run file by file (a
/// shell's expansion of `trace.log.*`), grouped as a glob's files are
/// (SPEC 2); a file that cannot be read is an error of its own and the
/// others are analyzed.
pub fn open_named(
    paths: Vec<String>,
    input_format: Option<&str>,
    det: &dyn Detect,
) -> (Option<Runs>, Vec<InputError>) {
    group_runs(paths, input_format, false, det)
}

/// Whether a command-line argument names one file of a run (PREFIX.N) as
/// it is, and the run's key (the prefix): what groups such arguments.
pub fn named_run_key(arg: &str) -> Option<String> {
    let paths = expand(arg).ok()?;
    (paths.len() == 1 && paths[0] == arg && ff_tid(arg).is_some()).then(|| run_key(arg).to_owned())
}

/// Files into runs.  `expanded`: they came from a directory or glob, so a
/// file that is not a trace is skipped (a note); otherwise it is an error
/// (returned with the runs of the others, None when no file is a trace).
fn group_runs(
    paths: Vec<String>,
    input_format: Option<&str>,
    expanded: bool,
    det: &dyn Detect,
) -> (Option<Runs>, Vec<InputError>) {
    let forced = input_format.filter(|f| *f != "auto");
    let mut errors = Vec::new();
    // the run of each path, in the order runs first appear (linear in the
    // number of files: a -ff run may have 10^5 of them)
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut sizes: Vec<usize> = Vec::new();
    let mut of: Vec<usize> = Vec::with_capacity(paths.len());
    for p in &paths {
        let next = sizes.len();
        let at = *index.entry(run_key(p)).or_insert(next);
        if at == next {
            sizes.push(0);
        }
        sizes[at] += 1;
        of.push(at);
    }
    let mut runs: Vec<Vec<FileSpec>> = (0..sizes.len()).map(|_| Vec::new()).collect();
    let mut ids: Vec<Option<(u32, u32)>> = vec![None; sizes.len()];
    let mut skipped = Vec::new();
    for (path, &k) in paths.iter().zip(&of) {
        match open_one(path.clone(), forced, sizes[k] > 1, det) {
            Ok((f, id)) => {
                runs[k].push(f);
                ids[k] = if sizes[k] == 1 { id } else { None };
            }
            Err(e) if expanded => skipped.push(e),
            Err(e) => errors.push(e),
        }
    }
    join_by_parent(&mut runs, &ids);
    runs.retain(|r| !r.is_empty());
    if runs.is_empty() {
        if errors.is_empty() && !skipped.is_empty() {
            errors.push(skipped.swap_remove(0));
        }
        return (None, errors);
    }
    // a -ff run of which one file is left reads as that one file
    for r in runs.iter_mut() {
        if r.len() == 1 {
            r[0].tid = None;
        }
    }
    (Some(Runs { runs, skipped }), errors)
}
