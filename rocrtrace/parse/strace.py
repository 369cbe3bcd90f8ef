"""The strace line grammar (and the preload dialect, which is strace plus
``#`` lines) → normalized events.

One ``Parser`` reads one file line by line.  Events come out in completion
order for that file: a split call is emitted at its resumed line.  Events
are held back until the next line that is not a stack frame so ``-k``
frames can be attached first.
"""
from __future__ import annotations

import re

from .pyevents import (Event, Exec, Exit, FdSnapshot, Frame, InputInfo,
                      ModuleMap, ProcessInfo, Signal)
from . import syscalls
from .syscalls import Call, normalize
from .tokens import parse_int, scan_args, strip_name, deco_end, decoration_path

try:
    # The compiled tokenizer for the common line shapes (the Rust core,
    # src/parse/tokens.rs, built at install); it refuses every other line,
    # and without it the Python grammar below does all the work.
    from .._engine import scan_line as _SCAN
except ImportError:
    _SCAN = None

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PREFIX = re.compile(r"""
    (?:\[pid\s+(?P<pid1>\d{1,10})(?P<comm1><[^>]*>)?\]\s+
      |(?P<pid2>\d{1,7})(?P<comm2><[^>]*>)?\s+)?
    (?:\[(?P<ctx>[^\]\s]*:[^\]]*)\]\s+)?
    (?:(?P<tod>\d\d:\d\d:\d\d(?:\.\d+)?)\s+
      |(?P<epoch>\d{9,}(?:\.\d+)?)\s+
      |\s*(?P<rel>\d{1,8}(?:\.\d+)?)\s+)?
    (?:\(\+\s*(?P<rel2>\d+(?:\.\d+)?)\)\s+)?
    (?:\[\s*(?P<scno>[\d?]+)\]\s+)?
    (?:\[(?P<ip>[0-9a-f?]{8,16})\]\s+)?
    """, re.X)
_COMMON_PREFIX = re.compile(
    r"(\d{1,7}) +(?:(\d{9,}\.\d+)|(\d\d):(\d\d):(\d\d\.\d+)) (?=[\w<+-])")
# ``???`` is strace's name for a syscall number it has no entry for.
_NAME = re.compile(r"([A-Za-z_][\w#:]*|\?\?\?)\(")
_RESUMED = re.compile(r"<\.\.\. ([\w#:]+|\?\?\?) resumed>")
# Results are at most 64 digits: longer numbers are not results strace
# prints (and int() of thousands of digits is slow or refused).
_RESULT = re.compile(r"\s*=\s*(0x[0-9a-fA-F]{1,64}(?![0-9a-fA-F])|-?\d{1,64}(?!\d|x[0-9a-fA-F])|\?)")
# A non-negative result with no decoration, error or comment, optionally timed.
_PLAIN_RESULT = re.compile(r" = (0x[0-9a-fA-F]{1,64}|\d{1,64})(?: <(\d+(?:\.\d*)?)>)?\Z")
# Lines that belong to the call before them, like -k frames and ' | ' dumps:
# the headers of -e read=/write= dumps of vectors and the -e kvm=vcpu lines.
_EXTRA = re.compile(r" (?:\* \d+ bytes in buffer \d+|= \d+ buffers in vector \d+)\s*\Z"
                    r"| VCPU:\d+<")
_DUR = re.compile(r"\s*<(\d+(?:\.\d*)?|unavailable)>\s*$")
_ERR = re.compile(r"\s*([A-Z][A-Z0-9_]+)(?:\s|$)")
_ERRNO = re.compile(r"\s*\(errno (\d+)\)")
_FRAME = re.compile(r"^ > (?P<obj>.*?)\((?P<sym>.*)\) \[0x(?P<addr>[0-9a-fA-F]+)\]"
                    r"(?: (?P<src>\S+):(?P<line>\d{1,10}))?\s*$")
_FRAME_BARE = re.compile(r"^ > (?P<obj>\S.*?)(?: \[0x(?P<addr>[0-9a-fA-F]+)\])?\s*$")
# strace's messages come under its argv[0]: strace, /usr/bin/strace,
# ../../src/strace, strace-6.1 ...  (_diag_match finds where the name starts
# when the message is glued to the end of a cut trace line).
_DIAG = re.compile(r"(?:strace[\w.+-]*: |\A)(?:\[ )?Process (\d{1,10}) (attached|detached)"
                   r"(?: with \d+ threads)?(?: - interrupt to quit)?\s*\Z")
_DIAG_PREFIX = re.compile(r"(?:\.{0,2}/)?(?:[\w.+-]+/)*[\w.+-]*strace[\w.+-]*: ")
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+-/")
_EXITED = re.compile(r"\+\+\+ (?:exited with (-?\d{1,20})|killed by (\w+)(?: \(core dumped\))?"
                     r"|superseded by execve in pid (\d{1,10})) \+\+\+")
_SIGNAL = re.compile(r"--- (?:stopped by )?(SIG\w+|\w+)")
_PERSONALITY = re.compile(r"\[ Process PID=\d+ runs in .* mode\. \]")
_SUMMARY_ROW = re.compile(r"^\s*(?:[\d.]+\s+){2,}[\w#:]+\s*$|^-+(?: -+)+\s*$")
_MAP = re.compile(r"#\s*map\s+([0-9a-fA-F]+)-([0-9a-fA-F]+)\s+(\S+)\s+([0-9a-fA-F]+)\s+(.*?)"
                  r"(?:\s+build-id=([0-9a-fA-F]+))?\s*$")
_KV = re.compile(r"(\w+)=(\S+)")
_HEXDIGITS = re.compile(r"[0-9a-fA-F]+")

_CLONES = frozenset(("clone", "clone2", "clone3", "fork", "vfork", "syscall_0x1b3",
                     "syscall_435"))
_SELF_PID = frozenset(("set_tid_address", "getpid", "gettid"))
_NORETURN = frozenset(("exit", "exit_group"))
_UNFINISHED = " <unfinished ...>"
TEXT_MAX = 300


def _number(val: str) -> int | None:
    """A result value: decimal, hex, or octal with a leading 0 (umask's
    ``= 022``, which int(…, 0) refuses); None for what is not a number."""
    try:
        return int(val, 0)
    except ValueError:
        return parse_int(val)


def _diag_match(line: str):
    """The strace message at the end of ``line`` and where it starts
    (its program name included), or None."""
    dm = _DIAG.search(line)
    if dm is None:
        return None, 0
    j = dm.start()
    if j == 0:
        return dm, 0
    # the program name: path characters before the match; when glued to
    # trace text, the part from the first "/", "./" or "../"
    k = j
    while k > 0 and line[k - 1] in _PATH_CHARS:
        k -= 1
    if k == 0 and "(" not in line[:j]:
        return dm, 0
    cand = line[k:j]
    for i in range(len(cand)):
        if cand[i] == "/" or cand.startswith("./", i) or cand.startswith("../", i):
            if i == 0 or cand[i - 1] not in "./":
                return dm, k + i
    return dm, j


def _time_of(m) -> tuple[float | None, float | None]:
    """(absolute time, relative delta) of a prefix match."""
    t = None
    tod = m.group("tod")
    if tod:
        h, mi, s = tod.split(":")
        t = int(h) * 3600 + int(mi) * 60 + float(s)
    else:
        ep = m.group("epoch")
        if ep:
            t = float(ep)
    rel = m.group("rel2") or m.group("rel")
    return t, (float(rel) if rel is not None else None)


class _Pending:
    __slots__ = ("name", "args", "line", "time", "text", "pid", "tid")

    def __init__(self, name, args, line, time, text, pid, tid):
        self.name, self.args, self.line, self.time = name, args, line, time
        self.text, self.pid, self.tid = text, pid, tid


class Parser:
    """Parse one file.  ``tid`` is the thread of a ``-ff`` file (from its
    name); ``tgid_of`` an optional map tid → tgid known from elsewhere."""

    def __init__(self, file: str, info: InputInfo | None = None,
                 tid: int | None = None, tgid_of: dict | None = None,
                 handover: dict | None = None):
        self.file = file
        self.info = info or InputInfo(file=file)
        self.file_tid = tid
        self.tgid = dict(tgid_of or {})     # tid -> tgid
        self.fixed_tgid: int | None = None  # preload: the header pid
        self.inflight: dict = {}            # tid -> _Pending
        self.live: set = set()
        self.root: int | None = tid         # the only tracee before any prefix
        self.nopid: list = []               # events waiting to learn the root pid
        self.hold: list = []                # events waiting for -k frames
        self.target: Event | None = None    # where frames go
        self.exit_hold: dict = {}           # tid -> exit/exit_group event
        self.expect_exec: set = set()       # tids whose execve resumes elsewhere
        self.out: list = []
        self.rel_sum = 0.0
        self.fragment: tuple | None = None  # (line, text) cut by a diagnostic
        self.in_summary = False
        self.snapshot: FdSnapshot | None = None
        self.last_time: float | None = None
        self.cont: dict = {}                # tid -> (line, pieces) of a `#+` record
        self.fresh: tuple | None = None     # (tid,) of an unfinished call on the last line
        # -ff: tid -> (line, text) of an execve whose thread became the
        # leader (``<pid changed to N ...>``): the leader's file completes it
        self.handover: dict | None = handover

    # --- driving ---------------------------------------------------------

    def feed(self, lineno: int, line: str) -> list[Event]:
        """Parse one line (without its newline); returns completed events."""
        self.info.lines += 1
        if not line:
            return self._drain()
        c = line[0]
        if c == " ":
            if line.startswith(" > ") or line.startswith(" | "):
                if line[1] == ">":
                    self._frame(line)
                return self._drain()
            if _EXTRA.match(line):
                return self._drain()
        fresh = self.fresh
        if fresh is not None:
            self.fresh = None
        if "\x1b" in line:
            line = _ANSI.sub("", line)
            if not line:
                return self._drain()
        self._flush_hold()
        if c == "#":
            self._meta(lineno, line)
            return self._drain()
        if self.snapshot is not None:
            self._emit(self.snapshot)
            self.snapshot = None
        if self.fragment is not None and self._join_fragment(lineno, line):
            return self._drain()
        if self.in_summary and self._diagnostic(lineno, line):
            # a -c/-C table row: never read as a line with an -r timestamp
            return self._drain()
        if not self._line(lineno, line):
            if not self._diagnostic(lineno, line) and not (
                    fresh is not None and self._bare_resumed(lineno, line, fresh[0])):
                self.info.add_unparsed(lineno, line)
        return self._drain()

    def _bare_resumed(self, lineno: int, line: str, tid) -> bool:
        """strace 5.2-6.1 with -z/-Z/-e status= cut a buffered line with
        ' <unfinished ...>' and printed the rest (``NULL) = 0``, ``) = -1
        EINVAL``) on the next line, unprefixed: the resumption of that call."""
        p = self.inflight.get(tid)
        if p is None or "=" not in line:
            return False
        return self._resumed(lineno, line, f"<... {p.name} resumed>" + line,
                             tid if self.info.has_pids else None, None)

    def finish(self) -> list[Event]:
        """End of file: unfinished calls become partial events."""
        for first, parts in self.cont.values():
            self.info.add_unparsed(first, "".join(parts))
        self.cont.clear()
        if self.fragment is not None:
            self.info.add_unparsed(*self.fragment)
            self.fragment = None
        self._flush_hold()
        if self.snapshot is not None:
            self._emit(self.snapshot)
            self.snapshot = None
        for tid, p in list(self.inflight.items()):
            self.info.unfinished += 1
            ev = self._call_event(p.name, p.args, None, None, None, p.line, None,
                                  p.pid, tid, p.time, None, p.text, partial=True)
            self._emit(ev)
        self.inflight.clear()
        for ev in self.exit_hold.values():
            self._emit(ev)
        self.exit_hold.clear()
        self._flush_hold()
        if self.nopid:
            self.out.extend(self.nopid)
            self.nopid = []
        return self._drain()

    def _drain(self) -> list[Event]:
        out = self.out
        if not out:
            return []
        self.out = []
        self.info.events += len(out)
        return out

    def _emit(self, ev: Event) -> None:
        self.hold.append(ev)
        self.target = ev

    def _flush_hold(self) -> None:
        hold = self.hold
        if not hold:
            return
        if self.root is None and self.file_tid is None and self.fixed_tgid is None and (
                self.nopid or (hold[0].tid is None if len(hold) == 1
                               else any(ev.tid is None for ev in hold))):
            # events of a tracee whose pid is not known yet wait for it
            for ev in self.hold:
                if ev.tid is None:
                    self.nopid.append(ev)
                elif self.nopid:
                    self.nopid.append(ev)
                else:
                    self.out.append(ev)
            if len(self.nopid) > 100000:     # never learnt: stop buffering
                self.out.extend(self.nopid)
                self.nopid = []
        else:
            self.out.extend(self.hold)
        self.hold = []

    def _learn_root(self, tid: int) -> None:
        """The first process's pid became known: fill in earlier events."""
        if self.root is not None:
            return
        self.root = tid
        self.tgid.setdefault(tid, tid)
        self.live.add(tid)
        for ev in self.nopid:
            if ev.tid is None:
                ev.tid = tid
                ev.pid = self.tgid.get(tid, tid)
        for ev in self.hold:
            if ev.tid is None:
                ev.tid = tid
                ev.pid = self.tgid.get(tid, tid)
        self.out.extend(self.nopid)
        self.nopid = []

    # --- identity --------------------------------------------------------

    def _tgid(self, tid: int | None) -> int | None:
        if tid is None:
            return None
        if self.fixed_tgid is not None:
            return self.fixed_tgid
        g = self.tgid.get(tid)
        if g is not None:
            return g
        # A new tid: a child whose parent's clone has not returned yet.
        g = tid
        for ptid, p in self.inflight.items():
            if p.name in _CLONES and ptid != tid:
                flags = syscalls.clone_flags(Call(p.name, p.args))
                if flags & syscalls.CLONE_FLAGS["CLONE_THREAD"]:
                    g = self.tgid.get(ptid, ptid)
                break
        self.tgid[tid] = g
        self.live.add(tid)
        return g

    def _who(self, p: str | int | None) -> tuple[int | None, bool]:
        """tid of a prefix's pid (its text, or the number the compiled
        tokenizer read; else the implied tracee); and had-pid."""
        if p is not None:
            tid = int(p)
            if not self.info.has_pids:
                self.info.has_pids = True
            if self.root is None and self.file_tid is None:
                # first prefixed line: an unprefixed past belongs to a tracee
                # that is not a clone child we know of
                if self.nopid and tid not in self.tgid:
                    self._learn_root(tid)
            return tid, True
        if self.file_tid is not None:
            return self.file_tid, False
        if len(self.live) == 1:
            return next(iter(self.live)), False
        return self.root, False

    # --- one line ----------------------------------------------------------

    def _line(self, lineno: int, line: str) -> bool:
        if _SCAN is not None:
            r = _SCAN(line)
            if r is not None:
                return self._scanned(lineno, line, r)
        m = _COMMON_PREFIX.match(line)
        if m is not None:
            # The usual `-f -ttt` / `-f -tt` prefix, without the general
            # pattern's alternatives.
            p, ep = m.group(1, 2)
            if ep is not None:
                t = float(ep)
            else:
                h, mi, sec = m.group(3, 4, 5)
                t = int(h) * 3600 + int(mi) * 60 + float(sec)
        else:
            m = _PREFIX.match(line)
            if m.end() == len(line):
                return False
            p = m.group("pid1") or m.group("pid2")
            t, rel = _time_of(m)
            if rel is not None:
                self.rel_sum += rel
                if t is None:
                    t = self.rel_sum
        body = line[m.end():]
        if t is not None:
            self.info.has_time = True
            self.last_time = t
        b0 = body[0]
        if b0 == "<":
            if body.startswith("<... "):
                return self._resumed(lineno, line, body, p, t)
            return False
        if b0 == "+" and body.startswith("+++ "):
            return self._plus(lineno, line, body, p, t)
        if b0 == "-" and body.startswith("--- "):
            return self._signal(lineno, line, body, p, t)
        if b0 == "[" and _PERSONALITY.match(body):
            return True
        nm = _NAME.match(body)
        if nm is None:
            return False
        return self._call(lineno, line, body, nm, p, t)

    def _call(self, lineno, line, body, nm, p, t) -> bool:
        name = nm.group(1)
        end = nm.end()
        unfinished = False
        never = False
        if body.endswith("...>"):
            if body.endswith(_UNFINISHED) or body.endswith("<unfinished ...>"):
                body = body[:body.rfind("<unfinished ...>")].rstrip()
                unfinished = True
            elif body.endswith("<detached ...>"):
                body = body[:body.rfind("<detached ...>")].rstrip()
                tid, _ = self._who(p)
                self.info.detached += 1
                args, _close = scan_args(body, end)
                ev = self._call_event(name, args, None, None, None, lineno, None,
                                      self._tgid(tid), tid, t, None, line, partial=True)
                self._emit(ev)
                return True
            elif "<pid changed to " in body:
                if self.handover is not None and self.file_tid in self.handover:
                    return True     # the leader's file completes this execve
                # alone: it stays unfinished (a partial event at the end)
                body = body[:body.rfind("<pid changed to ")].rstrip()
                unfinished = True
        if "<unfinished ...>)" in body:
            body = body.replace(" <unfinished ...>)", ")").replace("<unfinished ...>)", ")")
            never = True
        args, close = scan_args(body, end)
        tid, _ = self._who(p)
        if unfinished:
            self._start(lineno, line, name, args, tid, t)
            return True
        if close < 0:
            # cut short: by a diagnostic or the program's own output
            if self.fragment is None:
                self.fragment = (lineno, line)
                return True
            return False
        res = self._result(body, close + 1)
        if res is None:
            return False
        self._complete(lineno, line, name, args, res, never, tid, t)
        return True

    def _scanned(self, lineno: int, line: str, r: tuple) -> bool:
        """A line the compiled tokenizer took: what _line, _call/_resumed
        and _result compute for it, from its tokens."""
        kind, tid, t, name, args, ret, err, rpath, dur = r
        info = self.info
        info.has_time = True
        self.last_time = t
        if dur is not None:
            info.has_durations = True
        if rpath is not None:
            info.has_decorations = True
        tid, _ = self._who(tid)
        if kind == 0:
            self._complete(lineno, line, name, args, (ret, err, rpath, dur), False, tid, t)
        elif kind == 1:
            self._start(lineno, line, name, args, tid, t)
        else:
            p, args = self._take(name, args, tid)
            self._finish_resumed(lineno, line, name, args, (ret, err, rpath, dur), False,
                                 p, tid, t)
        return True

    def _start(self, lineno, line, name, args, tid, t) -> None:
        """An unfinished call: it waits for its resumed line."""
        if name in ("syscall_0x1b3", "syscall_435"):
            name = "clone3"
        pid = self._tgid(tid)
        old = self.inflight.pop(tid, None)
        if old is not None:
            self.info.unfinished += 1
            self._emit(self._call_event(old.name, old.args, None, None, None, old.line,
                                        None, old.pid, tid, old.time, None, old.text,
                                        partial=True))
        self.inflight[tid] = _Pending(name, args, lineno, t, line, pid, tid)
        self.fresh = (tid,)

    def _complete(self, lineno, line, name, args, res, never, tid, t) -> None:
        ret, err, rpath, dur = res
        pid = self._tgid(tid)
        ev = self._call_event(name, args, ret, err, rpath, lineno, None, pid, tid, t, dur,
                              line, partial=False)
        if never:
            ev.ret = None
        self._after_call(ev, tid)

    def _result(self, body: str, pos: int):
        """(ret, err, ret_path, dur) of the text after the closing ')';
        None when there is no ``= …``."""
        m = _PLAIN_RESULT.match(body, pos)
        if m is not None:
            val, d = m.group(1, 2)
            if d is None:
                return _number(val), None, None, None
            self.info.has_durations = True
            return _number(val), None, None, float(d)
        m = _RESULT.match(body, pos)
        if m is None:
            return None
        val = m.group(1)
        rest = body[m.end():]
        ret: int | None
        rpath = None
        err = None
        if val == "?":
            ret = None
        else:
            ret = _number(val)
            if rest.startswith("<"):
                e = deco_end(rest, 0)
                inner = rest[1:e]
                if inner.endswith("(deleted)") and not inner.endswith(" (deleted)"):
                    inner = inner[:-9]
                    if inner.endswith(">"):
                        inner = inner[:-1]
                    rpath = decoration_path(inner) + " (deleted)"
                else:
                    rpath = decoration_path(inner[:-1] if inner.endswith(">") else inner)
                rest = rest[e:]
                self.info.has_decorations = True
        dur = None
        if rest.endswith(">"):
            dm = _DUR.search(rest)
            if dm:
                d = dm.group(1)
                if d != "unavailable":
                    dur = float(d)
                    self.info.has_durations = True
                rest = rest[:dm.start()]
        if ret == -1 or ret is None:
            em = _ERR.match(rest)
            if em:
                err = em.group(1)
            elif ret == -1:
                nm = _ERRNO.match(rest)
                err = f"ERRNO_{nm.group(1)}" if nm else "EUNKNOWN"
        if err is not None and ret == -1:
            ret = -1
        return ret, err, rpath, dur

    def _call_event(self, name, args, ret, err, rpath, line, end_line, pid, tid, t, dur,
                    text, partial) -> Event:
        names = {}
        if args:
            if "=" in "".join(args):
                for i, a in enumerate(args):
                    if "=" in a and a[0].isalpha():
                        k, v = strip_name(a)
                        if k is not None:
                            names[i] = k
                            args[i] = v
            if not self.info.has_decorations:
                a0 = args[0]
                if a0 and a0[0].isdigit() and "<" in a0:
                    self.info.has_decorations = True
        call = Call(name, args, ret, err, rpath, names)
        base = dict(file=self.file, line=line, end_line=end_line, pid=pid, tid=tid,
                    time=t, dur=dur, ret=ret, err=err,
                    text=text if len(text) <= TEXT_MAX else text[:TEXT_MAX], partial=partial)
        ev = normalize(call, base)
        if call.malformed:
            # values of the wrong type were dropped: say which line
            self.info.add_unparsed(line, text)
        if name.startswith("hsa_"):
            self.info.intent_calls = True
        elif name == "ioctl" and getattr(ev, "arg", None) is not None:
            self.info.decoded_structs = True
        return ev

    def _after_call(self, ev: Event, tid: int | None) -> None:
        """Bookkeeping once a call completed: learn pids, clone children,
        hold exits for their frames."""
        name = ev.name
        if tid is None and name in _SELF_PID and ev.ret and ev.ret > 0:
            self._learn_root(ev.ret)
            ev.tid = ev.ret
            ev.pid = self.tgid.get(ev.ret, ev.ret)
            tid = ev.ret
        if name in ("clone", "clone2", "clone3", "fork", "vfork") and ev.ret and ev.ret > 0:
            child = ev.ret
            parent_g = ev.pid if ev.pid is not None else tid
            if getattr(ev, "thread", False) and parent_g is not None:
                self.tgid[child] = parent_g
            else:
                self.tgid[child] = child
            self.live.add(child)
        if name in _NORETURN and ev.ret is None and tid is not None:
            old = self.exit_hold.pop(tid, None)
            if old is not None:
                self._emit(old)
            self.exit_hold[tid] = ev
            return
        self._emit(ev)

    def _resumed(self, lineno, line, body, pidtext, t) -> bool:
        rm = _RESUMED.match(body)
        if rm is None:
            return False
        name = rm.group(1)
        rest = body[rm.end():]
        never = False
        if rest.startswith(" <unfinished ...>)"):
            rest = rest[len(" <unfinished ...>"):]
            never = True
        elif rest.startswith("<unfinished ...>)"):
            rest = rest[len("<unfinished ...>"):]
            never = True
        unfinished_again = False
        if rest.endswith("<unfinished ...>"):
            rest = rest[:rest.rfind("<unfinished ...>")].rstrip()
            unfinished_again = True
        cont, close = scan_args(rest, 0)
        tid, _ = self._who(pidtext)
        p, args = self._take(name, cont, tid)
        if unfinished_again:
            # resumed then cut again (rare): keep waiting
            self.inflight[tid] = _Pending(name, args, p.line if p else lineno,
                                          p.time if p else t, line, self._tgid(tid), tid)
            return True
        if close < 0:
            return False
        res = self._result(rest, close + 1)
        if res is None:
            return False
        self._finish_resumed(lineno, line, name, args, res, never, p, tid, t)
        return True

    def _take(self, name, cont, tid) -> tuple:
        """The pending half of a resumed call (or None) and the whole
        argument list."""
        p = self.inflight.pop(tid, None)
        if p is None and name == "execve" and tid in self.expect_exec:
            self.expect_exec.discard(tid)
        elif p is None:
            self.info.orphans += 1
        args = list(p.args) if p is not None else []
        while args and args[-1] == "":
            args.pop()
        if cont and cont[0] == "":
            cont = cont[1:]
        if cont and cont[0].startswith("=>") and args:
            args[-1] = args[-1] + " " + cont[0]
            cont = cont[1:]
        args.extend(cont)
        return p, args

    def _finish_resumed(self, lineno, line, name, args, res, never, p, tid, t) -> None:
        ret, err, rpath, dur = res
        start = p.time if p is not None else t
        if dur is None and start is not None and t is not None and p is not None:
            dur = max(0.0, t - start)
        text = (p.text + " … " + line) if p is not None else line
        ev = self._call_event(name, args, ret, err, rpath, p.line if p else lineno,
                              lineno, self._tgid(tid), tid, start, dur, text,
                              partial=p is None)
        if never:
            ev.ret = None
        self._after_call(ev, tid)

    def _plus(self, lineno, line, body, p, t) -> bool:
        em = _EXITED.match(body)
        if em is None:
            return False
        tid, _ = self._who(p)
        status, sig, superseded = em.groups()
        if superseded is not None:
            old = int(superseded)
            p = self.inflight.pop(old, None)
            if p is not None:
                p.tid = tid
                self.inflight[tid] = p
            elif self.handover and old in self.handover and tid == self.file_tid:
                # -ff: the execve entry is in the old thread's file
                ol, otext = self.handover[old]
                entry = otext[:otext.rfind("<pid changed to ")].rstrip() + " <unfinished ...>"
                if not self._line(ol, entry) or tid not in self.inflight:
                    self.expect_exec.add(tid)
                else:
                    self.inflight[tid].text = otext
                self.fresh = None
            else:
                self.expect_exec.add(tid)
            self.tgid.pop(old, None)
            self.live.discard(old)
            return True
        self.info.exit_seen = True
        pid = self._tgid(tid)
        held = self.exit_hold.pop(tid, None)
        whole = tid is not None and pid == tid
        ev = Exit(name="exit", whole=whole, status=None if status is None else int(status),
                  signal=sig, file=self.file, line=lineno, pid=pid, tid=tid, time=t,
                  text=line[:TEXT_MAX])
        if ev.time is None:
            ev.time = self.last_time
        if held is not None:
            self.hold.append(held)
            self.hold.append(ev)
            self.target = held          # -k frames of exit calls follow '+++'
        else:
            self.hold.append(ev)
            self.target = None
        if tid is not None:
            self.live.discard(tid)
            self.tgid.pop(tid, None)
            if whole:
                for k in [k for k, g in self.tgid.items() if g == tid]:
                    self.tgid.pop(k, None)
                    self.live.discard(k)
        return True

    def _signal(self, lineno, line, body, p, t) -> bool:
        sm = _SIGNAL.match(body)
        if sm is None:
            return False
        tid, _ = self._who(p)
        name = "stopped" if body.startswith("--- stopped by") else "signal"
        self._emit(Signal(name=name, signal=sm.group(1), file=self.file, line=lineno,
                          pid=self._tgid(tid), tid=tid, time=t, text=line[:TEXT_MAX]))
        return True

    # --- frames, diagnostics, fragments ----------------------------------

    def _frame(self, line: str) -> None:
        self.info.has_stacks = True
        fm = _FRAME.match(line)
        if fm:
            sym = fm.group("sym")
            off = None
            plus = sym.rfind("+0x")
            if plus >= 0 and _HEXDIGITS.fullmatch(sym, plus + 3):
                off = int(sym[plus + 3:], 16)
                sym = sym[:plus]
            elif plus >= 0 and plus + 3 == len(sym):
                sym = sym[:plus]
            fr = Frame(module=fm.group("obj"), symbol=sym or None, sym_offset=off,
                       addr=int(fm.group("addr"), 16))
            if fm.group("src"):
                fr.source = fm.group("src")
                fr.source_line = int(fm.group("line"))
        else:
            bm = _FRAME_BARE.match(line)
            if bm is None:
                return
            a = bm.group("addr")
            fr = Frame(module=bm.group("obj"), addr=int(a, 16) if a else None)
        if self.target is not None:
            self.target.stack = self.target.stack + (fr,)

    def _diagnostic(self, lineno: int, line: str) -> bool:
        """strace's own stderr messages; a diagnostic glued to the end of a
        cut trace line leaves the front part as a fragment."""
        s = line.strip()
        if self.in_summary:
            if _SUMMARY_ROW.match(line) or not s:
                return True
            self.in_summary = False
        if s.startswith("%") and "calls" in s and "syscall" in s:
            # the -c/-C table header ("% time     seconds  usecs/call ...";
            # its columns vary with -w, -U and the version)
            self.in_summary = True
            return True
        dm, at = _diag_match(line)
        if dm is not None:
            pid = int(dm.group(1))
            if dm.group(2) == "attached":
                self.live.add(pid)
            else:
                self.live.discard(pid)
            front = line[:at]
            if front.strip():
                if self.fragment is None:
                    self.fragment = (lineno, front)
                else:
                    return False
            return True
        if _DIAG_PREFIX.match(line) or s.startswith("strace: ") or s.startswith("[ Process PID="):
            return True
        if s.startswith("<detached ...>") or s.startswith("<unfinished ...>"):
            return True
        return False

    def _join_fragment(self, lineno: int, line: str) -> bool:
        """Join a cut line with its continuation; True when consumed."""
        fl, ftext = self.fragment
        st = line.lstrip()
        if _DIAG_PREFIX.match(st) or (st.startswith("Process ") and _DIAG.search(line)):
            self._diag_only(line)       # the fragment waits for its continuation
            return True
        cont = line.startswith((" ", ")", ","))
        if not cont:
            pm = _PREFIX.match(line)
            body = line[pm.end():] if pm else line
            cont = not (_NAME.match(body) or body.startswith(("<... ", "+++", "---")))
        self.fragment = None
        if not cont:
            self.info.add_unparsed(fl, ftext)
            return False
        if line.startswith(" <"):
            joined = ftext.rstrip() + " " + line.lstrip()
        else:
            joined = ftext + line
        if not self._line(fl, joined):
            self.info.add_unparsed(fl, ftext)
            self.info.add_unparsed(lineno, line)
        return True

    def _diag_only(self, line: str) -> None:
        dm = _DIAG.search(line)
        if dm is not None:
            pid = int(dm.group(1))
            if dm.group(2) == "attached":
                self.live.add(pid)
            else:
                self.live.discard(pid)

    # --- preload '#' lines ------------------------------------------------

    def _meta(self, lineno: int, line: str) -> None:
        if line.startswith("#+ "):
            self._continued(lineno, line)
            return
        s = line[1:].strip()
        info = self.info
        if s.startswith("rocrtrace-log"):
            info.header["version"] = s.split()[-1] if len(s.split()) > 1 else ""
            return
        if s.startswith("fd-snapshot"):
            if self.snapshot is not None:
                self._emit(self.snapshot)
            when = s.split()[1] if len(s.split()) > 1 else "start"
            self.snapshot = FdSnapshot(when=when, file=self.file, line=lineno,
                                       pid=self.fixed_tgid, tid=self.fixed_tgid,
                                       time=self.last_time, text=line[:TEXT_MAX])
            return
        if s.startswith("fd "):
            parts = s.split(None, 2)
            fd = parse_int(parts[1]) if len(parts) > 1 else None
            if fd is None:
                info.add_unparsed(lineno, line)
                return
            if self.snapshot is None:
                self.snapshot = FdSnapshot(when="start", file=self.file, line=lineno,
                                           pid=self.fixed_tgid, tid=self.fixed_tgid,
                                           time=self.last_time, text=line[:TEXT_MAX])
            path = decoration_path(parts[2]) if len(parts) > 2 else None
            self.snapshot.fds[fd] = path
            return
        if self.snapshot is not None:
            self._emit(self.snapshot)
            self.snapshot = None
        if s.startswith("map "):
            mm = _MAP.match(line)
            if mm is None:
                info.add_unparsed(lineno, line)
                return
            self._emit(ModuleMap(start=int(mm.group(1), 16), end_addr=int(mm.group(2), 16),
                                 perms=mm.group(3), offset=int(mm.group(4), 16),
                                 module=mm.group(5), build_id=mm.group(6), file=self.file,
                                 line=lineno, pid=self.fixed_tgid, tid=self.fixed_tgid,
                                 time=self.last_time, text=line[:TEXT_MAX]))
            return
        if s.startswith("exec"):
            path = s[4:].strip() or None
            self._emit(Exec(path=path, ret=0, file=self.file, line=lineno,
                            pid=self.fixed_tgid, tid=self.fixed_tgid, time=self.last_time,
                            text=line[:TEXT_MAX]))
            return
        if s.startswith("exit"):
            kv = dict(_KV.findall(s))
            st = parse_int(kv["status"]) if "status" in kv else None
            info.exit_seen = True
            self._emit(Exit(whole=True, status=st, signal=kv.get("signal"), file=self.file,
                            line=lineno, pid=self.fixed_tgid, tid=self.fixed_tgid,
                            time=self.last_time, text=line[:TEXT_MAX]))
            return
        if s.startswith("lost"):
            info.header["lost"] = parse_int(s[4:].strip()) or 0
            return
        kv = dict(_KV.findall(s))
        if "pid" in kv:
            pid = parse_int(kv["pid"])
            info.header.update(kv)
            self.fixed_tgid = pid
            if pid is not None:
                self.root = pid
            st = kv.get("start")
            try:
                t = float(st) if st else None
            except ValueError:
                t = None
            self._emit(ProcessInfo(ppid=parse_int(kv.get("ppid", "")), exe=kv.get("exe"),
                                   page_size=parse_int(kv.get("page_size", "")) or 4096,
                                   file=self.file, line=lineno, pid=pid, tid=pid, time=t,
                                   text=line[:TEXT_MAX]))
            return
        if kv:
            info.header.update(kv)


    def _continued(self, lineno: int, line: str) -> None:
        """`#+ TID K[+] TEXT`: piece K of a preload record too long for one
        write (`+`: more follows); the joined pieces are one event line."""
        m = _CONT.match(line)
        pend = self.cont
        if m is None:
            self.info.add_unparsed(lineno, line)
            return
        tid, k, text = m.group(1), int(m.group(2)), line[m.end():]
        have = pend.get(tid)
        if k == 1:
            if have is not None:
                self.info.add_unparsed(have[0], "".join(have[1]))
            have = pend[tid] = (lineno, [])
        elif have is None or len(have[1]) != k - 1:
            if have is not None:
                self.info.add_unparsed(have[0], "".join(pend.pop(tid)[1]))
            self.info.add_unparsed(lineno, line)
            return
        have[1].append(text)
        if m.group(3):
            return
        del pend[tid]
        if self.snapshot is not None:
            self._emit(self.snapshot)
            self.snapshot = None
        joined = "".join(have[1])
        if not self._line(have[0], joined):
            self.info.add_unparsed(have[0], joined)


_CONT = re.compile(r"#\+ (\d+) (\d+)(\+?) ")


def looks_like_trace_line(line: str) -> bool:
    """Cheap test used by format detection: does this line belong to the
    strace grammar (or the preload dialect)?"""
    if not line.strip():
        return False
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if line.startswith(" > ") or line.startswith(" | "):
        return True
    if line.startswith("# rocrtrace-log") or _DIAG.search(line):
        return True
    m = _PREFIX.match(line)
    body = line[m.end():] if m else line
    if _NAME.match(body):
        return "=" in body or body.rstrip().endswith("...>") or "(" in body
    return bool(_RESUMED.match(body) or _EXITED.match(body) or _SIGNAL.match(body)
                or body.startswith("% time"))
