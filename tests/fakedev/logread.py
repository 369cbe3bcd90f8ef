"""A small, independent reader of preload logs for the capture tests.

Deliberately separate from the core's parser (src/parse/): the round trip
must show the writer prints what the program passed, judged by a reader that
shares no code with it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

EVENT = re.compile(
    r"^(?P<tid>\d+) {1,5}(?P<sec>\d+)\.(?P<usec>\d{6}) (?P<name>\w+)\((?P<args>.*)\) = "
    r"(?P<res>-1 (?P<err>E[A-Z0-9]+) \([^)]*\)|\S+(?: \S+)*?) <(?P<dur>\d+\.\d{6})>$"
)
FRAME = re.compile(r"^ > (?P<obj>.*?)\((?P<sym>.*)\) \[0x(?P<off>[0-9a-f]+)\]$")


@dataclass
class Event:
    line: int
    tid: int
    time: float
    name: str
    args: str
    result: str
    errno: str | None
    dur: float
    frames: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Log:
    path: Path
    lines: list[str]
    header: dict[str, str]
    maps: list[dict]
    snapshots: dict[str, dict[int, str]]
    meta: list[str]
    events: list[Event]
    bad: list[str]


def read(path: str | Path) -> Log:
    text = Path(path).read_text(errors="replace")
    assert text == "" or text.endswith("\n"), "log does not end in a newline"
    lines = text.splitlines()
    header: dict[str, str] = {}
    maps, meta, events, bad = [], [], [], []
    snaps: dict[str, dict[int, str]] = {}
    cur = "start"
    pieces: dict[str, tuple[int, int, str]] = {}  # tid -> (first line, last piece, text)
    for i, ln in enumerate(lines, 1):
        if ln.startswith("#+ "):
            # a record over 4 KiB: `#+ TID K+ TEXT` pieces, `#+ TID K TEXT` the last
            m = re.match(r"#\+ (\d+) (\d+)(\+?) (.*)$", ln)
            if not m:
                bad.append(ln)
                continue
            first, k, text = pieces.pop(m[1], (i, 0, ""))
            if int(m[2]) != k + 1:
                bad.append(ln)
                continue
            if m[3]:
                pieces[m[1]] = (first, k + 1, text + m[4])
                continue
            ln, i = text + m[4], first
        if ln.startswith("# "):
            meta.append(ln)
            body = ln[2:]
            if body.startswith("pid="):
                header = dict(kv.split("=", 1) for kv in body.split(" "))
            elif body.startswith("map "):
                m = re.match(
                    r"map ([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]{8,}) (.*?)"
                    r"(?: build-id=([0-9a-f]+))?$",
                    body,
                )
                assert m, ln
                maps.append(
                    dict(lo=int(m[1], 16), hi=int(m[2], 16), perms=m[3], off=int(m[4], 16), path=m[5], build_id=m[6])
                )
            elif body.startswith("fd-snapshot "):
                cur = body.split()[1]
                snaps[cur] = {}
            elif body.startswith("fd "):
                _, n, p = body.split(" ", 2)
                snaps.setdefault(cur, {})[int(n)] = p
        elif ln.startswith(" > "):
            m = FRAME.match(ln)
            assert m and events, ln
            events[-1].frames.append((m["obj"], int(m["off"], 16)))
        else:
            m = EVENT.match(ln)
            if not m:
                bad.append(ln)
                continue
            events.append(
                Event(
                    i,
                    int(m["tid"]),
                    int(m["sec"]) + int(m["usec"]) / 1e6,
                    m["name"],
                    m["args"],
                    m["res"],
                    m["err"],
                    float(m["dur"]),
                )
            )
    return Log(Path(path), lines, header, maps, snaps, meta, events, bad)


# --- struct notation: {a=1, b=[{c=2}], d=X|Y} -------------------------------


def _split(s: str) -> list[str]:
    out, depth, cur, i = [], 0, [], 0
    while i < len(s):
        c = s[i]
        if s.startswith("=>", i):
            cur.append("=>")
            i += 2
            continue
        if c in "{[(<":
            depth += 1
        elif c in "}])>":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def value(s: str):
    s = s.strip()
    if s.startswith("{"):
        assert s.endswith("}"), s
        return dict((k.strip(), value(v)) for k, v in (p.split("=", 1) for p in _split(s[1:-1])))
    if s.startswith("["):
        assert s.endswith("]"), s
        return [value(p) for p in _split(s[1:-1])]
    return s


def split_args(args: str) -> list[str]:
    """Top-level arguments; the `=>` part stays attached to its struct."""
    return _split(args)


def num(s: str, names: dict[str, int] | None = None) -> int:
    """0x.., decimal, or A|B names (resolved with `names`); fd decorations dropped."""
    s = s.strip()
    s = re.sub(r"<.*>(\(deleted\))?$", "", s)
    total = 0
    for part in s.split("|"):
        if part.startswith("0x"):
            total |= int(part, 16)
        elif part.lstrip("-").isdigit():
            total |= int(part)
        else:
            assert names and part in names, f"unknown name {part!r}"
            total |= names[part]
    return total


def ioctl_struct(args: str) -> tuple[str, dict, dict | None]:
    """(request name, input struct, output struct or None) of an ioctl line."""
    parts = split_args(args)
    req, rest = parts[1], ", ".join(parts[2:])
    if " => " in rest:
        a, b = rest.split(" => ", 1)
        return req, value(a), value(b)
    return req, value(rest), None
