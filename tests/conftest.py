"""Test-wide settings.

Hypothesis runs derandomized when the ``CI`` environment variable is set
(``.ci/run`` sets it): every CI run tries the same examples, so a red CI
means the change, not the seed.  Outside CI the default profile explores new
examples each run; a failure found that way is kept as an explicit
``@example`` on its test.

The programs the tests run start with SIGINT at its default, whatever the
shell that started pytest did: a non-interactive shell's background job (and
so a CI script's ``cmd &``) inherits SIGINT ignored, and an ignored signal
stays ignored across fork and exec, so a program that raises SIGINT would
not die of it (a handler, unlike SIG_IGN, is reset to the default by exec).
"""

import os
import signal

from hypothesis import HealthCheck, settings

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# too_slow measures how fast examples are generated: on a loaded or slower
# machine it fails a run that would pass (the tests set deadline=None for the
# same reason)
settings.register_profile(
    "ci", derandomize=True, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_sessionstart(session):
    """The model tests feed events through the core's test entry points,
    which only a build with the ``hooks`` feature has (the package build
    leaves them out): say how to get them rather than fail test by test."""
    try:
        from rocrtrace import _engine
    except ImportError:
        return  # the tests that need the core say so themselves
    if not hasattr(_engine, "run_svm_model"):
        import pytest

        pytest.exit(
            "rocrtrace._engine was built without the test entry points: rebuild with "
            "`MATURIN_PEP517_ARGS='--features hooks' pip install -e '.[test]'` or "
            "`maturin develop --features hooks` (bash .ci/run does)",
            returncode=2,
        )
