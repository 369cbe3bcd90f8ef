"""The core against its committed expected outputs (issue 16).

Every fixture log is run through the same commands the comparison with the
old Python reference engine ran (``analyze`` as JSON, with and without
``--all-fds``, as the verbose text report and as a Perfetto trace,
``events`` as CSV, ``show`` of fd 3 and of the first SVM range) and what
each prints (a Perfetto file: its bytes after stdout), with its exit
status, is compared byte for byte with
``tests/engine/expected/<fixture path>.out``.  The generated
benchmark traces (benchmarks/gen_traces.py, seeded: they regenerate
identically) are too large to keep their outputs, so their SHA-256 and size
are kept in ``expected/generated.txt``; the traces past the chunking
threshold also run with ``--jobs 2``, which must print what ``--jobs 1``
prints.

The outputs were written when both engines agreed on every byte (the
comparison harness reported 0 differences); a change to them is a change of
behaviour, to be read and then written with ``--write``.

    python tests/engine/expected.py            # check; one line per difference
    python tests/engine/expected.py --write    # write what the core prints now
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from rocrtrace import __version__  # noqa: E402
from rocrtrace.cli import cli  # noqa: E402

FIXTURES = ROOT / "fixtures"
EXPECTED = Path(__file__).resolve().parent / "expected"
DIGESTS = EXPECTED / "generated.txt"
GEN = ROOT / "benchmarks" / "gen_traces.py"
# (dialect, lines): small ones, and ones past the 2 MiB chunking threshold
GENERATED = (("strace", 2000), ("preload", 2000), ("strace", 40000), ("preload", 30000))
CHUNKED = 2 << 20
HEADER = re.compile(rb"=== exit=(\d+) bytes=(\d+) :: (.*)\n")


def fixture_inputs() -> list[str]:
    """Fixture logs, relative to the repository (the outputs name them).
    fixtures/rules/ is not among them: each of its traces keeps its own
    expected report beside it (fixtures/rules/generate.py)."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix in (".log", ".gz", ".xz", ".bz2") and p.relative_to(FIXTURES).parts[0] != "rules"
    )


def generated_inputs(work: Path) -> list[str]:
    """Generated traces in ``work``, by bare name (run them from there)."""
    out = []
    for dialect, n in GENERATED:
        name = f"gen-{dialect}-{n}.log"
        if not (work / name).exists():
            subprocess.run(
                [sys.executable, str(GEN), dialect, str(n), str(work / name)], check=True, stdout=subprocess.DEVNULL
            )
        out.append(name)
    return out


def _svm_address(path: str) -> str | None:
    """The first SVM range's start in a (plain) trace, for show --addr."""
    try:
        with open(path, "rb") as f:
            m = re.search(rb"start_addr=(0x[0-9a-f]+)", f.read(1 << 16))
    except OSError:
        return None
    return m.group(1).decode() if m else None


PERFETTO_OUT = "{perfetto-out}"


def commands(path: str) -> list[list[str]]:
    cmds = [
        ["analyze", "--format", "json", "--no-progress", path],
        ["analyze", "--format", "json", "--no-progress", "--all-fds", path],
        # text: a call cited twice in one report is printed once ("shown above")
        ["analyze", "--verbose", "--no-progress", "--fail-on", "never", path],
        ["analyze", "--no-progress", "--fail-on", "never", "--format", f"perfetto:{PERFETTO_OUT}", path],
        ["events", "--format", "csv", path],
        ["show", "--fd", "3", "--format", "json", path],
    ]
    addr = _svm_address(path)
    if addr:
        cmds.append(["show", "--addr", f"{addr}:0x10000", "--format", "json", path])
    return cmds


def run(args: list[str]) -> tuple[int, bytes]:
    """(exit status, stdout and the Perfetto file it wrote) of one command;
    an exception that escapes the CLI is a bug, never an expected output."""
    with tempfile.TemporaryDirectory(prefix="rocrtrace-expected-") as tmp:
        pf = os.path.join(tmp, "trace.pftrace")
        res = CliRunner().invoke(cli, [a.replace(PERFETTO_OUT, pf) for a in args], catch_exceptions=True)
        written = b""
        if os.path.exists(pf):
            with open(pf, "rb") as f:
                written = b"\n--- perfetto file ---\n" + f.read()
    exc = res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        raise AssertionError(f"rocrtrace {' '.join(args)}: {type(exc).__name__}: {exc}")
    # the version is not behaviour: a release must not rewrite every output
    out = res.stdout_bytes.replace(f'"version": "{__version__}"'.encode(), b'"version": "VERSION"').replace(
        f"rocrtrace {__version__}".encode(), b"rocrtrace VERSION"
    )
    return res.exit_code, out + written


def render(path: str) -> bytes:
    """Every command's output for one input, each behind a header with its
    exit status and length."""
    parts = []
    for args in commands(path):
        code, out = run(args)
        parts.append(b"=== exit=%d bytes=%d :: %s\n" % (code, len(out), " ".join(args).encode()) + out + b"\n")
    return b"".join(parts)


def sections(data: bytes) -> list[tuple[str, int, bytes]]:
    """(command, exit status, stdout) of each section of an expected file."""
    out, i = [], 0
    while i < len(data):
        m = HEADER.match(data, i)
        if m is None:
            raise ValueError(f"malformed expected file at byte {i}")
        start = m.end()
        end = start + int(m.group(2))
        out.append((m.group(3).decode(), int(m.group(1)), data[start:end]))
        i = end + 1
    return out


def first_difference(want: bytes, got: bytes) -> str:
    lw, lg = want.splitlines(), got.splitlines()
    for i, (x, y) in enumerate(zip(lw, lg)):
        if x != y:
            return f"line {i + 1}: expected {x[:160]!r} / core {y[:160]!r}"
    return f"expected {len(lw)} lines / core {len(lg)} lines"


def check_fixture(path: str) -> list[str]:
    """The differences between the core and the expected file of one fixture."""
    exp = EXPECTED / (path + ".out")
    if not exp.exists():
        return [f"{path}: no expected output (write it with --write)"]
    want = {cmd: (code, out) for cmd, code, out in sections(exp.read_bytes())}
    got = {cmd: (code, out) for cmd, code, out in sections(render(path))}
    diffs = []
    for cmd in sorted(want.keys() | got.keys()):
        if cmd not in got or cmd not in want:
            diffs.append(f"{cmd}: {'expected only' if cmd in want else 'new command'}")
        elif want[cmd] != got[cmd]:
            what = []
            if want[cmd][0] != got[cmd][0]:
                what.append(f"exit {want[cmd][0]} / {got[cmd][0]}")
            if want[cmd][1] != got[cmd][1]:
                what.append(first_difference(want[cmd][1], got[cmd][1]))
            diffs.append(f"{cmd}: " + "; ".join(what))
    return diffs


@contextmanager
def cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def digests(work: Path) -> tuple[list[str], list[str]]:
    """(one 'sha256 size exit command' line per command on the generated
    traces, the --jobs 2 commands whose output differs from --jobs 1)."""
    lines, split = [], []
    with cwd(work):
        for path in generated_inputs(work):
            large = os.path.getsize(path) > CHUNKED
            for args in commands(path):
                if large and any(a.startswith("perfetto:") for a in args):
                    continue  # minutes to write; the small ones cover it
                code, out = run(args)
                lines.append(f"{hashlib.sha256(out).hexdigest()} {len(out)} {code} " + " ".join(args))
                if large and args[0] in ("analyze", "events"):
                    jargs = args[:-1] + ["--jobs", "2", path]
                    if run(jargs) != (code, out):
                        split.append(" ".join(jargs))
    return lines, split


def check_generated(work: Path) -> list[str]:
    lines, split = digests(work)
    want = DIGESTS.read_text().splitlines() if DIGESTS.exists() else []
    diffs = [f"--jobs 2 differs from --jobs 1: {c}" for c in split]
    wanted = {ln.split(" ", 3)[3]: ln for ln in want}
    for ln in lines:
        cmd = ln.split(" ", 3)[3]
        if wanted.get(cmd) != ln:
            diffs.append(f"{cmd}: expected {wanted.get(cmd, 'nothing')!r} / core {ln!r}")
    return diffs


def write(work: Path) -> int:
    n = 0
    for path in fixture_inputs():
        exp = EXPECTED / (path + ".out")
        exp.parent.mkdir(parents=True, exist_ok=True)
        exp.write_bytes(render(path))
        n += 1
    lines, split = digests(work)
    if split:
        print("\n".join(f"--jobs 2 differs from --jobs 1: {c}" for c in split))
        return 1
    DIGESTS.write_text("".join(ln + "\n" for ln in lines))
    print(f"wrote {n} expected file(s) and {len(lines)} digest(s)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write what the core prints now")
    ap.add_argument("--workdir", help="where generated traces go (default: a temp dir)")
    opts = ap.parse_args(argv)
    work = Path(opts.workdir or tempfile.mkdtemp(prefix="rocrtrace-expected-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    with cwd(ROOT):
        if opts.write:
            return write(work)
        inputs = fixture_inputs()
        diffs = [f"{p}: {d}" for p in inputs for d in check_fixture(p)]
    diffs += [f"generated: {d}" for d in check_generated(work)]
    print(
        "\n".join(
            diffs + [f"{len(inputs)} fixture(s) + {len(GENERATED)} generated trace(s), {len(diffs)} difference(s)"]
        )
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
