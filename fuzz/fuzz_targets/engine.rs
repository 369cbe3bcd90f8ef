//! The whole engine on arbitrary input: reading, every dialect, the merge
//! of many files and the models, as `rocrtrace analyze` runs them.  The
//! input is cut at `\n@@\n` into up to 12 files; its first byte says how
//! they are laid out:
//!   0: one file (the first piece), parsed on one thread and in chunks on
//!      two, which must find the same;
//!   1: `strace -ff -o DIR/t` files `t.PID` (1000, 1001, ...), merged with
//!      2 files open at a time (spilled in rounds) and with all open at
//!      once, which must find the same;
//!   2: preload logs `rocrtrace.log.PID`, the same two ways.
//! No input may panic.
#![no_main]

use _engine::analyze::{self, Options, TraceOut};
use libfuzzer_sys::fuzz_target;
use std::io::Write;

const SEP: &[u8] = b"\n@@\n";

fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() < 11 {
        match rest.windows(SEP.len()).position(|w| w == SEP) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + SEP.len()..];
            }
            None => break,
        }
    }
    out.push(rest);
    out
}

/// What must not depend on how the work was cut: each run's findings
/// (rule, line, message) and events per input.
fn summary(runs: Vec<Result<TraceOut, _engine::read::InputError>>) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        match r {
            Ok(t) => {
                for f in &t.findings {
                    out.push(format!("{} {:?} {:?} {}", f.rule, f.file, f.line, f.message));
                }
                for i in &t.infos {
                    out.push(format!("{} events {} unparsed", i.events, i.unparsed));
                }
            }
            Err(e) => out.push(format!("error {e:?}")),
        }
    }
    out
}

fn analyze(arg: &str, o: &Options) -> Vec<String> {
    match analyze::run_apart(arg, o, None) {
        Ok(r) => summary(r.runs),
        Err(e) => vec![format!("error {e:?}")],
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let parts = pieces(data);
    let base = Options {
        batch_lines: 3,
        min_bytes: 0,
        ..Options::default()
    };
    match mode % 3 {
        0 => {
            let p = dir.path().join("trace.log");
            std::fs::File::create(&p)
                .and_then(|mut f| f.write_all(parts[0]))
                .expect("write");
            let arg = p.to_str().expect("utf-8 path");
            let one = analyze(arg, &base);
            let two = analyze(arg, &Options { jobs: 2, ..base.clone() });
            assert_eq!(one, two, "--jobs 1 and --jobs 2 differ");
        }
        m => {
            let prefix = if m == 1 { "t" } else { "rocrtrace.log" };
            for (i, part) in parts.iter().enumerate() {
                let p = dir.path().join(format!("{prefix}.{}", 1000 + i));
                std::fs::File::create(&p)
                    .and_then(|mut f| f.write_all(part))
                    .expect("write");
            }
            let arg = dir.path().to_str().expect("utf-8 path");
            let all = analyze(arg, &Options { max_open: 64, ..base.clone() });
            let few = analyze(arg, &Options { max_open: 2, ..base.clone() });
            assert_eq!(all, few, "a merge in rounds differs from one flat merge");
        }
    }
});
