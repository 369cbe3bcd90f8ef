//! The normalized event vocabulary: the only thing parsers and models share
//! (rocrtrace/events.py is its Python face: the record an event becomes
//! when it crosses into Python).
//!
//! A parser turns one input into a stream of [`Event`]s; the models never see
//! text.  One event is one call (syscall, ioctl or intent call) or one
//! process-level fact (exit, exec, fd snapshot, map snapshot).  This module
//! holds no parsing and no model logic.
//!
//! The conventions of events.py, and how they map to Rust types:
//!
//! * `pid` is the process (tgid), `tid` the thread; `pid` is `None` only for
//!   an strace log that never names a pid.  Both are `u32` (Linux pids are
//!   positive 32-bit numbers).
//! * `time` is the entry time in seconds, `dur` the duration when known.
//! * `ret` is the integer result, `None` when the call never returned;
//!   `err` the errno name when the call failed ([`errno`]; syscall and
//!   signal names likewise through [`syscall`] and [`signal`]).
//! * fd decorations become `path` fields: the decoded path with escapes
//!   resolved.  Python keeps them as `str` decoded with surrogateescape, so
//!   any byte survives; here they are [`Text`], bytes.
//! * Decoded struct fields are keyed by the kernel struct's field names, with
//!   enumerations and flags resolved to their integer values ([`Value`]).
//!
//! Integers: Python ints are unbounded, these are not.  What each kind of
//! number does with a value that does not fit:
//!
//! * `ret` is the 64-bit syscall return register.  strace prints it in
//!   decimal (negative results) or hex (addresses, which may be at or above
//!   2^63); both are the same 64 bits, kept as `i64` with the two's
//!   complement bit pattern ([`Header::ret_u64`] reads an address back).
//!   A number outside [-2^63, 2^64) cannot come from that register: the
//!   parser counts the line unparsed.
//! * Struct fields ([`Value`]) hold anything in [-2^63, 2^64) exactly
//!   ([`Value::Int`], [`Value::UInt`]); a number outside it is kept as the
//!   text the log printed ([`Value::Raw`]).
//! * Addresses, lengths, offsets and flag words of the memory and process
//!   calls are `u64` (the kernel's `unsigned long`); fd numbers are `i32`
//!   (the kernel's `int`, what strace prints); `close_range` bounds are `u32`.
//!   The request code and `close_range`'s bounds are masked to 32 bits, as
//!   the kernel reads them; any other value
//!   that does not fit its field makes the parser count the line unparsed
//!   (never a silently wrapped value, never a panic).

use std::borrow::Cow;
use std::sync::Arc;

mod names;

pub use names::{ERRNO_NAMES, Name, SIGNAL_NAMES, SYSCALL_NAMES, errno, name_in, signal, syscall};

/// Text from a log: bytes, because the Python side keeps paths and lines as
/// `str` decoded with surrogateescape, where any byte sequence survives.
/// Shared, not copied: a clone (an fd's path into each of its ioctls, into
/// the fd table and its findings) counts a reference; `Arc`, since --jobs
/// workers build events.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Text(pub Arc<[u8]>);

impl Text {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// For people: invalid UTF-8 shown as U+FFFD.
    pub fn to_string_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(s.as_bytes().into())
    }
}

impl From<&[u8]> for Text {
    fn from(s: &[u8]) -> Self {
        Text(s.into())
    }
}

/// Which input an event came from: an index into the run's list of inputs
/// ([`InputInfo`]), where events.py carries the file name itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// One stack frame, as strace `-k` and the preload library print it.
///
/// `addr` is the offset into the module file (strace's bracket), not a
/// virtual address.  `function`/`source`/`source_line` are filled by the
/// symbolizer when it can read the module.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Shared: the same few modules appear in every stack.
    pub module: Arc<str>,
    pub symbol: Option<Box<str>>,
    pub sym_offset: Option<u64>,
    pub addr: Option<u64>,
    pub function: Option<Box<str>>,
    pub source: Option<Box<str>>,
    pub source_line: Option<u32>,
}

impl Frame {
    pub fn new(module: Arc<str>) -> Self {
        Frame {
            module,
            symbol: None,
            sym_offset: None,
            addr: None,
            function: None,
            source: None,
            source_line: None,
        }
    }

    /// Best human form: function and source line when symbolized
    /// (events.Frame.label).
    pub fn label(&self) -> String {
        let mut out = self.module.to_string();
        if let Some(f) = self.function.as_deref().or(self.symbol.as_deref()) {
            out.push('(');
            out.push_str(f);
            if let (Some(off), None) = (self.sym_offset, &self.function) {
                out.push_str(&format!("+{off:#x}"));
            }
            out.push(')');
        }
        if let Some(a) = self.addr {
            out.push_str(&format!(" [{a:#x}]"));
        }
        if let Some(src) = &self.source {
            // as events.py's Frame prints it: None when the line is unknown
            match self.source_line {
                Some(l) => out.push_str(&format!(" {src}:{l}")),
                None => out.push_str(&format!(" {src}:None")),
            }
        }
        out
    }
}

/// A decoded struct value (preload logs): what events.py keeps as Python
/// ints, strings, lists and dicts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// A number in i64's range.
    Int(i64),
    /// A number above `i64::MAX` (at most `u64::MAX`); only such numbers,
    /// so that each number has one form and `==` is numeric equality.
    UInt(u64),
    /// A quoted string, escapes resolved.
    Str(Text),
    /// Text kept as the log printed it: a number outside [-2^63, 2^64), a
    /// symbol the decoder does not know.  (Python keeps both this and
    /// [`Value::Str`] as `str`: a comparison with it treats them alike.)
    Raw(Text),
    /// An array; SVM `attrs` is a list of two-element lists `[type, value]`.
    List(Vec<Value>),
    /// A struct: fields in the log's order, by the kernel's field names.
    Struct(Vec<(Name, Value)>),
    /// `entry => exit`: a value the kernel rewrote (a Python tuple).
    Pair(Box<(Value, Value)>),
}

impl Value {
    /// The number `v` in its one form, or `None` outside [-2^63, 2^64).
    pub fn int(v: i128) -> Option<Value> {
        if let Ok(i) = i64::try_from(v) {
            Some(Value::Int(i))
        } else {
            u64::try_from(v).ok().map(Value::UInt)
        }
    }

    pub fn as_i128(&self) -> Option<i128> {
        match *self {
            Value::Int(i) => Some(i.into()),
            Value::UInt(u) => Some(u.into()),
            _ => None,
        }
    }

    /// The number when it is in u64's range.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i128().and_then(|v| u64::try_from(v).ok())
    }

    /// The number when it is in i64's range.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// A struct's field (the last one of that name, as a dict keeps it).
    pub fn get(&self, field: &str) -> Option<&Value> {
        match self {
            Value::Struct(fields) => fields
                .iter()
                .rev()
                .find(|(k, _)| k == field)
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Where a line is in its input: the byte offset and length, in the
/// input's decompressed bytes, of the text its parser was fed (after the
/// layout's prefix, without a `\r`).  `len` 0: nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub off: u64,
    pub len: u32,
}

impl Span {
    pub fn is_some(&self) -> bool {
        self.len > 0
    }
}

/// An event's text (evidence by reference, SPEC 7): where its line is, and
/// a split call's resumed line, in the event's input; the text itself only
/// where it cannot be read again (stdin, a pipe), where it is not its
/// line as the input has it (a call joined across a diagnostic, an -ff
/// execve's entry from another thread's file), or once read back
/// (read/evidence.rs).  The text of a split call is the two lines joined
/// by [`SPLIT_JOIN`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Source {
    pub at: Span,
    /// the resumed half's line (split calls)
    pub resumed: Span,
    pub text: Option<Text>,
}

/// How a split call's two lines are joined in its text.
pub const SPLIT_JOIN: &str = " … ";

impl Source {
    /// The text itself.
    pub fn kept(text: &[u8]) -> Self {
        Source {
            text: Some(Text::from(text)),
            ..Source::default()
        }
    }

    /// By reference: `at` (and `resumed`) in the event's input.
    pub fn at(at: Span, resumed: Span) -> Self {
        Source {
            at,
            resumed,
            text: None,
        }
    }

    /// Whether the text is to be read back.
    pub fn by_reference(&self) -> bool {
        self.text.is_none() && self.at.is_some()
    }

    /// The text when it is here (kept or read back).
    pub fn text(&self) -> &[u8] {
        self.text.as_ref().map_or(b"", Text::as_bytes)
    }
}

impl From<&str> for Source {
    fn from(s: &str) -> Self {
        Source::kept(s.as_bytes())
    }
}

/// Fields every event has (events.Event).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Header {
    pub file: FileId,
    /// 1-based line of the entry (or only) line
    pub line: u64,
    /// line of the `resumed` half, if split
    pub end_line: Option<u64>,
    /// order of emission within its input
    pub seq: u64,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<f64>,
    pub dur: Option<f64>,
    /// The return register, two's complement for values >= 2^63 (module doc).
    pub ret: Option<i64>,
    pub err: Option<Name>,
    pub stack: Box<[Frame]>,
    /// the source line(s), for evidence: by reference, read back when a
    /// report is written ([`Source`])
    pub src: Source,
    /// resumed half without its entry, or cut short
    pub partial: bool,
    /// strace made the result up (`-e inject`, `-e fault`): the kernel never
    /// ran the call, so the models replay nothing of it
    pub injected: bool,
}

impl Header {
    /// Completion time: entry + duration where known, else entry.
    pub fn end(&self) -> Option<f64> {
        self.time.map(|t| t + self.dur.unwrap_or(0.0))
    }

    pub fn ok(&self) -> bool {
        self.err.is_none() && self.ret.is_some()
    }

    /// The result as an address (mmap, mremap).
    pub fn ret_u64(&self) -> Option<u64> {
        self.ret.map(|r| r as u64)
    }
}

/// One event: the header, the call's name, what its kind carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub h: Header,
    /// The syscall, function or fact name; the `name` defaults of events.py's
    /// KINDS are [`Kind::default_name`].
    pub name: Name,
    pub kind: Kind,
}

/// The event behind `ev`, to change while the parser still holds the only
/// reference (its seq, pid, frames): no copy then (a shared one would be
/// copied first, never changed under another holder).  The stream carries
/// `Rc<Event>`s, each event allocated once, where the parser places it.
#[inline]
pub fn own(ev: &mut std::rc::Rc<Event>) -> &mut Event {
    // (the usual case, an event the parser alone holds, checked here: a
    // call of make_mut cost three times the check, three times an event)
    if std::rc::Rc::get_mut(ev).is_none() {
        return shared_own(ev);
    }
    std::rc::Rc::get_mut(ev).expect("unique")
}

/// [`own`] of an event another holder shares: a copy.
#[cold]
#[inline(never)]
fn shared_own(ev: &mut std::rc::Rc<Event>) -> &mut Event {
    std::rc::Rc::make_mut(ev)
}

/// The event of these parts in a new `Rc`, each part written where the
/// `Rc` keeps it: `Rc::new` of an `Event` made first copied its 350 bytes
/// once or twice on the way (the parser makes an event a line).
#[inline(always)]
pub fn rc_event(h: Header, name: Name, kind: Kind) -> std::rc::Rc<Event> {
    let mut rc = std::rc::Rc::<Event>::new_uninit();
    let slot = std::rc::Rc::get_mut(&mut rc)
        .expect("a new Rc is not shared")
        .as_mut_ptr();
    // SAFETY: `slot` is the new Rc's own, unshared and uninitialised
    // Event; each of its three fields is written once, in place, before
    // the Rc is taken as initialised
    unsafe {
        std::ptr::addr_of_mut!((*slot).h).write(h);
        std::ptr::addr_of_mut!((*slot).name).write(name);
        std::ptr::addr_of_mut!((*slot).kind).write(kind);
        rc.assume_init()
    }
}

/// An event in an `Rc` that nothing else shares: a --jobs worker builds
/// its events where they stay, and the parsing thread takes the `Rc` as it
/// is (no allocation and no copy of the event on the serial path).
#[derive(Debug)]
pub struct Lone(std::rc::Rc<Event>);

// SAFETY: a Lone holds the only handle to its Rc (made in `new`, never
// cloned or lent out, strong count 1 and no weak one), so moving it to
// another thread moves the whole ownership, as moving a Box<Event> would;
// no count is ever touched by two threads.  Event itself is Send.
unsafe impl Send for Lone {}

impl Lone {
    pub fn new(ev: Event) -> Self {
        Lone(std::rc::Rc::new(ev))
    }

    /// [`Lone::new`] of the event of these parts, made in its `Rc`
    /// ([`rc_event`]).
    pub fn of_parts(h: Header, name: Name, kind: Kind) -> Self {
        Lone(rc_event(h, name, kind))
    }

    /// The `Rc`, for this thread to share from now on.
    pub fn rc(self) -> std::rc::Rc<Event> {
        self.0
    }
}

impl Event {
    /// An event with its kind's default name.
    pub fn new(h: Header, kind: Kind) -> Self {
        Event {
            h,
            name: Cow::Borrowed(kind.default_name()),
            kind,
        }
    }
}

/// A syscall that installs new fds (events.FdCreate): open*, creat, dup*,
/// fcntl(F_DUPFD*), socket, accept, pipe*, socketpair, eventfd, memfd_create,
/// pidfd_open, pidfd_getfd, recvmsg with SCM_RIGHTS, epoll_create, signalfd,
/// timerfd ...
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FdCreate {
    /// `open`, `dup`, `recvmsg`, `pidfd_getfd`, or the syscall name
    pub origin: Name,
    /// new fd numbers (empty when it failed)
    pub fds: Vec<i32>,
    /// decoration or path per fd (None if unknown)
    pub paths: Vec<Option<Text>>,
    pub cloexec: bool,
    /// dup source / pidfd_getfd target fd
    pub src_fd: Option<i32>,
    /// dup2/dup3: the target number is closed first if it was open
    pub replace: bool,
    /// dup2/dup3: the number asked for (also when the call failed)
    pub new_fd: Option<i32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Close {
    pub fd: i32,
    pub path: Option<Text>,
}

/// close_range(first, last, flags) and closefrom(first) (last = ~0U).
#[derive(Debug, Clone, PartialEq)]
pub struct CloseRange {
    pub first: u32,
    pub last: u32,
    /// CLOSE_RANGE_UNSHARE 2, CLOSE_RANGE_CLOEXEC 4
    pub flags: u32,
}

/// fcntl(fd, F_SETFD, ...): the only call that changes FD_CLOEXEC later.
#[derive(Debug, Clone, PartialEq)]
pub struct SetCloexec {
    pub fd: i32,
    pub cloexec: bool,
}

/// Any other syscall: the fd arguments it used (decorated or in a known fd
/// position) and their decorations.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Syscall {
    pub fds: Vec<i32>,
    pub paths: Vec<Option<Text>>,
}

/// An ioctl, identified by (type, nr) rebuilt from the request, never by
/// strace's name alone.  `size` is the request's size field (data:
/// AMDKFD_IOC_SVM carries 24 + 8*nattr).  `arg` holds the decoded input
/// struct (preload logs), `out` the fields the kernel wrote (after `=>`);
/// both `None` when the input only shows a pointer (strace logs).
#[derive(Debug, Clone, PartialEq)]
pub struct Ioctl {
    pub fd: i32,
    pub path: Option<Text>,
    /// the 32-bit request code
    pub request: Option<u32>,
    pub dir: Option<u8>,
    pub type_: Option<u8>,
    pub nr: Option<u8>,
    /// The request's 14-bit size field; for an AMDKFD_IOC_SVM strace named,
    /// 24 + 8 * the struct's nattr, which may be more (syscalls._ioctl
    /// does not cut it)
    pub size: Option<u64>,
    /// our canonical name (kfd.rs), e.g. AMDKFD_IOC_SVM
    pub ioctl: Option<&'static str>,
    pub arg: Option<Value>,
    pub out: Option<Value>,
}

/// mmap/mmap2; `ret` is the mapped address.
#[derive(Debug, Clone, PartialEq)]
pub struct Mmap {
    /// requested address (hint), None for NULL
    pub addr: Option<u64>,
    pub length: u64,
    pub prot: u64,
    pub flags: u64,
    pub fd: i32,
    pub path: Option<Text>,
    pub offset: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Munmap {
    pub addr: u64,
    pub length: u64,
}

/// `ret` is the new address; the old range is unmapped on success.
#[derive(Debug, Clone, PartialEq)]
pub struct Mremap {
    pub old_addr: u64,
    pub old_len: u64,
    pub new_len: u64,
    pub flags: u64,
    /// MREMAP_FIXED target
    pub new_addr: Option<u64>,
}

/// fork, vfork, clone, clone3.  `ret` (and `child`) is the new tid.
#[derive(Debug, Clone, PartialEq)]
pub struct Clone {
    pub child: Option<u32>,
    /// CLONE_THREAD: same process
    pub thread: bool,
    /// CLONE_FILES: shared fd table
    pub share_files: bool,
    pub flags: u64,
}

/// execve/execveat.  On success (ret == 0) cloexec fds are gone.
#[derive(Debug, Clone, PartialEq)]
pub struct Exec {
    pub path: Option<Text>,
}

/// A thread or the whole process ended.  `whole` is the end of the process
/// (exit_group, the leader's `+++ exited`/`+++ killed`, a preload `# exit`
/// line); `status` the exit status, `signal` the killing signal's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    pub whole: bool,
    pub status: Option<i64>,
    pub signal: Option<Name>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    pub signal: Name,
}

/// `# pid=… ppid=… exe=… page_size=…` header of a preload log.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    pub ppid: Option<u32>,
    pub exe: Option<Text>,
    pub page_size: u64,
}

/// When an [`FdSnapshot`] was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Start,
    Exit,
}

/// The open fds at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct FdSnapshot {
    pub when: When,
    /// fd -> path, in the log's order, one entry per fd (a dict in Python:
    /// the parser keeps the last path of a repeated fd, in its first place)
    pub fds: Vec<(i32, Text)>,
}

/// An executable mapping: lets the symbolizer find the module's file.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleMap {
    pub start: u64,
    pub end_addr: u64,
    pub offset: u64,
    pub perms: Box<str>,
    pub module: Text,
    pub build_id: Option<Box<str>>,
}

/// A runtime library call logged for intent (hsa_amd_memory_lock ...):
/// the call's arguments by name (`ptr`, `size`, `agents`, `fd`, `handle`
/// ...) and the values it returned through pointers, in the log's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Intent {
    pub args: Vec<(Name, Value)>,
    pub outs: Vec<(Name, Value)>,
}

/// What an event carries beyond the header (events.EVENT_TYPES).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    FdCreate(FdCreate),
    Close(Close),
    CloseRange(CloseRange),
    SetCloexec(SetCloexec),
    Syscall(Syscall),
    /// (not boxed: an event is allocated once, whatever its kind)
    Ioctl(Ioctl),
    Mmap(Mmap),
    Munmap(Munmap),
    Mremap(Mremap),
    Clone(Clone),
    Exec(Exec),
    Exit(Exit),
    Signal(Signal),
    ProcessInfo(ProcessInfo),
    FdSnapshot(FdSnapshot),
    ModuleMap(ModuleMap),
    Intent(Box<Intent>),
}

impl Kind {
    /// The kind's name: the tables' `event` column and a record's `event`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::FdCreate(_) => "FdCreate",
            Kind::Close(_) => "Close",
            Kind::CloseRange(_) => "CloseRange",
            Kind::SetCloexec(_) => "SetCloexec",
            Kind::Syscall(_) => "Syscall",
            Kind::Ioctl(_) => "Ioctl",
            Kind::Mmap(_) => "Mmap",
            Kind::Munmap(_) => "Munmap",
            Kind::Mremap(_) => "Mremap",
            Kind::Clone(_) => "Clone",
            Kind::Exec(_) => "Exec",
            Kind::Exit(_) => "Exit",
            Kind::Signal(_) => "Signal",
            Kind::ProcessInfo(_) => "ProcessInfo",
            Kind::FdSnapshot(_) => "FdSnapshot",
            Kind::ModuleMap(_) => "ModuleMap",
            Kind::Intent(_) => "Intent",
        }
    }

    /// The `name` an event of this kind has unless its parser names it
    /// (the `name` defaults of events.py's KINDS; Syscall and Intent have none).
    pub fn default_name(&self) -> &'static str {
        match self {
            Kind::FdCreate(_) => "openat",
            Kind::Close(_) => "close",
            Kind::CloseRange(_) => "close_range",
            Kind::SetCloexec(_) => "fcntl",
            Kind::Syscall(_) | Kind::Intent(_) => "",
            Kind::Ioctl(_) => "ioctl",
            Kind::Mmap(_) => "mmap",
            Kind::Munmap(_) => "munmap",
            Kind::Mremap(_) => "mremap",
            Kind::Clone(_) => "clone",
            Kind::Exec(_) => "execve",
            Kind::Exit(_) => "exit",
            Kind::Signal(_) => "signal",
            Kind::ProcessInfo(_) => "process",
            Kind::FdSnapshot(_) => "fd-snapshot",
            Kind::ModuleMap(_) => "map",
        }
    }
}

/// Which dialect an input is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Unknown,
    Strace,
    Preload,
    Tinygrad,
}

impl Format {
    /// Its name, as `--input-format` and messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Unknown => "unknown",
            Format::Strace => "strace",
            Format::Preload => "preload",
            Format::Tinygrad => "tinygrad",
        }
    }
}

/// How many unparsed lines [`InputInfo`] keeps as samples, and how many
/// characters of each (events.InputInfo.add_unparsed).
pub const UNPARSED_SAMPLES: usize = 20;
pub const SAMPLE_CHARS: usize = 200;

/// What a parser learned about one input file, for the report's inputs and
/// coverage sections and the trace-unparsed / trace-incomplete findings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputInfo {
    pub file: Text,
    pub format: Format,
    pub lines: u64,
    pub events: u64,
    pub unparsed: u64,
    /// (line, text), the first [`UNPARSED_SAMPLES`]
    pub unparsed_samples: Vec<(u64, Text)>,
    /// over-long lines skipped (counted in unparsed)
    pub too_long: u64,
    /// calls that never completed (no result)
    pub unfinished: u64,
    /// resumed halves with no entry
    pub orphans: u64,
    /// calls whose result strace made up ([`Header::injected`])
    pub injected: u64,
    pub detached: u64,
    pub has_pids: bool,
    pub has_time: bool,
    pub has_durations: bool,
    pub has_stacks: bool,
    pub has_decorations: bool,
    /// ioctl structs decoded (preload logs)
    pub decoded_structs: bool,
    pub intent_calls: bool,
    /// a process-exit line / '# exit' was seen
    pub exit_seen: bool,
    /// last line had no newline
    pub ends_mid_line: bool,
    /// preload '#' metadata, in the log's order
    pub header: Vec<(Box<str>, Text)>,
    /// lines before the first trace line, skipped
    pub preamble: u64,
    /// indentation/quoting removed ("indented by 4 column(s)")
    pub layout: Box<str>,
    /// CRLF line ends (the \r is dropped)
    pub crlf: bool,
}

impl InputInfo {
    pub fn new(file: Text) -> Self {
        InputInfo {
            file,
            ..Default::default()
        }
    }

    /// Count an unparsed line; keep the first few, shortened to 200 code
    /// points of its surrogateescape decoding: every undecodable byte is one
    /// code point, so here: 200 UTF-8 characters or stray bytes.
    pub fn add_unparsed(&mut self, line: u64, text: &[u8]) {
        self.unparsed += 1;
        if self.unparsed_samples.len() < UNPARSED_SAMPLES {
            let cut = cut_chars(text, SAMPLE_CHARS);
            self.unparsed_samples.push((line, Text::from(&text[..cut])));
        }
    }
}

/// The byte length of the first `n` code points of `text` as Python decodes
/// it with surrogateescape (a valid UTF-8 sequence is one, each other byte
/// is one).
pub fn cut_chars(text: &[u8], n: usize) -> usize {
    // the common case, an ASCII line: one byte per code point
    let ascii = text.iter().take(n).take_while(|b| b.is_ascii()).count();
    if ascii == n || ascii == text.len() {
        return ascii;
    }
    let mut pos = ascii;
    for _ in ascii..n {
        if text.get(pos).is_some_and(u8::is_ascii) {
            pos += 1;
            continue;
        }
        let Some(&b) = text.get(pos) else { break };
        let w = match b {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => 1,
        };
        let whole = text
            .get(pos..pos + w)
            .is_some_and(|c| std::str::from_utf8(c).is_ok());
        pos += if whole { w } else { 1 };
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names_are_the_tables_names() {
        for (t, f) in [
            (ERRNO_NAMES, errno as fn(&str) -> Name),
            (SYSCALL_NAMES, syscall),
            (SIGNAL_NAMES, signal),
        ] {
            for &n in t {
                assert!(matches!(f(n), Cow::Borrowed(b) if b == n));
                assert_eq!(f(n), name_in(t, n));
            }
            assert!(matches!(f("NOT_A_NAME"), Cow::Owned(o) if o == "NOT_A_NAME"));
        }
    }

    #[test]
    fn name_tables_are_sorted_and_unique() {
        for t in [ERRNO_NAMES, SYSCALL_NAMES, SIGNAL_NAMES] {
            assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(ERRNO_NAMES.len(), 150);
        assert_eq!(SYSCALL_NAMES.len(), 362);
    }

    #[test]
    fn known_names_are_static_others_owned() {
        for n in ["EBADF", "EAGAIN", "ERESTARTSYS", "EOWNERDEAD"] {
            assert!(matches!(errno(n), Cow::Borrowed(_)), "{n}");
        }
        for n in ["openat", "close_range", "ioctl", "clone3", "_sysctl"] {
            assert!(matches!(syscall(n), Cow::Borrowed(_)), "{n}");
        }
        // EWOULDBLOCK is an alias strace never prints (it says EAGAIN)
        let e = errno("EWOULDBLOCK");
        assert!(matches!(e, Cow::Owned(_)));
        assert_eq!(e, "EWOULDBLOCK");
        assert!(matches!(syscall("mmap2"), Cow::Owned(_)));
        assert!(matches!(signal("SIGKILL"), Cow::Borrowed(_)));
        assert!(matches!(signal("SIGRT_1"), Cow::Owned(_)));
    }

    #[test]
    fn value_numbers_have_one_form() {
        assert_eq!(Value::int(-1), Some(Value::Int(-1)));
        assert_eq!(Value::int(i64::MAX.into()), Some(Value::Int(i64::MAX)));
        assert_eq!(
            Value::int(i128::from(i64::MAX) + 1),
            Some(Value::UInt(1 << 63))
        );
        assert_eq!(Value::int(u64::MAX.into()), Some(Value::UInt(u64::MAX)));
        assert_eq!(Value::int(i128::from(u64::MAX) + 1), None);
        assert_eq!(Value::int(i128::from(i64::MIN) - 1), None);
        assert_eq!(Value::UInt(u64::MAX).as_u64(), Some(u64::MAX));
        assert_eq!(Value::Int(-1).as_u64(), None);
        assert_eq!(Value::UInt(u64::MAX).as_i64(), None);
        assert_eq!(Value::Raw("1".into()).as_i128(), None);
        let p = Value::Pair(Box::new((Value::Int(0), Value::Int(1))));
        assert_eq!(p.as_i128(), None);
    }

    #[test]
    fn struct_field_lookup_takes_the_last_like_a_dict() {
        let v = Value::Struct(vec![
            (Cow::Borrowed("size"), Value::Int(1)),
            (Cow::Borrowed("op"), Value::Int(0)),
            (Cow::Borrowed("size"), Value::Int(2)),
        ]);
        assert_eq!(v.get("size"), Some(&Value::Int(2)));
        assert_eq!(v.get("op"), Some(&Value::Int(0)));
        assert_eq!(v.get("nattr"), None);
        assert_eq!(Value::Int(3).get("op"), None);
    }

    #[test]
    fn header_end_ok_and_addresses() {
        let mut h = Header::default();
        assert_eq!(h.end(), None);
        assert!(!h.ok());
        h.time = Some(1.5);
        assert_eq!(h.end(), Some(1.5));
        h.dur = Some(0.25);
        assert_eq!(h.end(), Some(1.75));
        h.ret = Some(0xffff_ffff_ff60_0000_u64 as i64);
        assert!(h.ok());
        assert_eq!(h.ret_u64(), Some(0xffff_ffff_ff60_0000));
        h.err = Some(errno("EBADF"));
        assert!(!h.ok());
    }

    #[test]
    fn frame_labels_read_like_events_py() {
        // the strings events.Frame.label() gives for the same frames
        let mut f = Frame::new("libhsa.so".into());
        assert_eq!(f.label(), "libhsa.so");
        f.addr = Some(0x1234);
        assert_eq!(f.label(), "libhsa.so [0x1234]");
        f.symbol = Some("lock".into());
        f.sym_offset = Some(0x10);
        assert_eq!(f.label(), "libhsa.so(lock+0x10) [0x1234]");
        f.function = Some("hsa::lock".into());
        assert_eq!(f.label(), "libhsa.so(hsa::lock) [0x1234]");
        f.source = Some("a.cpp".into());
        assert_eq!(f.label(), "libhsa.so(hsa::lock) [0x1234] a.cpp:None");
        f.source_line = Some(7);
        assert_eq!(f.label(), "libhsa.so(hsa::lock) [0x1234] a.cpp:7");
    }

    #[test]
    fn default_names_and_type_names() {
        let e = Event::new(
            Header::default(),
            Kind::Munmap(Munmap { addr: 0, length: 0 }),
        );
        assert_eq!(e.name, "munmap");
        assert_eq!(e.kind.type_name(), "Munmap");
        let e = Event::new(Header::default(), Kind::Syscall(Syscall::default()));
        assert_eq!(e.name, "");
        assert_eq!(
            Kind::FdSnapshot(FdSnapshot {
                when: When::Exit,
                fds: vec![]
            })
            .default_name(),
            "fd-snapshot"
        );
    }

    #[test]
    fn unparsed_samples_are_capped_and_cut_like_python() {
        let mut info = InputInfo::new("t.log".into());
        for i in 0..25 {
            info.add_unparsed(i, b"x");
        }
        assert_eq!(info.unparsed, 25);
        assert_eq!(info.unparsed_samples.len(), UNPARSED_SAMPLES);
        assert_eq!(info.unparsed_samples[19].0, 19);
        // 300 characters of which some are two-byte and some stray bytes:
        // Python's text[:200] keeps 200 code points
        let mut line = Vec::new();
        for i in 0..300 {
            match i % 3 {
                0 => line.push(b'a'),
                1 => line.extend("é".as_bytes()),
                _ => line.push(0xff),
            }
        }
        assert_eq!(cut_chars(&line, 200), 200 + 67);
        // a truncated sequence is one code point per byte
        assert_eq!(cut_chars(&[0xe2, 0x82, b'a', b'b'], 3), 3);
        assert_eq!(cut_chars("€".as_bytes(), 1), 3);
        assert_eq!(cut_chars(b"ab", 5), 2);
    }
}
