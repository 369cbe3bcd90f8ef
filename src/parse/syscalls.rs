//! Per-syscall normalization: one
//! parsed call (name, argument tokens, result) becomes one [`Kind`].
//!
//! Which kind a syscall maps to lives here; where its fds are when the log
//! has no `-y` decorations, and the Linux constants needed to turn flag
//! names into ints, in the catalogue (syscalls/tables.rs); ioctl and intent
//! calls in their own parts; the line grammar in strace.rs.

use crate::events::*;
use crate::kfd;
use crate::parse::values::{
    self, Names, at, comment_start, contains, find, is_ws, matching, parse_fd, parse_flags,
    parse_int, parse_ioc, parse_string, parse_value, skip, split_top, strip, strip_comment,
};
use std::borrow::Cow;

mod intent;
mod ioctl;
mod tables;

use intent::intent;
#[cfg(test)]
pub(crate) use ioctl::general_arg;
use ioctl::ioctl;
pub(crate) use ioctl::scan_layout;
pub use tables::{CLONE_FILES, CLONE_THREAD, CLONE_VFORK, CLONE_VM};
use tables::{
    CLONE_FLAGS, CLOSE_RANGE_NAMES, MMAP_NAMES, O_CLOEXEC, SIGCHLD, SIGNALS, THREAD_GUESS,
    fd_positions, fd_result, skip_positions, x86_64_unknown,
};

/// One syscall (or intent call) after the line grammar, before
/// normalization (syscalls.Call).
#[derive(Debug)]
pub struct Call<'a> {
    pub name: Cow<'a, str>,
    pub args: Vec<Cow<'a, [u8]>>,
    pub ret: Option<i128>,
    pub err: Option<Name>,
    pub ret_path: Option<Vec<u8>>,
    /// the `-N` names stripped, by position
    pub names: Vec<(usize, Cow<'a, [u8]>)>,
    /// normalization dropped a value of the wrong type
    pub malformed: bool,
    /// a number does not fit its Rust field (never in a real log)
    pub overflow: bool,
}

impl<'a> Call<'a> {
    pub fn new(name: Cow<'a, str>, args: Vec<Cow<'a, [u8]>>) -> Self {
        Call {
            name,
            args,
            ret: None,
            err: None,
            ret_path: None,
            names: Vec::new(),
            malformed: false,
            overflow: false,
        }
    }

    fn arg(&self, i: usize) -> Option<&[u8]> {
        self.args.get(i).map(|a| &a[..])
    }

    /// `_arg(call, i) or ""`
    fn arg_or_empty(&self, i: usize) -> &[u8] {
        self.arg(i).unwrap_or(b"")
    }

    fn ok_fd_result(&self) -> bool {
        self.ret.is_some_and(|r| r >= 0) && self.err.is_none()
    }

    /// An fd number as the kernel's `int` reads it: -e raw prints -1 as
    /// 0xffffffff, which parses as 4294967295.
    fn fd(&mut self, v: i128) -> i32 {
        if (1 << 31..1 << 32).contains(&v) {
            return v as u32 as i32;
        }
        i32::try_from(v).unwrap_or_else(|_| {
            self.overflow = true;
            -1
        })
    }

    fn opt_fd(&mut self, v: Option<i128>) -> Option<i32> {
        v.map(|v| self.fd(v))
    }

    fn u64(&mut self, v: i128) -> u64 {
        u64::try_from(v).unwrap_or_else(|_| {
            self.overflow = true;
            0
        })
    }

    fn ret_fds(&mut self) -> Vec<i32> {
        match self.ret {
            Some(r) if self.ok_fd_result() => vec![self.fd(r)],
            _ => vec![],
        }
    }

    fn ret_paths(&self) -> Vec<Option<Text>> {
        if self.ok_fd_result() {
            vec![self.ret_path.as_deref().map(Text::from)]
        } else {
            vec![]
        }
    }
}

fn fd_of(tok: Option<&[u8]>) -> (Option<i128>, Option<Vec<u8>>) {
    let Some(tok) = tok else {
        return (None, None);
    };
    // a bare number (`-1`, `12`): no comment, no decoration, what
    // parse_fd makes of it without the two searches for them
    if bare_number(tok) {
        return (values::int0(tok), None);
    }
    if comment_start(tok).is_some() {
        let (t, _) = strip_comment(tok);
        return parse_fd(&t);
    }
    parse_fd(tok)
}

/// [`values::int0`] of a [`bare_number`]: the usual fd number (`3`, `-1`,
/// no leading zero, at most 18 digits) read here, any other through int0.
fn fd_number(head: &[u8]) -> Option<i128> {
    let (neg, digits) = match head.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, head),
    };
    if digits.is_empty() || digits.len() > 18 || (digits[0] == b'0' && digits.len() > 1) {
        return values::int0(head);
    }
    let mut v: i128 = 0;
    for &c in digits {
        v = v * 10 + i128::from(c - b'0');
    }
    Some(if neg { -v } else { v })
}

/// Digits, after a `-` or not (neither a comment nor a decoration in it).
fn bare_number(tok: &[u8]) -> bool {
    let digits = tok.strip_prefix(b"-").unwrap_or(tok);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

fn text(p: Option<Vec<u8>>) -> Option<Text> {
    p.map(|p| Text(p.into()))
}

/// syscalls._int_of
fn int_of(tok: Option<&[u8]>, table: Option<Names>, default: i128) -> i128 {
    let Some(tok) = tok else {
        return default;
    };
    // a name first (NULL, PROT_READ|PROT_WRITE): no number and no fd (they
    // start with a digit or `-`, a comment cut off or not) reads it
    if tok.first().is_some_and(u8::is_ascii_alphabetic) {
        return if tok == b"NULL" {
            0
        } else {
            flags_of(tok, table).unwrap_or(default)
        };
    }
    if let Some(v) = parse_int(tok) {
        return v;
    }
    if tok == b"NULL" {
        return 0;
    }
    if let (Some(fd), _) = fd_of(Some(tok)) {
        return fd;
    }
    flags_of(tok, table).unwrap_or(default)
}

/// Recent flag tokens (`PROT_READ|PROT_WRITE`) and their value in a table
/// (its place and length), direct-mapped by the token's hash: a trace
/// repeats a handful of flag sets, and [`parse_flags`] looks each name up
/// in its table one by one.
type FlagCache = Vec<Option<(usize, usize, Box<[u8]>, Option<i128>)>>;

thread_local! {
    static FLAGS: std::cell::RefCell<FlagCache> = const { std::cell::RefCell::new(Vec::new()) };
}
const FLAG_CACHE: usize = 64;
/// The longest token the cache keeps (a longer one is parsed each time).
const FLAG_TOKEN_MAX: usize = 256;

/// [`parse_flags`], remembered for recent tokens.
fn flags_of(tok: &[u8], table: Option<Names>) -> Option<i128> {
    if tok.len() > FLAG_TOKEN_MAX {
        return parse_flags(tok, table);
    }
    let (tp, tl) = table.map_or((0, 0), |t| (t.as_ptr() as usize, t.len()));
    use std::hash::BuildHasher;
    let slot = foldhash::fast::FixedState::default().hash_one((tp, tok)) as usize % FLAG_CACHE;
    let hit = FLAGS.with(|c| {
        c.borrow()
            .get(slot)
            .and_then(Option::as_ref)
            .filter(|(p, l, k, _)| (*p, *l) == (tp, tl) && **k == *tok)
            .map(|e| e.3)
    });
    if let Some(v) = hit {
        return v;
    }
    let v = parse_flags(tok, table);
    FLAGS.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_empty() {
            c.resize(FLAG_CACHE, None);
        }
        c[slot] = Some((tp, tl, tok.into(), v));
    });
    v
}

fn is_digit_or_minus(c: u8) -> bool {
    c.is_ascii_digit() || c == b'-'
}

/// Whether `tok` is an fd with its `-y` decoration: strace prints the
/// `<` right after the number (`3</dev/kfd>`).  A `<` further on is no
/// decoration: a shift (`1<<16`) or a `-X verbose` comment holding one
/// (`0xffffffffffffffff /* …|0xffff<<PR_MTE_TAG_SHIFT */`, issue 33).
fn decorated_fd(tok: &[u8]) -> bool {
    let k = skip(tok, usize::from(at(tok, 0) == b'-'), |c| {
        c.is_ascii_alphanumeric()
    });
    at(tok, k) == b'<' && at(tok, k + 1) != b'<'
}

/// syscalls.used_fds
pub fn used_fds(call: &mut Call<'_>) -> (Vec<i32>, Vec<Option<Text>>) {
    let positions = fd_positions(&call.name);
    if positions.is_empty() && !call.args.iter().any(|a| a.contains(&b'<')) {
        return (vec![], vec![]);
    }
    let skip = skip_positions(&call.name);
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    for i in 0..call.args.len() {
        let tok = &call.args[i];
        if skip.contains(&i) || tok.is_empty() || !is_digit_or_minus(tok[0]) {
            continue;
        }
        let decorated = decorated_fd(tok);
        if !decorated && !positions.contains(&i) {
            continue;
        }
        let (fd, path) = fd_text(Some(tok));
        let Some(fd) = fd else { continue };
        if fd < 0 && (decorated || fd < -0x7FFFFFFF) {
            continue;
        }
        let fd = call.fd(fd);
        fds.push(fd);
        paths.push(path);
    }
    (fds, paths)
}

/// The items of the `[…]` whose `[` is at `bracket`, and its end.
fn array_items(tok: &[u8], bracket: usize) -> (Vec<Vec<u8>>, usize) {
    let Some(end) = matching(tok, bracket) else {
        return (vec![], tok.len());
    };
    let items = split_top(&tok[bracket + 1..end])
        .into_iter()
        .filter(|x| !x.is_empty() && x != b"...")
        .collect();
    (items, end)
}

fn cmsg_fds(call: &mut Call<'_>, i: usize) -> (Vec<i32>, Vec<Option<Text>>) {
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    let Some(tok) = call.arg(i).filter(|t| !t.is_empty()).map(<[u8]>::to_vec) else {
        return (fds, paths);
    };
    if !contains(&tok, b"cmsg_data=[") {
        return (fds, paths);
    }
    if !(contains(&tok, b"SCM_RIGHTS") || contains(&tok, b"cmsg_type=0x1")) {
        return (fds, paths);
    }
    let mut pos = 0;
    while let Some(i) = find(&tok[pos.min(tok.len())..], b"cmsg_data=[").map(|q| pos + q) {
        let start = i + 11;
        let (items, close) = array_items(&tok, start - 1);
        for it in items {
            if let (Some(fd), path) = parse_fd(&it)
                && fd >= 0
            {
                let fd = call.fd(fd);
                fds.push(fd);
                paths.push(text(path));
            }
        }
        pos = close.max(start);
    }
    (fds, paths)
}

fn fd_array(call: &mut Call<'_>, tok: Option<&[u8]>) -> (Vec<i32>, Vec<Option<Text>>) {
    let Some(tok) = tok.filter(|t| t.starts_with(b"[")) else {
        return (vec![], vec![]);
    };
    let (items, _) = array_items(tok, 0);
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    for it in items {
        if let (Some(fd), path) = parse_fd(&it) {
            let fd = call.fd(fd);
            fds.push(fd);
            paths.push(text(path));
        }
    }
    (fds, paths)
}

fn cloexec_flag(tok: Option<&[u8]>) -> bool {
    let Some(tok) = tok.filter(|t| !t.is_empty()) else {
        return false;
    };
    if contains(tok, b"CLOEXEC") {
        return true;
    }
    parse_int(&strip_comment(tok).0).is_some_and(|v| v & O_CLOEXEC != 0)
}

/// What normalize makes of a call: the event's name and kind.
pub struct Normalized {
    pub name: Name,
    pub kind: Kind,
}

fn owned_name(name: &str) -> Name {
    syscall(name)
}

/// syscalls.normalize
#[inline(always)]
pub fn normalize(call: &mut Call<'_>) -> Normalized {
    if let Some(rest) = call.name.strip_prefix("syscall_") {
        let num = if rest.starts_with("0x") {
            parse_int(rest.as_bytes())
        } else {
            values::int0(rest.as_bytes())
        };
        if let Some(n) = num.and_then(x86_64_unknown) {
            call.name = Cow::Borrowed(n);
        }
    }
    // (the kind made where the Normalized is returned, with no Option of
    // it first: a Kind moved is a copy of ~180 bytes, an event a line)
    let kind = match &*call.name {
        "close" => close(call),
        "close_range" => close_range(call),
        "ioctl" => ioctl(call),
        "mmap" | "mmap2" => mmap(call),
        "munmap" => Kind::Munmap(Munmap {
            addr: {
                let v = int_of(call.arg(0), None, 0);
                call.u64(v)
            },
            length: {
                let v = int_of(call.arg(1), None, 0);
                call.u64(v)
            },
        }),
        "mremap" => mremap(call),
        "clone" | "clone2" | "clone3" | "fork" | "vfork" => clone(call),
        "execve" | "execveat" => exec(call),
        "exit" | "exit_group" => exit(call),
        "dup" | "dup2" | "dup3" => dup(call),
        "fcntl" | "fcntl64" => match fcntl(call) {
            Some(k) => k,
            None => return other(call),
        },
        "pipe" | "pipe2" | "socketpair" => pair(call),
        "recvmsg" | "recvmmsg" => recvmsg(call),
        "sendmsg" | "sendmmsg" => sendmsg(call),
        "pidfd_getfd" => pidfd_getfd(call),
        n if fd_result(n).is_some() => open(call),
        _ => return other(call),
    };
    let name = match &kind {
        // the kinds whose name is their KINDS default (events.py)
        Kind::Close(_) => Cow::Borrowed("close"),
        Kind::CloseRange(_) => Cow::Borrowed("close_range"),
        Kind::Ioctl(_) => Cow::Borrowed("ioctl"),
        Kind::Munmap(_) => Cow::Borrowed("munmap"),
        Kind::Mremap(_) => Cow::Borrowed("mremap"),
        _ => owned_name(&call.name),
    };
    Normalized { name, kind }
}

/// [`normalize`] of a call no kind of its own takes: an intent call, else
/// a syscall with the fds it uses.
fn other(call: &mut Call<'_>) -> Normalized {
    if call.name.starts_with("hsa_") {
        return Normalized {
            name: intent::intent_name(&call.name),
            kind: intent(call),
        };
    }
    let (fds, paths) = used_fds(call);
    Normalized {
        name: owned_name(&call.name),
        kind: Kind::Syscall(Syscall { fds, paths }),
    }
}

fn open(call: &mut Call<'_>) -> Kind {
    // (the tokens borrowed from the call, not copied: this is every
    // open's event)
    let mut path = call.ret_path.take();
    let name: &str = &call.name;
    let (ptok, ftok): (Option<&[u8]>, Option<Cow<'_, [u8]>>) = match name {
        "open" | "creat" => (call.arg(0), call.arg(1).map(Cow::Borrowed)),
        "openat2" | "openat" | "open_by_handle_at" => (call.arg(1), call.arg(2).map(Cow::Borrowed)),
        _ => (None, Some(Cow::Owned(call.args.join(&b' ')))),
    };
    if path.is_none()
        && let Some(p) = ptok.filter(|p| p.starts_with(b"\""))
        && matches!(name, "open" | "openat" | "openat2" | "creat")
    {
        path = Some(parse_string(p).0);
    }
    let mut cloexec = cloexec_flag(ftok.as_deref())
        || matches!(name, "pidfd_open" | "pidfd_getfd" | "memfd_secret");
    if name == "creat" {
        cloexec = false;
    }
    let origin = Cow::Borrowed(fd_result(name).unwrap_or("open"));
    let ok = call.ok_fd_result();
    let fds = call.ret_fds();
    let paths = if ok { vec![text(path)] } else { vec![] };
    Kind::FdCreate(FdCreate {
        origin,
        fds,
        paths,
        cloexec,
        ..Default::default()
    })
}

fn pair(call: &mut Call<'_>) -> Kind {
    let tok = if call.name.starts_with("pipe") {
        call.arg(0)
    } else {
        call.arg(3)
    }
    .map(<[u8]>::to_vec);
    let ok = call.ret == Some(0) && call.err.is_none();
    let (fds, paths) = if ok {
        fd_array(call, tok.as_deref())
    } else {
        (vec![], vec![])
    };
    let origin: Name = match &*call.name {
        "socketpair" => Cow::Borrowed("socketpair"),
        _ => Cow::Borrowed("pipe"),
    };
    Kind::FdCreate(FdCreate {
        origin,
        fds,
        paths,
        cloexec: cloexec_flag(call.arg(1)),
        ..Default::default()
    })
}

fn dup(call: &mut Call<'_>) -> Kind {
    let (src, _) = fd_of(call.arg(0));
    let mut replace = false;
    let mut cloexec = false;
    let mut new = None;
    if matches!(&*call.name, "dup2" | "dup3") {
        new = fd_of(call.arg(1)).0;
        replace = new.is_some() && new != src;
        cloexec = call.name == "dup3" && cloexec_flag(call.arg(2));
    }
    let fds = call.ret_fds();
    let paths = call.ret_paths();
    Kind::FdCreate(FdCreate {
        origin: Cow::Borrowed("dup"),
        fds,
        paths,
        cloexec,
        src_fd: call.opt_fd(src),
        replace,
        new_fd: call.opt_fd(new),
    })
}

fn fcntl(call: &mut Call<'_>) -> Option<Kind> {
    let (fd, _) = fd_of(call.arg(0));
    let cmd_tok = call.arg_or_empty(1);
    let (c, _) = strip_comment(cmd_tok);
    let cmd = match strip(&c) {
        b"F_DUPFD" => Some(0),
        b"F_GETFD" => Some(1),
        b"F_SETFD" => Some(2),
        b"F_DUPFD_CLOEXEC" => Some(1030),
        _ => parse_int(&c),
    };
    match cmd {
        Some(0) | Some(1030) => {
            let fds = call.ret_fds();
            let paths = call.ret_paths();
            Some(Kind::FdCreate(FdCreate {
                origin: Cow::Borrowed("dup"),
                fds,
                paths,
                cloexec: cmd == Some(1030),
                src_fd: call.opt_fd(fd),
                ..Default::default()
            }))
        }
        Some(2) => {
            let arg = match call.arg(2) {
                Some(a) if !a.is_empty() => a,
                _ => b"0",
            };
            let on = if contains(arg, b"FD_CLOEXEC") {
                true
            } else {
                parse_int(&strip_comment(arg).0).is_some_and(|v| v != 0 && v & 1 != 0)
            };
            let fd = fd.map_or(-1, |f| call.fd(f));
            Some(Kind::SetCloexec(SetCloexec { fd, cloexec: on }))
        }
        _ => None,
    }
}

fn close(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_text(call.arg(0));
    match fd {
        None => Kind::Syscall(Syscall::default()),
        Some(fd) => Kind::Close(Close {
            fd: call.fd(fd),
            path,
        }),
    }
}

fn u32_of(call: &mut Call<'_>, v: i128) -> u32 {
    u32::try_from(v).unwrap_or_else(|_| {
        call.overflow = true;
        0
    })
}

fn close_range(call: &mut Call<'_>) -> Kind {
    let first = int_of(call.arg(0), None, 0) & 0xFFFFFFFF;
    let last = int_of(call.arg(1), None, 0xFFFFFFFF) & 0xFFFFFFFF;
    let flags = int_of(call.arg(2), Some(CLOSE_RANGE_NAMES), 0);
    Kind::CloseRange(CloseRange {
        first: first as u32,
        last: last as u32,
        flags: u32_of(call, flags),
    })
}

fn is_int(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_))
}

/// Recent fd decorations (the `</dev/kfd<char 238:0>>` of
/// `3</dev/kfd<char 238:0>>`) and the path each names, direct-mapped by
/// the decoration's hash: a trace names the same few files on most of its
/// calls, often through several fd numbers, and each of those calls'
/// events shares the one path instead of decoding and copying it again.
/// The two slots hit last are tried first, by comparison alone: most calls
/// name the fd the call before named (the kfd, a render node), and hashing
/// a decoration cost more than comparing it.
/// A decoration and the path it names.
type FdEntry = (Box<[u8]>, Option<Text>);

#[derive(Default)]
struct FdCache {
    slots: Vec<Option<FdEntry>>,
    /// the slots hit or filled last, newest first
    recent: [usize; 2],
}

impl FdCache {
    /// The path of `deco` when slot `i` holds it.
    fn at(&self, i: usize, deco: &[u8]) -> Option<Option<Text>> {
        self.slots
            .get(i)?
            .as_ref()
            .filter(|(k, _)| k.len() == deco.len() && **k == *deco)
            .map(|(_, path)| path.clone())
    }

    fn touch(&mut self, i: usize) {
        if self.recent[0] != i {
            self.recent = [i, self.recent[0]];
        }
    }
}

thread_local! {
    static FDS: std::cell::RefCell<FdCache> = std::cell::RefCell::new(FdCache::default());
}
const FD_CACHE: usize = 64;
/// The longest token the cache keeps: an fd number with a decorated path
/// of up to PATH_MAX, and more.
const FD_TOKEN_MAX: usize = 8192;

/// Where the decoration of `tok` starts when `tok` is a [`bare_number`]
/// then a `<` (the first `<` of the token, all before it digits).
fn deco_start(tok: &[u8]) -> Option<usize> {
    let from = usize::from(tok.first() == Some(&b'-'));
    let digits = tok[from..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let lt = from + digits;
    (digits > 0 && tok.get(lt) == Some(&b'<')).then_some(lt)
}

/// [`fd_of`] with its path as a [`Text`], shared with earlier calls that
/// named the same decoration.  For a token that is a number then its
/// decoration, with no comment in it (what the cache keeps), `fd_of`'s
/// answer is the number's value and the path the decoration alone names
/// (`parse_fd`), so the cache is keyed by the decoration.
fn fd_text(tok: Option<&[u8]>) -> (Option<i128>, Option<Text>) {
    let Some(tok) = tok else {
        return (None, None);
    };
    // (a token past FD_TOKEN_MAX is decoded each time: the cache stays small
    // whatever a line holds)
    let Some(lt) = deco_start(tok).filter(|_| tok.len() <= FD_TOKEN_MAX) else {
        let (fd, path) = fd_of(Some(tok));
        return (fd, text(path));
    };
    let (head, deco) = tok.split_at(lt);
    let hit = |path: Option<Text>| match fd_number(head) {
        Some(fd) => (Some(fd), path),
        None => (None, None),
    };
    let recent = FDS.with(|c| {
        let mut c = c.borrow_mut();
        let [a, b] = c.recent;
        for i in [a, b] {
            if let Some(path) = c.at(i, deco) {
                c.touch(i);
                return Some(path);
            }
        }
        None
    });
    if let Some(path) = recent {
        return hit(path);
    }
    use std::hash::BuildHasher;
    let slot = foldhash::fast::FixedState::default().hash_one(deco) as usize % FD_CACHE;
    let cached = FDS.with(|c| {
        let mut c = c.borrow_mut();
        let path = c.at(slot, deco)?;
        c.touch(slot);
        Some(path)
    });
    if let Some(path) = cached {
        return hit(path);
    }
    let (fd, path) = fd_of(Some(tok));
    let path = text(path);
    // kept when the answer is the number's and the decoration's: no
    // comment (which fd_of cuts first), no `<<` (no decoration), a number
    // that has a value (else no path was read)
    if fd.is_some() && at(deco, 1) != b'<' && comment_start(deco).is_none() {
        FDS.with(|c| {
            let mut c = c.borrow_mut();
            if c.slots.is_empty() {
                c.slots.resize(FD_CACHE, None);
            }
            c.slots[slot] = Some((deco.into(), path.clone()));
            c.touch(slot);
        });
    }
    (fd, path)
}

fn mmap(call: &mut Call<'_>) -> Kind {
    let addr = int_of(call.arg(0), None, 0);
    let (fd, path) = fd_text(call.arg(4));
    let mut off = int_of(call.arg(5), None, 0);
    if call.name == "mmap2" {
        off *= 4096;
    }
    let length = int_of(call.arg(1), None, 0);
    let prot = int_of(call.arg(2), Some(MMAP_NAMES), 0);
    let flags = int_of(call.arg(3), Some(MMAP_NAMES), 0);
    Kind::Mmap(Mmap {
        addr: if addr == 0 {
            None
        } else {
            Some(call.u64(addr))
        },
        length: call.u64(length),
        prot: call.u64(prot),
        flags: call.u64(flags),
        fd: fd.map_or(-1, |f| call.fd(f)),
        path,
        offset: call.u64(off),
    })
}

fn mremap(call: &mut Call<'_>) -> Kind {
    let flags = int_of(call.arg(3), Some(MMAP_NAMES), 0);
    let new = call.arg(4).map(|n| int_of(Some(n), None, 0));
    let old_addr = int_of(call.arg(0), None, 0);
    let old_len = int_of(call.arg(1), None, 0);
    let new_len = int_of(call.arg(2), None, 0);
    Kind::Mremap(Mremap {
        old_addr: call.u64(old_addr),
        old_len: call.u64(old_len),
        new_len: call.u64(new_len),
        flags: call.u64(flags),
        new_addr: new.map(|n| call.u64(n)),
    })
}

fn flag_total(tok: &[u8]) -> i128 {
    let (t, _) = strip_comment(tok);
    let mut total = 0;
    for part in t.split(|&c| c == b'|') {
        let part = strip(part);
        let v = parse_int(part).unwrap_or_else(|| {
            let p = std::str::from_utf8(part).unwrap_or("");
            CLONE_FLAGS
                .iter()
                .chain(SIGNALS)
                .find(|x| x.0 == p)
                .map_or(0, |x| x.1)
        });
        total |= v;
    }
    total
}

/// syscalls.clone_flags: the flags of clone/clone3/fork/vfork.
pub fn clone_flags(call: &Call<'_>) -> i128 {
    match &*call.name {
        "fork" => return SIGCHLD,
        "vfork" => return CLONE_VM | CLONE_VFORK | SIGCHLD,
        _ => {}
    }
    let mut tok: Option<Vec<u8>> = None;
    if call.name == "clone3" {
        let first = call.arg_or_empty(0);
        if first.starts_with(b"{") {
            let part = match find(first, b" => ") {
                Some(k) => &first[..k],
                None => first,
            };
            let mut st = parse_value(part);
            if let Value::Pair(p) = st {
                st = p.0;
            }
            if let Value::Struct(_) = &st {
                match st.get("flags") {
                    None => return 0,
                    Some(Value::Int(i)) => return (*i).into(),
                    Some(Value::UInt(u)) => return (*u).into(),
                    Some(Value::Str(t) | Value::Raw(t)) => tok = Some(t.0.to_vec()),
                    // str() of a list, dict or tuple names no flag
                    Some(_) => return 0,
                }
            }
        }
        if tok.is_none() {
            if let Some(i) = find(first, b"flags=") {
                let rest = &first[i + 6..];
                tok = Some(rest.split(|&c| c == b',').next().unwrap_or(b"").to_vec());
            } else if !first.starts_with(b"{") {
                return THREAD_GUESS;
            }
        }
    } else {
        for (i, k) in &call.names {
            if &k[..] == b"flags" {
                tok = call.arg(*i).map(<[u8]>::to_vec);
            }
        }
        if tok.is_none() {
            for a in &call.args {
                if let Some(r) = a.strip_prefix(b"flags=") {
                    tok = Some(r.to_vec());
                }
            }
            if tok.is_none() && !call.args.is_empty() {
                tok = Some(call.args[0].to_vec());
            }
        }
    }
    match tok {
        None => 0,
        Some(t) => flag_total(&t),
    }
}

fn clone(call: &mut Call<'_>) -> Kind {
    let flags = clone_flags(call);
    let ok = call.ret.is_some_and(|r| r > 0) && call.err.is_none();
    let child = if ok {
        let r = call.ret.unwrap();
        Some(u32::try_from(r).unwrap_or_else(|_| {
            call.overflow = true;
            0
        }))
    } else {
        None
    };
    Kind::Clone(Clone {
        child,
        thread: flags & CLONE_THREAD != 0,
        share_files: flags & CLONE_FILES != 0,
        flags: call.u64(flags),
    })
}

fn exec(call: &mut Call<'_>) -> Kind {
    let tok = call.arg(if call.name == "execve" { 0 } else { 1 });
    let path = tok
        .filter(|t| t.starts_with(b"\""))
        .map(|t| parse_string(t).0);
    if call.err.is_some() {
        let (fds, paths) = used_fds(call);
        return Kind::Syscall(Syscall { fds, paths });
    }
    Kind::Exec(Exec { path: text(path) })
}

fn exit(call: &mut Call<'_>) -> Kind {
    let st = int_of(call.arg(0), None, 0);
    Kind::Exit(Exit {
        whole: call.name == "exit_group",
        status: Some(i64::try_from(st).unwrap_or_else(|_| {
            call.overflow = true;
            0
        })),
        signal: None,
    })
}

fn recvmsg(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_of(call.arg(0));
    let ok = call.ok_fd_result();
    let (fds, paths) = if ok {
        cmsg_fds(call, 1)
    } else {
        (vec![], vec![])
    };
    if !fds.is_empty() {
        let cloexec = contains(call.arg_or_empty(2), b"MSG_CMSG_CLOEXEC");
        return Kind::FdCreate(FdCreate {
            origin: Cow::Borrowed("recvmsg"),
            fds,
            paths,
            cloexec,
            src_fd: call.opt_fd(fd),
            ..Default::default()
        });
    }
    match fd {
        None => Kind::Syscall(Syscall::default()),
        Some(f) => Kind::Syscall(Syscall {
            fds: vec![call.fd(f)],
            paths: vec![text(path)],
        }),
    }
}

fn sendmsg(call: &mut Call<'_>) -> Kind {
    let (mut fds, mut paths) = used_fds(call);
    let (more, mpaths) = cmsg_fds(call, 1);
    fds.extend(more);
    paths.extend(mpaths);
    Kind::Syscall(Syscall { fds, paths })
}

fn pidfd_getfd(call: &mut Call<'_>) -> Kind {
    let (target, _) = fd_of(call.arg(1));
    let fds = call.ret_fds();
    let paths = call.ret_paths();
    Kind::FdCreate(FdCreate {
        origin: Cow::Borrowed("pidfd_getfd"),
        fds,
        paths,
        cloexec: true,
        src_fd: call.opt_fd(target),
        ..Default::default()
    })
}

#[allow(dead_code)]
fn _ws(c: u8) -> bool {
    is_ws(c)
}

#[cfg(test)]
mod tests;
