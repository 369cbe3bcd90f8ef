//! The rule catalogue: every rule rocrtrace reports, declared once.
//!
//! Each entry holds what a rule is (its stable id and default severity) and
//! everything said about it: the one-line summary (`rocrtrace rules`), the
//! explanation, an example of what it looks like in a trace and the fix
//! (`rocrtrace rules ID`, the text report's `help:` line, SARIF's rule
//! metadata).  A finding names its rule by the [`Rule`] variant, so an id
//! mistyped at a `Finding::new` site does not compile.  Python reads the
//! catalogue through `rocrtrace._engine.rule_catalogue()` (rocrtrace/rules.py),
//! and the README's and the man page's rule lists are generated from it
//! (`python docs/gen_rules.py`); fixtures/rules/ holds a trace that fires each
//! rule.
//!
//! Adding a rule: an entry here, the `Finding::new(Rule::New, ..)` that
//! reports it, a trace in fixtures/rules/generate.py; then run the two
//! generators.

use std::fmt;

/// How bad a finding is: a rule's default, or what a model decided
/// for one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    /// Most severe first, as reports rank them.
    pub const ALL: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Note];

    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the catalogue says about one rule.
#[derive(Debug)]
pub struct RuleInfo {
    /// stable, kebab-case: what reports, `--enable` and baselines name
    pub id: &'static str,
    pub severity: Severity,
    /// one line: what fires it (`rocrtrace rules`, SARIF's shortDescription)
    pub summary: &'static str,
    /// what it means and when it fires, with the severity's exceptions
    pub help: &'static str,
    /// what it looks like in a trace
    pub example: &'static str,
    /// the one-line fix (the text report's `help:` line)
    pub fix: &'static str,
}

/// Declares [`Rule`] with one variant per entry, its catalogue order
/// ([`Rule::ALL`], the order reports list rules in) and its [`RuleInfo`].
macro_rules! rules {
    ($(
        $variant:ident {
            id: $id:literal,
            severity: $severity:ident,
            summary: $summary:literal,
            help: $help:literal,
            example: $example:literal,
            fix: $fix:literal $(,)?
        }
    )*) => {
        /// A rule of the catalogue; [`Rule::info`] says everything about it.
        /// Rules order as the catalogue lists them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule {
            $($variant,)*
        }

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            pub const fn info(self) -> &'static RuleInfo {
                match self {
                    $(Rule::$variant => &RuleInfo {
                        id: $id,
                        severity: Severity::$severity,
                        summary: $summary,
                        help: $help,
                        example: $example,
                        fix: $fix,
                    },)*
                }
            }
        }
    };
}

rules! {
    SvmOverRevoke {
        id: "svm-over-revoke",
        severity: Error,
        summary: "a SET_ATTR takes a GPU's access from pages of a live claim",
        help: "A SET_ATTR (normally a deregistration's NO_ACCESS) removed a GPU's access from \
            pages that another live registration or application range still relies on. The cause \
            says why when it can be told: shared-page (the claims meet only on boundary pages), \
            enclosing-range (the victim starts left of the revoke and covers it), grown-extent \
            (the revoke reaches past the claim it releases), cross-thread-order (the victim was \
            granted on another thread after the revoke began, or their windows overlap). \
            Liveness must be proven: an error only when the victim was registered before the \
            call began and the trace shows its release (unlock, its own revoke, munmap) \
            beginning after the call landed; a warning naming cross-thread-order when that \
            depends on the order of overlapping windows; a note when its release may have begun \
            first (a runtime that computes a revoke under its lock and issues it later, or one \
            that deregisters without an ioctl, which the coverage section names); nothing when \
            the revoke's range shows the runtime had already dropped the victim (it leaves out \
            of its revokes the pages its other registrations cover, yet took the victim's \
            boundary page after the victim was mapped).",
        example: "lock(A, 8 pages) ... lock(A+3p, 1 page) ... unlock(A+3p) -> SET_ATTR NO_ACCESS \
            on [A+3p, A+4p): the 8-page claim loses the GPU on page 4",
        fix: "revoke only the pages no other live registration covers (split the range against \
            live claims), or keep the range's access until the last claim on it ends",
    }
    SvmCoherencyDowngrade {
        id: "svm-coherency-downgrade",
        severity: Error,
        summary: "a SET_ATTR clears COHERENT/EXT_COHERENT where a live claim set it",
        help: "Fine-grained pages of a live claim were made coarse-grained by another call's \
            CLR_FLAGS: the GPU reads stale data and nothing faults. Severity follows the \
            victim's proven liveness as for svm-over-revoke.",
        example: "SET_ATTR CLR_FLAGS(COHERENT) on pages a live claim registered fine-grained",
        fix: "clear COHERENT/EXT_COHERENT only on pages no other live fine-grained claim covers",
    }
    SvmStaleNoAccess {
        id: "svm-stale-no-access",
        severity: Warning,
        summary: "a registration relying on default access covers pages left NO_ACCESS",
        help: "A registration that grants no GPU itself covers pages an earlier revoke left \
            NO_ACCESS: the VA was reused without munmap and the runtime did not re-grant.",
        example: "free(p) without munmap; p = malloc(...) again; register p with no ACCESS \
            attribute: the pages are still NO_ACCESS from the first deregistration",
        fix: "grant access explicitly when registering (ACCESS/ACCESS_IN_PLACE for the GPUs), or \
            unmap the VA before it is reused",
    }
    SvmUnmapRegistered {
        id: "svm-unmap-registered",
        severity: Warning,
        summary: "munmap/mremap removes pages of a registration still locked",
        help: "Memory was unmapped while registered. Without intent calls the end of a \
            registration is not always visible, so the same event is only a note.",
        example: "hsa_amd_memory_lock(p) ... munmap(p) ... hsa_amd_memory_unlock(p)",
        fix: "unlock (deregister) the memory before freeing or unmapping it",
    }
    SvmBadRange {
        id: "svm-bad-range",
        severity: Warning,
        summary: "SET_ATTR with an unaligned or empty range, or one that failed",
        help: "The kernel rejects unaligned or zero start/size with EINVAL; EFAULT, EADDRINUSE \
            and others mean the range was not ordinary mapped memory. EINTR/EAGAIN retries are \
            not findings.",
        example: "AMDKFD_IOC_SVM SET_ATTR start_addr=0x7f0000000100 (not page aligned) = -1 \
            EINVAL",
        fix: "pass page-aligned, non-empty ranges of mapped memory; check the ioctl's result",
    }
    SvmModelMismatch {
        id: "svm-model-mismatch",
        severity: Note,
        summary: "a GET_ATTR answer differs from the replayed model",
        help: "The kernel's answer to a GET_ATTR query disagrees with what rocrtrace's interval \
            model predicts for those pages: the trace is missing events or the model is wrong.",
        example: "GET_ATTR answers ACCESS for a GPU the replayed trace revoked",
        fix: "capture the whole run (from exec) with the preload method; report it if it persists",
    }
    FdDoubleClose {
        id: "fd-double-close",
        severity: Error,
        summary: "close, or a bounded close_range, of an fd the trace already closed",
        help: "close() of a descriptor the trace already closed with nothing re-creating it (the \
            kernel's EBADF proves it was not open), or a bounded close_range(a, b) over fds this \
            program already closed (close_range never fails, so the trace's own closes are the \
            evidence; a span most of whose numbers held fds the trace saw, and not pieces of a \
            sweep around kept fds that end in an open-ended range; also after an earlier sweep, \
            and in a child between fork and execve over what the child itself closed). A thread \
            with its own fd table (unshare(CLONE_FILES), close_range(CLOSE_RANGE_UNSHARE)) is \
            judged on its copy. dup2/dup3 onto a free number is not a close. The first close of \
            the pair may be the culprit: both are shown. An error when the fd is a GPU fd (kfd, \
            render or accel node, dma-buf, sync_file), or when another thread or process shared \
            the fd table, or when the trace did not see the process start: another owner could \
            have been handed the number in between. A warning otherwise (a process seen from \
            execve with one thread: the second close closed nothing; shells close pipe ends \
            twice).",
        example: "close(3) = 0 ... close(3) = -1 EBADF, with nothing opening fd 3 in between",
        fix: "close each fd once: reset the variable to -1 after close, and find which of the two \
            closes does not own the fd",
    }
    FdBadFd {
        id: "fd-bad-fd",
        severity: Warning,
        summary: "a close or use given an fd that was never open",
        help: "A negative fd (an fd variable reset to -1 and used anyway, dup2(0, -4); close(-1) \
            alone does nothing and is only a note), or, in a trace that starts at execve (or a \
            preload start snapshot), a number never seen open that got EBADF (valgrind's invalid \
            file descriptor); a note where the trace did not see the process start or in a child \
            between fork and execve. A close-all sweep - on one thread, at least 4 closes of \
            strictly increasing (or strictly decreasing) numbers with no fd created in between \
            (a readlink of /proc/self/fd/N, a probe or a write may come between them), more than \
            half (and at least two) failing with EBADF; close_range pieces around kept fds \
            ending in an open-ended one; closing each number a /proc/self/fd listing returned - \
            is one note, never an error, whatever the trace saw of those numbers before; an \
            open-ended close_range(N, ~0U) or closefrom(N) is never a finding. A number only a \
            result strace made up (-e inject: dup2(3, 20) = 20 (INJECTED)) announced is a note.",
        example: "read(-1, ...) = -1 EBADF, or read(57, ...) = -1 EBADF on a number never opened",
        fix: "check the fd before use; an fd variable reset to -1 is not an fd",
    }
    FdCloseReused {
        id: "fd-close-reused",
        severity: Warning,
        summary: "a close hits an fd number re-created by another owner",
        help: "The fd number was closed and re-created by another creator. Each incarnation's \
            owner is the component (runtime, libdrm, amd-smi, a library, the program) of its \
            creating call's innermost frame; a close whose stack is in the old fd's owner and \
            not in the new one's, or that is followed by the new owner's EBADF on that number, \
            was meant for the old descriptor (fdsan's wrong owner). Without stacks the threads \
            tell the owners apart: the close ran on the thread that made or used the old fd, the \
            new one was made on another thread, and that thread's next use of the number got \
            EBADF.",
        example: "close(5) ... open() = 5 (someone else's) ... close(5) from the first owner's \
            code",
        fix: "the first owner must forget the fd when it closes it; give each fd one owner",
    }
    FdUseAfterClose {
        id: "fd-use-after-close",
        severity: Error,
        summary: "a read, write, ioctl, mmap or other use of a closed fd (EBADF)",
        help: "A call that does work on a descriptor (I/O, ioctl, mmap, an import, sendmsg ...) \
            failed with EBADF after the trace closed it, on any thread, or while another \
            thread's close of it was in progress (their windows overlap). Probes - fstat, \
            newfstatat/statx with AT_EMPTY_PATH, fcntl(F_GETFD/F_GETFL/F_SETFD; F_SETFD on an fd \
            an execve closed for its close-on-exec flag is a use), poll and select entries - \
            expect EBADF as an answer and are never uses; so is fcntl(N, F_DUPFD) followed on \
            its thread by dup2/dup3 onto N (a shell saving fd N before a redirection). A \
            runtime call that hands its caller an fd number the trace closed and nothing \
            re-created (hsa_amd_vmem_export_shareable_handle returning a cached fd) is this \
            rule at the handover.",
        example: "close(7) = 0 ... ioctl(7, ...) = -1 EBADF",
        fix: "do not use an fd after closing it; close it when its last user is done",
    }
    FdLeak {
        id: "fd-leak",
        severity: Warning,
        summary: "a GPU-object fd still open when its process exits",
        help: "A dma-buf, PRIME, sync_file or other GPU-object fd was never closed before the \
            process exited (a note when the trace merely ends). Device fds held until exit are \
            normal. --all-fds also lists other fds still open at exit (fd-open-at-exit).",
        example: "AMDKFD_IOC_EXPORT_DMABUF => dmabuf_fd=12, never closed before exit_group",
        fix: "close the dma-buf / PRIME / sync_file fd when the import is done (after the \
            importer took its own reference)",
    }
    FdOpenAtExit {
        id: "fd-open-at-exit",
        severity: Note,
        summary: "with --all-fds: an fd the program opened and still holds at exit",
        help: "valgrind --track-fds's open-fd list: a non-GPU fd the program opened itself (not \
            inherited, not 0-2, not a device fd) still open when its process exited, with its \
            creating call and stack. Reported only with analyze --all-fds.",
        example: "openat(...) = 5 and no close(5) before the process exits",
        fix: "close the fd, or open it O_CLOEXEC and document that it lives until exit",
    }
    FdHeldOpen {
        id: "fd-held-open",
        severity: Note,
        summary: "an exported dma-buf fd stays open long after its last use",
        help: "Exported dma-buf fds held open for a handle's whole life; the peak of \
            simultaneously open dma-buf fds and its growth per allocation.",
        example: "an exported dma-buf fd last used at t=1.0 s still open at t=60 s",
        fix: "close exported fds right after the importer has imported them",
    }
    FdExhaustion {
        id: "fd-exhaustion",
        severity: Error,
        summary: "EMFILE/ENFILE: the fd table filled up",
        help: "A call failed with EMFILE or ENFILE; the finding names the fd kinds that filled \
            the table.",
        example: "openat(...) = -1 EMFILE (Too many open files), 1021 dma-buf fds open",
        fix: "close fds you no longer need (a handle per allocation keeps one fd each); raise \
            RLIMIT_NOFILE only after that",
    }
    DmabufReexport {
        id: "dmabuf-reexport",
        severity: Note,
        summary: "the same buffer exported repeatedly",
        help: "One buffer was exported to a dma-buf fd again and again (per-chunk x per-agent \
            amplification).",
        example: "the same buffer handle exported to a dma-buf fd 16 times",
        fix: "export a buffer once and share the fd, or close each export after use",
    }
    BoDoubleFree {
        id: "bo-double-free",
        severity: Error,
        summary: "FREE_MEMORY_OF_GPU or GEM_CLOSE of a handle already freed",
        help: "A KFD handle freed twice, or a GEM handle closed twice in one DRM file, without a \
            call re-creating it in between.",
        example: "AMDKFD_IOC_FREE_MEMORY_OF_GPU handle=0x... twice, or DRM_IOCTL_GEM_CLOSE twice",
        fix: "free each buffer handle once; forget the handle after freeing it",
    }
    TraceUnparsed {
        id: "trace-unparsed",
        severity: Note,
        summary: "lines that could not be parsed",
        help: "Lines of the input that no parser rule matched: count and first line numbers.",
        example: "a line cut by a crash, or output of the program mixed into the strace log",
        fix: "write the trace to its own file (strace -o FILE), or check the listed lines",
    }
    TraceIncomplete {
        id: "trace-incomplete",
        severity: Note,
        summary: "the trace does not show everything",
        help: "Attach mid-run, truncated end, unfinished calls, missing capture coverage.",
        example: "attached with strace -p, or the log ends in the middle of a call",
        fix: "capture from the program's start to its exit (rocrtrace capture -- CMD)",
    }
}

impl Rule {
    pub const fn id(self) -> &'static str {
        self.info().id
    }

    /// The severity a finding of this rule has unless its model says otherwise.
    pub const fn severity(self) -> Severity {
        self.info().severity
    }

    /// The rule an id names (`--enable`, configuration tables).
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique() {
        let ids: HashSet<_> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), Rule::ALL.len());
    }

    #[test]
    fn ids_are_kebab_case_with_a_known_family() {
        for r in Rule::ALL {
            let id = r.id();
            let words: Vec<_> = id.split('-').collect();
            assert!(words.len() >= 2, "{id}: family-name");
            assert!(
                words
                    .iter()
                    .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())),
                "{id} is not kebab-case"
            );
            // SARIF tags a rule with its family (report/sarif.py)
            assert!(
                ["svm", "fd", "bo", "dmabuf", "trace"].contains(&words[0]),
                "{id}: unknown family"
            );
        }
    }

    #[test]
    fn every_rule_is_documented() {
        for r in Rule::ALL {
            let i = r.info();
            for (what, text) in [
                ("summary", i.summary),
                ("help", i.help),
                ("example", i.example),
                ("fix", i.fix),
            ] {
                assert!(!text.trim().is_empty(), "{r}: no {what}");
                assert_eq!(text, text.trim(), "{r}: {what} has edge whitespace");
                assert!(!text.contains("  "), "{r}: {what} has a double space");
                assert!(!text.contains('\n'), "{r}: {what} has a line break");
            }
            // one line in `rocrtrace rules`' table
            assert!(i.summary.len() <= 72, "{r}: summary too long");
            assert!(i.help.ends_with('.'), "{r}: help is not sentences");
        }
    }

    #[test]
    fn ids_name_their_rule() {
        for &r in Rule::ALL {
            assert_eq!(Rule::from_id(r.id()), Some(r));
            assert_eq!(r.to_string(), r.id());
        }
        assert_eq!(Rule::from_id("fd-double-closed"), None);
        assert_eq!(Rule::from_id(""), None);
    }

    #[test]
    fn severities_read_as_in_reports() {
        let names: Vec<_> = Severity::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["error", "warning", "note"]);
        assert_eq!(Rule::FdDoubleClose.severity(), Severity::Error);
        assert_eq!(Rule::FdOpenAtExit.severity(), Severity::Note);
    }
}
