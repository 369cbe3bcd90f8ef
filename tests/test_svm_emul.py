"""The SVM liveness rules on a threaded runtime of our own:
tests/programs/svm_runtime_emul.c keeps registrations under a mutex like the
#6699 libhsakmt and issues its revokes late (after the mutex is dropped, some
after a sleep), in order (under the mutex), or never (silent deregistration),
with application ranges shaped like registrations beside them.  It runs on
the fake KFD under the real capture library with several thread schedules;
its own oracle says which revokes took pages of pins in use.

Properties, on every schedule:
- an error or warning is real: its pages are pages the oracle says a revoke
  took from a pin in use (no false alarm);
- every damage event is reported (at least as a note: without intent calls
  a victim whose thread stays quiet may have begun its release);
- a pin the trace shows still in use after the revoke (its own read-back
  came after) is an error;
- silent deregistration and application ranges give nothing at warning or
  above; the coverage names the runtime's behaviour.

With `intent` the program reaches the runtime through hsa_amd_memory_lock
and hsa_amd_memory_unlock (the emulation built as a shared library, so the
capture library interposes on them as on ROCr's): the same properties hold,
and the forced race is an error (the victim's unlock began after the revoke
landed).  Its runs found two mechanisms no ioctl-only trace shows: a revoke
computed early in a long unlock taking a page of a pin whose own unlock had
begun before the revoke ran (no finding: SPEC 4.3), and a lock whose logged
end fell before its own registration ioctls (clocks read on two cpus of a
VM), which made the lock look empty.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakedev import devns
from fakedev.cbuild import build

PROG = Path(__file__).parent / "programs" / "svm_runtime_emul.c"
PAGE = 4096

pytestmark = pytest.mark.skipif(not devns.available(), reason="needs root and unshare for the fake device namespace")


LAUNCHER = "int emul_main(int, char **);\nint main(int c, char **v) { return emul_main(c, v); }\n"


def _program(intent):
    """The emulation as one executable, or (intent calls) as a shared
    library the program calls through the PLT, so the capture library
    interposes on hsa_amd_memory_lock/unlock as it does on ROCr's."""
    if not intent:
        return build(PROG, "svm_runtime_emul")
    lib = build(PROG, "libsvm_runtime_emul.so", shared=True, flags=["-DEMUL_LIB"])
    return build(LAUNCHER, "svm_runtime_emul_intent", flags=[str(lib), f"-Wl,-rpath,{lib.parent}"])


def _run(tmp_path, mode, seed, *flags):
    exe = _program("intent" in flags)
    res = devns.run(
        ["setarch", "x86_64", "-R", str(exe), mode, str(seed), *flags],
        gpus=(devns.ROCM_GPU,),
        capture=True,
        prefix=tmp_path / "log",
        timeout=180,
    )
    assert res.returncode == 0, res.stderr
    logs = sorted(glob.glob(str(tmp_path / "log.*")))
    assert len(logs) == 1, logs
    p = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", logs[0]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode in (0, 1), p.stderr
    damage = set()
    for line in res.stdout.splitlines():
        if line.startswith("DAMAGE "):
            a, b = (int(x, 16) for x in line.split()[1:3])
            damage.update(range(a // PAGE, b // PAGE))
    return json.loads(p.stdout), damage


def _pages(f):
    s = f["subject"]
    return set(range(int(s["start"], 16) // PAGE, int(s["end"], 16) // PAGE))


def _svm(data, *sev):
    return [
        f
        for f in data["findings"]
        if f["rule"] in ("svm-over-revoke", "svm-coherency-downgrade") and (not sev or f["severity"] in sev)
    ]


SCHEDULES = [1, 2, 3]


@pytest.mark.parametrize("seed", SCHEDULES)
@pytest.mark.parametrize(
    "flags",
    [(), ("poll",), ("app",), ("poll", "app"), ("intent",), ("poll", "app", "intent")],
    ids=["quiet", "poll", "app", "poll-app", "intent", "poll-app-intent"],
)
def test_late_revokes(tmp_path, seed, flags):
    data, damage = _run(tmp_path, "late", seed, *flags)
    assert damage, "the forced race always takes a page of a pin in use"
    for f in _svm(data, "error", "warning"):
        assert _pages(f) <= damage, f  # no false alarm
    reported = set().union(*(_pages(f) for f in _svm(data))) if _svm(data) else set()
    assert damage <= reported  # every damage event is reported
    if "poll" in flags or "intent" in flags:
        # the forced race's victim read its range back after the revoke
        # landed, or (intent calls) its unlock began after it
        assert _svm(data, "error")
    shows = " ".join(data["coverage"]["shows"])
    assert "register = flags only, map = ACCESS_IN_PLACE, revokes with CLR_FLAGS" in shows
    if "app" in flags:
        assert "read as the program's own ranges" in shows


@pytest.mark.parametrize("seed", SCHEDULES)
@pytest.mark.parametrize(
    "flags",
    [("poll", "shared"), ("poll", "shared", "intent"), ("shared", "intent", "wide")],
    ids=["shared", "shared-intent", "shared-intent-wide"],
)
def test_shared_pins_give_no_false_alarm(tmp_path, seed, flags):
    """Two threads may pin the same slot (the runtime's refcount: the first
    pin registers, the last unpin revokes, the others are silent).  A
    release the trace cannot see (a silent refcount drop; a late revoke of
    the same range not landed before another thread pins it again) leaves
    liveness unproven: no error or warning that is not real damage.  Not
    every damage event is reported: without intent calls two registrations
    of one range are one claim (a limit the coverage names).  With them, a
    lock that joined the pointer's claim after another thread's unlock of
    it began (the runtime had dropped the entry) is a new claim, even when
    its own unlock's line comes before the first unlock's (until 2026-12-07
    it was not told apart: 61 of 5,173 damaged pages in a 300-run soak,
    none since)."""
    data, damage = _run(tmp_path, "late", seed, *flags)
    for f in _svm(data, "error", "warning"):
        assert _pages(f) <= damage, f


@pytest.mark.parametrize("seed", SCHEDULES)
@pytest.mark.parametrize(
    "flags",
    [
        ("mixed", "v1", "poll"),
        ("mixed", "v1", "intent"),
        ("mixed", "poll"),
        ("mixed", "v1", "poll", "wide"),
        ("mixed", "v1", "intent", "wide"),
        ("app", "mixed", "v1", "wide"),
    ],
    ids=["v1-poll", "v1-intent", "correct-poll", "v1-poll-wide", "v1-intent-wide", "v1-app-wide"],
)
def test_mixed_pins_give_no_false_alarm(tmp_path, seed, flags):
    """Pins of every shape (pointers inside pages, 32 bytes to 16 pages:
    neighbours sharing pages, pins enclosing pins, pins starting in one
    page) on a runtime computing its revokes as #6699 does (`v1`: keyed by
    the first page, a grown extent, the walk that skips an enclosing
    registration further left, all issued late) or correctly.  The v1
    runtime hurts pins in use by itself, late or not; no error or warning
    may be anything but real damage.  Soaking these modes found false
    errors the 17-page slots never showed, all one reading without intent
    calls: the revoke the model took as a claim's release was another
    claim's (one enclosing it, one of exactly a neighbour's range, a tie,
    a later piece of one deregistration), while the claim's own late
    revoke, computed on a quiet thread before the hurting call, came
    later: its release may have begun before the call (a note).  After
    the fixes, 360 runs of 12 flag sets: no false error or warning, 48% of
    the damaged pages reported as errors or warnings, all but 3.5% at
    least as notes (3 runs; the one examined: pins with identical page
    ranges, one claim, the limit the coverage names), so only precision
    is asserted here.  `wide` (8 threads over 14 slots): 240 runs of 12
    flag sets, no false error or warning; later soaks of 560 runs (with
    intent calls and v1's growing extents, the program's own ranges among
    the pins, `ordered` and `silent` runtimes) neither.  On 2026-12-07
    `v1-poll-wide` gave one under load (a range registered three times
    and by a 1-page range of its first page: v1's one entry, whose holders
    leave silently); such victims are notes now."""
    data, damage = _run(tmp_path, "late", seed, *flags)
    for f in _svm(data, "error", "warning"):
        assert _pages(f) <= damage, f


@pytest.mark.parametrize("seed", SCHEDULES[:2])
@pytest.mark.parametrize("intent", [(), ("intent",)], ids=["ioctls", "intent"])
def test_ordered_revokes_are_clean(tmp_path, seed, intent):
    data, damage = _run(tmp_path, "ordered", seed, "poll", "app", *intent)
    assert not damage
    assert not _svm(data, "error", "warning")


@pytest.mark.parametrize("seed", SCHEDULES[:2])
@pytest.mark.parametrize("intent", [(), ("intent",)], ids=["ioctls", "intent"])
def test_silent_deregistration_gives_notes_only(tmp_path, seed, intent):
    data, damage = _run(tmp_path, "silent", seed, "app", *intent)
    assert not damage  # nothing was ever revoked
    assert not _svm(data, "error", "warning")
    assert "no deregistration revokes" in " ".join(data["coverage"]["shows"])


@pytest.mark.parametrize("seed", SCHEDULES[:2])
@pytest.mark.parametrize("intent", [(), ("intent",)], ids=["ioctls", "intent"])
def test_a_release_after_the_programs_joins_is_proven_late(tmp_path, seed, intent):
    """pin17_race's shape: the forced race's victim is released by main after
    it joined T1 and T2, main having made no call since before the victim was
    pinned.  The capture logs the program's pthread_joins, so the release is
    known to have begun after T1's revoke landed: an error.  The same log
    without its pthread_join lines (a capture from before they were logged)
    cannot show it: the release may have begun while the revoke was held, a
    note; with intent calls the unlock's window shows it either way."""
    data, damage = _run(tmp_path, "late", seed, "joined", *intent)
    (log,) = glob.glob(str(tmp_path / "log.*"))
    lines = Path(log).read_text().splitlines(keepends=True)
    joins = [ln for ln in lines if " pthread_join(" in ln]
    assert len(joins) >= 2 and all(ln.split(" = ")[1].startswith("0 <") for ln in joins[:2]), joins
    # T1's revoke of slot 0, held until T2 had pinned slot 1: the first revoke
    race = next(i for i, ln in enumerate(lines, 1) if "NO_ACCESS" in ln and "AMDKFD_IOC_SVM" in ln)
    assert damage, "the forced race always takes a page of a pin in use"
    for f in _svm(data, "error", "warning"):
        assert _pages(f) <= damage, f  # no false alarm

    def severities(d):
        return {f["severity"] for f in _svm(d) if f["line"] == race}

    assert severities(data) == {"error"}
    stripped = tmp_path / "nojoin"
    stripped.mkdir()
    old = stripped / Path(log).name
    kept, skip = [], False
    for ln in lines:  # each join line with its stack frames
        skip = " pthread_join(" in ln or (skip and ln.startswith(" > "))
        if not skip:
            kept.append(ln)
    old.write_text("".join(kept))
    p = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--format", "json", str(old)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode in (0, 1), p.stderr
    # (with intent calls the unlock's window shows it already)
    assert severities(json.loads(p.stdout)) == ({"error"} if intent else {"note"})
