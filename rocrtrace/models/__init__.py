"""Replay models.  Each is pure and streaming: ``feed(event)`` in completion
order, ``finish()`` at the end of the trace, findings in ``.findings``.
Models keep only live state (open fds, live handles, live claims)."""
from __future__ import annotations

from ..parse.pyevents import Event
from ..findings import Finding


class Model:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def feed(self, ev: Event) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def finish(self) -> None:
        pass
