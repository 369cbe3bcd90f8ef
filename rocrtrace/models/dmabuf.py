"""dma-buf bookkeeping on top of the fd model: which buffer an exported fd
is, how often one buffer is exported (dmabuf-reexport), exported fds held
open long after their last use and the peak of open dma-buf fds per
process (fd-held-open).  Driven by HandleModel, which owns the buffer
identities (KFD handle per process, GEM handle per open file description).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..parse.pyevents import Event
from ..findings import Evidence, Finding
from .fds import Slot, call_site, short


@dataclass(slots=True, eq=False)
class Buffer:
    """One buffer object, however many handles and fds name it."""

    label: str                         # "KFD handle 0x66a400000013" …
    handle: str                        # the handle in hex, for the finding's subject
    owner_pid: int | None
    created: Event | None
    exports: int = 0
    first_export: Event | None = None
    last_export: Event | None = None
    finding: Finding | None = None
    alias: "Buffer | None" = None      # merged into another identity

    def resolve(self) -> "Buffer":
        b = self
        while b.alias is not None:
            b = b.alias
        return b


def merge(a: Buffer | None, b: Buffer | None) -> Buffer | None:
    """The same buffer reached by two routes (a KFD handle and the GEM handle
    its import produced): one identity, exports counted together."""
    if a is None:
        return b.resolve() if b else None
    if b is None:
        return a.resolve()
    a, b = a.resolve(), b.resolve()
    if a is b:
        return a
    a.exports += b.exports
    if b.first_export is not None and (a.first_export is None or
                                       b.first_export.seq < a.first_export.seq):
        a.first_export = b.first_export
    if a.finding is None:
        a.finding = b.finding
    b.alias = a
    return a


@dataclass(slots=True, eq=False)
class ProcStats:
    open_dmabufs: int = 0
    peak: int = 0
    peak_event: Event | None = None
    # allocation count when the open count first reached k+1
    levels: list = field(default_factory=list)
    held_reports: int = 0
    held_total: int = 0


class DmabufTracker:
    def __init__(self, emit, reexport_threshold: int = 3, held_allocs: int = 8,
                 held_seconds: float = 10.0, held_max_reports: int = 5,
                 peak_min: int = 32) -> None:
        self.emit = emit
        self.reexport_threshold = reexport_threshold
        self.held_allocs = held_allocs
        self.held_seconds = held_seconds
        self.held_max_reports = held_max_reports
        self.peak_min = peak_min
        self.stats: dict = {}

    # identity -----------------------------------------------------------------

    @staticmethod
    def buffer_of(slot: Slot | None) -> Buffer | None:
        if slot is None or slot.buffer is None:
            return None
        return slot.buffer.resolve()

    @staticmethod
    def bind(slot: Slot, buf: Buffer) -> None:
        slot.buffer = merge(slot.buffer, buf)

    def exported(self, buf: Buffer, ev: Event, slot: Slot | None) -> None:
        buf = buf.resolve()
        buf.exports += 1
        if buf.first_export is None:
            buf.first_export = ev
        buf.last_export = ev
        if slot is not None:
            self.bind(slot, buf)
        if buf.exports >= self.reexport_threshold and buf.finding is None:
            buf.finding = self.emit(Finding(
                rule="dmabuf-reexport", message="", event=ev,
                subject={"kind": "handle", "handle": buf.handle},
                evidence=[Evidence("first export", buf.first_export, call_site(buf.first_export)),
                          Evidence(f"export #{buf.exports}", ev, call_site(ev))]
                + ([Evidence("buffer created by", buf.created, call_site(buf.created))]
                   if buf.created is not None else []),
                key=(getattr(buf.first_export, "ioctl", None) or "export",
                     getattr(ev, "ioctl", None) or "export")))
        if buf.finding is not None:
            self._reexport_message(buf)

    def _reexport_message(self, buf: Buffer) -> None:
        f = buf.finding
        f.details["exports"] = buf.exports
        f.message = (f"{buf.label} was exported as a dma-buf fd {buf.exports} times "
                     f"(threshold {self.reexport_threshold}); first by "
                     f"{short(buf.first_export)}, last by {short(buf.last_export)}. "
                     "Each export makes a new fd and a new import: per-chunk x per-agent "
                     "amplification (export once and reuse the fd, or import once per device)")

    # fd lifecycle (called by HandleModel from the fd model's listener hooks) ----

    def _stats(self, pid) -> ProcStats:
        st = self.stats.get(pid)
        if st is None:
            st = self.stats[pid] = ProcStats()
        return st

    def fd_open(self, proc, slot: Slot, ev: Event) -> None:
        if slot.kind != "dmabuf":
            return
        st = self._stats(proc.pid)
        st.open_dmabufs += 1
        if st.open_dmabufs > st.peak:
            st.peak = st.open_dmabufs
            st.peak_event = ev
            if len(st.levels) < st.peak:
                st.levels.append(proc.allocs)

    def fd_release(self, proc, slot: Slot, ev: Event | None, how: str) -> None:
        if slot.kind != "dmabuf":
            return
        st = self._stats(proc.pid)
        st.open_dmabufs = max(0, st.open_dmabufs - 1)
        if how in ("close", "close_range", "dup2", "exec"):
            self._held(proc, slot, ev, st, at_exit=False)

    def process_end(self, proc, ev: Event | None, exited: bool, slots) -> None:
        st = self.stats.pop(proc.pid, None)
        if st is None:
            return
        for s in slots:
            if s.kind == "dmabuf":
                self._held(proc, s, ev, st, at_exit=True)
        self._peak(proc, st)

    # fd-held-open -------------------------------------------------------------

    def _held(self, proc, slot: Slot, end: Event | None, st: ProcStats, at_exit: bool) -> None:
        if not slot.exported or slot.origin == "inherited":
            return
        since = slot.last_use if slot.last_use is not None else slot.creator
        if since is None:
            return
        allocs = proc.allocs - slot.allocs_at_use
        gap = None
        if end is not None and end.time is not None and since.end is not None:
            gap = end.time - since.end
        if allocs < self.held_allocs and (gap is None or gap < self.held_seconds):
            return
        st.held_total += 1
        if st.held_reports >= self.held_max_reports:
            return
        st.held_reports += 1
        until = "the process ended" if at_exit else f"it was closed by {short(end)}"
        msg = (f"{slot.describe()} stayed open after its last use ({short(since)}) until "
               f"{until}")
        parts = []
        if allocs:
            parts.append(f"{allocs} allocation(s)")
        if gap is not None and gap >= self.held_seconds:
            parts.append(f"{gap:.1f} s")
        msg += f": {' and '.join(parts)} later. An exported dma-buf fd held for a buffer's " \
               "whole life costs one fd per buffer; close it after the import"
        ev = [Evidence("created by", slot.root or slot.creator, call_site(slot.root or slot.creator))] \
            if (slot.root or slot.creator) is not None else []
        if slot.last_use is not None and slot.last_use is not slot.creator:
            ev.append(Evidence("last used by", slot.last_use, call_site(slot.last_use)))
        if end is not None:
            ev.append(Evidence("closed by" if not at_exit else "process end", end))
        self.emit(Finding(
            rule="fd-held-open", message=msg, event=slot.root or slot.creator,
            subject={"kind": "fd", "fd": slot.fd, "fd_kind": slot.kind}, evidence=ev,
            key=("held", slot.root_origin), details={"allocations_since_use": allocs}))

    def _peak(self, proc, st: ProcStats) -> None:
        if st.peak < self.peak_min or st.peak_event is None:
            return
        lv = st.levels
        peak = st.peak
        half = peak // 2
        a_peak, a_half = lv[peak - 1], lv[half - 1] if half >= 1 else 0
        growth = (peak - half) / (a_peak - a_half) if a_peak > a_half else None
        early = half / lv[half - 1] if half >= 1 and lv[half - 1] else None
        linear = (growth is not None and growth >= 0.5 and early is not None
                  and 0.5 <= growth / early <= 2.0)
        if not linear:
            return
        msg = (f"up to {peak} dma-buf fds were open at once in this process (peak at "
               f"{st.peak_event.file}:{st.peak_event.line}), growing by {growth:.2f} fd per "
               f"allocation ({a_peak} allocations by then): each allocation keeps its "
               "exported dma-buf fd open for its whole life, the VMM fd-per-handle design; "
               "at the default RLIMIT_NOFILE of 1024 it fails with EMFILE after ~1015 "
               "allocations")
        if st.held_total > st.held_reports:
            msg += (f"; {st.held_total} fds were held open long after their last use "
                    f"({st.held_reports} reported individually)")
        self.emit(Finding(
            rule="fd-held-open", message=msg, event=st.peak_event, subject={"kind": "process"},
            evidence=[Evidence("the peak was reached by", st.peak_event,
                               call_site(st.peak_event))],
            key=("peak", "linear"),
            details={"peak": peak, "fds_per_allocation": round(growth, 3),
                     "allocations": a_peak, "held_open": st.held_total}))
