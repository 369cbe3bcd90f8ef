"""Symbolize stack frames: module file offset -> function and source line.

Frames from strace ``-k`` and from the preload library carry the offset into
the module *file* (strace's bracket), so the address has to go through the
module's PT_LOAD program headers before it means anything to the symbol
table or to DWARF.  Everything is read lazily with pyelftools and cached per
module: the symbol table once, the DWARF line program of a compilation unit
only when an address falls into it.

Nothing here may raise on a bad module: a trace symbolized on another machine
routinely names files that are missing, replaced by an update (build-id
mismatch), stripped, or not ELF at all.  Such frames stay as they came.
"""

from __future__ import annotations

import os
import struct
import zlib
from bisect import bisect_right
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .events import Frame

SYSTEM_DEBUG_DIR = "/usr/lib/debug"

# Errors a damaged or foreign file can make pyelftools (or the OS) throw.
_READ_ERRORS = (
    OSError,
    ELFError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
    TypeError,
    AssertionError,
    EOFError,
)


def _open_elf(path: str):
    """(file object, ELFFile) or None when the path is not a readable ELF."""
    try:
        fh = open(path, "rb")
    except OSError:
        return None
    try:
        if fh.read(4) != b"\x7fELF":
            fh.close()
            return None
        fh.seek(0)
        return fh, ELFFile(fh)
    except _READ_ERRORS:
        fh.close()
        return None


def _build_id(elf) -> str | None:
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOTE":
            continue
        for note in sec.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID":
                return note["n_desc"]
    return None


def _debuglink(elf) -> tuple[str, int] | None:
    sec = elf.get_section_by_name(".gnu_debuglink")
    if sec is None:
        return None
    data = sec.data()
    name = data.split(b"\0", 1)[0].decode("utf-8", "replace")
    # The CRC sits after the NUL-terminated name, padded to 4 bytes.
    at = (len(name) + 1 + 3) & ~3
    crc = int.from_bytes(data[at : at + 4], elf.little_endian and "little" or "big")
    return name, crc


def _file_crc(path: str) -> int | None:
    try:
        crc = 0
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
        return crc
    except OSError:
        return None


@dataclass
class _LineTable:
    """Rows of one CU's line program, sorted for bisect.

    An end_sequence row sorts before an ordinary row at the same address so
    that a sequence starting where another ends wins the lookup.
    """

    addrs: list = field(default_factory=list)
    rows: list = field(default_factory=list)  # (file, line, end_sequence)

    def lookup(self, vaddr: int):
        i = bisect_right(self.addrs, vaddr) - 1
        if i < 0:
            return None
        fname, line, end = self.rows[i]
        if end:
            return None
        return fname, line


# Elf_Sym as struct formats: (st_name, st_info, st_other, st_shndx, st_value,
# st_size) for ELF64, (st_name, st_value, st_size, st_info, st_other, st_shndx)
# for ELF32.
_ELF_SYM = {64: "IBBHQQ", 32: "IIIBBH"}
_STT_FUNC, _STT_GNU_IFUNC, _SHF_COMPRESSED = 2, 10, 0x800


def _function_symbols(elf, sec):
    """(value, size, name) of the defined, named function symbols (STT_FUNC,
    STT_GNU_IFUNC) of a symbol table section, in table order.

    Read straight from the section's bytes: pyelftools parses each symbol
    through its struct machinery (~50 us a symbol, half a second for libc's
    ten thousand, paid on every run whose findings show a libc frame).
    Names are read as pyelftools reads them (to the NUL, UTF-8 with
    replacement); a table in a shape this does not know takes pyelftools'
    own path."""
    fmt = _ELF_SYM.get(elf.elfclass)
    if fmt is None:
        yield from _function_symbols_slow(sec)
        return
    fmt = ("<" if elf.little_endian else ">") + fmt
    size = struct.calcsize(fmt)
    strtab = elf.get_section(sec["sh_link"])
    if sec["sh_entsize"] != size or sec["sh_flags"] & _SHF_COMPRESSED or strtab["sh_flags"] & _SHF_COMPRESSED:
        yield from _function_symbols_slow(sec)
        return

    def raw(section):
        elf.stream.seek(section["sh_offset"])
        return elf.stream.read(section["sh_size"])

    data, names = raw(sec), raw(strtab)
    n = min(sec["sh_size"] // size, len(data) // size)
    is64 = elf.elfclass == 64
    for rec in struct.iter_unpack(fmt, data[: n * size]):
        if is64:
            st_name, info, _, shndx, value, st_size = rec
        else:
            st_name, value, st_size, info, _, shndx = rec
        if info & 0xF not in (_STT_FUNC, _STT_GNU_IFUNC) or shndx == 0:
            continue
        end = names.find(b"\0", st_name)
        if st_name >= len(names) or end < 0:
            name = strtab.get_string(st_name)  # past the table: as pyelftools reads it
        else:
            name = names[st_name:end].decode("utf-8", errors="replace")
        if name:
            yield value, st_size, name


def _function_symbols_slow(sec):
    for sym in sec.iter_symbols():
        if sym["st_info"]["type"] not in ("STT_FUNC", "STT_GNU_IFUNC"):
            continue
        if sym["st_shndx"] == "SHN_UNDEF" or not sym.name:
            continue
        yield sym["st_value"], sym["st_size"], sym.name


class _Module:
    """One ELF file plus, where found, its separate debug file."""

    def __init__(self, path: str, elf_pair, debug_pair):
        self.path = path
        self._pairs = [p for p in (elf_pair, debug_pair) if p]
        main = elf_pair or debug_pair
        self.loads = []
        for seg in main[1].iter_segments():
            if seg["p_type"] == "PT_LOAD":
                self.loads.append((seg["p_offset"], seg["p_filesz"], seg["p_vaddr"]))
        self._syms = None  # (sorted starts, [(start, end, name)])
        self._sym_by_name = None
        self._dwarf = False  # False = not tried yet, None = none
        self._aranges = None
        self._cu_tables = {}  # CU offset -> _LineTable
        self._all_lines = None  # fallback index over every CU

    def close(self):
        for fh, _ in self._pairs:
            fh.close()

    # --- addresses ---------------------------------------------------------
    def vaddr_of(self, file_offset: int) -> int | None:
        for off, filesz, vaddr in self.loads:
            if off <= file_offset < off + max(filesz, 1):
                return file_offset - off + vaddr
        return None

    # --- symbols -----------------------------------------------------------
    def _load_symbols(self):
        entries, by_name = [], {}
        # .symtab of whichever file still has it (a stripped binary keeps only
        # .dynsym; its debug file keeps .symtab), .dynsym as the last resort.
        for secname in (".symtab", ".dynsym"):
            for _, elf in self._pairs:
                sec = elf.get_section_by_name(secname)
                if sec is None or sec["sh_type"] == "SHT_NOBITS":
                    continue
                for start, size, name in _function_symbols(elf, sec):
                    entries.append((start, start + size, name))
                    by_name.setdefault(name, start)
                if entries:
                    break
            if entries:
                break
        # Prefer a sized symbol over a zero-sized alias at the same address.
        entries.sort(key=lambda e: (e[0], -(e[1] - e[0])))
        dedup = []
        for e in entries:
            if dedup and dedup[-1][0] == e[0]:
                continue
            dedup.append(e)
        self._syms = ([e[0] for e in dedup], dedup)
        self._sym_by_name = by_name

    def function_at(self, vaddr: int) -> str | None:
        if self._syms is None:
            self._load_symbols()
        starts, entries = self._syms
        i = bisect_right(starts, vaddr) - 1
        if i < 0:
            return None
        start, end, name = entries[i]
        if vaddr < end or (start == end == vaddr):
            return name
        return None

    def symbol_address(self, name: str) -> int | None:
        if self._sym_by_name is None:
            self._load_symbols()
        return self._sym_by_name.get(name)

    # --- DWARF lines -------------------------------------------------------
    def _dwarfinfo(self):
        if self._dwarf is False:
            self._dwarf = None
            # The debug file, when there is one, is the complete source.
            for _, elf in reversed(self._pairs):
                try:
                    if (
                        elf.has_dwarf_info()
                        and elf.get_section_by_name(".debug_info") is not None
                        and elf.get_section_by_name(".debug_info")["sh_type"] != "SHT_NOBITS"
                    ):
                        self._dwarf = elf.get_dwarf_info()
                        self._aranges = self._dwarf.get_aranges()
                        break
                except _READ_ERRORS:
                    self._dwarf = None
        return self._dwarf

    def _table_for_cu(self, cu) -> _LineTable:
        table = self._cu_tables.get(cu.cu_offset)
        if table is None:
            table = _LineTable()
            rows = []
            lp = self._dwarf.line_program_for_CU(cu)
            if lp is not None:
                names = _file_names(lp, cu)
                for entry in lp.get_entries():
                    st = entry.state
                    if st is None:
                        continue
                    rows.append((st.address, 0 if st.end_sequence else 1, names.get(st.file), st.line, st.end_sequence))
            rows.sort(key=lambda r: (r[0], r[1]))
            table.addrs = [r[0] for r in rows]
            table.rows = [(r[2], r[3], r[4]) for r in rows]
            self._cu_tables[cu.cu_offset] = table
        return table

    def line_at(self, vaddr: int):
        dwarf = self._dwarfinfo()
        if dwarf is None:
            return None
        if self._aranges is not None:
            cu_off = self._aranges.cu_offset_at_addr(vaddr)
            if cu_off is not None:
                hit = self._table_for_cu(dwarf.get_CU_at(cu_off)).lookup(vaddr)
                if hit:
                    return hit
        # No .debug_aranges (or it misses this address): index every CU once.
        if self._all_lines is None:
            merged = []
            for cu in dwarf.iter_CUs():
                t = self._table_for_cu(cu)
                merged.extend((a, 0 if r[2] else 1, r) for a, r in zip(t.addrs, t.rows))
            merged.sort(key=lambda m: (m[0], m[1]))
            self._all_lines = _LineTable([m[0] for m in merged], [m[2] for m in merged])
        return self._all_lines.lookup(vaddr)


def _file_names(lp, cu) -> dict:
    """file index -> path as addr2line prints it (directory joined)."""
    header = lp.header
    version = header["version"]
    dirs = [d.decode("utf-8", "replace") if isinstance(d, bytes) else d for d in header["include_directory"]]
    top = cu.get_top_DIE()
    comp_dir = top.attributes.get("DW_AT_comp_dir")
    comp_dir = comp_dir.value.decode("utf-8", "replace") if comp_dir else ""
    names = {}
    for i, fe in enumerate(header["file_entry"]):
        name = fe.name.decode("utf-8", "replace") if isinstance(fe.name, bytes) else fe.name
        d = fe.dir_index
        if version >= 5:
            base = dirs[d] if d < len(dirs) else ""
            idx = i
        else:
            base = comp_dir if d == 0 else (dirs[d - 1] if d - 1 < len(dirs) else "")
            idx = i + 1
        if base and not os.path.isabs(base) and comp_dir:
            base = os.path.join(comp_dir, base)
        names[idx] = name if os.path.isabs(name) else os.path.join(base, name)
    return names


class Symbolizer:
    """Resolves frames against module files, caching everything per module."""

    def __init__(self, debug_dirs=(), maps=()):
        self.debug_dirs = [d for d in debug_dirs if d]
        if SYSTEM_DEBUG_DIR not in self.debug_dirs:
            self.debug_dirs.append(SYSTEM_DEBUG_DIR)
        self.build_ids: dict[str, str] = {}
        for m in maps:
            self.add_map(m)
        self._modules: dict[tuple, _Module | None] = {}

    def add_map(self, m) -> None:
        """Record a ModuleMap's build-id so its module's file gets verified."""
        if getattr(m, "module", None) and getattr(m, "build_id", None):
            self.build_ids[m.module] = m.build_id.lower()

    def close(self) -> None:
        for mod in self._modules.values():
            if mod:
                mod.close()
        self._modules.clear()

    # --- finding files -----------------------------------------------------
    def _by_build_id(self, bid: str):
        for d in self.debug_dirs:
            pair = _open_elf(os.path.join(d, ".build-id", bid[:2], bid[2:] + ".debug"))
            if pair and _build_id(pair[1]) == bid:
                return pair
            if pair:
                pair[0].close()
        return None

    def _by_debuglink(self, path: str, link) -> tuple | None:
        name, crc = link
        here = os.path.dirname(path)
        candidates = [os.path.join(here, name), os.path.join(here, ".debug", name)]
        for d in self.debug_dirs:
            candidates += [os.path.join(d, name), os.path.join(d + here, name)]
        for cand in candidates:
            if os.path.realpath(cand) == os.path.realpath(path):
                continue
            if _file_crc(cand) == crc:
                pair = _open_elf(cand)
                if pair:
                    return pair
        return None

    def _load(self, path: str) -> _Module | None:
        want = self.build_ids.get(path)
        key = (path, want)
        if key in self._modules:
            return self._modules[key]
        mod = None
        try:
            mod = self._find(path, want)
        except _READ_ERRORS:
            mod = None
        self._modules[key] = mod
        return mod

    def _find(self, path: str, want: str | None) -> _Module | None:
        elf_pair = _open_elf(path)
        have = _build_id(elf_pair[1]) if elf_pair else None
        if elf_pair and want and have != want:
            # The file on disk is not the one that ran: only a debug file
            # with the right build-id can still answer.
            elf_pair[0].close()
            elf_pair, have = None, None
        bid = want or have
        debug_pair = None
        if elf_pair and _has_full_debug(elf_pair[1]):
            pass
        elif bid:
            debug_pair = self._by_build_id(bid)
        if elf_pair and debug_pair is None and not _has_full_debug(elf_pair[1]):
            link = _debuglink(elf_pair[1])
            if link:
                debug_pair = self._by_debuglink(path, link)
                if debug_pair and have and _build_id(debug_pair[1]) not in (None, have):
                    debug_pair[0].close()
                    debug_pair = None
        if not elf_pair and not debug_pair:
            return None
        return _Module(path, elf_pair, debug_pair)

    # --- the API -----------------------------------------------------------
    def symbolize(self, frame: Frame, exact: bool = False) -> Frame:
        """Fill frame.function / source / source_line in place; return it.

        A frame's address is a return address: the instruction after the
        call.  Its line is often the next source line (or, after a call to a
        noreturn function, the next function), so the lookup is made at the
        address minus one, inside the call instruction, as addr2line users
        and every debugger do.  ``exact`` is for the frame a signal
        interrupted: its address is the faulting instruction itself.

        strace's own symbol, when the frame has one, is kept as the function
        name: it is what the user saw and may be demangled already.
        """
        if not frame.module or frame.function is not None:
            return frame
        mod = self._load(frame.module)
        if mod is None:
            return frame
        try:
            vaddr = None
            if frame.addr is not None:
                vaddr = mod.vaddr_of(frame.addr)
            elif frame.symbol and frame.sym_offset is not None:
                start = mod.symbol_address(frame.symbol)
                if start is not None:
                    vaddr = start + frame.sym_offset
            if vaddr is None:
                return frame
            if frame.symbol and frame.addr is not None and frame.sym_offset is not None:
                # strace named the function; if this machine's file has it
                # elsewhere, the file is not the one that ran (a pasted log,
                # another build): its lines would be another function's (a
                # name it lacks, demangled C++, cannot tell)
                start = mod.symbol_address(frame.symbol)
                if start is not None and start + frame.sym_offset != vaddr:
                    frame.function = frame.symbol
                    return frame
            if not exact and not (frame.addr is None and frame.sym_offset == 0):
                vaddr -= 1
            frame.function = frame.symbol or mod.function_at(vaddr)
            hit = mod.line_at(vaddr)
            if hit and hit[0]:
                frame.source, frame.source_line = hit
        except _READ_ERRORS:
            pass
        return frame

    def symbolize_stack(self, stack):
        """Symbolize every frame of a stack, innermost first; returns it as a
        tuple.  The frame just outside a signal trampoline was interrupted,
        not calling: its address is exact."""
        out = []
        after_trampoline = False
        for f in stack:
            out.append(self.symbolize(f, exact=after_trampoline))
            after_trampoline = is_signal_trampoline(f)
        return tuple(out)


# The kernel returns from a signal handler through these (x86-64 glibc and
# musl, the vDSO's own names on other architectures).
_TRAMPOLINES = ("__restore_rt", "__restore", "__kernel_rt_sigreturn", "__kernel_sigreturn", "__vdso_rt_sigreturn")


def is_signal_trampoline(frame: Frame) -> bool:
    name = frame.symbol or frame.function or ""
    return name in _TRAMPOLINES


def _has_full_debug(elf) -> bool:
    sec = elf.get_section_by_name(".debug_info")
    return sec is not None and sec["sh_type"] != "SHT_NOBITS" and elf.get_section_by_name(".debug_line") is not None
