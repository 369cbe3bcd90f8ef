//! Lines per second of the Rust reader (src/read/): open, detect, read and
//! clean every line of a file, as the engine's first stage does, without a
//! parser.  `cargo run --release --example bench_read -- FILE [FILE.gz ...]`
//! (make a large log with benchmarks/gen_traces.py).

use _engine::events::Format;
use _engine::events::{InputInfo, Text};
use _engine::parse::Builtin;
use _engine::parse::detect::open_files;
use _engine::parse::trace::Trace;
use _engine::read::lines::CHUNK;
use _engine::read::lines::CleanLines;
use std::time::Instant;

fn main() {
    for path in std::env::args().skip(1) {
        let t0 = Instant::now();
        let files = match open_files(&path, None) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        };
        if files.iter().all(|f| f.format == Format::Tinygrad) {
            // a dialect ported here: parse too
            let mut t = Trace::new(&path, files, 1 << 20, Builtin);
            t.max_open = 64;
            let infos = t.infos.clone();
            let mut n = 0u64;
            for e in t.events() {
                e.unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
            let s = t0.elapsed().as_secs_f64();
            let lines: u64 = infos.borrow().iter().map(|i| i.lines).sum();
            println!(
                "{path}: tinygrad, {lines} lines, {n} events in {s:.3} s: {:.2} M lines/s",
                lines as f64 / s / 1e6
            );
            continue;
        }
        let mut lines = 0u64;
        let mut bytes = 0u64;
        for mut f in files {
            let mut info = InputInfo::new(Text::from(f.path.as_str()));
            let r = f.open().unwrap_or_else(|e| panic!("{e}"));
            let mut cl = CleanLines::new(r, &f.path, f.layout.clone(), 1 << 20, CHUNK);
            while let Some((_, l)) = cl.next(&mut info).unwrap_or_else(|e| panic!("{e}")) {
                lines += 1;
                bytes += l.map_or(0, |s| s.len() as u64);
            }
        }
        let s = t0.elapsed().as_secs_f64();
        println!(
            "{path}: {lines} lines, {:.1} MB of text in {s:.3} s: {:.2} M lines/s, {:.0} MB/s",
            bytes as f64 / 1e6,
            lines as f64 / s / 1e6,
            bytes as f64 / s / 1e6
        );
    }
}
