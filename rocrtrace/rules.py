"""The rule catalogue: stable ids, default severities, what each means."""
from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("error", "warning", "note")
SEVERITY_RANK = {"error": 3, "warning": 2, "note": 1, "never": 99}


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str
    help: str


_RULES = [
    Rule("svm-over-revoke", "error",
         "a SET_ATTR takes a GPU's access from pages of a live claim",
         "A SET_ATTR (normally a deregistration's NO_ACCESS) removed a GPU's access from pages "
         "that another live registration or application range still relies on. The cause says "
         "why when it can be told: shared-page (the claims meet only on boundary pages), "
         "enclosing-range (the victim starts left of the revoke and covers it), grown-extent "
         "(the revoke reaches past the claim it releases), cross-thread-order (the victim was "
         "granted on another thread after the revoke began, or their windows overlap)."),
    Rule("svm-coherency-downgrade", "error",
         "a SET_ATTR clears COHERENT/EXT_COHERENT where a live claim set it",
         "Fine-grained pages of a live claim were made coarse-grained by another call's "
         "CLR_FLAGS: the GPU reads stale data and nothing faults."),
    Rule("svm-stale-no-access", "warning",
         "a registration relying on default access covers pages left NO_ACCESS",
         "A registration that grants no GPU itself covers pages an earlier revoke left "
         "NO_ACCESS: the VA was reused without munmap and the runtime did not re-grant."),
    Rule("svm-unmap-registered", "warning",
         "munmap/mremap removes pages of a registration still locked",
         "Memory was unmapped while registered. Without intent calls the end of a registration "
         "is not always visible, so the same event is only a note."),
    Rule("svm-bad-range", "warning",
         "SET_ATTR with an unaligned or empty range, or one that failed",
         "The kernel rejects unaligned or zero start/size with EINVAL; EFAULT, EADDRINUSE and "
         "others mean the range was not ordinary mapped memory. EINTR/EAGAIN retries are not "
         "findings."),
    Rule("svm-model-mismatch", "note",
         "a GET_ATTR answer differs from the replayed model",
         "The kernel's answer to a GET_ATTR query disagrees with what rocrtrace's interval "
         "model predicts for those pages: the trace is missing events or the model is wrong."),
    Rule("fd-double-close", "error",
         "close, or a bounded close_range, of an fd the trace already closed",
         "close() of a descriptor the trace already closed with nothing re-creating it (the "
         "kernel's EBADF proves it was not open), or a bounded close_range(a, b) over fds this "
         "program already closed (close_range never fails, so the trace's own closes are the "
         "evidence; not in a child between fork and execve). dup2/dup3 onto a free number is "
         "not a close. The first close of the pair may be the culprit: both are shown."),
    Rule("fd-bad-fd", "warning",
         "a close or use given an fd that was never open",
         "A negative fd (an fd variable reset to -1 and used anyway, dup2(0, -4)), or, in a "
         "trace that starts at execve (or a preload start snapshot), a number never seen open "
         "that got EBADF (valgrind's invalid file descriptor); a note where the trace did not "
         "see the process start or in a child between fork and execve. A close-all sweep - "
         "on one thread, at least 4 closes of strictly increasing numbers with no other call "
         "in between, more than half (and at least two) failing with EBADF - is one note, "
         "never an error, whatever the trace saw of those numbers before; an open-ended "
         "close_range(N, ~0U) or closefrom(N) is never a finding."),
    Rule("fd-close-reused", "warning",
         "a close hits an fd number re-created by another owner",
         "The fd number was closed and re-created by another creator. Each incarnation's owner "
         "is the component (runtime, libdrm, amd-smi, a library, the program) of its creating "
         "call's innermost frame; a close whose stack is in the old fd's owner and not in the "
         "new one's, or that is followed by the new owner's EBADF on that number, was meant "
         "for the old descriptor (fdsan's wrong owner)."),
    Rule("fd-use-after-close", "error",
         "a read, write, ioctl, mmap or other use of a closed fd (EBADF)",
         "A call that does work on a descriptor (I/O, ioctl, mmap, an import, sendmsg ...) "
         "failed with EBADF after the trace closed it, on any thread, or while another "
         "thread's close of it was in progress (their windows overlap). Probes - fstat, "
         "newfstatat/statx with AT_EMPTY_PATH, fcntl(F_GETFD/F_GETFL/F_SETFD), poll and select "
         "entries - expect EBADF as an answer and are never uses."),
    Rule("fd-leak", "warning",
         "a GPU-object fd still open when its process exits",
         "A dma-buf, PRIME, sync_file or other GPU-object fd was never closed before the "
         "process exited (a note when the trace merely ends). Device fds held until exit are "
         "normal. --all-fds also lists other fds still open at exit (fd-open-at-exit)."),
    Rule("fd-open-at-exit", "note",
         "with --all-fds: an fd the program opened and still holds at exit",
         "valgrind --track-fds's open-fd list: a non-GPU fd the program opened itself (not "
         "inherited, not 0-2, not a device fd) still open when its process exited, with its "
         "creating call and stack. Reported only with analyze --all-fds."),
    Rule("fd-held-open", "note",
         "an exported dma-buf fd stays open long after its last use",
         "Exported dma-buf fds held open for a handle's whole life; the peak of simultaneously "
         "open dma-buf fds and its growth per allocation."),
    Rule("fd-exhaustion", "error",
         "EMFILE/ENFILE: the fd table filled up",
         "A call failed with EMFILE or ENFILE; the finding names the fd kinds that filled the "
         "table."),
    Rule("dmabuf-reexport", "note",
         "the same buffer exported repeatedly",
         "One buffer was exported to a dma-buf fd again and again (per-chunk x per-agent "
         "amplification)."),
    Rule("bo-double-free", "error",
         "FREE_MEMORY_OF_GPU or GEM_CLOSE of a handle already freed",
         "A KFD handle freed twice, or a GEM handle closed twice in one DRM file, without a "
         "call re-creating it in between."),
    Rule("trace-unparsed", "note",
         "lines that could not be parsed",
         "Lines of the input that no parser rule matched: count and first line numbers."),
    Rule("trace-incomplete", "note",
         "the trace does not show everything",
         "Attach mid-run, truncated end, unfinished calls, missing capture coverage."),
]

RULES: dict[str, Rule] = {r.id: r for r in _RULES}


def rank(severity: str) -> int:
    return SEVERITY_RANK[severity]
