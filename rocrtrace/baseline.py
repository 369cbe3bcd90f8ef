"""Baselines: known findings a CI gate should not fail on.

A baseline lists fingerprints with an occurrence number: the n-th finding
with that fingerprint in one trace file.  Two identical leaks at the same
call site stay two entries, and a third one appearing later is new.  Each
entry carries a justification and an optional expiry date, after which it no
longer suppresses, so accepted debt comes back to the gate on its own.

File format (JSON)::

    {"schema": "rocrtrace-baseline/v1",
     "entries": [{"fingerprint": "…", "occurrence": 1, "rule": "fd-leak",
                  "message": "…", "justification": "", "expires": null}]}

``occurrence`` may be left out of a hand-written entry: it then matches every
occurrence of the fingerprint.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date

from .report.common import printable

BASELINE_SCHEMA = "rocrtrace-baseline/v1"
_FP = re.compile(r"^[0-9a-f]{8,64}$")


class BaselineError(Exception):
    """A baseline file that cannot be used; the message is one line."""


@dataclass
class Entry:
    fingerprint: str
    occurrence: int | None = None
    rule: str = ""
    message: str = ""
    justification: str = ""
    expires: date | None = None

    def expired(self, today: date) -> bool:
        return self.expires is not None and self.expires < today

    def to_dict(self) -> dict:
        return {
            "fingerprint": self.fingerprint,
            "occurrence": self.occurrence,
            "rule": self.rule,
            "message": self.message,
            "justification": self.justification,
            "expires": self.expires.isoformat() if self.expires else None,
        }

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        occ = f"#{self.occurrence}" if self.occurrence else ""
        return f"{self.rule or '?'} {self.fingerprint}{occ}"


@dataclass
class Baseline:
    entries: list[Entry] = field(default_factory=list)
    path: str = ""


@dataclass
class Applied:
    """What applying a baseline did, for the CLI to print."""

    suppressed: list = field(default_factory=list)  # findings moved
    expired: list[Entry] = field(default_factory=list)  # entries past their date
    unused: list[Entry] = field(default_factory=list)  # entries that matched nothing

    def __iter__(self):
        """Iterating gives the expired entries: what a gate must warn about."""
        return iter(self.expired)

    def messages(self) -> list[str]:
        out = []
        for e in self.expired:
            # rule and message are text a trace (or the baseline's author)
            # wrote: shown, never obeyed (no newline to start a workflow
            # command, no escape sequence for the terminal)
            out.append(
                f"baseline entry expired on {e.expires.isoformat()}, no longer "
                f"suppresses: {printable(e.describe())} {printable(e.message)}".rstrip()
            )
        if self.unused:
            out.append(
                f"{len(self.unused)} baseline entries matched no finding "
                "(fixed? rewrite the baseline with --write-baseline)"
            )
        return out


def occurrences(findings) -> dict[int, int]:
    """id(finding) -> its 1-based occurrence among findings with the same
    fingerprint in the same trace file, in trace order."""
    seen: dict[tuple, int] = {}
    occ: dict[int, int] = {}
    for f in sorted(findings, key=lambda f: (f.file or "", f.line or 0, getattr(f.event, "seq", 0), f.rule)):
        k = (f.file, f.fingerprint)
        seen[k] = seen.get(k, 0) + 1
        occ[id(f)] = seen[k]
    return occ


def write_baseline(path: str, result, previous: Baseline | None = None) -> int:
    """Write every finding of ``result`` (suppressed ones too) as a baseline;
    justifications and expiry dates of ``previous`` carry over.  Returns the
    number of entries written."""
    old = {(e.fingerprint, e.occurrence): e for e in (previous.entries if previous else [])}
    everything = [*result.findings, *result.suppressed]
    occ = occurrences(everything)
    entries: dict[tuple, Entry] = {}
    for f in everything:
        key = (f.fingerprint, occ[id(f)])
        if key in entries:
            continue  # the same (fingerprint, n) in another trace file
        prev = old.get(key) or old.get((f.fingerprint, None))
        entries[key] = Entry(
            f.fingerprint,
            occ[id(f)],
            f.rule,
            f.message,
            prev.justification if prev else "",
            prev.expires if prev else None,
        )
    doc = {
        "schema": BASELINE_SCHEMA,
        "entries": [
            e.to_dict() for e in sorted(entries.values(), key=lambda e: (e.rule, e.fingerprint, e.occurrence or 0))
        ],
    }
    text = json.dumps(doc, indent=2) + "\n"
    # Whole or not at all (a CI job killed mid-write must not leave a
    # truncated baseline that later fails every run), and never over what is
    # not a regular file nor through a symlink: /dev/null is written in
    # place, a link or a FIFO is refused (rocrtrace.output).
    from .output import OutputError, replace

    try:
        replace(path, text, "baseline")
    except OutputError as e:
        raise BaselineError(str(e).removeprefix("rocrtrace: ")) from None
    return len(entries)


# A baseline lists fingerprints: tens of thousands of entries are a few MB.
# Anything bigger is not a baseline, and /dev/zero must not be read forever.
MAX_BYTES = 64 << 20


def load_baseline(path: str) -> Baseline:
    shown = printable(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise BaselineError(f"baseline {shown}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_BYTES:
        raise BaselineError(f"baseline {shown}: larger than {MAX_BYTES >> 20} MiB: not a baseline")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BaselineError(f"baseline {shown}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise BaselineError(f"baseline {shown}: not JSON (line {e.lineno} column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise BaselineError(f"baseline {shown}: JSON nested too deeply") from None
    except ValueError as e:
        # e.g. an integer of thousands of digits (int_max_str_digits)
        raise BaselineError(f"baseline {shown}: not a usable JSON value ({printable(str(e)[:80])})") from None
    path = shown
    if not isinstance(doc, dict):
        raise BaselineError(f"baseline {path}: expected a JSON object")
    if doc.get("schema") != BASELINE_SCHEMA:
        raise BaselineError(f"baseline {path}: schema is {doc.get('schema')!r}, expected {BASELINE_SCHEMA!r}")
    raw = doc.get("entries")
    if not isinstance(raw, list):
        raise BaselineError(f"baseline {path}: 'entries' must be a list")
    return Baseline([_entry(path, n, e) for n, e in enumerate(raw, 1)], path)


def _entry(path: str, n: int, e) -> Entry:
    where = f"baseline {path}: entry {n}"
    if not isinstance(e, dict):
        raise BaselineError(f"{where}: expected an object")
    fp = e.get("fingerprint")
    if not isinstance(fp, str) or not _FP.match(fp):
        raise BaselineError(f"{where}: 'fingerprint' must be a lowercase hex string")
    occ = e.get("occurrence")
    if occ is not None and (not isinstance(occ, int) or isinstance(occ, bool) or occ < 1):
        raise BaselineError(f"{where}: 'occurrence' must be a positive integer or null")
    just = e.get("justification", "")
    if not isinstance(just, str):
        raise BaselineError(f"{where}: 'justification' must be a string")
    exp = e.get("expires")
    if exp is not None:
        try:
            exp = date.fromisoformat(exp) if isinstance(exp, str) else None
        except ValueError:
            exp = None
        if exp is None:
            raise BaselineError(
                f"{where}: 'expires' must be a date YYYY-MM-DD or null, not {printable(repr(e.get('expires'))[:80])}"
            )
    return Entry(fp, occ, str(e.get("rule", "")), str(e.get("message", "")), just, exp)


def apply_baseline(result, baseline: Baseline, today: date | None = None) -> Applied:
    """Move findings the baseline lists from ``result.findings`` to
    ``result.suppressed``.  Expired entries do not suppress."""
    today = today or date.today()
    live: dict[tuple, Entry] = {}
    applied = Applied()
    for e in baseline.entries:
        if e.expired(today):
            applied.expired.append(e)
        else:
            live[(e.fingerprint, e.occurrence)] = e
    used: set[int] = set()
    occ = occurrences([*result.findings, *result.suppressed])
    keep = []
    for f in result.findings:
        e = live.get((f.fingerprint, occ[id(f)])) or live.get((f.fingerprint, None))
        if e is None:
            keep.append(f)
            continue
        used.add(id(e))
        f.details = {
            **(f.details or {}),
            "baseline": {"justification": e.justification, "expires": e.expires.isoformat() if e.expires else None},
        }
        applied.suppressed.append(f)
    result.findings = keep
    result.suppressed.extend(applied.suppressed)
    applied.unused = [e for e in live.values() if id(e) not in used]
    return applied
