"""rocrtrace: replay strace and preload traces of ROCm programs against models
of SVM ranges, fds and buffer handles, and report what went wrong.

``rocrtrace.analyze(paths, ...)`` is the typed Python API (rocrtrace/api.py):
a Report of frozen dataclasses (Finding, Evidence, Subject, Frame, Input,
Coverage)."""

__version__ = "0.1.0"

from .api import (
    Coverage,
    Evidence,
    Finding,
    Frame,
    Input,
    InputError,  # noqa: E402
    Report,
    Subject,
    analyze,
)

__all__ = [
    "analyze",
    "Report",
    "Finding",
    "Evidence",
    "Subject",
    "Frame",
    "Input",
    "Coverage",
    "InputError",
    "__version__",
]
