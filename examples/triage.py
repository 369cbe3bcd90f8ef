"""Triage with the typed API (README "Python API"): the double closes of a
trace and the dma-buf fds they hit, then a gate on the errors.  Type-checked
by tests/test_api.py with mypy --strict.

    python examples/triage.py TRACE...
"""

from __future__ import annotations

import sys

import rocrtrace


def main(paths: list[str]) -> int:
    report: rocrtrace.Report = rocrtrace.analyze(paths, fail_on="error")
    for f in report.by_rule("fd-double-close"):
        fd: int | None = f.subject.fd
        first = f.evidence[0]
        print(
            f"{f.location}: fd {fd} ({f.subject.fd_kind}) closed twice; "
            f"first {first.role} at {first.file}:{first.line}: {first.call}"
        )
    for f in report.findings:
        if f.subject.kind == "svm-range" and f.subject.start is not None:
            end = f.subject.end or f.subject.start
            print(
                f"{f.severity} {f.rule}: {end - f.subject.start:#x} bytes "
                f"at {f.subject.start:#x} on gpus {[hex(g) for g in f.subject.gpu_ids]}"
            )
    for item in report.coverage.cannot_show:
        print(f"cannot show: {item}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
