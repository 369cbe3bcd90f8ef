"""--format html (issue 35): one self-contained triage page, loaded in
a real browser.  Headless Chromium (Debian's ``chromium``; .ci/run installs
it) opens the page from disk, runs its script, and the test reads the DOM
it dumps: every finding with its headline, its evidence whole and its
timeline; the coverage section and the inputs.  A screenshot is taken too.

Outside CI the browser tests skip when chromium is missing; in CI they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SC = ROOT / "fixtures/scenarios"
C1 = SC / "c1-enclosing-range/v1-buggy-explicit.log"
VMM = SC / "vmm-export-double-close/v2-6471-buggy-explicit.log"
RACE = SC / "pin-race-17page/first-commit-buggy-explicit.log"
# what proves C1's finding: the last attribute and the result of line 20
TAIL = "value=KFD_IOCTL_SVM_FLAG_EXT_COHERENT}]}) = 0 <0.000010>"


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs Debian's chromium")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return exe


def browse(exe: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium on a file: URL; no sandbox (root in CI), its own
    profile, no network (every host resolves to nothing)."""
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp / 'profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        timeout=180,
    )


# --- a small DOM of what Chromium dumped ---------------------------------------------

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children: list = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag=None, cls=None, **attrs):
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if (
                    (tag is None or c.tag == tag)
                    and (cls is None or cls in (c.attrs.get("class") or "").split())
                    and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
                ):
                    out.append(c)
                out += c.all(tag, cls, **attrs)
        return out

    def one(self, *a, **k):
        got = self.all(*a, **k)
        assert len(got) == 1, (a, k, len(got))
        return got[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in _VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def dom(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    b.close()
    return b.root


# --- the page in a browser ------------------------------------------------------------


@pytest.fixture(scope="module")
def page(tmp_path_factory, chromium):
    tmp = tmp_path_factory.mktemp("html")
    out, js = tmp / "triage.html", tmp / "report.json"
    r = run("analyze", C1, VMM, RACE, "--format", f"html:{out}", "--format", f"json:{js}")
    assert r.returncode == 1, r.stderr
    dumped = browse(chromium, out, tmp, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    shot = tmp / "triage.png"
    s = browse(chromium, out, tmp, f"--screenshot={shot}", "--window-size=1280,2400")
    assert s.returncode == 0, s.stderr[-2000:]
    return {
        "dom": dom(dumped.stdout.decode()),
        "doc": json.loads(js.read_text()),
        "html": out.read_text(),
        "shot": shot,
    }


def _section(d: Node, fingerprint: str) -> Node:
    return d.one("section", cls="finding", data_fingerprint=fingerprint)


def test_every_finding_is_on_the_page_with_its_headline(page):
    d, doc = page["dom"], page["doc"]
    sections = d.all("section", cls="finding")
    assert len(sections) == len(doc["findings"]) == 6  # C1 2, VMM 3 (handover, dup, close), race 1
    for f in doc["findings"]:
        s = _section(d, f["fingerprint"])
        head = " ".join(s.one("h2", cls="headline").text().split())
        assert f"{f['severity']}[{f['rule']}]" in head
        assert s.attrs["data-severity"] == f["severity"]
        assert s.one("p", cls="fp").text() == f"fingerprint {f['fingerprint']}"
    # the script ran in the browser: it counted the findings it shows
    assert d.one("span", id="shown").text() == "6"
    assert d.one("span", id="verdict").text() == "failed"


def test_evidence_is_shown_whole(page):
    d, doc = page["dom"], page["doc"]
    for f in doc["findings"]:
        s = _section(d, f["fingerprint"])
        shown = [p.text() for p in s.all("pre", cls="call")]
        for e in f["evidence"]:
            # the page shows the call without strace's pid and time columns
            # (they have their own column), never cut: the trace line ends it
            assert any(e["call"].endswith(c) and len(c) > len(e["call"]) - 40 for c in shown), (f["rule"], e["call"])
    c1 = [f for f in doc["findings"] if f["file"].endswith("v1-buggy-explicit.log")]
    assert c1 and all(
        any(p.text().endswith(TAIL) for p in _section(d, f["fingerprint"]).all("pre", cls="call")) for f in c1
    )


def test_each_finding_has_a_timeline_of_its_threads(page):
    d, doc = page["dom"], page["doc"]
    for f in doc["findings"]:
        s = _section(d, f["fingerprint"])
        svg = s.one("svg")
        tids = {e["tid"] for e in f["evidence"]} | {f["tid"]}
        lanes = [t.text() for t in svg.all("text", cls="thread")]
        assert sorted(lanes) == sorted(f"tid {t}" for t in tids), lanes
        # one window per event of the story, numbered as the evidence table
        events = svg.all("g", cls="ev")
        rows = s.all("tr", cls="ev")
        assert len(events) == len(rows) >= len({(e["file"], e["line"]) for e in f["evidence"]})
        assert svg.all("line", cls="offending")
        # the subject's life above the threads
        assert svg.all("text", cls="subject")
    race = [f for f in doc["findings"] if f["file"].endswith("first-commit-buggy-explicit.log")]
    assert race and len(_section(d, race[0]["fingerprint"]).one("svg").all("text", cls="thread")) == 2


def test_coverage_and_inputs(page):
    d, doc = page["dom"], page["doc"]
    cov = d.one("section", id="coverage").text()
    for item in doc["coverage"]["cannot_show"] + doc["coverage"]["shows"]:
        assert item in cov
    rows = d.one("section", id="inputs").all("tr")[1:]
    assert [r.all("td")[0].text() for r in rows] == [i["file"] for i in doc["inputs"]]
    assert [int(r.all("td")[3].text()) for r in rows] == [i["events"] for i in doc["inputs"]]


def test_the_screenshot_is_a_picture(page):
    data = page["shot"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_the_page_fetches_nothing():
    """No reference leaves the page (the browser is offline too): no src,
    no link, no url(), no import; a CSP forbids every fetch."""
    from rocrtrace.engine import analyze
    from rocrtrace.report import render

    html = render(analyze([str(C1), str(VMM)]), "html")
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\';' in html
    assert not re.search(r"\b(?:src|href|action|srcset)\s*=\s*(?![\"']?#)", html)
    assert not re.search(r"url\(|@import|<link\b|<iframe|<object|<embed", html)
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\")", html)


# --- untrusted trace text -------------------------------------------------------------

EVIL_PATH = "/tmp/<script>document.title='pwned'</script>\u202egpj.exe\x1b[31m<img src=x>"


def test_trace_text_is_text_in_the_browser(tmp_path, chromium):
    log = tmp_path / "evil.log"
    log.write_text(
        f'100 openat(AT_FDCWD, "{EVIL_PATH}", O_RDONLY) = 5\n'
        "100 close(5) = 0\n"
        "100 close(5) = -1 EBADF (Bad file descriptor)\n"
        "100 exit_group(0) = ?\n",
        encoding="utf-8",
    )
    out = tmp_path / "evil.html"
    r = run("analyze", log, "--format", f"html:{out}")
    assert r.returncode == 1, r.stderr
    raw = out.read_text()
    assert "\u202e" not in raw and "\x1b" not in raw and "<img" not in raw
    d = browse(chromium, out, tmp_path, "--dump-dom")
    assert d.returncode == 0
    text = d.stdout.decode()
    tree = dom(text)
    # the page's own script is the only one, and it did not run the trace's
    assert len(tree.all("script")) == 1 and not tree.all("img")
    assert tree.one("head").one("title").text().startswith("rocrtrace:")
    s = tree.one("section", cls="finding", data_severity="error")
    calls = "\n".join(p.text() for p in s.all("pre", cls="call"))
    # shown as text: the markup, the bidi override as its escape (the reader
    # strips the terminal colour sequence before the report sees it)
    assert "<script>document.title='pwned'</script>\\u202egpj.exe" in calls
    assert "<img src=x>" in calls and "\x1b" not in text
