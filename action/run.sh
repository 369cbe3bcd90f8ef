#!/usr/bin/env bash
# The step behind action.yml: install rocrtrace if asked, run `rocrtrace
# analyze` with GitHub annotations (--format github, which also writes the
# findings table to $GITHUB_STEP_SUMMARY) and SARIF, and hand its exit code to
# the action as the `exit-code` output.  In an action it exits 0 itself once
# analyze ran, so the SARIF upload step still runs and the action's last step
# fails the job; run by hand (no $GITHUB_OUTPUT) it exits with that code.
#
# Inputs come as INPUT_* variables (action.yml sets them): TRACES (required),
# BASELINE, FAIL_ON (error), WHEEL, SARIF (rocrtrace.sarif), ARGS.
set -uo pipefail

die() { echo "::error title=rocrtrace action::$*" >&2; exit 2; }

traces="${INPUT_TRACES:-}"
[ -n "$traces" ] || die "the 'traces' input is required"
sarif="${INPUT_SARIF:-rocrtrace.sarif}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ -n "${INPUT_WHEEL:-}" ]; then
    # a glob: the newest match (a cache may hold several versions)
    wheel="$(ls -t ${INPUT_WHEEL} 2>/dev/null | head -n 1)"
    [ -n "$wheel" ] || die "no wheel matches '${INPUT_WHEEL}'"
    python3 -m pip install -q --disable-pip-version-check "$wheel" || die "cannot install $wheel"
elif ! command -v rocrtrace >/dev/null; then
    python3 -m pip install -q --disable-pip-version-check "$here" \
        || die "cannot build rocrtrace from $here (it needs cargo); give the 'wheel' input"
fi
command -v rocrtrace >/dev/null || die "rocrtrace is not on PATH after the install"

mkdir -p "$(dirname "$sarif")" || die "cannot create the directory of $sarif"
args=(analyze "$traces" --format github --format "sarif:$sarif" --fail-on "${INPUT_FAIL_ON:-error}")
[ -n "${INPUT_BASELINE:-}" ] && args+=(--baseline "$INPUT_BASELINE")
# shellcheck disable=SC2206  # word-split on purpose: several options
[ -n "${INPUT_ARGS:-}" ] && args+=(${INPUT_ARGS})

rocrtrace "${args[@]}"
code=$?
echo "rocrtrace analyze exited $code"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "exit-code=$code" >> "$GITHUB_OUTPUT"
    exit 0
fi
exit "$code"        # outside an action (a local run): the code itself
