"""``--format perfetto:FILE``: a Perfetto trace of the analysis,
to open in the Perfetto UI next to rocprofv3's traces.

Tracks: one per process and one per thread (the calls as slices), one per fd
number of a process (each lifetime of that number, create to close, as a
slice: fds opened or duplicated and fds an ioctl installed, a dma-buf
export's or PRIME's), one per buffer handle (KFD handles per process, GEM
handles per DRM fd: each lifetime from the ioctl that made it to its free,
with a flow to each dma-buf fd exported from it, and a bo-double-free as an
instant on it), one per SVM claim a finding names (from its
registration to the call that released it, or for a victim to the end of
its own run), and findings as instant events on the thread of their
offending call, carrying message, fingerprint, location and evidence as
debug annotations, with flow arrows from each evidence event's slice.
Each run has its own processes: a later run whose pid an earlier
run used is shown under another pid (PID_STRIDE), named with its real one.

Built with the ``perfetto`` package's trace protos (TraceProtoBuilder),
never hand-written protobuf.  The writer reads the events' table fields
(file, line, pid, tid, time, dur, name, ret, err, fd, ioctl) plus path,
text, the fds a create installed and what an ioctl did to a buffer handle,
and the findings' fields, nothing of the models: fd and handle lifetimes
here are the picture of the trace, the models stay the judges.  The core hands those fields over as columns while the
trace replays (``EventSink.add_columns``, src/table.rs CallTable); events
in hand (the findings' own, for an API caller) go through ``EventSink(ev)``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from ..tables import float_list, int_list, text_list
from .common import location_frame, printable, subject_text

# Metadata events of preload logs are not calls.
_NOT_CALLS = {"process", "map", "fd-snapshot"}
TEXT_MAX = 300


@dataclass(slots=True)
class Row:
    pid: int
    tid: int
    ts: int  # ns
    dur: int  # ns, >= 1
    name: str
    file: str
    line: int
    ret: object
    err: object
    kind: str
    fd: object
    path: str | None
    text: str
    seq: int
    created: tuple = ()  # (fd, path) of each fd a create or an ioctl installed
    run: int = 0  # which run: runs are separate processes
    handle: tuple = ()  # (op, family, handle) of an ioctl on a buffer handle


@dataclass
class EventSink:
    """Collects what the trace needs of each event while the replay runs."""

    rows: list = field(default_factory=list)
    procs: dict = field(default_factory=dict)  # (run, pid) -> executable
    ends: dict = field(default_factory=dict)  # (run, pid) -> exit time (ns)
    runs: int = 0  # add_columns calls: one per run
    _last_ns: int = 0
    _seq: int = 0

    def __call__(self, ev) -> None:
        from ..events import event_record

        rec = event_record(ev)
        name = rec["name"] or ""
        pid = rec["pid"] if rec["pid"] is not None else (rec["tid"] or 1)
        tid = rec["tid"] if rec["tid"] is not None else pid
        if rec["time"] is not None:
            ts = ns(rec["time"])
        else:
            ts = self._last_ns + 1000  # no timestamps: file order, 1 µs apart
        self._last_ns = max(self._last_ns, ts)
        if name == "process":
            exe = getattr(ev, "exe", None)
            if exe:
                self.procs[(0, pid)] = exe
            return
        if name in _NOT_CALLS:
            return
        if name.startswith("exec") and rec["ret"] == 0 and getattr(ev, "path", None):
            self.procs[(0, pid)] = ev.path
        if rec["event"] == "Exit" and getattr(ev, "whole", False):
            self.ends[(0, pid)] = ts
        dur = int(round((rec["dur"] or 0) * 1e9))  # small: exact enough
        paths = getattr(ev, "paths", None) or ()
        path = paths[0] if paths and isinstance(paths[0], str) else getattr(ev, "path", None)
        self._seq += 1
        created, handle = (), ()
        if rec["event"] == "FdCreate":
            # a pipe or socketpair installs two: each gets its lifetime
            fds = getattr(ev, "fds", None) or ()
            created = tuple(
                (fd, paths[i] if i < len(paths) and isinstance(paths[i], str) else None)
                for i, fd in enumerate(fds)
                if isinstance(fd, int)
            )
        elif rec["event"] == "Ioctl":
            if rec["err"] is None:
                created = tuple((fd, None) for fd in _ioctl_created(ev))
            handle = _ioctl_handle(ev)
        self.rows.append(
            Row(
                pid,
                tid,
                ts,
                max(dur, 1),
                rec.get("ioctl") or name,
                rec["file"],
                rec["line"],
                rec["ret"],
                rec["err"],
                rec["event"],
                rec.get("fd"),
                path if isinstance(path, str) else None,
                (ev.text or "")[:TEXT_MAX],
                self._seq,
                created,
                0,
                handle,
            )
        )

    def add_columns(self, cols: dict) -> None:
        """The calls of one run as the core's columns (src/py/table.rs
        calls_to_py): what ``__call__`` takes of each event, in replay order.
        Each call is a run of its own: its pids are its own."""
        run = self.runs
        self.runs += 1
        self._last_ns = 0
        n = cols["rows"]
        file, event, name, ioctl, err, path, text = (
            text_list(cols[c]) for c in ("file", "event", "name", "ioctl", "err", "path", "text")
        )
        line, pid_, tid_, ret, fd, whole = (int_list(cols[c]) for c in ("line", "pid", "tid", "ret", "fd", "whole"))
        time, dur_ = float_list(cols["time"]), float_list(cols["dur"])
        created: dict[int, list] = {}
        for row, cfd, cpath in cols["created"]:
            created.setdefault(row, []).append((cfd, cpath))
        handles = {row: (op, family, h) for row, op, family, h in cols["handles"]}
        rows = self.rows
        for i in range(n):
            nm = name[i] or ""
            kind = event[i]
            pid = pid_[i] if pid_[i] is not None else (tid_[i] or 1)
            tid = tid_[i] if tid_[i] is not None else pid
            if time[i] is not None:
                ts = ns(time[i])
            else:
                ts = self._last_ns + 1000  # no timestamps: file order, 1 µs apart
            self._last_ns = max(self._last_ns, ts)
            if nm == "process":
                if kind == "ProcessInfo" and path[i]:  # its path column is the exe
                    self.procs[(run, pid)] = path[i]
                continue
            if nm in _NOT_CALLS:
                continue
            # the path column of a Syscall or FdCreate is its first
            # decoration: only a kind's own ``path`` names an executable
            if nm.startswith("exec") and ret[i] == 0 and path[i] and kind not in ("FdCreate", "Syscall", "ProcessInfo"):
                self.procs[(run, pid)] = path[i]
            if kind == "Exit" and whole[i]:
                self.ends[(run, pid)] = ts
            dur = int(round((dur_[i] or 0) * 1e9))
            self._seq += 1
            made = tuple(created.get(i, ()))
            own = None if kind == "ProcessInfo" else path[i]
            rows.append(
                Row(
                    pid,
                    tid,
                    ts,
                    max(dur, 1),
                    ioctl[i] or nm,
                    file[i],
                    line[i],
                    ret[i],
                    err[i],
                    kind,
                    fd[i],
                    own,
                    (text[i] or "")[:TEXT_MAX],
                    self._seq,
                    made,
                    run,
                    handles.get(i, ()),
                )
            )


# src/table.rs ioctl_created_fds, for events in hand (the columns carry
# the core's answer): the fd fields of the struct the kernel wrote, or a
# udmabuf create's result.  tests/test_perfetto_columns.py holds the two
# equal on every fixture.
_FD_FIELDS = ("dmabuf_fd", "fd", "anon_fd")


def _ioctl_created(ev) -> list[int]:
    from .. import kfd

    if ev.type == kfd.TYPE_UDMABUF and ev.nr in kfd.UDMABUF:
        return [ev.ret] if isinstance(ev.ret, int) and ev.ret >= 0 else []
    out = ev.out if isinstance(ev.out, dict) else {}
    fds = [out.get(f) for f in _FD_FIELDS]
    return [fd for fd in fds if isinstance(fd, int) and not isinstance(fd, bool) and fd >= 0]


# src/table.rs ioctl_handle, for events in hand (the columns carry the
# core's answer): what an ioctl did to a buffer handle, read from its structs
# as src/models/handles.rs reads them.  Held equal to the core's by
# tests/test_perfetto_columns.py.
_GEM_CREATE = ("DRM_IOCTL_AMDGPU_GEM_CREATE", "DRM_IOCTL_AMDXDNA_CREATE_BO")


def _ioctl_handle(ev) -> tuple:
    from .. import kfd

    def handle(st):
        h = st.get("handle") if isinstance(st, dict) else None
        return h if isinstance(h, int) and not isinstance(h, bool) else None

    key = (ev.type, ev.nr)
    ok = ev.err is None and ev.ret is not None
    arg, out = handle(ev.arg), handle(ev.out) if ok else None
    name = ev.ioctl or kfd.ioctl_name(ev.type, ev.nr, ev.path)
    if key in (kfd.ALLOC_MEMORY_OF_GPU, kfd.IMPORT_DMABUF):
        op, family, h = "create", "KFD", out
    elif key == kfd.FREE_MEMORY_OF_GPU:
        op, family, h = "free", "KFD", arg
    elif key == kfd.EXPORT_DMABUF:
        op, family, h = "export", "KFD", arg if ok else None
    elif name in _GEM_CREATE or key == kfd.PRIME_FD_TO_HANDLE:
        op, family, h = "create", "GEM", out
    elif key == kfd.PRIME_HANDLE_TO_FD:
        op, family, h = "export", "GEM", arg if ok else None
    elif key == kfd.GEM_CLOSE:
        op, family, h = "free", "GEM", arg
    else:
        return ()
    return () if h is None else (op, family, h)


def ns(t: float) -> int:
    """Seconds to integer nanoseconds, through microseconds: an epoch time
    in a double carries no more (its ulp is ~0.2 µs), and strace prints µs."""
    return int(round(t * 1e6)) * 1000


def _uuid(*parts) -> int:
    """A stable 63-bit track id from what the track is."""
    data = "\x1f".join(map(str, parts)).encode("utf-8", "surrogatepass")
    return (zlib.crc32(data) << 31 | zlib.adler32(data)) & 0x7FFFFFFFFFFFFFFF or 1


# Perfetto knows a process by its pid: a later run whose pid an earlier run
# already used is shown under pid + run * PID_STRIDE (above Linux's pid_max,
# 2^22), its name saying its real pid and run, so runs stay apart.
PID_STRIDE = 1 << 22


def _key(proc: tuple) -> tuple:
    """What a process's track ids are made of: its pid, and its run after
    the first (the first run's ids are those of a one-run trace)."""
    run, pid = proc
    return (pid,) if run == 0 else proc


class _Writer:
    SEQ = 0x5EED

    def __init__(self, shown_pid=None):
        from . import need

        self.b = need("perfetto.trace_builder.proto_builder", "perfetto").TraceProtoBuilder()
        self.tracks: set[int] = set()
        # (run, pid) -> the pid the trace shows
        self.shown_pid = shown_pid or (lambda proc: proc[1])

    def packet(self, ts: int | None = None):
        p = self.b.add_packet()
        if ts is not None:
            p.timestamp = ts
        p.trusted_packet_sequence_id = self.SEQ
        return p

    def _offset(self, proc: tuple) -> int:
        return self.shown_pid(proc) - proc[1]

    def process(self, proc: tuple, name: str | None) -> int:
        """The track of process ``proc`` = (run, pid)."""
        u = _uuid("process", *_key(proc))
        if u not in self.tracks:
            self.tracks.add(u)
            td = self.packet().track_descriptor
            td.uuid = u
            td.process.pid = self.shown_pid(proc)
            label = printable(name) if name else f"pid {proc[1]}"
            if self._offset(proc):
                label += f" (pid {proc[1]}, run {proc[0] + 1})"
            td.process.process_name = label
        return u

    def thread(self, proc: tuple, tid: int) -> int:
        u = _uuid("thread", *_key(proc), tid)
        if u not in self.tracks:
            self.tracks.add(u)
            td = self.packet().track_descriptor
            td.uuid = u
            td.parent_uuid = _uuid("process", *_key(proc))
            td.thread.pid = self.shown_pid(proc)
            td.thread.tid = tid + self._offset(proc)
            td.thread.thread_name = f"tid {tid}"
        return u

    def named(self, key: tuple, name: str, parent: int) -> int:
        u = _uuid(*key)
        if u not in self.tracks:
            self.tracks.add(u)
            td = self.packet().track_descriptor
            td.uuid = u
            if parent:
                td.parent_uuid = parent
            td.name = printable(name)
        return u

    def slice(
        self, track: int, ts: int, end: int, name: str, annotations=(), flows=(), category: str = "call", flows_in=()
    ):
        p = self.packet(ts)
        te = p.track_event
        te.type = te.TYPE_SLICE_BEGIN
        te.track_uuid = track
        te.name = printable(name)
        te.categories.append(category)
        _annotate(te, annotations)
        te.flow_ids.extend(flows)
        te.terminating_flow_ids.extend(flows_in)
        q = self.packet(end)
        q.track_event.type = q.track_event.TYPE_SLICE_END
        q.track_event.track_uuid = track
        return te

    def serialize(self) -> bytes:
        return self.b.serialize()


def _annotate(te, pairs) -> None:
    for k, v in pairs:
        if v is None or v == "":
            continue
        _set(te.debug_annotations.add(), k, v)


def _set(da, name, v) -> None:
    if name is not None:
        da.name = name
    if isinstance(v, bool):
        da.bool_value = v
    elif isinstance(v, int):
        da.int_value = v
    elif isinstance(v, float):
        da.double_value = v
    elif isinstance(v, dict):
        for k, x in v.items():
            if x is not None:
                _set(da.dict_entries.add(), str(k), x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _set(da.array_values.add(), None, x)
    else:
        da.string_value = printable(v)


def _nested(rows: list) -> list:
    """Calls of one thread as properly nested slices: a call that starts
    inside another but outlasts it (clock skew, a call resumed late) is cut
    at the enclosing call's end, as the UI needs."""
    out = []
    stack: list[int] = []  # end times of open slices
    for r in sorted(rows, key=lambda r: (r.ts, -r.dur, r.seq)):
        while stack and stack[-1] <= r.ts:
            stack.pop()
        end = r.ts + r.dur
        if stack and end > stack[-1]:
            end = stack[-1]
        if end <= r.ts:
            continue
        out.append((r, end))
        stack.append(end)
    return out


def _shown_pids(procs) -> dict:
    """(run, pid) -> the pid the trace shows: a pid keeps its number in the
    first run that has it; later runs with that pid are moved up."""
    shown, used = {}, set()
    for run, pid in sorted(procs):
        shown[(run, pid)] = pid if pid not in used else pid + run * PID_STRIDE
        used.add(pid)
    return shown


def render(result, events: EventSink | None = None, cwd: str | None = None, **_opts) -> bytes:
    rows = list(events.rows) if events is not None else _evidence_rows(result)
    procs = dict(events.procs) if events is not None else {}
    ends = dict(events.ends) if events is not None else {}
    # a finding belongs to the run whose files its evidence is in
    run_of_file = {r.file: r.run for r in rows}
    ordered = result.sorted_findings()
    run_of = {id(f): run_of_file.get(f.file, 0) for f in ordered}
    # each run ends at its own last timestamp, not another run's
    last: dict[int, int] = {}
    for r in rows:
        last[r.run] = max(last.get(r.run, 0), r.ts + r.dur)
    for f in ordered:
        if f.time is not None:
            last[run_of[id(f)]] = max(last.get(run_of[id(f)], 0), ns(f.time) + 1)

    keys = {(r.run, r.pid) for r in rows} | {(run_of[id(f)], f.pid) for f in ordered if f.pid is not None}
    shown = _shown_pids(keys)
    w = _Writer(shown.__getitem__)
    for proc in sorted(keys):
        w.process(proc, procs.get(proc))

    # flows: each evidence event's slice points at its finding's instant
    flows: dict[tuple, list[int]] = {}
    for n, f in enumerate(ordered, 1):
        for k, ev in enumerate(f.evidence):
            flows.setdefault((ev.event.file, ev.event.line), []).append(_uuid("flow", n, k))

    by_thread: dict[tuple, list] = {}
    for r in rows:
        by_thread.setdefault((r.run, r.pid, r.tid), []).append(r)
    for (run, pid, tid), rs in sorted(by_thread.items()):
        track = w.thread((run, pid), tid)
        for r, end in _nested(rs):
            w.slice(
                track,
                r.ts,
                end,
                r.name,
                [("call", printable(r.text)), ("at", f"{r.file}:{r.line}"), ("ret", r.ret), ("err", r.err)],
                flows.get((r.file, r.line), ()),
            )

    held = _handle_lifetimes(rows, ends, last)
    # a dma-buf export's fd slice ends the flow from its handle's slice
    exported = {(x.run, x.seq, fd) for h in held for x, fd in h.exports}
    _fd_lifetimes(w, rows, ends, last, exported)
    _draw_handles(w, held)
    _svm_claims(w, ordered, run_of, last)
    _findings(w, ordered, run_of, cwd, last)
    _handle_findings(w, rows, ordered, run_of)
    return w.serialize()


def _evidence_rows(result) -> list:
    """Without the event stream (an API caller): the findings' own events."""
    sink = EventSink()
    seen = set()
    evs = []
    for f in result.findings:
        for e in [f.event, *(x.event for x in f.evidence)]:
            if e is not None and id(e) not in seen:
                seen.add(id(e))
                evs.append(e)
    for e in sorted(evs, key=lambda e: (e.time or 0, e.file or "", e.line or 0)):
        sink(e)
    return sink.rows


_CREATE = {"FdCreate"}
_CLOSE = {"Close"}


def _export_flow(run: int, seq: int, fd: int) -> int:
    return _uuid("export", run, seq, fd)


def _fd_lifetimes(w: _Writer, rows, ends, last: dict, exported=frozenset()) -> None:
    open_: dict[tuple, tuple] = {}  # (run, pid, fd) -> (start ns, name, row)

    def finish(key, end):
        start, name, row = open_.pop(key)
        run, pid, fd = key
        track = w.named(("fd", *_key((run, pid)), fd), f"fd {fd}", _uuid("process", *_key((run, pid))))
        link = (run, row.seq, fd)
        w.slice(
            track,
            start,
            max(end, start + 1),
            name,
            [("opened by", printable(row.text)), ("at", f"{row.file}:{row.line}")],
            category="fd",
            flows_in=(_export_flow(*link),) if link in exported else (),
        )

    for r in sorted(rows, key=lambda r: (r.run, r.ts, r.seq)):
        # an ioctl installs only the fds its struct names (a dma-buf
        # export's), never the device fd it was called on
        made = r.created if r.kind == "Ioctl" else r.created or ((r.fd, r.path),)
        if (r.kind in _CREATE or r.created) and r.err is None and r.ret is not None:
            for fd, path in made:
                if not isinstance(fd, int) or fd < 0:
                    continue
                key = (r.run, r.pid, fd)
                if key in open_:  # dup2 onto it, or a close we did not see
                    finish(key, r.ts)
                name = path or (f"fd {fd} ({r.name})" if r.kind == "Ioctl" else f"fd {fd}")
                open_[key] = (r.ts + r.dur, name, r)
        elif r.kind in _CLOSE and r.err is None and (r.run, r.pid, r.fd) in open_:
            finish((r.run, r.pid, r.fd), r.ts)
        elif r.kind == "Exit" and ends.get((r.run, r.pid)) == r.ts:
            for key in [k for k in open_ if k[:2] == (r.run, r.pid)]:
                finish(key, r.ts)
    for key in list(open_):
        finish(key, ends.get(key[:2], last.get(key[0], 0)))


@dataclass(slots=True)
class _Held:
    """One lifetime of a buffer handle: from the ioctl that made it to the
    free that ended it (or its process's exit, or its run's end)."""

    family: str  # KFD (per process) or GEM (per DRM file: the fd)
    handle: int
    scope: tuple  # (run, pid) and, for GEM, the DRM fd
    row: Row  # the creating ioctl (the first export when not seen)
    start: int
    end: int = 0
    ended: Row | None = None  # the free that ended it
    why: str = ""  # else: "process exit" or "end of run"
    again: list = field(default_factory=list)  # imports that returned it
    exports: list = field(default_factory=list)  # (row, fd) dma-buf fds made of it

    @property
    def label(self) -> str:
        where = f" on fd {self.scope[2]}" if self.family == "GEM" else ""
        return f"{self.family} handle {self.handle:#x}{where}"


def _handle_scope(r: Row) -> tuple:
    """Whose handle namespace a handle row is in: KFD handles are per
    process, GEM handles per DRM file (the fd the ioctl was called on)."""
    return (r.run, r.pid) if r.handle[1] == "KFD" else (r.run, r.pid, r.fd)


def _handle_lifetimes(rows, ends, last: dict) -> list:
    """The buffer handles' lifetimes as the trace shows them, from
    the ioctls' structs (Row.handle), as fd lifetimes are drawn: the
    picture of the trace, not the handle model's judgement."""
    open_: dict[tuple, _Held] = {}  # (family, scope, handle) -> lifetime
    done: list[_Held] = []

    def finish(key, end, row=None, why=""):
        h = open_.pop(key)
        h.end, h.ended, h.why = max(end, h.start + 1), row, why
        done.append(h)

    # replay order, as the models see the calls: an intent call's line is
    # stamped with its entry time, so an exit can be stamped before the
    # calls it follows
    for r in sorted(rows, key=lambda r: (r.run, r.seq)):
        if r.kind == "Exit" and ends.get((r.run, r.pid)) == r.ts:
            # the kernel drops a process's handles when it exits
            for key in [k for k in open_ if k[1][:2] == (r.run, r.pid)]:
                finish(key, r.ts, why="process exit")
            continue
        if not r.handle:
            continue
        op, family, handle = r.handle
        key = (family, _handle_scope(r), handle)
        if op == "create":
            if key in open_:  # an import of a buffer the file holds
                open_[key].again.append(r)
            else:
                open_[key] = _Held(family, handle, key[1], r, r.ts + r.dur)
        elif op == "export":
            if key not in open_:  # made before the trace, or by a call not decoded
                open_[key] = _Held(family, handle, key[1], r, r.ts)
            open_[key].exports.extend((r, fd) for fd, _ in r.created)
        elif r.err is None and r.ret is not None and key in open_:
            finish(key, r.ts, r)
    for key in list(open_):
        scope = key[1]
        if scope[:2] in ends:
            finish(key, ends[scope[:2]], why="process exit")
        else:
            finish(key, last.get(scope[0], 0), why="end of run")
    return done


def _handle_track(w: _Writer, family: str, scope: tuple, handle: int, label: str) -> int:
    proc = scope[:2]
    return w.named(("handle", family, *_key(proc), *scope[2:], handle), label, _uuid("process", *_key(proc)))


def _draw_handles(w: _Writer, held: list) -> None:
    for h in sorted(held, key=lambda h: (h.scope[0], h.start, h.row.seq)):
        track = _handle_track(w, h.family, h.scope, h.handle, h.label)
        made = h.row.handle[0] == "create"
        name = f"{h.label} ({h.row.name if made else 'created before the trace'})"
        ended = (
            [("freed by", printable(h.ended.text)), ("freed at", f"{h.ended.file}:{h.ended.line}")]
            if h.ended is not None
            else [("ended", f"never freed: {h.why}")]
        )
        w.slice(
            track,
            h.start,
            h.end,
            name,
            [
                ("created by" if made else "first seen", printable(h.row.text)),
                ("at", f"{h.row.file}:{h.row.line}"),
                *ended,
                ("returned again by", [f"{r.file}:{r.line}" for r in h.again] or None),
                ("exported as", [f"fd {fd} at {r.file}:{r.line}" for r, fd in h.exports] or None),
            ],
            flows=[_export_flow(r.run, r.seq, fd) for r, fd in h.exports],
            category="handle",
        )


def _handle_findings(w: _Writer, rows, findings, run_of: dict) -> None:
    """A double free (bo-double-free) also as an instant on its handle's
    track, at the refused free."""
    frees = {(r.run, r.file, r.line): r for r in rows if r.handle and r.handle[0] == "free"}
    for f in findings:
        r = frees.get((run_of[id(f)], f.file, f.line))
        if f.rule != "bo-double-free" or r is None:
            continue
        _, family, handle = r.handle
        scope = _handle_scope(r)
        label = _Held(family, handle, scope, r, 0).label
        p = w.packet(ns(f.time) if f.time is not None else r.ts)
        te = p.track_event
        te.type = te.TYPE_INSTANT
        te.track_uuid = _handle_track(w, family, scope, handle, label)
        te.name = f"{f.severity}[{f.rule}]"
        te.categories.extend(["finding", f.severity])
        _annotate(
            te,
            [
                ("message", f.message),
                ("fingerprint", f.fingerprint),
                ("call", printable(r.text)),
                ("trace", f"{r.file}:{r.line}"),
            ],
        )


def _svm_claims(w: _Writer, findings, run_of: dict, last: dict) -> None:
    seen = set()
    for f in findings:
        d = f.details or {}
        run = run_of[id(f)]
        released = d.get("released") or []
        claims = [("released", c) for c in (released if isinstance(released, list) else [released])]
        for key in ("victim", "claim"):
            if isinstance(d.get(key), dict):
                claims.append((key, d[key]))
        for role, c in claims:
            if not isinstance(c, dict) or c.get("time") is None or f.pid is None:
                continue
            ident = (*_key((run, f.pid)), c.get("start"), c.get("end"), c.get("time"))
            start = ns(c["time"])
            # a released claim ends at the call that released it; a victim
            # lives on past the call that hurt it, to its own run's end
            end = ns(f.time) if role == "released" and f.time is not None else last.get(run, start + 1)
            if ident in seen:
                continue
            seen.add(ident)
            name = f"svm [{c.get('start')}, {c.get('end')})"
            track = w.named(("svm", *ident), name, _uuid("process", *_key((run, f.pid))))
            w.slice(
                track,
                start,
                max(end, start + 1),
                f"{c.get('kind', '')} claim".strip(),
                [
                    ("range", f"[{c.get('start')}, {c.get('end')})"),
                    ("pages", c.get("pages")),
                    ("gpus", ", ".join(c.get("gpus") or [])),
                    ("flags", c.get("flags")),
                    ("at", f"{c.get('file')}:{c.get('line')}"),
                    ("tid", c.get("tid")),
                ],
                category="svm",
            )


def _findings(w: _Writer, findings, run_of: dict, cwd, last: dict) -> None:
    for n, f in enumerate(findings, 1):
        run = run_of[id(f)]
        ts = ns(f.time) if f.time is not None else last.get(run, 0)
        if f.pid is not None and f.tid is not None:
            track = w.thread((run, f.pid), f.tid)
        elif f.pid is not None:
            track = w.process((run, f.pid), None)
        else:
            track = w.named(("findings",), "rocrtrace findings", 0)
        p = w.packet(ts)
        te = p.track_event
        te.type = te.TYPE_INSTANT
        te.track_uuid = track
        te.name = f"{f.severity}[{f.rule}]"
        te.categories.extend(["finding", f.severity])
        hit = location_frame(f.stack, cwd)
        if hit and hit[1]:
            te.source_location.file_name = printable(hit[1])
            te.source_location.line_number = int(hit[0].source_line)
            fn = hit[0].function or hit[0].symbol
            if fn:
                te.source_location.function_name = printable(fn)
        evidence = [
            {
                "role": ev.role,
                "file": ev.event.file,
                "line": ev.event.line,
                "tid": ev.event.tid,
                "time": ev.event.time,
                "call": printable(ev.event.text),
                "note": ev.note or None,
            }
            for ev in f.evidence
        ]
        _annotate(
            te,
            [
                ("message", f.message),
                ("rule", f.rule),
                ("severity", f.severity),
                ("fingerprint", f.fingerprint),
                ("cause", f.cause),
                ("subject", subject_text(f.subject)),
                ("trace", f"{f.file}:{f.line}" if f.file else None),
                ("evidence", evidence),
            ],
        )
        te.terminating_flow_ids.extend(_uuid("flow", n, k) for k in range(len(f.evidence)))


def summary(data: bytes) -> dict:
    """Parse a written trace back with the same protos: tracks by kind and
    slice / instant counts per kind, for tests and a quick look."""
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

    trace = Trace.FromString(data)
    kinds: dict[int, str] = {}
    names: dict[int, str] = {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            kind = (
                "process"
                if td.HasField("process")
                else "thread"
                if td.HasField("thread")
                else "handle"
                if td.name.startswith(("KFD handle", "GEM handle"))
                else td.name.split(" ")[0]
            )
            kinds[td.uuid] = kind
            names[td.uuid] = (
                td.process.process_name if kind == "process" else td.thread.thread_name if kind == "thread" else td.name
            )
    out = {"tracks": {}, "slices": {}, "instants": 0, "flows": 0, "instant_names": []}
    for k in kinds.values():
        out["tracks"][k] = out["tracks"].get(k, 0) + 1
    for p in trace.packet:
        if not p.HasField("track_event"):
            continue
        te = p.track_event
        if te.type == TrackEvent.TYPE_SLICE_BEGIN:
            k = kinds.get(te.track_uuid, "?")
            out["slices"][k] = out["slices"].get(k, 0) + 1
            out["flows"] += len(te.flow_ids)
        elif te.type == TrackEvent.TYPE_INSTANT:
            out["instants"] += 1
            out["instant_names"].append(te.name)
    out["names"] = names
    return out
