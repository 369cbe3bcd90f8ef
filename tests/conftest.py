"""Test-wide settings.

Hypothesis runs derandomized when the ``CI`` environment variable is set
(``.ci/run`` sets it): every CI run tries the same examples, so a red CI
means the change, not the seed.  Outside CI the default profile explores new
examples each run; a failure found that way is kept as an explicit
``@example`` on its test.
"""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
