"""The result of one analysis: what reporters render."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from .events import InputInfo
from .findings import Finding
from .rules import SEVERITY_RANK


@dataclass
class AnalysisResult:
    inputs: list[InputInfo] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # coverage: what this input could and could not show, and how to see more
    coverage: dict[str, list[str]] = field(default_factory=lambda: {"shows": [], "cannot_show": [], "advice": []})
    suppressed: list[Finding] = field(default_factory=list)
    fail_on: str = "error"
    # what coverage was built from, so that results of traces analyzed apart
    # (--jobs) merge into the coverage one sequential run would give
    limits: list[str] = field(default_factory=list)
    facts: "TraceFacts | None" = None
    # the event table (tables.Batch, one a run), when the caller asked for it (diff)
    table: Any = None
    # inputs that could not be read or recognized while others were (each
    # one line; the CLI prints them after the report and exits 2)
    errors: list[str] = field(default_factory=list)

    def merge(self, other: "AnalysisResult") -> None:
        """Add ``other``'s inputs and findings, and rebuild coverage over both."""
        from .coverage import coverage

        self.inputs.extend(other.inputs)
        self.findings.extend(other.findings)
        self.limits.extend(x for x in other.limits if x not in self.limits)
        if self.facts is None:
            self.facts = TraceFacts()
        if other.facts is not None:
            self.facts.add(other.facts)
        self.coverage = self.facts.relevant(coverage(self.inputs, self.limits))

    def summary(self) -> dict[str, Any]:
        by_sev = Counter(f.severity for f in self.findings)
        by_rule = Counter(f.rule for f in self.findings)
        return {
            "findings": len(self.findings),
            "errors": by_sev.get("error", 0),
            "warnings": by_sev.get("warning", 0),
            "notes": by_sev.get("note", 0),
            "by_rule": dict(sorted(by_rule.items())),
            "suppressed": len(self.suppressed),
            "lines": sum(i.lines for i in self.inputs),
            "events": sum(i.events for i in self.inputs),
            "unparsed": sum(i.unparsed for i in self.inputs),
            "fail_on": self.fail_on,
            "failed": self.failed(),
        }

    def failed(self) -> bool:
        limit = SEVERITY_RANK[self.fail_on]
        return any(SEVERITY_RANK[f.severity] >= limit for f in self.findings)

    def sorted_findings(self) -> list[Finding]:
        """Most severe first, then by input order."""
        return sorted(self.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.file or "", f.line or 0, f.rule))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": {"name": "rocrtrace", "version": __version__},
            "inputs": [i.to_dict() for i in self.inputs],
            "coverage": self.coverage,
            "findings": [f.to_dict() for f in self.sorted_findings()],
            "summary": self.summary(),
        }


class TraceFacts:
    """What the inputs contained that decides which caveats apply; fed the
    events like a model.  Reads plain fields only (name, path, ioctl)."""

    def __init__(self):
        self.svm_ioctls = 0
        self.gpu_calls = 0
        self.findings: list = []

    def feed(self, ev) -> None:
        ioctl = getattr(ev, "ioctl", None)
        if ioctl == "AMDKFD_IOC_SVM":
            self.svm_ioctls += 1
        if (
            ioctl
            and ioctl.startswith(("AMDKFD_", "DRM_", "AMDGPU_", "AMDXDNA_"))
            or "/dev/kfd" in (getattr(ev, "path", None) or "")
            or "/dev/dri/" in (getattr(ev, "path", None) or "")
        ):
            self.gpu_calls += 1

    def finish(self) -> None:
        pass

    def add(self, other: "TraceFacts") -> None:
        self.svm_ioctls += other.svm_ioctls
        self.gpu_calls += other.gpu_calls

    def relevant(self, cov: dict) -> dict:
        """Caveats about SVM only where the input has SVM calls; the strace
        warning that SVM cannot be analyzed only for a program that used a
        GPU at all."""

        def keep(item: str) -> bool:
            if item.startswith("SVM:") or "intent calls" in item:
                return self.svm_ioctls > 0
            if "SVM" in item:
                return self.gpu_calls > 0
            return True

        return {k: v if k == "shows" else [x for x in v if keep(x)] for k, v in cov.items()}
