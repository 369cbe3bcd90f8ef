#!/usr/bin/env python3
"""Read every log strace's own test suite wrote and count what rocrtrace
could not parse (issue 33: < 0.01% of the lines, no log rejected).

    python benchmarks/strace_suite.py BUILD_DIR [--json OUT] [--lines OUT]

BUILD_DIR is a strace build tree after `make check`.  The logs are the
files strace wrote with -o: the copies benchmarks/strace_suite_wrap.py kept
of every run (`tests*/strace-logs/<test>/<run>/`), else the files the last
run of each test left (`tests*/<test>.dir/log` and its -ff `log.PID`
siblings; init.sh's run_strace writes `$LOG`, "log").  Of one run's copies
only the -o file and its `NAME.PID` siblings are read (not a `NAME.err` of
strace's stderr beside them).  Empty files are counted and left out (there is
nothing to read), and so is strace's --version text that strace-V.test
redirects over `$LOG` (no trace).

Each log is its own input of `rocrtrace analyze --format json --fail-on
never`, several per invocation (the -ff files of one strace run together).
An invocation that exits 2 is run again one log group at a time to name the
rejected logs; an exit 3 or a traceback is a crash.  Printed: logs, lines,
`trace-unparsed` lines (per file and in total, and the share), rejected
logs, crashes, and the unparsed lines grouped by shape.

A run, from a strace source tree (`apt-get source strace`):

    ./configure && make -j2 && make -C tests -j2 check TESTS=   # build only
    STRACE=$PWD/strace_suite_wrap.py STRACE_REAL=/usr/bin/strace \
        STRACE_SUITE_ARCHIVE=$TREE/tests/strace-logs TIMEOUT_DURATION=300 \
        nice make -C tests -j2 -k check
    python benchmarks/strace_suite.py $TREE

STRACE_REAL may be another strace than the tree's own: the strace of one
release run over the tests of another (the tests still fail where the two
print differently; the logs are what counts here)."""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

LOG_NAME = re.compile(r"log(\.\d+)?$")


def find_logs(build: str) -> list[list[str]]:
    """Groups of logs (one strace run each), in a stable order."""
    groups: list[list[str]] = []
    for tdir in sorted(os.listdir(build)):
        tpath = os.path.join(build, tdir)
        if not (tdir.startswith("tests") and os.path.isdir(tpath)):
            continue
        archive = os.path.join(tpath, "strace-logs")
        if os.path.isdir(archive):
            for root, dirs, files in os.walk(archive):
                dirs.sort()
                if files:
                    groups.append(sorted(os.path.join(root, f) for f in ff_group(files)))
            continue
        for d in sorted(os.listdir(tpath)):
            dpath = os.path.join(tpath, d)
            if d.endswith(".dir") and os.path.isdir(dpath):
                files = sorted(
                    os.path.join(dpath, f)
                    for f in os.listdir(dpath)
                    if LOG_NAME.match(f) and os.path.isfile(os.path.join(dpath, f))
                )
                if files:
                    groups.append(files)
    return groups


def ff_group(files: list[str]) -> list[str]:
    """Of one run's files, the -o file (the shortest name) and its -ff
    siblings `NAME.PID`; with -ff alone, every `NAME.PID`."""
    base = min(files, key=len)
    if re.fullmatch(r".+\.\d+", base) and all(re.fullmatch(r".+\.\d+", f) for f in files):
        return files
    return [f for f in files if f == base or (f.startswith(base + ".") and f[len(base) + 1 :].isdigit())]


def not_a_trace(path: str) -> str | None:
    """Why a collected file is no strace -o output, or None: `run_strace
    --version > "$LOG"` (strace-V.test) leaves strace's version text where
    strace was told to write its trace."""
    with open(path, "rb") as f:
        head = f.read(64)
    if head.startswith(b"strace -- version "):
        return "strace --version text the test redirected over $LOG"
    return None


def rocrtrace_cmd(given: str | None) -> list[str]:
    if given:
        return given.split()
    here = os.path.join(os.path.dirname(sys.executable), "rocrtrace")
    return [here if os.path.exists(here) else (shutil.which("rocrtrace") or "rocrtrace")]


def run(cmd: list[str], files: list[str]) -> tuple[int, dict | None, str]:
    p = subprocess.run(
        [*cmd, "analyze", "--format", "json", "--fail-on", "never", "--jobs", "1", *files],
        capture_output=True,
        text=True,
        errors="replace",
    )
    doc = None
    if p.returncode in (0, 1):
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
    return p.returncode, doc, p.stderr


def shape(text: str) -> str:
    """A line's shape: the call (or first word) and, for ioctl, its request."""
    body = re.sub(r"^(\[pid\s+\d+\]\s+|\d+\s+)?([\d:.]+\s+)?", "", text)
    m = re.match(r"(<\.\.\. )?([A-Za-z_][\w#:]*|\?\?\?)( resumed>)?\(?", body)
    if not m:
        return body[:30]
    name = m.group(2)
    if name == "ioctl":
        r = re.match(r"ioctl\([^,]*, ([^,]+?)(,|\))", body)
        if r:
            return "ioctl " + re.sub(r"0x[0-9a-f]+", "0x…", r.group(1))[:50]
    return ("resumed " if m.group(1) else "") + name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="strace build tree after make check")
    ap.add_argument("--rocrtrace", help="the command to run (default: the one beside python)")
    ap.add_argument("--batch", type=int, default=60, help="logs per invocation")
    ap.add_argument("--json", help="write per-file results here")
    ap.add_argument("--lines", help="write every unparsed sample line here (file:line: text)")
    a = ap.parse_args()
    cmd = rocrtrace_cmd(a.rocrtrace)
    groups = find_logs(a.build)
    empty = [f for g in groups for f in g if os.path.getsize(f) == 0]
    others = {f: why for g in groups for f in g if os.path.getsize(f) > 0 and (why := not_a_trace(f))}
    groups = [[f for f in g if os.path.getsize(f) > 0 and f not in others] for g in groups]
    groups = [g for g in groups if g]
    per_file: dict[str, dict] = {}
    rejected: dict[str, str] = {}
    crashed: dict[str, str] = {}

    def take(doc: dict) -> None:
        samples = collections.defaultdict(list)
        for f in doc["findings"]:
            if f["rule"] == "trace-unparsed" and "samples" in f.get("details", {}):
                samples[f["file"]] += [s["line"] for s in f["details"]["samples"]]
        for i in doc["inputs"]:
            per_file[i["file"]] = {
                "lines": i["lines"],
                "events": i["events"],
                "unparsed": i["unparsed"],
                "sample_lines": samples.get(i["file"], []),
            }

    batch: list[list[str]] = []

    def settle(files: list[str], rc: int, doc: dict | None, err: str) -> None:
        if doc is not None:
            take(doc)
        elif rc == 2:
            why = err.strip().splitlines()[-1] if err.strip() else "exit 2"
            rejected.update(dict.fromkeys(files, why))
        else:
            crashed.update(dict.fromkeys(files, f"exit {rc}: {err.strip()[-300:]}"))
        if "Traceback" in err:
            for f in files:
                crashed.setdefault(f, "traceback: " + err.strip()[-300:])

    def flush() -> None:
        files = [f for g in batch for f in g]
        if not files:
            return
        rc, doc, err = run(cmd, files)
        if doc is None and rc == 2 and len(batch) > 1:
            # one log took the invocation down: each group alone names it
            for g in batch:
                settle(g, *run(cmd, g))
        else:
            settle(files, rc, doc, err)
        batch.clear()

    n = 0
    for g in groups:
        batch.append(g)
        n += len(g)
        if n >= a.batch:
            flush()
            n = 0
    flush()

    lines = sum(r["lines"] for r in per_file.values())
    unparsed = sum(r["unparsed"] for r in per_file.values())
    shapes: collections.Counter = collections.Counter()
    examples: dict[str, str] = {}
    out_lines = []
    for f, r in sorted(per_file.items()):
        if not r["sample_lines"]:
            continue
        want = set(r["sample_lines"])
        with open(f, encoding="utf-8", errors="replace") as fh:
            for ln, text in enumerate(fh, 1):
                if ln in want:
                    text = text.rstrip("\n")
                    s = shape(text)
                    shapes[s] += 1
                    examples.setdefault(s, f"{f}:{ln}: {text}")
                    out_lines.append(f"{f}:{ln}: {text}")
    share = 100.0 * unparsed / lines if lines else 0.0
    print(
        f"logs: {len(per_file)} read, {len(rejected)} rejected, {len(crashed)} crashed, "
        f"{len(empty)} empty (left out), {len(others)} no trace (left out)"
    )
    print(f"lines: {lines}, unparsed: {unparsed} ({share:.4f}%)")
    print(f"logs with unparsed lines: {sum(1 for r in per_file.values() if r['unparsed'])}")
    for f, why in sorted(others.items()):
        print(f"no trace: {f}: {why}")
    for f, why in sorted(rejected.items()):
        print(f"rejected: {f}: {why}")
    for f, why in sorted(crashed.items()):
        print(f"crashed: {f}: {why}")
    if shapes:
        print("unparsed shapes (of the sample lines each input reports):")
        for s, k in shapes.most_common():
            print(f"  {k:6d}  {s}\n          {examples[s][:400]}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(
                {
                    "logs": len(per_file),
                    "lines": lines,
                    "unparsed": unparsed,
                    "rejected": rejected,
                    "crashed": crashed,
                    "empty": empty,
                    "no_trace": others,
                    "files": per_file,
                },
                fh,
                indent=1,
                sort_keys=True,
            )
    if a.lines:
        with open(a.lines, "w") as fh:
            fh.write("".join(x + "\n" for x in out_lines))
    return 1 if rejected or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
