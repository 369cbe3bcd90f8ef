"""The command line.  Heavy modules (the models, pyelftools, pyarrow) are
imported inside the commands so that ``rocrtrace --help`` stays fast.

Exit codes (every command): 0 nothing at or above --fail-on, 1 findings at or
above it, 2 usage error or unreadable input, 3 internal error.  click's own
exit 1 (ClickException, Abort, uncaught exceptions) must never leak through,
so the group runs with standalone_mode=False and ``main`` maps everything.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback

import click

from . import __version__
from .config import FAIL_ON
from .report import BINARY_FORMATS, FORMATS as REPORT_FORMATS, format_help
from .schema import TABLE_FORMATS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Each choice list once: the options below, their --help text and the
# validation all read these.
CAPTURE_METHODS = ("preload", "strace")
HISTORY_FORMATS = ("text", "json")  # stats, show, rules
DIFF_FORMATS = ("text", "json", "markdown")


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


class UsageFail(click.ClickException):
    """A usage or input problem: one line, exit 2."""

    exit_code = EXIT_USAGE

    def format_message(self) -> str:
        # file names and trace text in a message are shown, never obeyed
        from .report.common import printable

        return printable(self.message)


_JOBS_HELP = (
    "Use N threads: several TRACE arguments are analyzed in parallel; one "
    "trace's strace or preload file of 2 MiB or more (or standard input) is "
    "parsed in chunks on N threads.  The result is exactly that of --jobs 1."
)
_TABLE_JOBS_HELP = (
    "Parse each strace or preload file of 2 MiB or more (or standard input) in chunks on N threads (the same {})."
)


def _parse_format_specs(specs, default_out):
    """``--format json:out.json`` → [(fmt, path|None)]; bare formats go to -o."""
    out = []
    for spec in specs or ("text",):
        fmt, _, path = spec.partition(":")
        if fmt not in REPORT_FORMATS:
            raise UsageFail(f"unknown format {fmt!r} (choose from {', '.join(REPORT_FORMATS)})")
        path = path or default_out
        if fmt in BINARY_FORMATS and path in (None, "-"):
            raise UsageFail(f"{fmt} is binary: give it a file (--format {fmt}:FILE)")
        out.append((fmt, path))
    bare_stdout = [f for f, p in out if p is None]
    if len(bare_stdout) > 1:
        raise UsageFail("several formats would go to standard output: give each a file (--format FMT:FILE)")
    for _, path in out:
        check_output_path(path)
    from .report import check_formats

    check_formats(f for f, _ in out)
    return out


def check_output_path(path: str | None, what: str = "output") -> None:
    """A bad output path is the user's to fix (exit 2), and is found before
    a long analysis runs, not after: a missing directory, a symlink, a FIFO
    or anything else that is not a regular file or a character device."""
    from .output import check

    check(path, what)


def _emit(text, path: str | None) -> None:
    """The report to ``path`` or stdout; never through a symlink, never onto
    a FIFO or over a node that is not a regular file (rocrtrace.output)."""
    from .output import write

    if (path is None or path == "-") and isinstance(text, str):
        # a report holds escapes only when colour was asked for (trace text
        # is escaped), so they go out as they are, also to a pipe
        text = text if text.endswith("\n") else text + "\n"
    write(path, text)


def _rereadable(path: str) -> bool:
    """A TRACE argument that can be read twice: not standard input, not a
    FIFO or other stream (a file, a directory or a glob can)."""
    import stat

    if path == "-":
        return False
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True  # a glob, or missing: the core says which
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _emit_stream(f, path: str | None, binary: bool) -> None:
    """The content of the open file ``f`` to ``path`` or stdout, a MiB at a
    time, with _emit's safety (rocrtrace.output)."""
    from .output import write

    first = True
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        write(path, chunk, append=not first)
        first = False
    if first:
        write(path, b"" if binary else "")


def split_rules(values) -> list[str]:
    """``--enable a,b --enable c`` → [a, b, c]."""
    return [r.strip() for v in values or () for r in v.split(",") if r.strip()]


def _use_color(flag, path) -> bool:
    if flag is not None:
        return flag
    # https://no-color.org: any non-empty NO_COLOR turns colour off
    if os.environ.get("NO_COLOR"):
        return False
    # a terminal that says it cannot (TERM=dumb: Emacs shells, some CI logs)
    if os.environ.get("TERM") == "dumb":
        return False
    return path is None and sys.stdout.isatty()


def _terminal_width(path) -> int | None:
    if path is None and sys.stdout.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    return None


def check_recognized(infos, input_format=None) -> None:
    """An input of which no line parsed as an event cannot be recognized:
    exit 2, never a clean pass on garbage."""
    for info in infos:
        if info.events == 0 and info.lines > 0 and info.unparsed > 0:
            forced = f" as {input_format}" if input_format else ""
            sample = ""
            if info.unparsed_samples:
                ln, text = info.unparsed_samples[0]
                sample = f" (line {ln}: {text[:60]!r})"
            raise UsageFail(
                f"{info.file}: no line parses{forced} as a trace event: {info.unparsed} line(s) unparsed{sample}"
            )


def _check_rules(ids):
    from .rules import RULES

    for r in ids:
        if r not in RULES:
            raise UsageFail(f"unknown rule {r!r} (see 'rocrtrace rules')")


def _engine_name() -> str:
    """Whether the engine, the compiled core built at install, loads (without
    the rest of the engine: --version stays quick)."""
    try:
        from . import _engine  # noqa: F401
    except ImportError:
        return "compiled core not built (pip install .)"
    return "compiled core (Rust)"


def _print_version(ctx, _param, value):
    if value and not ctx.resilient_parsing:
        click.echo(f"rocrtrace {__version__} (engine: {_engine_name()})")
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx):
    """Replay strace and preload traces of ROCm programs against models of SVM
    ranges, fds and buffer handles, and report over-revokes, coherency
    downgrades, double closes, leaks and the rest, with the evidence.

    \b
    Exit status: 0 clean (nothing at or above --fail-on), 1 findings,
    2 usage error or unreadable input, 3 internal error.

    \b
    [tool.rocrtrace] in the nearest pyproject.toml may set fail-on, enable,
    disable, baseline, source-root and per-rule severities
    ([tool.rocrtrace.severity]); command-line options win.
    """
    from .config import ConfigError, load

    try:
        conf = load()
    except ConfigError as e:
        raise UsageFail(str(e)) from None
    ctx.obj = conf
    ctx.default_map = {**conf.default_map(), **(ctx.default_map or {})}


_RULES_HELP = "Comma-separated rule ids; may be repeated."


def input_formats() -> tuple[str, ...]:
    """The dialects the core reads: its registry's names (src/parse/mod.rs)."""
    from .core import core

    return tuple(core().input_formats())


class _CoreChoice(click.Choice):
    """A choice list the core holds, asked for when an option first needs it
    (not at import: `rocrtrace --help` and `--version` do not load the core)."""

    def __init__(self, load):
        self._load = load
        self._choices = None
        self.case_sensitive = True

    @property
    def choices(self):
        if self._choices is None:
            self._choices = self._load()
        return self._choices


def _input_format_option(fn):
    return click.option(
        "--input-format", type=_CoreChoice(input_formats), help="Force the input format instead of detecting it."
    )(fn)


def _fail_on_option(what: str):
    return click.option(
        "--fail-on",
        type=click.Choice(FAIL_ON),
        default="error",
        show_default=True,
        help=f"Exit 1 when {what} is at or above this severity.",
    )


def _format_option(choices, what: str):
    return click.option(
        "--format", "fmt", type=click.Choice(choices), default=choices[0], show_default=True, help=f"{what} format."
    )


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@click.option(
    "--format",
    "formats",
    multiple=True,
    metavar="FMT[:FILE]",
    help=f"Report format: {format_help()}. Repeat with :FILE for several outputs in one run.",
)
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE.")
@_fail_on_option("a finding that remains")
@click.option("--enable", multiple=True, metavar="RULE[,RULE…]", help="Report only these rules. " + _RULES_HELP)
@click.option("--disable", multiple=True, metavar="RULE[,RULE…]", help="Do not report these rules. " + _RULES_HELP)
@click.option("--baseline", metavar="FILE", help="Suppress findings whose fingerprints FILE lists.")
@click.option("--write-baseline", metavar="FILE", help="Write the findings' fingerprints to FILE.")
@_input_format_option
@click.option(
    "--source-root",
    metavar="DIR",
    help="The program's source tree: a finding is located at the first stack frame "
    "whose source lies under DIR (default: the current directory).",
)
@click.option(
    "--debug-dir",
    "debug_dirs",
    multiple=True,
    metavar="DIR",
    help="Look for separate debug files (by build-id) under DIR.",
)
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=1, show_default=True, metavar="N", help=_JOBS_HELP)
@click.option("--no-progress", is_flag=True, help="Never show a progress bar.")
@click.option("-v", "--verbose", is_flag=True, help="Text report: the full diagnosis, coverage and every caveat.")
@click.option("-q", "--quiet", is_flag=True, help="Text report: one line per finding, nothing else.")
@click.option(
    "--color/--no-color", default=None, help="Colour the text report (default: on a terminal, unless NO_COLOR is set)."
)
@click.option(
    "--all-fds",
    is_flag=True,
    help="Also list every fd the program opened and still holds at exit "
    "(fd-open-at-exit notes, like valgrind --track-fds).",
)
def analyze(
    traces,
    formats,
    output,
    fail_on,
    enable,
    disable,
    baseline,
    write_baseline,
    input_format,
    source_root,
    debug_dirs,
    jobs,
    no_progress,
    verbose,
    quiet,
    color,
    all_fds,
):
    """Parse TRACE..., replay it and report findings (the main job).

    TRACE is a file, '-' (stdin), a directory or a glob (strace -ff files or
    one preload log per process), optionally compressed (.gz, .xz, .bz2, .zst).
    """
    from .report import render
    from .rules import RULES

    if verbose and quiet:
        raise UsageFail("--verbose and --quiet exclude each other")
    enable, disable = split_rules(enable), split_rules(disable)
    _check_rules(enable)
    _check_rules(disable)
    specs = _parse_format_specs(formats, output)
    check_output_path(write_baseline, "baseline")
    if source_root is not None and not os.path.isdir(source_root):
        raise UsageFail(f"--source-root {source_root}: not a directory")
    for d in debug_dirs:
        if not os.path.isdir(d):
            raise UsageFail(f"--debug-dir {d}: not a directory")
    enabled = set(enable) if enable else set(RULES)
    enabled -= set(disable)

    events_sink = _event_sink(specs)
    result = _run_analysis(
        traces,
        input_format,
        enabled,
        debug_dirs,
        fail_on,
        jobs,
        progress=not no_progress,
        sink=events_sink,
        all_fds=all_fds,
    )
    check_recognized(result.inputs, input_format)
    conf = click.get_current_context().find_root().obj
    if conf is not None and conf.severity:
        from .config import apply_severities

        apply_severities(result.findings, conf.severity)
    if baseline:
        from .baseline import apply_baseline, load_baseline

        applied = apply_baseline(result, load_baseline(baseline))
        for msg in applied.messages():
            _say(f"rocrtrace: {msg}")
    if write_baseline:
        from .baseline import write_baseline as write_bl

        write_bl(write_baseline, result)
    for fmt, path in specs:
        opts = {"enabled": enabled, "cwd": source_root}
        if fmt == "text":
            opts.update(color=_use_color(color, path), verbose=verbose, quiet=quiet, width=_terminal_width(path))
        if fmt == "perfetto":
            opts["events"] = events_sink
        _emit(render(result, fmt, **opts), path)
    if result.errors:
        # the inputs that could not be read, after the others' report
        for msg in result.errors:
            _say(msg if msg.startswith("rocrtrace:") else f"rocrtrace: {msg}")
        return EXIT_USAGE
    return EXIT_FINDINGS if result.failed() else EXIT_CLEAN


def _event_sink(specs):
    """What the perfetto format needs of the event stream, collected while
    the replay runs (only when that format is asked for)."""
    if not any(fmt == "perfetto" for fmt, _ in specs):
        return None
    from .report.perfetto import EventSink

    return EventSink()


_CORE_RUNNING = False
_CORE_JOBS = None  # the queue of the one thread the core runs on


def _in_core(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` (an engine call) on the core's worker thread
    while the main thread waits for it.  Python runs a Ctrl-C's handler on
    the main thread between bytecodes only, so with the core on the main
    thread a SIGINT waited until the whole trace was replayed (and the
    report then printed, exit 0); waiting here, the main thread takes the
    KeyboardInterrupt at once and ``main`` ends the run with exit 130 and no
    report.

    One thread, started once and kept for the process's life: the compiled
    core crashes (SIGSEGV in its allocator) when it runs on a new thread
    after another thread that ran it has exited, so calls are never spread
    over short-lived threads."""
    import queue
    import threading

    global _CORE_RUNNING, _CORE_JOBS
    if _CORE_JOBS is None:
        jobs: queue.SimpleQueue = queue.SimpleQueue()

        def loop():
            while True:
                job, box, done = jobs.get()
                try:
                    box["value"] = job()
                except BaseException as e:  # noqa: BLE001 - handed to the caller
                    box["error"] = e
                finally:
                    done.set()

        threading.Thread(target=loop, name="rocrtrace-core", daemon=True).start()
        _CORE_JOBS = jobs
    box: dict = {}
    done = threading.Event()
    _CORE_JOBS.put((lambda: fn(*args, **kwargs), box, done))
    _CORE_RUNNING = True
    while not done.wait(0.25):
        pass
    _CORE_RUNNING = False
    if "error" in box:
        raise box.pop("error")
    return box.pop("value")


def _run_analysis(traces, input_format, enabled, debug_dirs, fail_on, jobs, progress, sink=None, all_fds=False):
    from . import engine

    bar = _progress_hook(traces) if progress and sys.stderr.isatty() else None
    try:
        return _in_core(
            engine.analyze,
            list(traces),
            input_format=input_format,
            enabled=enabled,
            debug_dirs=debug_dirs,
            fail_on=fail_on,
            all_fds=all_fds,
            jobs=jobs,
            on_event=sink,
            progress=bar,
            keep_going=True,
        )
    finally:
        if bar is not None:
            bar.close()


class _Progress:
    """A progress bar on stderr, shown only once a run has taken a few
    seconds.  The share done is estimated per file from the line reached and
    the file's size over its mean line length (sampled from its head); for
    compressed files and stdin only the count is shown."""

    WIDTH = 24

    def __init__(self, files=(), delay: float = 2.0, out=None):
        self.n = 0
        self.start = time.monotonic()
        self.delay = delay
        self.shown = False
        self.width = 0  # the length of the line last drawn
        self.out = out
        self.size: dict = {}  # file -> bytes
        self.lines: dict = {}  # file -> estimated lines
        self.reached: dict = {}  # file -> last line seen
        for path in files:
            est = _estimate_lines(path)
            if est is not None:
                self.size[path], self.lines[path] = est

    def __call__(self, ev):
        self.n += 1
        if not self.n & 0xFFFF:
            self.advance(0, ev.file, ev.line)

    def advance(self, n: int, file: str, line: int) -> None:
        """``n`` more events, the last at ``file``:``line`` (the core's
        callback, every few thousand events)."""
        self.n += n
        self.reached[file] = max(line, self.reached.get(file, 0))
        el = time.monotonic() - self.start
        if el > self.delay:
            self.shown = True
            line = self.render(el)
            # pad over a longer previous line (its "s left" part)
            pad = " " * max(0, self.width - len(line))
            self.width = len(line)
            click.echo("\r" + line + pad, err=True, nl=False, file=self.out)

    def fraction(self) -> float | None:
        if not self.size:
            return None
        done = sum(self.size[f] * min(1.0, self.reached.get(f, 0) / self.lines[f]) for f in self.size)
        return done / sum(self.size.values())

    def render(self, el: float) -> str:
        frac = self.fraction()
        text = f"{self.n:,} events, {el:.0f} s"
        if frac is None:
            return f"rocrtrace: {text}"
        full = int(frac * self.WIDTH)
        bar = "#" * full + "." * (self.WIDTH - full)
        left = f", ~{el / frac - el:.0f} s left" if frac > 0.01 else ""
        return f"rocrtrace: [{bar}] {frac:4.0%} {text}{left}"

    def close(self):
        """Take the bar away: no last "97%" left above the report."""
        if self.shown:
            click.echo("\r" + " " * self.width + "\r", err=True, nl=False, file=self.out)
            self.shown = False


def _estimate_lines(path: str) -> tuple[int, float] | None:
    """(size, estimated line count) of a plain file; None if unknown."""
    from .paths import is_plain_file

    if not is_plain_file(path):
        return None
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    nl = head.count(b"\n")
    if not size or not nl:
        return None
    return size, max(1.0, size / (len(head) / nl))


def _progress_hook(traces):
    from .paths import InputError, expand

    files = []
    for t in traces:
        try:
            files.extend(expand(t))
        except InputError:
            pass  # the analysis itself reports it
    return _Progress(files)


@cli.command()
@click.option(
    "--method",
    type=click.Choice(CAPTURE_METHODS),
    default=CAPTURE_METHODS[0],
    show_default=True,
    help="Capture with the preload library or with strace.",
)
@click.option(
    "-o",
    "--output",
    "prefix",
    metavar="PREFIX",
    help="Log file prefix: one file per process, PREFIX.PID (strace: per "
    "thread, PREFIX.TID); its directory is created.",
)
@click.option(
    "--stack-depth",
    type=click.IntRange(0, 64),
    default=0,
    show_default=True,
    help="Record N stack frames per call (0: off).",
)
@click.argument("cmd", nargs=-1, required=True, type=click.UNPROCESSED)
def capture(method, prefix, stack_depth, cmd):
    """Run CMD and write a trace that 'analyze' reads (use '--' before CMD).

    The program's exit status is passed through.
    """
    from .capture.run import CaptureError, capture as run_capture

    try:
        return run_capture(
            list(cmd), method=method, prefix=prefix, stack_depth=stack_depth, echo=lambda msg: click.echo(msg, err=True)
        )
    except CaptureError as e:
        raise UsageFail(str(e)) from None


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@_format_option(TABLE_FORMATS, "Table")
@click.option("-o", "--output", metavar="FILE", help="Write the table to FILE.")
@_input_format_option
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    metavar="N",
    help=_TABLE_JOBS_HELP.format("events"),
)
def events(traces, fmt, output, input_format, jobs):
    """The normalized event table of TRACE... (one row per event)."""
    from . import engine
    from .tables import EventsWriter, TableError

    if fmt == "parquet" and not output:
        raise UsageFail("parquet is binary: give -o FILE")
    check_output_path(output)
    import tempfile

    # batch by batch (one batch in memory), into a temporary file
    # that becomes the output only once every input was read (an input error
    # leaves no half table behind)
    spool = tempfile.TemporaryFile(
        mode="w+b" if fmt == "parquet" else "w+", **({} if fmt == "parquet" else {"encoding": "utf-8", "newline": ""})
    )
    with spool:
        writer = EventsWriter(fmt, spool)
        try:
            infos = _in_core(engine.event_batches, list(traces), writer.write, input_format=input_format, jobs=jobs)
            writer.close()
        except TableError as e:
            raise UsageFail(str(e)) from None
        check_recognized(infos, input_format)
        spool.seek(0)
        _emit_stream(spool, output, binary=fmt == "parquet")
    return EXIT_CLEAN


@cli.command()
@click.argument("traces", nargs=-1, required=True)
@_format_option(HISTORY_FORMATS, "Output")
@click.option("-o", "--output", metavar="FILE", help="Write the statistics to FILE.")
@_input_format_option
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    metavar="N",
    help=_TABLE_JOBS_HELP.format("counts"),
)
def stats(traces, fmt, output, input_format, jobs):
    """Counts, errors, sizes and latency percentiles per ioctl and SVM attribute shape."""
    from . import engine
    from .tables import StatsAcc, render_stats

    check_output_path(output)
    acc = StatsAcc()
    infos = _in_core(engine.event_batches, list(traces), acc.add, input_format=input_format, jobs=jobs)
    check_recognized(infos, input_format)
    _emit(render_stats(acc.tables(), fmt), output)
    return EXIT_CLEAN


def _parse_addr(spec: str):
    addr, _, length = spec.partition(":")
    try:
        start = int(addr, 0)
        size = int(length, 0) if length else 1
    except ValueError:
        raise UsageFail(f"--addr {spec!r}: expected ADDR[:LEN] (hex or decimal)") from None
    if size <= 0:
        raise UsageFail(f"--addr {spec!r}: LEN must be positive")
    return start, start + size


@cli.command()
@click.argument("trace")
@click.option("--addr", metavar="ADDR[:LEN]", help="The pages of this address range.")
@click.option("--fd", type=int, help="This fd number.")
@click.option("--pid", type=int, help="Only this process.")
@_format_option(HISTORY_FORMATS, "Output")
@click.option("-o", "--output", metavar="FILE", help="Write the history to FILE.")
@_input_format_option
def show(trace, addr, fd, pid, fmt, output, input_format):
    """The full history of one page range or fd, event by event."""
    from . import engine
    from .history import render_history

    if (addr is None) == (fd is None):
        raise UsageFail("give exactly one of --addr ADDR[:LEN] or --fd N")
    check_output_path(output)
    watch_addr = _parse_addr(addr) if addr else None
    if watch_addr is not None and pid is not None:
        watch_addr = (*watch_addr, pid)
    hist, infos = _in_core(
        engine.history,
        trace,
        input_format=input_format,
        watch_fd=(pid, fd) if fd is not None else None,
        watch_addr=watch_addr,
    )
    check_recognized(infos, input_format)
    subject = f"--addr {addr}" if addr else f"--fd {fd}"
    _emit(render_history(hist, subject, fmt, pid=pid), output)
    return EXIT_CLEAN


@cli.command()
@click.argument("a")
@click.argument("b")
@_format_option(DIFF_FORMATS, "Output")
@click.option("-o", "--output", metavar="FILE", help="Write the comparison to FILE.")
@_fail_on_option("a finding only in B")
@_input_format_option
def diff(a, b, fmt, output, fail_on, input_format):
    """What changed between two traces: ioctl mix, SVM shapes, findings.

    The exit status gates on the findings only in B (the change's new ones).
    """
    from . import engine
    from .rules import SEVERITY_RANK
    from .tables import StatsAcc, diff_of_stats, render_diff, stats_tables

    check_output_path(output)
    sides = []
    for path in (a, b):
        if _rereadable(path):
            # the findings, then the counts in a second pass a batch at a
            # time (no whole event table)
            result = _in_core(engine.analyze, [path], input_format=input_format)
            check_recognized(result.inputs, input_format)
            acc = StatsAcc()
            _in_core(engine.event_batches, [path], acc.add, input_format=input_format)
            sides.append((acc.tables(), result.findings))
        else:
            # standard input or a FIFO: one pass, holding the table
            result = _in_core(engine.analyze, [path], input_format=input_format, table=True)
            check_recognized(result.inputs, input_format)
            sides.append((stats_tables(result.table), result.findings))
    d = diff_of_stats(sides[0][0], sides[0][1], sides[1][0], sides[1][1])
    _emit(render_diff(d, fmt, names=(a, b)), output)
    limit = SEVERITY_RANK[fail_on]
    new = [f for f in d["only_in_b"] if SEVERITY_RANK.get(f["severity"], 0) >= limit]
    return EXIT_FINDINGS if new else EXIT_CLEAN


@cli.command()
@click.argument("rule_ids", nargs=-1, metavar="[RULE]...")
@_format_option(HISTORY_FORMATS, "Output")
def rules(rule_ids, fmt):
    """The rule catalogue: ids, severities, what each means.

    With RULE ids: each rule's explanation, an example and the fix.
    """
    import json
    from dataclasses import asdict

    from .rules import RULES

    ids = split_rules(rule_ids)
    _check_rules(ids)
    chosen = [RULES[i] for i in ids] if ids else list(RULES.values())

    if fmt == "json":
        _emit(json.dumps([asdict(r) for r in chosen], indent=2), None)
        return EXIT_CLEAN
    if ids:
        import textwrap

        out = []
        for r in chosen:
            out.append(f"{r.id} ({r.severity}): {r.summary}")
            out += ["", *textwrap.wrap(r.help, 78, initial_indent="  ", subsequent_indent="  ")]
            for label, text in (("example", r.example), ("fix", r.fix)):
                out += ["", f"  {label}:", *textwrap.wrap(text, 78, initial_indent="    ", subsequent_indent="    ")]
            out.append("")
        _emit("\n".join(out), None)
        return EXIT_CLEAN
    from tabulate import tabulate

    rows = [(r.id, r.severity, r.summary) for r in chosen]
    _emit(
        tabulate(rows, headers=("rule", "severity", "fires when"))
        + "\n\n'rocrtrace rules RULE' explains one, with an example and the fix.",
        None,
    )
    return EXIT_CLEAN


def _internal_error(exc: BaseException) -> int:
    # ROCRTRACE_CRASH_DIR: where tests (and CI jobs that keep artifacts)
    # want the traceback; the system's temporary directory otherwise.
    where = os.environ.get("ROCRTRACE_CRASH_DIR") or None
    try:
        fd, path = tempfile.mkstemp(prefix="rocrtrace-crash-", suffix=".txt", dir=where)
    except OSError:
        fd, path = tempfile.mkstemp(prefix="rocrtrace-crash-", suffix=".txt")
    with os.fdopen(fd, "w") as fh:
        fh.write(f"rocrtrace {__version__}\nargv: {sys.argv!r}\n\n")
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=fh)
    _say(f"rocrtrace: internal error: {type(exc).__name__}: {exc} (traceback written to {path})")
    return EXIT_INTERNAL


def _say(msg: str) -> None:
    """One line on stderr; what came from a file name, a trace or a baseline
    is escaped (no control character, no bidi override reaches a terminal or
    a CI log)."""
    from .report.common import printable

    try:
        click.echo(printable(msg), err=True)
    except OSError:
        pass


def main(argv=None) -> None:
    from_errors = _known_errors()
    try:
        rv = cli.main(args=argv, prog_name="rocrtrace", standalone_mode=False)
    except click.UsageError as e:
        e.show()
        rv = EXIT_USAGE
    except click.ClickException as e:
        e.show()
        rv = e.exit_code if e.exit_code in (EXIT_USAGE, EXIT_INTERNAL) else EXIT_USAGE
    except (click.Abort, KeyboardInterrupt):
        _interrupted()
        rv = EXIT_INTERRUPTED
    except from_errors as e:
        _say(str(e) if str(e).startswith("rocrtrace:") else f"rocrtrace: {e}")
        rv = EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (| head): nothing more to say to anyone.
        sys.stderr.close()
        rv = EXIT_CLEAN
    except Exception as e:  # noqa: BLE001 - the one place a crash becomes exit 3
        rv = _internal_error(e)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as e:
        # the report could not be written (a full disk, /dev/full): the
        # user's to fix, not a bug; nothing is left for exit to flush
        _say(f"rocrtrace: cannot write to standard output: {e.strerror or e}")
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        rv = EXIT_USAGE
    sys.exit(rv if isinstance(rv, int) else EXIT_CLEAN)


def _interrupted() -> None:
    """Ctrl-C: say so and stop at once, with no report.  When the core
    still runs on its worker thread (it cannot be stopped from Python), the
    process ends here without waiting for it."""
    _say("rocrtrace: interrupted")
    if _CORE_RUNNING:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        try:
            sys.stderr.flush()
        except OSError:
            pass
        os._exit(EXIT_INTERRUPTED)


def _known_errors() -> tuple:
    """Input and file errors the user can fix: exit 2, one line."""
    errs: list[type] = []
    try:
        from .paths import InputError

        errs.append(InputError)
    except ImportError:
        pass
    try:
        from .baseline import BaselineError

        errs.append(BaselineError)
    except ImportError:
        pass
    try:
        from .report import MissingDependency

        errs.append(MissingDependency)
    except ImportError:
        pass
    try:
        from .output import OutputError

        errs.append(OutputError)
    except ImportError:
        pass
    return tuple(errs) or (click.BadParameter,)
