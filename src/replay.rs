//! Replay: what the core learns from one trace's event stream besides the
//! models' findings (what the front's findings.Programs and
//! result.TraceFacts hold); analyze.rs feeds them next to the models.

use crate::events::{Event, Kind, Text};
use memchr::memmem::Finder;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Which executable each process runs (preload headers, execve, fork), for
/// the program part of a finding's fingerprint.
#[derive(Debug, Default, Clone)]
pub struct Programs {
    exe: HashMap<Option<u32>, Text>,
}

impl Programs {
    pub fn feed(&mut self, ev: &Event) {
        if ev.h.injected {
            return; // an execve strace made succeed ran nothing
        }
        let pid = ev.h.pid;
        match &ev.kind {
            Kind::ProcessInfo(p) => {
                if let Some(exe) = p.exe.as_ref().filter(|e| !e.0.is_empty()) {
                    self.exe.insert(pid, exe.clone());
                }
            }
            Kind::Exec(x) if ev.h.ret == Some(0) => {
                if let Some(path) = x.path.as_ref().filter(|p| !p.0.is_empty()) {
                    self.exe.insert(pid, path.clone());
                }
            }
            Kind::Clone(c) if !c.thread => {
                if let Some(r) = ev.h.ret.filter(|&r| r > 0)
                    && let Some(exe) = self.exe.get(&pid).cloned()
                {
                    self.exe.entry(u32::try_from(r).ok()).or_insert(exe);
                }
            }
            _ => {}
        }
    }

    /// pid -> executable, as the trace named them.
    pub fn exes(&self) -> impl Iterator<Item = (Option<u32>, &Text)> {
        self.exe.iter().map(|(&p, e)| (p, e))
    }

    /// The base name of the executable `pid` runs; "" when the trace never
    /// names it (then only the rest of the fingerprint tells programs apart).
    /// A process the trace saw no exec or fork of, in a one-program trace,
    /// runs that program.
    pub fn of(&self, pid: Option<u32>) -> Vec<u8> {
        let exe = self.exe.get(&pid).or_else(|| {
            let mut all = self.exe.values();
            let first = all.next()?;
            all.all(|e| e == first).then_some(first)
        });
        match exe {
            Some(e) => {
                let b = &e.0;
                let start = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
                b[start..].to_vec()
            }
            None => Vec::new(),
        }
    }
}

/// What the inputs contained that decides which caveats the coverage
/// section keeps (result.TraceFacts).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    pub svm_ioctls: u64,
    pub gpu_calls: u64,
}

impl Facts {
    pub fn feed(&mut self, ev: &Event) {
        let (ioctl, path) = match &ev.kind {
            Kind::Ioctl(k) => (k.ioctl, k.path.as_ref()),
            Kind::Close(k) => (None, k.path.as_ref()),
            Kind::Mmap(k) => (None, k.path.as_ref()),
            Kind::Exec(k) => (None, k.path.as_ref()),
            _ => (None, None),
        };
        if ioctl == Some("AMDKFD_IOC_SVM") {
            self.svm_ioctls += 1;
        }
        let gpu_name = ioctl.is_some_and(|n| {
            ["AMDKFD_", "DRM_", "AMDGPU_", "AMDXDNA_"]
                .iter()
                .any(|p| n.starts_with(p))
        });
        // searchers built once (memmem::find builds one a call, which cost
        // more than the search), and the path read only when the name did
        // not tell
        static KFD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"/dev/kfd"));
        static DRI: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"/dev/dri/"));
        let gpu_path =
            || path.is_some_and(|p| KFD.find(&p.0).is_some() || DRI.find(&p.0).is_some());
        if gpu_name || gpu_path() {
            self.gpu_calls += 1;
        }
    }

    pub fn add(&mut self, other: Facts) {
        self.svm_ioctls += other.svm_ioctls;
        self.gpu_calls += other.gpu_calls;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Clone as CloneEv, Exec, Header, ProcessInfo};

    fn ev(pid: u32, ret: i64, kind: Kind) -> Event {
        let h = Header {
            pid: Some(pid),
            ret: Some(ret),
            ..Default::default()
        };
        Event::new(h, kind)
    }

    #[test]
    fn programs_follow_exec_and_fork() {
        let mut p = Programs::default();
        p.feed(&ev(
            1,
            0,
            Kind::ProcessInfo(ProcessInfo {
                ppid: None,
                exe: Some("/usr/bin/rocminfo".into()),
                page_size: 4096,
            }),
        ));
        let fork = CloneEv {
            child: Some(2),
            thread: false,
            share_files: false,
            flags: 0,
        };
        p.feed(&ev(1, 2, Kind::Clone(fork)));
        p.feed(&ev(
            2,
            0,
            Kind::Exec(Exec {
                path: Some("/bin/sh".into()),
            }),
        ));
        assert_eq!(p.of(Some(1)), b"rocminfo");
        assert_eq!(p.of(Some(2)), b"sh");
        // two programs: an unknown process runs neither
        assert_eq!(p.of(Some(9)), b"");
        let mut one = Programs::default();
        one.feed(&ev(
            1,
            0,
            Kind::Exec(Exec {
                path: Some("/x/a".into()),
            }),
        ));
        assert_eq!(one.of(None), b"a");
    }
}
