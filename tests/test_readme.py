"""Every command of the README, run as written, in a copy of the repository
(placeholders — ./my-hip-app, ./app, CMD, ctest — are small real programs
made here).  Each command must be listed below with what it must do, so a new
README command without a check fails this test.

Not run: ``bash .ci/run`` (it is what runs this test).  The CI recipe's wheel
is built from this copy and installed into a fresh virtual environment, and
the action's step (action/run.sh) runs there with that wheel as GitHub would
run it.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()

NOT_RUN = {"bash .ci/run": "the CI script runs this very test"}


APP_C = r"""
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    (void)argv;
    int fd = open("/etc/hostname", O_RDONLY);
    if (fd >= 0)
        close(fd);
    return argc > 5;
}
"""


def sh_commands(text: str) -> list[str]:
    out = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = re.sub(r"\s{2,}#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(re.sub(r"\s+", " ", line))
    return out


def yaml_runs(text: str) -> list[str]:
    out = []
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"^(\s*)(?:- )?run: (.*)$", lines[i])
            if m:
                if m.group(2).strip() == ">":
                    parts = []
                    i += 1
                    while (
                        i < len(lines)
                        and lines[i].startswith(m.group(1) + "  ")
                        and not lines[i].strip().startswith("- ")
                    ):
                        parts.append(lines[i].strip())
                        i += 1
                    out.append(" ".join(parts))
                    continue
                out.append(m.group(2).strip())
            i += 1
    return out


ALL = sh_commands(README) + yaml_runs(README)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A copy of the checkout's tracked files, with the placeholder programs
    and a stand-in ctest on PATH."""
    d = tmp_path_factory.mktemp("readme")
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    )
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (d / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, d / f)
    (d / "app.c").write_text(APP_C)
    for name in ("app", "my-hip-app"):
        subprocess.run(["cc", "-O0", "-g", "-o", str(d / name), str(d / "app.c")], check=True)
    bin_ = d / "_bin"
    bin_.mkdir()
    (bin_ / "ctest").write_text(f"#!/bin/sh\nexec {d / 'app'}\n")
    (bin_ / "ctest").chmod(0o755)
    return d


def sh(repo, cmd, timeout=600, env=None):
    env = {
        **os.environ,
        **(env or {}),
        "PATH": f"{repo / '_bin'}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(["bash", "-c", cmd], cwd=repo, capture_output=True, text=True, env=env, timeout=timeout)


def _shared_target() -> dict[str, str]:
    """The checkout's cargo target directory, when its install built one.

    That install already built every crate from scratch on this machine;
    the copy only has to show that the command works from the tracked files.
    Sharing the compiled dependencies leaves the copy's own crate and its LTO
    link to build, about 70 s less CPU in each CI run."""
    target = os.environ.get("CARGO_TARGET_DIR") or str(ROOT / "target")
    return {"CARGO_TARGET_DIR": target} if (Path(target) / "release").is_dir() else {}


def _find(prefix: str) -> str:
    hits = [c for c in ALL if c.startswith(prefix)]
    assert len(hits) == 1, (prefix, hits)
    return hits[0]


def test_every_readme_command_is_checked_here():
    checked = {c for c in ALL if c in NOT_RUN or any(c.startswith(p) for p in CHECKS)}
    assert set(ALL) == checked, set(ALL) - checked


# --- the checks, one per README command ----------------------------------------


def check_quick_start(repo):
    cmd = _find("python3 -m venv .venv")
    if not (shutil.which("cc") and shutil.which("cargo")):
        pytest.skip("needs cargo and a C compiler to build the core")
    r = sh(repo, cmd, timeout=1500, env=_shared_target())
    if r.returncode != 1 and ("Could not find a version" in r.stderr or "Failed to establish" in r.stderr):
        pytest.skip("no package index reachable")
    assert r.returncode == 1, r.stderr[-2000:]  # the example has findings
    assert "error[svm-over-revoke]" in r.stdout
    # the package build leaves the core's test entry points out (src/py/hooks/)
    probe = sh(
        repo,
        ".venv/bin/python -c 'import rocrtrace._engine as e; "
        'print(hasattr(e, "analyze"), hasattr(e, "run_svm_model"))\'',
    )
    assert probe.stdout.split() == ["True", "False"], probe.stdout + probe.stderr


def check_report_example(repo):
    cmd = _find("rocrtrace analyze fixtures/scenarios/vmm-export-double-close/")
    r = sh(repo, cmd)
    assert r.returncode == 1, r.stderr
    shown = README.split(cmd + "\n```\n\n```\n", 1)[1].split("```", 1)[0]
    # the README shows the report as it is, line for line
    assert r.stdout.startswith(shown), (shown, r.stdout)


def check_perfetto_parquet(repo):
    r = sh(repo, _find("mkdir -p runs && rocrtrace analyze"))
    assert r.returncode == 0, r.stderr
    assert (repo / "c1.pftrace").stat().st_size > 0 and (repo / "runs/c1.parquet").exists()
    assert "error[svm-over-revoke]" in (repo / "c1.html").read_text()
    duckdb = pytest.importorskip("duckdb")
    query = README.split("```sql\n", 1)[1].split("```", 1)[0]
    old = os.getcwd()
    os.chdir(repo)
    try:
        rows = duckdb.sql(query).fetchall()
    finally:
        os.chdir(old)
    assert sorted(r[0] for r in rows) == ["svm-coherency-downgrade", "svm-over-revoke"]


def check_strace_recommended(repo):
    cmd = _find("strace -ff -o trace ")
    r = sh(repo, cmd.replace(" CMD", " ./app"))
    assert r.returncode == 0, r.stderr
    # -ff: one file per thread, trace.TID, read together as one run
    assert glob.glob(str(repo / "trace.*"))
    assert sh(repo, "rocrtrace analyze 'trace.*'").returncode == 0


def check_capture_preload(repo):
    r = sh(repo, _find("rocrtrace capture -- ./my-hip-app"))
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(repo / "rocrtrace.log.*"))


def check_capture_stacks(repo):
    before = set(glob.glob(str(repo / "rocrtrace.log.*")))
    r = sh(repo, _find("rocrtrace capture --stack-depth 8"))
    assert r.returncode == 0, r.stderr
    new = set(glob.glob(str(repo / "rocrtrace.log.*"))) - before
    assert new and any("\n > " in Path(f).read_text() for f in new)


def check_capture_strace(repo):
    before = set(glob.glob(str(repo / "rocrtrace.log.*")))
    r = sh(repo, _find("rocrtrace capture --method strace"))
    assert r.returncode == 0, r.stderr
    # one log per process, PREFIX.PID, like the preload method
    assert set(glob.glob(str(repo / "rocrtrace.log.*"))) - before, r.stderr


def check_analyze_all_processes(repo):
    r = sh(repo, _find("rocrtrace analyze rocrtrace.log.*"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no findings" in r.stdout


def check_capture_prefix_dir(repo):
    r = sh(repo, _find("rocrtrace capture -o traces/suite -- ./app"))
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(repo / "traces/suite.*"))
    shutil.rmtree(repo / "traces")  # the CI recipe starts without traces/


def check_ci_capture(repo):
    r = sh(repo, _find("rocrtrace capture -o traces/suite -- ctest"))
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(repo / "traces/suite.*"))


def check_write_baseline(repo):
    r = sh(repo, _find("rocrtrace analyze 'traces/suite.*' --fail-on never --write-baseline"))
    assert r.returncode == 0, r.stderr
    assert (repo / ".rocrtrace-baseline.json").exists()


def _workspace(repo) -> Path:
    """The CI recipe's workspace: the rocrtrace checkout in ./rocrtrace."""
    ws = repo.parent / "ws"
    ws.mkdir(exist_ok=True)
    if not (ws / "rocrtrace").exists():
        (ws / "rocrtrace").symlink_to(repo)
    return ws


def _index_missing(r) -> bool:
    return r.returncode != 0 and ("Could not find a version" in r.stderr or "Failed to establish" in r.stderr)


def check_build_wheel(repo):
    cmd = _find("pip install maturin && maturin build")
    if not (shutil.which("cc") and shutil.which("cargo")):
        pytest.skip("needs cargo and a C compiler to build the core")
    ws = _workspace(repo)
    env = {**os.environ, **_shared_target(), "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    r = subprocess.run(["bash", "-c", cmd], cwd=ws, capture_output=True, text=True, env=env, timeout=1500)
    if _index_missing(r):
        pytest.skip("no package index reachable")
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(glob.glob(str(ws / "wheels" / "rocrtrace-*.whl"))) == 1


def check_install_wheel(repo):
    """The wheel alone, in a fresh environment: the CLI works, the core has
    no test entry points, and the action's step runs with it as GitHub runs
    it (INPUT_*, $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY)."""
    cmd = _find("pip install wheels/rocrtrace-")
    ws = _workspace(repo)
    if not glob.glob(str(ws / "wheels" / "rocrtrace-*.whl")):
        pytest.skip("the wheel was not built (see check_build_wheel)")
    venv = ws / "ci-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    r = subprocess.run(["bash", "-c", cmd], cwd=ws, capture_output=True, text=True, env=env, timeout=900)
    if _index_missing(r):
        pytest.skip("no package index reachable")
    assert r.returncode == 0, r.stderr[-2000:]
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import rocrtrace._engine as e; print(hasattr(e, 'run_svm_model'))"],
        capture_output=True,
        text=True,
        cwd=ws,
    )
    assert probe.stdout.strip() == "False", probe.stderr
    out, summary = ws / "gh-output", ws / "gh-summary.md"
    trace = repo / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log"
    env.update(
        INPUT_TRACES=str(trace),
        INPUT_WHEEL="wheels/rocrtrace-*.whl",
        GITHUB_OUTPUT=str(out),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_ACTION_PATH=str(ws / "rocrtrace"),
    )
    r = subprocess.run(
        ["bash", str(ws / "rocrtrace" / "action" / "run.sh")],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "exit-code=1" in out.read_text()
    assert "::error file=" in r.stdout and "svm-over-revoke" in summary.read_text()
    assert (ws / "rocrtrace.sarif").exists()


def check_ci_gate(repo):
    r = sh(repo, _find("rocrtrace analyze 'traces/suite.*' --baseline"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (repo / "rocrtrace.sarif").exists() and (repo / "rocrtrace.xml").exists()


CHECKS = {
    "python3 -m venv .venv": check_quick_start,
    "rocrtrace analyze fixtures/scenarios/vmm-export-double-close/": check_report_example,
    "mkdir -p runs && rocrtrace analyze": check_perfetto_parquet,
    "strace -ff -o trace ": check_strace_recommended,
    "rocrtrace capture -- ./my-hip-app": check_capture_preload,
    "rocrtrace capture --stack-depth 8": check_capture_stacks,
    "rocrtrace capture --method strace": check_capture_strace,
    "rocrtrace analyze rocrtrace.log.*": check_analyze_all_processes,
    "rocrtrace capture -o traces/suite -- ./app": check_capture_prefix_dir,
    "pip install maturin && maturin build": check_build_wheel,
    "pip install wheels/rocrtrace-": check_install_wheel,
    "rocrtrace capture -o traces/suite -- ctest": check_ci_capture,
    "rocrtrace analyze 'traces/suite.*' --fail-on never --write-baseline": check_write_baseline,
    "rocrtrace analyze 'traces/suite.*' --baseline": check_ci_gate,
}
# In README order where one command needs another's files (the CI steps).
ORDER = list(CHECKS)


@pytest.mark.parametrize("prefix", ORDER)
def test_readme_command(prefix, repo):
    if "capture" in prefix or "strace" in prefix:
        if not (shutil.which("strace") and shutil.which("cc")):
            pytest.skip("needs strace and cc")
    CHECKS[prefix](repo)
