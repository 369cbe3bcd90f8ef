"""Write the ioctl tables of the capture library, the core, the Python
package and the docs from catalogue/ioctls.toml (what each holds: the
file's header).

    python catalogue/generate.py [--check]

``--check`` writes nothing and exits 1, naming the files, if any generated
file differs from what the catalogue gives (tests/test_catalogue.py runs it).
The catalogue is checked first: unique names and numbers, member layouts
that tile their struct by C's natural alignment, log fields that exist and
can be shown, name tables that exist; a fault is one line naming the ioctl.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "ioctls.toml"

C_HEADER = ROOT / "rocrtrace" / "capture" / "ioctl_table.h"
RUST = ROOT / "src" / "kfd_catalogue.rs"
PYTHON = ROOT / "rocrtrace" / "kfd.py"
MARKDOWN = ROOT / "docs" / "preload-log.md"
MAN = ROOT / "man" / "rocrtrace-log.5"

DIRS = {"none": 0, "W": 1, "R": 2, "RW": 3}
SCALARS = {"u32": (4, 4), "s32": (4, 4), "u64": (8, 8)}  # size, alignment
SHOWS = ("hex", "dec", "fd", "ptr")


class CatalogueError(ValueError):
    """A fault in the catalogue (one line)."""


# --- the catalogue ---------------------------------------------------------------


@dataclass
class Names:
    id: str
    kind: str  # enum, flags, const
    doc: str
    values: list[tuple[int, str]]
    consts: tuple[str, str] | None  # (prefix, replacement) for the model constants

    def value_of(self, name: str) -> int | None:
        return next((v for v, n in self.values if n == name), None)

    def model_consts(self) -> list[tuple[str, int]]:
        if not self.consts:
            return []
        pre, rep = self.consts
        return [(rep + n.removeprefix(pre), v) for v, n in self.values]


@dataclass
class Field:
    name: str
    off: int
    type: str  # u32, s32, u64, or STRUCT[] (a flexible array)
    show: str | None = None  # hex, dec, fd, ptr, enum:X, flags:X (None: never shown)
    label: str = ""
    view: str | None = None  # "out": the answer half of a union over other members
    count: str | None = None  # ptr and flexible arrays: the member with the count
    max: int = 0  # ... of which at most this many are shown
    array: str | None = None  # ptr: the element type
    elem: str | None = None  # ptr: the element's show
    elem_label: str | None = None  # ptr: what the docs call an element
    by: str | None = None  # the show follows this member's value ...
    cases: dict[int, str] = field(default_factory=dict)  # ... value -> show

    @property
    def flexible(self) -> str | None:
        return self.type[:-2] if self.type.endswith("[]") else None

    @property
    def width(self) -> int:
        return 0 if self.flexible else SCALARS[self.type][0]


@dataclass
class Struct:
    name: str
    fields: list[Field]
    size: int = 0  # fixed part (up to a flexible array)

    def get(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def tail(self) -> Field | None:
        return next((f for f in self.fields if f.flexible), None)


@dataclass
class Ioctl:
    table: str
    type: str
    nr: int
    name: str
    dir: str
    size: int
    key: str | None = None
    old_sizes: list[int] = field(default_factory=list)
    aliases: dict[str, int] = field(default_factory=dict)
    struct: Struct | None = None
    log_in: list[str] | None = None
    log_out: list[str] = field(default_factory=list)
    out_if: tuple[str, int, str] | None = None  # member, value, constant name
    note: str = ""

    @property
    def decoded(self) -> bool:
        return self.log_in is not None

    @property
    def fixed(self) -> int:
        """Bytes the capture library reads for the fields: up to the flexible
        array, else the smallest size it decodes at."""
        assert self.struct
        tail = self.struct.tail
        return tail.off if tail else min([self.size, *self.old_sizes])


@dataclass
class Table:
    id: str
    type: str
    doc: str
    header: str
    device: str | None
    ioctls: list[Ioctl]


@dataclass
class Catalogue:
    types: dict[str, tuple[int, str]]
    tables: list[Table]
    names: dict[str, Names]
    structs: dict[str, Struct]
    int_fields: list[str] = field(default_factory=list)  # [parse] ints
    hsa_fields: list[str] = field(default_factory=list)  # [parse] hsa_fields

    @property
    def ioctls(self) -> list[Ioctl]:
        return [i for t in self.tables for i in t.ioctls]

    @property
    def decoded(self) -> list[Ioctl]:
        return [i for i in self.ioctls if i.decoded]

    def member_labels(self) -> set[str]:
        """The label of every member of every struct the catalogue declares."""
        structs = [*self.structs.values(), *(i.struct for i in self.ioctls if i.struct)]
        return {f.label for s in structs for f in s.fields}

    def field_names(self) -> list[str]:
        """The member names the parser keeps without a copy: every label and
        the HSA structs' members, sorted by length, then bytes."""
        return sorted(self.member_labels() | set(self.hsa_fields), key=lambda n: (len(n), n))

    def show_names(self, show: str) -> Names | None:
        kind, _, nid = show.partition(":")
        return self.names[nid] if kind in ("enum", "flags") else None


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _field(where: str, d: dict, names: dict[str, Names]) -> Field:
    extra = set(d) - {
        "name",
        "off",
        "type",
        "show",
        "label",
        "view",
        "count",
        "max",
        "array",
        "elem",
        "elem_label",
        "by",
        "cases",
    }
    if extra:
        raise CatalogueError(f"{where}: unknown keys {sorted(extra)}")
    f = Field(
        name=d["name"],
        off=d["off"],
        type=d["type"],
        show=d.get("show"),
        label=d.get("label", d["name"]),
        view=d.get("view"),
        count=d.get("count"),
        max=d.get("max", 0),
        array=d.get("array"),
        elem=d.get("elem"),
        elem_label=d.get("elem_label"),
        by=d.get("by"),
    )
    where = f"{where}.{f.name}"
    if not f.flexible and f.type not in SCALARS:
        raise CatalogueError(f"{where}: type {f.type!r} is none of {sorted(SCALARS)} or S[]")
    if f.show is not None:
        kind, _, nid = f.show.partition(":")
        if kind in ("enum", "flags"):
            if nid not in names or names[nid].kind != kind:
                raise CatalogueError(f"{where}: show {f.show!r} names no {kind} table")
        elif f.show not in SHOWS or nid:
            raise CatalogueError(f"{where}: show {f.show!r} is unknown")
    if f.show == "ptr" and not (f.type == "u64" and f.array in SCALARS and f.elem in SHOWS and f.count and f.max > 0):
        raise CatalogueError(f"{where}: a ptr needs type u64, array, elem, count and max")
    if f.flexible and not (f.count and f.max > 0):
        raise CatalogueError(f"{where}: a flexible array needs count and max")
    if "cases" in d:
        if not f.by:
            raise CatalogueError(f"{where}: cases without by")
        f.cases = dict(d["cases"])  # names resolved in _layout, once the struct is known
    return f


def _layout(where: str, s: Struct, size: int | None) -> None:
    """Members tile the struct as C lays it out (natural alignment, no
    packing); a flexible array is last and starts where the fixed part ends."""
    pos, align = 0, 1
    for f in s.fields:
        if f.view:
            continue
        if f.flexible:
            if f is not s.fields[-1] and any(not g.view for g in s.fields[s.fields.index(f) + 1 :]):
                raise CatalogueError(f"{where}.{f.name}: a flexible array must be last")
            continue
        w, a = SCALARS[f.type]
        if f.off != _align(pos, a):
            raise CatalogueError(f"{where}.{f.name}: offset {f.off}, C puts it at {_align(pos, a)}")
        pos, align = f.off + w, max(align, a)
    end = _align(pos, align)
    if size is not None and end != size:
        raise CatalogueError(f"{where}: members end at {end}, the struct is {size} bytes")
    s.size = end
    for f in s.fields:
        if f.view and f.off + f.width > s.size:
            raise CatalogueError(f"{where}.{f.name}: outside the struct")


def load(path: Path | None = None) -> Catalogue:
    doc = tomllib.loads((path or SOURCE).read_text())
    types = {k: (v["value"], v.get("doc", "")) for k, v in doc["type"].items()}
    names: dict[str, Names] = {}
    seen_const: dict[str, str] = {}
    for nid, d in doc["names"].items():
        if d["kind"] not in ("enum", "flags", "const"):
            raise CatalogueError(f"names.{nid}: kind {d['kind']!r} is none of enum, flags, const")
        vals = [(int(v), str(n)) for v, n in d["values"]]
        for _, n in vals:
            if n in seen_const:
                raise CatalogueError(f"names.{nid}: {n} is also in names.{seen_const[n]}")
            seen_const[n] = nid
        if d["kind"] == "enum" and sorted(v for v, _ in vals) != list(range(len(vals))):
            raise CatalogueError(f"names.{nid}: an enum's values are 0..n-1")
        names[nid] = Names(nid, d["kind"], d.get("doc", ""), vals, tuple(d["consts"]) if "consts" in d else None)

    structs: dict[str, Struct] = {}
    for sname, d in doc.get("struct", {}).items():
        s = Struct(sname, [_field(f"struct.{sname}", f, names) for f in d["fields"]])
        _layout(f"struct.{sname}", s, None)
        structs[sname] = s

    extra = doc.get("ioctl", {})
    tables, seen = [], {}
    for t in doc["table"]:
        if t["type"] not in types:
            raise CatalogueError(f"table {t['id']}: type {t['type']!r} is not declared")
        ioctls = []
        for nr, name, dir_, size in t["ioctls"]:
            if name in seen:
                raise CatalogueError(f"{name}: in tables {seen[name]} and {t['id']}")
            if dir_ not in DIRS or not 0 <= size < 0x4000 or not 0 <= nr < 256:
                raise CatalogueError(f"{name}: dir {dir_!r}, nr {nr:#x} or size {size} out of range")
            if any(i.nr == nr for i in ioctls):
                raise CatalogueError(f"{name}: nr {nr:#x} twice in table {t['id']}")
            seen[name] = t["id"]
            ioctls.append(_ioctl(t["id"], t["type"], nr, name, dir_, size, extra.get(name, {}), names, structs))
        tables.append(Table(t["id"], t["type"], t.get("doc", ""), t.get("header", ""), t.get("device"), ioctls))
    unknown = set(extra) - set(seen)
    if unknown:
        raise CatalogueError(f"ioctl.{sorted(unknown)[0]}: in no table")
    cat = Catalogue(types, tables, names, structs)
    _parse_section(cat, doc.get("parse", {}))
    return cat


# the parser finds a name among those of its length (src/parse/values.rs,
# FIRST_OF_LEN): lengths up to this
FIELD_NAME_MAX = 32


def _parse_section(cat: Catalogue, d: dict) -> None:
    if set(d) - {"ints", "hsa_fields"}:
        raise CatalogueError(f"parse: unknown keys {sorted(set(d) - {'ints', 'hsa_fields'})}")
    cat.int_fields = list(d.get("ints", []))
    cat.hsa_fields = list(d.get("hsa_fields", []))
    labels = cat.member_labels()
    for n in cat.int_fields:
        if n not in labels:
            raise CatalogueError(f"parse.ints: {n} is no struct member")
    for key, names in (("ints", cat.int_fields), ("hsa_fields", cat.hsa_fields)):
        if len(set(names)) != len(names):
            raise CatalogueError(f"parse.{key}: a name twice")
    for n in cat.field_names():
        if not 0 < len(n) <= FIELD_NAME_MAX or not n.isidentifier():
            raise CatalogueError(f"parse: member name {n!r} is no identifier of 1 to {FIELD_NAME_MAX} characters")


def _ioctl(table, type_, nr, name, dir_, size, d, names, structs) -> Ioctl:
    keys = {"key", "old_sizes", "aliases", "struct", "fields", "log_in", "log_out", "out_if", "note"}
    if set(d) - keys:
        raise CatalogueError(f"ioctl.{name}: unknown keys {sorted(set(d) - keys)}")
    io = Ioctl(
        table,
        type_,
        nr,
        name,
        dir_,
        size,
        d.get("key"),
        list(d.get("old_sizes", [])),
        dict(d.get("aliases", {})),
        note=d.get("note", ""),
    )
    if "fields" in d:
        s = Struct(d.get("struct", name), [_field(f"ioctl.{name}", f, names) for f in d["fields"]])
        _layout(f"ioctl.{name}", s, size)
        io.struct = s
    elif "log_in" in d or "log_out" in d:
        raise CatalogueError(f"ioctl.{name}: log fields without fields")
    if io.struct:
        for f in io.struct.fields:
            _resolve(f"ioctl.{name}", io.struct, f, names, structs)
    if "log_in" in d or "log_out" in d:
        io.log_in = list(d.get("log_in", []))
        io.log_out = list(d.get("log_out", []))
        for m in io.log_in + io.log_out:
            try:
                f = io.struct.get(m)
            except KeyError:
                raise CatalogueError(f"ioctl.{name}: log field {m!r} is no member") from None
            if f.show is None and not f.flexible:
                raise CatalogueError(f"ioctl.{name}: log field {m!r} has no show")
            need = [f] + ([io.struct.get(f.count)] if f.count else [])
            for g in need:
                if not g.flexible and g.off + g.width > io.fixed:
                    raise CatalogueError(
                        f"ioctl.{name}: {g.name} lies beyond the {io.fixed} bytes every decoded size has"
                    )
        if "out_if" in d:
            member, const = d["out_if"]
            f = io.struct.get(member)
            tab = names[f.show.partition(":")[2]] if f.show and ":" in f.show else None
            val = tab.value_of(const) if tab else None
            if val is None or f.width != 4:
                raise CatalogueError(f"ioctl.{name}: out_if {const} is no value of {member}")
            io.out_if = (member, val, const)
    return io


def _resolve(where: str, s: Struct, f: Field, names, structs) -> None:
    if f.count:
        c = s.get(f.count)
        if c.flexible or c.off + c.width > (f.off if f.flexible else s.size):
            raise CatalogueError(f"{where}.{f.name}: count {f.count} must be a member before it")
    if f.flexible and (f.flexible not in structs or structs[f.flexible].tail):
        raise CatalogueError(f"{where}.{f.name}: no struct.{f.flexible} of fixed size")
    if f.by:
        tag = s.get(f.by)
        tab = names[tag.show.partition(":")[2]] if tag.show and tag.show.startswith("enum:") else None
        if tab is None:
            raise CatalogueError(f"{where}.{f.name}: by {f.by}, which is no enum")
        resolved = {}
        for cname, show in f.cases.items():
            v = tab.value_of(cname) if isinstance(cname, str) else None
            if v is None:
                raise CatalogueError(f"{where}.{f.name}: case {cname} is no value of {f.by}")
            resolved[v] = show
        f.cases = resolved
    if f.flexible:
        for g in structs[f.flexible].fields:
            _resolve(f"struct.{f.flexible}", structs[f.flexible], g, names, structs)


# --- the capture library: rocrtrace/capture/ioctl_table.h ------------------------


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


C_SHOW = {"hex": "RT_HEX", "dec": "RT_DEC", "fd": "RT_FD"}


def _c_show(show: str, type_: str) -> tuple[str, str]:
    """(RT_ kind, the names member initializer) of a show."""
    kind, _, nid = show.partition(":")
    if kind == "dec" and type_ == "s32":
        return "RT_SDEC", ""
    if kind == "enum":
        return "RT_ENUM", f", .names = &RT_{nid}"
    if kind == "flags":
        return "RT_FLAGS", f", .flags = RT_{nid}"
    return C_SHOW[kind], ""


class _CWriter:
    def __init__(self, cat: Catalogue):
        self.cat = cat
        self.out: list[str] = []
        self.arrays: dict[str, str] = {}  # what an array holds -> its name

    def named(self, prefix: str, key: str, ctype: str, rows: list[str]) -> str:
        """A static array of `rows` (made once per key), by name."""
        if key not in self.arrays:
            cname = f"RT_{prefix}_{sum(k.startswith(prefix) for k in self.arrays)}"
            self.out.append(
                f"/* {key.partition(' ')[2]} */\nstatic const struct {ctype} {cname}[] = {{\n"
                + "".join(f"  {r},\n" for r in rows)
                + "};"
            )
            self.arrays[key] = cname
        return self.arrays[key]

    def field(self, s: Struct, f: Field, label: bool = True) -> str:
        """The rt_field initializer of member f of s."""
        parts = [f".label = {_cstr(f.label)}" if label else ".label = 0", f".off = {f.off}"]
        if f.flexible:
            sub = self.cat.structs[f.flexible]
            rows = [self.field(sub, g) for g in sub.fields if g.show]
            elem = self.named("ELEM", f"ELEM struct {sub.name}", "rt_field", rows)
            parts.append(f".show = RT_TAIL, .elem = {elem}, .nelem = {len(rows)}, .elem_size = {sub.size}")
        elif f.show == "ptr":
            e = Field(name="", off=0, type=f.array, show=f.elem)
            elem = self.named("ELEM", f"ELEM {f.array} shown {f.elem}", "rt_field", [self.field(s, e, label=False)])
            parts.append(f".width = 8, .show = RT_PTR, .elem = {elem}, .nelem = 1, .elem_size = {SCALARS[f.array][0]}")
        else:
            kind, names = _c_show(f.show, f.type)
            parts.append(f".width = {f.width}, .show = {kind}{names}")
        if f.count:
            c = s.get(f.count)
            parts.append(f".count_off = {c.off}, .count_width = {c.width}, .max = {f.max}")
        if f.cases:
            rows = []
            for v, show in sorted(f.cases.items()):
                kind, names = _c_show(show, f.type)
                rows.append(f"{{.tag = {v}, .show = {kind}{names}}}")
            cases = self.named("CASES", f"CASES {s.name}.{f.name} by {f.by}", "rt_case", rows)
            parts.append(f".tag_off = {s.get(f.by).off}, .ncases = {len(rows)}, .cases = {cases}")
        return "{" + ", ".join(parts) + "}"


def render_c(cat: Catalogue) -> str:
    w = _CWriter(cat)
    out = w.out
    out.append(
        "/* generated by catalogue/generate.py from catalogue/ioctls.toml: do not edit.\n"
        " * The capture library's ioctl catalogue: per (type, nr) the name and size,\n"
        " * and for the ioctls it decodes the fields it writes before (in) and after\n"
        " * (out) the call; preload.c walks them (struct rt_field). */"
    )
    for nid, t in cat.names.items():
        if t.kind == "flags":
            rows = "".join(f"  {{0x{v:x}ULL, {_cstr(n)}}},\n" for v, n in t.values)
            out.append(f"/* {t.doc} */\nstatic const struct rt_flag RT_{nid}[] = {{\n{rows}  {{0, 0}}\n}};")
        elif t.kind == "enum":
            rows = "".join(f"  [{v}] = {_cstr(n)},\n" for v, n in sorted(t.values))
            out.append(
                f"/* {t.doc} */\nstatic const char *const RT_{nid}_NAMES[{len(t.values)}] = "
                f"{{\n{rows}}};\nstatic const struct rt_enum RT_{nid} = "
                f"{{{len(t.values)}, RT_{nid}_NAMES}};"
            )
    copy_max, ptr_max = 8, 8
    for io in cat.decoded:
        s = io.struct
        cname = f"RT_DEC_{io.name}"
        lists = []
        for half, members in (("IN", io.log_in), ("OUT", io.log_out)):
            if members:
                rows = "".join(f"  {w.field(s, s.get(m))},\n" for m in members)
                out.append(f"static const struct rt_field {cname}_{half}[] = {{\n{rows}}};")
                lists.append(f"{cname}_{half}")
            else:
                lists.append("0")
        tail = s.tail
        if tail:
            copy_max = max(copy_max, io.fixed + tail.max * cat.structs[tail.flexible].size)
        else:
            copy_max = max(copy_max, io.fixed)
        for f in s.fields:
            if f.show == "ptr":
                ptr_max = max(ptr_max, f.max * SCALARS[f.array][0])
        parts = [
            f".fixed = {io.fixed}",
            f".in = {lists[0]}, .nin = {len(io.log_in)}",
            f".out = {lists[1]}, .nout = {len(io.log_out)}",
        ]
        if tail:
            idx = io.log_in.index(tail.name) if tail.name in io.log_in else None
            parts.append(
                f".tail = &{cname}_IN[{idx}]"
                if idx is not None
                else f".tail = &{cname}_OUT[{io.log_out.index(tail.name)}]"
            )
        if io.out_if:
            member, val, const = io.out_if
            parts.append(f".out_if_off = {s.get(member).off}, .out_if_val = {val} /* {const} */")
        else:
            parts.append(".out_if_off = -1")
        out.append(f"static const struct rt_decode {cname} = {{\n  " + ",\n  ".join(parts) + "\n};")
    for t in cat.tables:
        rows = []
        for io in t.ioctls:
            old = ", ".join(str(x) for x in io.old_sizes) if io.decoded else ""
            nold = len(io.old_sizes) if io.decoded else 0
            dec = f", .dec = &RT_DEC_{io.name}" if io.decoded else ""
            rows.append(
                f"  [0x{io.nr:02x}] = {{{_cstr(io.name)}, {io.size}"
                + (f", .old_sizes = {{{old}}}, .nold = {nold}" if nold else "")
                + dec
                + "},\n"
            )
        out.append(f"/* {t.doc} */\nstatic const struct rt_ioc RT_{t.id}[256] = {{\n" + "".join(rows) + "};")
    if max(len(io.old_sizes) for io in cat.decoded) > 2:
        raise CatalogueError("struct rt_ioc holds at most two old sizes")
    out.insert(
        1,
        f"/* the largest copy of a struct (with its flexible array) and of the\n"
        f" * array a pointer field points to */\n#define RT_COPY_MAX {copy_max}\n"
        f"#define RT_PTR_COPY_MAX {ptr_max}",
    )
    return "\n\n".join(out) + "\n"


# --- the core: src/kfd_catalogue.rs ---------------------------------------------


def _rs_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rs_int(v: int) -> str:
    if v < 0x10000:
        return f"0x{v:02X}"
    h = f"{v:X}"
    h = "0" * (-len(h) % 4) + h
    return "0x" + "_".join(h[i : i + 4] for i in range(0, len(h), 4))


def _block(comment: str, doc: str, head: str, rows: list[str], tail: str) -> list[str]:
    """A documented table literal: `doc` as comment lines, one row a line."""
    lines = textwrap.wrap(doc, 76, break_on_hyphens=False) if doc else []
    return [f"{comment} {d}" for d in lines] + [head] + [f"    {r}," for r in rows] + [tail, ""]


ALIASES_DOC = "Names strace tables of older kernels print for another size of an ioctl."
STRACE_SIZES_DOC = (
    "strace names a code only on an exact match, so a name tells the size it was "
    "built for: the names whose size differs between headers, with the sizes "
    "they were printed for (the newest last)."
)
CONSTANTS_DOC = "Every symbolic value a decoded struct may show, by name."


LOG_STRUCTS_DOC = (
    "The structs the capture library writes in a preload log's ioctl lines, by "
    "(type, nr) and name: the members it writes before the call and those after the "
    "arrow, with their labels, in the log's order (src/parse/kfd_args.rs reads "
    "them)."
)


def _rs_log_field(cat: Catalogue, s: Struct, member: str) -> str:
    f = s.get(member)
    if f.flexible:
        sub = cat.structs[f.flexible]
        labels = ", ".join(_rs_str(g.label) for g in sub.fields if g.show)
        shape = f"Shape::Structs(&[{labels}])"
    elif f.show == "ptr":
        shape = "Shape::List"
    else:
        shape = "Shape::Scalar"
    return f"lf({_rs_str(f.label)}, {shape})"


def _rs_log_struct(cat: Catalogue, io: Ioctl) -> str:
    halves = ["&[" + ", ".join(_rs_log_field(cat, io.struct, m) for m in ms) + "]" for ms in (io.log_in, io.log_out)]
    return f"ls(TYPE_{io.type}, 0x{io.nr:02X}, {_rs_str(io.name)}, {halves[0]}, {halves[1]})"


def render_rust(cat: Catalogue) -> str:
    o = [
        "// generated by catalogue/generate.py from catalogue/ioctls.toml: do not edit.",
        "// Included by src/kfd.rs: the ioctl tables, the symbolic values and the keys",
        "// of the ioctls the models interpret.",
        "",
    ]
    for tid, (v, doc) in cat.types.items():
        o += [f"/// {doc}", f"pub const TYPE_{tid}: u8 = 0x{v:02X};"]
    o.append("")
    for t in cat.tables:
        o += _block(
            "///",
            t.doc + ".",
            f"pub const {t.id}: &[Entry] = &[",
            [f"e(0x{io.nr:02X}, {_rs_str(io.name)}, {DIRS[io.dir]}, {io.size})" for io in t.ioctls],
            "];",
        )
    o += _block(
        "///",
        "Every table with its type.",
        "pub const TABLES: &[(u8, &[Entry])] = &[",
        [f"(TYPE_{t.type}, {t.id})" for t in cat.tables],
        "];",
    )
    o += _block(
        "///",
        ALIASES_DOC,
        "pub const ALIASES: &[(&str, Request)] = &[",
        [
            f"({_rs_str(alias)}, Request {{ dir: {DIRS[io.dir]}, type_: TYPE_{io.type}, "
            f"nr: 0x{io.nr:02X}, size: {size} }})"
            for io in cat.ioctls
            for alias, size in io.aliases.items()
        ],
        "];",
    )
    o += _block(
        "///",
        STRACE_SIZES_DOC,
        "pub const STRACE_NAME_SIZES: &[(&str, &[u16])] = &[",
        [
            f"({_rs_str(io.name)}, &[{', '.join(str(x) for x in [*io.old_sizes, io.size])}])"
            for io in cat.ioctls
            if io.old_sizes
        ],
        "];",
    )
    for nid, t in cat.names.items():
        o += [f"pub const {cname}: u32 = {_rs_int(v)};" for cname, v in t.model_consts()]
        if t.kind == "const":
            o.append("")
        else:
            ty = "u32" if t.kind == "enum" else "u64"
            o += _block(
                "///",
                t.doc,
                f"pub const {nid}_NAMES: &[({ty}, &str)] = &[",
                [f"({_rs_int(v)}, {_rs_str(n)})" for v, n in t.values],
                "];",
            )
    o += _block(
        "///",
        CONSTANTS_DOC,
        "pub const CONSTANT_NAMES: &[(&str, u64)] = &[",
        [f"({_rs_str(n)}, {_rs_int(v)})" for t in cat.names.values() for v, n in t.values],
        "];",
    )
    o += ["// --- the (type, nr) of the ioctls the models interpret", "", "pub type Key = (u8, u8);", ""]
    for io in cat.ioctls:
        if io.key:
            o += [f"/// {io.name}", f"pub const {io.key}: Key = (TYPE_{io.type}, 0x{io.nr:02X});"]
    o.append("")
    o += _block(
        "///",
        LOG_STRUCTS_DOC,
        "pub const LOG_STRUCTS: &[LogStruct] = &[",
        [_rs_log_struct(cat, io) for io in cat.decoded],
        "];",
    )
    # what a decoded struct may hold: the members the capture library writes,
    # and every member of the structs it leaves to other decoders (strace's,
    # tinygrad's)
    labels = {f.label for s in cat.structs.values() for f in s.fields}
    for io in cat.ioctls:
        if io.struct:
            labels |= {f.label for f in io.struct.fields if f.show or not io.decoded}
    o += _block(
        "///",
        "Members a model reads as a number: a decoded struct whose member of one "
        "of these names holds anything else is malformed.",
        "pub const INT_FIELDS: &[&str] = &[",
        [_rs_str(n) for n in cat.int_fields],
        "];",
    )
    o += _block(
        "///",
        "The member names the parser keeps without a copy: every struct member "
        "of the catalogue and the members of the HSA structs intent calls print, "
        "sorted by length, then bytes (a search then compares mostly lengths).",
        "pub const FIELD_NAMES: &[&str] = &[",
        [_rs_str(n) for n in cat.field_names()],
        "];",
    )
    o.append("/// The names decoded structs give the catalogue's struct members.")
    o.append("pub mod fields {")
    o += [f"    pub const {lab.upper()}: &str = {_rs_str(lab)};" for lab in sorted(labels)]
    o.append("}")
    return "\n".join(x for i, x in enumerate(o) if x or (i and o[i - 1])) + "\n"


# --- the package: the generated part of rocrtrace/kfd.py ---------------------------


def _py_int(v: int) -> str:
    return f"0x{v:02X}" if v < 0x10000 else f"0x{v:08X}"


def _py_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _py_strs(items: list[str], indent: int, width: int = 99) -> str:
    """A tuple of strings, on one line if it fits after `indent` columns,
    else one wrapped block."""
    one = "(" + ", ".join(_py_str(x) for x in items) + ("," if len(items) == 1 else "") + ")"
    if indent + len(one) <= width:
        return one
    pad = " " * (indent + 4)
    body = textwrap.wrap(" ".join(_py_str(x) + "," for x in items), width - len(pad))
    return "(\n" + "".join(pad + ln + "\n" for ln in body) + " " * indent + ")"


def render_python(cat: Catalogue) -> str:
    o = [f"TYPE_{tid} = 0x{v:02X}  # {doc}" for tid, (v, doc) in cat.types.items()]
    o += ["", "# (type, nr) -> (canonical name, dir, struct size of the newest header)"]
    for t in cat.tables:
        o += _block(
            "#",
            t.doc,
            f"{t.id} = {{",
            [f"0x{io.nr:02X}: ({_py_str(io.name)}, {DIRS[io.dir]}, {io.size})" for io in t.ioctls],
            "}",
        )[:-1]
    o += _block("#", "", "TABLES = [", [f"(TYPE_{t.type}, {t.id})" for t in cat.tables], "]")
    o += _block(
        "#",
        ALIASES_DOC + " name -> (dir, type, nr, size)",
        "ALIASES = {",
        [
            f"{_py_str(alias)}: ({DIRS[io.dir]}, TYPE_{io.type}, 0x{io.nr:02X}, {size})"
            for io in cat.ioctls
            for alias, size in io.aliases.items()
        ],
        "}",
    )
    o += _block(
        "#",
        STRACE_SIZES_DOC,
        "STRACE_NAME_SIZES = {",
        [f"{_py_str(io.name)}: {tuple([*io.old_sizes, io.size])!r}" for io in cat.ioctls if io.old_sizes],
        "}",
    )
    for nid, t in cat.names.items():
        o += [f"{cname} = {_py_int(v)}" for cname, v in t.model_consts()]
        if t.kind == "const":
            o.append("")
        else:
            o += _block("#", t.doc, f"{nid}_NAMES = {{", [f"{_py_int(v)}: {_py_str(n)}" for v, n in t.values], "}")
    o += _block(
        "#",
        CONSTANTS_DOC,
        "CONSTANTS: dict[str, int] = {",
        [f"{_py_str(n)}: {_py_int(v)}" for t in cat.names.values() for v, n in t.values],
        "}",
    )
    o.append("# (type, nr) of the ioctls the models interpret")
    o += [f"{io.key} = (TYPE_{io.type}, 0x{io.nr:02X})" for io in cat.ioctls if io.key]
    o.append("")
    rows = []
    for io in cat.decoded:
        fin = [io.struct.get(m).label for m in io.log_in]
        fout = [io.struct.get(m).label for m in io.log_out]
        row = f"{_py_str(io.name)}: ({_py_strs(fin, 0)}, {_py_strs(fout, 0)})"
        if len(row) > 94:
            row = f"{_py_str(io.name)}: (\n        {_py_strs(fin, 8)},\n        {_py_strs(fout, 8)},\n    )"
        rows.append(row)
    o += _block(
        "#",
        "The ioctls the capture library decodes: name -> (fields written before the "
        "call, fields written after ` => `).",
        "DECODED = {",
        rows,
        "}",
    )[:-1]
    return "\n".join(o) + "\n"


# --- the docs: docs/preload-log.md and man/rocrtrace-log.5 -------------------------


def _doc_field(cat: Catalogue, f: Field, ell: str) -> str:
    if f.flexible:
        sub = cat.structs[f.flexible]
        inner = ", ".join(f"{g.label}={ell}" for g in sub.fields if g.show)
        return f"{f.label}=[{{{inner}}}, {ell}]"
    if f.show == "ptr":
        return f"{f.label}=[{f.elem_label or f.array}, {ell}]"
    return f.label


def _doc_rows(cat: Catalogue, ell: str) -> list[tuple[str, str, str, str]]:
    """(name, in, out, note) per decoded ioctl."""
    rows = []
    for io in cat.decoded:
        s = io.struct
        fin = ", ".join(_doc_field(cat, s.get(m), ell) for m in io.log_in) or "{}"
        fout = ", ".join(_doc_field(cat, s.get(m), ell) for m in io.log_out)
        notes = []
        if io.old_sizes:
            notes.append("request size " + " or ".join(str(x) for x in [*io.old_sizes, io.size]))
        if io.out_if and fout:
            notes.append(f"`=>` only when {io.out_if[0]} is {io.out_if[2]}")
        if any(s.get(m).show == "ptr" for m in io.log_in + io.log_out):
            notes.append("the array the pointer points to")
        if io.note:
            notes.append(io.note)
        rows.append((io.name, fin, fout, "; ".join(notes)))
    return rows


def render_markdown(cat: Catalogue) -> str:
    o = ["| ioctl | input fields | `=>` fields | note |", "|---|---|---|---|"]
    for name, fin, fout, note in _doc_rows(cat, "…"):
        o.append(f"| {name} | {fin} | {fout} | {note} |")
    return "\n".join(o) + "\n"


def _roff(s: str) -> str:
    s = s.replace("\\", "\\e").replace("-", "\\-").replace("`", "")
    return s.replace("=...", "=\\&...")


def render_man(cat: Catalogue) -> str:
    o = []
    for name, fin, fout, note in _doc_rows(cat, "..."):
        text = fin + (f" => {fout}" if fout else "") + (f" ({note})" if note else "") + "."
        lines = textwrap.wrap(_roff(text), 78, break_long_words=False, break_on_hyphens=False)
        # a line starting with . or ' would be a request
        o += [".TP", f".B {name}"] + ["\\&" + ln if ln[0] in ".'" else ln for ln in lines]
    return "\n".join(o) + "\n"


# --- files -----------------------------------------------------------------------

BEGIN, END = "BEGIN generated by catalogue/generate.py", "END generated"
MARKERS = {MARKDOWN: ("<!-- {} -->",), PYTHON: ("# --- {} ---",), MAN: ('.\\" {}',)}


def _spliced(path: Path, block: str) -> str:
    text = path.read_text()
    fmt = MARKERS[path][0]
    begin, end = fmt.format(BEGIN + " from catalogue/ioctls.toml: do not edit"), fmt.format(END)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise CatalogueError(f"{_rel(path)}: needs one {begin!r} and one {end!r} line")
    head, rest = text.split(begin + "\n", 1)
    _, tail = rest.split(end + "\n", 1)
    return head + begin + "\n" + block + end + "\n" + tail


def outputs(cat: Catalogue) -> dict[Path, str]:
    return {
        C_HEADER: render_c(cat),
        RUST: render_rust(cat),
        PYTHON: _spliced(PYTHON, render_python(cat)),
        MARKDOWN: _spliced(MARKDOWN, render_markdown(cat)),
        MAN: _spliced(MAN, render_man(cat)),
    }


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = ap.parse_args(argv)
    try:
        files = outputs(load())
    except (CatalogueError, KeyError, ValueError, tomllib.TOMLDecodeError) as e:
        print(f"{_rel(SOURCE)}: {e}", file=sys.stderr)
        return 2
    stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"stale: {_rel(p)} (run python catalogue/generate.py)", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(files[p])
        print(f"wrote {_rel(p)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
