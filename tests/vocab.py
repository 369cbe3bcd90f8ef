"""The event vocabulary as the tests build and read it.

Tests build event sequences with these constructors (same names and
keywords as the core's event kinds) and read events only through
attributes and ``kind(ev)``, never through the package's event classes or
isinstance, so the package's event representation can change under them.
"""
from rocrtrace.events import (  # noqa: F401  (re-exported for the tests)
    Clone, Close, CloseRange, Event, Exec, Exit, FdCreate, FdSnapshot, Frame, InputInfo,
    Intent, Ioctl, Mmap, ModuleMap, Munmap, Mremap, ProcessInfo, SetCloexec, Signal,
    Syscall,
)


def kind(ev) -> str:
    """The event's kind: 'FdCreate', 'Close', 'Ioctl', ... ."""
    return type(ev).__name__
