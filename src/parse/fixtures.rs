//! Test support: the fixture logs the parse tests read (kfd_args', the
//! strace fast path's).

use std::path::{Path, PathBuf};

/// Every strace and preload fixture log (not tinygrad's), sorted.
pub fn fixture_logs() -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "tinygrad") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "log") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut out,
    );
    out.sort();
    assert!(out.len() > 40, "fixtures/ has its logs: {out:?}");
    out
}
