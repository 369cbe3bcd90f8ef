"""``[tool.rocrtrace]`` in the nearest ``pyproject.toml``, read the way
ruff reads ``[tool.ruff]``: the first ``pyproject.toml`` from the working
directory upwards that has the table.  Command-line options win: the table
only supplies click's defaults (``default_map``).

    [tool.rocrtrace]
    fail-on = "warning"                 # error | warning | note | never
    enable = ["svm-over-revoke", …]     # report only these rules
    disable = ["fd-held-open"]
    baseline = "ci/rocrtrace-baseline.json"   # relative to the pyproject.toml
    source-root = "src"                       # relative to the pyproject.toml

    [tool.rocrtrace.severity]           # per-rule severities
    fd-leak = "error"

A table that cannot be read or holds an unknown key or value is a usage
error (one line, exit 2), as a bad option is.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .rules import SEVERITIES

FAIL_ON = ("error", "warning", "note", "never")
KEYS = ("fail-on", "enable", "disable", "baseline", "source-root", "severity")


class ConfigError(ValueError):
    """The table cannot be used: its message is the one line the user sees."""


@dataclass
class Config:
    path: Path | None = None
    fail_on: str | None = None
    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    baseline: str | None = None
    source_root: str | None = None
    severity: dict[str, str] = field(default_factory=dict)

    def default_map(self) -> dict:
        """click's defaults for the commands that take these options."""
        analyze: dict = {}
        if self.fail_on:
            analyze["fail_on"] = self.fail_on
        if self.enable:
            analyze["enable"] = self.enable
        if self.disable:
            analyze["disable"] = self.disable
        if self.baseline:
            analyze["baseline"] = self.baseline
        if self.source_root:
            analyze["source_root"] = self.source_root
        out = {"analyze": analyze} if analyze else {}
        if self.fail_on:
            out["diff"] = {"fail_on": self.fail_on}
        return out


def find(start: str | os.PathLike | None = None) -> tuple[Path, dict] | None:
    """The nearest pyproject.toml with a [tool.rocrtrace] table, and the table."""
    d = Path(start or os.getcwd()).resolve()
    for p in (d, *d.parents):
        f = p / "pyproject.toml"
        if not f.is_file():
            continue
        try:
            with f.open("rb") as fh:
                doc = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{f}: cannot be read as TOML ({e})") from None
        table = doc.get("tool", {}).get("rocrtrace") if isinstance(doc.get("tool"), dict) else None
        if table is not None:
            return f, table
    return None


def _rules(f: Path, key: str, v, known) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [x for x in v.split(",") if x.strip()]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{f}: [tool.rocrtrace] {key} must be a list of rule ids")
    out = tuple(x.strip() for x in v)
    bad = [x for x in out if x not in known]
    if bad:
        raise ConfigError(f"{f}: [tool.rocrtrace] {key}: unknown rule {bad[0]!r}")
    return out


def load(start: str | os.PathLike | None = None) -> Config:
    """The configuration that applies in ``start`` (default: the working
    directory); an empty one when no pyproject.toml has the table."""
    from .rules import RULES

    hit = find(start)
    if hit is None:
        return Config()
    f, t = hit
    if not isinstance(t, dict):
        raise ConfigError(f"{f}: [tool.rocrtrace] must be a table")
    unknown = [k for k in t if k not in KEYS]
    if unknown:
        raise ConfigError(f"{f}: [tool.rocrtrace] unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    c = Config(path=f)
    if "fail-on" in t:
        if t["fail-on"] not in FAIL_ON:
            raise ConfigError(f"{f}: [tool.rocrtrace] fail-on must be one of {', '.join(FAIL_ON)}")
        c.fail_on = t["fail-on"]
    if "enable" in t:
        c.enable = _rules(f, "enable", t["enable"], RULES)
    if "disable" in t:
        c.disable = _rules(f, "disable", t["disable"], RULES)
    for key in ("baseline", "source-root"):
        if key in t:
            if not isinstance(t[key], str) or not t[key]:
                raise ConfigError(f"{f}: [tool.rocrtrace] {key} must be a path")
            setattr(c, key.replace("-", "_"), str(f.parent / t[key]))
    sev = t.get("severity", {})
    if not isinstance(sev, dict):
        raise ConfigError(f"{f}: [tool.rocrtrace.severity] must be a table of rule = severity")
    for rule, s in sev.items():
        if rule not in RULES:
            raise ConfigError(f"{f}: [tool.rocrtrace.severity] unknown rule {rule!r}")
        if s not in SEVERITIES:
            raise ConfigError(f"{f}: [tool.rocrtrace.severity] {rule} must be one of {', '.join(SEVERITIES)}")
        c.severity[rule] = s
    return c


def apply_severities(findings, severity: dict[str, str]) -> None:
    """Per-rule severities of the configuration, in place."""
    for f in findings:
        s = severity.get(f.rule)
        if s:
            f.severity = s
