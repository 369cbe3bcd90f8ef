"""tinygrad's ``IOCTL=1`` log (extra/hip_gpu_driver/hip_ioctl.py) → events.

tinygrad patches libc's ``ioctl`` inside its own Python process and prints,
after each call returns::

    <ms since start> ms +<duration ms> ms : <ret> = <AMDKFD_IOC_NAME padded> field:0xVAL …
    <i>: <KFD_IOCTL_SVM_ATTR_NAME padded>: 0x<value>        (AMDKFD_IOC_SVM only)
    [<ms> ms +<ms> ms : ]ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd

The first shape is for KFD requests it knows (decoded from the struct, every
field in hex, post-call), the last for every other ioctl.  The log shows
neither pids nor fds of the named requests, and no other syscall: no opens,
closes or mmaps (the coverage section says so).  Everything else in such a
log (the program's own ``print`` output) is counted as unparsed.
"""
from __future__ import annotations

import re

from .. import kfd
from .pyevents import Event, InputInfo, Ioctl

_NAMED = re.compile(r"\s*(-?\d+(?:\.\d+)?) ms \+\s*(-?\d+(?:\.\d+)?) ms : "
                    r"\s*(-?\d{1,20}) = (AMDKFD_IOC_\w+)[ \t]*(.*?)\s*\Z")
_TIMED_GENERIC = re.compile(r"\s*(-?\d+(?:\.\d+)?) ms \+\s*(-?\d+(?:\.\d+)?) ms : (ioctl .*)\Z")
_GENERIC = re.compile(r"ioctl idir=(\d{1,20}) size=(\d{1,20}) itype=(\d{1,20}) nr=(\d{1,20}) "
                      r"fd=(-?\d{1,20}) ret=(-?\d{1,20})(?: (.*?))?\s*\Z")
_ATTR = re.compile(r"(\d{1,20}): (KFD_IOCTL_SVM_ATTR_\w+|\d{1,20})\s*: "
                   r"(0x[0-9a-fA-F]{1,64}|\d{1,20})\s*\Z")
# field:VALUE, the value a hex number or ctypes' repr of an array/struct
_FIELD = re.compile(r"(\w+):(<[^<>]*>|\S+)")
_HEX = re.compile(r"0x[0-9a-fA-F]{1,64}\Z")
TEXT_MAX = 300
MAX_ATTRS = 64      # never trust nattr: it is data

_ATTR_BY_NAME = {v: k for k, v in kfd.ATTR_NAMES.items()}

# Fields the kernel writes, per request (the rest are the caller's inputs):
# tinygrad prints after the call, so they sit side by side on one line.
_OUTPUTS = {
    "AMDKFD_IOC_GET_VERSION": ("major_version", "minor_version"),
    "AMDKFD_IOC_CREATE_QUEUE": ("queue_id", "doorbell_offset"),
    "AMDKFD_IOC_CREATE_EVENT": ("event_page_offset", "event_trigger_data", "event_id",
                                "event_slot_index"),
    "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU": ("handle", "mmap_offset"),
    "AMDKFD_IOC_MAP_MEMORY_TO_GPU": ("n_success",),
    "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU": ("n_success",),
    "AMDKFD_IOC_IMPORT_DMABUF": ("handle",),
    "AMDKFD_IOC_EXPORT_DMABUF": ("dmabuf_fd",),
    "AMDKFD_IOC_GET_DMABUF_INFO": ("size", "gpu_id", "metadata_size", "flags"),
}


def _ms(text: str) -> float:
    return float(text) / 1000.0


class Parser:
    """Parse one tinygrad IOCTL=1 log; the same interface as the strace
    Parser (feed / finish)."""

    def __init__(self, file: str, info: InputInfo | None = None, **_ignored):
        self.file = file
        self.info = info or InputInfo(file=file, format="tinygrad")
        self.svm: Ioctl | None = None      # an SVM line waiting for its attrs
        self.want = 0
        self.out: list[Event] = []

    def feed(self, lineno: int, line: str) -> list[Event]:
        info = self.info
        info.lines += 1
        if not line.strip():
            return self._drain()
        if self.svm is not None:
            am = _ATTR.match(line)
            if am is not None and self._attr(am):
                return self._drain()
            self._flush_svm()
        m = _NAMED.match(line)
        if m is not None:
            self._named(lineno, line, m)
            return self._drain()
        t = dur = None
        tm = _TIMED_GENERIC.match(line)
        body = line
        if tm is not None:
            t, dur, body = _ms(tm.group(1)), _ms(tm.group(2)), tm.group(3)
        gm = _GENERIC.match(body.strip())
        if gm is not None:
            self._generic(lineno, line, gm, t, dur)
            return self._drain()
        info.add_unparsed(lineno, line)
        return self._drain()

    def finish(self) -> list[Event]:
        self._flush_svm()
        return self._drain()

    def _drain(self) -> list[Event]:
        out = self.out
        if not out:
            return []
        self.out = []
        self.info.events += len(out)
        return out

    # --- the two line shapes --------------------------------------------------

    def _base(self, lineno: int, line: str, t, dur, ret: int) -> dict:
        info = self.info
        if t is not None:
            info.has_time = True
        if dur is not None:
            info.has_durations = True
        return dict(file=self.file, line=lineno, pid=None, tid=None, time=t, dur=dur,
                    ret=ret, err="EUNKNOWN" if ret < 0 else None,
                    text=line if len(line) <= TEXT_MAX else line[:TEXT_MAX])

    def _named(self, lineno: int, line: str, m) -> None:
        name = m.group(4)
        fields: dict = {}
        raw: dict = {}
        bad = False
        for fm in _FIELD.finditer(m.group(5)):
            k, v = fm.group(1), fm.group(2)
            if _HEX.match(v):
                fields[k] = int(v, 16)
            elif v.startswith("<"):
                raw[k] = v       # ctypes' repr of an array: not data
            else:
                bad = True       # not what tinygrad prints: dropped, and said
        if bad:
            self.info.add_unparsed(lineno, line)
        # one rule for every value a model reads: ints, or absent
        ent = kfd.REQUEST_BY_NAME.get(name)
        d = t = nr = size = request = None
        if ent is not None:
            d, t, nr, size = ent
        else:
            t = kfd.TYPE_KFD
        outs = _OUTPUTS.get(name, ())
        arg = {k: v for k, v in fields.items() if k not in outs}
        out = {k: v for k, v in fields.items() if k in outs} or None
        base = self._base(lineno, line, _ms(m.group(1)), _ms(m.group(2)), int(m.group(3)))
        if (t, nr) == kfd.SVM:
            # AMDKFD_IOC_SVM carries 24 + 8*nattr: the size is data
            nattr = arg.get("nattr")
            if isinstance(nattr, int) and 0 <= nattr < 1 << 16:
                size = 24 + 8 * nattr
            arg["attrs"] = []
        if nr is not None:
            request = kfd.ioc(d, t, nr, size & 0x3FFF)
        self.info.decoded_structs = True
        ev = Ioctl(fd=-1, path="/dev/kfd", request=request, dir=d, type=t, nr=nr, size=size,
                   ioctl=kfd.ioctl_name(t, nr, "/dev/kfd") or name, arg=arg, out=out, **base)
        if (t, nr) == kfd.SVM:
            nattr = arg.get("nattr")
            self.want = nattr if isinstance(nattr, int) and 0 < nattr <= MAX_ATTRS else 0
            if self.want:
                self.svm = ev
                return
            self._svm_done(ev)
        self.out.append(ev)

    def _attr(self, am) -> bool:
        """One attribute line of the pending SVM call; False when it is not
        the next one."""
        ev = self.svm
        attrs = ev.arg["attrs"]
        if int(am.group(1)) != len(attrs):
            return False
        tname = am.group(2)
        ty = int(tname) if tname.isdigit() else _ATTR_BY_NAME.get(tname)
        if ty is None:
            return False
        try:
            value = int(am.group(3), 0)
        except ValueError:      # "012": base 0 refuses a leading zero
            return False
        attrs.append((ty, value))
        if len(attrs) >= self.want:
            self._flush_svm()
        return True

    def _flush_svm(self) -> None:
        ev = self.svm
        if ev is None:
            return
        self.svm = None
        if len(ev.arg["attrs"]) < self.want:
            ev.partial = True        # the log lost attribute lines
        self._svm_done(ev)
        self.out.append(ev)

    @staticmethod
    def _svm_done(ev: Ioctl) -> None:
        # printed after the call: for GET_ATTR the values are the answers
        if ev.arg.get("op") == kfd.SVM_OP_GET_ATTR:
            ev.out = {"attrs": list(ev.arg["attrs"])}

    def _generic(self, lineno: int, line: str, gm, t, dur) -> None:
        idir, size, itype, nr, fd, ret = (int(x) for x in gm.group(1, 2, 3, 4, 5, 6))
        path = gm.group(7) or None
        if idir > 3 or size > 0x3FFF or itype > 0xFF or nr > 0xFF:
            self.info.add_unparsed(lineno, line)
            return
        base = self._base(lineno, line, t, dur, ret)
        if path is not None:
            self.info.has_decorations = True
        self.out.append(Ioctl(fd=fd, path=path, request=kfd.ioc(idir, itype, nr, size),
                              dir=idir, type=itype, nr=nr, size=size,
                              ioctl=kfd.ioctl_name(itype, nr, path), **base))


def looks_like_line(line: str) -> bool:
    return bool(_NAMED.match(line) or _TIMED_GENERIC.match(line)
                or _GENERIC.match(line.strip()))


__all__ = ["Parser", "looks_like_line"]
