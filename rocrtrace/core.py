"""Loading the compiled core, rocrtrace._engine: engine.py drives it, and
rules.py reads the rule catalogue from it.  Apart from the engine so that the
catalogue loads without the modules the engine's results need."""

from __future__ import annotations

import os

from .paths import InputError


# The core's allocator (mimalloc) reads these once, as the core loads: freed
# memory goes back at once and arenas are committed as they are used.  With
# its defaults, events built on --jobs threads and freed on the main thread
# held ~25 MB more at peak (75 MB against 31 MB on a 2M-line strace log), at
# the same speed.  Set only while the core loads, so the traced programs of
# `capture` never see them; a user's own MIMALLOC_* settings win.
_ALLOCATOR = {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ARENA_EAGER_COMMIT": "0"}


def core():
    """rocrtrace._engine, or an InputError that says how to get it."""
    added = [k for k in _ALLOCATOR if k not in os.environ]
    for k in added:
        os.environ[k] = _ALLOCATOR[k]
    try:
        from . import _engine
    except ImportError as e:
        raise InputError(
            f"rocrtrace: the compiled core rocrtrace._engine does not load ({e}): reinstall with 'pip install .'"
        ) from None
    finally:
        for k in added:
            del os.environ[k]
    return _engine
