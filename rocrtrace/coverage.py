"""What a run's inputs could and could not show: the trace-unparsed and
trace-incomplete findings, and the coverage section of every report.  Pure
functions of the inputs' accounting (InputInfo) and the models' limits."""

from __future__ import annotations

from .events import InputInfo
from .findings import Finding


def input_findings(info: InputInfo) -> list[Finding]:
    """trace-unparsed and trace-incomplete: what the input could not show."""
    out: list[Finding] = []
    if info.unparsed:
        first = ", ".join(str(ln) for ln, _ in info.unparsed_samples[:10])
        extra = f" ({info.too_long} over-long)" if info.too_long else ""
        out.append(
            Finding(
                rule="trace-unparsed",
                message=f"{info.unparsed} line(s) of {info.file} could not be parsed{extra}; first at line(s) {first}",
                event=None,
                subject={"kind": "input", "file": info.file},
                key=("unparsed",),
                file=info.file,
                line=info.unparsed_samples[0][0] if info.unparsed_samples else None,
                details={
                    "count": info.unparsed,
                    "samples": [{"line": ln, "text": text} for ln, text in info.unparsed_samples],
                },
            )
        )
    reasons = []
    if info.format == "strace" and info.lines and not info.events and not info.unparsed:
        reasons.append(
            "no complete call: only strace's own messages (attach, detach, exit, a -c summary table) or calls cut short"
        )
    lost = str(info.header.get("lost", "0")) if info.format == "preload" else "0"
    if lost not in ("", "0"):
        reasons.append(
            f"{lost} record(s) lost: the capture library could not write them "
            "('# lost' line), so calls are missing from the log"
        )
    if info.format == "preload" and info.header.get("window-lost"):
        reasons.append(
            "the program unmapped or mapped over the capture library's log window: "
            "no record after that ('# capture-window-lost')"
        )
    if info.unfinished:
        reasons.append(f"{info.unfinished} call(s) never completed")
    if info.orphans:
        reasons.append(f"{info.orphans} call(s) resumed with no entry (attached mid-run or cut)")
    if info.detached:
        reasons.append(f"strace detached from {info.detached} call(s)")
    if info.ends_mid_line:
        reasons.append("the last line is cut short (truncated end)")
    if info.format == "preload" and not info.exit_seen:
        reasons.append(
            "no '# exit' line: the process died where the capture library "
            "could not see it (SIGKILL, raw exit_group, a crash inside a signal "
            "handler; other fatal signals are logged as '# exit signal=NAME') "
            "or the log was cut; leaks are judged as notes"
        )
    if reasons:
        out.append(
            Finding(
                rule="trace-incomplete",
                message=f"{info.file}: " + "; ".join(reasons),
                event=None,
                subject={"kind": "input", "file": info.file},
                key=("incomplete", *sorted(r.split(" ", 1)[-1] for r in reasons)),
                file=info.file,
                details={"reasons": reasons},
            )
        )
    return out


# src/py/analyze.rs SVM_RUNTIME: the limits entry naming the runtime's behaviour
SVM_RUNTIME = "SVM runtime: "


def coverage(infos: list[InputInfo], limits: list[str]) -> dict[str, list[str]]:
    shows: list[str] = []
    cannot: list[str] = []
    advice: list[str] = []
    fmts = {i.format for i in infos}
    injected = sum(i.injected for i in infos)
    if injected:
        cannot.append(
            f"{injected} call(s) with a result strace made up (-e inject, -e fault): "
            "the kernel never ran them, so the models replay nothing of them"
        )
    if "strace" in fmts:
        shows.append(
            "strace: fd lifetimes (open, dup, close, close_range, exec, fork), "
            "ioctl request (type, nr, size) and results"
        )
        cannot.append("strace prints no ioctl argument structs: no SVM ranges or attributes, so no SVM analysis")
        cannot.append(
            "strace cannot see fds created inside ioctl structs (dma-buf exports, "
            "PRIME fds): they appear only at their first use or close"
        )
        advice.append(
            "run 'rocrtrace capture -- CMD' (preload method) to decode ioctl "
            "structs: SVM ranges, exported dma-buf fds, buffer handles"
        )
        if not any(i.has_time for i in infos if i.format == "strace"):
            cannot.append("no timestamps: order is file order, concurrency cannot be told (capture with -ttt -T)")
        if not any(i.has_stacks for i in infos if i.format == "strace"):
            advice.append("add -k to strace (or --stack-depth to capture) for call stacks")
        if not any(i.has_decorations for i in infos if i.format == "strace"):
            cannot.append(
                "no -y decorations: fd kinds (dma-buf, /dev/kfd, render node) are "
                "unknown unless the open is visible (capture with -yy)"
            )
    if "preload" in fmts:
        shows.append(
            "preload: decoded KFD/DRM ioctl structs (SVM ranges and attributes, "
            "dma-buf fds, buffer handles), fd lifetimes, mmap/munmap"
        )
        cannot.append(
            "preload: closes done inside glibc (fclose, closedir) and inline "
            "system calls (not through syscall(2)) are not seen; fd snapshots "
            "reconcile them at exit"
        )
        if not any(i.intent_calls for i in infos if i.format == "preload"):
            cannot.append("no intent calls (hsa_amd_memory_lock/unlock): registrations are inferred from ioctl shapes")
        if any(not i.exit_seen for i in infos if i.format == "preload"):
            cannot.append("a preload log has no '# exit' line: leaks at its end are notes")
    if "tinygrad" in fmts:
        shows.append(
            "tinygrad: KFD ioctl structs decoded after each call (SVM ranges and "
            "attributes, buffer handles, queues, events) and other ioctls by "
            "(type, nr, size) with their fd"
        )
        cannot.append(
            "tinygrad IOCTL=1 logs show only ioctls: no open, close, dup, mmap or "
            "exit, so no fd lifetimes, leaks or use-after-close"
        )
        cannot.append(
            "tinygrad: no pids or threads (everything is one process, no concurrency) and no fd on named KFD lines"
        )
        cannot.append(
            "tinygrad: values are printed after the call and failures without "
            "errno (ret -1 only): SET_ATTR inputs the kernel rewrote are lost and "
            "failed frees cannot be judged"
        )
    for i in infos:
        # what reading the file took: a preamble skipped, indentation removed
        how = []
        if i.preamble:
            how.append(f"{i.preamble} preamble line(s) before the first trace line skipped")
        if i.layout:
            how.append(i.layout + " (removed)")
        if i.crlf:
            how.append("CRLF line ends")
        if how:
            shows.append(f"{i.file}: " + "; ".join(how))
    if "preload" in fmts or "tinygrad" in fmts:  # the SVM model's limits only matter where it ran
        for lim in limits:
            if lim.startswith(SVM_RUNTIME):
                # the runtime's registration behaviour, as the trace shows it
                if lim not in shows:
                    shows.append(lim)
            elif lim not in cannot:
                cannot.append(lim)
    return {"shows": shows, "cannot_show": cannot, "advice": advice}
