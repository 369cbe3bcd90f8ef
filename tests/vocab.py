"""The event vocabulary as the tests build and read it.

Tests build event sequences with these constructors (the core's event kinds'
names; the keywords and defaults of rocrtrace.events.KINDS) and read events
only through attributes and ``kind(ev)``, so the package's event
representation can change under them.
"""

from rocrtrace.events import KINDS, Event, Frame, InputInfo, make  # noqa: F401


def _constructor(name: str):
    def build(**fields) -> Event:
        return make(name, **fields)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"A {name} event (fields and defaults: rocrtrace.events.KINDS[{name!r}])."
    return build


FdCreate = _constructor("FdCreate")
Close = _constructor("Close")
CloseRange = _constructor("CloseRange")
SetCloexec = _constructor("SetCloexec")
Syscall = _constructor("Syscall")
Ioctl = _constructor("Ioctl")
Mmap = _constructor("Mmap")
Munmap = _constructor("Munmap")
Mremap = _constructor("Mremap")
Clone = _constructor("Clone")
Exec = _constructor("Exec")
Exit = _constructor("Exit")
Signal = _constructor("Signal")
ProcessInfo = _constructor("ProcessInfo")
FdSnapshot = _constructor("FdSnapshot")
ModuleMap = _constructor("ModuleMap")
Intent = _constructor("Intent")

assert all(n in globals() for n in KINDS), "a kind without its constructor"


def kind(ev) -> str:
    """The event's kind: 'FdCreate', 'Close', 'Ioctl', ... ."""
    return ev.event
