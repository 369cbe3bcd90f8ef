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
         "granted on another thread after the revoke began, or their windows overlap)."
         " Liveness must be proven: an error only when the victim was registered before the call "
         "began and the trace shows its release (unlock, its own revoke, munmap) beginning after "
         "the call landed; a warning naming cross-thread-order when that depends on the order of "
         "overlapping windows; a note when its release may have begun first (a runtime that "
         "computes a revoke under its lock and issues it later, or one that deregisters without "
         "an ioctl, which the coverage section names)."),
    Rule("svm-coherency-downgrade", "error",
         "a SET_ATTR clears COHERENT/EXT_COHERENT where a live claim set it",
         "Fine-grained pages of a live claim were made coarse-grained by another call's "
         "CLR_FLAGS: the GPU reads stale data and nothing faults. Severity follows the "
         "victim's proven liveness as for svm-over-revoke."),
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
         "evidence; a span most of whose numbers held fds the trace saw, and not pieces of a "
         "sweep around kept fds that end in an open-ended range; also after an earlier sweep, "
         "and in a child between fork and execve over what the child itself closed). A "
         "thread with its own fd table (unshare(CLONE_FILES), close_range(CLOSE_RANGE_UNSHARE)) "
         "is judged on its copy. dup2/dup3 onto a free number is "
         "not a close. The first close of the pair may be the culprit: both are shown. An "
         "error when the fd is a GPU fd (kfd, render or accel node, dma-buf, sync_file), or "
         "when another thread or process shared the fd table, or when the trace did not see "
         "the process start: another owner could have been handed the number in between. A "
         "warning otherwise (a process seen from execve with one thread: the second close "
         "closed nothing; shells close pipe ends twice)."),
    Rule("fd-bad-fd", "warning",
         "a close or use given an fd that was never open",
         "A negative fd (an fd variable reset to -1 and used anyway, dup2(0, -4); close(-1) "
         "alone does nothing and is only a note), or, in a "
         "trace that starts at execve (or a preload start snapshot), a number never seen open "
         "that got EBADF (valgrind's invalid file descriptor); a note where the trace did not "
         "see the process start or in a child between fork and execve. A close-all sweep - "
         "on one thread, at least 4 closes of strictly increasing (or strictly decreasing) "
         "numbers with no fd created in between (a readlink of /proc/self/fd/N, a probe or a "
         "write may come between them), more than half (and at least two) failing with "
         "EBADF; close_range pieces around kept fds "
         "ending in an open-ended one; closing each number a /proc/self/fd listing returned "
         "- is one note, never an error, whatever the trace saw of those numbers before; an "
         "open-ended close_range(N, ~0U) or closefrom(N) is never a finding. A number only a result "
         "strace made up (-e inject: dup2(3, 20) = 20 (INJECTED)) announced is a note."),
    Rule("fd-close-reused", "warning",
         "a close hits an fd number re-created by another owner",
         "The fd number was closed and re-created by another creator. Each incarnation's owner "
         "is the component (runtime, libdrm, amd-smi, a library, the program) of its creating "
         "call's innermost frame; a close whose stack is in the old fd's owner and not in the "
         "new one's, or that is followed by the new owner's EBADF on that number, was meant "
         "for the old descriptor (fdsan's wrong owner). Without stacks the threads tell the "
         "owners apart: the close ran on the thread that made or used the old fd, the new one "
         "was made on another thread, and that thread's next use of the number got EBADF."),
    Rule("fd-use-after-close", "error",
         "a read, write, ioctl, mmap or other use of a closed fd (EBADF)",
         "A call that does work on a descriptor (I/O, ioctl, mmap, an import, sendmsg ...) "
         "failed with EBADF after the trace closed it, on any thread, or while another "
         "thread's close of it was in progress (their windows overlap). Probes - fstat, "
         "newfstatat/statx with AT_EMPTY_PATH, fcntl(F_GETFD/F_GETFL/F_SETFD; F_SETFD on an fd "
         "an execve closed for its close-on-exec flag is a use), poll and select "
         "entries - expect EBADF as an answer and are never uses; so is fcntl(N, F_DUPFD) "
         "followed on its thread by dup2/dup3 onto N (a shell saving fd N before a "
         "redirection)."),
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


# --- what `rocrtrace rules ID` and the text report's help: line say ---------
# Kept apart from the catalogue above so that new rules and these texts merge
# independently; a rule without an entry here falls back to its help text.

@dataclass(frozen=True)
class RuleDoc:
    example: str    # what it looks like in a trace
    fix: str        # the one-line help: of the text report


DOCS: dict[str, RuleDoc] = {
    "svm-over-revoke": RuleDoc(
        "lock(A, 8 pages) ... lock(A+3p, 1 page) ... unlock(A+3p) -> SET_ATTR NO_ACCESS on "
        "[A+3p, A+4p): the 8-page claim loses the GPU on page 4",
        "revoke only the pages no other live registration covers (split the range against "
        "live claims), or keep the range's access until the last claim on it ends"),
    "svm-coherency-downgrade": RuleDoc(
        "SET_ATTR CLR_FLAGS(COHERENT) on pages a live claim registered fine-grained",
        "clear COHERENT/EXT_COHERENT only on pages no other live fine-grained claim covers"),
    "svm-stale-no-access": RuleDoc(
        "free(p) without munmap; p = malloc(...) again; register p with no ACCESS attribute: "
        "the pages are still NO_ACCESS from the first deregistration",
        "grant access explicitly when registering (ACCESS/ACCESS_IN_PLACE for the GPUs), or "
        "unmap the VA before it is reused"),
    "svm-unmap-registered": RuleDoc(
        "hsa_amd_memory_lock(p) ... munmap(p) ... hsa_amd_memory_unlock(p)",
        "unlock (deregister) the memory before freeing or unmapping it"),
    "svm-bad-range": RuleDoc(
        "AMDKFD_IOC_SVM SET_ATTR start_addr=0x7f0000000100 (not page aligned) = -1 EINVAL",
        "pass page-aligned, non-empty ranges of mapped memory; check the ioctl's result"),
    "svm-model-mismatch": RuleDoc(
        "GET_ATTR answers ACCESS for a GPU the replayed trace revoked",
        "capture the whole run (from exec) with the preload method; report it if it persists"),
    "fd-double-close": RuleDoc(
        "close(3) = 0 ... close(3) = -1 EBADF, with nothing opening fd 3 in between",
        "close each fd once: reset the variable to -1 after close, and find which of the two "
        "closes does not own the fd"),
    "fd-bad-fd": RuleDoc(
        "read(-1, ...) = -1 EBADF, or read(57, ...) = -1 EBADF on a number never opened",
        "check the fd before use; an fd variable reset to -1 is not an fd"),
    "fd-close-reused": RuleDoc(
        "close(5) ... open() = 5 (someone else's) ... close(5) from the first owner's code",
        "the first owner must forget the fd when it closes it; give each fd one owner"),
    "fd-use-after-close": RuleDoc(
        "close(7) = 0 ... ioctl(7, ...) = -1 EBADF",
        "do not use an fd after closing it; close it when its last user is done"),
    "fd-leak": RuleDoc(
        "AMDKFD_IOC_EXPORT_DMABUF => dmabuf_fd=12, never closed before exit_group",
        "close the dma-buf / PRIME / sync_file fd when the import is done (after the "
        "importer took its own reference)"),
    "fd-open-at-exit": RuleDoc(
        "openat(...) = 5 and no close(5) before the process exits",
        "close the fd, or open it O_CLOEXEC and document that it lives until exit"),
    "fd-held-open": RuleDoc(
        "an exported dma-buf fd last used at t=1.0 s still open at t=60 s",
        "close exported fds right after the importer has imported them"),
    "fd-exhaustion": RuleDoc(
        "openat(...) = -1 EMFILE (Too many open files), 1021 dma-buf fds open",
        "close fds you no longer need (a handle per allocation keeps one fd each); raise "
        "RLIMIT_NOFILE only after that"),
    "dmabuf-reexport": RuleDoc(
        "the same buffer handle exported to a dma-buf fd 16 times",
        "export a buffer once and share the fd, or close each export after use"),
    "bo-double-free": RuleDoc(
        "AMDKFD_IOC_FREE_MEMORY_OF_GPU handle=0x... twice, or DRM_IOCTL_GEM_CLOSE twice",
        "free each buffer handle once; forget the handle after freeing it"),
    "trace-unparsed": RuleDoc(
        "a line cut by a crash, or output of the program mixed into the strace log",
        "write the trace to its own file (strace -o FILE), or check the listed lines"),
    "trace-incomplete": RuleDoc(
        "attached with strace -p, or the log ends in the middle of a call",
        "capture from the program's start to its exit (rocrtrace capture -- CMD)"),
}


def fix_of(rule_id: str) -> str:
    doc = DOCS.get(rule_id)
    return doc.fix if doc else ""
