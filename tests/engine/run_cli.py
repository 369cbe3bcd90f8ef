"""Run rocrtrace commands in-process and keep what each printed: the
harness's and tests/test_no_python_engine.py's runner."""
from __future__ import annotations

import base64
from pathlib import Path

from click.testing import CliRunner


def run_one(args: list[str]) -> list:
    """[exit status, stdout (base64), the exception that escaped or None,
    the file a ``--format perfetto:FILE`` wrote (base64) or None]."""
    from rocrtrace.cli import cli

    res = CliRunner().invoke(cli, args, catch_exceptions=True)
    exc = res.exception
    err = None if exc is None or isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
    written = None
    for a in args:
        if a.startswith("perfetto:") and Path(a[9:]).exists():
            written = base64.b64encode(Path(a[9:]).read_bytes()).decode()
    return [res.exit_code, base64.b64encode(res.stdout_bytes).decode(), err, written]


def run_all(cmds: list[list[str]]) -> list[list]:
    return [run_one(c) for c in cmds]
