//! Lines per second of the Rust strace/preload parser alone, on one log:
//!
//!     python benchmarks/gen_traces.py strace 1000000 /tmp/s.log
//!     cargo run --release --no-default-features --example parse_bench -- /tmp/s.log
//!
//! The file is read into memory first; the time is the parse only (feed
//! and finish over every line), best of three runs.

use _engine::events::{FileId, InputInfo};
use _engine::parse::strace::Parser;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse_bench LOG");
    let data = std::fs::read(&path).expect("read the log");
    let lines: Vec<&[u8]> = data
        .strip_suffix(b"\n")
        .unwrap_or(&data)
        .split(|&c| c == b'\n')
        .collect();
    if std::env::var("PARSE_BENCH_SCAN_ONLY").is_ok() {
        // the tokenizer alone, for comparison
        let t0 = Instant::now();
        let n = lines
            .iter()
            .filter_map(|l| std::str::from_utf8(l).ok())
            .filter(|l| _engine::parse::tokens::scan_line(l).is_some())
            .count();
        let dt = t0.elapsed().as_secs_f64();
        println!("scan_line took {n} of {} lines: {dt:.3} s", lines.len());
        return;
    }
    let mut best = f64::INFINITY;
    let mut events = 0;
    for _ in 0..3 {
        let t0 = Instant::now();
        let mut p = Parser::new(
            FileId(0),
            InputInfo::new(path.as_str().into()),
            None,
            None,
            None,
        );
        let mut sink = Vec::with_capacity(4096);
        let mut n = 0usize;
        for (i, l) in lines.iter().enumerate() {
            p.feed(i as u64 + 1, l, &mut sink);
            n += sink.len();
            sink.clear();
        }
        p.finish(&mut sink);
        n += sink.len();
        best = best.min(t0.elapsed().as_secs_f64());
        events = n;
        assert_eq!(p.info.events as usize, n);
    }
    println!(
        "{} lines, {} events, {:.3} s, {:.0} lines/s",
        lines.len(),
        events,
        best,
        lines.len() as f64 / best
    );
}
